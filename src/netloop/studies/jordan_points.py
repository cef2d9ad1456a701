"""Jordan 2017 (:mod:`netloop.studies.jordan`): the echo flows' round trips of a campaign as
points, one per run and flow entry, and the series drawn from them.

A point is a dict: rate [Hz], cpu, link, payload, n (echo pairs), transport, run_id, mean_ms
and p50_ms (round trip, the pairs' runs together), kept (the fraction of the messages the rate
and the run's length call for that were sent), echoed (the fraction that came back), sent and
received, and on an emulated Wi-Fi link what a message cost there (``cost``:
:func:`netloop.studies.chain_trace.per_message`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..run_files import MetadataError, has_analysis, load_metadata
from . import chain_trace
from .core import campaign_runs, left_out_note, median


def points(campaign: Optional[Path]) -> tuple:
    """([point per run and flow entry], notes): rate [Hz], cpu, link, n (pairs), transport,
    mean_ms / p50_ms (round trip, the pairs' runs together), kept, echoed. Runs whose link
    lagged are left out (a note says so); a missing campaign gives no points."""
    if campaign is None or not has_analysis(campaign):
        return [], []
    runs, counts = campaign_runs(campaign)
    out = []
    for run in runs:
        exp = _experiment(Path(campaign), run.run_id)
        by_entry: dict = {}
        for f in run.flows:
            by_entry.setdefault(f.get("entry") or f.get("flow"), []).append(f)
        for entry, flows in by_entry.items():
            pt = _point(flows, exp, run.settings)
            if pt:
                trace = chain_trace.run_trace(Path(campaign) / "runs" / run.run_id)
                pt.update(transport=run.transport or None, run_id=run.run_id,
                          cost=chain_trace.per_message(trace, pt["sent"] + pt["received"]))
                out.append(pt)
    note = left_out_note(Path(campaign).name, counts)
    return out, [note] if note else []


def _experiment(campaign: Path, run_id: str) -> dict:
    """The experiment a run recorded ({} when its metadata.json is missing or unreadable)."""
    try:
        return load_metadata(campaign / "runs" / run_id).experiment
    except MetadataError:
        return {}


def _point(flows: list, exp: dict, settings: dict) -> Optional[dict]:
    period = flows[0].get("period_s")
    if not period:
        return None
    flow_cfg = (exp.get("flows") or [{}])[0]
    length = (exp.get("duration") or 0) - (flow_cfg.get("start_delay") or 0)
    sent = sum(f.get("sent") or 0 for f in flows)
    received = sum(f.get("received") or 0 for f in flows)
    expected = len(flows) * length / period if length > 0 else None
    weighted = [(f["delay"]["mean_ms"], f["delay"].get("n") or 0) for f in flows
                if (f.get("delay") or {}).get("mean_ms") is not None]
    total = sum(n for _, n in weighted)
    hosts = exp.get("hosts") or {}
    return {"rate": round(1.0 / period, 3), "n": len(flows),
            "cpu": settings.get("hosts.robot.cpu", (hosts.get("robot") or {}).get("cpu", 1.0)),
            "link": settings.get("link", exp.get("link")),
            "payload": flows[0].get("payload_bytes") or flows[0].get("size_bytes"),
            "mean_ms": sum(m * n for m, n in weighted) / total if total else None,
            "p50_ms": median((f.get("delay") or {}).get("p50_ms") for f in flows),
            "kept": sent / expected if expected else None,
            "echoed": received / sent if sent else None, "sent": sent, "received": received}


def by(pts: list, **match) -> list:
    return [p for p in pts if all(p.get(k) == v for k, v in match.items())]


def mean_at(pts: list, **match) -> Optional[float]:
    """The median over repetitions of the mean round trip at one setting."""
    return median(p["mean_ms"] for p in by(pts, **match))


def rate_series(pts: list, **match) -> list:
    """One point per rate (repetitions: the median mean, the worst kept/echoed)."""
    out = []
    for rate in sorted({p["rate"] for p in by(pts, **match)}):
        reps = by(pts, rate=rate, **match)
        out.append({"rate": rate, "mean_ms": median(p["mean_ms"] for p in reps),
                    "kept": min((p["kept"] for p in reps if p["kept"] is not None), default=None),
                    "echoed": min((p["echoed"] for p in reps if p["echoed"] is not None), default=None)})
    return out


def cost_note(pts: list, link: str, rate: Optional[float]) -> str:
    """What one message cost on the link at ``rate`` (the median over repetitions): data frames on
    the air, TCP segments, data frames per transmission; "" without the emulator's counters."""
    costs = [p["cost"] for p in by(pts, link=link, rate=rate) if p.get("cost")] if rate else []
    if not costs:
        return ""
    parts = [f"{median(c['frames_per_message'] for c in costs):.2f} data frames per message"]
    segs = median(c.get("segments_per_message") for c in costs)
    per_tx = median(c.get("frames_per_transmission") for c in costs)
    if segs is not None:
        parts.append(f"{segs:.2f} TCP segments per message")
    if per_tx is not None:
        parts.append(f"{per_tx:.1f} frames per transmission")
    return f"at {rate:g} Hz: " + ", ".join(parts)
