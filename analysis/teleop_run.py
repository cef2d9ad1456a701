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
from pathlib import Path

import numpy as np

from ..rundir import RunDir
from ..run_files import RunRecord
from . import clocks, metrics
from .loop_run import read_run_metadata
from .records import Events, RecordError, read_events
from .results import RunAnalysis, StepResponse, TeleopRunResult


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


def _odometry_on_trial_clock(ev: Events, meta: RunRecord, car: str, trial: str) -> Events:
    """On real machines the odometry's stamps are the car's clock: moved onto the trial's
    (analysis.clocks), so the steps are timed and the delays read on one clock."""
    between = clocks.offset_between(meta, car, trial, ev.stamp_ns / 1e9)
    if between is None or car == trial:
        return ev
    shift_ns = np.round(between[0] * 1e9).astype(np.int64)
    stamp = np.where(ev.kind == "rx", ev.stamp_ns + shift_ns, ev.stamp_ns)          # odometry received
    answer = np.where(ev.answer_seq >= 0, ev.answer_stamp_ns + shift_ns, ev.answer_stamp_ns)  # its stamp in a command
    return dataclasses.replace(ev, stamp_ns=stamp, answer_stamp_ns=answer)


def analyse_teleop_run(run_dir: Path, meta: RunRecord | None = None) -> TeleopRunResult:
    """The trial's steps and delays of one teleop run. ``meta`` given: the caller read (and
    checked) the metadata; else it is read here and its problems are the run's."""
    run_dir = Path(run_dir)
    problems: list[str] = []
    if meta is None:
        meta, problems = read_run_metadata(run_dir)
    placement = (meta.experiment.get("loop") or {}).get("placement") or {}
    out = TeleopRunResult(run_dir=str(run_dir), run_id=meta.run_id or run_dir.name,
                          status=meta.status or "unknown", transport=meta.transport_name,
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


def teleop_result(a: RunAnalysis) -> TeleopRunResult | None:
    """The ``teleop`` kind's result of a run (its ``RunAnalysis.result``; None: not a teleop
    run, or one whose analysis failed)."""
    return a.result if isinstance(a.result, TeleopRunResult) else None


def step_deviation(a: StepResponse, b: StepResponse) -> float:
    """IAE between two normalised step responses on a's time grid (b interpolated), in s."""
    t, y = np.asarray(a.t), np.asarray(a.y)
    yb = np.interp(t, b.t, b.y)
    return float(np.sum(np.abs(y - yb)[1:] * np.diff(t)))
