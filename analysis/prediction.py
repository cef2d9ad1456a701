"""Predicting a run's response from the delays its own messages measured.

For every RLC loop run, the actuation trace is read from ``records/plant.csv``: sample k's
stamp (the instant the plant evaluated y(k)) and the arrival at the plant of the u that
answers k. Replaying that trace through :func:`baseline.simulate_loop` (the exact ZOH model
of the circuit, the controller's law, rlc_plant's "drop older actuations" rule) gives the
response the loop *should* have had if delay and loss were all that happened. The
difference to the measured response is the prediction error:

- ``rms_mV``, ``max_mV``: RMS and max of |y - y_hat| over the samples [mV]
- ``delta_overshoot_pp``: overshoot(y_hat) - overshoot(y) [percentage points]

Three replays are made, each adding one effect, so the report can say what explains a run:

- ``mean_delay``: every actuation delayed by the run's median loop delay, samples at k T
  (the loop's mean delay alone, same losses);
- ``delays``: each sample's own measured delay, samples at k T (delay and its jitter);
- ``measured`` (**the prediction**): each sample's own delay at the real sampling instants
  (delay, jitter and the sensor's own timing). A u that never arrived, or arrived but was
  dropped as stale, updates nothing.

Threshold: a prediction with ``rms_mV`` > :data:`RMS_THRESHOLD_MV` (5 mV; the steady state is
0.5 V, so 1 % of it, and about a third of the RMS deviation that 10 ms of extra loop delay
causes) means something other than the measured delay and loss shaped the response (clock
or scheduling effects in the nodes, a controller that saw different samples than the plant
sent, a model that is not the plant's): the report states it as a finding. On an intact run
of the netloop plant the prediction is exact to rounding (about 1e-12 V): the plant is the
same exact model, so any error is a finding about the run, not noise.

Limits: a sample lost on the way to the controller is treated like a lost actuation; for a
P controller that is exact, for I or D terms the replayed controller still sees that sample.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
import numpy as np

from . import baseline, metrics, repeated_steps
from .loop_run import LoopRun
from .records import Events
from .results import PredictionResult, ReplayError

#: RMS prediction error [mV] above which a run is "not explained by delay and loss".
RMS_THRESHOLD_MV = 5.0

MODES = ("measured", "delays", "mean_delay")
MODE_LABELS = {"measured": "measured delays, real sample times (the prediction)",
               "delays": "measured delays, nominal sample times k·T",
               "mean_delay": "median delay only, nominal sample times"}


@dataclass
class ActuationTrace:
    """Per sample k of a run: its instant, the measured y, and its actuation's fate."""

    times: np.ndarray    # sample instants [s] from the first sample (plant clock)
    y: np.ndarray        # measured y(k) [V]
    delays: np.ndarray   # stamp(k) -> arrival of the u answering k at the plant [s]; inf when none applied
    seqs: np.ndarray     # sequence number of that u (-1 when none)
    stale: np.ndarray    # a u answering k arrived but the plant dropped it as older
    unmatched: int = 0   # actuations answering a sample that is not in the record

    @property
    def lost(self) -> np.ndarray:
        return ~np.isfinite(self.delays)


def actuation_trace(plant: Events) -> ActuationTrace:
    """The per-sample actuation trace from the plant's record (one clock: the plant's)."""
    y = plant.select("tx", "y")
    if len(y) == 0:
        raise ValueError("no samples in the plant's record")
    t0 = int(y.stamp_ns[0])
    times = (y.stamp_ns - t0) / 1e9
    index = {int(s): i for i, s in enumerate(y.seq.tolist())}
    n = len(y)
    delays, seqs, stale = np.full(n, np.inf), np.full(n, -1, np.int64), np.zeros(n, bool)
    unmatched = 0
    for kind in ("rx", "stale"):
        u = plant.select(kind, "u")
        for answer, seq, recv in zip(u.answer_seq.tolist(), u.seq.tolist(), u.recv_ns.tolist()):
            k = index.get(int(answer))
            if k is None:
                unmatched += 1
            elif kind == "stale":
                stale[k] = True
            elif not np.isfinite(delays[k]):
                delays[k], seqs[k] = (recv - t0) / 1e9 - times[k], seq
    return ActuationTrace(times, y.value.astype(float), delays, seqs, stale, unmatched)


def replay(loop: dict, trace: ActuationTrace, mode: str = "measured") -> np.ndarray:
    """y_hat(k) for one of :data:`MODES`."""
    lost = trace.lost
    delays = np.where(lost, 0.0, trace.delays)
    nominal = np.arange(len(trace.times)) * loop["plant"]["period"]
    if mode == "measured":
        times = trace.times
    elif mode == "delays":
        times = nominal
    elif mode == "mean_delay":
        times = nominal
        delays = np.full(len(delays), float(np.median(delays[~lost])) if (~lost).any() else 0.0)
    else:
        raise ValueError(f"unknown replay mode {mode!r}")
    # Applied actuations keep their own sequence numbers, so rlc_plant's ordering rule
    # applies to them exactly as it did in the run.
    return baseline.simulate_loop(loop, delays, lost=lost, sample_times=times, seqs=trace.seqs).y


def prediction_error(t, y, y_hat, loop: dict | None = None, measured_steps: list | None = None) -> ReplayError:
    """How far ``y_hat`` is from ``y``: RMS and max error [mV] and the overshoot's error; with
    a square wave (``loop`` with its schedule) the overshoot is each step's (the median over
    the steps of the predicted one, and of predicted less measured), a whole run having none.
    ``measured_steps``: y's steps (:func:`repeated_steps.run_steps`), when already cut."""
    e = (np.asarray(y_hat, float) - np.asarray(y, float)) * 1e3
    steps = [] if loop is None else repeated_steps.step_list(loop)
    if steps:
        T = loop["plant"]["period"]
        base = baseline.local_baseline(loop, len(y)).y
        meas = measured_steps if measured_steps is not None else repeated_steps.run_steps(t, y, base, loop, T)
        pred = repeated_steps.run_steps(t, y_hat, base, loop, T)
        overshoot = repeated_steps.finite_median(s["overshoot_pct"] for s in pred)
        delta = repeated_steps.finite_median(p["overshoot_pct"] - m["overshoot_pct"] for p, m in zip(pred, meas))
    else:
        measured, predicted = metrics.step_metrics(t, y), metrics.step_metrics(t, y_hat)
        overshoot, delta = predicted["Overshoot"], predicted["Overshoot"] - measured["Overshoot"]
    return ReplayError(rms_mV=float(np.sqrt(np.mean(e * e))), max_mV=float(np.max(np.abs(e))),
                       overshoot=overshoot, delta_overshoot_pp=delta, y_hat=np.asarray(y_hat, float).tolist())


def analyse_prediction(run: LoopRun, threshold_mv: float = RMS_THRESHOLD_MV) -> PredictionResult:
    """The prediction of one loop run and its error (``ok`` false, with a reason, when the
    run cannot be replayed). Never raises for a broken run."""
    out = PredictionResult(run_id=run.run_id, transport=run.transport, threshold_mV=threshold_mv)
    loop = run.experiment.get("loop")
    if not loop or loop.get("type", "rlc") != "rlc":
        out.problems.append("no prediction: not an RLC loop run (or metadata missing)")
        return out
    if run.plant is None:
        out.problems.append("no prediction: records/plant.csv unreadable or missing")
        return out
    try:
        trace = actuation_trace(run.plant)
    except ValueError as err:
        out.problems.append(f"no prediction: {err}")
        return out
    if len(trace.times) < 3:
        out.problems.append(f"no prediction: only {len(trace.times)} samples")
        return out
    try:
        measured = (repeated_steps.run_steps(trace.times, trace.y, baseline.local_baseline(loop, len(trace.y)).y, loop,
                                             loop["plant"]["period"]) if repeated_steps.step_list(loop) else None)
        modes = {mode: prediction_error(trace.times, trace.y, replay(loop, trace, mode), loop, measured)
                 for mode in MODES}
    except Exception as err:  # a malformed configuration in the metadata, say
        out.problems.append(f"no prediction: replay failed ({type(err).__name__}: {err})")
        return out
    main = modes["measured"]
    out.ok, out.samples, out.t, out.y = True, len(trace.times), trace.times.tolist(), trace.y.tolist()
    out.lost, out.stale, out.unmatched = int(trace.lost.sum()), int(trace.stale.sum()), trace.unmatched
    out.loop_delay_median_ms = (float(np.median(trace.delays[~trace.lost]) * 1e3) if (~trace.lost).any()
                                else math.nan)
    out.rms_mV, out.max_mV, out.delta_overshoot_pp = main.rms_mV, main.max_mV, main.delta_overshoot_pp
    out.explained, out.modes = bool(main.rms_mV <= threshold_mv), modes
    return out


def finding(p: PredictionResult) -> str | None:
    """The sentence the report writes for a run the prediction does not explain."""
    if not p.ok or p.explained:
        return None
    return (f"`{p.run_id}`: replaying its measured delays misses the measured response by "
            f"{p.rms_mV:.1f} mV RMS (max {p.max_mV:.1f} mV, overshoot {p.delta_overshoot_pp:+.2f} pp), "
            f"above the {p.threshold_mV:g} mV threshold: something other than delay and loss shaped this run "
            f"(clock or scheduling effects in the nodes, or a controller that saw other samples than the plant sent).")
