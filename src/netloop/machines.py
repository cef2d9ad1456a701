"""Real machines: the hosts of a run as computers reached over SSH, not network namespaces.

An experiment runs on real machines when it names a hosts file (``machines: lab`` for
``config/hosts/lab.yaml``, or a path; ``netloop run --machines``). The experiment file is
otherwise the same: its ``link`` is then not emulated, the run goes over the network
between the machines as it is, and ``metadata.json`` describes that network (interface,
MTU, SSID and bitrate where ``iw`` reads them).

:class:`RealHosts` implements :class:`netloop.hosts.Hosts`, as the namespaces of
:class:`~netloop.testbed.Testbed` do, so the runner, the transports and the loops do not know
the difference:

* ``up()`` checks every machine before anything starts (reachable over SSH, the package
  there and built, ROS there, the same git revision, a writable run directory) and refuses
  with one line per problem; then it names each machine's record folder in ``records_home``
  (the run writes metadata.json at once, so records are found even if this process is
  killed) and measures every clock against this machine's (:mod:`netloop.clocksync`).
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

The jobs around it have modules of their own: the hosts file as a typed model
(:mod:`netloop.hosts_file`), SSH connections (:mod:`netloop.ssh`), the checks before a run
(:mod:`netloop.machine_readiness`), records home and ``netloop fetch``
(:mod:`netloop.records_home`).

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

import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from . import clocksync, machine_check, machine_readiness, paths, records_home
from .hosts import Hosts, read_here
from .hosts_file import AFTER_DRIVER_S, Machine, Machines, load_machines
from .schema import ConfigError
from .machine_readiness import STALE_WAIT_S
from .remote_session import RemoteSession
from .ssh import SSH_LOST, RealHostsError, SshPool, destination, ssh_argv, ssh_problem

__all__ = ["RealHosts", "RealHostsError", "SSH_LOST", "clean_stale_machines", "load_machines", "ssh_argv"]

#: environment variables of a node that are passed to its machine (the rest comes from the
#: machine's own checkout: scripts/env.sh)
PASSED_ENV = ("ROS_MASTER_URI", "ROS_IP", "ROS_LOG_DIR", "ROS_HOME")
#: a clock further off than this [ms] is worth a warning (a machine without time sync)
CLOCK_WARN_MS = 100.0
#: data this checkout generates (not in git), copied to a machine when a command names it
GENERATED = paths.REPO / ".build" / "bags"
#: the car driver's node (its wrapper stops first when the operator's heartbeat falls silent)
DRIVERS = ("car_node.py",)


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


class RealHosts(Hosts):
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
        self._ssh_pool = SshPool()
        #: keep the SSH connections open after a check (from up() to down(); check() alone
        #: closes what it opened)
        self.keep_connections = False
        #: called once every machine's record folder is named in ``records_home``, before
        #: anything starts on a machine (the run writes its metadata.json then)
        self.on_records_named: Callable[[], None] | None = None
        #: the run's UDP heartbeat: its datagrams, and each machine's listener
        #: what the run keeps on each remote machine besides its nodes: private files, the
        #: heartbeat's listener
        self.session = RemoteSession(self)

    # --- the Hosts interface -------------------------------------------------------------
    @property
    def hosts(self) -> list[str]:
        return list(self.machines.hosts)

    @property
    def link_mbit(self) -> float | None:
        """The network's rate as the hosts file gives it (None: unknown)."""
        return self.machines.link_mbit

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
                silence: float | None = None, record: bool = True) -> tuple[list[str], dict | None, bool]:
        """(argv, env, remote) that start ``argv`` on ``host`` with ``env``'s ROS settings. On a
        remote machine the node stops when the operator's heartbeat is silent for ``silence``
        seconds (default: the machine's ``heartbeat_timeout``, a second more for all but the
        car driver; 0: never, for a process that ends by itself); its wrapper records why it
        ended in the run's folder there (``record``: False for a check outside a run)."""
        machine = self.machine(host)
        env = dict(env or os.environ)
        if machine.local:
            env.update(machine.env)
            return list(argv), env, False
        if silence is None:
            driver = any(str(a).endswith(DRIVERS) for a in argv)
            silence = machine.heartbeat_timeout + (0.0 if driver else AFTER_DRIVER_S)
        words = [*machine_check.wrapper(machine, self.root(host)), f"--run={self.label}", f"--silence={silence:g}"]
        if record:
            words.append(f"--record={self.remote_run_dir(host)}/logs/remote_exec")
        words += self.session.wrapper_words(host)   # the heartbeat's file, the env: file
        passed = {k: self.translate(host, env[k]) for k in PASSED_ENV if k in env}
        words += [f"--env={k}={v}" for k, v in passed.items()]
        words += ["--", *[self.translate(host, a) for a in argv]]
        try:
            control = self.control(host, long_lived=True)
        except ConnectionError as err:
            raise RealHostsError([ssh_problem(host, machine, str(err))]) from None
        return ssh_argv(machine, control) + [shlex.join(words)], dict(os.environ), True

    def read_text(self, host: str, path: str) -> str | None:
        """The file ``path`` on ``host``: read there over SSH for a remote machine."""
        if not self.is_remote(host):
            return read_here(path)
        try:
            text = self._ssh(host, f"cat {shlex.quote(self.translate(host, path))} 2>/dev/null || true")
        except (OSError, RuntimeError):
            return None
        return text or None

    def interfaces(self) -> tuple[dict[str, str], dict[str, int]]:
        """The hosts file's interfaces (their MTU is recorded by the check, not assumed)."""
        return {h: m.interface for h, m in self.machines.hosts.items() if m.interface}, {}

    def records_problems(self) -> list[str]:
        return list(self.fetch_problems)

    def health(self, since: float | None = None, until: float | None = None) -> dict:
        return {"valid": True, "reason": "real network: nothing emulated", "max_lag_ms": None,
                "lag_bound_ms": None}

    def metadata(self) -> dict:
        hosts = {}
        for h, m in self.machines.hosts.items():
            check = self.checks.get(h, {})
            hosts[h] = {"address": m.address, "local": m.local, "ssh": None if m.local else destination(m),
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
        self.keep_connections = True
        try:
            self.check(wait_stale=STALE_WAIT_S)
            self._name_record_folders()
            for host in self.hosts:
                if self.is_remote(host):
                    self._ssh(host, f"mkdir -p {shlex.quote(self.remote_run_dir(host))}/records "
                                    f"{shlex.quote(self.remote_run_dir(host))}/logs/ros")
                    self.session.write_env_file(host)
        except BaseException:
            self.close_connections()
            raise
        self._is_up = True
        try:
            for host in self.hosts:
                if self.is_remote(host) and self.machine(host).heartbeat_udp:
                    self.session.start_listener(host)
            self.measure_clocks("before")
        except BaseException:
            self.down()   # what up() made on the machines is removed; __exit__ will not run
            raise
        return self

    def _name_record_folders(self) -> None:
        """Every remote machine's record folder named in ``records_home`` (not fetched yet), and
        ``on_records_named`` told, before anything starts there: whatever happens to this
        process from now on, ``netloop fetch`` knows where the run's records are."""
        for host in self.hosts:
            if self.is_remote(host):
                self.records_home[host] = {"fetched": False, "remote_dir": self.remote_run_dir(host),
                                           "from": f"{destination(self.machine(host))}:{self.remote_run_dir(host)}"}
        if self.on_records_named is not None:
            self.on_records_named()

    def down(self) -> None:
        if not self._is_up:
            return
        self._is_up = False
        try:
            self.session.stop_listeners()
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
    def control(self, host: str, long_lived: bool = False) -> str | None:
        """The ControlMaster socket of a connection to ``host`` for one more session
        (:meth:`netloop.ssh.SshPool.control`)."""
        return self._ssh_pool.control(host, self.machine(host), long_lived)

    def close_connections(self) -> None:
        """Every SSH connection of this run closed (``ssh -O exit``), its private directory removed."""
        self._ssh_pool.close()

    # --- checks, clocks, records -----------------------------------------------------------
    def check(self, wait_stale: float = 0.0) -> None:
        """Every machine checked before anything starts; RealHostsError with one line per problem.
        Netloop processes of an earlier run still running on a machine are a problem (after
        waiting up to ``wait_stale`` seconds for them to end: a run just stopped)."""
        try:
            machine_readiness.check(self, wait_stale)
        finally:
            if not self.keep_connections:
                self.close_connections()

    def measure_clocks(self, when: str) -> None:
        """Every machine's clock offset against this one's (:func:`netloop.clocksync.measure`)."""
        for host in self.hosts:
            entry = self.clocks.setdefault(host, {})
            if self.machine(host).local:
                entry[when] = {"offset_ms": 0.0, "uncertainty_ms": 0.0, "at": round(time.time(), 3),
                               "samples": 0, "same_clock": True}
                continue
            entry[when] = m = self.measure_clock(host)
            entry["drift_ppm"] = clocksync.drift_ppm(entry.get("before"), entry.get("after"))
            if abs(m["offset_ms"]) > CLOCK_WARN_MS and when == "before":
                line = (f"{host}'s clock is {m['offset_ms']:+.1f} ms off this machine's: delays are corrected, but "
                        f"is its time synchronised (chrony)?")
                self.warnings.append(line)
                self.log(f"warning: {line}")

    def measure_clock(self, host: str, count: int | None = None, record: bool = True) -> dict:
        """One clock measurement of ``host`` (``count`` exchanges, default ``clock_samples``):
        its server started there over SSH (``record``: see :meth:`command`),
        :func:`netloop.clocksync.measure` here."""
        argv, env, _ = self.command(host, ["python3", "-m", "netloop.clocksync", "serve", "--bind",
                                           self.address(host), "--idle", "20", *self.session.allow()], {}, silence=0,
                                    record=record)
        server = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            line = server.stdout.readline()    # "port N", or nothing when it failed
            if not line.startswith("port "):
                server.wait(timeout=10)
                raise RuntimeError(f"clock server on {host} did not start: {server.stderr.read().strip()[-300:]}")
            return clocksync.measure(self.address(host), int(line.split()[1]),
                                     count=count or self.machines.clock_samples)
        finally:
            server.stdin.close()      # the remote end stops it
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    def fetch(self, host: str, remote: str | None = None) -> bool:
        """Copy ``host``'s records and logs home (:func:`netloop.records_home.fetch`); False when
        they could not be fetched (named in ``fetch_problems``)."""
        return records_home.fetch(self, host, remote)

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

    def clean_stale(self) -> list[str]:
        """The netloop processes of earlier runs stopped on every remote machine
        (:func:`netloop.machine_readiness.clean_stale`)."""
        try:
            return machine_readiness.clean_stale(self)
        finally:
            if not self.keep_connections:
                self.close_connections()

    def _ssh_run(self, host: str, command: str, timeout: float = 60, stdin=None,
                 data: bytes | None = None) -> subprocess.CompletedProcess:
        """``command`` run by the shell of ``host`` over its SSH connection (exit status 255 and
        ssh's words when the connection could not be opened); ``stdin`` a file to read, or
        ``data`` the bytes, as its standard input."""
        try:
            control = self.control(host)
        except ConnectionError as err:
            return subprocess.CompletedProcess([], SSH_LOST, "", str(err))
        argv = ssh_argv(self.machine(host), control) + [command]
        if data is not None:
            r = subprocess.run(argv, input=data, capture_output=True, timeout=timeout)
            return subprocess.CompletedProcess(argv, r.returncode, r.stdout.decode(errors="replace"),
                                               r.stderr.decode(errors="replace"))
        return subprocess.run(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                              capture_output=True, text=stdin is None, timeout=timeout)

    def _ssh(self, host: str, command: str, data: bytes | None = None) -> str:
        r = self._ssh_run(host, command, data=data)
        if r.returncode != 0:
            if r.returncode == SSH_LOST:
                raise RealHostsError([ssh_problem(host, self.machine(host), r.stderr)])
            raise RuntimeError(f"{host}: '{command}' failed: {r.stderr.strip()[-300:]}")
        return r.stdout



def clean_stale_machines(spec: str, log=print) -> None:
    """``netloop run --clean-stale``: the netloop processes of earlier runs stopped on every
    machine of the hosts file ``spec`` (one line per machine where some were)."""
    for line in RealHosts(load_machines(spec), Path("clean"), log).clean_stale():
        log(f"netloop: {line}")
