"""The loop delay a run's plant saw, in the terms of the margins (:mod:`margins`).

From the plant's record (:func:`prediction.actuation_trace`): per sample k its loop delay
tau_k, from its stamp to the arrival at the plant of the u answering it (the RTT; none where
that u was lost or dropped as stale), and its *hold delay*: the time from sample k until the
plant holds an answer to k or to a newer sample, min over i >= k of (t_i - t_k + tau_i). A lost
or stale answer is thus covered by the next one that arrives, which is what the plant does (it
holds the last u). The jitter margin's question, whether every sample's answer acts within
[L, L + J], is asked of the hold delays: L is the smallest loop delay, J the largest hold delay
less L (the samples at the end of the run, answered by nothing before it ended, left out).
"""
from __future__ import annotations

import numpy as np

from .loop_run import LoopRun
from .prediction import ActuationTrace, actuation_trace
from .results import LoopTiming


def hold_delays(times, delays) -> np.ndarray:
    """Per sample, the time [s] until the plant holds an answer to it or to a newer sample
    (inf where none arrives before the run ends): min over i >= k of (t_i + tau_i) - t_k."""
    times, delays = np.asarray(times, float), np.asarray(delays, float)
    acts = times + delays                       # inf where the answer never acted
    return np.minimum.accumulate(acts[::-1])[::-1] - times


def loop_timing(trace: ActuationTrace) -> LoopTiming | None:
    """The loop delay and jitter of one run's actuation trace (None when no answer acted)."""
    applied = np.isfinite(trace.delays)
    if not applied.any():
        return None
    hold = hold_delays(trace.times, trace.delays)
    hold = hold[np.isfinite(hold)]
    tau = 1e3 * trace.delays[applied]
    p50, p99 = np.percentile(tau, [50, 99])
    return LoopTiming(samples=int(hold.size), answered=int(applied[:hold.size].sum()), min_ms=float(tau.min()),
                      p50_ms=float(p50), p99_ms=float(p99), max_ms=float(tau.max()),
                      hold_p99_ms=float(np.percentile(1e3 * hold, 99)), hold_max_ms=float(1e3 * hold.max()),
                      delays_ms=tau.tolist(), hold_ms=(1e3 * hold).tolist())


def measured_timing(run: LoopRun) -> LoopTiming | None:
    """The loop delay and jitter of a run from its plant's record (None: no record, no answer)."""
    if run.plant is None:
        return None
    try:
        return loop_timing(actuation_trace(run.plant))
    except ValueError:   # no samples: the run's problems say so already
        return None


def pooled(timings: list[LoopTiming | None]) -> LoopTiming | None:
    """Several runs' timings as one (a transport's): every sample of every run, L the smallest."""
    ts = [t for t in timings if t is not None and t.delays_ms and t.hold_ms]
    if not ts:
        return None
    tau, hold = (np.concatenate([np.asarray(getattr(t, k), float) for t in ts]) for k in ("delays_ms", "hold_ms"))
    p50, p99 = np.percentile(tau, [50, 99])
    return LoopTiming(samples=int(hold.size), answered=sum(t.answered for t in ts), min_ms=float(tau.min()),
                      p50_ms=float(p50), p99_ms=float(p99), max_ms=float(tau.max()),
                      hold_p99_ms=float(np.percentile(hold, 99)), hold_max_ms=float(hold.max()),
                      delays_ms=tau.tolist(), hold_ms=hold.tolist())
