"""nodes/teleop_markers.py: commanded vs received heading/speed as rviz markers. The geometry
on its own, then the node on a real roscore between the embedded simulator (received odom) and
a commanding rostopic pub, its MarkerArray read back with rostopic echo."""
from __future__ import annotations

import math
import subprocess

import pytest
import yaml

from netloop import paths, rosenv
from netloop.teleop_markers import (MIN_ARROW, Command, ParamError, Received, arrow_end, build_markers,
                                    check_params, commanded_heading, commanded_path, current_command, describe)

RX = Received(x=1.0, y=2.0, heading=math.pi / 2, speed=0.25, frame="odom", stamp=10.0, arrived=10.004)


def test_parameters_default_and_are_checked_by_name():
    assert check_params({}) == {"rate": 10.0, "scale": 2.0, "lookahead": 0.5, "horizon": 1.0,
                                "command_timeout": 0.5}
    assert check_params({"rate": 5})["rate"] == 5.0
    for bad in (0, -1.0, float("nan"), "fast", True):
        with pytest.raises(ParamError, match="~rate: must be a positive number"):
            check_params({"rate": bad})
    with pytest.raises(ParamError, match="~rat: unknown parameter; allowed: command_timeout, horizon, lookahead"):
        check_params({"rat": 5})


def test_commanded_path_is_the_unicycle_of_the_command():
    straight = commanded_path(RX, Command(0.3, 0.0, 10.0), horizon=1.0)
    assert straight[0] == (1.0, 2.0)
    assert straight[-1] == pytest.approx((1.0, 2.3))          # heading +y, 0.3 m in 1 s
    turning = commanded_path(RX, Command(0.3, 0.6, 10.0), horizon=2.0, steps=400)
    # a circle of radius v/w = 0.5 m about the point left of the car (-x of a car heading +y)
    centre = (RX.x - 0.5, RX.y)
    radii = [math.hypot(px - centre[0], py - centre[1]) for px, py in turning]
    assert max(radii) == pytest.approx(0.5, abs=2e-3) and min(radii) == pytest.approx(0.5, abs=2e-3)
    assert commanded_heading(RX, Command(0.3, 0.6, 10.0), lookahead=0.5) == pytest.approx(math.pi / 2 + 0.3)


def test_arrows_scale_with_speed_and_point_back_when_reversing():
    assert arrow_end(0, 0, 0.0, 0.2, scale=2.0) == pytest.approx((0.4, 0.0))
    assert arrow_end(0, 0, 0.0, -0.2, scale=2.0) == pytest.approx((-0.4, 0.0))
    assert arrow_end(0, 0, math.pi / 2, 0.0, scale=2.0) == pytest.approx((0.0, MIN_ARROW))


def test_a_command_older_than_the_timeout_counts_as_zero():
    cmd = Command(0.3, 0.5, sent=10.0)
    assert current_command(cmd, 10.4, timeout=0.5) is cmd
    stale = current_command(cmd, 10.6, timeout=0.5)
    assert (stale.speed, stale.turn) == (0.0, 0.0)
    assert current_command(None, 3.0, timeout=0.5).speed == 0.0


def test_markers_and_text():
    pytest.importorskip("visualization_msgs.msg")
    now = 10.050
    arr = build_markers(RX, Command(0.3, -0.4, 10.030), now, check_params({}))
    by_ns = {m.ns: m for m in arr.markers}
    assert set(by_ns) == {"received", "commanded", "commanded_path", "numbers"}
    assert {m.header.frame_id for m in arr.markers} == {"odom"}
    received, commanded = by_ns["received"].points, by_ns["commanded"].points
    assert (received[1].x - received[0].x, received[1].y - received[0].y) == pytest.approx((0.0, 0.5))
    heading = math.atan2(commanded[1].y - commanded[0].y, commanded[1].x - commanded[0].x)
    assert heading == pytest.approx(math.pi / 2 - 0.2)
    assert math.hypot(commanded[1].x - commanded[0].x, commanded[1].y - commanded[0].y) == pytest.approx(0.6)
    assert by_ns["numbers"].text == describe(RX, Command(0.3, -0.4, 10.030), now)
    assert "cmd  v +0.30 m/s  turn -0.40 rad/s  (20 ms ago)" in by_ns["numbers"].text
    assert "odom v +0.25 m/s  heading +90.0 deg  (age 50 ms)" in by_ns["numbers"].text


@pytest.mark.integration
def test_node_draws_what_the_simulated_car_receives_and_is_commanded(roscore, tmp_path):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    group = roscore.group
    group.start("sim", [str(paths.node_binary("sim_node.py")), "__name:=sim", "_camera:=false", "_scan:=false"],
                env=env)
    group.start("markers", [str(paths.node_binary("teleop_markers.py")), "__name:=teleop_markers", "_rate:=20"],
                env=env)
    group.start("cmd", ["rostopic", "pub", "-r", "20", "/cmd_vel", "geometry_msgs/Twist",
                        "{linear: {x: 0.2}, angular: {z: 0.5}}"], env=env)
    # let the car drive for a while, then read one MarkerArray
    out = subprocess.run(["timeout", "60", "sh", "-c", "sleep 3; rostopic echo -n 1 /teleop_markers"],
                         env=env, capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr + out.stdout
    doc = next(d for d in yaml.safe_load_all(out.stdout) if d)
    by_ns = {m["ns"]: m for m in doc["markers"]}
    assert set(by_ns) == {"received", "commanded", "commanded_path", "numbers"}
    text = by_ns["numbers"]["text"]
    assert "cmd  v +0.20 m/s  turn +0.50 rad/s" in text, text
    # the car moves: the received speed (from the simulator's odom) is close to the command
    received_v = float(text.split("odom v ")[1].split()[0])
    assert received_v == pytest.approx(0.2, abs=0.05), text
    start, end = (by_ns["commanded"]["points"][i] for i in (0, 1))
    assert math.hypot(end["x"] - start["x"], end["y"] - start["y"]) == pytest.approx(0.4, abs=1e-6)
    assert len(by_ns["commanded_path"]["points"]) == 21
