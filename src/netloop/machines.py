"""Real machines: the hosts of a run as computers reached over SSH, not network namespaces.

An experiment runs on real machines when it names a hosts file (``machines: lab`` for
``config/hosts/lab.yaml``, or a path; ``netloop run --machines``). The experiment file is
otherwise the same: its ``link`` is then not emulated, the run goes over the network
between the machines as it is, and ``metadata.json`` describes that network (interface,
MTU, SSID and bitrate where ``iw`` reads them).

:class:`RealHosts` is the :class:`~netloop.testbed.Testbed` of such a run, with the same
interface (``hosts``, ``address``, ``command``, ``translate``, ``health``, ``metadata``,
``up``/``down``), so the runner, the transports and the loops do not know the difference:

* ``up()`` checks every machine before anything starts (reachable over SSH, the package
  there and built, ROS there, the same git revision, a writable run directory) and refuses
  with one line per problem; then it measures every clock against this machine's
  (:mod:`netloop.clocksync`).
* ``command()`` turns a node's command into ``ssh <machine> <root>/bin/netloop-remote-exec
  --env ... -- argv`` (OpenSSH, as roslaunch's ``<machine>`` tag does; the remote end stops
  the node when the connection ends, :mod:`netloop.remote_exec`). Paths in a command or a
  parameter are translated: this checkout -> the machine's ``root``, the run directory ->
  the machine's run directory under ``run_root``; inputs the run made here (camera frames)
  are copied there first.
* ``down()`` measures the clocks again and copies every machine's records and ROS logs
  home into the run directory (``tar`` through ssh, paths quoted), so ``netloop report``
  works unchanged; a machine whose records could not be fetched (``netloop fetch RUN_DIR``
  tries again), or whose nodes were stopped by their watchdog, is named in
  ``fetch_problems`` (the run's error).

SSH: one multiplexed connection per machine (OpenSSH's ControlMaster, its socket in a
private directory of this run), opened at the first command and closed with the run
(``ssh -O exit``); a machine with more sessions than ``ssh.sessions_per_connection``
gets another connection, opened after the first is authenticated, so that many replicas
neither trip sshd's MaxStartups (unauthenticated connections at once) nor its MaxSessions
(sessions per connection). The hosts file's ``ssh.options`` come first on every command
line, so they override netloop's defaults (OpenSSH takes the first value it is given).

Nothing runs on without the operator: every remote process hears a heartbeat from here
(:mod:`netloop.processes`) and its wrapper (:mod:`netloop.remote_exec`) stops it after
``heartbeat_timeout`` seconds of silence, the car driver first (the other nodes one second
later), and writes why into the run directory there (``logs/remote_exec``), which comes
home with the records. Before a run, netloop processes of an earlier run still running
on a machine (wrappers writing under its ``run_root``) refuse the run
(``netloop run --clean-stale`` stops them).

A machine with ``local: true`` is the one ``netloop run`` runs on: its processes start
here, without SSH, and write into the run directory directly.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from . import clocksync, machine_check, paths
from .processes import _die_with_parent
from .rundir import git_revision
from .schema import Bool, ConfigError, Enum, Int, List, Map, Num, Str, key, load_yaml, section, validate

MACHINES_DIR = paths.CONFIG / "hosts"
#: environment variables of a node that are passed to its machine (the rest comes from the
#: machine's own checkout: scripts/env.sh)
PASSED_ENV = ("ROS_MASTER_URI", "ROS_IP", "ROS_LOG_DIR", "ROS_HOME")
#: a compiled node that a built checkout has
BUILT_MARK = ".build/ws/devel/lib/netloop/flow_sink"
SSH_LOST = 255   # ssh's exit status when the connection failed or was lost
#: a clock further off than this [ms] is worth a warning (a machine without time sync)
CLOCK_WARN_MS = 100.0
#: data this checkout generates (not in git), copied to a machine when a command names it
GENERATED = paths.REPO / ".build" / "bags"
#: the car driver's node (its wrapper stops first when the operator's heartbeat falls silent)
DRIVERS = ("car_node.py",)
#: how much later than the driver the other nodes of a machine stop on a silent heartbeat [s]
AFTER_DRIVER_S = 1.0
#: the default run_root: survives a reboot (not /tmp); each run's directory is removed once fetched
DEFAULT_RUN_ROOT = "~/.local/share/netloop/runs"
#: how long a run waits for processes of the previous run still stopping on a machine [s]
STALE_WAIT_S = 15.0


@section("how to reach a machine over SSH (OpenSSH's ssh; ~/.ssh/config applies too)")
class Ssh:
    user: str | None = key(Str(None, "login name (default: ssh's own choice: ~/.ssh/config, else the local user)"))
    host: str | None = key(Str(None, "name or address to connect to (default: the machine's address)"))
    port: int = key(Int(22, "SSH port", ge=1, le=65535))
    key_file: str | None = key(Str(None, "private key file (default: ssh's own: the agent, ~/.ssh/id_*)"), "key")
    known_hosts: str | None = key(Str(None, "known_hosts file (default: ssh's own, ~/.ssh/known_hosts)"))
    options: list[str] = key(List(Str(), [], "ssh -o options, e.g. [ConnectTimeout=10]; they come first on "
                                             "the command line, so they override netloop's defaults"))
    connect_timeout: float = key(Num(5.0, "seconds to wait for the connection", gt=0, le=120))
    sessions_per_connection: int = key(Int(8, "sessions netloop opens on one SSH connection before it opens "
                                              "another (keep it below sshd's MaxSessions, default 10)",
                                           ge=1, le=1000))


@section("one machine of the run")
class Machine:
    address: str = key(Str(doc="IPv4 address the other machines reach it at (its ROS_IP)"))
    local: bool = key(Bool(False, "the machine netloop runs on: its processes start here, without SSH"))
    ssh: Ssh = key(Ssh.schema)
    root: str | None = key(Str(None, "the netloop checkout on that machine, built with 'make build' "
                                     "(default: the same path as here)"))
    workspace: str | None = key(Str(None, "a catkin workspace of the user's holding netloop (its sources in "
                                          "src/, built with catkin_make), used instead of a checkout built by "
                                          "'make build'/'make robot'; root then defaults to <workspace>/src/netloop"))
    run_root: str = key(Str(DEFAULT_RUN_ROOT, "where its records are written during a run (copied home after "
                                              "it, then removed there; ~ is its user's home)"))
    interface: str | None = key(Str(None, "its network interface, e.g. wlan0 (recorded: MTU, SSID, bitrate)"))
    env: dict[str, str] = key(Map({}, {}, "more environment variables of its processes", extra=Str(nonempty=False)))
    heartbeat_timeout: float = key(Num(3.0, "seconds without the operator's heartbeat (one a second, over SSH) "
                                            "after which its nodes stop: the car driver first, the others "
                                            f"{AFTER_DRIVER_S:g} s later", ge=2, le=600))


def _check_machines(doc: dict, where: str) -> None:
    hosts = doc["hosts"]
    prefix = f"{where}." if where else ""
    if not hosts:
        raise ConfigError(f"{prefix}hosts", "no machines given (at least robot and operator)")
    if "operator" not in hosts:
        raise ConfigError(f"{prefix}hosts", f"no 'operator' machine (the ROS master runs there); "
                                            f"given: {', '.join(hosts)}")
    local = [h for h, m in hosts.items() if m.local]
    if len(local) > 1:
        raise ConfigError(f"{prefix}hosts", f"only one machine can be local (this one); given: {', '.join(local)}")


@section("the real machines of an experiment: config/hosts/*.yaml", check=_check_machines)
class Machines:
    description: str = key(Str("", nonempty=False))
    hosts: dict[str, Machine] = key(Map({}, {}, "per host name (robot, operator, relay, robot2, ...): its machine",
                                        extra=Machine.schema))
    clock_samples: int = key(Int(16, "NTP-style exchanges per clock measurement (before and after each run)",
                                 ge=4, le=1000))
    clock_max_uncertainty: float = key(Num(0.1, "one-way delays whose clock uncertainty is above this fraction of "
                                                "the delay are flagged in the report (use the round trip)",
                                           gt=0, le=10))
    link_mbit: float | None = key(Num(None, "the network's usable rate [Mbit/s] (measure it, e.g. with iperf3): "
                                            "the priority relay paces its sends at a fraction of it, and flows "
                                            "offering more are warned about; none: unknown (priority unpaced)",
                                      gt=0))
    revision_mismatch: str = key(Enum(["warn", "refuse"], "warn", "a machine whose checkout is at another git "
                                                                 "revision than this one: warn, or refuse to run"))


def machines_names() -> list[str]:
    return sorted(p.stem for p in MACHINES_DIR.glob("*.yaml"))


def machines_path(spec: str) -> Path:
    """The hosts file ``spec`` names: a path, or a name in config/hosts."""
    path = Path(os.path.expanduser(spec))
    if path.suffix in (".yaml", ".yml") or os.sep in spec:
        if not path.is_file():
            raise ConfigError("machines", f"hosts file {spec!r} not found")
        return path
    if spec not in machines_names():
        raise ConfigError("machines", f"unknown hosts file {spec!r}; allowed: a path to a .yaml file, or one of "
                                      f"{', '.join(machines_names()) or '(none in config/hosts)'}")
    return MACHINES_DIR / f"{spec}.yaml"


def load_machines(spec: str) -> Machines:
    """The validated hosts file ``spec`` names (ConfigError naming the key otherwise)."""
    path = machines_path(spec)
    return validate(Machines.schema, load_yaml(str(path)), str(path))


class RealHostsError(RuntimeError):
    """Machines that cannot run the experiment: one line per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("the machines cannot run this experiment:\n  " + "\n  ".join(problems))
        self.problems = problems


def ssh_options(ssh: Ssh, control: str | None = None, master: bool = False) -> list[str]:
    """ssh's options: the hosts file's ``options`` first (OpenSSH keeps the first value of each,
    so they override what follows), then netloop's: batch mode (never a password prompt),
    timeouts, keepalives (a lost connection is noticed within ~6 s), the key, and with
    ``control`` the connection's ControlMaster socket (``master``: the one that opens it)."""
    opts: list[str] = []
    for option in ssh.options:
        opts += ["-o", option]
    opts += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={ssh.connect_timeout:g}",
             "-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"]
    if ssh.key_file:
        opts += ["-i", os.path.expanduser(ssh.key_file), "-o", "IdentitiesOnly=yes"]
    if ssh.known_hosts:
        opts += ["-o", f"UserKnownHostsFile={os.path.expanduser(ssh.known_hosts)}"]
    if control:
        opts += ["-o", f"ControlPath={control}", "-o", f"ControlMaster={'yes' if master else 'no'}",
                 "-o", "ControlPersist=no"]
    return opts


def _destination(machine: Machine) -> str:
    host = machine.ssh.host or machine.address
    return f"{machine.ssh.user}@{host}" if machine.ssh.user else host


def user_multiplexing(ssh: Ssh) -> bool:
    """Whether the hosts file's ``ssh.options`` set ControlMaster or ControlPath themselves."""
    return any(o.strip().lower().startswith(("controlmaster", "controlpath")) for o in ssh.options)


def ssh_argv(machine: Machine, control: str | None = None) -> list[str]:
    """``ssh ... user@host`` (the remote command follows as one shell-quoted word), through the
    connection whose ControlMaster socket is ``control`` (None: a connection of its own)."""
    return ["ssh", "-T", "-p", str(machine.ssh.port), *ssh_options(machine.ssh, control), _destination(machine)]


class _Connections:
    """The multiplexed SSH connections to one machine: ControlMaster sockets in a private
    directory, each carrying at most ``ssh.sessions_per_connection`` long-lived sessions."""

    def __init__(self, name: str, machine: Machine, directory: Path):
        self.name, self.machine, self.directory = name, machine, directory
        self.masters: list[tuple[str, subprocess.Popen]] = []
        self.sessions: list[int] = []     # long-lived sessions given out, per connection

    def _open(self) -> str:
        path = str(self.directory / f"{self.name}-{len(self.masters)}")
        argv = ["ssh", "-T", "-N", "-p", str(self.machine.ssh.port),
                *ssh_options(self.machine.ssh, path, master=True), _destination(self.machine)]
        master = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + self.machine.ssh.connect_timeout + 10
        while not os.path.exists(path):    # the socket appears once the login succeeded
            if master.poll() is not None or time.monotonic() > deadline:
                if master.poll() is None:
                    master.kill()
                master.wait()
                raise ConnectionError(master.stderr.read() or "no answer")
            time.sleep(0.02)
        self.masters.append((path, master))
        self.sessions.append(0)
        return path

    def control(self, long_lived: bool) -> str:
        """The socket of a connection for one more session (a new connection when every one
        carries its share of long-lived sessions; short commands take the first). A connection
        that was lost is dropped (its sessions ended with it)."""
        alive = [i for i, (_, master) in enumerate(self.masters) if master.poll() is None]
        if len(alive) < len(self.masters):
            for _, master in self.masters:
                if master.poll() is not None and master.stderr:
                    master.stderr.close()
            self.masters = [self.masters[i] for i in alive]
            self.sessions = [self.sessions[i] for i in alive]
        if not self.masters:
            self._open()
        if not long_lived:
            return self.masters[0][0]
        limit = self.machine.ssh.sessions_per_connection
        i = next((i for i, n in enumerate(self.sessions) if n < limit), None)
        if i is None:
            self._open()
            i = len(self.masters) - 1
        self.sessions[i] += 1
        return self.masters[i][0]

    def close(self) -> None:
        """``ssh -O exit`` on every connection (its sessions end), then its process reaped."""
        for path, master in self.masters:
            if master.poll() is None:
                subprocess.run(["ssh", "-p", str(self.machine.ssh.port), *ssh_options(self.machine.ssh, path),
                                "-O", "exit", _destination(self.machine)], stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=15)
                try:
                    master.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    master.kill()
                    master.wait()
            if master.stderr:
                master.stderr.close()
        self.masters, self.sessions = [], []


def _ssh_problem(name: str, machine: Machine, stderr: str) -> str:
    """One line saying why ssh could not log in (from its stderr)."""
    where = f"{name} ({_destination(machine)}, port {machine.ssh.port})"
    text = " ".join(stderr.strip().split())[-300:]
    if "Permission denied" in text:
        return f"{where}: SSH refused the login (key {machine.ssh.key_file or 'of ssh-agent/~/.ssh'}): {text}"
    if "Host key verification failed" in text or "REMOTE HOST IDENTIFICATION" in text:
        return (f"{where}: its host key is not known or has changed: connect once by hand (ssh) or set "
                f"ssh.known_hosts: {text}")
    return f"{where}: unreachable over SSH: {text or 'no answer'}"


#: this user's processes on a machine, as ``proc=<pid> <command line>`` lines (read by
#: :func:`netloop_processes`)
_PROCESS_LIST = """ps -ww -u "$(id -u)" -o pid=,args= 2>/dev/null | sed 's/^ */proc=/'"""

# Run on every machine (over SSH, or here for the local one) before a run: key=value lines.
_CHECK_SCRIPT = machine_check.ROS2_LINKED_SH + r"""
root=$1; run_root=$2; iface=$3
case $run_root in "~") run_root=$HOME;; "~/"*) run_root="$HOME/${run_root#??}";; esac
echo "home=$HOME"
echo "hostname=$(hostname)"
echo "arch=$(uname -m)"
# this user's processes (the operator picks the netloop wrappers writing under run_root)
PROCESS_LIST
if [ ! -d "$root" ]; then echo "root=missing"; exit 0; fi
echo "root=ok"
[ -x "$root/bin/netloop-remote-exec" ] && echo "wrapper=ok"
[ -x "$root/BUILT_MARK" ] && echo "built=ok"
echo "revision=$(git -C "$root" rev-parse HEAD 2>/dev/null)"
echo "dirty=$(git --no-optional-locks -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -c 1 | wc -c)"
( NETLOOP_ROOT=$root; . "$root/scripts/env.sh" >/dev/null 2>&1; command -v rosmaster >/dev/null 2>&1 && echo "ros=ok" )
mkdir -p "$run_root" 2>/dev/null && [ -w "$run_root" ] && echo "run_root=ok"
if [ -n "$iface" ]; then
  if [ -r "/sys/class/net/$iface/mtu" ]; then echo "mtu=$(cat /sys/class/net/$iface/mtu)"; else echo "interface=missing"; fi
  if command -v iw >/dev/null 2>&1; then
    iw dev "$iface" link 2>/dev/null | sed -n 's/^[[:space:]]*SSID: \(.*\)/ssid=\1/p; s/^[[:space:]]*tx bitrate: \(.*\)/tx_bitrate=\1/p; s/^[[:space:]]*signal: \(.*\)/signal=\1/p'
    iw dev "$iface" get power_save 2>/dev/null | sed -n 's/^Power save: *\(on\|off\).*/power_save=\1/p'
  fi
fi
lib="$root/.build/ws/devel/lib/libnetloop_ros2.so"; info="$root/.build/ws/devel/lib/netloop/netloop_ros2_info"
if [ -x "$info" ]; then
  echo "ros2=$("$info" 2>/dev/null | grep -oE 'cyclonedds|fastdds|zenoh' | sort -u | tr '\n' ' ')"
elif [ -r "$lib" ]; then
  echo "ros2=$(ros2_linked "$lib")"
else
  echo "ros2="
fi
if command -v chronyc >/dev/null 2>&1; then
  chronyc -n tracking 2>/dev/null | sed -n 's/^Reference ID *: \(.*\)/chrony_reference=\1/p; s/^System time *: \(.*\)/chrony_system_time=\1/p; s/^Leap status *: \(.*\)/chrony_leap=\1/p'
elif command -v timedatectl >/dev/null 2>&1; then
  echo "ntp_synchronized=$(timedatectl show -p NTPSynchronized --value 2>/dev/null)"
fi
""".replace("BUILT_MARK", BUILT_MARK).replace("PROCESS_LIST", _PROCESS_LIST)


def _parse_lines(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep and k != "proc":
            out[k.strip()] = v.strip()
    return out


def _paths_in(value: str, local: str) -> list[str]:
    """The existing files and folders under ``local`` that ``value`` names (an argument or a
    parameter: a path, ``key=path``, paths joined by commas; a path may hold spaces): at each
    place ``local`` occurs, the longest stretch up to a separator that exists."""
    found = []
    start = value.find(local)
    while start >= 0:
        ends = [i for i in range(start + len(local) + 1, len(value) + 1) if i == len(value) or value[i] in " ,="]
        best = next((value[start:i] for i in reversed(ends) if os.path.exists(value[start:i])), None)
        if best and best not in found:
            found.append(best)
        start = value.find(local, start + len(local))
    return found


def _expand_home(path: str, home: str | None) -> str:
    """``path`` with a leading ``~`` as the machine's home (``home``, from its check)."""
    if home and (path == "~" or path.startswith("~/")):
        return home.rstrip("/") + path[1:]
    return path


def netloop_processes(check_output: str, run_root: str) -> list[tuple[int, str | None, str]]:
    """(pid, run, command line) of the netloop wrappers (:mod:`netloop.remote_exec`) in a
    machine's process list (its check's ``proc=`` lines) that write under ``run_root``."""
    out = []
    marker = f"--record={run_root.rstrip('/')}/"
    for line in check_output.splitlines():
        if not line.startswith("proc="):
            continue
        pid, _, args = line[5:].strip().partition(" ")
        if "remote_exec" not in args or marker not in args or not pid.isdigit():
            continue
        run = args.split("--run=", 1)[1].split(" ", 1)[0] if "--run=" in args else None
        out.append((int(pid), run, args))
    return out


class RealHosts:
    """The machines of a hosts file as the hosts of one run (see the module's doc)."""

    def __init__(self, machines: Machines, run_dir: Path, log=print, middlewares: tuple[str, ...] | list[str] = ()):
        self.machines = machines
        #: ROS 2 middlewares the run needs (cyclonedds, fastdds, zenoh): every machine's build must have them
        self.middlewares = list(middlewares)
        self.run_dir = Path(run_dir)
        self.log = log
        #: e.g. <campaign>-<run id>: the run's directory name on every machine
        self.label = f"{self.run_dir.parent.parent.name}-{self.run_dir.name}".lstrip("-")
        self.checks: dict[str, dict[str, str]] = {}
        self.warnings: list[str] = []
        self.clocks: dict[str, dict[str, Any]] = {}
        self.records_home: dict[str, dict[str, Any]] = {}
        self.fetch_problems: list[str] = []
        self._pushed: set[tuple[str, str]] = set()
        self._is_up = False
        #: the SSH connections per remote machine (ControlMaster sockets in _control_dir)
        self._connections: dict[str, _Connections] = {}
        self._control_dir: Path | None = None
        self._keep_connections = False    # up() to down(); check() alone closes what it opened

    # --- the Testbed interface -------------------------------------------------------------
    @property
    def hosts(self) -> list[str]:
        return list(self.machines.hosts)

    @property
    def link_mbit(self) -> float | None:
        """The network's rate as the hosts file gives it (None: unknown)."""
        return self.machines.link_mbit

    is_loopback = False

    def machine(self, host: str) -> Machine:
        if host not in self.machines.hosts:
            raise ConfigError("host", f"unknown host {host!r}; the machines are {', '.join(self.hosts)}")
        return self.machines.hosts[host]

    def address(self, host: str) -> str:
        return self.machine(host).address

    def netns(self, host: str) -> None:
        return None

    def exec_prefix(self, host: str) -> list[str]:
        """Nothing: a helper command meant for a host runs here and reaches that host's master
        over the network (only :meth:`command` starts processes on a machine)."""
        self.machine(host)
        return []

    def is_remote(self, host: str) -> bool:
        return not self.machine(host).local

    def root(self, host: str) -> str:
        return self.machine(host).root or machine_check.default_root(self.machine(host)) or str(paths.REPO)

    def run_root(self, host: str) -> str:
        """The machine's ``run_root``, ``~`` expanded to its home once it has been checked."""
        return _expand_home(self.machine(host).run_root, self.checks.get(host, {}).get("home")).rstrip("/")

    def remote_run_dir(self, host: str) -> str:
        return f"{self.run_root(host)}/{self.label}"

    def translate(self, host: str, value: Any) -> Any:
        """``value`` (a string, or a list/dict of them) as ``host`` must see it: this checkout
        and the run directory replaced by the machine's. Run inputs made here are copied there."""
        if isinstance(value, dict):
            return {k: self.translate(host, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.translate(host, v) for v in value]
        if not isinstance(value, str) or not self.is_remote(host):
            return value
        run, repo = str(self.run_dir), str(paths.REPO)
        if run in value:
            self._push_inputs(host, value, run, self.remote_run_dir(host))
            return value.replace(run, self.remote_run_dir(host))
        if repo in value:
            value = machine_check.translate(self.machine(host), value, self.checks.get(host, {}))  # a workspace's nodes
            self._push_inputs(host, value, str(GENERATED), self.root(host) + str(GENERATED)[len(repo):])
            return value.replace(repo, self.root(host))
        return value

    def command(self, host: str, argv: list[str], env: dict[str, str] | None,
                silence: float | None = None) -> tuple[list[str], dict | None, bool]:
        """(argv, env, remote) that start ``argv`` on ``host`` with ``env``'s ROS settings. On a
        remote machine the node stops when the operator's heartbeat is silent for ``silence``
        seconds (default: the machine's ``heartbeat_timeout``, a second more for all but the
        car driver; 0: never, for a process that ends by itself)."""
        machine = self.machine(host)
        env = dict(env or os.environ)
        if machine.local:
            env.update(machine.env)
            return list(argv), env, False
        if silence is None:
            driver = any(str(a).endswith(DRIVERS) for a in argv)
            silence = machine.heartbeat_timeout + (0.0 if driver else AFTER_DRIVER_S)
        words = [*machine_check.wrapper(machine, self.root(host)), f"--run={self.label}", f"--silence={silence:g}",
                 f"--record={self.remote_run_dir(host)}/logs/remote_exec"]
        passed = {k: self.translate(host, env[k]) for k in PASSED_ENV if k in env}
        passed.update(machine.env)
        words += [f"--env={k}={v}" for k, v in passed.items()]
        words += ["--", *[self.translate(host, a) for a in argv]]
        try:
            control = self._control(host, long_lived=True)
        except ConnectionError as err:
            raise RealHostsError([_ssh_problem(host, machine, str(err))]) from None
        return ssh_argv(machine, control) + [shlex.join(words)], dict(os.environ), True

    def health(self, since: float | None = None, until: float | None = None) -> dict:
        return {"valid": True, "reason": "real network: nothing emulated", "max_lag_ms": None,
                "lag_bound_ms": None}

    def metadata(self) -> dict:
        hosts = {}
        for h, m in self.machines.hosts.items():
            check = self.checks.get(h, {})
            hosts[h] = {"address": m.address, "local": m.local, "ssh": None if m.local else _destination(m),
                        "interface": m.interface, "hostname": check.get("hostname"), "arch": check.get("arch"),
                        "revision": check.get("revision") or None, "dirty": check.get("dirty") not in (None, "0"),
                        **({"power_save": check.get("power_save", "unknown")} if m.interface else {}),
                        **({} if m.local else {"run_root": self.run_root(h), "heartbeat_timeout": m.heartbeat_timeout}),
                        **{k: check[k] for k in ("mtu", "ssid", "tx_bitrate", "signal", "chrony_reference",
                                                 "chrony_system_time", "chrony_leap", "ntp_synchronized")
                           if check.get(k)}}
        return {"profile": "real", "type": "real", "description": self.machines.description,
                "hosts": hosts, "warnings": list(self.warnings), "clocks": self.clocks,
                "clock_max_uncertainty": self.machines.clock_max_uncertainty,
                "records_home": self.records_home, "health": self.health()}

    # --- up and down -----------------------------------------------------------------------
    def up(self) -> "RealHosts":
        if self._is_up:
            return self
        self._keep_connections = True
        try:
            self.check(wait_stale=STALE_WAIT_S)
            for host in self.hosts:
                if self.is_remote(host):
                    self._ssh(host, f"mkdir -p {shlex.quote(self.remote_run_dir(host))}/records "
                                    f"{shlex.quote(self.remote_run_dir(host))}/logs/ros")
        except BaseException:
            self.close_connections()
            raise
        self._is_up = True
        try:
            self.measure_clocks("before")
        except BaseException:
            self.down()   # what up() made on the machines is removed; __exit__ will not run
            raise
        return self

    def down(self) -> None:
        if not self._is_up:
            return
        self._is_up = False
        try:
            try:
                self.measure_clocks("after")
            except Exception as exc:  # noqa: BLE001 - the records matter more than the second clock reading
                self.warnings.append(f"clocks after the run not measured: {exc}")
            for host in self.hosts:
                if self.is_remote(host):
                    self.fetch(host)
        finally:
            self.close_connections()

    # --- SSH connections -------------------------------------------------------------------
    def _control(self, host: str, long_lived: bool = False) -> str | None:
        """The ControlMaster socket of a connection to ``host`` for one more session (opened
        here when needed; ConnectionError with ssh's words when the machine cannot be reached).
        None when the hosts file's ``ssh.options`` set ControlMaster or ControlPath: the user's
        own multiplexing (or none) applies."""
        if user_multiplexing(self.machine(host).ssh):
            return None
        if self._control_dir is None:
            # a private directory (0700) of this run; short, as a socket path must be (< 108 bytes)
            self._control_dir = Path(tempfile.mkdtemp(prefix="netloop-ssh-", dir="/tmp"))
        pool = self._connections.setdefault(host, _Connections(host, self.machine(host), self._control_dir))
        return pool.control(long_lived)   # ConnectionError: ssh's own words

    def close_connections(self) -> None:
        """Every SSH connection of this run closed (``ssh -O exit``), its private directory removed."""
        for pool in self._connections.values():
            try:
                pool.close()
            except (OSError, subprocess.SubprocessError):
                pass
        self._connections = {}
        if self._control_dir is not None:
            shutil.rmtree(self._control_dir, ignore_errors=True)
            self._control_dir = None

    def __enter__(self) -> "RealHosts":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # --- checks, clocks, records -----------------------------------------------------------
    def check(self, wait_stale: float = 0.0) -> None:
        """Every machine checked before anything starts; RealHostsError with one line per problem.
        Netloop processes of an earlier run still running on a machine are a problem (after
        waiting up to ``wait_stale`` seconds for them to end: a run just stopped)."""
        try:
            self._check(wait_stale)
        finally:
            if not self._keep_connections:
                self.close_connections()

    def _check(self, wait_stale: float) -> None:
        problems: list[str] = []
        here = git_revision().get("commit")
        for host, machine in self.machines.hosts.items():
            args = [self.root(host), machine.run_root, machine.interface or ""]
            if machine.local:
                r = subprocess.run(["sh", "-c", _CHECK_SCRIPT, "check", *args], capture_output=True, text=True,
                                   timeout=30)
            else:
                r = self._ssh_run(host, "sh -c " + shlex.quote(_CHECK_SCRIPT) + " check " + shlex.join(args))
                if r.returncode == SSH_LOST:
                    problems.append(_ssh_problem(host, machine, r.stderr))
                    continue
            found = self.checks[host] = _parse_lines(r.stdout)
            if machine.workspace:   # a user's catkin workspace: netloop.machine_check checks it (instead of .build)
                problems += machine_check.check_workspace(self, host, found)
            name = f"{host} ({machine.address})"
            if found.get("root") != "ok":
                problems.append(f"{name}: no netloop checkout at {self.root(host)} (clone it there and run "
                                f"'make build', or set root: in the hosts file)")
                continue
            if found.get("wrapper") != "ok" or found.get("built") != "ok":
                problems.append(f"{name}: the netloop checkout at {self.root(host)} is not built "
                                f"(run 'make build' there)")
            if found.get("ros") != "ok":
                problems.append(f"{name}: ROS not found (no rosmaster after sourcing {self.root(host)}/scripts/env.sh)")
            if found.get("run_root") != "ok":
                problems.append(f"{name}: cannot write run_root {machine.run_root}")
            if found.get("interface") == "missing":
                problems.append(f"{name}: no network interface {machine.interface!r}")
            has = found.get("ros2", "").split()
            lacking = [m for m in self.middlewares if m not in has]
            if lacking:
                problems.append(f"{name}: its build of netloop has no {', '.join(lacking)} (libnetloop_ros2 there has: "
                                f"{', '.join(has) or 'none'}); install the libraries (scripts/setup.sh) and run "
                                f"'make build' there")
            if found.get("power_save") == "on":
                line = (f"{name}: Wi-Fi power save is on for {machine.interface}: frames wait for the radio's "
                        f"wake-ups (up to ~100 ms); switch it off there: iw dev {machine.interface} set power_save off")
                self.warnings.append(line)
                self.log(f"warning: {line}")
            stale = [] if machine.local else netloop_processes(r.stdout, self.run_root(host))
            stale = self._wait_stale_gone(host, stale, wait_stale)   # a run just stopped: they may be ending
            if stale:
                problems.append(f"{name}: {len(stale)} netloop process(es) of an earlier run still running under "
                                f"{self.run_root(host)} (" + "; ".join(f"pid {pid}: run {run}" for pid, run, _ in stale)
                                + "): stop them with 'netloop run --clean-stale', or kill them there")
            there = found.get("revision") or None
            if not machine.local and there != here:
                line = (f"{name}: netloop at revision {(there or 'unknown')[:12]}, this machine at "
                        f"{(here or 'unknown')[:12]}: results may not be comparable")
                if self.machines.revision_mismatch == "refuse":
                    problems.append(line + " (revision_mismatch: refuse)")
                else:
                    self.warnings.append(line)
                    self.log(f"warning: {line}")
        if problems:
            raise RealHostsError(problems)

    def measure_clocks(self, when: str) -> None:
        """Every machine's clock offset against this one's (:func:`netloop.clocksync.measure`)."""
        for host in self.hosts:
            entry = self.clocks.setdefault(host, {})
            if self.machine(host).local:
                entry[when] = {"offset_ms": 0.0, "uncertainty_ms": 0.0, "at": round(time.time(), 3),
                               "samples": 0, "same_clock": True}
                continue
            entry[when] = m = self._measure_clock(host)
            entry["drift_ppm"] = clocksync.drift_ppm(entry.get("before"), entry.get("after"))
            if abs(m["offset_ms"]) > CLOCK_WARN_MS and when == "before":
                line = (f"{host}'s clock is {m['offset_ms']:+.1f} ms off this machine's: delays are corrected, but "
                        f"is its time synchronised (chrony)?")
                self.warnings.append(line)
                self.log(f"warning: {line}")

    def _measure_clock(self, host: str) -> dict:
        argv, env, _ = self.command(host, ["python3", "-m", "netloop.clocksync", "serve", "--bind",
                                           self.address(host), "--idle", "20"], {}, silence=0)
        server = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            line = server.stdout.readline()    # "port N", or nothing when it failed
            if not line.startswith("port "):
                server.wait(timeout=10)
                raise RuntimeError(f"clock server on {host} did not start: {server.stderr.read().strip()[-300:]}")
            return clocksync.measure(self.address(host), int(line.split()[1]), count=self.machines.clock_samples)
        finally:
            server.stdin.close()      # the remote end stops it
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    def fetch(self, host: str, remote: str | None = None) -> bool:
        """Copy ``host``'s records and logs (ROS's, and why each remote process ended) into the run
        directory, then remove them there. ``remote``: its run directory there (default this
        run's). False when they could not be fetched (named in ``fetch_problems``)."""
        machine, remote = self.machine(host), remote or self.remote_run_dir(host)
        incoming = self.run_dir / f".incoming-{host}"
        shutil.rmtree(incoming, ignore_errors=True)
        incoming.mkdir(parents=True)
        error = None
        try:
            control = self._control(host)
            ssh = subprocess.Popen(ssh_argv(machine, control) + [f"cd {shlex.quote(remote)} && tar -cf - records logs"],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            untar = subprocess.run(["tar", "-xf", "-", "-C", str(incoming)], stdin=ssh.stdout,
                                   capture_output=True, timeout=600)
            ssh.stdout.close()
            ssh_err = ssh.stderr.read().decode(errors="replace")
            ssh.stderr.close()
            if ssh.wait(timeout=60) != 0 or untar.returncode != 0:
                error = (ssh_err or untar.stderr.decode(errors="replace")).strip()[-300:] or "tar failed"
        except ConnectionError as err:
            error = " ".join(str(err).split())[-300:]
        except (OSError, subprocess.SubprocessError) as err:
            error = str(err)
        if error is not None:
            shutil.rmtree(incoming, ignore_errors=True)
            problem = (f"records of {host} not fetched from {_destination(machine)}:{remote}: {error} "
                       f"(they stay there: netloop fetch {shlex.quote(str(self.run_dir))})")
            self.fetch_problems.append(problem)
            self.records_home[host] = {"fetched": False, "remote_dir": remote, "error": problem}
            return False
        records = self.run_dir / "records"
        records.mkdir(exist_ok=True)
        files = 0
        for f in sorted((incoming / "records").glob("*")):
            shutil.move(str(f), str(records / f.name))
            files += 1
        logs = self.run_dir / "logs"
        logs.mkdir(exist_ok=True)
        for sub, target in (("ros", f"ros_{host}"), ("remote_exec", f"remote_exec_{host}")):
            if (incoming / "logs" / sub).is_dir():
                shutil.rmtree(logs / target, ignore_errors=True)
                shutil.move(str(incoming / "logs" / sub), str(logs / target))
        shutil.rmtree(incoming, ignore_errors=True)
        stopped = self._watchdog_stops(host, logs / f"remote_exec_{host}")
        self.records_home[host] = {"fetched": True, "files": files, "from": f"{_destination(machine)}:{remote}",
                                   **({"stopped_by_watchdog": stopped} if stopped else {})}
        self._ssh_run(host, f"rm -rf {shlex.quote(remote)}")
        return True

    def _watchdog_stops(self, host: str, directory: Path) -> list[dict]:
        """The processes of ``host`` whose wrapper stopped them for a silent heartbeat (from
        their records in ``directory``), each also named in ``fetch_problems``."""
        out = []
        for path in sorted(directory.glob("*.json")):
            try:
                rec = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if rec.get("kind") != "heartbeat":
                continue
            command = os.path.basename(str((rec.get("command") or ["?"])[0]))
            out.append({"command": command, "reason": rec.get("reason"), "stopped": rec.get("stopped"),
                        "record": str(path.relative_to(self.run_dir))})
            self.fetch_problems.append(f"{host}: netloop-remote-exec stopped {command}: {rec.get('reason')} "
                                       f"({path.relative_to(self.run_dir)})")
        return out

    def _push_inputs(self, host: str, value: str, local: str, remote: str) -> None:
        """Copy the files under ``local`` named in ``value`` (inputs made here: camera frames in
        the run directory, synthetic bags) to ``host``, under ``remote``."""
        for word in _paths_in(value, local):
            if (host, word) in self._pushed:
                continue
            self._pushed.add((host, word))
            target = remote + word[len(local):]
            parent = target.rsplit("/", 1)[0]
            pack = subprocess.Popen(["tar", "-cf", "-", "-C", os.path.dirname(word), os.path.basename(word)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            r = self._ssh_run(host, f"mkdir -p {shlex.quote(parent)} && tar -xf - -C {shlex.quote(parent)}",
                              timeout=600, stdin=pack.stdout)
            pack.stdout.close()
            if pack.wait() != 0 or r.returncode != 0:
                raise RuntimeError(f"could not copy {word} to {host}: {r.stderr.decode(errors='replace').strip()[-300:]}")

    def stale_processes(self, host: str) -> list[tuple[int, str | None, str]]:
        """(pid, run, command line) of the netloop wrappers running on ``host`` under its run_root."""
        r = self._ssh_run(host, _PROCESS_LIST)
        return netloop_processes(r.stdout, self.run_root(host))

    def _wait_stale_gone(self, host: str, stale: list, seconds: float) -> list[tuple[int, str | None, str]]:
        """``stale`` (processes of ``host`` from an earlier run) looked up again every 0.5 s until
        none is left or ``seconds`` have passed; what is still running then."""
        deadline = time.monotonic() + seconds
        while stale and time.monotonic() < deadline:
            time.sleep(0.5)
            stale = self.stale_processes(host)
        return stale

    def clean_stale(self) -> list[str]:
        """Stop the netloop processes of earlier runs on every remote machine (SIGTERM to their
        wrappers, which stop their nodes as on a lost heartbeat; SIGKILL to what is left after
        STALE_WAIT_S). One line per machine where something was stopped."""
        lines = []
        try:
            for host in self.hosts:
                if not self.is_remote(host):
                    continue
                r = self._ssh_run(host, "echo home=$HOME")
                if r.returncode == SSH_LOST:
                    raise RealHostsError([_ssh_problem(host, self.machine(host), r.stderr)])
                self.checks.setdefault(host, {})["home"] = _parse_lines(r.stdout).get("home", "")
                stale = self.stale_processes(host)
                if not stale:
                    continue
                first = stale
                pids = " ".join(str(pid) for pid, _, _ in stale)
                self._ssh_run(host, f"kill -TERM {pids} 2>/dev/null")
                stale = self._wait_stale_gone(host, stale, STALE_WAIT_S)
                if stale:
                    self._ssh_run(host, "kill -KILL " + " ".join(str(pid) for pid, _, _ in stale) + " 2>/dev/null")
                runs = ", ".join(sorted({run or "?" for _, run, _ in first}))
                lines.append(f"{host} ({self.address(host)}): stopped {len(first)} netloop process(es) of an earlier "
                             f"run (run {runs}; pids {pids})")
        finally:
            if not self._keep_connections:
                self.close_connections()
        return lines

    def _ssh_run(self, host: str, command: str, timeout: float = 60, stdin=None) -> subprocess.CompletedProcess:
        """``command`` run by the shell of ``host`` over its SSH connection (exit status 255 and
        ssh's words when the connection could not be opened)."""
        try:
            control = self._control(host)
        except ConnectionError as err:
            return subprocess.CompletedProcess([], SSH_LOST, "", str(err))
        return subprocess.run(ssh_argv(self.machine(host), control) + [command],
                              stdin=stdin if stdin is not None else subprocess.DEVNULL,
                              capture_output=True, text=stdin is None, timeout=timeout)

    def _ssh(self, host: str, command: str) -> str:
        r = self._ssh_run(host, command)
        if r.returncode != 0:
            if r.returncode == SSH_LOST:
                raise RealHostsError([_ssh_problem(host, self.machine(host), r.stderr)])
            raise RuntimeError(f"{host}: '{command}' failed: {r.stderr.strip()[-300:]}")
        return r.stdout


# --- netloop fetch RUN_DIR ------------------------------------------------------------------

def fetch_again(run_dir: Path, spec: str | None = None, log=print) -> int:
    """Fetch again the records a run left on its machines (``link.records_home`` of its
    metadata.json says which, and where), with the hosts file ``spec`` (default: the one the
    run used). metadata.json is updated; a run that failed only because its records did not
    come home is then complete. Returns 0 when everything is home, else 1."""
    run_dir = Path(run_dir)
    meta_path = run_dir / "metadata.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as err:
        raise FileNotFoundError(f"{run_dir}: not a run directory ({err})") from None
    link = meta.get("link") or {}
    missing = {h: e for h, e in (link.get("records_home") or {}).items() if not e.get("fetched")}
    if link.get("type") != "real":
        raise ConfigError("run", f"{run_dir} did not run on real machines: nothing to fetch")
    if not missing:
        log(f"{run_dir}: every machine's records are home already")
        return 0
    spec = spec or (meta.get("experiment") or {}).get("machines")
    if not spec:
        raise ConfigError("machines", f"{run_dir}: its metadata names no hosts file: give --machines")
    hosts = RealHosts(load_machines(spec), run_dir, log)
    hosts._keep_connections = True
    try:
        for host, entry in missing.items():
            if hosts.fetch(host, entry["remote_dir"]):
                log(f"{host}: {hosts.records_home[host]['files']} record files fetched from {entry['remote_dir']}")
                old = entry.get("error")
                if old and meta.get("error"):
                    meta["error"] = "; ".join(p for p in meta["error"].split("; ") if p != old) or None
            else:
                log(hosts.fetch_problems[-1])
            link["records_home"][host] = hosts.records_home[host]
    finally:
        hosts.close_connections()
    stops = [p for p in hosts.fetch_problems if "netloop-remote-exec stopped" in p]
    if stops:
        meta["error"] = "; ".join(([meta["error"]] if meta.get("error") else []) + stops)
    if meta.get("status") == "failed" and not meta.get("error"):
        meta["status"] = "complete"    # on real machines nothing else makes a finished run invalid
    meta_path.write_text(json.dumps(meta, indent=1))
    still = [h for h, e in link["records_home"].items() if not e.get("fetched")]
    if not still:
        log(f"{run_dir}: every machine's records are home (status {meta.get('status')}); "
            f"write the report again: netloop report {shlex.quote(str(run_dir.parent.parent))}")
    return 1 if still else 0


def _cmd_fetch(args) -> int:
    try:
        return fetch_again(Path(args.run_dir), args.machines)
    except RealHostsError as err:
        import sys  # noqa: PLC0415
        print(f"netloop fetch: {err}", file=sys.stderr)
        return 1


def register(sub) -> None:
    """``netloop fetch RUN_DIR [--machines HOSTS]``."""
    p = sub.add_parser("fetch", help="fetch again the records a real-machine run left on its machines",
                       description="Copy home the records and logs that a run on real machines could not fetch "
                                   "(its metadata.json names the machine and the directory there), remove them "
                                   "there, and update metadata.json. Then write the report again (netloop report).")
    p.add_argument("run_dir", help="the run directory (results/<campaign>/runs/<run>)")
    p.add_argument("--machines", metavar="HOSTS", default=None,
                   help="the hosts file to reach the machines with (default: the one the run used)")
    p.set_defaults(func=_cmd_fetch)


def clean_stale_machines(spec: str, log=print) -> None:
    """``netloop run --clean-stale``: the netloop processes of earlier runs stopped on every
    machine of the hosts file ``spec`` (one line per machine where some were)."""
    for line in RealHosts(load_machines(spec), Path("clean"), log).clean_stale():
        log(f"netloop: {line}")
