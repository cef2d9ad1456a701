"""docs/shards.md's recipes, run as far as this machine allows.

- GNU parallel over SSH (docs/shards/parallel_ssh.sh): two "lab machines", network namespaces each
  running a real sshd (sshlab.SshLab), run the two shards of a small loopback experiment at the
  same time, each in its own namespace; the script brings them home and merges them. The same
  experiment runs unsharded meanwhile: the merged report has its cells and verdict structure.
- Slurm (docs/shards/slurm_array.sh): run with a job array's variables set, as sbatch would.
- Kubernetes (docs/shards/k8s_indexed_job.yaml): valid YAML naming an Indexed Job, a privileged
  pod and the same N twice; its pod script run here with JOB_COMPLETION_INDEX, fresh and as a
  pod started again (which resumes its shard).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from netloop import __version__, paths
from netloop.experiment import load_experiment
from netloop.run_files import load_campaign, load_metadata
from netloop.shards import Shard, experiment_shard

sys.path.insert(0, str(Path(__file__).parent))
from sshlab import SshLab  # noqa: E402

NETLOOP = str(paths.REPO / "bin" / "netloop")
RECIPES = paths.REPO / "docs" / "shards"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces and sshd")
#: the shortest campaign with a comparison in it: 2 transports x 2 repetitions, 0.8 s of loop each
SMALL = {"name": "shardme", "description": "two transports, two repetitions", "link": "loopback",
         "transport": ["tcp_nodelay", "udp"], "repetitions": 2, "loop": {"samples": 40}}


def _env(**more) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROS_PACKAGE_PATH")}
    return {**env, **{k: str(v) for k, v in more.items()}}


def _listed_runs(stdout: str) -> list[str]:
    """The run ids a --dry-run listed."""
    return [line.strip() for line in stdout.splitlines() if line.startswith("  ")]


def _shard_runs(experiment: str, index: int, count: int) -> list[str]:
    """The run ids of a shipped experiment's shard, as netloop deals them."""
    return [c.run_id for c in experiment_shard(load_experiment(paths.REPO / experiment), Shard(index, count))[0]]


def _decision_tables(report_md: Path) -> tuple[list[str], list[list[str]]]:
    """The section headings and the decision table's rows (cells) of a report.md."""
    text = report_md.read_text(encoding="utf-8")
    headings = [h for h in re.findall(r"^## (.+)$", text, re.M) if h != "Shards"]
    section = text.split("## Decision table", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    return headings, rows


@pytest.fixture(scope="module")
def lab_campaigns(tmp_path_factory):
    """The parallel-over-SSH recipe and the unsharded campaign, run at the same time."""
    tmp = tmp_path_factory.mktemp("shards")
    exp = tmp / "shardme.yaml"
    exp.write_text(yaml.safe_dump(SMALL, sort_keys=False))
    whole = subprocess.Popen([NETLOOP, "run", "--out", str(tmp / "whole"), str(exp)], env=_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        with SshLab("ethernet", tmp / "lab", ssh_hosts=("robot", "operator")) as lab:
            ssh = (f"ssh -i {lab.key} -o UserKnownHostsFile={lab.known_hosts} -o StrictHostKeyChecking=yes "
                   "-o BatchMode=yes")
            hosts = [f"root@{lab.testbed.address(h)}" for h in ("robot", "operator")]
            recipe = subprocess.run(lab.testbed.exec_prefix("operator") + [
                str(RECIPES / "parallel_ssh.sh"), str(exp), "2", *hosts], capture_output=True, text=True, timeout=300,
                env=_env(SSH=ssh, REMOTE_OUT=tmp / "remote", LOCAL_OUT=tmp / "home", MERGED_OUT=tmp / "merged"))
    finally:
        whole_out = whole.communicate(timeout=300)[0]
    assert whole.returncode == 0, whole_out[-3000:]
    assert recipe.returncode == 0, recipe.stdout[-3000:] + recipe.stderr[-3000:]
    return {"recipe": recipe, "hosts": hosts, "tmp": tmp, "exp": exp,
            "whole": next((tmp / "whole").glob("shardme-*")), "merged": next((tmp / "merged").glob("shardme-*")),
            "shards": sorted((tmp / "home").glob("shardme-shard*of2-*"))}


@needs_root
def test_two_shards_on_two_machines_at_once_merge_into_the_unsharded_campaigns_report(lab_campaigns):
    c = lab_campaigns
    assert [s.name.split("-")[1] for s in c["shards"]] == ["shard1of2", "shard2of2"]
    jobs = [line.split("\t") for line in (c["tmp"] / "home" / "joblog").read_text().splitlines()[1:]]
    assert sorted(j[1] for j in jobs) == sorted(c["hosts"]) and {j[6] for j in jobs} == {"0"}   # a host each, exit 0
    spans = []
    for shard in c["shards"]:
        metas = [load_metadata(r) for r in (shard / "runs").iterdir()]
        assert {m.experiment["repetition"] for m in metas} == {int(shard.name[len("shardme-shard")]) - 1}
        assert {m.host["netloop"] for m in metas} == {__version__} and all(m.host["kernel"] for m in metas)
        spans.append((min(m.start_unix for m in metas), max(m.end_unix for m in metas)))
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]     # the shards ran at the same time
    merged, whole = c["merged"], c["whole"]
    assert f"merged 2 shards into {merged}" in c["recipe"].stdout
    assert [x.run_id for x in load_campaign(merged).cells] == [x.run_id for x in load_campaign(whole).cells]
    assert [x.status for x in load_campaign(merged).cells] == ["complete"] * 4
    ids = [[e["run_id"] for e in json.loads((d / "analysis.json").read_text())] for d in (merged, whole)]
    assert ids[0] == ids[1] and len(ids[0]) == 4
    (m_heads, m_rows), (w_heads, w_rows) = _decision_tables(merged / "report.md"), _decision_tables(whole / "report.md")
    assert m_heads == w_heads and m_rows[0] == w_rows[0]                      # the same sections, the same columns
    assert sorted(r[1] for r in m_rows[1:]) == sorted(r[1] for r in w_rows[1:]) == ["tcp_nodelay", "udp"]
    verdict = re.compile(r"best|indistinguishable from best|worse by .+")
    assert all(verdict.fullmatch(r[-1]) for r in m_rows[1:] + w_rows[1:])
    md = (merged / "report.md").read_text()
    assert "This campaign ran as 2 shards on 1 machine, split by repetition: every transport of a repetition ran " \
           "on the same machine" in md and "## Shards" in md


@needs_root
def test_a_shard_does_not_merge_with_the_whole_campaign(lab_campaigns, tmp_path):
    res = subprocess.run([NETLOOP, "report", "--out", str(tmp_path), str(lab_campaigns["shards"][0]),
                          str(lab_campaigns["whole"])], capture_output=True, text=True, env=_env(), timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("netloop report: shards of different splits: shard 1/2")
    assert list(tmp_path.iterdir()) == []


def _pod_script() -> tuple[str, dict]:
    """The Kubernetes manifest's container: its shell script and its environment."""
    job = yaml.safe_load((RECIPES / "k8s_indexed_job.yaml").read_text())
    assert job["apiVersion"] == "batch/v1" and job["kind"] == "Job"
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["template"]["spec"]["restartPolicy"] == "Never"
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert int(env["SHARDS"]) == spec["completions"] == spec["parallelism"]
    assert container["securityContext"]["privileged"] is True
    assert container["command"] == ["/bin/sh", "-c"]
    return container["args"][0], env


def test_the_kubernetes_pod_runs_the_shard_of_its_index():
    script, env = _pod_script()
    assert env["EXPERIMENT"] == "experiments/sanap_grid_inter_ros2.yaml" and env["SHARDS"] == "4"
    res = subprocess.run(["/bin/sh", "-c", script], cwd=paths.REPO, capture_output=True, text=True, timeout=60,
                         env=_env(**{**env, "RESULTS": "/nonexistent"}, JOB_COMPLETION_INDEX=1, NETLOOP_RUN_ARGS="--dry-run"))
    assert res.returncode == 0, res.stderr
    runs = _shard_runs(env["EXPERIMENT"], 2, 4)
    assert f"shard 2/4 (JOB_COMPLETION_INDEX=1): {len(runs)} run(s), split by sweep point" in res.stdout
    assert _listed_runs(res.stdout) == runs


@needs_root
def test_a_kubernetes_pod_started_again_resumes_its_shard(lab_campaigns):
    script, env = _pod_script()
    shard = lab_campaigns["shards"][1]
    res = subprocess.run(["/bin/sh", "-c", script], cwd=paths.REPO, capture_output=True, text=True, timeout=120,
                         env=_env(EXPERIMENT=lab_campaigns["exp"], SHARDS=2, RESULTS=shard.parent,
                                  JOB_COMPLETION_INDEX=1))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"into {shard}" in res.stdout and "resuming: 2 of 2 cells done, 0 to run" in res.stdout


@pytest.mark.parametrize("first", [0, 1])
def test_the_slurm_script_runs_the_shard_of_its_array_task(first):
    """sbatch --array=0-2 or --array=1-3: the second task runs shard 2/3 either way (pound_fig21's
    2 repetitions in 3 shards: split by cell)."""
    array = {"SLURM_ARRAY_JOB_ID": "77", "SLURM_ARRAY_TASK_MIN": first, "SLURM_ARRAY_TASK_COUNT": 3,
             "SLURM_ARRAY_TASK_ID": first + 1, "SLURM_SUBMIT_DIR": paths.REPO, "NETLOOP_RUN_ARGS": "--dry-run"}
    res = subprocess.run([str(RECIPES / "slurm_array.sh"), "experiments/pound_fig21.yaml"], cwd="/",
                         capture_output=True, text=True, timeout=60, env=_env(**array))
    assert res.returncode == 0, res.stderr
    runs = _shard_runs("experiments/pound_fig21.yaml", 2, 3)
    assert f"shard 2/3 (SLURM_ARRAY_TASK_ID={first + 1} (MIN {first}, STEP 1, COUNT 3)): {len(runs)} run(s)" in res.stdout
    assert _listed_runs(res.stdout) == runs and res.stdout.count("netloop shard: task") == 1


def test_the_slurm_script_outside_an_array_and_an_explicit_shard_inside_one():
    res = subprocess.run([str(RECIPES / "slurm_array.sh"), "experiments/pound_fig21.yaml"], capture_output=True,
                         text=True, timeout=60, env=_env())
    assert res.returncode != 0 and "not a task of a Slurm job array" in res.stderr
    fig21 = str(paths.EXPERIMENTS / "pound_fig21.yaml")
    array = {"SLURM_ARRAY_TASK_MIN": 0, "SLURM_ARRAY_TASK_COUNT": 3}
    res = subprocess.run([NETLOOP, "run", "--shard", "2/3", "--dry-run", fig21], capture_output=True, text=True,
                         timeout=60, env=_env(**array, SLURM_ARRAY_TASK_ID=1))    # the same shard: runs it
    assert res.returncode == 0 and "shard 2/3 (--shard 2/3)" in res.stdout, res.stderr
    res = subprocess.run([NETLOOP, "run", "--shard", "2/3", "--dry-run", fig21], capture_output=True, text=True,
                         timeout=60, env=_env(**array, SLURM_ARRAY_TASK_ID=2))    # another: refused before anything
    assert res.returncode == 2 and res.stdout == ""
    assert "--shard: 2/3 contradicts SLURM_ARRAY_TASK_ID=2 (MIN 0, STEP 1, COUNT 3), which is shard 3/3" in res.stderr
