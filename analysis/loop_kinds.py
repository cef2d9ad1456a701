"""The analysis side of the loop kinds (``loop.type`` of an experiment): one object per kind,
chosen by :func:`analysis_for`, the only place in the analysis that looks at the loop type.

Each object has

- ``analyse_run(run_dir, meta) -> RunAnalysis``: the kind's own analysis of one run whose
  metadata.json (already read and checked) is ``meta``; flows are added by the report;
- ``summary(runs, ctx) -> list[str]``: the kind's sentences of the report's summary;
- ``decision(runs, ctx) -> Section | None``: the kind's decision table (:mod:`decision`), at
  the top of the report;
- ``section(runs, ctx) -> list[Section]``: the kind's sections of the report.

``runs`` are every run of that kind (complete or not); ``ctx`` is the :class:`ReportContext`.
``netloop.loops`` (the run side) finds these objects by the names RLC, TELEOP and NO_LOOP.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import decision, loop_sections, repeated_steps, step_report
from .loop_run import analyse_loop_run, load_loop_run, transport_of
from .prediction import analyse_prediction
from .rendering import Section
from .results import RunAnalysis
from .teleop_run import analyse_teleop_run, teleop_section

#: the loop type of a run whose metadata names none (runs recorded before loop kinds existed)
DEFAULT_LOOP_TYPE = "rlc"


@dataclass
class ReportContext:
    """What every kind's report part may use: where figures go, and the loop study."""

    fig_dir: Path
    study: loop_sections.LoopStudy
    transport_order: list[str] | None = None
    descriptions: dict[str, str] = field(default_factory=dict)   # transport -> what it is


class NoLoopAnalysis:
    """A run without a loop (only the perturbing flows): nothing of its own to analyse."""

    name = "none"

    def analyse_run(self, run_dir: Path, meta: dict[str, Any]) -> RunAnalysis:
        exp = meta.get("experiment") or {}
        return RunAnalysis(run_id=meta.get("run_id") or Path(run_dir).name, transport=transport_of(meta),
                           status=str(meta.get("status", "unknown")), loop_type=self.name, cell=exp.get("cell"),
                           meta=meta)

    def summary(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[str]:
        return []

    def decision(self, runs: list[RunAnalysis], ctx: ReportContext) -> Section | None:
        """Without a loop, the flows decide: one table per flow, ranked by its delay."""
        return decision.flow_section([a for a in runs if a.status == "complete"], ctx.transport_order,
                                     ctx.descriptions)

    def section(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[Section]:
        return []


class RlcAnalysis(NoLoopAnalysis):
    """The RLC loop: step response against the local baseline, degradation, prediction."""

    name = "rlc"

    def analyse_run(self, run_dir: Path, meta: dict[str, Any]) -> RunAnalysis:
        a = super().analyse_run(run_dir, meta)
        robots = (meta.get("loop") or {}).get("robots") or [None]   # per_robot: one loop per robot
        for robot in robots:
            one = load_loop_run(run_dir, meta, robot)
            result = analyse_loop_run(one)
            if robot is not None:
                a.robot_loops[robot] = result
                a.add_problems(result.problems, prefix=f"{robot}'s loop: ")
            if a.loop is None:      # the first robot's loop is the one the loop tables show
                run, a.loop = one, result
        if not a.robot_loops:
            a.add_problems(a.loop.problems)
        if meta and not meta.get("experiment"):
            a.add_problems(["metadata.json has no experiment configuration"])
        if a.loop.ok:
            a.prediction = analyse_prediction(run)
            a.add_problems(a.prediction.problems)
        return a

    @staticmethod
    def usable(runs: list[RunAnalysis]) -> list[RunAnalysis]:
        """The complete runs whose loop could be analysed (the tables' and figures' runs)."""
        return [a for a in runs if a.ok and a.status == "complete"]

    def summary(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[str]:
        good = self.usable(runs)
        if repeated_steps.has_steps(good):   # a square wave: the steps' ranking is the headline
            return step_report.summary(good) + loop_sections.summary(good, ctx.study, ranking=False)
        return loop_sections.summary(good, ctx.study)

    def decision(self, runs: list[RunAnalysis], ctx: ReportContext) -> Section | None:
        good = self.usable(runs)
        if repeated_steps.has_steps(good):
            return decision.describe(step_report.decision(good, ctx.study.swept), ctx.descriptions,
                                     [a.transport for a in good])
        return decision.loop_section(ctx.study, ctx.descriptions) if good else None

    def section(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[Section]:
        good = self.usable(runs)
        out = loop_sections.sections(good, ctx.study, ctx.fig_dir)
        if repeated_steps.has_steps(good):
            out.insert(0, step_report.section(ctx.study.order(good), ctx.fig_dir))
        return out


class TeleopAnalysis(NoLoopAnalysis):
    """Teleoperation of the simulated car: the scripted trial's steps against the local baseline."""

    name = "teleop"

    def analyse_run(self, run_dir: Path, meta: dict[str, Any]) -> RunAnalysis:
        a = super().analyse_run(run_dir, meta)
        a.teleop = analyse_teleop_run(run_dir, meta)
        a.add_problems(a.teleop.problems)
        return a

    def decision(self, runs: list[RunAnalysis], ctx: ReportContext) -> Section | None:
        return decision.teleop_section(runs, ctx.descriptions)

    def section(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[Section]:
        section = teleop_section([a.teleop for a in runs if a.teleop is not None], ctx.fig_dir)
        return [section] if section is not None else []


RLC, TELEOP, NO_LOOP = RlcAnalysis(), TeleopAnalysis(), NoLoopAnalysis()
KINDS = {k.name: k for k in (RLC, TELEOP, NO_LOOP)}


def loop_type_of(meta: dict[str, Any]) -> str:
    """The loop type a run's metadata records (:data:`DEFAULT_LOOP_TYPE` when it names none)."""
    return str(((meta.get("experiment") or {}).get("loop") or {}).get("type") or DEFAULT_LOOP_TYPE)


def analysis_for(loop_type: str) -> NoLoopAnalysis:
    """The analysis object of a loop type; ValueError naming the known types otherwise."""
    try:
        return KINDS[loop_type]
    except KeyError:
        raise ValueError(f"unknown loop type {loop_type!r} (known: {', '.join(KINDS)})") from None
