"""Small helpers shared by the testbed: running ``ip``/``tc``, namespaces, child processes.

Every child process the testbed starts is created with :func:`spawn`, which makes it die
with its parent (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) and puts it in its own session, so
Ctrl-C in a terminal reaches only the runner, which then tears the testbed down in order.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Sequence

from ..polling import wait_for as _wait_for

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)

#: the package's one polling helper (netloop.polling), also importable from here
wait_for = _wait_for


class TestbedError(RuntimeError):
    """The testbed could not be brought up or torn down; the message says why."""

    __test__ = False  # not a pytest test class


def run(cmd: Sequence[str], check: bool = True, timeout: float = 20.0) -> subprocess.CompletedProcess:
    """Run a short command, capturing output; raise TestbedError naming it on failure."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise _not_found(cmd) from None
    except subprocess.TimeoutExpired:
        raise TestbedError(_timed_out(cmd, timeout)) from None
    if check and proc.returncode != 0:
        raise TestbedError(_failed(cmd, proc.returncode, proc.stdout, proc.stderr))
    return proc


def run_together(cmds: Sequence[Sequence[str]], check: bool = True, timeout: float = 20.0) -> None:
    """Run several short commands at the same time (one process each), waiting for all; raise
    TestbedError naming the first that failed. What they change then takes effect within a
    process start of each other rather than one command's time after another."""
    procs: list[tuple[Sequence[str], subprocess.Popen]] = []
    problems: list[str] = []
    try:
        for cmd in cmds:
            try:
                procs.append((cmd, subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                    text=True)))
            except FileNotFoundError:
                raise _not_found(cmd) from None
    finally:   # every command started is waited for, even when a later one could not start
        for cmd, proc in procs:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                problems.append(_timed_out(cmd, timeout))
                continue
            if check and proc.returncode != 0:
                problems.append(_failed(cmd, proc.returncode, out, err))
    if problems:
        raise TestbedError(problems[0])


def _not_found(cmd: Sequence[str]) -> TestbedError:
    return TestbedError(f"command not found: {cmd[0]}")


def _timed_out(cmd: Sequence[str], timeout: float) -> str:
    return f"command timed out after {timeout:g} s: {' '.join(cmd)}"


def _failed(cmd: Sequence[str], returncode: int, out: str, err: str) -> str:
    return f"'{' '.join(cmd)}' failed ({returncode}): {(err or out).strip()}"


def ip_batch(lines: Sequence[str], netns: str | None = None) -> None:
    """Run several ``ip`` commands in one process (``ip -batch``); fast and all-or-error."""
    cmd = ["ip"] + (["-n", netns] if netns else []) + ["-batch", "-"]
    try:
        proc = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True,
                              timeout=20)
    except FileNotFoundError:
        raise TestbedError("command not found: ip (install iproute2)") from None
    if proc.returncode != 0:
        raise TestbedError(f"ip {'-n ' + netns + ' ' if netns else ''}-batch failed: "
                           f"{proc.stderr.strip()}\n  commands: {'; '.join(lines)}")


def netns_list() -> list[str]:
    """Names of the named network namespaces (``/run/netns``)."""
    try:
        return sorted(os.listdir("/run/netns"))
    except FileNotFoundError:
        return []


def netns_exists(name: str) -> bool:
    return os.path.exists(f"/run/netns/{name}")


def netns_add(name: str) -> None:
    run(["ip", "netns", "add", name])


def netns_delete(name: str) -> None:
    """Delete a named namespace if it exists (its interfaces go with it)."""
    if netns_exists(name):
        run(["ip", "netns", "delete", name], check=False)


def sysctl(netns: str, settings: dict[str, str | int]) -> None:
    """Set sysctls inside a namespace (``/proc/sys/net`` is per namespace)."""
    args = [f"{k}={v}" for k, v in settings.items()]
    run(["ip", "netns", "exec", netns, "sysctl", "-q", "-w", *args])


def proc_start_time(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (to tell a PID from a reused one)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # the command name (field 2) may contain spaces: split after its closing parenthesis
    fields = data[data.rfind(")") + 2:].split()
    return int(fields[19])  # field 22 overall


def alive(pid: int | None, start_time: int | None = None) -> bool:
    """True if ``pid`` runs and (when given) started at ``start_time`` (not a zombie)."""
    if not pid:
        return False
    st = proc_start_time(pid)
    if st is None or (start_time is not None and st != start_time):
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, IndexError):
        return False


def killed_with_parent(parent: int):
    """A preexec_fn: the child starts a session of its own and gets SIGKILL when ``parent``'s
    starting thread ends (exits at once if ``parent`` is already gone)."""
    def preexec():
        os.setsid()
        if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            os._exit(126)
        if os.getppid() != parent:  # parent died before prctl took effect
            os._exit(126)
    return preexec


def spawn(cmd: Sequence[str], log: Path | None, env: dict | None = None,
          die_with_parent: bool = True, stdout=None, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    """Start a long-running child; stderr (and stdout unless given) go to ``log``.

    With ``die_with_parent`` the child gets SIGKILL when the thread that started it exits
    (so start testbeds from the main thread or a thread that lives as long as the testbed)."""
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            list(cmd), stdin=stdin, stdout=stdout if stdout is not None else out,
            stderr=out, env=env, close_fds=True,
            preexec_fn=killed_with_parent(os.getpid()) if die_with_parent else os.setsid)
    finally:
        if log:
            out.close()


def stop_process(proc: subprocess.Popen | None, timeout: float = 3.0) -> int | None:
    """SIGTERM, wait up to ``timeout``, then SIGKILL; returns the exit code."""
    if proc is None:
        return None
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
        except ProcessLookupError:
            pass
    try:
        return proc.wait(5)
    except subprocess.TimeoutExpired:
        return None


def kill_pid(pid: int, start_time: int | None) -> None:
    """SIGKILL a process recorded earlier, only if it is still that same process."""
    if alive(pid, start_time):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 3
        while alive(pid, start_time) and time.monotonic() < deadline:
            time.sleep(0.01)


