"""The ``rlc`` kind's analysis side: its runs' step response against the local baseline, the
degradation study and the prediction (:mod:`netloop.analysis.loop_run`,
:mod:`~netloop.analysis.loop_sections`, :mod:`~netloop.analysis.prediction`), and what the
report shows of them: its summary, decision table and sections, its rows of "Every loop run"
and its files

    runs.csv          every loop run (the table "Every loop run"; MDR in %, IAE in mV·s)
    degradation.csv   one point per loop run: degradation, delay, jitter, MDR [%], prediction error
    conditions.csv    per condition (setting x transport): n, mean, std, min, max, median of each
    prediction.csv    per loop run: the prediction error of the three replays
    repeated_steps.json   a square wave's verdict (each run's steps are in analysis.json)

Its typed result of a run, in ``RunAnalysis.result``, is a :class:`~netloop.analysis.rlc_result.RlcRunResult`
(the loop, every robot's loop, the prediction), read with :func:`~netloop.analysis.rlc_result.rlc_result`
and its siblings (``rlc_loop``, ``rlc_prediction``, ``robot_loops``). Imports the analysis only, never the run side (:mod:`.run`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ...analysis import degradation, loop_sections, prediction, repeated_steps, rlc_margins, step_report, step_table
from ...analysis.decision import RULES, Candidate, describe, pair, rank, repetitions_text, table_rows
from ...analysis.kinds import LOOP_DELAYS, LoopAnalysis, ReportContext
from ...analysis.loop_run import analyse_loop_run, load_loop_run
from ...analysis.loop_timing import measured_timing
from ...analysis.prediction import analyse_prediction
from ...analysis.rendering import Section
from ...analysis.results import DirectionStats, RunAnalysis, RunPoint
from ...analysis.rlc_result import RlcRunResult, rlc_loop, rlc_prediction, rlc_result
from ...analysis.tables import percent_text, sig, write_csv
from ...run_files import RunRecord
from ...jsonio import write_json_atomic
from .terms import TERMS

#: transports whose nodes, though under one master per host, connect to each other directly
#: (the masters are synchronised): their connections cross the link as negotiated, no relay
DIRECT_ACROSS_MASTERS = {"multimaster"}


def negotiated_text(transport: str, negotiated: dict[str, str] | None) -> str | None:
    """What each topic's subscriber connection really was, topics with the same connection
    together ("y, u UDPROS; flows/image TCPROS+NODELAY"). Across masters the runner sees only
    the subscriber's local connection (marked "via relay"): for a relay transport that is the
    hop from the relay to the node, not what crosses the link, and is said so."""
    if not negotiated:
        return None
    by: dict[str, list[str]] = {}
    for topic, value in negotiated.items():
        if value.endswith(" via relay"):
            hop = value[:-len(" via relay")]
            value = (f"{hop} to the remote publisher (masters synchronised)" if transport in DIRECT_ACROSS_MASTERS
                     else f"{transport} relay across the link ({hop} between relay and node)")
        by.setdefault(value, []).append(topic.strip("/"))
    return "; ".join(f"{', '.join(topics)} {value}" for value, topics in by.items())


RUN_FIRST = [
    ("run", lambda r: r.run_id),
    ("transport", lambda r: r.transport),
    ("status", lambda r: r.status),
    ("negotiated", lambda r: negotiated_text(r.transport, r.negotiated_transport)),
]
RUN_NETWORK = [
    ("y delay mean [ms]", lambda r: r.sensor.delay["mean_ms"]),
    ("y delay p99 [ms]", lambda r: r.sensor.delay["p99_ms"]),
    ("u delay mean [ms]", lambda r: r.actuation.delay["mean_ms"]),
    ("u delay p99 [ms]", lambda r: r.actuation.delay["p99_ms"]),
    ("RTT median [ms]", lambda r: r.rtt["p50_ms"]),
    ("MDR y [%]", lambda r: 100 * r.sensor.MDR),
    ("MDR u [%]", lambda r: 100 * r.actuation.MDR),
    ("stale u", lambda r: r.stale_actuations),
]
#: "Every loop run" (runs.csv) of single-step runs: the run is the step
RUN_COLUMNS = RUN_FIRST + [
    ("overshoot [%]", lambda r: r.step["Overshoot"]),
    ("settling [s]", lambda r: r.step["SettlingTime"]),
    ("rise [s]", lambda r: r.step["RiseTime"]),
    ("y final [V]", lambda r: r.step["SteadyStateValue"]),
    ("IAE per run [mV·s]", lambda r: 1e3 * r.tracking["IAE"]),
    ("ΔIAE per run [mV·s]", lambda r: 1e3 * r.delta_IAE),
    (degradation.IAE_RUN, lambda r: 1e3 * r.deviation["IAE"]),
] + RUN_NETWORK
#: ... of square-wave runs: per-step medians and the per-run numbers a square wave has
SQUARE_COLUMNS = RUN_FIRST + step_table.SQUARE_RUN_COLUMNS + RUN_NETWORK

#: the columns of degradation.csv before the point's numbers
POINT_META = ["run_id", "transport", "setting", "condition", "repetition", "status", "verdict", "explained"]


LOOP_HEADER = ["rank", "transport", degradation.IAE_RUN, "Δovershoot [pp]", "RTT p50 / p99 [ms]",
               "RTT std [ms]", "MDR y / u [%]", "verdict"]


def loop_candidates(groups: list, setting: str) -> list[Candidate]:
    """One candidate per transport of one setting, from the condition groups
    (:func:`degradation.group`)."""
    out = []
    for g in groups:
        if g.setting != setting:
            continue
        s = g.stats
        med = {k: s[k]["median"] if s[k]["n"] else None for k in s}
        bad = [f"{g.verdicts[v]} of {g.n} {'unstable' if v == 'unstable' else 'did not settle'}"
               for v in ("unstable", "did not settle") if g.verdicts.get(v)]
        out.append(Candidate(g.transport, [r.iae_dev_mVs for r in g.runs], cells=[
            sig(med["delta_overshoot_pp"], 2), pair(med["rtt_p50_ms"], med["rtt_p99_ms"]), sig(med["rtt_std_ms"]),
            pair(med["mdr_y"], med["mdr_u"], percent_text)], note=", ".join(bad)))
    return out


def decision_section(study, descriptions: dict[str, str]) -> Section | None:
    """The RLC loop's decision table(s): one per setting of the sweep."""
    groups = study.groups
    if not groups:
        return None
    section = Section("Decision table")
    section.p(f"Which transport keeps the loop closest to the local one, per transport ({repetitions_text([g.n for g in groups])}): "
              "the loop's degradation IAE(y − baseline) per run as median (min–max over the repetitions) and "
              "Δovershoot; the loop's delay (RTT p50 / p99) and jitter (RTT std); losses (MDR of y and u). "
              "Medians over the repetitions. " + RULES)
    for setting in study.settings:
        ranked = rank(loop_candidates(groups, setting), "mV·s")
        if not ranked:
            continue
        if study.swept:
            section.h(3, setting)
        section.table(LOOP_HEADER, table_rows(ranked))
    return describe(section, descriptions, [g.transport for g in groups])


def _value(get, loop) -> Any:
    try:
        return get(loop)
    except (KeyError, TypeError, AttributeError):   # a run that could not be analysed
        return None


def _scaled(value: Any, factor: float | None) -> Any:
    """``value`` × ``factor`` (a share written in %), missing values and factor None unchanged."""
    if factor is None or value is None or isinstance(value, bool):
        return value
    try:
        return float(value) * factor
    except (TypeError, ValueError):
        return value


class RlcAnalysis(LoopAnalysis):
    """The RLC loop: step response against the local baseline, degradation, prediction."""

    name = "rlc"
    glossary_terms = TERMS

    def analyse_run(self, run_dir: Path, meta: RunRecord) -> RunAnalysis:
        a = super().analyse_run(run_dir, meta)
        robots = meta.loop.get("robots") or [None]   # per_robot: one loop per robot
        r: RlcRunResult | None = None
        for robot in robots:
            one = load_loop_run(run_dir, meta, robot)
            result = analyse_loop_run(one)
            if r is None:      # the first robot's loop is the one the loop tables show
                run, r = one, RlcRunResult(loop=result)
            if robot is not None:
                r.robot_loops[robot] = result
                a.add_problems(result.problems, prefix=f"{robot}'s loop: ")
        a.result = r
        if not r.robot_loops:
            a.add_problems(r.loop.problems)
        if not meta.empty and not meta.experiment:
            a.add_problems(["metadata.json has no experiment configuration"])
        if r.loop.ok:
            r.prediction = analyse_prediction(run)
            a.add_problems(r.prediction.problems)
            r.timing = measured_timing(run)
        return a

    @staticmethod
    def usable(runs: list[RunAnalysis]) -> list[RunAnalysis]:
        """The complete runs whose loop could be analysed (the tables' and figures' runs)."""
        return [a for a in runs if a.ok and a.status == "complete"]

    @staticmethod
    def analysed(runs: list[RunAnalysis]) -> list[RunAnalysis]:
        """The runs with a loop result (every one in "Every loop run" and the degradation points)."""
        return [a for a in runs if rlc_result(a) is not None]

    def study(self, runs: list[RunAnalysis], ctx: ReportContext) -> loop_sections.LoopStudy:
        """The campaign's degradation points and condition groups, computed once per report."""
        if "rlc.study" not in ctx.cache:
            ctx.cache["rlc.study"] = loop_sections.loop_study(self.analysed(runs), ctx.transport_order)
        return ctx.cache["rlc.study"]

    def margins(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[rlc_margins.SettingMargins]:
        """The loop's margins and every transport against them, per setting, computed once per report."""
        if "rlc.margins" not in ctx.cache:
            good, study = self.usable(runs), self.study(runs, ctx)
            ctx.cache["rlc.margins"] = rlc_margins.margin_study(good, study.points, study.settings,
                                                                [g.transport for g in study.groups])
        return ctx.cache["rlc.margins"]

    def summary(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[str]:
        good, study = self.usable(runs), self.study(runs, ctx)
        if not good:
            return []
        margins = rlc_margins.summary(self.margins(runs, ctx), study.swept)
        if repeated_steps.has_steps(good):   # a square wave: the steps' ranking is the headline
            return step_report.summary(good) + loop_sections.summary(good, study, ranking=False, then=margins)
        return loop_sections.summary(good, study, then=margins)

    def decision(self, runs: list[RunAnalysis], ctx: ReportContext) -> Section | None:
        good, study = self.usable(runs), self.study(runs, ctx)
        if repeated_steps.has_steps(good):
            return describe(step_report.decision(good, study.swept), ctx.descriptions, [a.transport for a in good])
        return decision_section(study, ctx.descriptions) if good else None

    def sections(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[Section]:
        good, study = self.usable(runs), self.study(runs, ctx)
        out = loop_sections.sections(good, study, ctx.fig_dir)
        if repeated_steps.has_steps(good):
            out.insert(0, step_report.section(study.order(good), ctx.fig_dir))
        if good:
            out[:0] = rlc_margins.sections(self.margins(runs, ctx), study.swept, ctx.fig_dir)
        return out

    def run_table(self, runs: list[RunAnalysis]) -> tuple[list[str], list[list[Any]]] | None:
        """The RLC runs of "Every loop run" (runs.csv)."""
        loop_runs = self.analysed(runs)
        if not loop_runs:
            return None
        columns = SQUARE_COLUMNS if any(rlc_loop(a).steps for a in loop_runs) else RUN_COLUMNS
        return [name for name, _ in columns], [[_value(get, rlc_loop(a)) for _, get in columns] for a in loop_runs]

    def points(self, runs: list[RunAnalysis], ctx: ReportContext) -> dict[str, RunPoint]:
        return {p.run_id: p for p in self.study(runs, ctx).points}

    def directions(self, a: RunAnalysis) -> Iterator[tuple[str, DirectionStats]]:
        loop = rlc_loop(a)
        if loop is not None and loop.ok:
            for name, d in (("y (plant → controller)", loop.sensor), ("u (controller → plant)", loop.actuation)):
                if d is not None:
                    yield name, d

    def reading_note(self) -> str:
        return LOOP_DELAYS + "; the RTT is read on the plant's clock."

    def round_trip_ms(self, a: RunAnalysis) -> float | None:
        loop = rlc_loop(a)
        return ((loop.rtt or {}) if loop is not None else {}).get("p50_ms")

    def write_files(self, runs: list[RunAnalysis], ctx: ReportContext) -> None:
        """runs.csv, degradation.csv, conditions.csv and prediction.csv (when there are loop
        runs), repeated_steps.json (a square wave)."""
        table = self.run_table(runs)
        if table is None:
            return
        path, study = ctx.path, self.study(runs, ctx)
        write_csv(path / "runs.csv", *table)
        write_csv(path / "steps.csv", *step_table.step_csv(self.analysed(runs)))
        scale = degradation.CSV_SCALE
        write_csv(path / "degradation.csv", POINT_META + [label for _, label in degradation.POINT_FIELDS],
                  [[getattr(p, k) for k in POINT_META] + [_scaled(getattr(p, k), scale.get(k))
                                                          for k, _ in degradation.POINT_FIELDS] for p in study.points])
        stats = ("n", "mean", "std", "min", "max", "median")
        write_csv(path / "conditions.csv",
                  ["setting", "transport", "runs", "settled", "did not settle", "unstable"] +
                  [f"{label} {s}" for _, label in degradation.POINT_FIELDS for s in stats],
                  [[g.setting, g.transport, g.n, g.verdicts["settled"], g.verdicts["did not settle"],
                    g.verdicts["unstable"]]
                   + [g.stats[k][s] if s == "n" else _scaled(g.stats[k][s], scale.get(k))
                      for k, _ in degradation.POINT_FIELDS for s in stats] for g in study.groups])
        self._write_predictions(path, self.analysed(runs))
        if self.usable(runs):
            rlc_margins.write_margins_csv(path, self.margins(runs, ctx))
        stepped = [a for a in self.usable(runs) if rlc_loop(a).steps]
        if stepped:   # a square wave: the campaign's verdict (each run's steps are in analysis.json)
            write_json_atomic(path / "repeated_steps.json", step_report.verdict_json(stepped))

    @staticmethod
    def _write_predictions(path: Path, loop_runs: list[RunAnalysis]) -> None:
        """prediction.csv: per loop run the prediction error of the three replays."""
        rows = []
        for a in loop_runs:
            p = rlc_prediction(a)
            if p is None or not p.ok:
                continue
            rows.append([a.run_id, a.transport, degradation.setting_of(a), p.samples, p.lost, p.stale, p.explained] +
                        [getattr(p.modes[m], k) for m in prediction.MODES
                         for k in ("rms_mV", "max_mV", "delta_overshoot_pp")])
        write_csv(path / "prediction.csv",
                  ["run", "transport", "setting", "samples", "lost u", "stale u", "explained"] +
                  [f"{mode} {what}" for mode in prediction.MODES for what in ("RMS [mV]", "max [mV]", "Δovershoot [pp]")],
                  rows)
