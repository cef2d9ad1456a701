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
  home into the run directory (``scp``), so ``netloop report`` works unchanged; a machine
  whose records could not be fetched is named in ``fetch_problems``.

A machine with ``local: true`` is the one ``netloop run`` runs on: its processes start
here, without SSH, and write into the run directory directly.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from . import clocksync, paths
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


@section("how to reach a machine over SSH (OpenSSH's ssh and scp; ~/.ssh/config applies too)")
class Ssh:
    user: str | None = key(Str(None, "login name (default: ssh's own choice: ~/.ssh/config, else the local user)"))
    host: str | None = key(Str(None, "name or address to connect to (default: the machine's address)"))
    port: int = key(Int(22, "SSH port", ge=1, le=65535))
    key_file: str | None = key(Str(None, "private key file (default: ssh's own: the agent, ~/.ssh/id_*)"), "key")
    known_hosts: str | None = key(Str(None, "known_hosts file (default: ssh's own, ~/.ssh/known_hosts)"))
    options: list[str] = key(List(Str(), [], "more ssh -o options, e.g. [ConnectTimeout=10]"))
    connect_timeout: float = key(Num(5.0, "seconds to wait for the connection", gt=0, le=120))


@section("one machine of the run")
class Machine:
    address: str = key(Str(doc="IPv4 address the other machines reach it at (its ROS_IP)"))
    local: bool = key(Bool(False, "the machine netloop runs on: its processes start here, without SSH"))
    ssh: Ssh = key(Ssh.schema)
    root: str | None = key(Str(None, "the netloop checkout on that machine, built with 'make build' "
                                     "(default: the same path as here)"))
    run_root: str = key(Str("/tmp/netloop-runs", "where its records are written during a run (copied home "
                                                 "after it, then removed there)"))
    interface: str | None = key(Str(None, "its network interface, e.g. wlan0 (recorded: MTU, SSID, bitrate)"))
    env: dict[str, str] = key(Map({}, {}, "more environment variables of its processes", extra=Str(nonempty=False)))


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
    return validate(Machines.schema, load_yaml(str(path)) or {}, str(path))


class RealHostsError(RuntimeError):
    """Machines that cannot run the experiment: one line per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("the machines cannot run this experiment:\n  " + "\n  ".join(problems))
        self.problems = problems


def ssh_options(ssh: Ssh) -> list[str]:
    """Options common to ssh and scp: batch mode (never a password prompt), timeouts, keepalives
    (a lost connection is noticed within ~6 s), and the hosts file's key and options."""
    opts = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={ssh.connect_timeout:g}",
            "-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"]
    if ssh.key_file:
        opts += ["-i", os.path.expanduser(ssh.key_file), "-o", "IdentitiesOnly=yes"]
    if ssh.known_hosts:
        opts += ["-o", f"UserKnownHostsFile={os.path.expanduser(ssh.known_hosts)}"]
    for option in ssh.options:
        opts += ["-o", option]
    return opts


def _destination(machine: Machine) -> str:
    host = machine.ssh.host or machine.address
    return f"{machine.ssh.user}@{host}" if machine.ssh.user else host


def ssh_argv(machine: Machine) -> list[str]:
    """``ssh ... user@host`` (the remote command follows as one shell-quoted word)."""
    return ["ssh", "-T", "-p", str(machine.ssh.port), *ssh_options(machine.ssh), _destination(machine)]


def scp_argv(machine: Machine) -> list[str]:
    return ["scp", "-q", "-r", "-P", str(machine.ssh.port), *ssh_options(machine.ssh)]


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


# Run on every machine (over SSH, or here for the local one) before a run: key=value lines.
_CHECK_SCRIPT = r"""
root=$1; run_root=$2; iface=$3
echo "hostname=$(hostname)"
echo "arch=$(uname -m)"
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
  fi
fi
lib="$root/.build/ws/devel/lib/libnetloop_ros2.so"; info="$root/.build/ws/devel/lib/netloop/netloop_ros2_info"
if [ -x "$info" ]; then
  echo "ros2=$("$info" 2>/dev/null | grep -oE 'cyclonedds|fastdds|zenoh' | sort -u | tr '\n' ' ')"
elif [ -r "$lib" ]; then
  m=""
  readelf -d "$lib" 2>/dev/null | grep -q 'libddsc\.so' && m="$m cyclonedds"
  readelf -d "$lib" 2>/dev/null | grep -q 'libfastrtps\.so' && m="$m fastdds"
  nm -D --defined-only "$lib" 2>/dev/null | grep -qE ' (z_|nlz_)|zenoh_shim|ZenohParticipant' && m="$m zenoh"
  echo "ros2=$m"
else
  echo "ros2="
fi
if command -v chronyc >/dev/null 2>&1; then
  chronyc -n tracking 2>/dev/null | sed -n 's/^Reference ID *: \(.*\)/chrony_reference=\1/p; s/^System time *: \(.*\)/chrony_system_time=\1/p; s/^Leap status *: \(.*\)/chrony_leap=\1/p'
elif command -v timedatectl >/dev/null 2>&1; then
  echo "ntp_synchronized=$(timedatectl show -p NTPSynchronized --value 2>/dev/null)"
fi
""".replace("BUILT_MARK", BUILT_MARK)


def _parse_lines(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip()
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
        return self.machine(host).root or str(paths.REPO)

    def remote_run_dir(self, host: str) -> str:
        return f"{self.machine(host).run_root.rstrip('/')}/{self.label}"

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
            self._push_inputs(host, value, str(GENERATED), self.root(host) + str(GENERATED)[len(repo):])
            return value.replace(repo, self.root(host))
        return value

    def command(self, host: str, argv: list[str], env: dict[str, str] | None) -> tuple[list[str], dict | None, bool]:
        """(argv, env, remote) that start ``argv`` on ``host`` with ``env``'s ROS settings."""
        machine = self.machine(host)
        env = dict(env or os.environ)
        if machine.local:
            env.update(machine.env)
            return list(argv), env, False
        words = [f"{self.root(host)}/bin/netloop-remote-exec"]
        passed = {k: self.translate(host, env[k]) for k in PASSED_ENV if k in env}
        passed.update(machine.env)
        words += [f"--env={k}={v}" for k, v in passed.items()]
        words += ["--", *[self.translate(host, a) for a in argv]]
        return ssh_argv(machine) + [shlex.join(words)], dict(os.environ), True

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
        self.check()
        for host in self.hosts:
            if self.is_remote(host):
                self._ssh(host, f"mkdir -p {shlex.quote(self.remote_run_dir(host))}/records "
                                f"{shlex.quote(self.remote_run_dir(host))}/logs/ros")
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
            self.measure_clocks("after")
        except Exception as exc:  # noqa: BLE001 - the records matter more than the second clock reading
            self.warnings.append(f"clocks after the run not measured: {exc}")
        for host in self.hosts:
            if self.is_remote(host):
                self.fetch(host)

    def __enter__(self) -> "RealHosts":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # --- checks, clocks, records -----------------------------------------------------------
    def check(self) -> None:
        """Every machine checked before anything starts; RealHostsError with one line per problem."""
        problems: list[str] = []
        here = git_revision().get("commit")
        for host, machine in self.machines.hosts.items():
            args = [self.root(host), self.remote_run_dir(host).rsplit("/", 1)[0], machine.interface or ""]
            if machine.local:
                r = subprocess.run(["sh", "-c", _CHECK_SCRIPT, "check", *args], capture_output=True, text=True,
                                   timeout=30)
            else:
                r = self._ssh_run(host, "sh -c " + shlex.quote(_CHECK_SCRIPT) + " check " + shlex.join(args))
                if r.returncode == SSH_LOST:
                    problems.append(_ssh_problem(host, machine, r.stderr))
                    continue
            found = self.checks[host] = _parse_lines(r.stdout)
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
                                           self.address(host), "--idle", "20"], {})
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

    def fetch(self, host: str) -> None:
        """Copy ``host``'s records and ROS logs into the run directory, then remove them there."""
        machine, remote = self.machine(host), self.remote_run_dir(host)
        incoming = self.run_dir / f".incoming-{host}"
        shutil.rmtree(incoming, ignore_errors=True)
        incoming.mkdir(parents=True)
        r = subprocess.run(scp_argv(machine) + [f"{_destination(machine)}:{remote}/records",
                                                f"{_destination(machine)}:{remote}/logs", str(incoming)],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            problem = f"records of {host} not fetched from {_destination(machine)}:{remote}: {r.stderr.strip()[-300:]}"
            self.fetch_problems.append(problem)
            self.records_home[host] = {"fetched": False, "remote_dir": remote, "error": problem}
            return
        records = self.run_dir / "records"
        records.mkdir(exist_ok=True)
        files = 0
        for f in sorted((incoming / "records").glob("*")):
            shutil.move(str(f), str(records / f.name))
            files += 1
        if (incoming / "logs" / "ros").is_dir():
            shutil.move(str(incoming / "logs" / "ros"), str(self.run_dir / "logs" / f"ros_{host}"))
        shutil.rmtree(incoming, ignore_errors=True)
        self.records_home[host] = {"fetched": True, "files": files, "from": f"{_destination(machine)}:{remote}"}
        self._ssh_run(host, f"rm -rf {shlex.quote(remote)}")

    def _push_inputs(self, host: str, value: str, local: str, remote: str) -> None:
        """Copy the files under ``local`` named in ``value`` (inputs made here: camera frames in
        the run directory, synthetic bags) to ``host``, under ``remote``."""
        for word in value.replace("=", " ").replace(",", " ").split():
            if not word.startswith(local) or (host, word) in self._pushed or not os.path.exists(word):
                continue
            self._pushed.add((host, word))
            target = remote + word[len(local):]
            self._ssh(host, f"mkdir -p {shlex.quote(target.rsplit('/', 1)[0])}")
            machine = self.machine(host)
            r = subprocess.run(scp_argv(machine) + [word, f"{_destination(machine)}:{target}"],
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"could not copy {word} to {host}: {r.stderr.strip()[-300:]}")

    def _ssh_run(self, host: str, command: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(ssh_argv(self.machine(host)) + [command], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)

    def _ssh(self, host: str, command: str) -> str:
        r = self._ssh_run(host, command)
        if r.returncode != 0:
            if r.returncode == SSH_LOST:
                raise RealHostsError([_ssh_problem(host, self.machine(host), r.stderr)])
            raise RuntimeError(f"{host}: '{command}' failed: {r.stderr.strip()[-300:]}")
        return r.stdout
