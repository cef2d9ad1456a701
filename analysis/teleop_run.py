"""Analysis of teleoperation runs: the scripted trial's speed and heading steps, measured on
the odometry the trial received, against the local baseline (the same trial run on the
car's host), and the delays the loop's messages saw.

The trial's record (controllers/teleop_trial.cpp) holds every odometry received (rows
``rx speed`` / ``rx heading``: value, the car's stamp, arrival), every command sent (``tx
cmd_speed`` / ``tx cmd_turn``, answering the odometry used) and the reference changes
(``ref ref_speed`` / ``ref ref_heading``, the first pair at the trial's start).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..rundir import RunDir
from . import clocks, metrics, plots
from .loop_run import read_run_metadata, transport_of
from .records import Events, RecordError, read_events
from .rendering import Section
from .results import StepResponse, TeleopRunResult


def _step(ev, ref_topic: str, topic: str, t_end_ns: int | None) -> StepResponse | None:
    """The response to the second reference of ``ref_topic`` (the step), normalised to it."""
    refs = ev.select("ref", ref_topic)
    if len(refs) < 2:
        return None
    t_step, before, after = refs.stamp_ns[1], refs.value[0], refs.value[1]
    rx = ev.select("rx", topic)
    order = np.argsort(rx.stamp_ns)
    stamps, values = rx.stamp_ns[order], rx.value[order]
    prior = values[stamps < t_step]
    start = prior[-1] if len(prior) else before
    mask = (stamps >= t_step) & ((stamps < t_end_ns) if t_end_ns else True)
    t = (stamps[mask] - t_step) / 1e9
    size = after - before
    if len(t) < 5 or size == 0:
        return None
    y = (values[mask] - start) / size          # 0 -> 1 for a perfect step
    return StepResponse(t=t.tolist(), y=y.tolist(), step=float(size), metrics=metrics.step_metrics(t, y, yfinal=1.0))


def _odometry_on_trial_clock(ev: Events, meta: dict[str, Any], car: str, trial: str) -> Events:
    """On real machines the odometry's stamps are the car's clock: moved onto the trial's
    (analysis.clocks), so the steps are timed and the delays read on one clock."""
    between = clocks.offset_between(meta, car, trial, ev.stamp_ns / 1e9)
    if between is None or car == trial:
        return ev
    shift_ns = np.round(between[0] * 1e9).astype(np.int64)
    stamp = np.where(ev.kind == "rx", ev.stamp_ns + shift_ns, ev.stamp_ns)          # odometry received
    answer = np.where(ev.answer_seq >= 0, ev.answer_stamp_ns + shift_ns, ev.answer_stamp_ns)  # its stamp in a command
    return dataclasses.replace(ev, stamp_ns=stamp, answer_stamp_ns=answer)


def analyse_teleop_run(run_dir: Path, meta: dict[str, Any] | None = None) -> TeleopRunResult:
    """The trial's steps and delays of one teleop run. ``meta`` given: the caller read (and
    checked) the metadata; else it is read here and its problems are the run's."""
    run_dir = Path(run_dir)
    problems: list[str] = []
    if meta is None:
        meta, problems = read_run_metadata(run_dir)
    placement = ((meta.get("experiment") or {}).get("loop") or {}).get("placement") or {}
    out = TeleopRunResult(run_dir=str(run_dir), run_id=meta.get("run_id", run_dir.name),
                          status=meta.get("status", "unknown"), transport=transport_of(meta),
                          local=placement.get("trial") == placement.get("car"), problems=problems)
    try:
        ev = read_events(RunDir(run_dir).record("trial"))
    except RecordError as err:
        out.problems.append(str(err))
        return out
    ev = _odometry_on_trial_clock(ev, meta, placement.get("car", "robot"), placement.get("trial", "operator"))
    heading_refs = ev.select("ref", "ref_heading")
    t_heading = int(heading_refs.stamp_ns[1]) if len(heading_refs) > 1 else None
    out.speed = _step(ev, "ref_speed", "speed", t_heading)
    out.heading = _step(ev, "ref_heading", "heading", None)
    odom = ev.select("rx", "speed")
    cmds = ev.select("tx", "cmd_speed")
    age = (cmds.stamp_ns - cmds.answer_stamp_ns)[cmds.answer_seq >= 0] / 1e9
    out.odom_delay = metrics.delay_stats((odom.recv_ns - odom.stamp_ns) / 1e9)
    out.odom_period = metrics.period_stats(odom.recv_ns / 1e9)
    out.command_age = metrics.delay_stats(age)
    out.ok = out.speed is not None and out.heading is not None
    if not out.ok:
        out.problems.append("trial record has no complete speed and heading step")
    return out


def step_deviation(a: StepResponse, b: StepResponse) -> float:
    """IAE between two normalised step responses on a's time grid (b interpolated), in s."""
    t, y = np.asarray(a.t), np.asarray(a.y)
    yb = np.interp(t, b.t, b.y)
    return float(np.sum(np.abs(y - yb)[1:] * np.diff(t)))


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
                  "heading rise [s]", "heading overshoot [%]", "heading settling [s]", "IAE vs local (speed) [s]",
                  "IAE vs local (heading) [s]", "odom delay mean [ms]", "odom delay p99 [ms]",
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
