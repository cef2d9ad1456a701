"""The car driver node for real: rospy node with fake hardware against a real roscore.

It publishes Twists with rostopic, reads the fake PCA9685 registers and GPIO levels that the node
dumps (``~fake_state_file``), and checks that the motors run, that the watchdog stops them when
the commands stop, that the camera is published as JPEG, and that SIGINT leaves them off.
Every process is started in its own session and stopped by its PID (process group)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import xmlrpc.client
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NODE = REPO / "car_driver" / "car_node.py"
pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """PIDs of all processes below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for kid in children.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


class Procs:
    def __init__(self, env, logdir: Path):
        self.env, self.logdir, self.procs = env, logdir, []

    def start(self, name, cmd):
        log = open(self.logdir / f"{name}.log", "wb")
        p = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        p.name = name
        self.procs.append(p)
        return p

    @staticmethod
    def stop(p, sig=signal.SIGINT, timeout=10.0):
        kids = descendants(p.pid)   # roslaunch puts its children in sessions of their own
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
            except ProcessLookupError:
                pass
        # anything left in the group or below it (roscore's rosmaster/rosout) goes too
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for kid in kids:
            try:
                os.kill(kid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def log(self, name):
        path = self.logdir / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def close(self):
        for p in reversed(self.procs):
            self.stop(p)


@pytest.fixture
def ros(tmp_path):
    port = free_port()
    env = dict(os.environ)
    env.update(PATH="/usr/bin:" + env.get("PATH", ""), ROS_MASTER_URI=f"http://127.0.0.1:{port}/",
               ROS_IP="127.0.0.1", ROS_HOME=str(tmp_path / "ros"), ROS_LOG_DIR=str(tmp_path / "ros"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")])))
    env.pop("ROS_HOSTNAME", None)
    procs = Procs(env, tmp_path)
    try:
        core = procs.start("roscore", ["roscore", "-p", str(port)])
        master = xmlrpc.client.ServerProxy(env["ROS_MASTER_URI"])
        deadline = time.monotonic() + 20
        while True:
            assert core.poll() is None, procs.log("roscore")
            try:
                if master.getPid("/test")[0] == 1:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "roscore did not come up:\n" + procs.log("roscore")
            time.sleep(0.1)
        yield procs
    finally:
        procs.close()


def read_state(path: Path):
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def wait_for(path: Path, cond, timeout: float, what: str, procs: Procs):
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        state = read_state(path)
        if state is not None and cond(state):
            return state
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}; last state: "
                         f"{state and state.get('controller')}\nnode log:\n{procs.log('car_node')}")


def duty(state, ch):
    return state["pca9685"]["channels"][str(ch)]["duty"]


def pins(state):
    return {int(k): v for k, v in state["gpio"].items()}


def twist_publisher(procs, name, x, z):
    return procs.start(name, ["rostopic", "pub", "-r", "20", "/cmd_vel", "geometry_msgs/Twist",
                              f"{{linear: {{x: {x}}}, angular: {{z: {z}}}}}"])


def test_node_drives_fake_car_and_stops(ros, tmp_path):
    state_file = tmp_path / "car_state.json"
    node = ros.start("car_node", [sys.executable, str(NODE), "__name:=car_driver", "_hardware:=fake",
                                  f"_fake_state_file:={state_file}", "_watchdog_timeout:=0.25",
                                  "_camera_rate:=10"])
    s = wait_for(state_file, lambda s: s["pca9685"]["prescale"] == 101, 20, "the node to start", ros)
    assert not s["pca9685"]["sleeping"] and s["pca9685"]["channels"]["0"]["off"] == 450
    assert duty(s, 4) == 0 and set(pins(s).values()) == {0}

    # forward at 0.3 m/s turning left: 50 % duty, L298N forward pins, steering left of centre
    pub = twist_publisher(ros, "pub1", 0.3, 0.5)
    s = wait_for(state_file, lambda s: s["controller"]["running"], 15, "motors to run", ros)
    assert duty(s, 4) == duty(s, 5) == 0.5
    assert pins(s) == {17: 1, 18: 0, 27: 1, 22: 0}
    assert s["pca9685"]["channels"]["0"]["off"] < 450

    # the camera is on the topic as JPEG
    out = subprocess.run(["rostopic", "echo", "-n", "1", "/camera/image/compressed/format"],
                         env=ros.env, capture_output=True, text=True, timeout=20)
    assert "jpeg" in out.stdout, out.stdout + out.stderr

    # commands stop -> the watchdog stops the motors within a few tenths of a second
    ros.stop(pub)
    t0 = time.monotonic()
    s = wait_for(state_file, lambda s: not s["controller"]["running"], 3, "the watchdog", ros)
    assert time.monotonic() - t0 < 1.5
    assert "watchdog" in s["controller"]["stop_reason"]
    assert duty(s, 4) == duty(s, 5) == 0 and set(pins(s).values()) == {0}

    # running again, then SIGINT while commands still arrive: everything off
    pub = twist_publisher(ros, "pub2", -0.2, 0.0)
    s = wait_for(state_file, lambda s: s["controller"]["running"], 15, "motors to run again", ros)
    assert pins(s) == {17: 0, 18: 1, 27: 0, 22: 1}
    ros.stop(node)   # SIGINT
    assert node.returncode == 0, f"the node did not end cleanly on SIGINT (code {node.returncode})\n" \
                                 + ros.log("car_node")
    s = read_state(state_file)
    assert s["controller"]["shut_down"], ros.log("car_node")
    assert duty(s, 4) == duty(s, 5) == 0, "motor enable PWM (CH4/CH5) still on after SIGINT"
    assert set(pins(s).values()) == {0}, f"L298N direction pins not all low after SIGINT: {pins(s)}"
    assert all(ch["duty"] == 0 for ch in s["pca9685"]["channels"].values())
    ros.stop(pub)


def _fake_board(board: Path):
    """This test's view of the node's fake board (its register and pin files)."""
    sys.path.insert(0, str(REPO / "src"))
    from netloop.car_driver.board import fake_device_file, fake_levels_file
    from netloop.car_driver.fakes import FakeGPIO, FakePCA9685Bus
    board.mkdir(parents=True, exist_ok=True)
    return FakePCA9685Bus(device_file=fake_device_file(str(board))), FakeGPIO(fake_levels_file(str(board)))


def _poll(cond, timeout: float, every: float = 0.005):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


def _start_driving(ros, tmp_path, board: Path, record: Path):
    node = ros.start("car_node", [sys.executable, str(NODE), "__name:=car_driver", "_hardware:=fake",
                                  f"_fake_device_dir:={board}", f"_failsafe_record:={record}", "_camera:=false"])
    chip, pins = _fake_board(board)
    pub = twist_publisher(ros, "pub", 0.3, 0.0)
    assert _poll(lambda: chip.duty(4) == chip.duty(5) == 0.5, 30), ros.log("car_node")
    return node, pub, chip, pins


def test_a_killed_driver_leaves_every_motor_channel_off_within_half_a_second(ros, tmp_path):
    """SIGKILL: no shutdown hook runs in the node; its fail-safe stop (a process of its own that
    sees the driver's pipe close) turns every PWM output off and the L298N's pins low. A second
    driver of the same board is refused meanwhile, naming the first."""
    board, record = tmp_path / "board", tmp_path / "failsafe.json"
    node, pub, chip, pins = _start_driving(ros, tmp_path, board, record)
    assert pins.levels == {17: 1, 18: 0, 27: 1, 22: 0}
    second = ros.start("car_node2", [sys.executable, str(NODE), "__name:=car_driver2", "_hardware:=fake",
                                     f"_fake_device_dir:={board}", "_camera:=false"])
    assert second.wait(30) == 2
    assert f"is in use by another process (pid {node.pid}: " in ros.log("car_node2"), ros.log("car_node2")
    assert chip.duty(4) == 0.5                                   # the refused driver touched nothing
    os.kill(node.pid, signal.SIGKILL)
    killed = time.monotonic()
    assert _poll(lambda: chip.duty(4) == chip.duty(5) == 0, 0.5), \
        f"motor channels still {chip.duty(4)}, {chip.duty(5)} 0.5 s after SIGKILL"
    assert time.monotonic() - killed < 0.5
    assert _poll(lambda: all(chip.duty(n) == 0 for n in range(16)), 0.5)      # every PWM output
    assert _poll(lambda: set(pins.levels.values()) == {0}, 0.5), pins.levels  # L298N: IN1 = IN2 = L
    assert _poll(record.exists, 2)
    rec = json.loads(record.read_text())
    assert rec["stopped"] and rec["errors"] == [] and rec["driver_pid"] == node.pid, rec
    assert rec["done"] - rec["seen"] < 0.5 and "the driver ended" in rec["why"]
    ros.stop(pub)


def test_a_failsafe_stop_that_cannot_write_says_so(ros, tmp_path):
    """The chip stops answering (every process sees the fake's fail switch), then the driver is
    killed: the fail-safe stop retries each write, then reports the failure, not a stop."""
    board, record = tmp_path / "board", tmp_path / "failsafe.json"
    node, pub, chip, _ = _start_driving(ros, tmp_path, board, record)
    chip.fail = True
    os.kill(node.pid, signal.SIGKILL)
    assert _poll(record.exists, 5), ros.log("car_node")
    rec = json.loads(record.read_text())
    assert not rec["stopped"], rec
    assert rec["errors"][0].startswith("every PWM output off: ") and "after 15 attempts" in rec["errors"][0]
    assert "car failsafe: the driver ended (its pipe closed); STOP FAILED" in ros.log("car_node")
    ros.stop(pub)


def test_node_refuses_unknown_car(ros):
    node = ros.start("car_node", [sys.executable, str(NODE), "_hardware:=fake", "_car:=smart_car"])
    assert node.wait(30) == 2
    log = ros.log("car_node")
    assert "unknown car profile 'smart_car'" in log and "picar_v, smart_video_car" in log


def test_launch_file_resolves_the_node_and_its_args(tmp_path):
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""), ROS_HOME=str(tmp_path),
               ROS_PACKAGE_PATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("ROS_PACKAGE_PATH")])))
    launch = str(REPO / "launch" / "car.launch")
    out = subprocess.run(["roslaunch", "--dump-params", launch, "car:=picar_v", "hardware:=fake"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    params = __import__("yaml").safe_load(out.stdout)
    assert params["/car_driver/car"] == "picar_v" and params["/car_driver/hardware"] == "fake"
    assert params["/car_driver/watchdog_timeout"] == 0.25
    out = subprocess.run(["roslaunch", "--dump-params", launch], env=env, capture_output=True,
                         text=True, timeout=60)
    params = __import__("yaml").safe_load(out.stdout)
    assert params["/car_driver/car"] == "smart_video_car" and params["/car_driver/hardware"] == "real"
    out = subprocess.run(["roslaunch", "--args", "/car_driver", launch], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "car_node.py" in out.stdout, out.stdout + out.stderr
