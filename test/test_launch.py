"""`roslaunch netloop rlc_loop.launch transport:=...` runs the loop and records it."""
from __future__ import annotations

import pytest

from netloop import rosenv
from netloop.analysis.loop_run import LoopRun, analyse_loop_run
from netloop.analysis.records import read_events
from netloop.experiment import expand, for_cell, validate_experiment
from netloop.run_files import RunRecord

pytestmark = pytest.mark.integration


def _one_run(transport: str) -> dict:
    """The experiment as a run's metadata.json records it (what the analysis reads)."""
    exp = validate_experiment({"transport": transport}, name="launch")
    return for_cell(exp, expand(exp)[0]).metadata()


@pytest.mark.parametrize("transport", ["tcp", "udp"])
def test_launch_file_runs_the_loop(roscore, tmp_path, transport):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    launch = roscore.group.start("roslaunch", ["roslaunch", "--wait", "netloop", "rlc_loop.launch",
                                               f"transport:={transport}", "samples:=80",
                                               f"record_dir:={tmp_path}/rec"], env=env)
    assert launch.popen.wait(timeout=90) == 0, launch.log_path.read_text()[-2000:]
    log = launch.log_path.read_text()
    assert f"u over {transport}" in log and f"y over {transport}" in log
    run = LoopRun(tmp_path, meta=RunRecord(experiment=_one_run(transport)),
                  plant=read_events(tmp_path / "rec" / "plant.csv"),
                  controller=read_events(tmp_path / "rec" / "controller.csv"))
    a = analyse_loop_run(run)
    assert a["ok"] and a["samples"] == 80
    assert abs(a["step"]["Overshoot"] - a["baseline_step"]["Overshoot"]) <= 2.0


def test_launch_file_refuses_unknown_transport(roscore, tmp_path):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    launch = roscore.group.start("roslaunch", ["roslaunch", "netloop", "rlc_loop.launch", "transport:=sctp"], env=env)
    launch.popen.wait(timeout=60)  # the required plant exits at once, which ends the launch
    assert "unknown transport 'sctp'; allowed: tcp, tcp_nodelay, udp" in launch.log_path.read_text()
