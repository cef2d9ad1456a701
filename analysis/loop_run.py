"""Analysis of one RLC-loop run directory: the measured step response against the local
baseline, and the delay, period and delivery of the loop's own messages per direction.

A broken run directory (missing or unreadable metadata, missing or malformed records,
a run that was killed) is never an exception here: it comes back with ``ok`` false and
its problems listed, so reports show it instead of dropping it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..rundir import RunDir
from ..run_files import MetadataError, RunRecord
from . import baseline, clocks, metrics, outages, repeated_steps
from .records import Events, RecordError, read_events
from .results import DirectionStats, LoopRunResult


@dataclass
class LoopRun:
    run_dir: Path
    meta: RunRecord = field(default_factory=RunRecord)
    plant: Events | None = None
    controller: Events | None = None
    problems: list[str] = field(default_factory=list)
    robot: str | None = None      # with loop.per_robot: the robot whose loop this is (its plant's host)

    @property
    def run_id(self) -> str:
        return self.meta.run_id or self.run_dir.name

    @property
    def transport(self) -> str:
        return self.meta.transport_name

    @property
    def status(self) -> str:
        return self.meta.status or "unknown"

    @property
    def experiment(self) -> dict[str, Any]:
        return self.meta.experiment


def read_run_metadata(run_dir: Path) -> tuple[RunRecord, list[str]]:
    """A run's metadata (the empty record when it cannot be used) and its problems: the file's
    (missing, unreadable, another format) or its status's (killed, failed)."""
    try:
        meta = RunDir(run_dir).load_metadata()
    except MetadataError as err:
        return RunRecord(), [err.problem]
    return meta, [meta.problem] if meta.problem else []


def load_loop_run(run_dir: str | Path, meta: RunRecord | None = None, robot: str | None = None) -> LoopRun:
    """The run's metadata and the loop's records (with ``robot``: that robot's loop of a
    ``per_robot`` run, records ``plant_<robot>.csv``...). ``meta`` given: the caller read (and
    checked) the metadata; else it is read here and its problems are the run's."""
    run = LoopRun(Path(run_dir), robot=robot)
    if meta is None:
        run.meta, run.problems = read_run_metadata(run.run_dir)
    else:
        run.meta = meta
    run.meta = repeated_steps.attach_schedule(run.meta, run.run_dir)   # a square wave's steps, for the baseline
    for name in ("plant", "controller"):
        record = f"{name}_{robot}" if robot else name
        try:
            events = read_events(RunDir(run.run_dir).record(record))
            if events.truncated_rows:
                run.problems.append(f"records/{record}.csv: last row cut off (skipped)")
            setattr(run, name, events)
        except RecordError as err:
            run.problems.append(str(err))
    return run


def _one_way(tx: Events, rx: Events) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Delays [s] of the received messages (joined on seq with the sent ones), their send
    times [s] and the arrival times [s]."""
    sent = dict(zip(tx.seq.tolist(), tx.stamp_ns.tolist()))
    pairs = [(sent[s], r) for s, r in zip(rx.seq.tolist(), rx.recv_ns.tolist()) if s in sent]
    delays = np.array([(r - s) / 1e9 for s, r in pairs])
    return delays, np.array([s / 1e9 for s, _ in pairs]), rx.recv_ns / 1e9


def direction_stats(tx: Events, rx: Events, meta: RunRecord | None = None,
                    hosts: tuple[str, str] | None = None) -> DirectionStats:
    """Delivery, delay and period of one direction; on real machines (``meta``'s clocks) the
    delays from ``hosts[0]`` to ``hosts[1]`` corrected for the clock offsets."""
    delays, sent_s, arrivals = _one_way(tx, rx)
    uncertainty = None
    correction = clocks.correct(meta, *hosts, sent_s, delays) if meta is not None and hosts else None
    if correction is not None:
        delays, uncertainty = correction.delays, round(correction.uncertainty_s * 1e3, 4)
    received = set(rx.seq.tolist())
    lost_or_not = outages.per_outage(meta or RunRecord(), tx.stamp_ns / 1e9, np.array([s in received for s in tx.seq.tolist()]),
                                     arrivals)
    return DirectionStats(sent=len(tx), received=len(rx), MDR=metrics.delivery_ratio(tx.seq, rx.seq),
                          delay=metrics.delay_stats(delays), period=metrics.period_stats(arrivals),
                          clock_uncertainty_ms=uncertainty, outages=lost_or_not, delays_ms=(delays * 1e3).tolist(),
                          sent_s=np.asarray(sent_s, float).tolist())


def analyse_loop_run(run: LoopRun) -> LoopRunResult:
    """Every number the report shows for one run (``ok`` false when it could not be analysed)."""
    out = LoopRunResult(run_id=run.run_id, transport=run.transport, status=run.status, problems=list(run.problems),
                        cell=run.experiment.get("cell"))
    loop = run.experiment.get("loop")
    if loop is None or run.plant is None or run.controller is None:
        out.problems.append("not analysable: metadata or records missing")
        return out
    y_tx = run.plant.select("tx", "y")
    if len(y_tx) < 3:
        out.problems.append(f"not analysable: only {len(y_tx)} samples recorded")
        return out
    u_rx = run.plant.select("rx", "u")
    u_stale = run.plant.select("stale", "u")
    y_rx, u_tx = run.controller.select("rx", "y"), run.controller.select("tx", "u")
    u_arrived = Events(*(np.concatenate([getattr(u_rx, f), getattr(u_stale, f)]) for f in
                         ("kind", "topic", "seq", "value", "stamp_ns", "recv_ns", "answer_seq",
                          "answer_stamp_ns", "bytes")))

    T = loop["plant"]["period"]
    t = (y_tx.stamp_ns - y_tx.stamp_ns[0]) / 1e9
    y = y_tx.value
    base = baseline.local_baseline(loop, samples=len(y))
    r = baseline.reference_series(loop, len(y))
    rtt = (u_arrived.recv_ns - u_arrived.answer_stamp_ns) / 1e9
    step, base_step = metrics.step_metrics(t, y), metrics.step_metrics(base.t, base.y)
    tracking, base_tracking = metrics.integral_errors(r - y, T), metrics.integral_errors(r - base.y, T)
    out.ok, out.samples, out.period_s, out.reference = True, len(y), T, loop["controller"]["reference"]
    out.t, out.y, out.baseline_y = t.tolist(), y.tolist(), base.y.tolist()
    out.start_s = float(y_tx.stamp_ns[0]) / 1e9
    out.u_applied_t, out.u_applied = ((u_rx.recv_ns - y_tx.stamp_ns[0]) / 1e9).tolist(), u_rx.value.tolist()
    out.rtt_t = ((u_arrived.answer_stamp_ns - y_tx.stamp_ns[0]) / 1e9).tolist()
    out.rtt_each_ms = (rtt * 1e3).tolist()
    out.step, out.baseline_step = step, base_step
    out.tracking, out.baseline_tracking = tracking, base_tracking
    out.deviation = metrics.integral_errors(y - base.y, T)
    placement = loop.get("placement") or {}
    plant_host, controller_host = run.robot or placement.get("plant", "robot"), placement.get("controller", "operator")
    out.sensor = direction_stats(y_tx, y_rx, run.meta, (plant_host, controller_host))       # y
    out.actuation = direction_stats(u_tx, u_arrived, run.meta, (controller_host, plant_host))  # u
    out.rtt = metrics.delay_stats(rtt[rtt >= 0])
    out.stale_actuations = len(u_stale)
    t0 = y_tx.stamp_ns[0] / 1e9
    out.outage_windows_s = [[round(s - t0, 3), round(e - t0, 3)] for s, e in outages.windows(run.meta)]
    out.fault_kinds = outages.kinds(run.meta)
    out.sampling = metrics.period_stats(y_tx.stamp_ns / 1e9)
    out.negotiated_transport = run.meta.negotiated_transport
    out.delta_IAE = tracking["IAE"] - base_tracking["IAE"]
    out.delta_overshoot_pp = step["Overshoot"] - base_step["Overshoot"]
    out.delta_settling_s = step["SettlingTime"] - base_step["SettlingTime"]
    out.unstable = bool(not step["settled"] or not math.isfinite(step["Overshoot"])
                        or np.max(np.abs(y)) > 10 * max(np.max(np.abs(r)), 1e-9))
    out.steps = repeated_steps.run_steps(t, y, base.y, loop, T)
    if out.steps:
        out.delay_trace = delay_trace(run, y_tx, u_arrived)
        out.unstable = repeated_steps.run_verdict(y, out.steps, float(np.max(np.abs(r)))) == "unstable"
        out.delta_overshoot_pp = repeated_steps.finite_median(s["delta_overshoot_pp"] for s in out.steps)
    return out


def delay_trace(run: LoopRun, y_tx: Events, u_arrived: Events) -> dict[str, Any]:
    """Per sample (s after the first): the loop's round trip (sample -> its u at the plant)
    [ms], and each perturbing flow's send times (its tx record), for the delay timeline."""
    t0 = y_tx.stamp_ns[0]
    trace = {"sample_s": ((u_arrived.answer_stamp_ns - t0) / 1e9).tolist(),
             "rtt_ms": ((u_arrived.recv_ns - u_arrived.answer_stamp_ns) / 1e6).tolist(), "flows": {}}
    for path in sorted((run.run_dir / "records").glob("flow_*_tx.csv")):
        try:
            sent = read_events(path).stamp_ns
        except RecordError:
            continue
        trace["flows"][path.name[len("flow_"):-len("_tx.csv")]] = ((sent - t0) / 1e9).tolist()
    return trace
