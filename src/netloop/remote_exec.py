"""The remote end of a process started over SSH: runs one command and ties its life to the
SSH connection (the far side of :mod:`netloop.machines`).

``ssh robot <root>/bin/netloop-remote-exec [--env K=V ...] [--grace S] -- argv...`` starts
``argv`` in its own process group with the given environment, its output going back
through SSH. The command is stopped — SIGINT (what roscpp and rospy expect), then SIGTERM,
then SIGKILL, ``--grace`` seconds apart — as soon as any of these happens:

* its standard input ends: the operator closed it to stop the node, or the SSH connection
  was lost (sshd closes the session's pipes), so a car is never left driving by a node
  whose operator is gone;
* this process gets SIGINT, SIGTERM or SIGHUP.

The exit status is the command's (128 + signal number when a signal ended it). This is not
an agent: it lives exactly as long as its one SSH session and command, and needs only the
Python standard library.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import threading

_PR_SET_PDEATHSIG = 1


def _child_setup() -> None:  # between fork and exec: own group, and dies with this process
    os.setpgid(0, 0)
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _stop(child: subprocess.Popen, grace: float, why: str) -> None:
    print(f"netloop-remote-exec: {why}; stopping {os.path.basename(child.args[0])} "
          f"(pid {child.pid})", file=sys.stderr, flush=True)
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        if child.poll() is not None:
            return
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="netloop-remote-exec", description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment variable of the command (repeatable)")
    parser.add_argument("--cwd", default=None, help="working directory of the command")
    parser.add_argument("--grace", type=float, default=3.0,
                        help="seconds between SIGINT, SIGTERM and SIGKILL when stopping [3]")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- argv of the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (after --)")
    env = dict(os.environ)
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value

    stop = threading.Event()
    reason: list[str] = []

    def on_signal(signum, _frame):
        reason.append(f"got {signal.Signals(signum).name}")
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        child = subprocess.Popen(command, env=env, cwd=args.cwd, stdin=subprocess.DEVNULL,
                                 preexec_fn=_child_setup)
    except OSError as err:
        print(f"netloop-remote-exec: cannot start {command[0]}: {err}", file=sys.stderr)
        return 127

    def watch_stdin():
        try:
            while sys.stdin.buffer.read1(4096):
                pass
        except (OSError, ValueError):
            pass
        reason.append("standard input closed (stopped by the operator, or the SSH connection was lost)")
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    while child.poll() is None and not stop.wait(0.05):
        pass
    if child.poll() is None:
        _stop(child, args.grace, reason[0] if reason else "stopping")
    status = child.wait()
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)   # not sys.exit: the thread blocked reading stdin must not hold up the exit
