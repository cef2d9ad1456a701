"""The pre-run checks of what an experiment needs on its machines (netloop.prerun_checks): each
check's one-line error naming the fix, from what the machines answer; then all of them at once
against a robot of the SSH lab (test/sshlab.py, root), and --skip-check."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from netloop import prerun_checks
from netloop.experiment import validate_experiment
from netloop.prerun_checks import CarNeed, Need

sys.path.insert(0, str(Path(__file__).parent))

PWM = {"bus": 1, "address": 0x40}
CAR = CarNeed("robot", "smart_video_car", "real", "", ("camera",), None)
ROBOT = "robot (192.168.1.20)"

TELEOP = {
    "name": "checks", "link": "ethernet", "transport": ["tcp", "udp"],
    "loop": {"type": "teleop", "teleop": {"simulator": "car", "sim": {"hardware": "real"}, "trial": {"duration": 4}},
             "placement": {"car": "robot", "trial": "operator"}},
    "flows": [{"name": "camera", "kind": "topic", "source_topic": "/camera/image/compressed",
               "datatype": "sensor_msgs/CompressedImage", "size_bytes": 6000, "period": 0.1,
               "from": "robot", "to": "operator"},
              {"name": "lidar", "kind": "lidar_bag", "period": 0.05, "from": "robot", "to": "operator"}],
}


def _car_lines(facts: dict, car: CarNeed = CAR) -> dict[str, str]:
    return dict(prerun_checks.car_problems(ROBOT, car, facts, PWM))


@pytest.mark.parametrize("facts, check, words", [
    ({"pca9685": "cannot open /dev/i2c-1: [Errno 2] No such file or directory; is I2C enabled", "board_lock": "free",
      "camera": "ok"}, "pca9685",
     "robot (192.168.1.20): the car's PCA9685 does not answer at 0x40 on I2C bus 1 (cannot open /dev/i2c-1"),
    ({"pca9685": "ok", "board_lock": "pid 2211: /usr/bin/python3 car_node.py __name:=car_driver", "camera": "ok"},
     "board_lock", "robot (192.168.1.20): the car's board is in use by another process there (pid 2211: "),
    ({"pca9685": "ok", "board_lock": "free", "camera": "no camera at /dev/video0"}, "camera",
     "robot (192.168.1.20): flow 'camera' carries the car's camera, but no camera at /dev/video0: plug in"),
])
def test_each_car_check_says_what_is_wrong_and_the_fix_in_one_line(facts, check, words):
    lines = _car_lines(facts)
    assert list(lines) == [check], lines
    line = lines[check]
    assert words in line and "\n" not in line, line
    assert line.endswith(f"(to run anyway: --skip-check {check})"), line
    fixes = {"pca9685": "enable I2C (sudo raspi-config: Interface Options, I2C)", "board_lock": "stop it (a car.launch",
             "camera": "set loop.teleop.sim.camera_device, or install OpenCV there ('make robot CAMERA=1')"}
    assert fixes[check] in line, line


def test_the_camera_is_asked_for_only_when_a_flow_carries_it():
    assert _car_lines({"pca9685": "ok", "board_lock": "free"}, CarNeed("robot", "smart_video_car", "real", "", (),
                                                                        None)) == {}


@pytest.mark.parametrize("need, fix", [
    (Need("node", "teleop_trial", "the teleop trial (the local baseline)"), "it is built by 'make robot'"),
    (Need("command", "rosbag", "flow 'lidar' (rosbag play)"), "sudo apt-get install python3-rosbag"),
    (Need("file", "/usr/lib/topic_tools/relay", "the udp transport's relays of the teleop loop"),
     "sudo apt-get install topic-tools"),
    (Need("node", "nimbro_udp_sender", "the nimbro transport"), "it is built by 'make robot'"),
    (Need("package", "nimbro_topic_transport", "the nimbro transport"), "implementation: own"),
])
def test_a_missing_program_names_what_runs_it_and_how_to_install_it(need, fix):
    line = prerun_checks.program_problem(ROBOT, need)
    assert line.startswith(f"{ROBOT}: {need.name} is not installed there, and {need.why} runs it: "), line
    assert fix in line and line.endswith("(to run anyway: --skip-check programs)") and "\n" not in line


def test_a_closed_udp_path_says_which_address_to_allow():
    line = prerun_checks.clock_problem(ROBOT, "no answer from the clock server at 192.168.1.20:40123 (4 requests)",
                                       "192.168.1.10")
    assert line.startswith(f"{ROBOT}: the clock measurement's UDP datagrams get no answer (no answer from the clock")
    assert "sudo ufw allow from 192.168.1.10" in line and line.endswith("(to run anyway: --skip-check clock_path)")


def test_the_programs_an_experiment_needs_on_each_machine():
    exp = validate_experiment(dict(TELEOP, transport=["tcp", "udp", "nimbro", "priority"]), name="checks")
    needs = {h: {n.word for n in ns} for h, ns in prerun_checks.program_needs(exp, ["robot", "operator"]).items()}
    relays = {f"node:nimbro_{p}_{r}" for p in ("udp", "tcp") for r in ("sender", "receiver")} | {"node:priority_relay"}
    assert needs["operator"] == {"node:teleop_trial"} | relays
    assert needs["robot"] == ({"node:teleop_trial", f"file:{prerun_checks._topic_tools_relay()}", "command:rosbag"}
                              | relays)
    assert prerun_checks.program_needs(validate_experiment(dict(TELEOP, transport=["tcp"], flows=[]), name="c"),
                                       ["robot", "operator"]) == \
        {"operator": [Need("node", "teleop_trial", "the teleop trial")],
         "robot": [Need("node", "teleop_trial", "the teleop trial (the local baseline)")]}


# --- against a robot over SSH ---------------------------------------------------------------------
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces and sshd")


@needs_root
@pytest.mark.timeout(300)
def test_every_check_runs_before_anything_starts_and_each_can_be_skipped(tmp_path):
    """A robot of the lab (no I2C, no camera) whose board another process holds, whose nimbro
    implementation is the real one (not installed) and whose firewall drops UDP: one line per
    problem, nothing started; each --skip-check takes its line away."""
    from sshlab import SshLab
    from netloop.car_driver.board import lock_path
    exp = tmp_path / "checks.yaml"
    doc = dict(TELEOP, transport=["tcp", "nimbro"], transport_options={"nimbro": {"implementation": "nimbro"}})
    exp.write_text(yaml.safe_dump(doc, sort_keys=False))
    held = os.open(lock_path(PWM), os.O_RDWR | os.O_CREAT, 0o666)     # as a hand-started driver holds it
    fcntl.flock(held, fcntl.LOCK_EX)
    os.ftruncate(held, 0)
    os.write(held, f"{os.getpid()} car_node.py __name:=car_driver (this test)\n".encode())
    try:
        with SshLab("ethernet", tmp_path / "lab") as lab:
            drop = lab.testbed.exec_prefix("robot") + ["iptables", "-I", "INPUT", "-p", "udp", "-j", "DROP"]
            subprocess.run(drop, check=True)
            hosts = str(lab.hosts_file())
            r = lab.netloop("run", str(exp), "--out", str(tmp_path / "out"), "--machines", hosts)
            lines = [x.strip() for x in r.stderr.splitlines() if x.strip().startswith("robot (")]
            checks = sorted(x.rsplit("--skip-check ", 1)[1].rstrip(")") for x in lines)
            assert r.returncode == 2 and checks == ["board_lock", "camera", "clock_path", "pca9685", "programs"], \
                r.stdout + r.stderr
            assert any("nimbro_topic_transport is not installed there, and the nimbro transport runs it" in x
                       for x in lines), lines
            assert any(f"in use by another process there (pid {os.getpid()}: car_node.py" in x for x in lines)
            assert any("the car's PCA9685 does not answer at 0x40 on I2C bus 1 (" in x for x in lines)
            assert any("no camera at /dev/video0" in x for x in lines), lines
            assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*/runs/*"))
            skipped = lab.netloop("run", str(exp), "--out", str(tmp_path / "out2"), "--machines", hosts,
                                  *[w for c in ("board_lock", "camera", "clock_path", "programs")
                                    for w in ("--skip-check", c)])
            lines = [x.strip() for x in skipped.stderr.splitlines() if x.strip().startswith("robot (")]
            assert skipped.returncode == 2 and len(lines) == 1 and "--skip-check pca9685" in lines[0], skipped.stderr
            assert lab.ours_in("robot") == []
    finally:
        os.close(held)
    assert json.loads(json.dumps(prerun_checks.CHECKS))   # the names the flag takes
