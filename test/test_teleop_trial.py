"""The scripted teleop trial (controllers/teleop_trial.cpp) drives the embedded simulator
through its speed and heading steps over loopback, and its record is readable.

tcp_nodelay runs through `roslaunch netloop teleop.launch trial:=true` as a user would; udp
runs the binary as the runner would, with the odometry behind a roscpp relay (rospy, and so
the simulator, cannot publish over UDPROS), and checks that UDPROS was negotiated."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest
import yaml
from registrations import forget_node

from netloop import paths, rosenv
from netloop.analysis.records import read_events
from netloop.master import wait_for

pytestmark = pytest.mark.integration

# the heading judged over the last second, 2-3 s after its step, as in the launch's run
TRIAL = {"duration": 6.0, "speed_step_time": 1.0, "heading_step_time": 3.0}
LAUNCH_DURATION = 7.0   # the launch's node steps the heading at the config file's 4.0 s


def _start_sim(roscore, env):
    return roscore.group.start("sim", [str(paths.node_binary("sim_node.py")), "__name:=sim", "_camera:=false"],
                               env=env)


@pytest.mark.parametrize("transport", ["tcp_nodelay", "udp"])
def test_trial_drives_the_simulated_car_through_its_steps(roscore, tmp_path, transport):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    sim = _start_sim(roscore, env)
    record = tmp_path / "rec" / "teleop_trial.csv"
    if transport == "tcp_nodelay":
        trial = roscore.group.start("trial", [
            "roslaunch", "netloop", "teleop.launch", "trial:=true", f"transport:={transport}",
            f"record_dir:={record.parent}", f"duration:={LAUNCH_DURATION}"], env=env)
        # the launch's node uses the config file's step times: 1.0 s and 4.0 s
        steps = yaml.safe_load((paths.REPO / "controllers/config/teleop_trial.yaml").read_text())
        steps.update(duration=LAUNCH_DURATION)
    else:
        roscore.group.start("relay", ["/usr/lib/topic_tools/relay", "odom", "odom_net"], env=env)
        steps = yaml.safe_load((paths.REPO / "controllers/config/teleop_trial.yaml").read_text())
        steps.update(TRIAL, transport=transport, record_path=str(record))
        roscore.set_params(steps, "/teleop_trial")
        trial = roscore.group.start("trial", [str(paths.node_binary("teleop_trial")), "__name:=teleop_trial",
                                              "odom:=odom_net"], env=env)
        # while it runs: the odometry subscription is UDPROS
        uri = None

        def subscribed():
            nonlocal uri
            try:
                uri = uri or roscore.lookup_node("/teleop_trial")
                return any(c["topic"] == "/odom_net" and c["connected"] for c in roscore.bus_info(uri))
            except Exception:  # noqa: BLE001 - not registered yet
                return False

        assert wait_for(subscribed, 30), trial.log_path.read_text()[-2000:]
        links = [c for c in roscore.bus_info(uri) if c["topic"] == "/odom_net"]
        assert [c["transport"] for c in links] == ["UDPROS"], links
    assert trial.popen.wait(timeout=90) == 0, trial.log_path.read_text()[-3000:]
    log = trial.log_path.read_text()
    assert f"over {transport}" in log and "teleop_trial: done after" in log

    ev = read_events(record)
    assert ev.truncated_rows == 0
    ref_v, ref_h = ev.select("ref", "ref_speed"), ev.select("ref", "ref_heading")
    speed, heading = ev.select("rx", "speed"), ev.select("rx", "heading")
    cmd_v, cmd_w = ev.select("tx", "cmd_speed"), ev.select("tx", "cmd_turn")
    assert list(ref_v.value) == pytest.approx([steps["speed_initial"], steps["speed_step"]])
    t0 = ref_v.stamp_ns[0]
    assert (ref_v.stamp_ns[1] - t0) / 1e9 == pytest.approx(steps["speed_step_time"], abs=0.06)
    assert ref_h.value[1] - ref_h.value[0] == pytest.approx(steps["heading_step"])
    assert (ref_h.stamp_ns[1] - t0) / 1e9 == pytest.approx(steps["heading_step_time"], abs=0.06)
    # two rows per odometry message, same seq and stamps; received at ~50 Hz, delays small
    assert np.array_equal(speed.seq, heading.seq) and np.array_equal(speed.recv_ns, heading.recv_ns)
    assert len(speed) > 40 * steps["duration"] and np.all(np.diff(speed.seq) > 0)
    delay_ms = (speed.recv_ns - speed.stamp_ns) / 1e6
    assert 0 < np.median(delay_ms) < 20
    # commands at 20 Hz, each answering an odometry message that was received
    assert abs(len(cmd_v) - 20 * steps["duration"] - 5) <= 2 and np.array_equal(cmd_v.seq, cmd_w.seq)
    assert set(cmd_v.answer_seq) <= set(speed.seq)
    assert cmd_v.value[-1] == 0.0 and cmd_w.value[-1] == 0.0           # stopped at the end
    # the responses: speed settles at the step before the heading step, heading reaches +45 deg
    t = (speed.stamp_ns - t0) / 1e9
    before_turn = (t > steps["heading_step_time"] - 0.8) & (t < steps["heading_step_time"])
    assert np.mean(speed.value[before_turn]) == pytest.approx(steps["speed_step"], abs=0.03)
    assert np.all(np.abs(speed.value[t < steps["speed_step_time"]]) < 0.02)
    end = (t > steps["duration"] - 1.0) & (t < steps["duration"])
    assert np.mean(heading.value[end]) - heading.value[0] == pytest.approx(math.pi / 4, abs=0.05)
    roscore.group.stop(sim)


def test_trial_refuses_bad_parameters(roscore, tmp_path):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    trial = roscore.group.start("trial", [str(paths.node_binary("teleop_trial")), "__name:=teleop_trial",
                                          "_transport:=sctp"], env=env)
    assert trial.popen.wait(timeout=30) == 2
    forget_node(roscore, "/teleop_trial")   # it exited without unregistering: the master stays clean
    assert "unknown transport 'sctp'; allowed: tcp, tcp_nodelay, udp" in trial.log_path.read_text()
    trial = roscore.group.start("trial2", [str(paths.node_binary("teleop_trial")), "__name:=teleop_trial2",
                                           "_rate:=-5"], env=env)
    assert trial.popen.wait(timeout=30) == 2
    forget_node(roscore, "/teleop_trial2")
    assert "/teleop_trial2/rate = -5 is invalid" in trial.log_path.read_text()


def test_trial_gives_up_without_odometry(roscore, tmp_path):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    trial = roscore.group.start("trial", [str(paths.node_binary("teleop_trial")), "__name:=teleop_trial",
                                          "_wait_timeout:=1.0"], env=env)
    assert trial.popen.wait(timeout=30) == 1
    assert "no odometry received" in trial.log_path.read_text()


def _commanded_speed(record) -> float:
    """The highest speed the trial has commanded so far (0 while its record is being written)."""
    try:
        cmd_v = read_events(record).select("tx", "cmd_speed")
        return float(cmd_v.value.max()) if len(cmd_v) else 0.0
    except Exception:  # noqa: BLE001 - a row half written
        return 0.0


def test_trial_interrupted_stops_the_car_first(roscore, tmp_path):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    sim = _start_sim(roscore, env)
    record = tmp_path / "trial.csv"
    trial = roscore.group.start("trial", [str(paths.node_binary("teleop_trial")), "__name:=teleop_trial",
                                          "_duration:=60", f"_record_path:={record}"], env=env)
    # the record is written as it happens (the log only when flushed): the trial has started
    assert wait_for(lambda: record.exists() and "ref_speed" in record.read_text(), 30), trial.log_path.read_text()
    # moving at 0.3 m/s by now: the speed step commanded (polled; was a fixed 2 s)
    assert wait_for(lambda: _commanded_speed(record) > 0.2, 30), trial.log_path.read_text()
    time.sleep(0.2)
    assert roscore.group.stop(trial) == 130
    ev = read_events(record)
    cmd_v = ev.select("tx", "cmd_speed")
    assert cmd_v.value.max() > 0.2 and list(cmd_v.value[-5:]) == [0.0] * 5
    assert "interrupted after" in trial.log_path.read_text()
    roscore.group.stop(sim)
