"""The analysis side of a loop kind: the interface :mod:`report` talks to.

Each loop kind (``loop.type``) has one registry entry in :mod:`netloop.loops`; its analysis
side is a :class:`LoopAnalysis`, found with :func:`netloop.loops.loop_analysis` and imported
only then. This base class is also the ``none`` kind's (no loop: nothing of its own; the
flows decide). A kind's methods get ``runs``, every run of that kind (complete or not), and
``ctx``, the :class:`ReportContext`; the report turns what they return into the document,
the CSV tables and analysis.json, and never looks at a kind's results itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..loops import loop_analysis, loop_kind_names
from ..run_files import RunRecord
from . import decision, glossary
from .rendering import Section
from .results import DirectionStats, RunAnalysis, RunPoint


#: how a loop's one-way delays are measured (the start of a kind's :meth:`LoopAnalysis.reading_note`)
LOOP_DELAYS = ("Loop delays are one-way, from the sender's publish to the receiver's callback (one shared clock "
               "on one machine, or corrected by the measured clock offsets)")


@dataclass
class ReportContext:
    """What every kind's report part may use: where tables and figures go, the transports'
    order and descriptions, and ``cache`` for what a kind computes once per report."""

    path: Path                   # the results directory: CSV tables and JSON files go here
    fig_dir: Path
    transport_order: list[str] | None = None
    descriptions: dict[str, str] = field(default_factory=dict)   # transport -> what it is
    cache: dict[str, Any] = field(default_factory=dict)


class LoopAnalysis:
    """A loop kind's analysis and report part; as it is, a run without a loop (only the
    perturbing flows): nothing of its own to analyse."""

    name = "none"
    #: the kind's words of the report's glossary, added to the generic ones (:mod:`glossary`)
    glossary_terms: tuple[glossary.Term, ...] = ()

    def analyse_run(self, run_dir: Path, meta: RunRecord) -> RunAnalysis:
        """The kind's own analysis of one run whose metadata.json (already read and checked)
        is ``meta``, its typed result in ``result`` (none here); the report adds the flows."""
        return RunAnalysis(run_id=meta.run_id or Path(run_dir).name, transport=meta.transport_name,
                           status=meta.status or "unknown", loop_type=self.name, cell=meta.cell, meta=meta)

    def summary(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[str]:
        """The kind's sentences of the report's Summary."""
        return []

    def decision(self, runs: list[RunAnalysis], ctx: ReportContext) -> Section | None:
        """The kind's decision table (:mod:`decision`), near the top of the report. Without a
        loop, the flows decide: one table per flow, ranked by its delay."""
        return decision.flow_section([a for a in runs if a.status == "complete"], ctx.transport_order,
                                     ctx.descriptions)

    def sections(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[Section]:
        """The kind's sections of the report, after the decision tables."""
        return []

    def run_table(self, runs: list[RunAnalysis]) -> tuple[list[str], list[list[Any]]] | None:
        """Header and rows of the kind's runs in "Every loop run" (None: the kind has no loop)."""
        return None

    def write_files(self, runs: list[RunAnalysis], ctx: ReportContext) -> None:
        """The kind's CSV tables and JSON files in ``ctx.path``."""

    def points(self, runs: list[RunAnalysis], ctx: ReportContext) -> dict[str, RunPoint]:
        """Per run id, the run's degradation point (analysis.json's ``degradation``)."""
        return {}

    def directions(self, a: RunAnalysis) -> Iterator[tuple[str, DirectionStats]]:
        """(name, DirectionStats) of the loop's message streams in a run (the outage and clock tables)."""
        return iter(())

    def reading_note(self) -> str | None:
        """The kind's sentence on how to read its numbers, at the end of the report (None: none)."""
        return None

    def round_trip_ms(self, a: RunAnalysis) -> float | None:
        """The loop's median round trip in a run [ms], read on one clock (None: not measured)."""
        return None


def kind_of(a: RunAnalysis) -> LoopAnalysis:
    """The analysis side of a run's loop kind (the base, no loop, when its analysis failed)."""
    return loop_analysis(a.loop_type) if a.loop_type in loop_kind_names() else LoopAnalysis()
