"""A robot made only by the robot install (`make robot`), used over SSH.

A clean Debian 12 root (scripts/robot_root.sh: debootstrap --variant=minbase bookworm, with git,
make, sudo and an SSH server, and a user `pi` who may sudo, as on Raspberry Pi OS) gets a clean
clone of this repository, and `pi` runs `make robot` in it. Then the root becomes the robot of a
namespace lab (test/sshlab.py): its own sshd runs chrooted in the robot's namespace, and
`netloop run` in the operator's namespace runs the RLC loop and an echo flow on it over SSH,
logged in as `pi` (no root on the robot at run time). Last, `pi` builds netloop in a catkin
workspace of its own (a copy without .git) and the hosts file's `workspace:` runs from that.

Root only; slow (it installs ROS's packages in the root): `make test-robot`, which .ci/run runs
after `make test`. It tests the committed revision (a clone); NETLOOP_TEST_ROBOT_WORKTREE=1 adds
the working tree's uncommitted changes to the clone. The base root and apt's downloaded packages are cached in
~/.cache/netloop/robot-root; `make robot` itself runs in a fresh root each time.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from netloop import paths
from netloop.analysis.report import analyse_run
from netloop.analysis.rlc_result import rlc_loop
from netloop.analysis.teleop_run import teleop_result

sys.path.insert(0, str(Path(__file__).parent))
from sshlab import SshLab  # noqa: E402

pytestmark = [
    pytest.mark.skipif(os.environ.get("NETLOOP_TEST_ROBOT") != "1",
                       reason="the robot install's test runs with 'make test-robot' (NETLOOP_TEST_ROBOT=1)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: debootstrap, chroot, namespaces"),
    # the first test includes `make robot` in a fresh root (the module's fixture)
    pytest.mark.timeout(2400),
]

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "netloop" / "robot-root"
HOME = "/home/pi"
CHECKOUT = f"{HOME}/netloop"
WORKSPACE = f"{HOME}/catkin_ws"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: what the robot install must not bring (the operator's stack)
NOT_ON_A_ROBOT = ("ns3", "libns3-dev", "clang-14", "xvfb", "python3-matplotlib", "python3-scipy", "cargo",
                  "cargo-web", "cyclonedds-dev", "libfastrtps-dev", "rviz", "imagemagick", "python3-opencv")

RLC_AND_ECHO = {
    "name": "robot_rlc", "link": "ethernet", "transport": ["tcp_nodelay", "priority"],
    "loop": {"type": "rlc", "plant": {"R": 1.0, "L": 0.1, "C": 0.1, "period": 0.02}, "controller": {"K": 1.0},
             "samples": 150, "warmup": 0.5, "placement": {"plant": "robot", "controller": "operator"}},
    "flows": [{"name": "ping", "kind": "echo", "from": "operator", "to": "robot", "size_bytes": 64,
               "period": 0.05, "count": 0}],
}
ECHO_ONLY = {
    "name": "robot_echo", "link": "ethernet", "transport": "tcp_nodelay", "loop": {"type": "none"},
    "flows": [{"name": "ping", "kind": "echo", "from": "operator", "to": "robot", "size_bytes": 64,
               "period": 0.05, "count": 60}],
}
TIMES: dict[str, float] = {}


def _say(config, line: str) -> None:
    """A line on the terminal, past pytest's capture: the measured durations."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n[robot install] {line}", flush=True)


def _mounts_under(root: Path) -> list[str]:
    """Mount points at or below ``root`` now (from /proc/self/mountinfo)."""
    prefix = str(root.resolve())
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            out.append(point)
    return out


def _processes_in(root: Path) -> list[int]:
    """PIDs of the processes whose root directory is ``root`` (started inside the chroot)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "root") == str(root):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


class RobotRoot:
    """The Debian root, its mounts (each undone by close()), and commands run in it as pi."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.mounts: list[Path] = []

    def mount(self, *args: str, at: str) -> None:
        target = self.root / at.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", *args, str(target)], check=True)
        self.mounts.append(target)

    def unmount(self, at: str) -> None:
        target = self.root / at.lstrip("/")
        subprocess.run(["umount", str(target)], check=True)
        self.mounts.remove(target)

    def run(self, script: str, timeout: float = 1200, user: str = "pi") -> subprocess.CompletedProcess:
        """``script`` in bash inside the root as ``user`` (a login-like, clean environment)."""
        home = HOME if user == "pi" else "/root"
        return subprocess.run(["chroot", f"--userspec={user}:{user}", str(self.root), "/usr/bin/env", "-i",
                               f"HOME={home}", f"USER={user}", f"PATH={PATH}", "LANG=C.UTF-8",
                               "/bin/bash", "-c", script], capture_output=True, text=True, timeout=timeout)

    def close(self) -> None:
        for pid in _processes_in(self.root):      # started in the root by these tests, ended by PID
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        for target in reversed(list(self.mounts)):
            subprocess.run(["umount", str(target)], check=False)
            if not _mounts_under(target):
                self.mounts.remove(target)
        left = _mounts_under(self.root)
        assert not left, f"still mounted, the root at {self.root} is kept: {left}"
        shutil.rmtree(self.root)


class ChrootLab(SshLab):
    """SshLab whose robot's sshd runs chrooted in the robot root, in the robot's namespace."""

    def __init__(self, profile: str, tmp: Path, robot: RobotRoot):
        super().__init__(profile, tmp, ssh_hosts=("robot",))
        self.robot = robot

    def start_sshd(self, host: str) -> None:
        assert host == "robot"
        etc = self.robot.root / "etc" / "ssh"
        shutil.copy(self.tmp / "host_key", etc / "netloop_test_host_key")
        os.chmod(etc / "netloop_test_host_key", 0o600)
        shutil.copy(self.tmp / "authorized_keys", etc / "netloop_test_authorized_keys")
        os.chmod(etc / "netloop_test_authorized_keys", 0o644)   # sshd reads it as the user logging in
        (self.robot.root / "run" / "sshd").mkdir(parents=True, exist_ok=True)
        (etc / "netloop_test.conf").write_text("\n".join([
            f"ListenAddress {self.testbed.address(host)}", "Port 22", "HostKey /etc/ssh/netloop_test_host_key",
            "AuthorizedKeysFile /etc/ssh/netloop_test_authorized_keys", "PidFile /run/netloop_test_sshd.pid",
            "PermitRootLogin no", "AllowUsers pi", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "UsePAM no", "StrictModes no", "PrintMotd no", "Subsystem sftp internal-sftp", ""]))
        log = open(self.tmp / f"sshd_{host}.log", "ab")
        self.sshd[host] = subprocess.Popen(
            self.testbed.exec_prefix(host) + ["chroot", str(self.robot.root), "/usr/sbin/sshd", "-D", "-e", "-f",
                                              "/etc/ssh/netloop_test.conf"], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while subprocess.run(self.testbed.exec_prefix(host) + ["bash", "-c", "exec 3<>/dev/tcp/%s/22" %
                                                                self.testbed.address(host)],
                             capture_output=True).returncode != 0:
            if self.sshd[host].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd in the robot root did not start: {(self.tmp / f'sshd_{host}.log').read_text()}")
            time.sleep(0.1)

    def hosts_file(self, name: str = "lab", robot: dict | None = None, ssh: dict | None = None, **top) -> Path:
        return super().hosts_file(name, robot={"root": CHECKOUT, "run_root": "~/netloop-runs", **(robot or {})},
                                  ssh={"user": "pi", **(ssh or {})}, **top)


def _head() -> str:
    return subprocess.run(["git", "-C", str(paths.REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def robot(tmp_path_factory, request):
    """The root after `make robot` (as pi), with /proc and /dev mounted for the run."""
    tmp = tmp_path_factory.mktemp("robot")
    t0 = time.monotonic()
    r = subprocess.run([str(paths.REPO / "scripts" / "robot_root.sh"), "new", str(tmp / "root")],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    TIMES["clean root (base cached after the first time)"] = time.monotonic() - t0
    robot = RobotRoot(tmp / "root")
    try:
        robot.revision = _head()
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(paths.REPO), str(robot.root / CHECKOUT.lstrip("/"))],
                       check=True, timeout=300)
        if os.environ.get("NETLOOP_TEST_ROBOT_WORKTREE") == "1":   # while developing: the uncommitted changes too
            clone = robot.root / CHECKOUT.lstrip("/")
            diff = subprocess.run(["git", "-C", str(paths.REPO), "diff", "HEAD", "--binary"], capture_output=True,
                                  check=True).stdout
            if diff:
                subprocess.run(["git", "-C", str(clone), "apply", "--whitespace=nowarn"], input=diff, check=True)
            for name in subprocess.run(["git", "-C", str(paths.REPO), "ls-files", "--others", "--exclude-standard"],
                                       capture_output=True, text=True, check=True).stdout.split():
                (clone / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(paths.REPO / name, clone / name)
        uid = next(line.split(":")[2] for line in (robot.root / "etc" / "passwd").read_text().splitlines()
                   if line.startswith("pi:"))
        subprocess.run(["chown", "-R", f"{uid}:{uid}", str(robot.root / CHECKOUT.lstrip("/"))], check=True)
        robot.mount("-t", "proc", "proc", at="/proc")
        robot.mount("--bind", "/dev", at="/dev")
        (CACHE / "apt-archives" / "partial").mkdir(parents=True, exist_ok=True)
        robot.mount("--bind", str(CACHE / "apt-archives"), at="/var/cache/apt/archives")
        t0 = time.monotonic()
        r = robot.run(f"cd {CHECKOUT} && make robot", timeout=1800)
        TIMES["make robot"] = time.monotonic() - t0
        (tmp / "make_robot.log").write_text(r.stdout + r.stderr)
        assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
        robot.unmount("/var/cache/apt/archives")
        robot.make_robot_output = r.stdout + r.stderr
        yield robot
    finally:
        robot.close()
        _say(request.config, ", ".join(f"{k}: {v:.0f} s" for k, v in TIMES.items()))


def test_make_robot_installs_and_builds_only_what_runs_on_a_robot(robot):
    devel = robot.root / CHECKOUT.lstrip("/") / ".build" / "ws" / "devel"
    nodes = {p.name for p in (devel / "lib" / "netloop").iterdir()}
    assert {"rlc_plant", "loop_controller", "flow_source", "flow_sink", "nimbro_udp_sender", "nimbro_tcp_sender",
            "nimbro_udp_receiver", "nimbro_tcp_receiver", "priority_relay"} <= nodes
    assert "teleop_trial" in nodes                         # the car experiment's local baseline runs there
    assert not {"netloop_wifi_link", "netloop_cpp_tests", "ros2_bridge", "netloop_ros2_info"} & nodes
    assert not (devel / "lib" / "libnetloop_ros2.so").exists()
    info = dict(line.split("=", 1) for line in (devel / "share" / "netloop" / "build_info.txt").read_text().split())
    clean = "0" if os.environ.get("NETLOOP_TEST_ROBOT_WORKTREE") != "1" else info["dirty"]
    assert info["robot_only"] == "1" and info["revision"] == robot.revision and info["dirty"] == clean, info
    installed = robot.run("dpkg-query -W -f='${Package} ${Status}\\n' | sed -n 's/ install ok installed$//p'").stdout.split()
    assert not set(NOT_ON_A_ROBOT) & set(installed), set(NOT_ON_A_ROBOT) & set(installed)
    assert {"python3-rospy", "python3-yaml", "python3-smbus2", "python3-gpiozero", "libroscpp-dev",
            "python3-rosbag", "topic-tools", "python3-pil"} <= set(installed)   # the LIDAR replay, udp's relays, JPEG
    # the robot-side Python and the car's libraries, with the Python the nodes run with
    r = robot.run(f"cd {CHECKOUT} && . scripts/env.sh && .venv/bin/python -c '"
                  "import yaml, rospy, smbus2, gpiozero, netloop.remote_exec, netloop.clocksync, netloop.msg\n"
                  "from netloop.car_driver.hardware import SMBusI2C, HardwareError\n"
                  "try:\n    SMBusI2C(1)\nexcept HardwareError as e:\n    print(e)'")
    assert r.returncode == 0, r.stderr
    assert "cannot open /dev/i2c-1" in r.stdout, r.stdout        # smbus2 is there; the bus is not (no car)
    # nothing of the operator's stack in the light venv
    venv = robot.run(f"{CHECKOUT}/.venv/bin/python -m pip list --local --format=freeze 2>/dev/null").stdout
    assert not [p for p in ("pybullet", "matplotlib", "scipy", "control", "numpy", "pytest") if p in venv.lower()], venv
    # a second `make robot` installs nothing and rebuilds nothing that changed
    t0 = time.monotonic()
    again = robot.run(f"cd {CHECKOUT} && make robot", timeout=600)
    assert again.returncode == 0 and "installing" not in again.stdout, again.stdout
    TIMES["make robot again"] = time.monotonic() - t0


def _run(lab: SshLab, exp: Path, out: Path, hosts: Path) -> subprocess.CompletedProcess:
    return lab.netloop("run", str(exp), "--out", str(out), "--machines", str(hosts), timeout=600)


def _write(tmp: Path, doc: dict) -> Path:
    path = tmp / f"{doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_robot_runs_the_rlc_loop_and_an_echo_flow_over_ssh(robot, tmp_path):
    exp = _write(tmp_path, RLC_AND_ECHO)
    with ChrootLab("ethernet", tmp_path / "lab", robot) as lab:
        t0 = time.monotonic()
        r = _run(lab, exp, tmp_path / "out", lab.hosts_file())
        TIMES["RLC loop + echo over SSH, 2 transports"] = time.monotonic() - t0
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert lab.processes_in("robot") == [] and lab.processes_in("operator") == []
    (campaign,) = list((tmp_path / "out").iterdir())
    for transport in ("tcp_nodelay", "priority"):
        run_dir = campaign / "runs" / f"{transport}-r0"
        meta = json.loads((run_dir / "metadata.json").read_text())
        assert meta["status"] == "complete", meta.get("error")
        link = meta["link"]
        assert link["type"] == "real" and link["records_home"]["robot"]["fetched"], link
        assert link["hosts"]["robot"]["ssh"] == "pi@10.77.0.1" and link["hosts"]["robot"]["revision"] == robot.revision
        if _head() == robot.revision:   # (a commit here since the clone makes the operator's newer)
            assert not [w for w in link["warnings"] if "revision" in w], link["warnings"]
        if transport == "priority":   # a master and a relay on the robot, from the robot build
            assert set(meta["masters"]) == {"robot", "operator"} and "10.77.0.1" in meta["masters"]["robot"]
        result = analyse_run(run_dir)
        loop = rlc_loop(result)
        assert loop.ok and loop.sensor.MDR == 1.0, loop
        (ping,) = result.flows
        assert ping.ok and ping.MDR == 1.0 and ping.sent >= 20, (ping.sent, ping.MDR)
        assert 0 < ping.delay["p50_ms"] < 20, ping.delay    # an echo's delay is its round trip, on one clock


def test_a_users_catkin_workspace_is_checked_and_runs(robot, tmp_path):
    """pi copies netloop (its files, without .git) into a catkin workspace of its own and builds it with
    catkin_make, recording the revision; the hosts file's workspace: runs from it. A workspace
    that is not there, or not built, is refused saying so."""
    head = robot.revision
    t0 = time.monotonic()
    r = robot.run(f"mkdir -p {WORKSPACE}/src/netloop && cd {CHECKOUT} && "
                  f"tar --exclude=./.git --exclude=./.build --exclude=./.venv -cf - . | tar -x -C {WORKSPACE}/src/netloop && "
                  f"mkdir -p {HOME}/empty_ws/src && cd {WORKSPACE} && "
                  f"catkin_make -j2 -DNETLOOP_ROBOT_ONLY=ON -DNETLOOP_REVISION={head} -DCATKIN_ENABLE_TESTING=OFF "
                  f"> {HOME}/catkin_make.log 2>&1 || {{ tail -40 {HOME}/catkin_make.log; exit 1; }}", timeout=1200)
    TIMES["catkin_make of a user's workspace"] = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (robot.root / WORKSPACE.lstrip("/") / "src" / "netloop" / ".git").exists()
    exp = _write(tmp_path, ECHO_ONLY)
    with ChrootLab("ethernet", tmp_path / "lab", robot) as lab:
        hosts = lab.hosts_file("ws", robot={"root": None, "workspace": WORKSPACE})
        r = _run(lab, exp, tmp_path / "out", hosts)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        bad = lab.hosts_file("bad", robot={"root": None, "workspace": f"{HOME}/empty_ws"})
        refused = _run(lab, exp, tmp_path / "out_bad", bad)
        missing = lab.hosts_file("missing", robot={"root": None, "workspace": f"{HOME}/no_ws"})
        refused_missing = _run(lab, exp, tmp_path / "out_missing", missing)
        assert lab.processes_in("robot") == []
    (campaign,) = list((tmp_path / "out").iterdir())
    run_dir = campaign / "runs" / "tcp_nodelay-r0"
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    assert meta["link"]["hosts"]["robot"]["revision"] == head, meta["link"]
    if _head() == head:
        assert not meta["link"]["warnings"], meta["link"]["warnings"]
    (ping,) = analyse_run(run_dir).flows
    assert ping.ok and ping.MDR == 1.0
    # the echo node ran from the workspace's devel space (the wrappers' records, fetched home)
    commands = [json.loads(p.read_text())["command"] for p in (run_dir / "logs" / "remote_exec_robot").glob("*.json")]
    assert [f"{WORKSPACE}/devel/lib/netloop/flow_sink"] == [c[0] for c in commands if "flow_sink" in c[0]], commands
    assert refused.returncode == 2, refused.stdout + refused.stderr
    lines = [x.strip() for x in refused.stderr.splitlines() if x.strip().startswith("robot ")]
    assert len(lines) == 2, refused.stderr                       # one line per problem
    assert f"the workspace {HOME}/empty_ws is not built" in lines[0] and "catkin_make" in lines[0], lines
    assert f"no netloop sources at {HOME}/empty_ws/src/netloop" in lines[1], lines
    assert refused_missing.returncode == 2 and f"no catkin workspace at {HOME}/no_ws" in refused_missing.stderr


def test_the_real_car_experiment_runs_every_cell_on_the_robot_over_ssh(robot, tmp_path):
    """experiments/real/teleop_car.yaml as shipped, --quick, with the car's driver on its
    register-level fakes (the one change): every transport it lists (tcp, tcp_nodelay, and udp
    with topic_tools' relays on the robot), the local baseline (the trial on the robot), the
    camera and the LIDAR bag replayed by rosbag on the robot. Every run complete, the car's
    fail-safe stop ran on the robot after every run and stopped the fake board."""
    doc = yaml.safe_load((paths.REPO / "experiments" / "real" / "teleop_car.yaml").read_text())
    doc["loop"]["teleop"]["sim"]["hardware"] = "fake"
    exp = tmp_path / "teleop_car.yaml"
    exp.write_text(yaml.safe_dump(doc, sort_keys=False))
    with ChrootLab("ethernet", tmp_path / "lab", robot) as lab:
        t0 = time.monotonic()
        r = lab.netloop("run", str(exp), "--quick", "--out", str(tmp_path / "out"), "--machines",
                        str(lab.hosts_file()), timeout=900)
        TIMES["the car experiment over SSH, --quick (4 runs)"] = time.monotonic() - t0
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert lab.ours_in("robot") == [] and lab.ours_in("operator") == []
    (campaign,) = list((tmp_path / "out").iterdir())
    runs = sorted(p.name for p in (campaign / "runs").iterdir())
    assert runs == ["tcp-r0", "tcp__trial=robot-r0", "tcp_nodelay-r0", "udp-r0"], runs
    for run in runs:
        run_dir = campaign / "runs" / run
        meta = json.loads((run_dir / "metadata.json").read_text())
        assert meta["status"] == "complete", (run, meta.get("error"))
        assert "10.77.0.1" in meta["node_uris"]["/car_driver"], meta["node_uris"]
        on_robot = "10.77.0.1" in meta["node_uris"]["/trial"]
        assert on_robot == (run == "tcp__trial=robot-r0"), (run, meta["node_uris"]["/trial"])
        if run == "udp-r0":     # topic_tools' relays on the robot carry the loop's topics
            assert "/odom_relay" in meta["node_uris"] and "10.77.0.1" in meta["node_uris"]["/odom_relay"]
        failsafe = json.loads((run_dir / "logs" / "remote_exec_robot" / "car_failsafe.json").read_text())
        assert failsafe["stopped"] and failsafe["hardware"] == "fake", failsafe
        result = analyse_run(run_dir)
        teleop = teleop_result(result)
        assert teleop.ok, (run, teleop.problems)
        flows = {f.flow: f for f in result.flows}
        assert set(flows) == {"camera", "lidar"}, flows
        for flow in flows.values():     # JPEG frames of the fake camera, the bag replayed by rosbag there
            assert flow.ok and flow.sent >= 20 and flow.MDR > 0.9, (run, flow.flow, flow.sent, flow.MDR)


def test_the_robots_pip_packages_are_pinned_with_the_hashes_pypi_serves(tmp_path):
    """requirements-robot.txt with --require-hashes: each release's wheel and its source archive
    downloaded from PyPI (pip's own client) match the pinned sha256."""
    req = str(paths.REPO / "requirements-robot.txt")
    for kind, extra in (("wheels", []), ("sources", ["--no-binary", ":all:"])):
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--require-hashes", "--no-deps",
                            "--no-cache-dir", "-r", req, "-d", str(tmp_path / kind), *extra],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        assert len(list((tmp_path / kind).iterdir())) == 3, list((tmp_path / kind).iterdir())
