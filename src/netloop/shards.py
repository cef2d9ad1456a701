"""Shards: one campaign's cells split into N deterministic shares, each run by its own
``netloop run --shard K/N`` on its own machine, merged afterwards (:mod:`netloop.merge`).

Numbering: shards count from 1 (``--shard 1/3`` .. ``--shard 3/3``), as "the K-th of N".
A scheduler's index is read from the environment with ``--shard auto`` (Slurm) or
``--shard auto/N`` (Kubernetes, or Slurm with the count checked):

* Slurm job arrays: shard ``(SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) / SLURM_ARRAY_TASK_STEP
  + 1`` of ``SLURM_ARRAY_TASK_COUNT``, so ``--array=0-2`` and ``--array=1-3`` both make shards
  1/3, 2/3, 3/3 (STEP is 1 when Slurm does not set it);
* Kubernetes Indexed Jobs: shard ``JOB_COMPLETION_INDEX + 1`` (the index counts from 0); the
  count is the Job's ``completions``, given as ``auto/N``.

An explicit ``K/N`` inside a job array must name the shard the scheduler's variables name: a
contradiction (the usual off-by-one of 0- and 1-based ids) is refused before anything runs.

Splitting (:func:`shard_cells`): repetitions first. Every cell of one repetition (each transport,
each sweep point, a loop's baseline) goes to the same shard, so every comparison between
transports within a repetition is made on one machine. Only when the campaign has fewer
repetitions than shards does the split go finer: along the sweep's points (each transport of one
point of one repetition together), and last along single cells, where transports of one
repetition run on different machines (:attr:`Split.paired` false; the report says so). The units
are dealt longest first (by the runs' estimated durations, as ``--dry-run`` prints them) to the
shard with the least time so far, the lower shard on a tie: units of equal length, such as a
campaign's repetitions, go round in turn, so shard K of N holds repetitions K-1, K-1+N, ...
(``-r<k>`` in the run ids).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from .schema import ConfigError
from .sweep import Cell

OPTION = "--shard"

#: the split levels, coarsest first: what one unit holds
LEVELS = ("repetition", "sweep point", "cell")
#: what ``run --shard`` warns when the split had to go down to single cells
UNPAIRED = ("split by cell, so the transports of one repetition run on different machines; at most as many "
            "shards as repetitions (or sweep points) keeps them together")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (from 1) of ``count``; ``source`` says where the index came from."""

    index: int
    count: int
    source: str = OPTION

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def folder_tag(self) -> str:
        """What a shard's campaign folder carries in its name (``shard2of3``)."""
        return f"shard{self.index}of{self.count}"

    def to_json(self) -> dict:
        return {"index": self.index, "count": self.count, "source": self.source}


@dataclass(frozen=True)
class Split:
    """How a campaign's cells were split: the level of one unit, and whether every transport of
    a repetition stayed on one machine."""

    level: str

    @property
    def paired(self) -> bool:
        return self.level != "cell"


def _int(value: str | None, what: str) -> int:
    if value is None:
        raise ConfigError(OPTION, f"{what} is not set (a job array sets it; or give --shard K/N)")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(OPTION, f"{what} is {value!r}, not an integer") from None


def _checked(index: int, count: int, source: str) -> Shard:
    if count < 1:
        raise ConfigError(OPTION, f"{source}: the count of shards is {count}; it must be 1 or more")
    if not 1 <= index <= count:
        raise ConfigError(OPTION, f"{source}: shard {index} of {count} does not exist; shards count from 1 "
                                  f"to {count} (a scheduler's 0-based index: --shard auto)")
    return Shard(index, count, source)


def scheduler_shard(environ: Mapping[str, str], count: int | None = None) -> Shard | None:
    """The shard a scheduler's variables name (Slurm job array, Kubernetes Indexed Job), None
    when none is set; ``count`` is the count given on the command line (needed for Kubernetes,
    checked against Slurm's)."""
    if "SLURM_ARRAY_TASK_ID" in environ:
        task = _int(environ["SLURM_ARRAY_TASK_ID"], "SLURM_ARRAY_TASK_ID")
        low = _int(environ.get("SLURM_ARRAY_TASK_MIN"), "SLURM_ARRAY_TASK_MIN")
        step = _int(environ.get("SLURM_ARRAY_TASK_STEP", "1"), "SLURM_ARRAY_TASK_STEP")
        tasks = environ.get("SLURM_ARRAY_TASK_COUNT")
        total = _int(tasks, "SLURM_ARRAY_TASK_COUNT") if tasks is not None else count
        source = f"SLURM_ARRAY_TASK_ID={task} (MIN {low}, STEP {step}, COUNT {tasks or '-'})"
        if total is None:
            raise ConfigError(OPTION, f"{source}: no SLURM_ARRAY_TASK_COUNT; give the count: --shard auto/N")
        if count is not None and total != count:
            raise ConfigError(OPTION, f"{source}: the array has {total} tasks, not the {count} shards asked for")
        if step < 1 or (task - low) % step:
            raise ConfigError(OPTION, f"{source}: not a task of a range MIN-MAX[:STEP]; use --array=1-N")
        return _checked((task - low) // step + 1, total, source)
    if "JOB_COMPLETION_INDEX" in environ:
        index = _int(environ["JOB_COMPLETION_INDEX"], "JOB_COMPLETION_INDEX")
        source = f"JOB_COMPLETION_INDEX={index}"
        if count is None:
            raise ConfigError(OPTION, f"{source}: a Kubernetes index needs the count: --shard auto/N "
                                      "(N = the Job's completions)")
        return _checked(index + 1, count, source)
    return None


def parse_shard(text: str | None, environ: Mapping[str, str] | None = None) -> Shard | None:
    """``--shard``'s value (``K/N``, ``auto``, ``auto/N``; None: no sharding) as a :class:`Shard`;
    ConfigError naming the problem. ``environ`` defaults to the process's environment."""
    if text is None:
        return None
    environ = os.environ if environ is None else environ
    m = re.fullmatch(r"\s*(auto|\d+)\s*(?:/\s*(\d+)\s*)?", text)
    if not m or (m.group(1) != "auto" and m.group(2) is None):
        raise ConfigError(OPTION, f"{text!r} is not K/N (e.g. 2/3), auto, or auto/N")
    count = int(m.group(2)) if m.group(2) else None
    found = scheduler_shard(environ, count)
    if m.group(1) == "auto":
        if found is None:
            raise ConfigError(OPTION, f"{text}: no scheduler's index in the environment "
                                      "(SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX); give K/N")
        return found
    given = _checked(int(m.group(1)), count, f"{OPTION} {text}")
    if found is not None and (found.index, found.count) != (given.index, given.count):
        raise ConfigError(OPTION, f"{text} contradicts {found.source}, which is shard {found.label}; "
                                  f"give --shard auto, or run outside the job array")
    return given


def split_level(cells: Sequence[Cell], count: int) -> Split:
    """The coarsest level whose units are at least ``count``; ConfigError when even single
    cells are fewer than the shards (a shard would have nothing to run)."""
    for level in LEVELS:
        if len(_units(cells, level)) >= count:
            return Split(level)
    raise ConfigError(OPTION, f"{count} shards for a campaign of {len(cells)} runs: at most {len(cells)}")


def _unit_key(cell: Cell, level: str) -> tuple:
    if level == "repetition":
        return (cell.repetition,)
    if level == "sweep point":
        return (cell.repetition, cell.settings)
    return (cell.repetition, cell.settings, cell.transport)


def _units(cells: Sequence[Cell], level: str) -> list[tuple]:
    """The units of ``level`` in the order their first cell comes."""
    return list(dict.fromkeys(_unit_key(c, level) for c in cells))


def shard_cells(cells: Sequence[Cell], shard: Shard | None,
                seconds: Callable[[Cell], float] | None = None) -> tuple[list[Cell], Split | None]:
    """The cells of ``shard`` (every cell when None), in the campaign's order, and the split.

    Units (:func:`split_level`) are dealt longest first (``seconds``: a cell's estimated
    duration; every cell alike when None) to the shard with the least time so far, the lower
    shard on a tie: the shards' times come out close, and units of equal length (a campaign's
    repetitions) go round in turn. Times are counted in whole tenths of a second, so every
    machine deals the same shares."""
    if shard is None:
        return list(cells), None
    split = split_level(cells, shard.count)
    weight = dict.fromkeys(_units(cells, split.level), 0)
    for cell in cells:
        weight[_unit_key(cell, split.level)] += round(10 * seconds(cell)) if seconds else 1
    load, owner = [0] * shard.count, {}
    for unit in sorted(weight, key=lambda u: -weight[u]):    # stable: the campaign's order on a tie
        owner[unit] = min(range(shard.count), key=lambda k: (load[k], k))
        load[owner[unit]] += weight[unit]
    return [c for c in cells if owner[_unit_key(c, split.level)] == shard.index - 1], split


def experiment_shard(exp, shard: Shard | None) -> tuple[list[Cell], Split | None]:
    """The cells of an experiment's ``shard`` (:func:`shard_cells`, by the runs' estimated durations)."""
    from .experiment import estimated_run_seconds, expand, for_cell  # noqa: PLC0415
    return shard_cells(expand(exp), shard, lambda c: estimated_run_seconds(for_cell(exp, c).experiment))


def describe(shard: Shard, split: Split, cells: Sequence[Cell]) -> str:
    """One line: which shard, how split, which repetitions (for --dry-run and the run's log)."""
    reps = sorted({c.repetition for c in cells})
    paired = (f"every transport of a {split.level} on one machine" if split.paired
              else "transports of one repetition on different machines: comparisons cross machines")
    return (f"shard {shard.label} ({shard.source}): {len(cells)} run(s), split by {split.level} "
            f"({paired}); repetitions {', '.join(f'r{r}' for r in reps)}")


def campaign_shard(campaign_dir) -> Shard | None:
    """The shard a campaign folder was started as (its campaign.json's ``shard``; None for a
    whole campaign), so that ``run --resume`` runs the rest of that shard and no more."""
    from .run_files import RunFileError, has_campaign, load_campaign  # noqa: PLC0415
    if not has_campaign(campaign_dir):
        return None
    try:
        about = load_campaign(campaign_dir).shard
    except RunFileError:
        return None
    if not about:
        return None
    return Shard(int(about["index"]), int(about["count"]), str(about.get("source") or OPTION))


def resumed_shard(campaign_dir, asked: Shard | None) -> Shard | None:
    """The shard ``run --resume`` completes: the one the campaign was started as; a ``--shard``
    given as well must name it (ConfigError otherwise)."""
    started = campaign_shard(campaign_dir)
    if asked is not None and (started is None or (asked.index, asked.count) != (started.index, started.count)):
        raise ConfigError(OPTION, f"{asked.label} ({asked.source}), but {campaign_dir} is "
                                  + (f"shard {started.label}" if started else "a whole campaign")
                                  + "; --resume completes the campaign as it was started")
    return started
