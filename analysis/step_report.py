"""The report's parts for loops with repeated steps (``loop.controller.square_wave``): the
decision table ranked by each step's IAE(y − baseline) with bootstrap intervals, the summary
headline, the per-step section and the delay timeline (:func:`plots.delay_timeline`).
The numbers come from :mod:`repeated_steps`; single-step runs never reach this module."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import degradation, plots, repeated_steps, step_plots
from .rendering import Section
from .loop_sections import slug
from .results import RunAnalysis
from .rlc_result import rlc_loop
from .tables import median_of, percent_text, sig

RULES = ("Each step of every repetition is one sample; the interval is a 95 % percentile bootstrap of the "
         "median (2000 resamples, seeded). A difference is **clear** only when two transports' intervals do "
         "not overlap; otherwise it is **not a clear difference**. 'clearly better than' lists the transports "
         "whose interval lies wholly above this one's.")


def ranked_by_setting(runs: list[RunAnalysis]) -> dict[str, list[repeated_steps.RankedSteps]]:
    """Per sweep setting, the transports ranked by their steps' median IAE."""
    groups = repeated_steps.transport_steps(runs, degradation.setting_of)
    settings = list(dict.fromkeys(g.setting for g in groups))
    return {s: repeated_steps.rank_steps([g for g in groups if g.setting == s]) for s in settings}


def summary(runs: list[RunAnalysis]) -> list[str]:
    """The summary's headline: one sentence per setting."""
    out = []
    for setting, ranked in ranked_by_setting(runs).items():
        where = "" if setting == degradation.NO_SWEEP else f"With {setting}: "
        out.append(where + repeated_steps.headline(ranked))
    return out


#: the decision table's columns: the steps' verdict with the loop's delay and losses beside it
HEADER = repeated_steps.HEADER[:4] + ["RTT p50 / p99 [ms]", "MDR y / u [%]"] + repeated_steps.HEADER[4:]


def network_cells(runs: list[RunAnalysis]) -> list[str]:
    """The loop's round trip (p50 / p99) and delivery (y / u) of a transport's runs: medians over them."""
    loops = [loop for loop in map(rlc_loop, runs) if loop is not None and loop.ok]
    return [f"{sig(median_of(l.rtt['p50_ms'] for l in loops))} / {sig(median_of(l.rtt['p99_ms'] for l in loops))}",
            f"{percent_text(median_of(l.sensor.MDR for l in loops))} / "
            f"{percent_text(median_of(l.actuation.MDR for l in loops))}"]


def decision(runs: list[RunAnalysis], swept: bool) -> Section:
    """The decision table of repeated steps (replaces the single-step IAE table)."""
    section = Section("Decision table")
    section.p("Which transport keeps the loop closest to the local one, step by step: each step of the square "
              "wave compared with the local baseline's step of the same direction (IAE(y − baseline) per step), "
              "beside the loop's round trip (RTT, sample → its u at the plant, medians over the runs) and its "
              "delivery (MDR of y and u: a transport that lost messages shows it here, whatever its rank), the "
              "steps' overshoot and 2 % settling time (a step that did not settle before the next one counts as "
              "longer than any that did: \"not settled\" where it decides the median or an interval's end); medians over all steps with their intervals. " + RULES)
    for setting, ranked in ranked_by_setting(runs).items():
        if swept:
            section.h(3, setting)
        rows = repeated_steps.table_rows(ranked)
        for row, r in zip(rows, ranked):
            mine = [a for a in runs if a.transport == r.group.transport and degradation.setting_of(a) == setting]
            row[4:4] = network_cells(mine)
        section.table(HEADER, rows)
    return section


def verdict_json(runs: list[RunAnalysis]) -> list[dict[str, Any]]:
    """Every setting's ranking as JSON rows (the campaign's repeated_steps.json)."""
    return [row for ranked in ranked_by_setting(runs).values() for row in repeated_steps.to_json(ranked)]


def section(runs: list[RunAnalysis], fig_dir: Path) -> Section:
    """Repeated steps: the steps per direction and the delay timeline of one run per transport."""
    out = Section("Repeated steps")
    rows = []
    for ranked in ranked_by_setting(runs).values():
        for r in ranked:
            for direction in ("up", "down"):
                steps = [s for s in r.group.steps if s["direction"] == direction]
                g = repeated_steps.TransportSteps(r.group.transport, r.group.setting, steps)
                rows.append([r.group.transport, direction, len(steps)] +
                            [repeated_steps.median_text(g, m) if g.values(m) else "–"
                             for m in ("iae_mVs", "delta_overshoot_pp", "settling_s")] + [g.settled()])
    for setting, ranked in ranked_by_setting(runs).items():
        name = "step_intervals.png" if setting == degradation.NO_SWEEP else f"step_intervals__{slug(setting)}.png"
        where = "" if setting == degradation.NO_SWEEP else f" ({setting})"
        path = step_plots.step_intervals(ranked, fig_dir / name, title="Each step against the local loop" + where)
        out.fig(path, "Every step's IAE(y − baseline) per transport (dots), the median (bar) and its 95 % bootstrap "
                      "interval (thick line), best at the top; the shaded band is the best transport's interval: "
                      "a transport whose interval lies wholly right of it is clearly worse" + where + ".")
    out.p("Per direction of the step: median [95 % bootstrap interval] of IAE(y − baseline) per step, of the "
          "overshoot against the baseline's step (Δ, pp), and of the 2 % settling time, where a step that did not "
          "settle before the next one counts as longer than any that did (\"not settled\": half of them or more "
          "did not); how many steps settled.")
    out.table(["transport", "step", "steps", degradation.IAE_STEP, "Δovershoot [pp]", "settling [s]", "settled"], rows)
    traces = []
    for a in runs:
        loop = rlc_loop(a)
        if loop is not None and loop.delay_trace and a.transport not in {t for t, _ in traces}:
            trace = dict(loop.delay_trace, steps_s=[s["t_s"] for s in loop.steps])
            traces.append((a.transport, trace))
    if traces:
        path = plots.delay_timeline(traces, fig_dir / "loop_delay_timeline.png")
        out.fig(path, "The loop's round trip per sample against time (the first 4 s), the first run of each "
                      "transport; ticks at "
                      "the bottom: the perturbing flow's messages leaving their sender; dotted: the reference's "
                      "steps. Where a tick is followed by a column of long round trips, the loop waited behind "
                      "that message.")
    return out


def compare_section(a_runs: list[RunAnalysis], b_runs: list[RunAnalysis], labels: tuple[str, str]) -> Section | None:
    """``netloop compare``: per transport (and setting) found in both campaigns with repeated
    steps, A's and B's median IAE per step with their intervals, and whether B − A is clear."""
    ga = {(g.setting, g.transport): g for g in repeated_steps.transport_steps(a_runs, degradation.setting_of)}
    gb = {(g.setting, g.transport): g for g in repeated_steps.transport_steps(b_runs, degradation.setting_of)}
    both = [k for k in ga if k in gb]
    if not both:
        return None
    rows = []
    for k in both:
        a, b = ga[k], gb[k]
        ca, cb = a.interval(), b.interval()
        clear = repeated_steps.clear_difference(ca, cb)
        rows.append([k[1] + ("" if k[0] == degradation.NO_SWEEP else f", {k[0]}"),
                     f"{a.median():.3g} [{repeated_steps._ci(ca)}] ({len(a.steps)})",
                     f"{b.median():.3g} [{repeated_steps._ci(cb)}] ({len(b.steps)})", f"{b.median() - a.median():+.3g}",
                     ("B clearly " + ("worse" if b.median() > a.median() else "better")) if clear
                     else repeated_steps.SAME])
    return (Section("Repeated steps, A vs B")
            .p(f"IAE(y − baseline) per step [mV·s]: median [95 % bootstrap interval] (steps), A = `{labels[0]}`, "
               f"B = `{labels[1]}`; clear only when the intervals do not overlap.")
            .table(["transport", "A", "B", "Δ = B − A", "verdict"], rows))
