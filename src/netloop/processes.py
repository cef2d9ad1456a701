"""Starting and stopping the processes of a run, with nothing left behind.

Every process is started in its own process group with its output in a log file, and
with PR_SET_PDEATHSIG so that it is terminated even if the process that started it is
killed with SIGKILL. Stopping sends SIGINT (what roscpp and roslaunch expect), then
SIGTERM, then SIGKILL, each after a grace period, and only ever to the PIDs started here.

A process started over SSH (``remote``) gets a pipe as its standard input, on which a
heartbeat thread writes one byte every :data:`HEARTBEAT_S` seconds while it runs: its remote
end (:mod:`netloop.remote_exec`) stops the node when the heartbeat falls silent, which is
how a robot notices an operator that vanished with the network.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    # SIGINT as the default: an ignored SIGINT is inherited across exec (netloop started by a
    # shell as a background job), and rosmaster, a Python program, then never sees the SIGINT
    # that stop() sends: 3 s of grace and a SIGTERM for every master of every run
    _libc.signal(signal.SIGINT, 0)   # SIG_DFL (libc's: signal.signal needs the main thread)
    os.setpgid(0, 0)


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: seconds between two heartbeat bytes to a remote process (its machine's silence bound is larger)
HEARTBEAT_S = 1.0
#: a process's role, declared when it starts: it says when a run stops it (the drain order):
#: senders first (a flow's source or bag player: it stops sending, and messages in flight
#: arrive), then every other node, then the ROS cores (master, rosout), so that nodes
#: unregister from a master still there
SENDER, NODE, CORE = "sender", "node", "core"
ROLES = (SENDER, NODE, CORE)


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    popen: subprocess.Popen
    log_path: Path
    started: float = field(default_factory=time.time)
    host: str | None = None          # the testbed host it runs on (None: not on a host)
    remote: bool = False             # an ssh client: its node runs on another machine
    cpu_s: float | None = None       # CPU time used, as last sampled (:meth:`sample_cpu`)
    role: str = NODE                 # SENDER, NODE or CORE: when a run stops it (see ROLES)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        return self.popen.poll()

    def sample_cpu(self) -> float | None:
        """Read the CPU time (user + system, its threads and waited-for children) the process
        has used so far into ``cpu_s``; a process already gone keeps its last sample. Not for
        a remote process (its CPU is on another machine; the ssh client's is not the node's)."""
        if self.popen.returncode is None and not self.remote:
            try:
                fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
                self.cpu_s = sum(int(f) for f in fields[11:15]) / _CLOCK_TICKS   # utime stime cutime cstime
            except (OSError, IndexError, ValueError):
                pass
        return self.cpu_s


class ProcessGroup:
    """The processes of one run; a context manager that stops them all on exit."""

    def __init__(self, log_dir: Path):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.processes: list[ManagedProcess] = []
        self._cpu_sampled = 0.0
        self._stdin_lock = threading.Lock()      # a heartbeat is never written into a pipe being closed
        self._heartbeat: threading.Thread | None = None
        self._closing = threading.Event()

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None,
              prefix: list[str] | None = None, host: str | None = None, remote: bool = False,
              role: str = NODE) -> ManagedProcess:
        """Start ``argv`` (behind ``prefix``, e.g. ``ip netns exec robot``), output to logs/<name>.log;
        ``role`` (one of ROLES) says when it is stopped.

        ``remote``: ``argv`` is an ssh client whose remote end (:mod:`netloop.remote_exec`) stops
        the node when its standard input ends; it gets a pipe, closed to stop it gracefully."""
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(list(prefix or []) + list(argv), stdin=subprocess.PIPE if remote else
                                     subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     preexec_fn=_die_with_parent, close_fds=True)
        if role not in ROLES:
            raise ValueError(f"role {role!r} of {name}: allowed: {', '.join(ROLES)}")
        proc = ManagedProcess(name, list(argv), popen, log_path, host=host, remote=remote, role=role)
        self.processes.append(proc)
        if remote:
            os.set_blocking(popen.stdin.fileno(), False)   # a full pipe skips a beat, never blocks
            if self._heartbeat is None:
                self._heartbeat = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
                self._heartbeat.start()
        return proc

    def _beat(self) -> None:
        """One byte every HEARTBEAT_S seconds to every remote process still running."""
        while not self._closing.wait(HEARTBEAT_S):
            for proc in list(self.processes):
                if not proc.remote:
                    continue
                with self._stdin_lock:
                    if proc.popen.stdin is None or proc.popen.stdin.closed or proc.popen.returncode is not None:
                        continue
                    try:
                        os.write(proc.popen.stdin.fileno(), b".")
                    except (BlockingIOError, BrokenPipeError, OSError):
                        pass

    def sample_cpu(self, every: float = 1.0) -> None:
        """Sample the CPU time of every live process, at most once per ``every`` seconds (the
        wait loops call it; a process that ends by itself misses at most its last interval)."""
        now = time.monotonic()
        if now - self._cpu_sampled >= every:
            self._cpu_sampled = now
            for proc in self.processes:
                proc.sample_cpu()

    def cpu_by_host(self, seconds: float) -> dict[str, dict[str, Any]]:
        """Per host: the CPU seconds its processes used, that as a share of one core over
        ``seconds`` of run, and each process's seconds."""
        out: dict[str, dict[str, Any]] = {}
        for proc in self.processes:
            if proc.host is None or proc.cpu_s is None:
                continue
            entry = out.setdefault(proc.host, {"cpu_seconds": 0.0, "processes": {}})
            entry["cpu_seconds"] += proc.cpu_s
            entry["processes"][proc.name] = round(proc.cpu_s, 3)
        for entry in out.values():
            entry["cpu_seconds"] = round(entry["cpu_seconds"], 3)
            entry["core_share"] = round(entry["cpu_seconds"] / seconds, 4) if seconds > 0 else None
        return out

    def stop(self, proc: ManagedProcess, grace: float = 3.0) -> int | None:
        """Stop one process: SIGINT, then SIGTERM, then SIGKILL (a local ROS core, role CORE:
        SIGTERM, then SIGKILL). Returns its exit status.

        Descendants that left its process group (roslaunch, for one, starts its children
        with setsid) are collected first and killed if they outlive it."""
        proc.sample_cpu()
        descendants = _descendants(proc.pid)
        if proc.remote and proc.popen.stdin and not proc.popen.stdin.closed:
            try:   # the remote end stops the node (SIGINT, SIGTERM, SIGKILL) and ssh returns its status
                with self._stdin_lock:
                    proc.popen.stdin.close()
                proc.popen.wait(timeout=grace + 6.0)
            except (OSError, subprocess.TimeoutExpired):
                pass
        steps = ((signal.SIGINT, grace), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0))
        if proc.role == CORE and not proc.remote:
            steps = steps[1:]   # a local ROS core from SIGTERM on: see stop_all
        for sig, wait in steps:
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)  # its own group: the process and its children
            except ProcessLookupError:
                break
            try:
                proc.popen.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        for pid, start in descendants:
            if _start_time(pid) == start:  # still the same process, not a reused PID
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return proc.poll()

    def stop_together(self, procs: list[ManagedProcess], grace: float = 3.0) -> dict[str, int | None]:
        """:meth:`stop` each of ``procs`` at the same time (one thread each), so that their
        graces overlap. Returns name -> exit status."""
        status: dict[str, int | None] = {}
        threads = [threading.Thread(target=lambda p=p: status.__setitem__(p.name, self.stop(p, grace)),
                                    name=f"stop-{p.name}", daemon=True) for p in procs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return status

    def with_role(self, role: str) -> list[ManagedProcess]:
        """The processes started with ``role``, in the order they were started."""
        return [p for p in self.processes if p.role == role]

    def stop_all(self) -> dict[str, int | None]:
        """Stop every process: the nodes (senders among them, if still running) together, then
        the ROS cores (role CORE) together, so that nodes unregister from a master still there.
        The cores, once no node is left, hold nothing a run keeps: a local one ends with SIGTERM
        (SIGINT cost rosmaster's and rosout's shutdown, ~0.3 s a run); a remote one is stopped by
        its wrapper like every remote process.
        Returns name -> exit status (in the order the processes were started last first)."""
        procs = list(reversed(self.processes))
        status: dict[str, int | None] = {}
        for wave in ([p for p in procs if p.role != CORE], [p for p in procs if p.role == CORE]):
            status.update(self.stop_together(wave))
        out = {p.name: status.get(p.name) for p in procs}
        self._closing.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=HEARTBEAT_S + 1.0)
        return out

    def __enter__(self) -> "ProcessGroup":
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (to tell it from a reused PID)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def _descendants(pid: int) -> list[tuple[int, int | None]]:
    """Every descendant of ``pid`` now, as (pid, start time)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                found.append((child, _start_time(child)))
                todo.append(child)
    return found


def log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log file, for error messages."""
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])
