"""The decision table at the top of a report: per condition (the sweep's setting), one row
per transport, ranked by one number, with its spread over the repetitions and a plain
verdict.

This module holds the ranking every table shares (:class:`Candidate`, :func:`rank`,
:data:`RULES`, :func:`describe`) and the flows-only table (``loop.type: none``): one table per
flow, ranked by the median of each run's median one-way delay D (or the round trip of an echo
flow); beside it D p99, std J_d, MDR and BW. A loop kind's own table is in its package
(``netloop.loops.rlc.analysis``: the RLC loop ranked by IAE(y − baseline);
``netloop.loops.teleop.analysis``: the teleop trial ranked by IAE vs local).

Verdict rules (:func:`rank`, the glossary's "best", "indistinguishable from best", "worse
by X (Y %)"): the lowest median is **best**; another transport whose min–max over its
repetitions overlaps the best one's is **indistinguishable from best**; else it is **worse
by** the difference of the medians (and that difference in % of the best's median).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from . import degradation, glossary
from .rendering import Section
from .results import FlowResult, RunAnalysis
from .tables import MISSING, median_of, percent_text, sig

BEST = "best"
SAME = "indistinguishable from best"


@dataclass
class Candidate:
    """One row of a decision table before it is ranked: a transport, the ranked number of
    each of its repetitions, and the other cells (already formatted)."""

    name: str
    values: list[float]
    cells: list[str] = field(default_factory=list)
    note: str = ""              # appended to the verdict (e.g. "2 of 3 unstable")

    def __post_init__(self):
        self.values = [float(v) for v in self.values if v is not None and math.isfinite(float(v))]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return median_of(self.values) if self.values else math.nan

    @property
    def low(self) -> float:
        return min(self.values) if self.values else math.nan

    @property
    def high(self) -> float:
        return max(self.values) if self.values else math.nan


@dataclass
class Ranked:
    rank: int | None
    candidate: Candidate
    verdict: str


def verdict(c: Candidate, best: Candidate, unit: str) -> str:
    """The verdict of ``c`` against ``best`` (rules in the module docstring)."""
    if c is best:
        return BEST
    if c.low <= best.high:
        return SAME
    diff = c.median - best.median
    rel = f" ({100 * diff / best.median:.0f} %)" if best.median > 0 else ""
    return f"worse by {sig(diff, 2)}{' ' + unit if unit else ''}{rel}"


def rank(candidates: list[Candidate], unit: str) -> list[Ranked]:
    """The candidates best first (lowest median), each with its verdict; those without a
    usable value last, unranked."""
    usable = sorted((c for c in candidates if c.n), key=lambda c: c.median)
    out = []
    for i, c in enumerate(usable):
        v = verdict(c, usable[0], unit)
        out.append(Ranked(i + 1, c, v + (f"; {c.note}" if c.note else "")))
    out += [Ranked(None, c, "no usable run" + (f"; {c.note}" if c.note else "")) for c in candidates if not c.n]
    return out


def spread_text(c: Candidate, digits: int = 3) -> str:
    """'median (min–max)', or the single value of one repetition."""
    if not c.n:
        return MISSING
    if c.n == 1:
        return sig(c.median, digits)
    return f"{sig(c.median, digits)} ({sig(c.low, digits)}–{sig(c.high, digits)})"


def table_rows(ranked: list[Ranked], value_digits: int = 3) -> list[list[Any]]:
    return [[r.rank if r.rank is not None else MISSING, r.candidate.name, spread_text(r.candidate, value_digits),
             *r.candidate.cells, r.verdict] for r in ranked]


def pair(a: Any, b: Any, text: Callable[[Any], str] = sig) -> str:
    return f"{text(a)} / {text(b)}"


def repetitions_text(counts: list[int]) -> str:
    counts = sorted(set(counts))
    if not counts:
        return "no repetitions"
    if len(counts) == 1:
        n = counts[0]
        return f"{n} repetition{'s' if n != 1 else ''} each"
    return f"{counts[0]}–{counts[-1]} repetitions"


RULES = ("Verdict: **best** = lowest median; **indistinguishable from best** = its min–max over the "
         "repetitions overlaps the best one's; **worse by X (Y %)** = the ranges do not overlap, X = the "
         "difference of the medians, Y = X in % of the best's median. Terms: Glossary at the end.")


# -- flows only -----------------------------------------------------------------------------------

def _flow_header(word: str) -> list[str]:
    return ["rank", "transport", f"{word} p50 [ms]", f"{word} p99 [ms]", "std J_d [ms]", "MDR [%]", "BW [Mbit/s]",
            "verdict"]


def flow_candidates(runs: list[RunAnalysis], entry: str, setting: str) -> list[Candidate]:
    """One candidate per transport: the ranked value is each run's median D (its
    subscribers' and replicas' median), the other cells medians over the runs."""
    per: dict[str, dict[str, list[FlowResult]]] = {}
    for a in runs:
        if degradation.setting_of(a) != setting:
            continue
        for f in a.flows:
            if f.entry == entry and f.ok and f.delay:
                per.setdefault(a.transport, {}).setdefault(a.run_id, []).append(f)
    out = []
    for transport, by_run in per.items():
        def med(get):
            return median_of(get(f) for fl in by_run.values() for f in fl)
        out.append(Candidate(transport, [median_of(f.delay["p50_ms"] for f in fl) for fl in by_run.values()], cells=[
            sig(med(lambda f: f.delay["p99_ms"])), sig(med(lambda f: f.period["std_ms"])),
            percent_text(med(lambda f: f.MDR)),
            sig(median_of(sum(f.bandwidth_mbit for f in fl if f.bandwidth_mbit is not None) for fl in by_run.values()))]))
    return out


def flow_section(runs: list[RunAnalysis], transport_order: list[str] | None,
                 descriptions: dict[str, str]) -> Section | None:
    """The decision tables of an experiment without a loop: one per flow (and setting),
    ranked by the flow's delay."""
    from .flow_sections import entries, setting_rank  # noqa: PLC0415 - flow_sections imports plots

    names = entries(runs)
    if not names:
        return None
    settings = setting_rank(runs)
    swept = len(settings) > 1
    section = Section("Decision table")
    counts = [len({a.run_id for a in runs if a.transport == t and degradation.setting_of(a) == s})
              for t in {a.transport for a in runs} for s in settings]
    section.p(f"Which transport carries each flow best, per transport ({repetitions_text([c for c in counts if c])}): "
              "the flow's one-way delay D (the round trip for an echo flow) as the median over the repetitions of "
              "each run's median, with its min–max; its p99, the jitter at the destination (std J_d), losses "
              "(MDR) and the bandwidth used (BW), medians over the repetitions. " + RULES)
    order = list(transport_order or [])
    for entry in names:
        word = "RTT" if any(f.measures == "round trip" for a in runs for f in a.flows if f.entry == entry) else "D"
        for setting in settings:
            cands = flow_candidates(runs, entry, setting)
            cands.sort(key=lambda c: order.index(c.name) if c.name in order else len(order))
            if not cands:
                continue
            section.h(3, f"Flow `{entry}`" + (f", {setting}" if swept else ""))
            section.table(_flow_header(word), table_rows(rank(cands, "ms")))
    return describe(section, descriptions, [a.transport for a in runs])


# -- what each transport is -----------------------------------------------------------------------

def describe(section: Section, descriptions: dict[str, str], transports: list[str]) -> Section:
    """``section`` with the list of what each of ``transports`` is, where described."""
    items = [f"**{t}**: {descriptions[t]}" for t in dict.fromkeys(transports) if descriptions.get(t)]
    if items:
        section.p("The transports:").ul(items)
    return section


def transport_descriptions(runs: list[RunAnalysis]) -> dict[str, str]:
    """transport -> its one-line description, as the run recorded it (metadata.json →
    transport.description); a transport whose runs recorded none is not described."""
    out: dict[str, str] = {}
    for a in runs:
        text = a.meta.transport.get("description")
        if text and a.transport not in out:
            out[a.transport] = text
    return out


def glossary_section(kinds: list[str]) -> Section:
    """The glossary at the end of the report (analysis.glossary, the single source): the generic
    terms and those of the loop kinds called ``kinds``."""
    return Section("Glossary").table(["term", "unit", "meaning"], glossary.rows(kinds=kinds))
