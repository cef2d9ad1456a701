"""Shards (netloop.shards) and merging them (netloop.merge), without running anything: the index
from --shard and from a scheduler's variables, the split by repetition first, and every merge
the shards do not fit refused with its one-line reason. Shards run for real, at once, and merged:
test_shards_lab.py."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from netloop import __version__, cli
from netloop.analysis.synthetic import write_campaign
from netloop.experiment import expand, validate_experiment
from netloop.merge import MergeError, merge_campaigns
from netloop.run_files import CampaignRecord, load_campaign, load_metadata, save_campaign, save_metadata
from netloop.schema import ConfigError
from netloop.shards import Shard, parse_shard, shard_cells

SLURM = {"SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "3"}


@pytest.mark.parametrize("text, env, expected", [
    ("2/3", {}, (2, 3)),
    ("auto", {**SLURM, "SLURM_ARRAY_TASK_ID": "1"}, (2, 3)),                       # --array=0-2
    ("auto", {**SLURM, "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_ID": "2"}, (2, 3)),   # --array=1-3
    ("auto", {**SLURM, "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_STEP": "5", "SLURM_ARRAY_TASK_ID": "20"},
     (3, 3)),                                                                       # --array=10-20:5
    ("auto/4", {"JOB_COMPLETION_INDEX": "0"}, (1, 4)),                              # Kubernetes: from 0
    ("2/3", {**SLURM, "SLURM_ARRAY_TASK_ID": "1"}, (2, 3)),                        # the same shard: fine
])
def test_the_shard_from_the_option_or_the_scheduler(text, env, expected):
    shard = parse_shard(text, env)
    assert (shard.index, shard.count) == expected


@pytest.mark.parametrize("text, env, words", [
    ("0/3", {}, "shard 0 of 3 does not exist; shards count from 1"),
    ("4/3", {}, "shard 4 of 3 does not exist"),
    ("2", {}, "is not K/N"),
    ("two/3", {}, "is not K/N"),
    ("auto", {}, "no scheduler's index in the environment"),
    ("auto", {"JOB_COMPLETION_INDEX": "1"}, "needs the count: --shard auto/N"),
    ("auto/4", {"JOB_COMPLETION_INDEX": "4"}, "shard 5 of 4 does not exist"),
    ("2/3", {**SLURM, "SLURM_ARRAY_TASK_ID": "0"}, "2/3 contradicts SLURM_ARRAY_TASK_ID=0"),   # the 0/1 slip
    ("auto/4", {**SLURM, "SLURM_ARRAY_TASK_ID": "0"}, "the array has 3 tasks, not the 4 shards"),
    ("auto", {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3"}, "SLURM_ARRAY_TASK_MIN is not set"),
])
def test_a_bad_shard_is_refused_naming_why(text, env, words):
    with pytest.raises(ConfigError) as err:
        parse_shard(text, env)
    assert err.value.key == "--shard" and words in str(err.value)


def _exp(repetitions=3, transports=("tcp", "udp", "tcp_nodelay"), sweep=None):
    return validate_experiment({"name": "s", "transport": list(transports), "repetitions": repetitions,
                                "link": "shaped", **({"sweep": sweep} if sweep else {})}, name="s")


def test_shards_split_by_repetition_first_and_cover_every_cell_once():
    cells = expand(_exp())
    mine = {k: shard_cells(cells, Shard(k, 2))[0] for k in (1, 2)}
    assert [c.run_id for c in mine[1]] == ["tcp-r0", "udp-r0", "tcp_nodelay-r0", "tcp-r2", "udp-r2", "tcp_nodelay-r2"]
    assert {c.repetition for c in mine[2]} == {1} and len(mine[2]) == 3
    for n in range(1, len(cells) + 1):       # any N up to one cell each: a partition, whatever the level
        parts = [shard_cells(cells, Shard(k, n))[0] for k in range(1, n + 1)]
        assert sorted(c.run_id for p in parts for c in p) == sorted(c.run_id for c in cells)
        assert all(parts)
        level = shard_cells(cells, Shard(1, n))[1]
        for p in parts if level.paired else []:    # every transport of a repetition on one machine
            assert {c.transport for c in p} == {"tcp", "udp", "tcp_nodelay"}
    with pytest.raises(ConfigError, match="10 shards for a campaign of 9 runs: at most 9"):
        shard_cells(cells, Shard(1, 10))


def test_with_fewer_repetitions_than_shards_the_split_goes_by_sweep_point_then_cell():
    cells = expand(_exp(repetitions=1, sweep={"link_params.delay_ms": [0, 10, 20]}))
    part, split = shard_cells(cells, Shard(2, 3))
    assert split.level == "sweep point" and split.paired
    assert {c.transport for c in part} == {"tcp", "udp", "tcp_nodelay"} and {c.settings for c in part} == {
        (("link_params.delay_ms", 10),)}
    part, split = shard_cells(cells, Shard(1, 4))
    assert split.level == "cell" and not split.paired


def test_the_dry_run_lists_a_shards_runs(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "transport": ["tcp", "udp"], "repetitions": 3}))
    assert cli.main(["run", "--dry-run", "--shard", "2/2", str(path)]) == 0
    out = capsys.readouterr().out
    assert "shard 2/2 (--shard 2/2): 2 run(s), split by repetition (every transport of a repetition on one machine)" in out
    assert [line.strip() for line in out.splitlines() if line.startswith("  ")] == ["tcp-r1", "udp-r1"]


# ---------------------------------------------------------------- merging

DOC = {"name": "m", "transport": ["tcp_nodelay", "udp"], "repetitions": 2, "loop": {"samples": 60}}


def _delays(cell, cfg, rng):
    n = cfg["loop"]["samples"]
    return np.full(n, 0.001 + 0.002 * (cell.transport == "udp")), np.full(n, 0.001)


def _version(folder: Path, version: str | None) -> None:
    for run in (folder / "runs").iterdir():
        meta = load_metadata(run)
        meta.host = {**meta.host, "hostname": "lab1", "netloop": version}
        save_metadata(run, meta)


def _carve(whole: Path, index: int, count: int, dest: Path) -> Path:
    """Shard ``index`` of ``count`` of a whole campaign, laid out as 'netloop run --shard' leaves it."""
    exp = validate_experiment(yaml.safe_load((whole / "experiment.yaml").read_text()), name="m")
    mine, split = shard_cells(expand(exp), Shard(index, count))
    dest.mkdir(parents=True)
    shutil.copy(whole / "experiment.yaml", dest)
    for cell in mine:
        shutil.copytree(whole / "runs" / cell.run_id, dest / "runs" / cell.run_id)
    rows = [c for c in load_campaign(whole).cells if c.run_id in {m.run_id for m in mine}]
    save_campaign(dest, CampaignRecord("m", rows, shard={"index": index, "count": count, "source": "--shard",
                                                         "split": split.level, "paired": split.paired}))
    return dest


@pytest.fixture
def shards(tmp_path):
    whole = write_campaign(tmp_path / "whole", DOC, _delays)
    _version(whole, __version__)
    return [_carve(whole, k, 2, tmp_path / f"m-shard{k}of2") for k in (1, 2)]


def test_shards_merge_into_the_whole_campaign_with_their_runs_linked(shards, tmp_path):
    merged = merge_campaigns(shards, tmp_path / "out")
    record = load_campaign(merged)
    assert [c.run_id for c in record.cells] == ["tcp_nodelay-r0", "udp-r0", "tcp_nodelay-r1", "udp-r1"]
    assert [s["index"] for s in record.shards] == [1, 2] and record.shards[1]["runs"] == ["tcp_nodelay-r1", "udp-r1"]
    assert record.shards[0]["hosts"][0]["netloop"] == __version__
    run = "udp-r1/metadata.json"
    assert os.stat(merged / "runs" / run).st_ino == os.stat(shards[1] / "runs" / run).st_ino   # a link, not a copy
    assert (merged / "experiment.yaml").read_text() == (shards[0] / "experiment.yaml").read_text()


def _refused(folders, tmp_path) -> str:
    with pytest.raises(MergeError) as err:
        merge_campaigns(folders, tmp_path / "out")
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()   # nothing written
    return str(err.value)


def test_a_missing_shard_is_refused_listing_the_cells(shards, tmp_path):
    assert _refused([shards[0]], tmp_path) == ("2 cell(s) missing: tcp_nodelay-r1, udp-r1; no shard given holds "
                                               "them (shards given: 1 of 2)")


def test_an_unfinished_shard_is_named_with_its_resume(shards, tmp_path):
    shutil.rmtree(shards[1] / "runs" / "udp-r1")
    assert _refused(shards, tmp_path) == (f"1 cell(s) missing: udp-r1; unfinished: shard 2/2 ({shards[1]}): "
                                          f"netloop run --resume {shards[1]}")


def test_the_same_shard_twice_is_refused_as_overlapping(shards, tmp_path):
    assert _refused([shards[0], shards[0], shards[1]], tmp_path).startswith(
        f"2 cell(s) in more than one shard: tcp_nodelay-r0 ({shards[0]}, {shards[0]})")


def test_shards_of_another_experiment_are_refused(shards, tmp_path):
    doc = yaml.safe_load((shards[1] / "experiment.yaml").read_text())
    doc["loop"]["samples"] = 80
    (shards[1] / "experiment.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    assert _refused(shards, tmp_path) == (f"shards of different experiments: {shards[0]} and {shards[1]} differ: "
                                          "'loop.samples' is 60 in one and 80 in the other")


def test_shards_of_another_netloop_version_are_refused(shards, tmp_path):
    _version(shards[1], "0.0.9")
    assert _refused(shards, tmp_path) == (f"shards of different netloop versions: {__version__} ({shards[0]}), "
                                          f"0.0.9 ({shards[1]})")


def test_shards_of_another_split_and_a_folder_that_is_no_campaign_are_refused(shards, tmp_path):
    doc = json.loads((shards[1] / "campaign.json").read_text())
    doc["shard"]["count"] = 3
    (shards[1] / "campaign.json").write_text(json.dumps(doc))
    assert _refused(shards, tmp_path).startswith("shards of different splits: shard 1/2")
    assert _refused([shards[0], tmp_path], tmp_path).startswith(f"{tmp_path} is not a campaign folder")


def test_the_report_command_merges_or_refuses_in_one_line(shards, tmp_path, capsys):
    assert cli.main(["report", str(shards[0]), "--out", str(tmp_path / "out")]) == 0   # one shard: its own report
    assert "This is shard 1/2 of the campaign" in capsys.readouterr().out
    assert cli.main(["report", str(shards[0]), str(shards[0]), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("netloop report: 2 cell(s) in more than one shard") and err.count("\n") == 1


def test_resume_completes_the_shard_it_was_started_as(shards, capsys):
    assert cli.main(["run", "--resume", str(shards[1]), "--shard", "1/2"]) == 2
    assert ("--shard: 1/2 (--shard 1/2), but " + str(shards[1]) + " is shard 2/2; --resume completes the campaign "
            "as it was started") in capsys.readouterr().err
    assert cli.main(["run", "--resume", str(shards[1]), "--transports", "udp"]) == 2
    assert "--transports: --resume runs the transports" in capsys.readouterr().err


def test_reproduce_plans_a_share_of_every_part(capsys):
    argv = ["reproduce", "jordan", "--quick", "--dry-run", "--part", "exp4", "--part", "exp6"]
    assert cli.main(argv) == 0
    whole = {line.split()[0]: int(line.split()[1]) for line in capsys.readouterr().out.splitlines()[1:-1]}
    shares = []
    for k in (1, 2):
        assert cli.main(argv + ["--shard", f"{k}/2"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"jordan: 2 part(s), shard {k}/2")
        shares.append({line.split()[0]: int(line.split()[1]) for line in out.splitlines()[1:-1]})
    assert {p: shares[0][p] + shares[1][p] for p in whole} == whole and all(shares[0].values())
