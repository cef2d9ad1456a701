"""What an experiment needs on its real machines, checked before the campaign starts.

:mod:`netloop.machine_readiness` checks that every machine can run netloop at all (reachable,
built, ROS, the revision, stale processes). This module checks what *this experiment* needs
there, each problem one line naming the fix, all of them at once, before anything starts:

* ``pca9685``: the real car's PCA9685 answers at its address (a read of MODE1 over I2C on the
  car's machine);
* ``camera``: the car's camera is there (its device, and OpenCV) when a flow carries it;
* ``board_lock``: no other process holds the car's board (the driver's lock,
  :mod:`netloop.car_driver.board`): a ``car.launch`` started by hand would fight the run's
  driver over every register;
* ``programs``: what the transport and the loop's and flows' nodes run on each machine is
  installed there (netloop's relays and teleop trial in its build, ``rosbag`` for a LIDAR
  replay, topic_tools' ``relay`` for the ``udp`` teleop, the real nimbro_network where chosen;
  ROS 2's middlewares are machine_readiness's);
* ``clock_path``: the clock measurement's UDP datagrams get an answer from each remote machine
  (a firewall that passes SSH but drops UDP fails every run's clock measurement, and the ROS
  transports' datagrams with it).

``netloop run --skip-check NAME`` (repeatable) skips one: the run then meets the problem, if it
is real, when it starts what needs it. The car's checks run ``python3 -m
netloop.car_driver.board probe`` on the car's machine; the programs one a shell script; both
through the machine's own ROS environment (``scripts/env.sh``).
"""
from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - types only
    from .machines import RealHosts
    from .model import Experiment

#: the checks, by the name ``--skip-check`` takes
CHECKS = {
    "pca9685": "the real car's PCA9685 answers at its address",
    "camera": "the car's camera is there when a flow carries it",
    "board_lock": "no other process holds the car's board",
    "programs": "the transport's and the nodes' programs are installed on each machine",
    "clock_path": "the clock measurement's UDP datagrams get an answer from each remote machine",
}
#: the car's camera topic (car_driver/car_node.py): a flow from it needs the camera
CAMERA_TOPIC = "/camera/image/compressed"


def add_flag(parser) -> None:
    """``--skip-check NAME`` on ``netloop run``'s parser."""
    parser.add_argument("--skip-check", action="append", default=[], choices=sorted(CHECKS), metavar="CHECK",
                        help="real machines: skip one of the pre-run checks (repeatable): "
                             + "; ".join(f"{k}: {v}" for k, v in CHECKS.items()))


def skip_hint(check: str) -> str:
    return f" (to run anyway: --skip-check {check})"


# --- what the experiment needs ----------------------------------------------------------------
@dataclass(frozen=True)
class Need:
    """A program a machine must have: ``kind`` node (netloop's compiled node, in its build),
    command (on PATH), file (an executable at this path), package (a ROS package) or python
    (a module the robot's Python imports); ``why``: what runs it."""
    kind: str
    name: str
    why: str

    @property
    def word(self) -> str:
        return f"{self.kind}:{self.name}"


def _topic_tools_relay() -> str:
    from .loops.teleop.run import TOPIC_TOOLS_RELAY  # noqa: PLC0415
    return TOPIC_TOOLS_RELAY


def program_needs(exp: "Experiment", hosts: list[str]) -> dict[str, list[Need]]:
    """host -> what it must have installed for ``exp`` (every transport, every cell), of the
    run's ``hosts`` (a transport runs on each of them)."""
    from .transports import get_transport  # noqa: PLC0415
    needs: dict[str, list[Need]] = {}

    def add(host: str, need: Need) -> None:
        if need not in needs.setdefault(host, []):
            needs[host].append(need)

    for name in exp.transport:
        for kind, program in get_transport(name).programs(exp.transport_options.get(name, {})):
            for host in hosts:
                add(host, Need(kind, program, f"the {name} transport"))
    loop = exp.loop
    if loop.type == "teleop":
        car, trial = loop.placement.car, loop.placement.trial
        add(trial, Need("node", "teleop_trial", "the teleop trial"))
        if loop.teleop.local_baseline and car != trial:
            add(car, Need("node", "teleop_trial", "the teleop trial (the local baseline)"))
        if any(t == "udp" or t.startswith("udp/") for t in exp.transport) and car != trial:
            add(car, Need("file", _topic_tools_relay(), "the udp transport's relays of the teleop loop"))
    for flow in exp.flows:
        if flow.kind == "lidar_bag":
            add(flow.from_, Need("command", "rosbag", f"flow '{flow.name}' (rosbag play)"))
    return needs


@dataclass(frozen=True)
class CarNeed:
    """The real car's driver on ``host`` (hardware real, or fakes in a board folder given)."""
    host: str
    car: str
    hardware: str
    fake_dir: str
    camera_flows: tuple[str, ...]
    camera_device: Any


def car_need(exp: "Experiment") -> CarNeed | None:
    """The car the experiment drives through ``car_driver`` (``simulator: car``), or None."""
    loop = exp.loop
    if loop.type != "teleop" or loop.teleop.simulator != "car":
        return None
    sim = loop.teleop.sim
    car_host = loop.placement.car
    camera = tuple(f.name for f in exp.flows if f.kind == "topic" and f.source_topic == CAMERA_TOPIC
                   and f.from_ == car_host) if sim.get("camera", True) else ()
    return CarNeed(car_host, sim.get("car", "smart_video_car"), sim.get("hardware", "real"),
                   sim.get("fake_device_dir", ""), camera, sim.get("camera_device"))


# --- asking the machines ------------------------------------------------------------------------
# Run on a machine: need_<kind:name>=yes|no, one line per program asked for.
_PROGRAMS = r"""
root=$1; shift
NETLOOP_ROOT=$root; . "$root/scripts/env.sh" >/dev/null 2>&1
py=/usr/bin/python3; [ -x "$root/.venv/bin/python" ] && py=$root/.venv/bin/python
for need in "$@"; do
  name=${need#*:}; ok=no
  case $need in
    node:*) for p in $(echo "$CMAKE_PREFIX_PATH" | tr ':' ' '); do [ -x "$p/lib/netloop/$name" ] && ok=yes; done ;;
    command:*) command -v "$name" >/dev/null 2>&1 && ok=yes ;;
    file:*) [ -x "$name" ] && ok=yes ;;
    package:*) "$py" -c "import rospkg, sys; rospkg.RosPack().get_path(sys.argv[1])" "$name" >/dev/null 2>&1 && ok=yes ;;
    python:*) "$py" -c "import $name" >/dev/null 2>&1 && ok=yes ;;
  esac
  echo "need_$need=$ok"
done
"""


def ask(hosts: "RealHosts", host: str, needs: list[Need], car: CarNeed | None) -> tuple[dict[str, str], str | None]:
    """(facts, problem): the key=value lines ``host`` answers about ``needs`` and, with
    ``car``, the car's board probe; a problem line when the machine could not be asked."""
    from .ssh import SSH_LOST, ssh_problem  # noqa: PLC0415 - netloop run's parser imports this module
    machine = hosts.machine(host)
    env_words = ["env", f"NETLOOP_WORKSPACE={machine.workspace}"] if machine.workspace else []
    script = ["sh", "-c", _PROGRAMS, "programs", hosts.root(host), *[n.word for n in needs]]
    lines = ""
    if needs:
        if machine.local:
            r = subprocess.run(env_words + script, capture_output=True, text=True, timeout=60)
        else:
            r = hosts._ssh_run(host, shlex.join(env_words + script))
            if r.returncode == SSH_LOST:
                return {}, ssh_problem(host, machine, r.stderr)
        lines += r.stdout
    if car is not None and car.host == host:
        argv = ["python3", "-m", "netloop.car_driver.board", "probe", "--car", car.car, "--hardware", car.hardware]
        if car.fake_dir:
            argv += ["--fake-device-dir", hosts.translate(host, car.fake_dir)]
        if car.camera_flows:
            argv += ["--camera"] + ([] if car.camera_device is None else ["--camera-device", str(car.camera_device)])
        status, out, err = run_there(hosts, host, argv)
        if status != 0:
            return {}, f"{host} ({machine.address}): the car's probe did not run ({err.strip()[-300:] or status})"
        lines += out
    facts = {}
    for line in lines.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts[key.strip()] = value.strip()
    return facts, None


def run_there(hosts: "RealHosts", host: str, argv: list[str], timeout: float = 60) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``argv`` run on ``host`` as its nodes run (through its
    wrapper over SSH: its ROS environment and Python; here, this Python for ``python3``)."""
    if not hosts.is_remote(host):
        argv = [sys.executable if argv[0] == "python3" else argv[0], *argv[1:]]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr
    words, env, _ = hosts.command(host, argv, {}, silence=0, record=False)
    # standard input held open until the command ended (the wrapper stops it when it closes)
    proc = subprocess.Popen(words, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.stdin.close()
        proc.wait(timeout=timeout)
        proc.stdout.close()
        proc.stderr.close()
    return proc.returncode, out, err


# --- judging ------------------------------------------------------------------------------------
def program_problem(name: str, need: Need) -> str:
    """The line for a program ``need`` the machine ``name`` lacks."""
    fixes = {
        "node": "it is built by 'make robot' (or 'make build') there: run it again after 'git pull'",
        "command": "install it there: sudo apt-get install python3-rosbag (ROS Noetic: ros-noetic-rosbag), "
                   "or run 'make robot'",
        "file": "install topic_tools there: sudo apt-get install topic-tools (ROS Noetic: ros-noetic-topic-tools), "
                "or run 'make robot'",
        "package": "install it there, or choose netloop's own implementation (transport_options: implementation: own)",
        "python": "install it into the checkout's .venv there (.venv/bin/pip install ...)",
    }
    return f"{name}: {need.name} is not installed there, and {need.why} runs it: {fixes[need.kind]}" + skip_hint("programs")


def car_problems(name: str, car: CarNeed, facts: dict[str, str], pwm: dict) -> list[tuple[str, str]]:
    """(check, line) for each of the car's problems the probe's ``facts`` show."""
    out = []
    pca = facts.get("pca9685", "no answer from the probe")
    if pca != "ok":
        out.append(("pca9685", f"{name}: the car's PCA9685 does not answer at 0x{pwm['address']:02x} on I2C bus "
                               f"{pwm['bus']} ({pca}): enable I2C (sudo raspi-config: Interface Options, I2C), check "
                               f"the board's power and wiring (i2cdetect -y {pwm['bus']} shows {pwm['address']:x}), "
                               f"or drive the fakes (loop.teleop.sim.hardware: fake)" + skip_hint("pca9685")))
    lock = facts.get("board_lock", "free")
    if lock != "free":
        out.append(("board_lock", f"{name}: the car's board is in use by another process there ({lock}): stop it "
                                  f"(a car.launch started by hand, or an earlier run's driver)" + skip_hint("board_lock")))
    camera = facts.get("camera", "ok" if not car.camera_flows else "no answer from the probe")
    if car.camera_flows and camera != "ok":
        flows = ", ".join(f"'{f}'" for f in car.camera_flows)
        out.append(("camera", f"{name}: flow {flows} carries the car's camera, but {camera}: plug in the USB camera "
                              f"(v4l2-ctl --list-devices), set loop.teleop.sim.camera_device, or install OpenCV there "
                              f"('make robot CAMERA=1')" + skip_hint("camera")))
    return out


def clock_problem(name: str, detail: str, operator: str | None) -> str:
    allow = f"sudo ufw allow from {operator}" if operator else "sudo ufw allow from <this machine's address>"
    return (f"{name}: the clock measurement's UDP datagrams get no answer ({detail}): a firewall between the "
            f"machines drops UDP; allow this machine there (e.g. {allow})" + skip_hint("clock_path"))


# --- all of it ----------------------------------------------------------------------------------
def check(hosts: "RealHosts", exp: "Experiment", skip: list[str] | tuple[str, ...] = ()) -> None:
    """Every check of this module not in ``skip``, on the machines of ``hosts`` (checked by
    machine_readiness already); RealHostsError with one line per problem."""
    from .car_driver.profiles import load_profile  # noqa: PLC0415
    from .ssh import RealHostsError  # noqa: PLC0415
    problems: list[str] = []
    car = car_need(exp) if {"pca9685", "camera", "board_lock"} - set(skip) else None
    if car is not None and car.hardware == "fake" and not car.fake_dir:
        car = None       # the fakes of a private board folder: nothing to ask
    needs = program_needs(exp, hosts.hosts) if "programs" not in skip else {}
    for host in hosts.hosts:
        name = f"{host} ({hosts.address(host)})"
        mine = needs.get(host, [])
        if not mine and (car is None or car.host != host):
            continue
        facts, problem = ask(hosts, host, mine, car)
        if problem:
            problems.append(problem)
            continue
        problems += [program_problem(name, n) for n in mine if facts.get(f"need_{n.word}") != "yes"]
        if car is not None and car.host == host:
            problems += [line for check_name, line in car_problems(name, car, facts, load_profile(car.car)["pwm"])
                         if check_name not in skip]
    if "clock_path" not in skip:
        operator = next((m.address for m in hosts.machines.hosts.values() if m.local), None)
        for host in hosts.hosts:
            if hosts.is_remote(host):
                try:
                    hosts.measure_clock(host, count=4, record=False)
                except (TimeoutError, RuntimeError) as err:
                    problems.append(clock_problem(f"{host} ({hosts.address(host)})", str(err), operator))
    if problems:
        raise RealHostsError(problems)
