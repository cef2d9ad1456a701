"""Metrics of a loop run: step response (python-control's step_info), IAE/ISE, and the
delay, period and delivery statistics of a message flow. Times in seconds unless named _ms."""
from __future__ import annotations

import math

import control
import numpy as np

STEP_KEYS = ("RiseTime", "SettlingTime", "Overshoot", "Peak", "PeakTime", "SteadyStateValue")


def step_metrics(t, y, yfinal: float | None = None, settling_band: float = 0.02) -> dict[str, float]:
    """Rise time (10-90 %), settling time (2 % band), overshoot [%], peak and steady-state
    value of a sampled step response starting at 0, via ``control.step_info``.

    ``yfinal`` defaults to the mean of the last 10 % of the samples; a response that has not
    settled by the end is reported with ``settled`` false, one that never reaches 90 % of
    ``yfinal`` with rise and settling time NaN.
    """
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(y) < 3 or not np.all(np.isfinite(y)):
        return {k: math.nan for k in STEP_KEYS} | {"settled": False}
    if yfinal is None:
        yfinal = float(np.mean(y[-max(1, len(y) // 10):]))
    try:
        info = control.step_info(y, T=t, yfinal=yfinal, SettlingTimeThreshold=settling_band)
    except IndexError:   # step_info finds no 90 % crossing: the response never got there
        peak = int(np.argmax(np.abs(y)))
        info = {"RiseTime": math.nan, "SettlingTime": math.nan, "Peak": float(abs(y[peak])),
                "PeakTime": float(t[peak]), "SteadyStateValue": yfinal,
                "Overshoot": max(0.0, 100.0 * (abs(y[peak]) - abs(yfinal)) / abs(yfinal)) if yfinal else math.nan}
    out = {k: float(info[k]) for k in STEP_KEYS}
    tail = y[-max(1, len(y) // 10):]
    out["settled"] = bool(np.all(np.abs(tail - yfinal) <= settling_band * max(abs(yfinal), 1e-9)))
    return out


def integral_errors(e, dt: float) -> dict[str, float]:
    """IAE = sum |e| dt and ISE = sum e^2 dt of a sampled error signal."""
    e = np.asarray(e, float)
    return {"IAE": float(np.sum(np.abs(e)) * dt), "ISE": float(np.sum(e * e) * dt)}


def delay_stats(delays_s) -> dict[str, float]:
    """Mean, std, p50, p95, p99 and max of delays, in milliseconds."""
    d = np.asarray(delays_s, float) * 1e3
    if d.size == 0:
        return {k: math.nan for k in ("mean_ms", "std_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms")} | {"n": 0}
    p50, p95, p99 = np.percentile(d, [50, 95, 99])
    return {"n": int(d.size), "mean_ms": float(d.mean()), "std_ms": float(d.std(ddof=1) if d.size > 1 else 0.0),
            "p50_ms": float(p50), "p95_ms": float(p95), "p99_ms": float(p99), "max_ms": float(d.max())}


def period_stats(arrival_s) -> dict[str, float]:
    """Mean and std of the inter-arrival period at the receiver (J_d in the Pound paper), ms."""
    a = np.sort(np.asarray(arrival_s, float))
    if a.size < 2:
        return {"mean_ms": math.nan, "std_ms": math.nan}
    p = np.diff(a) * 1e3
    return {"mean_ms": float(p.mean()), "std_ms": float(p.std(ddof=1) if p.size > 1 else 0.0)}


def delivery_ratio(sent_seq, received_seq) -> float:
    """Message delivery ratio: distinct sent messages that arrived / messages sent."""
    sent = set(np.asarray(sent_seq).tolist())
    if not sent:
        return math.nan
    return len(sent & set(np.asarray(received_seq).tolist())) / len(sent)
