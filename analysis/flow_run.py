"""Analysis of the perturbing flows of a run: the measurements of the Pound paper's tables.

Per flow: the period at the destination (J_d: mean and std of the inter-arrival time), the
one-way delay D (mean and std; exact, as the hosts share one clock), the message delivery
ratio MDR (distinct messages received / sent) and the bandwidth used at the receiver BW
(bytes received x 8 over the reception span, Mbit/s).

The sent side is the source's tx record (its publish time), or for a bag replay the tap on
the sending host (rows of kind "tap", matched on header seq and stamp).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from . import metrics
from .records import RecordError, read_events


def analyse_flow(run_dir: Path, flow: dict) -> dict[str, Any]:
    name = flow["name"]
    out: dict[str, Any] = {"flow": name, "kind": flow["kind"], "ok": False, "problems": []}
    try:
        tx = read_events(Path(run_dir) / "records" / f"flow_{name}_tx.csv")
        rx = read_events(Path(run_dir) / "records" / f"flow_{name}_rx.csv")
    except RecordError as err:
        out["problems"].append(str(err))
        return out
    tap = flow["kind"] in ("lidar_bag", "topic")
    # send time of each message, keyed as the receiver sees it
    if tap:
        sent = {(s, st): r for s, st, r in zip(tx.seq.tolist(), tx.stamp_ns.tolist(), tx.recv_ns.tolist())}
        keys = list(zip(rx.seq.tolist(), rx.stamp_ns.tolist()))
    else:
        sent = dict(zip(tx.seq.tolist(), tx.stamp_ns.tolist()))
        keys = rx.seq.tolist()
    delays = np.array([(r - sent[k]) / 1e9 for k, r in zip(keys, rx.recv_ns.tolist()) if k in sent])
    received = len(set(keys) & set(sent))
    arrivals = np.sort(rx.recv_ns / 1e9)
    span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else math.nan
    bw = (rx.bytes.sum() * 8 / 1e6) / (span + flow["period"]) if len(arrivals) > 1 else math.nan
    out.update(ok=True, sent=len(sent), received=received,
               MDR=received / len(sent) if sent else math.nan,
               period=metrics.period_stats(arrivals), delay=metrics.delay_stats(delays),
               bandwidth_mbit=float(bw), mean_bytes=float(rx.bytes.mean()) if len(rx) else math.nan,
               delays_ms=(delays * 1e3).tolist(), periods_ms=(np.diff(arrivals) * 1e3).tolist())
    if tx.truncated_rows or rx.truncated_rows:
        out["problems"].append("a record ends in a cut-off row (skipped)")
    return out
