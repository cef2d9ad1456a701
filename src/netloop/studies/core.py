"""What a reproduced study is made of, and the one code path that judges it.

A study (a paper netloop is built from) has *parts*: each an experiment file of ``experiments/``
that reproduces one table or figure. Running a part gives a campaign directory (its
``analysis.json``). The study's ``compare`` reads those campaigns and returns a
:class:`StudyResult`: one :class:`Comparison` per published number netloop can measure
(published, netloop, ratio, verdict against a stated :class:`Tolerance`) and one
:class:`ShapeCheck` per finding that is a shape rather than a number (a knee, a collapse, a
ranking). Numbers that depend on the paper's hardware (a Raspberry Pi 3's CPU, a 2016 laptop) are
compared by ratio or shape, never by absolute time, and each comparison says which (``basis``).

Verdicts:

    match          netloop's number is within the tolerance of the published one (every tolerance
                   bounds it from both sides)
    miss           it is not, or what the number measures never happened (``never``: a flow that
                   never recovered after an outage has no recovery time, and that is a miss)
    netloop only   the paper's number is not among the reference numbers on purpose (or the
                   paper gives none): netloop's number is printed with the published column empty
    not measured   the campaign has no valid run for it (missing, failed, or the link lagged)
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ..run_files import MetadataError, load_analysis, load_metadata

MATCH, MISS, ONLY, NOT_MEASURED = "match", "miss", "netloop only", "not measured"
HOLDS, FAILS = "holds", "fails"
BASES = ("absolute", "ratio", "shape")


@dataclass(frozen=True)
class Tolerance:
    """How close netloop's number must come to the published one: within a ``factor`` (ours /
    published in [1/factor, factor]), or within ``absolute`` of it (in the number's unit), or
    within ``points`` percentage points (for percentages). Any one that holds is enough."""
    factor: Optional[float] = None
    absolute: Optional[float] = None
    points: Optional[float] = None

    def __post_init__(self):
        if self.factor is None and self.absolute is None and self.points is None:
            raise ValueError("a Tolerance needs factor, absolute or points")
        if self.factor is not None and self.factor < 1:
            raise ValueError(f"Tolerance.factor must be >= 1, got {self.factor}")

    def holds(self, published: float, ours: float) -> bool:
        if self.factor is not None and published > 0 and ours > 0:
            if 1 / self.factor <= ours / published <= self.factor:
                return True
        if self.absolute is not None and abs(ours - published) <= self.absolute:
            return True
        return self.points is not None and abs(ours - published) <= self.points

    def describe(self) -> str:
        parts = []
        if self.factor is not None:
            parts.append(f"×{self.factor:g}")
        if self.absolute is not None:
            parts.append(f"±{self.absolute:g}")
        if self.points is not None:
            parts.append(f"±{self.points:g} pp")
        return " or ".join(parts)


def _finite(x) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


@dataclass
class Comparison:
    """One published number against netloop's."""
    item: str                       # e.g. "Table I laser D, TCP"
    unit: str                       # e.g. "ms", "%", "Mbit/s", "×" (a ratio)
    published: Optional[float]      # None: not given on purpose (netloop's number only)
    ours: Optional[float]           # None: not measured
    tolerance: Optional[Tolerance] = None
    basis: str = "absolute"         # absolute | ratio | shape: how it is compared, see module doc
    note: str = ""
    #: what ``ours`` measures never happened (no recovery after an outage): a miss, not "not measured"
    never: bool = False

    def __post_init__(self):
        if self.basis not in BASES:
            raise ValueError(f"Comparison.basis must be one of {', '.join(BASES)}, got {self.basis!r}")
        self.published, self.ours = _finite(self.published), _finite(self.ours)

    @property
    def ratio(self) -> Optional[float]:
        if self.published is None or self.ours is None or self.published == 0:
            return None
        return self.ours / self.published

    @property
    def verdict(self) -> str:
        if self.ours is None:
            if self.never:   # what it measures did not happen: a miss, or netloop's finding
                return MISS if self.published is not None else ONLY
            return NOT_MEASURED
        if self.published is None or self.tolerance is None:
            return ONLY
        return MATCH if self.tolerance.holds(self.published, self.ours) else MISS

    def to_json(self) -> dict:
        return {"item": self.item, "unit": self.unit, "published": self.published, "netloop": self.ours,
                "ratio": self.ratio, "tolerance": self.tolerance.describe() if self.tolerance else None,
                "basis": self.basis, "verdict": self.verdict, "note": self.note, "never": self.never}


@dataclass
class ShapeCheck:
    """A finding of the paper that is a shape (a knee, a collapse, a ranking), judged. A rule
    that holds on a magnitude bounds it from both sides (``within``), so that an effect far
    larger than published (×17.8 where ×2 was) fails as one far smaller does."""
    item: str                       # e.g. "Fig. 19: UDPROS collapses with message size"
    expected: str                   # the published shape, in words
    observed: str                   # what netloop measured, in words and numbers
    holds: Optional[bool]           # None: not measured
    note: str = ""

    @property
    def verdict(self) -> str:
        return NOT_MEASURED if self.holds is None else (HOLDS if self.holds else FAILS)

    def to_json(self) -> dict:
        return {"item": self.item, "expected": self.expected, "observed": self.observed,
                "verdict": self.verdict, "note": self.note}


@dataclass
class Part:
    """One experiment file of a study and what of the paper it reproduces."""
    name: str                       # short key, e.g. "tables" (the --part value)
    experiment: str                 # file name in experiments/
    reproduces: str                 # e.g. "Tables I-II"
    #: applied after :func:`netloop.experiment.quick_variant` under --quick, to keep what the
    #: study's checks need (e.g. enough messages per point, the rates around a knee)
    quick: Optional[Callable] = None


@dataclass
class StudyResult:
    study: str
    comparisons: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    campaigns: dict = field(default_factory=dict)     # part name -> campaign directory
    notes: list = field(default_factory=list)         # e.g. "2 runs left out: the link lagged"

    def tally(self) -> dict:
        """How many comparisons and checks got each verdict."""
        out: dict = {}
        for c in self.comparisons + self.checks:
            out[c.verdict] = out.get(c.verdict, 0) + 1
        return out

    def summary_line(self) -> str:
        t = self.tally()
        order = [MATCH, MISS, HOLDS, FAILS, ONLY, NOT_MEASURED]
        return f"{self.study}: " + ", ".join(f"{t[k]} {k}" for k in order if t.get(k)) if t else \
            f"{self.study}: nothing compared"

    def markdown(self) -> str:
        """The study's tables: numbers (published, netloop, ratio, tolerance, verdict), then shapes."""
        lines = [f"**{self.summary_line()}**", ""]
        if self.comparisons:
            lines += ["| item | unit | published | netloop | ratio | tolerance | basis | verdict |",
                      "|---|---|---|---|---|---|---|---|"]
            for c in self.comparisons:
                note = f" ({c.note})" if c.note else ""
                lines.append(f"| {c.item} | {c.unit} | {fmt(c.published)} | {fmt(c.ours)} | "
                             f"{fmt(c.ratio, ratio=True)} | {c.tolerance.describe() if c.tolerance else ''} | "
                             f"{c.basis} | {c.verdict}{note} |")
            lines.append("")
        if self.checks:
            lines += ["| shape | published | netloop | verdict |", "|---|---|---|---|"]
            for s in self.checks:
                note = f" ({s.note})" if s.note else ""
                lines.append(f"| {s.item} | {s.expected} | {s.observed} | {s.verdict}{note} |")
            lines.append("")
        lines += [f"- {n}" for n in self.notes]
        return "\n".join(lines).rstrip() + "\n"

    def to_json(self) -> dict:
        return {"study": self.study, "tally": self.tally(),
                "comparisons": [c.to_json() for c in self.comparisons],
                "checks": [s.to_json() for s in self.checks],
                "campaigns": {k: str(v) for k, v in self.campaigns.items()}, "notes": list(self.notes)}


@dataclass
class Study:
    name: str                       # the word of `netloop reproduce NAME`
    title: str                      # short, e.g. "Pound (Tardioli, Parasuraman, Ögren)"
    citation: str                   # authors, title, year
    parts: list
    #: {part name: campaign directory} -> StudyResult (parts without a campaign are "not measured")
    compare: Callable
    summary: str = ""               # one paragraph: what netloop reproduces of it, what it cannot

    def part(self, name: str) -> Part:
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(f"study {self.name!r} has no part {name!r}; its parts: "
                       + ", ".join(p.name for p in self.parts))


def within(value: Optional[float], low: float, high: float) -> Optional[bool]:
    """``low <= value <= high``; None when ``value`` is None (not measured)."""
    return None if value is None else low <= value <= high


def fmt(value: Optional[float], ratio: bool = False) -> str:
    """A number for a table: 3 significant digits, '' for none."""
    if value is None:
        return ""
    if ratio:
        return f"{value:.2f}"
    if value == 0:
        return "0"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def median(values) -> Optional[float]:
    vals = [v for v in (_finite(x) for x in values) if v is not None]
    return statistics.median(vals) if vals else None


def campaign_runs(campaign: Path) -> tuple:
    """The runs of a campaign's ``analysis.json`` (:class:`netloop.run_files.AnalysisEntry`)
    whose link kept real time, and the counts {"runs", "invalid", "invalid_runs",
    "invalid_attempts", "rerun_runs"}: a run whose link lagged (its metadata.json says so) is
    left out, never kept, and counted; ``invalid_attempts`` counts the attempts judged invalid
    and run again (kept in the campaign's ``invalid/``), ``rerun_runs`` names their runs."""
    from ..rundir import invalid_attempts  # noqa: PLC0415 - not at import: `reproduce --list`
    campaign = Path(campaign)
    kept: list = []
    counts: dict = {"runs": 0, "invalid": 0, "invalid_runs": [], "invalid_attempts": 0, "rerun_runs": []}
    for run in load_analysis(campaign):
        counts["runs"] += 1
        reruns = len(invalid_attempts(campaign, run.run_id))
        if reruns:
            counts["invalid_attempts"] += reruns
            counts["rerun_runs"].append(run.run_id)
        try:
            link_valid = load_metadata(campaign / "runs" / run.run_id).link_valid
        except MetadataError:
            link_valid = None
        if link_valid is False:
            counts["invalid"] += 1
            counts["invalid_runs"].append(run.run_id)
        else:
            kept.append(run)
    return kept, counts


def left_out_note(part: str, counts: dict) -> Optional[str]:
    """The note a study result carries when runs were left out for a lagging link."""
    if not counts.get("invalid"):
        return None
    return (f"{part}: {counts['invalid']} of {counts['runs']} runs left out, the link emulator lagged "
            f"real time ({', '.join(counts['invalid_runs'][:4])}{', ...' if counts['invalid'] > 4 else ''})")
