"""Analysis of one RLC-loop run directory: the measured step response against the local
baseline, and the delay, period and delivery of the loop's own messages per direction.

A broken run directory (missing or unreadable metadata, missing or malformed records,
a run that was killed) is never an exception here: it comes back with ``ok`` false and
its problems listed, so reports show it instead of dropping it.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import baseline, metrics
from .records import Events, RecordError, read_events


@dataclass
class LoopRun:
    run_dir: Path
    meta: dict[str, Any] = field(default_factory=dict)
    plant: Events | None = None
    controller: Events | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.meta.get("run_id") or self.run_dir.name

    @property
    def transport(self) -> str:
        exp = self.meta.get("experiment") or {}
        return str(exp.get("transport") or (self.meta.get("transport") or {}).get("name") or "?")

    @property
    def status(self) -> str:
        return str(self.meta.get("status", "unknown"))


def load_loop_run(run_dir: str | Path) -> LoopRun:
    run = LoopRun(Path(run_dir))
    try:
        run.meta = json.loads((run.run_dir / "metadata.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        run.problems.append("metadata.json missing")
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        run.problems.append(f"metadata.json unreadable: {err}")
    if run.meta.get("status") == "running":
        run.problems.append("run incomplete: it never finished (killed or crashed); data up to the stop is used")
    elif run.meta.get("status") not in (None, "complete"):
        run.problems.append(f"run {run.meta.get('status')}: {run.meta.get('error')}")
    for name in ("plant", "controller"):
        try:
            events = read_events(run.run_dir / "records" / f"{name}.csv")
            if events.truncated_rows:
                run.problems.append(f"records/{name}.csv: last row cut off (skipped)")
            setattr(run, name, events)
        except RecordError as err:
            run.problems.append(str(err))
    return run


def _one_way(tx: Events, rx: Events) -> tuple[np.ndarray, np.ndarray]:
    """Delays [s] of the received messages (joined on seq with the sent ones), and arrival times [s]."""
    sent = dict(zip(tx.seq.tolist(), tx.stamp_ns.tolist()))
    delays = [(r - sent[s]) / 1e9 for s, r in zip(rx.seq.tolist(), rx.recv_ns.tolist()) if s in sent]
    return np.array(delays), rx.recv_ns / 1e9


def direction_stats(tx: Events, rx: Events) -> dict[str, Any]:
    delays, arrivals = _one_way(tx, rx)
    return {"sent": len(tx), "received": len(rx), "MDR": metrics.delivery_ratio(tx.seq, rx.seq),
            "delay": metrics.delay_stats(delays), "period": metrics.period_stats(arrivals),
            "delays_ms": (delays * 1e3).tolist()}


def analyse_loop_run(run: LoopRun) -> dict[str, Any]:
    """Every number the report shows for one run (``ok`` false when it could not be analysed)."""
    exp = run.meta.get("experiment") or {}
    out: dict[str, Any] = {"run_id": run.run_id, "transport": run.transport, "status": run.status,
                           "problems": list(run.problems), "ok": False, "cell": exp.get("cell")}
    loop = exp.get("loop")
    if loop is None or run.plant is None or run.controller is None:
        out["problems"].append("not analysable: metadata or records missing")
        return out
    y_tx = run.plant.select("tx", "y")
    if len(y_tx) < 3:
        out["problems"].append(f"not analysable: only {len(y_tx)} samples recorded")
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
    r = loop["controller"]["reference"]
    rtt = (u_arrived.recv_ns - u_arrived.answer_stamp_ns) / 1e9
    out.update(
        ok=True, samples=len(y), period_s=T, reference=r, t=t.tolist(), y=y.tolist(), baseline_y=base.y.tolist(),
        step=metrics.step_metrics(t, y), baseline_step=metrics.step_metrics(base.t, base.y),
        tracking=metrics.integral_errors(r - y, T), baseline_tracking=metrics.integral_errors(r - base.y, T),
        deviation=metrics.integral_errors(y - base.y, T),
        sensor=direction_stats(y_tx, y_rx),          # plant -> controller (y)
        actuation=direction_stats(u_tx, u_arrived),  # controller -> plant (u)
        rtt=metrics.delay_stats(rtt[rtt >= 0]),
        stale_actuations=len(u_stale),
        sampling=metrics.period_stats(y_tx.stamp_ns / 1e9),
        negotiated_transport=run.meta.get("negotiated_transport", {}),
    )
    out["delta_IAE"] = out["tracking"]["IAE"] - out["baseline_tracking"]["IAE"]
    bs, ns = out["baseline_step"], out["step"]
    out["delta_overshoot_pp"] = ns["Overshoot"] - bs["Overshoot"]
    out["delta_settling_s"] = ns["SettlingTime"] - bs["SettlingTime"]
    out["unstable"] = bool(not ns["settled"] or not math.isfinite(ns["Overshoot"]) or np.max(np.abs(y)) > 10 * abs(r))
    return out
