"""Merging shards (``netloop report SHARD SHARD ...``): the campaigns that ``netloop run --shard
K/N`` left, on one machine each, made into one campaign folder that reads like a campaign run
in one go, with a record of which shard ran where (:mod:`netloop.shards`).

Shards fit together when they ran the same experiment (their experiment.yaml, the file as
validated, with --quick and --transports applied), the same netloop version (each run's
metadata.json, ``host.netloop``), the same split (N), and hold every cell of the campaign
exactly once. Anything else is refused with one line saying why (:class:`MergeError`); missing
cells are listed by run id, and a shard left unfinished is named with its ``--resume``.

The merged folder ``<out>/<name>-<date>-<time>/`` holds the shards' ``runs/`` (and ``invalid/``,
``aborted/``) as hard links where the file system allows (copies otherwise), experiment.yaml,
and campaign.json with every cell and, under ``shards``, each shard's index, split, folder,
runs and machines.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .run_files import CampaignCell, CampaignRecord, RunFileError, load_campaign, load_metadata, save_campaign

#: the folders of a campaign that hold run directories
RUN_FOLDERS = ("runs", "invalid", "aborted")


class MergeError(RuntimeError):
    """Shards that do not make one campaign; the message is the one-line reason."""


@dataclass
class ShardCampaign:
    """One folder given to the merge: what it ran and which of its cells are there."""

    path: Path
    experiment: dict
    record: CampaignRecord
    held: list[str] = field(default_factory=list)       # run ids with a run directory and a status
    versions: set = field(default_factory=set)          # netloop versions its runs recorded
    hosts: list = field(default_factory=list)           # the machines its runs recorded

    @property
    def label(self) -> str:
        s = self.record.shard
        return f"shard {s['index']}/{s['count']} ({self.path})" if s else f"{self.path} (not a shard)"


def read_shard(path: Path) -> ShardCampaign:
    """A campaign folder's experiment, cells, versions and machines; MergeError when it is not one."""
    import yaml  # noqa: PLC0415
    path = Path(path)
    try:
        record = load_campaign(path)
        experiment = yaml.safe_load((path / "experiment.yaml").read_text(encoding="utf-8"))
    except (OSError, RunFileError, yaml.YAMLError) as err:
        raise MergeError(f"{path} is not a campaign folder (campaign.json and experiment.yaml): {err}") from None
    shard = ShardCampaign(path, experiment, record)
    for cell in record.cells:
        run_dir = path / "runs" / cell.run_id
        if cell.status in (None, "missing") or not run_dir.is_dir():
            continue
        shard.held.append(cell.run_id)
        try:
            host = load_metadata(run_dir).host
        except (OSError, RunFileError):
            host = {}
        shard.versions.add(str(host.get("netloop") or "unknown"))
        machine = {k: host.get(k) for k in ("hostname", "cpu", "cores", "kernel", "netloop")}
        if machine not in shard.hosts:
            shard.hosts.append(machine)
    return shard


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The first key path where two documents differ, with both values; None when equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            found = first_difference(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := first_difference(x, y, f"{where}[{i}]"))),
                    None)
    return None if a == b else f"'{where}' is {a!r} in one and {b!r} in the other"


def _short(items: list[str], most: int = 12) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def check_fit(shards: list[ShardCampaign]) -> list[str]:
    """The run ids of the whole campaign when the shards make it exactly once; MergeError with
    the first reason they do not."""
    from .experiment import expand, validate_experiment  # noqa: PLC0415
    first = shards[0]
    for other in shards[1:]:
        diff = first_difference(first.experiment, other.experiment)
        if diff:
            raise MergeError(f"shards of different experiments: {first.path} and {other.path} differ: {diff}")
    versions = {v: s.path for s in shards for v in sorted(s.versions)}
    if len(versions) > 1:
        raise MergeError("shards of different netloop versions: "
                         + ", ".join(f"{v} ({p})" for v, p in versions.items()))
    counts = {s.record.shard["count"] if s.record.shard else None for s in shards}
    if len(counts) > 1:
        raise MergeError("shards of different splits: " + ", ".join(s.label for s in shards))
    owner: dict[str, list[Path]] = {}
    for s in shards:
        for run_id in s.held:
            owner.setdefault(run_id, []).append(s.path)
    twice = [f"{r} ({', '.join(map(str, p))})" for r, p in owner.items() if len(p) > 1]
    if twice:
        raise MergeError(f"{len(twice)} cell(s) in more than one shard: {_short(twice, 4)}")
    exp = validate_experiment(first.experiment, name=first.experiment.get("name"))
    cells = [c.run_id for c in expand(exp)]
    missing = [r for r in cells if r not in owner]
    if missing:
        unfinished = [s for s in shards if len(s.held) < len(s.record.cells)]
        raise MergeError(f"{len(missing)} cell(s) missing: {_short(missing)}"
                         + ("; unfinished: " + ", ".join(f"{s.label}: netloop run --resume {s.path}" for s in unfinished)
                            if unfinished else f"; no shard given holds them (shards given: {len(shards)} of "
                                               f"{next(iter(counts)) or '?'})"))
    extra = [r for r in owner if r not in cells]
    if extra:
        raise MergeError(f"cells the experiment does not have: {_short(extra)}")
    return cells


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def merge_campaigns(folders: list[Path], out_parent: Path | None = None) -> Path:
    """One campaign from the shard folders (:func:`check_fit` first: nothing is written when they
    do not fit); returns the new campaign folder."""
    from . import runner  # noqa: PLC0415
    shards = [read_shard(f) for f in folders]
    cells = check_fit(shards)
    exp = runner.load_campaign_config(shards[0].path)
    out = runner.campaign_dir_for(exp, out_parent)
    if out.exists():
        raise MergeError(f"{out} exists already; merge again in a second, or into another --out")
    out.mkdir(parents=True)
    shutil.copy2(shards[0].path / "experiment.yaml", out / "experiment.yaml")
    rows: dict[str, CampaignCell] = {}
    for s in shards:
        for folder in RUN_FOLDERS:
            for entry in sorted((s.path / folder).glob("*")) if (s.path / folder).is_dir() else []:
                target = out / folder / entry.name
                if target.exists():
                    raise MergeError(f"{folder}/{entry.name} is in more than one shard ({s.path})")
                target.parent.mkdir(exist_ok=True)
                shutil.copytree(entry, target, copy_function=_link_or_copy, symlinks=True)
        rows.update({c.run_id: c for c in s.record.cells if c.run_id in s.held})
    about = [{**(s.record.shard or {}), "from": str(s.path.resolve()), "runs": s.held, "hosts": s.hosts}
             for s in sorted(shards, key=lambda s: (s.record.shard or {}).get("index", 0))]
    save_campaign(out, CampaignRecord(exp.name, [rows[r] for r in cells], shards=about))
    return out
