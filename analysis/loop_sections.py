"""The RLC loop's part of a report: its summary sentences and its sections (step response
against the local baseline, degradation against delay and jitter, the prediction from
measured delays (one sentence when every run is explained), the loop's messages per
direction). The decision table that opens the report is :mod:`decision`'s.

Input: the RunAnalysis of the complete RLC runs whose loop could be analysed (``good``) and
the campaign's degradation points and condition groups (:class:`LoopStudy`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import baseline, degradation, metrics, plots, prediction, repeated_steps, step_plots
from .rendering import Section
from .results import ConditionGroup, RunAnalysis, RunPoint
from .rlc_result import rlc_loop, rlc_prediction, rlc_result, robot_loops
from .tables import fmt, median_of, percent_text, sig


@dataclass
class LoopStudy:
    """The campaign's loop runs as degradation points, grouped per condition."""

    points: list[RunPoint]
    groups: list[ConditionGroup]
    settings: list[str]        # the sweep settings in sweep order ([NO_SWEEP] without a sweep)

    @property
    def swept(self) -> bool:
        return self.settings != [degradation.NO_SWEEP]

    def order(self, runs: list[RunAnalysis]) -> list[RunAnalysis]:
        """Runs in sweep order, then in the transports' order, then by run id."""
        transports = list(dict.fromkeys(g.transport for g in self.groups))

        def rank(items: list[str], item: str) -> int:
            return items.index(item) if item in items else len(items)
        return sorted(runs, key=lambda a: (rank(self.settings, degradation.setting_of(a)),
                                           rank(transports, a.transport), a.run_id))


def loop_study(runs: list[RunAnalysis], transport_order: list[str] | None = None) -> LoopStudy:
    points = [degradation.run_point(r.loop, r.prediction) for r in map(rlc_result, runs) if r is not None]
    groups = degradation.group(points, transport_order)
    return LoopStudy(points, groups, degradation.settings_in_order(groups))


def slug(text: str) -> str:
    """A file-name part from a setting ("delay_ms=10" stays, other characters become _)."""
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text).strip("_") or "all"


def pm(s: dict, digits: int = 2) -> str:
    """'mean ± std (min–max)' of a spread, or the value alone for one run."""
    if not s["n"]:
        return fmt(None)
    if s["n"] == 1:
        return fmt(s["mean"], digits)
    return f"{fmt(s['mean'], digits)} ± {fmt(s['std'], digits)} ({fmt(s['min'], digits)}–{fmt(s['max'], digits)})"


# -- summary ---------------------------------------------------------------------------------

def summary(good: list[RunAnalysis], study: LoopStudy, ranking: bool = True, then: list[str] = ()) -> list[str]:
    """The summary sentences about the loop: which transport kept it closest to local (not
    with ``ranking`` false: repeated steps rank instead), ``then`` (the margins' sentences), and
    whether the measured delays explain the runs."""
    if not good:
        return []
    out = (degradation.summary_sentences(study.groups, study.points) if ranking else []) + list(then)
    preds = predictions(good)
    if not preds:
        return out
    findings = [s for s in (prediction.finding(p) for p in preds) if s]
    threshold = prediction.RMS_THRESHOLD_MV
    if findings:
        out.append(f"Prediction from measured delays: {len(findings)} of {len(preds)} runs are **not** explained by "
                   f"their delay and loss (RMS error above {threshold:g} mV); see the findings under Prediction.")
    else:
        out.append("Prediction from measured delays: " + exact_sentence(preds))
    return out


def predictions(good: list[RunAnalysis]):
    return [p for p in map(rlc_prediction, good) if p is not None and p.ok]


# -- sections --------------------------------------------------------------------------------

def sections(good: list[RunAnalysis], study: LoopStudy, fig_dir: Path) -> list[Section]:
    """Every section of the loop (none without a usable loop run)."""
    if not good:
        return []
    good = study.order(good)
    out = [step_section(good, study, fig_dir), degradation_section(good, study, fig_dir),
           prediction_section(good, study, fig_dir), directions_section(good, study, fig_dir)]
    if any(robot_loops(a) for a in good):
        out.insert(1, robots_section(good, study.swept))
    return out


def robots_section(good: list[RunAnalysis], swept: bool) -> Section:
    """Runs with ``loop.per_robot``: every robot's loop, per setting and transport (medians
    over the repetitions), so that what sharing one channel does to each loop can be compared."""
    groups: dict[tuple[str, str, str], list] = {}
    for a in good:
        for robot, loop in robot_loops(a).items():
            if loop.ok:
                groups.setdefault((degradation.setting_of(a), a.transport, robot), []).append(loop)
    section = Section("Loops per robot")
    robots = list(dict.fromkeys(robot for a in good for robot in robot_loops(a)))
    section.p(f"Every robot ({', '.join(robots)}) ran its own RLC loop (plant on the robot, controller on "
              "the operator, topics /<robot>/y and /<robot>/u) over the same channel, at the same time. The "
              f"report's other loop tables and figures show the first robot's loop ({robots[0]}); here is every "
              "one (median over the repetitions).")
    rows = []
    for (setting, transport, robot), loops in groups.items():
        rows.append(([setting] if swept else []) + [
            transport, robot, len(loops), median_of(l.step["Overshoot"] for l in loops),
            median_of(1e3 * l.deviation["IAE"] for l in loops), median_of(l.rtt["p50_ms"] for l in loops),
            median_of(l.rtt["p95_ms"] for l in loops), median_of(100 * l.sensor.MDR for l in loops),
            median_of(100 * l.actuation.MDR for l in loops)])
    return section.table((["setting"] if swept else []) + [
        "transport", "robot", "runs", "overshoot [%]", degradation.IAE_RUN, "RTT p50 [ms]", "RTT p95 [ms]",
        "MDR y [%]", "MDR u [%]"], rows, digits=2)


def step_section(good: list[RunAnalysis], study: LoopStudy, fig_dir: Path) -> Section:
    section = Section("Step response against the local baseline")
    for setting in study.settings:
        of_setting = [a for a in good if degradation.setting_of(a) == setting]
        runs = [rlc_loop(a) for a in of_setting]
        if not runs:
            continue
        where = f", {setting}" if study.swept else ""
        fig = fig_dir / (f"step_response__{slug(setting)}.png" if study.swept else "step_response.png")
        if study.swept:
            section.h(3, setting)
        if runs[0].steps:   # a square wave: every step of every run, per transport
            step_plots.step_panels(step_groups(runs), runs[0].period_s, fig,
                                   title="RLC loop, each step of the square wave" + where)
            section.fig(fig, "One panel per transport, best first (median IAE(y − baseline) per step): its steps, "
                             "each as a step up of size 1 from the level before it, the median (line) and the 10–90 % "
                             "band over all steps of all its runs (min–max with fewer than 5), over the local "
                             f"baseline's median step (black dashed){where}; cut at the shortest step.")
            section.p(f"Local baseline (python-control, ZOH at T = {runs[0].period_s * 1e3:.0f} ms, zero delay) "
                      "following the same square wave; each step's metrics are under Repeated steps.")
            continue
        aggregate = len({a.transport for a in of_setting}) < len(runs)
        plots.step_overlay(runs, fig, title="RLC loop step response" + where, aggregate=aggregate)
        end = plots.transient_end([r for r in runs if r.ok])
        what = ("per transport the median of its runs (line) and their min–max (band)" if aggregate else
                "y(t) of every run")
        section.fig(fig, f"{what[0].upper() + what[1:]} over the local baseline (black dashed){where}, the first "
                         f"{sig(end, 2)} s; lower panel: y − baseline [mV]"
                         + (_faults_caption(runs[0].fault_kinds or ["outage"]) if runs[0].outage_windows_s else "")
                         + ".")
        b = runs[0]
        section.p(f"Local baseline (python-control, ZOH at T = {b.period_s * 1e3:.0f} ms, zero delay): "
                  f"overshoot {sig(b.baseline_step['Overshoot'])} %, settling time "
                  f"{sig(b.baseline_step['SettlingTime'])} s, rise time {sig(b.baseline_step['RiseTime'])} s, "
                  f"final value {sig(b.baseline_step['SteadyStateValue'])} V, "
                  f"IAE {sig(1e3 * b.baseline_tracking['IAE'])} mV·s.")
    return section


def step_groups(runs: list) -> list[tuple[str, list, list, str]]:
    """Per transport (best first by its steps' median IAE(y − baseline)) every step of its runs
    and of their baselines, aligned (:func:`step_plots.aligned_steps`), for :func:`step_plots.step_panels`."""
    by: dict[str, list] = {}
    for r in runs:
        by.setdefault(r.transport, []).append(r)
    out = []
    for transport, rs in by.items():
        ys, bs = [], []
        for r in rs:
            y, b = step_plots.aligned_steps(r.t, r.y, r.baseline_y, r.steps, r.reference or 1.0)
            ys += y
            bs += b
        iae = [s["iae_mVs"] for r in rs for s in r.steps]
        out.append((float(np.median(iae)) if iae else np.inf, transport, ys, bs,
                    f"({len(ys)} steps, {len(rs)} run{'s' if len(rs) != 1 else ''})"))
    return [(t, ys, bs, note) for _, t, ys, bs, note in sorted(out, key=lambda g: g[0])]


def same_loop(good: list[RunAnalysis]) -> dict | None:
    """The loop configuration shared by every good run (plant and controller), else None."""
    loops = [a.experiment.get("loop") for a in good]
    if not loops or any(lp is None for lp in loops):
        return None
    key = [json.dumps([lp["plant"], lp["controller"]], sort_keys=True) for lp in loops]
    return loops[0] if len(set(key)) == 1 else None


def delay_model(loop: dict, samples: int, x_max_ms: float, points: int = 25) -> dict:
    """Degradation of the loop under a constant loop delay d (exact replay, no jitter, no
    loss): the reference line of the degradation-vs-delay figure."""
    base = baseline.local_baseline(loop, samples)
    base_os = metrics.step_metrics(base.t, base.y)["Overshoot"]
    T = loop["plant"]["period"]
    xs = np.linspace(0.0, max(x_max_ms, 1.0), points)
    iae, dov, stable = [], [], []
    r = loop["controller"]["reference"]
    for d in xs:
        y = baseline.simulate_loop(loop, np.full(samples, d / 1e3)).y
        step = metrics.step_metrics(base.t, y)
        iae.append(1e3 * metrics.integral_errors(y - base.y, T)["IAE"])
        dov.append(step["Overshoot"] - base_os)
        stable.append(degradation.verdict(base.t, y, step, r) == "settled")
    return {"x": xs.tolist(), "iae_dev_mVs": iae, "delta_overshoot_pp": dov, "settled": stable,
            "label": "model: constant loop delay (exact replay)"}


def degradation_section(good: list[RunAnalysis], study: LoopStudy, fig_dir: Path) -> Section:
    section = Section("Degradation against delay and jitter")
    groups = study.groups
    loop = same_loop(good)
    model = None
    if loop is not None:
        xmax = max((g.stats["rtt_mean_ms"]["max"] for g in groups if g.stats["rtt_mean_ms"]["n"]), default=1.0)
        model = delay_model(loop, min(rlc_loop(a).samples for a in good), 1.25 * xmax + 0.2)
    plots.degradation_scatter(groups, "rtt_mean_ms", "loop delay: RTT mean (sample → its actuation) [ms]",
                              fig_dir / "degradation_vs_delay.png", "Degradation against the loop delay",
                              model=model)
    plots.degradation_scatter(groups, "rtt_std_ms", "loop jitter: RTT std [ms]",
                              fig_dir / "degradation_vs_jitter.png", "Degradation against the loop jitter")
    section.fig(fig_dir / "degradation_vs_delay.png",
                "One point per condition at the mean over its repetitions, bars min–max over the repetitions, "
                "small dots the single runs; colour = transport, marker = setting. The dashed line is the loop "
                "under a constant delay (exact model): points on it are explained by their mean delay alone.")
    section.fig(fig_dir / "degradation_vs_jitter.png",
                "The same degradation against the jitter of the loop delay (standard deviation of the RTT).")
    square = any(p.steps for p in study.points)   # a square wave: the steps settle, not the run
    header = (["setting"] if study.swept else []) + [
        "transport", "runs", degradation.IAE_RUN, "Δovershoot per step: median [pp]" if square else "Δovershoot [pp]",
        "steps settled" if square else "settling [s]", "RTT mean [ms]",
        "RTT std [ms]", "y one-way mean/std/p95/p99 [ms]", "u one-way mean/std/p95/p99 [ms]", "MDR y / u [%]",
        "settled / not / unstable"]
    rows = []
    for g in groups:
        s = g.stats

        def four(d):
            return " / ".join(fmt(s[f"{d}_{k}_ms"]["mean"], 2) for k in ("mean", "std", "p95", "p99"))
        rows.append(([g.setting] if study.swept else []) + [
            g.transport, g.n, pm(s["iae_dev_mVs"]), pm(s["delta_overshoot_pp"]),
            (f"{sum(r.steps_settled or 0 for r in g.runs)} of {sum(r.steps or 0 for r in g.runs)}" if square
             else pm(s["settling_s"], 3)),
            pm(s["rtt_mean_ms"]), pm(s["rtt_std_ms"]), four("y"), four("u"),
            f"{percent_text(s['mdr_y']['mean'])} / {percent_text(s['mdr_u']['mean'])}",
            " / ".join(str(g.verdicts[v]) for v in ("settled", "did not settle", "unstable"))])
    section.p("Per condition: mean ± std (min–max) over the repetitions (a single value for one run); "
              "one-way columns are means over the repetitions. All numbers per run: `degradation.csv`; "
              "n, mean, std, min, max, median per condition: `conditions.csv`.")
    return section.table(header, rows, digits=2)


DIRECTION_COLUMNS = ["run", "direction", "sent", "MDR [%]", "delay mean [ms]", "std [ms]", "p50 [ms]", "p95 [ms]",
                     "p99 [ms]", "period at receiver mean [ms]", "period std [ms]"]
DIRECTIONS = (("sensor", "y plant→controller", "y: plant → controller"),
              ("actuation", "u controller→plant", "u: controller → plant"))


def prediction_section(good: list[RunAnalysis], study: LoopStudy, fig_dir: Path) -> Section:
    """The prediction from measured delays: one paragraph when every run is explained by its
    delays (the per-run numbers are in prediction.csv), else the per-run table, the findings
    and the figure."""
    swept = study.swept
    section = Section("Prediction from measured delays")
    preds = predictions(good)
    threshold = prediction.RMS_THRESHOLD_MV
    if preds and len(preds) == len(good) and all(p.explained for p in preds):
        text = exact_sentence(preds)
        return section.p(text[0].upper() + text[1:] + " Per run: `prediction.csv`.")
    section.p("Each run's own actuation trace (sample k's stamp → arrival at the plant of the u answering k, from "
              "`records/plant.csv`; a lost or stale u updates nothing) replayed through the exact loop model "
              "(`baseline.simulate_loop`) at the real sample times gives ŷ, the response delay and loss alone would "
              "produce. Error = ŷ − y; a run is explained when its RMS error is at most "
              f"{threshold:g} mV (1 % of the 0.5 V steady state). Two coarser replays show what "
              "matters: the measured delays at nominal sample times k·T (no sampling jitter), and the median "
              "delay alone (no jitter at all).")
    header = (["setting"] if swept else []) + [
        "run", "transport", "lost u", "stale u", "RMS [mV]", "max [mV]", "Δovershoot [pp]",
        "RMS, nominal times [mV]", "RMS, median delay only [mV]", "Δovershoot, median delay only [pp]", "verdict"]
    rows = []
    for a in good:
        p, first = rlc_prediction(a), ([degradation.setting_of(a)] if swept else []) + [a.run_id, a.transport]
        if p is None or not p.ok:
            rows.append(first + [None] * 8 + ["no prediction: " + "; ".join(p.problems if p else [])])
            continue
        m = p.modes
        rows.append(first + [p.lost, p.stale, sig(p.rms_mV), sig(p.max_mV), _pp(p.delta_overshoot_pp),
                             sig(m["delays"].rms_mV), sig(m["mean_delay"].rms_mV),
                             _pp(m["mean_delay"].delta_overshoot_pp), "explained" if p.explained else "NOT explained"])
    section.table(header, rows)
    findings = [s for s in (prediction.finding(p) for p in preds) if s]
    if findings:
        section.h(3, "Findings").ul(findings, "finding")
    for setting in study.settings:
        preds = predictions([a for a in good if degradation.setting_of(a) == setting])
        if not preds:
            continue
        where = f", {setting}" if swept else ""
        fig = fig_dir / (f"prediction__{slug(setting)}.png" if swept else "prediction.png")
        end = plots.transient_end([rlc_loop(a) for a in good if degradation.setting_of(a) == setting and rlc_loop(a).ok])
        plots.prediction_overlay(preds, fig, title="Predicted from measured delays vs measured" + where, end=end)
        section.fig(fig, f"Measured y (colour) and ŷ predicted from the run's measured delays (black dashed){where}; "
                         "lower panel: ŷ − y in mV for the prediction (solid) and for the median delay alone (dashed).")
    return section


def _pp(value) -> str:
    """A difference of overshoots [pp]; a replay that diverged (1000 pp and more) says so."""
    if value is not None and np.isfinite(value) and abs(value) >= repeated_steps.DIVERGING_PCT:
        return "diverging"
    return sig(value)


def exact_sentence(preds) -> str:
    """The prediction of runs that are all explained, in one or two sentences: the largest
    RMS error, and what the median delay alone leaves."""
    threshold = prediction.RMS_THRESHOLD_MV
    worst = max(p.rms_mV for p in preds)
    exact = worst < threshold * 1e-3
    mean_only = max(p.modes["mean_delay"].rms_mV for p in preds)
    jittery = sum(p.modes["mean_delay"].rms_mV > threshold for p in preds)
    text = ("replaying each run's measured delays and losses through the exact loop model reproduces every run"
            + (" exactly" if exact else "") + f" ({len(preds)} runs; largest RMS error {worst:.1g} mV"
            + (", rounding" if 0 < worst and exact else "") + f"; threshold {threshold:g} mV): delay and loss explain "
            "the degradation. ")
    if jittery:
        return text + (f"The median delay alone, without its jitter, leaves up to {sig(mean_only, 2)} mV RMS, above the "
                       f"threshold in {jittery} of {len(preds)} runs: there the jitter of the delay shaped the response.")
    return text + f"The median delay alone does as well (at most {sig(mean_only, 2)} mV RMS): jitter did not matter."


def directions_section(good: list[RunAnalysis], study: LoopStudy, fig_dir: Path) -> Section:
    """The loop's messages per direction: delivery, one-way delay and period per run, and
    the delays' empirical CDFs."""
    section = Section("Loop messages per direction")
    section.table(DIRECTION_COLUMNS, [
        [a.run_id, label, d.sent, 100 * d.MDR, d.delay["mean_ms"], d.delay["std_ms"], d.delay["p50_ms"],
         d.delay["p95_ms"], d.delay["p99_ms"], d.period["mean_ms"], d.period["std_ms"]]
        for a in good for key, label, _ in DIRECTIONS for d in [getattr(rlc_loop(a), key)]], digits=2)
    for key, _, title in DIRECTIONS:
        samples: dict[str, dict[str, list[float]]] = {}
        for a in good:
            samples.setdefault(degradation.setting_of(a), {}).setdefault(a.transport, []).extend(
                getattr(rlc_loop(a), key).delays_ms)
        fig = fig_dir / f"delay_{key}.png"
        plots.delay_ecdfs_by_setting(samples, fig, title=f"One-way delay, {title}")
        section.fig(fig, f"The one-way delay of every loop message, {title}, as an empirical CDF per transport "
                         f"(log axis: the share of messages at or below each delay){', one panel per setting' if study.swept else ''}.")
    return section


def _faults_caption(kinds: list[str]) -> str:
    """What the shaded windows of the step-response figure are."""
    parts = (["red: link outages (the plant holds its last u)"] if "outage" in kinds else []) + \
            (["orange: loss bursts"] if "loss burst" in kinds else [])
    return "; shaded (of the first run): " + ", ".join(parts)
