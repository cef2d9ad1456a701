"""Where a run's numbers come from on an emulated Wi-Fi link: the emulator's counters per station
(data frames sent, frames retried because no ACK came, frames given up at the retry limit, the
device's queue drops, the most packets the host's queue held) over the time the run's messages
were under way, and the hosts' TCP counters (retransmissions, RTOs; ``host_tcp`` of
metadata.json, :mod:`netloop.tcp_counters`). The Pound study puts them beside its two-hop
numbers (Tables III-IV, Table V's 3-node chain), so each number carries its mechanism.

On an error-free channel a retry is a frame that collided (or was lost to a station that was
transmitting, the hidden terminals of a chain); a frame given up lost all its attempts.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..run_files import MetadataError, load_metadata
from .core import Comparison, median

STATS = "logs/testbed_ns3_stats.jsonl"
#: the cumulative per-station counters of a stats line kept: name here -> the line's key
AIR = {"data_frames": "data_mpdu_tx", "transmissions": "data_ppdu_tx", "retries": "retries",
       "given_up": "final_fail", "device_drops": "queue_drop"}
TCP = ("retrans_segs", "timeouts", "nic_queue_dropped")


def _lines(path: Path) -> list:
    out = []
    try:
        for raw in path.read_text().splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if line.get("type") in ("stats", "final") and line.get("nodes"):
                out.append(line)
    except OSError:
        pass
    return out


def run_trace(run_dir: Path) -> Optional[dict]:
    """{"air": {station: {counter: n}}, "host_queue_max": {station: packets}, "tcp": {host:
    {counter: n}}} of one run over [nodes started, senders stopped]; None without the
    emulator's stats file or the run's metadata."""
    try:
        meta = load_metadata(run_dir).to_json()
    except MetadataError:
        return None
    lines = _lines(run_dir / STATS)
    stations = list((((meta.get("link") or {}).get("link") or {}).get("taps")) or {})
    phases, t0 = meta.get("phases") or {}, meta.get("start_unix")
    if not lines or not stations or t0 is None:
        return None
    begin = t0 + phases.get("nodes_started", 0.0)
    end = t0 + phases.get("senders_stopped", phases.get("ended", lines[-1]["wall"] - t0))
    first = max((l for l in lines if l["wall"] <= begin), key=lambda l: l["wall"], default=None)
    last = min((l for l in lines if l["wall"] >= end), key=lambda l: l["wall"], default=lines[-1])
    window = [l for l in lines if begin < l["wall"] <= last["wall"]]
    air, queued = {}, {}
    for k, station in enumerate(stations):
        if k >= len(last["nodes"]):
            break
        base = first["nodes"][k] if first else {}
        air[station] = {name: last["nodes"][k].get(key, 0) - base.get(key, 0) for name, key in AIR.items()}
        peaks = [(l["nodes"][k].get("nic") or {}).get("backlog_max") for l in window if k < len(l["nodes"])]
        peaks = [p for p in peaks if p is not None]
        if peaks:
            queued[station] = max(peaks)
    return {"air": air, "host_queue_max": queued, "tcp": meta.get("host_tcp") or {}}


def per_message(trace: Optional[dict], messages: int) -> dict:
    """What one message cost on the link, from a run's trace and the messages it carried (both
    ways): data frames on the air, TCP segments the hosts sent, and data frames per
    transmission (an 802.11n A-MPDU carries several); {} without a trace or messages."""
    if not trace or not messages:
        return {}
    frames = sum(c["data_frames"] for c in trace["air"].values())
    sent = sum(c["transmissions"] for c in trace["air"].values())
    segs = sum(c.get("out_segs", 0) for c in trace["tcp"].values()) if trace["tcp"] else None
    return {"frames_per_message": frames / messages, "segments_per_message": segs / messages if segs else None,
            "frames_per_transmission": frames / sent if sent else None}


def traces(campaign: Path, runs: list) -> dict:
    """{transport: [run trace, ...]} of a campaign's valid runs."""
    out: dict = {}
    for run in runs:
        got = run_trace(Path(campaign) / "runs" / run.run_id)
        if got is not None:
            out.setdefault(run.transport, []).append(got)
    return out


def summary(runs: list) -> dict:
    """The median over the runs of: frames retried per data frame sent (%), frames given up,
    the most packets a host's queue held (and whose), TCP retransmissions and RTOs (every
    host together), packets the hosts' queues dropped."""
    def med(get):
        return median(get(r) for r in runs)

    def total(r, part, key):
        return sum(c.get(key, 0) for c in r[part].values())

    out = {"retried_pct": med(lambda r: 100.0 * total(r, "air", "retries") / total(r, "air", "data_frames")
                              if total(r, "air", "data_frames") else None),
           "given_up": med(lambda r: total(r, "air", "given_up")),
           "device_drops": med(lambda r: total(r, "air", "device_drops")),
           "retrans": med(lambda r: total(r, "tcp", "retrans_segs") if r["tcp"] else None),
           "rtos": med(lambda r: total(r, "tcp", "timeouts") if r["tcp"] else None),
           "queue_dropped": med(lambda r: total(r, "tcp", "nic_queue_dropped") if r["tcp"] else None)}
    peaks = [max(r["host_queue_max"].items(), key=lambda kv: kv[1]) for r in runs if r["host_queue_max"]]
    if peaks:
        out["queue_max"] = median(p[1] for p in peaks)
        out["queue_max_host"] = max(set(h for h, _ in peaks), key=[h for h, _ in peaks].count)
    given = {}
    for r in runs:
        for station, c in r["air"].items():
            given[station] = given.get(station, 0) + c["given_up"]
    if any(given.values()):
        out["given_up_most"] = max(given, key=given.get)
    return out


def describe(s: dict) -> str:
    """One line: the mechanism behind a transport's numbers."""
    parts = []
    if s.get("retried_pct") is not None:
        parts.append(f"air: {s['retried_pct']:.0f} % of data frames retried")
    if s.get("given_up"):
        parts.append(f"{s['given_up']:.0f} given up after the retry limit"
                     + (f" (most by the {s['given_up_most']})" if s.get("given_up_most") else ""))
    if s.get("queue_max") is not None:
        parts.append(f"host queue up to {s['queue_max']:.0f} packets ({s.get('queue_max_host')})")
    if s.get("queue_dropped"):
        parts.append(f"{s['queue_dropped']:.0f} dropped there, full")
    if s.get("retrans") is not None:
        parts.append(f"TCP: {s['retrans']:.0f} segments retransmitted, {s['rtos']:.0f} RTOs")
    return "; ".join(parts)


def rows(label: str, by_transport: dict) -> list:
    """netloop-only Comparisons per transport: the mechanism's numbers."""
    out = []
    for transport in sorted(by_transport):
        s = summary(by_transport[transport])
        for key, what, unit in (("retried_pct", "data frames retried (no ACK)", "%"),
                                ("given_up", "frames given up at the retry limit", "frames"),
                                ("queue_max", "most packets in a host's queue", "packets"),
                                ("retrans", "TCP segments retransmitted, all hosts", "segments"),
                                ("rtos", "TCP retransmission timeouts, all hosts", "RTOs")):
            if s.get(key) is not None:
                out.append(Comparison(f"{label} {what}, {transport}", unit, None, s[key]))
    return out


def annotate(comparisons: list, prefix: str, by_transport: dict, only: str = "") -> None:
    """Adds each transport's mechanism line to the notes of ``comparisons`` whose item starts
    with ``prefix``, contains ``only`` and ends with that transport (``..., tcp`` or ``... (tcp)``)."""
    lines = {t: describe(summary(r)) for t, r in by_transport.items()}
    for c in comparisons:
        if not c.item.startswith(prefix) or only not in c.item:
            continue
        for t, line in lines.items():
            if line and (c.item.endswith(f", {t}") or c.item.endswith(f"({t})")):
                c.note = "; ".join(n for n in (c.note, line) if n)
