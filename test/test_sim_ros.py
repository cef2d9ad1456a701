"""The embedded simulator as a ROS node on the robot host of a testbed (ethernet profile:
two network namespaces joined by a veth), with the operator side subscribing across the link.

One scenario (about 20 s) is run once for the module (once more if the simulator fell behind
real time; timing is asserted only on a run that kept up, as for the link emulators): the master and ``sim_node.py`` (the
catkin relay, as roslaunch runs it) on the robot, in the arena at (2, -3, yaw 0.3); the probe
(this file run as a script) on the operator: it subscribes odom, scan, camera/image_raw and
camera/image_raw/compressed, measures them at rest, then drives forward, turns left and stops
sending commands. Every test checks one aspect of what the probe saw. Everything is stopped
and the namespaces are removed before the tests look at the results.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

START = (2.0, -3.0, 0.3)     # base_link pose in the arena (x, y, yaw)
CAMERA_RATE, SCAN_RATE = 15.0, 10.0

pytestmark = pytest.mark.integration
needs_root = [pytest.mark.root, pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")]


def _run_scenario(d: Path) -> dict:
    """The scenario once, in directory ``d``: what the probe saw, the simulator's log and
    exit status, and what was left running."""
    from netloop import paths, rosenv
    from netloop.master import RosMaster
    from netloop.processes import ProcessGroup
    from netloop.testbed import Testbed, load_profile

    out = d / "probe.json"
    result: dict = {}
    with Testbed(load_profile("ethernet"), log_dir=d / "testbed") as tb:
        namespaces = [tb.netns(h) for h in tb.hosts]
        with ProcessGroup(d / "logs") as group:
            env = dict(rosenv.base_env(), ROS_LOG_DIR=str(d / "ros"), ROS_HOME=str(d / "ros"))
            master = RosMaster(group, env, address=tb.address("robot"), prefix=tb.exec_prefix("robot"),
                               netns=tb.netns("robot")).start()
            try:
                x, y, yaw = START
                sim = group.start("sim", [str(paths.node_binary("sim_node.py")), "__name:=sim", "_world:=arena",
                                          f"_x:={x}", f"_y:={y}", f"_yaw:={yaw}", f"_camera_rate:={CAMERA_RATE}",
                                          "_watchdog_timeout:=0.25"],
                                  env=rosenv.node_env(master.uri, tb.address("robot"), d / "ros"),
                                  prefix=tb.exec_prefix("robot"))
                probe = group.start("probe", [sys.executable, __file__, str(out)],
                                    env=rosenv.node_env(master.uri, tb.address("operator"), d / "ros"),
                                    prefix=tb.exec_prefix("operator"))
                try:
                    result["probe_status"] = probe.popen.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    result["probe_status"] = "timeout"
                result["sim_status"] = group.stop(sim)
            finally:
                master.rpc_caller.close()
        result["processes_alive"] = [p.name for p in group.processes if p.poll() is None]
        result["sim_log"] = (d / "logs" / "sim.log").read_text(errors="replace")
        result["probe_log"] = (d / "logs" / "probe.log").read_text(errors="replace")
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    result["namespaces_left"] = [n for n in namespaces if n and n in listed]
    assert result["probe_status"] == 0, result["probe_log"][-3000:] + "\n--- sim ---\n" + result["sim_log"][-3000:]
    result.update(json.loads(out.read_text()))
    return result


def _lag(result: dict) -> str | None:
    """How the simulator fell behind real time in a scenario (None: it kept up): the median
    of its once-a-second real-time factors under 0.97, or more than a tenth of the seconds
    warned for (a shared machine may take the CPU away for one window now and then)."""
    rtf = result["rtf"]
    warnings = re.findall(r"real-time factor [0-9.]+ <", result["sim_log"].split("stopped after")[0])
    if len(rtf) >= 10 and np.median(rtf) > 0.97 and len(warnings) <= len(rtf) // 10:
        return None
    return (f"real-time factor median {np.median(rtf) if rtf else float('nan'):.2f} over {len(rtf)} s, "
            f"{len(warnings)} s warned for")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    """The scenario; run once more when the simulator fell behind real time (at a load
    average of 8 its real-time factor had a median of 0.36, and the car drove and the camera
    published at that fraction of the rates asserted); ``lagged`` says how, when it fell
    behind in both runs (the timing tests are then expected failures with that reason)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    first = _run_scenario(tmp_path_factory.mktemp("sim_ros"))
    lag = _lag(first)
    if lag is None:
        return dict(first, lagged=None)
    second = _run_scenario(tmp_path_factory.mktemp("sim_ros_again"))
    again = _lag(second)
    return dict(second, lagged=None if again is None else f"first run: {lag}; second run: {again}")


def timing_checked(scenario: dict) -> None:
    """Timing is checked only on a scenario whose simulator kept real time (link_health's
    policy for emulators): otherwise the test is an expected failure naming the lag."""
    if scenario["lagged"]:
        pytest.xfail("the simulator fell behind real time in both runs (machine busy): " + scenario["lagged"])


@pytest.mark.root
def test_nothing_left_behind(scenario):
    assert scenario["processes_alive"] == [] and scenario["namespaces_left"] == []
    assert scenario["sim_status"] == 0, scenario["sim_log"][-2000:]
    assert "real-time factor min" in scenario["sim_log"]
    # ~rtf once per second, and real time kept (_lag: the median over 0.97, at most a tenth of
    # the seconds warned for)
    timing_checked(scenario)
    assert _lag(scenario) is None, scenario["rtf"]


@pytest.mark.root
def test_forward_moves_the_car_to_plus_x_in_odom(scenario):
    timing_checked(scenario)
    (x0, y0, yaw0), (x1, y1, yaw1) = scenario["forward"]
    assert x1 - x0 > 0.4                                   # 0.3 m/s for 2 s, heading 0.3 rad
    heading = math.atan2(y1 - y0, x1 - x0)
    assert abs(heading - START[2]) < 0.1 and abs(yaw1 - yaw0) < 0.1
    speeds = [o[5] for o in scenario["odom"] if scenario["t_forward"][0] + 0.8 < o[0] < scenario["t_forward"][1]]
    assert speeds and abs(np.median(speeds) - 0.3) < 0.03     # twist.linear.x in base_link


@pytest.mark.root
def test_positive_angular_z_increases_yaw(scenario):
    timing_checked(scenario)
    (_, _, yaw0), (_, _, yaw1) = scenario["turn"]
    assert yaw1 - yaw0 > 0.5
    rates = [o[6] for o in scenario["odom"] if scenario["t_turn"][0] + 0.8 < o[0] < scenario["t_turn"][1]]
    assert np.median(rates) > 0.3


@pytest.mark.root
def test_camera_and_scan_rates_and_sizes(scenario):
    t0, t1 = scenario["t_rates"]

    def rate(rows):
        stamps = sorted(r[1] for r in rows if t0 <= r[0] <= t1)
        assert len(stamps) > 5
        return (len(stamps) - 1) / (stamps[-1] - stamps[0])

    for _, _, width, height, encoding, size, step in scenario["image"]:
        assert (width, height, encoding, step, size) == (320, 240, "rgb8", 960, 320 * 240 * 3)
    for _, _, fmt, size, magic in scenario["jpeg"]:
        assert fmt == "jpeg" and magic and 1000 < size < 320 * 240 * 3
    assert all(r[2] == 360 for r in scenario["scan"])
    assert scenario["tf_children"] and "base_link" in scenario["tf_children"]
    assert {"laser", "camera_optical_frame"} <= set(scenario["tf_static_children"])
    timing_checked(scenario)
    assert rate(scenario["image"]) == pytest.approx(CAMERA_RATE, rel=0.15)
    assert rate(scenario["jpeg"]) == pytest.approx(CAMERA_RATE, rel=0.15)
    assert rate(scenario["scan"]) == pytest.approx(SCAN_RATE, rel=0.15)


@pytest.mark.root
def test_scan_matches_the_arena_geometry(scenario):
    from test_sim_core import expected_ranges
    x, y, yaw = scenario["rest_pose"]
    ranges = np.array([math.inf if r is None else r for r in scenario["rest_scan"]])
    want, _ = expected_ranges("arena", x, y, yaw)
    assert np.isfinite(ranges).all()
    err = np.abs(ranges - want)
    assert err.max() < 0.02, (err.max(), int(np.argmax(err)))
    assert scenario["rest_scan_meta"] == pytest.approx([-math.pi, 2 * math.pi / 360, 0.15, 12.0], abs=1e-5)


@pytest.mark.root
def test_watchdog_stops_the_car(scenario):
    timing_checked(scenario)
    t_last = scenario["t_last_cmd"]
    moving = [o[5] for o in scenario["odom"] if t_last - 0.3 < o[0] < t_last]
    after = [o[5] for o in scenario["odom"] if t_last + 0.7 < o[0] < t_last + 1.5]
    assert min(moving) > 0.1
    assert after and max(abs(v) for v in after) < 0.02
    stopped_at = next(o[0] for o in scenario["odom"] if o[0] > t_last and abs(o[5]) < 0.02)
    assert stopped_at - t_last < 0.6
    assert "watchdog: no command for" in scenario["sim_log"]


def test_use_sim_time_publishes_clock_and_stamps_with_it(roscore, tmp_path):
    """On loopback: with /use_sim_time the simulator publishes /clock and stamps with it."""
    from netloop import paths, rosenv
    roscore.set_params({"use_sim_time": True})
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    roscore.group.start("sim", [str(paths.node_binary("sim_node.py")), "__name:=sim", "_camera:=false",
                                "_world:=tunnel"], env=env)
    out = {}
    for topic in ("/clock", "/odom/header/stamp", "/scan/header/stamp"):
        r = subprocess.run(["rostopic", "echo", "-n", "1", topic], env=env, capture_output=True, text=True, timeout=60)
        out[topic] = r.stdout
    clock = [int(line.split(":")[1]) for line in out["/clock"].splitlines() if "secs:" in line and "nsecs" not in line]
    assert clock and 0 <= clock[0] < 60, out                            # simulated seconds since start
    for topic in ("/odom/header/stamp", "/scan/header/stamp"):
        secs = [int(line.split(":")[1]) for line in out[topic].splitlines() if line.startswith("secs:")]
        assert secs and secs[0] < 60, out[topic]


@pytest.mark.parametrize("arg,message", [
    ("_world:=nowhere", "unknown world 'nowhere'; available: arena, tunnel"),
    ("_urdf:=/nonexistent/car.urdf", "URDF '/nonexistent/car.urdf' does not exist"),
    ("_physics_rate:=5", "~physics_rate: 5 is out of range"),
])
def test_sim_node_refuses_bad_configuration(roscore, tmp_path, arg, message):
    from netloop import paths, rosenv
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    node = roscore.group.start("sim", [str(paths.node_binary("sim_node.py")), "__name:=sim", arg], env=env)
    assert node.popen.wait(timeout=60) == 2
    log = node.log_path.read_text()
    assert "sim: refused, nothing started" in log and message in log, log[-2000:]


# -- the operator-side probe (run in the operator namespace as a script) --------------------------
def probe(out_path: str) -> int:
    import threading

    import rospy
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import CompressedImage, Image, LaserScan
    from std_msgs.msg import Float64
    from tf2_msgs.msg import TFMessage

    rospy.init_node("operator_probe", disable_signals=True)
    lock = threading.Lock()
    d = {"odom": [], "scan": [], "image": [], "jpeg": [], "tf_children": [], "tf_static_children": [], "rtf": []}
    last_scan = {}

    def yaw_of(q):
        return math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))

    def on_odom(m):
        p, t = m.pose.pose, m.twist.twist
        with lock:
            d["odom"].append((time.time(), m.header.stamp.to_sec(), p.position.x, p.position.y,
                              yaw_of(p.orientation), t.linear.x, t.angular.z))

    def on_scan(m):
        with lock:
            d["scan"].append((time.time(), m.header.stamp.to_sec(), len(m.ranges)))
            last_scan["msg"] = m

    def on_image(m):
        with lock:
            d["image"].append((time.time(), m.header.stamp.to_sec(), m.width, m.height, m.encoding, len(m.data),
                               m.step))

    def on_jpeg(m):
        with lock:
            d["jpeg"].append((time.time(), m.header.stamp.to_sec(), m.format, len(m.data),
                              bytes(m.data[:2]) == b"\xff\xd8"))

    def on_tf(key):
        def cb(m):
            with lock:
                d[key] = sorted(set(d[key]) | {t.child_frame_id for t in m.transforms})
        return cb

    subs = [rospy.Subscriber("odom", Odometry, on_odom, queue_size=100),
            rospy.Subscriber("scan", LaserScan, on_scan, queue_size=10),
            rospy.Subscriber("camera/image_raw", Image, on_image, queue_size=10, buff_size=2 ** 22),
            rospy.Subscriber("camera/image_raw/compressed", CompressedImage, on_jpeg, queue_size=10),
            rospy.Subscriber("/tf", TFMessage, on_tf("tf_children"), queue_size=50),
            rospy.Subscriber("/tf_static", TFMessage, on_tf("tf_static_children"), queue_size=5),
            rospy.Subscriber("/sim/rtf", Float64, lambda m: d["rtf"].append(m.data), queue_size=5)]
    pub = rospy.Publisher("cmd_vel", Twist, queue_size=1)

    def wait(cond, timeout, what):
        end = time.time() + timeout
        while not cond():
            if time.time() > end:
                raise SystemExit(f"probe: timed out waiting for {what}")
            time.sleep(0.02)

    def pose():
        with lock:
            return list(d["odom"][-1][2:5])

    def send(v, w, seconds):
        t0 = time.time()
        while time.time() - t0 < seconds:
            msg = Twist()
            msg.linear.x, msg.angular.z = v, w
            pub.publish(msg)
            time.sleep(0.05)
        return t0, time.time()

    wait(lambda: d["odom"] and d["scan"] and d["image"] and d["jpeg"] and pub.get_num_connections() > 0,
         60, "odom, scan, camera and a cmd_vel subscriber")
    time.sleep(1.0)
    t_now = time.time()
    wait(lambda: d["scan"][-1][1] > t_now + 0.05, 5, "a scan at rest")
    with lock:
        m = last_scan["msg"]
        d["rest_scan"] = [None if math.isinf(r) else r for r in m.ranges]
        d["rest_scan_meta"] = [m.angle_min, m.angle_increment, m.range_min, m.range_max]
    d["rest_pose"] = pose()
    t0 = time.time()
    time.sleep(4.0)
    d["t_rates"] = (t0, time.time())
    before = pose()
    d["t_forward"] = send(0.3, 0.0, 2.0)
    d["forward"] = (before, pose())
    before = pose()
    d["t_turn"] = send(0.2, 0.8, 2.0)
    d["turn"] = (before, pose())
    d["t_last_cmd"] = time.time()
    time.sleep(1.8)
    for s in subs:
        s.unregister()
    with lock:
        Path(out_path).write_text(json.dumps(d))
    rospy.signal_shutdown("done")
    return 0


if __name__ == "__main__":
    sys.exit(probe(sys.argv[1]))
