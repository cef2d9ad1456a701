"""The ``teleop`` kind's analysis side: each run's trial analysed by
:mod:`netloop.analysis.teleop_run` (speed and heading steps, message delays), and what the
report shows of it: the decision table, the section with one figure per step and the table of
every complete run against the local baseline, the kind's rows of "Every loop run" and its
runs.csv. Its typed result of a run, in ``RunAnalysis.result``, is a
:class:`~netloop.analysis.results.TeleopRunResult`, read with
:func:`~netloop.analysis.teleop_run.teleop_result` (analysis.json's entry of a teleop run is
the generic one). Imports the analysis only, never the run side (:mod:`.run`).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ...analysis import degradation, plots
from ...analysis.decision import RULES, Candidate, describe, pair, rank, table_rows
from ...analysis.kinds import LOOP_DELAYS, LoopAnalysis, ReportContext
from ...analysis.rendering import Section
from ...analysis.results import RunAnalysis, TeleopRunResult
from ...analysis.tables import MISSING, median_of, sig, write_csv
from ...analysis.teleop_run import analyse_teleop_run, step_deviation, teleop_result
from ...run_files import RunRecord
from .terms import TERMS

#: the teleop runs' columns of "Every loop run" (runs.csv)
RUN_COLUMNS = ["run", "transport", "status", "where", "speed rise [s]", "heading rise [s]", "odom delay mean [ms]",
               "odom delay p99 [ms]", "command age mean [ms]"]


TELEOP_HEADER = ["rank", "transport", "IAE vs local per step, speed + heading [s]", "speed [s]", "heading [s]",
                 "odometry delay p50 / p99 [ms]", "command age mean [ms]", "verdict"]


def decision_section(runs: list[RunAnalysis], descriptions: dict[str, str]) -> Section | None:
    """The teleop trial's decision table: transports ranked by how far their speed and
    heading steps stray from the trial run on the car (IAE vs local, summed)."""
    trial = {a.run_id: t for a in runs if (t := teleop_result(a)) is not None and t.ok and a.status == "complete"}
    good = [a for a in runs if a.run_id in trial]
    local = next((trial[a.run_id] for a in good if trial[a.run_id].local), None)
    remote = [a for a in good if not trial[a.run_id].local]
    if not remote:
        return None
    section = Section("Decision table")
    if local is None:
        section.p("No local trial (on the car's host) to compare with: transports are ranked by the median "
                  "odometry delay instead. " + RULES)
    else:
        section.p("Which transport keeps the teleoperated car closest to the trial run on the car itself: IAE of "
                  "the normalised speed and heading steps against the local run, summed (median, min–max over "
                  "the repetitions), each step's own median, the odometry's delay and the commands' age. " + RULES)
    settings = list(dict.fromkeys(degradation.setting_of(a) for a in remote))
    for setting in settings:
        by: dict[str, list] = {}
        for a in remote:
            if degradation.setting_of(a) == setting:
                by.setdefault(a.transport, []).append(trial[a.run_id])
        cands = []
        for transport, trials in by.items():
            speed = [step_deviation(t.speed, local.speed) for t in trials] if local else []
            heading = [step_deviation(t.heading, local.heading) for t in trials] if local else []
            values = [s + h for s, h in zip(speed, heading)] if local else [t.odom_delay["p50_ms"] for t in trials]
            cands.append(Candidate(transport, values, cells=[
                sig(median_of(speed)) if local else MISSING, sig(median_of(heading)) if local else MISSING,
                pair(median_of(t.odom_delay["p50_ms"] for t in trials), median_of(t.odom_delay["p99_ms"] for t in trials)),
                sig(median_of(t.command_age["mean_ms"] for t in trials))]))
        if len(settings) > 1:
            section.h(3, setting)
        header = TELEOP_HEADER if local else TELEOP_HEADER[:2] + ["odometry delay p50 [ms]"] + TELEOP_HEADER[3:]
        section.table(header, table_rows(rank(cands, "s" if local else "ms")))
    return describe(section, descriptions, [a.transport for a in remote])


def _trials(runs: list[RunAnalysis]) -> list[TeleopRunResult]:
    """The teleop results of the runs that have one."""
    return [r for r in map(teleop_result, runs) if r is not None]


class TeleopAnalysis(LoopAnalysis):
    """Teleoperation of the simulated car: the scripted trial's steps against the local baseline."""

    name = "teleop"
    glossary_terms = TERMS

    def analyse_run(self, run_dir: Path, meta: RunRecord) -> RunAnalysis:
        a = super().analyse_run(run_dir, meta)
        a.result = analyse_teleop_run(run_dir, meta)
        a.add_problems(a.result.problems)
        return a

    def decision(self, runs: list[RunAnalysis], ctx: ReportContext) -> Section | None:
        return decision_section(runs, ctx.descriptions)

    def sections(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[Section]:
        section = teleop_section(_trials(runs), ctx.fig_dir)
        return [section] if section is not None else []

    def run_table(self, runs: list[RunAnalysis]) -> tuple[list[str], list[list[Any]]] | None:
        trials = _trials(runs)
        if not trials:
            return None

        def metric(step, name: str) -> Any:
            return step.metrics.get(name) if step is not None else None
        return RUN_COLUMNS, [[r.run_id, r.transport, r.status, "trial on the car (local)" if r.local else
                              f"over {r.transport}", metric(r.speed, "RiseTime"), metric(r.heading, "RiseTime"),
                              (r.odom_delay or {}).get("mean_ms"), (r.odom_delay or {}).get("p99_ms"),
                              (r.command_age or {}).get("mean_ms")] for r in trials]

    def reading_note(self) -> str:
        return LOOP_DELAYS + "."

    def write_files(self, runs: list[RunAnalysis], ctx: ReportContext) -> None:
        """runs.csv: the teleop runs of "Every loop run"."""
        table = self.run_table(runs)
        if table is not None:
            write_csv(ctx.path / "runs.csv", *table)


def _plot_steps(series: list[tuple[str, list, list]], path: Path, title: str) -> None:
    import matplotlib.pyplot as plt  # noqa: PLC0415 (plots sets the Agg backend on import)

    fig, ax = plt.subplots(figsize=(7.5, 3.8), dpi=110)
    seen = set()
    for name, t, y in series:
        base = name == "baseline"
        ax.step(t, y, where="post", color="0.55" if base else plots.transport_color(name),
                lw=3.0 if base else 1.2, alpha=0.6 if base else 0.9, zorder=1 if base else 3,
                label=None if name in seen else ("local baseline (trial on the car)" if base else name))
        seen.add(name)
    ax.axhline(1.0, color="0.6", lw=0.8, ls=":")
    ax.set_xlabel("time since the reference step [s]")
    ax.set_ylabel("response / step size [1]")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


TELEOP_COLUMNS = ["run", "where", "speed rise [s]", "speed overshoot [%]", "speed settling [s]",
                  "heading rise [s]", "heading overshoot [%]", "heading settling [s]", "IAE vs local per step (speed) [s]",
                  "IAE vs local per step (heading) [s]", "odom delay mean [ms]", "odom delay p99 [ms]",
                  "command age mean [ms]"]


def _not_shown(runs: list[TeleopRunResult]) -> str:
    return "; ".join(f"`{r.run_id}` ({r.status}: {'; '.join(r.problems) or 'not complete'})" for r in runs)


def teleop_section(runs: list[TeleopRunResult], fig_dir: Path) -> Section | None:
    """The teleop part of a report (None when there are no teleop runs): one figure per step,
    the table of every complete run against the local baseline, the runs not shown."""
    if not runs:
        return None
    section = Section("Teleoperation trial: steps against the local baseline")
    good = [r for r in runs if r.ok and r.status == "complete"]
    if not good:
        return section.p("No complete teleop run to show: " + _not_shown(runs))
    local = next((r for r in good if r.local), None)
    for key, unit in (("speed", "m/s"), ("heading", "rad")):
        series = [("baseline" if r.local else r.transport, getattr(r, key).t, getattr(r, key).y) for r in good]
        fig = fig_dir / f"teleop_{key}.png"
        _plot_steps(series, fig, f"Teleop trial: {key} step of {getattr(good[0], key).step:.3g} {unit}")
        section.fig(fig, f"{key} step")
    rows = []
    for r in good:
        against_local = local is not None and not r.local
        sm, hm = r.speed.metrics, r.heading.metrics
        rows.append([r.run_id, "trial on the car (local)" if r.local else f"over {r.transport}",
                     sm["RiseTime"], sm["Overshoot"], sm["SettlingTime"], hm["RiseTime"], hm["Overshoot"],
                     hm["SettlingTime"],
                     step_deviation(r.speed, local.speed) if against_local else math.nan,
                     step_deviation(r.heading, local.heading) if against_local else math.nan,
                     r.odom_delay["mean_ms"], r.odom_delay["p99_ms"], r.command_age["mean_ms"]])
    section.table(TELEOP_COLUMNS, rows)
    section.p("Steps are normalised (0 → 1) and timed from the reference change; the response is the "
              "odometry as the trial received it. The local baseline is the same trial run on the car's "
              "host; IAE vs local integrates |y − y_local| over the step. Command age = the command's "
              "publish time minus the stamp of the odometry it was computed from.")
    bad = [r for r in runs if r not in good]
    if bad:
        section.p("Teleop runs not in the table: " + _not_shown(bad))
    return section
