"""A campaign's flows as points of a study's grid: (transport, size, rate, subscriber, settings)
-> median one-way delay, delivery, bandwidth. The message-size and Raspberry Pi studies
(:mod:`netloop.studies.maruyama`, :mod:`netloop.studies.sanap`) read their campaigns through it.

Only the standard library: a study module imports this at import time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..run_files import AnalysisEntry, has_analysis
from .core import campaign_runs, left_out_note, median


@dataclass
class Point:
    """One flow of one run (one subscriber's row when the flow has several)."""
    transport: str
    size_bytes: Optional[int]
    period_s: Optional[float]
    subscriber: str = ""                 # "#k on <host>" when the flow has several, else ""
    measures: str = "one-way"            # "round trip" for echo flows
    p50_ms: Optional[float] = None       # the flow's median D
    mdr_pct: Optional[float] = None      # messages received / sent, %
    bw_mbit: Optional[float] = None
    sent: Optional[int] = None
    received: Optional[int] = None
    lost_before: Optional[int] = None    # lost before the subscriber existed (a late joiner)
    settings: dict = field(default_factory=dict)

    @property
    def rate_hz(self) -> Optional[int]:
        return round(1 / self.period_s) if self.period_s else None

    @property
    def delivered_pct(self) -> Optional[float]:
        """Throughput as a share of what was offered, %: the messages delivered (MDR), or, where
        less, the delivered rate over the offered rate (bandwidth / (size x rate)): a link or a
        node that cannot keep up delivers late rather than never when queues are deep, and a
        count over a fixed window (the Raspberry Pi study's) then sees the rate, not the MDR."""
        if self.mdr_pct is None:
            return None
        offered = self.size_bytes * 8 / self.period_s / 1e6 if self.size_bytes and self.period_s else None
        if self.bw_mbit is None or not offered:
            return self.mdr_pct
        return min(self.mdr_pct, 100.0 * self.bw_mbit / offered)

    @property
    def subscriber_number(self) -> Optional[int]:
        """k of "#k on <host>", None for a flow with one subscriber."""
        if not self.subscriber.startswith("#"):
            return None
        try:
            return int(self.subscriber[1:].split()[0])
        except ValueError:
            return None


def _point(run: AnalysisEntry, flow: dict) -> Point:
    delay = flow.get("delay") or {}
    mdr = flow.get("MDR")
    return Point(transport=run.transport, size_bytes=flow.get("size_bytes"),
                 period_s=flow.get("period_s"), subscriber=flow.get("subscriber") or "",
                 measures=flow.get("measures", "one-way"), p50_ms=delay.get("p50_ms"),
                 mdr_pct=None if mdr is None else 100.0 * mdr, bw_mbit=flow.get("bandwidth_mbit"),
                 sent=flow.get("sent"), received=flow.get("received"),
                 lost_before=flow.get("lost_before_subscriber"),
                 settings=run.settings)


def read_points(campaign: Optional[Path], part: str) -> tuple:
    """(points, note): every flow of the campaign's valid runs, and the note for runs left out
    (None when none were). No campaign or no analysis.json: ([], None)."""
    if campaign is None or not has_analysis(campaign):
        return [], None
    runs, counts = campaign_runs(Path(campaign))
    pts = [_point(run, flow) for run in runs for flow in run.flows]
    return pts, left_out_note(part, counts)


def select(points: list, transport: Optional[str] = None, size: Optional[int] = None,
           rate: Optional[int] = None, subscriber: Optional[int] = None, **settings) -> list:
    """The points that match every given field; ``settings`` by the swept key's last word
    (``reliability="reliable"`` matches ``flows[0].qos.reliability``); a point whose run did
    not sweep that key matches (its value is the file's)."""
    out = []
    for p in points:
        if transport is not None and p.transport != transport:
            continue
        if size is not None and p.size_bytes != size:
            continue
        if rate is not None and p.rate_hz != rate:
            continue
        if subscriber is not None and p.subscriber_number != subscriber:
            continue
        if any(v != want for k, want in settings.items() for key, v in p.settings.items()
               if key.rsplit(".", 1)[-1] == k):
            continue
        out.append(p)
    return out


def med(points: list, attr: str) -> Optional[float]:
    """The median of one attribute over the points (repetitions, tcp's QoS duplicates)."""
    return median(getattr(p, attr) for p in points)


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b not in (None, 0) else None


def sizes(points: list) -> list:
    return sorted({p.size_bytes for p in points if p.size_bytes})


def rates(points: list) -> list:
    return sorted({p.rate_hz for p in points if p.rate_hz})


def size_label(n: int) -> str:
    """256 B, 4 KB, 1 MB (powers of 1024)."""
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"
