"""Running experiments: one run per (transport, repetition) cell, each in its own run directory.

:func:`run_experiment` runs every cell of a campaign (resuming, running invalid cells again,
writing ``campaign.json``); one cell is one :class:`netloop.run.Run` (:func:`run_cell`), whose
methods are the run's phases: hosts and limits, masters, transport, flows, loop, connections,
the run with its faults, drain, link health, records home. What the nodes record lands in the
run directory as it happens (see :mod:`netloop.rundir`).
"""
from __future__ import annotations

import datetime as _dt
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from . import paths
from .cpulimit import cgroup_root
from .experiment import RunSpec, estimated_run_seconds, for_cell, sweep_combinations
from .machines import RealHosts, load_machines
from .model import Experiment
from .run import Interrupted, Run, RunFailed, hosts_for, install_signal_handlers, middlewares
from .run_nodes import MASTER_HOST, crossing_topics, topic_qos
from .run_files import (CampaignCell, CampaignRecord, RunFileError, RunRecord, load_campaign, load_metadata,
                        save_campaign)
from .rundir import invalid_attempts, set_aside
from .schema import ConfigError, to_dict
from .shards import Shard, experiment_shard

__all__ = ["Interrupted", "MASTER_HOST", "RunFailed", "campaign_dir_for", "campaign_summary", "check_machines",
           "crossing_topics", "hosts_for", "install_signal_handlers", "load_campaign_config", "preflight",
           "run_cell", "run_experiment", "topic_qos"]

#: the ROS 2 middlewares an experiment's transports need (netloop.run.middlewares)
_middlewares = middlewares


def run_cell(spec: RunSpec, run_dir: Path, log: Callable[[str], None] = print) -> RunRecord:
    """One run (the loop and/or the flows) of one cell, phase by phase (:class:`netloop.run.Run`);
    returns the run's metadata. Failures are recorded in the run directory, not raised."""
    return Run(spec, run_dir, log).execute()


def check_machines(exp: Experiment, log: Callable[[str], None] = print, skip: list[str] | tuple[str, ...] = ()) -> None:
    """The experiment's real machines checked: that they run netloop, then what this
    experiment needs there (:mod:`netloop.prerun_checks`, but the checks in ``skip``);
    RealHostsError naming every problem."""
    from . import prerun_checks  # noqa: PLC0415
    hosts = RealHosts(load_machines(exp.machines), Path("check"), log, middlewares(exp))
    hosts.keep_connections = True
    try:
        hosts.check()
        prerun_checks.check(hosts, exp, skip)
    finally:
        hosts.close_connections()


def campaign_dir_for(exp: Experiment, results: Path | None = None, shard: Shard | None = None) -> Path:
    """``<results>/<name>-<stamp>`` (a shard's: ``<name>-shard<K>of<N>-<stamp>``, so that shards
    writing into one shared folder at the same second stay apart)."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    tag = f"-{shard.folder_tag}" if shard else ""
    return Path(results or paths.RESULTS) / f"{exp.name}{tag}-{stamp}"


def _status(run_dir: Path) -> str | None:
    """The status in a run directory's metadata (None: no run there, or none readable)."""
    try:
        return load_metadata(run_dir).status
    except (OSError, RunFileError):
        return None


def _done(run_dir: Path, rerun_invalid: bool = False) -> bool:
    """A cell is done when its run finished with a verdict: complete, or invalid link timing
    (unless ``rerun_invalid``: then only complete)."""
    return _status(run_dir) in (("complete",) if rerun_invalid else ("complete", "invalid"))


def _progress_line(i: int, n: int, cell, exp: Experiment, left_s: float) -> str:
    width = 24
    filled = int(width * (i - 1) / n)
    minutes, seconds = divmod(int(left_s), 60)
    return (f"[{'#' * filled}{'.' * (width - filled)}] {i}/{n}  {cell.condition}  repetition "
            f"{cell.repetition + 1}/{exp.repetitions}  ~{minutes}m{seconds:02d}s left")


def run_experiment(exp: Experiment, out_dir: Path, log: Callable[[str], None] = print, resume: bool = False,
                   shard: Shard | None = None, rerun_invalid: bool = False) -> Path:
    """Run every cell of a validated experiment (or of its ``shard``: :mod:`netloop.shards`) into
    ``out_dir``; returns ``out_dir``.

    With ``resume``, cells already done are kept and only the others run; a cell left
    unfinished (failed, interrupted, killed) is moved to ``aborted/`` first, so ``runs/``
    ends with every cell exactly once. A run judged invalid (its link fell behind real
    time) runs again up to the experiment's ``rerun_invalid`` times; each invalid attempt is
    moved to ``invalid/``, kept and counted but out of the tables. With ``resume`` and
    ``rerun_invalid``, a cell invalid in every attempt of an earlier pass is not done: it runs
    again (its invalid run counted as one more attempt), for a campaign whose host was starved.
    One failing cell does not stop the others (unless ``keep_going`` is false); its failure and
    logs stay in its run directory."""
    import yaml  # noqa: PLC0415

    if any(h.get("cpu") is not None for h in exp.hosts.values()) or any(
            path.startswith("hosts.") and value is not None
            for combo in sweep_combinations(exp.sweep) for path, value in combo):
        cgroup_root()   # CPU limits impossible here (not root, no cpu controller): refused before anything starts
    preflight(exp)
    out_dir = Path(out_dir)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    if not resume:
        with open(out_dir / "experiment.yaml", "w", encoding="utf-8") as f:
            yaml.safe_dump(to_dict(exp), f, sort_keys=False)
    cells, split = experiment_shard(exp, shard)
    about = dict(shard.to_json(), split=split.level, paired=split.paired) if shard else None
    if rerun_invalid and not resume:
        raise ValueError("rerun_invalid is for resuming a campaign")
    todo = [c for c in cells if not _done(out_dir / "runs" / c.run_id, rerun_invalid)]
    if resume:
        invalid = sum(_status(out_dir / "runs" / c.run_id) == "invalid" for c in todo)
        log(f"resuming: {len(cells) - len(todo)} of {len(cells)} cells done, {len(todo)} to run"
            + (f" ({invalid} of them invalid in every earlier attempt)" if invalid else ""))
        if exp.machines:   # what a killed or cut-off earlier attempt left on the machines comes home first
            from .records_home import fetch_left_behind  # noqa: PLC0415
            fetch_left_behind(out_dir, exp.machines, log)
    started, estimate = time.monotonic(), estimated_run_seconds(exp)
    for i, cell in enumerate(todo, 1):
        elapsed = time.monotonic() - started
        per_run = elapsed / (i - 1) if i > 1 else estimate
        log(_progress_line(i, len(todo), cell, exp, per_run * (len(todo) - i + 1)))
        run_dir = out_dir / "runs" / cell.run_id
        if _status(run_dir) == "invalid":   # --rerun-invalid: one more invalid attempt, counted
            set_aside(run_dir, out_dir / "invalid")
        elif run_dir.exists():  # an unfinished earlier attempt: keep it, out of the tables
            set_aside(run_dir, out_dir / "aborted")
        for attempt in range(1 + exp.rerun_invalid):
            if attempt:   # the last verdict was invalid: keep that attempt, out of the tables
                kept = set_aside(run_dir, out_dir / "invalid")
                log(f"    {cell.run_id}: running it again ({attempt + 1} of {1 + exp.rerun_invalid}); "
                    f"the invalid attempt is kept in {kept}")
            record = run_cell(for_cell(exp, cell), run_dir, log)
            if record.status != "complete":
                log(f"    {cell.run_id} {record.status}: {record.error}  (logs: {run_dir / 'logs'})")
            if record.status != "invalid":
                break
        _write_campaign(out_dir, exp, cells, about)
        if record.status not in ("complete", "invalid") and not exp.keep_going:
            break
    _write_campaign(out_dir, exp, cells, about)
    return out_dir


def preflight(exp: Experiment) -> None:
    """What this machine must have for the experiment, refused before anything starts: a ROS 2
    middleware the build lacks (``libnetloop_ros2`` lists what it was built with)."""
    from .transports.ros2 import MIDDLEWARES, missing_middleware  # noqa: PLC0415
    problems = [f"transport {name}: {why}" for name in exp.transport if name in MIDDLEWARES
                for why in [missing_middleware(name)] if why]
    if problems:
        raise ConfigError("transport", "; ".join(problems))


def _write_campaign(out_dir: Path, exp: Experiment, cells, shard: dict | None = None) -> None:
    """campaign.json: every cell (of the shard, when it is one) and its status, as it is on disk now."""
    rows = []
    for cell in cells:
        try:
            meta = load_metadata(out_dir / "runs" / cell.run_id)
            status, error = meta.status, meta.error
        except (OSError, RunFileError):
            status, error = "missing", None
        rows.append(CampaignCell(run_id=cell.run_id, transport=cell.transport, condition=cell.condition,
                                 settings=dict(cell.settings), repetition=cell.repetition, status=status, error=error,
                                 invalid_attempts=len(invalid_attempts(out_dir, cell.run_id))))
    save_campaign(out_dir, CampaignRecord(exp.name, rows, shard=shard))


def campaign_summary(out_dir: Path) -> str:
    """One line on a campaign's outcome from its campaign.json: runs by status, and the
    attempts judged invalid and run again."""
    rows = load_campaign(out_dir).cells
    by_status = Counter(row.status or "missing" for row in rows)
    reruns = sum(row.invalid_attempts or 0 for row in rows)
    return (f"{len(rows)} runs: " + ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
            + f"; attempts judged invalid (link behind real time) and run again: {reruns}")


def rerun_hint(out_dir: Path) -> str | None:
    """For a campaign with cells invalid in every attempt: the command that runs them again."""
    invalid = [row.run_id for row in load_campaign(out_dir).cells if row.status == "invalid"]
    if not invalid:
        return None
    return (f"{len(invalid)} cell(s) invalid in every attempt ({', '.join(invalid)}): the host kept "
            f"the link emulator from real time; run them again when it is quieter: netloop run --resume {out_dir} "
            f"--rerun-invalid")


def load_campaign_config(out_dir: Path) -> Experiment:
    """The experiment a campaign directory was started with (for --resume)."""
    from .experiment import validate_experiment  # noqa: PLC0415
    from .schema import load_yaml  # noqa: PLC0415

    path = Path(out_dir) / "experiment.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{out_dir}: not a campaign directory (no experiment.yaml)")
    return validate_experiment(load_yaml(str(path)), str(path))
