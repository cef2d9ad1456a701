"""What a link outage did to a stream of messages (runs with ``faults:``).

For every outage the run recorded (``metadata.json`` → ``faults``: wall-clock start and end)
and one stream (a flow at one receiver, or one direction of the loop):

* ``recovery_ms``: from the outage's end to the first message delivered after it (the Pound
  paper's recovery time; includes the transport's own back-off, e.g. TCP's retransmission
  timer) — None when nothing arrived after it;
* ``lost``: messages sent during the outage that never arrived;
* ``late``: messages sent during the outage that arrived after it (held in queues and
  retransmitted: TCP delivers them, UDP loses them).

Each entry also has the outage's ``kind`` (``drop``: packets dropped at the interface;
``interface_down``: the interface went down and up, :mod:`netloop.faults`) and, for an
interface outage on the emulated Wi-Fi, ``rejoin_ms``: how long the slowest of its hosts'
stations took to rejoin the network after the interface came back (access point mode: the
association; ad-hoc: 0, ns-3's ad-hoc MAC has no join), None elsewhere. The recovery time
includes it, as the paper's did.

A fault with ``loss`` is a loss burst rather than an outage: its entry has ``loss`` (the
probability; None for an outage) and ``sent`` (messages sent during it), and ``late`` then
counts every message sent during the burst that arrived, most of them at once.

Times are the hosts' one clock (the testbed; outages need an emulated link).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..run_files import RunRecord


def windows(meta: RunRecord) -> list[tuple[float, float]]:
    """(start, end) in seconds since the epoch of every outage (or loss burst) of a run that ended."""
    return [(f["start"], f["end"]) for f in _ended(meta)]


def _ended(meta: RunRecord) -> list[dict[str, Any]]:
    return [f for f in meta.faults if f.get("end") is not None]


def kinds(meta: RunRecord) -> list[str]:
    """'outage' or 'loss burst' for every window of :func:`windows`, in order."""
    return [kind(f.get("loss")) for f in _ended(meta)]


def kind(loss: float | None) -> str:
    """'outage' or 'loss burst', for a fault's ``loss``."""
    return "outage" if loss is None else "loss burst"


def per_outage(meta: RunRecord, sent_s: np.ndarray, arrived: np.ndarray,
               arrivals_s: np.ndarray) -> list[dict[str, Any]]:
    """One entry per outage: recovery_ms, lost, late. ``sent_s``: send time of every message
    sent; ``arrived``: whether each of them arrived; ``arrivals_s``: every arrival time."""
    out = []
    sent_s, arrived, arrivals_s = (np.asarray(a) for a in (sent_s, arrived, arrivals_s))
    for fault in _ended(meta):
        start, end = fault["start"], fault["end"]
        after = arrivals_s[arrivals_s >= end]
        during = (sent_s >= start) & (sent_s < end)
        out.append({"recovery_ms": float((after.min() - end) * 1e3) if len(after) else None,
                    "lost": int(np.sum(during & ~arrived)), "late": int(np.sum(during & arrived)),
                    "sent": int(np.sum(during)), "loss": fault.get("loss"), "duration_s": round(end - start, 3),
                    "kind": fault.get("kind", "drop"), "rejoin_ms": rejoin_ms(fault)})
    return out


def rejoin_ms(fault: dict[str, Any]) -> float | None:
    """The slowest station's rejoin after an interface outage (``fault["rejoin"]``, written by
    netloop.faults), or None (no Wi-Fi station, or not an interface outage)."""
    times = [r["rejoin_ms"] for r in (fault.get("rejoin") or {}).values() if r and r.get("rejoin_ms") is not None]
    return max(times) if times else None
