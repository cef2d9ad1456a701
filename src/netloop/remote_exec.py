"""The remote end of a process started over SSH: runs one command and ties its life to the
SSH connection (the far side of :mod:`netloop.machines`).

``ssh robot <root>/bin/netloop-remote-exec [--env K=V ...] [--env-file F] [--grace S] [--silence S]
[--heartbeat-file F] [--record DIR] [--run LABEL] -- argv...`` starts ``argv`` in its own process
group with the given environment (``--env-file``: a JSON object of more variables, for values
that must not show in ``ps``), its output going back through SSH. The command is stopped — SIGINT
(what roscpp and rospy expect; the car driver turns its PWM off on it), then SIGTERM, then
SIGKILL, ``--grace``, 2 and 2 seconds apart; on a silent heartbeat SIGKILL follows SIGINT's
grace directly — as soon as any of these happens:

* its standard input ends: the operator closed it to stop the node, or sshd closed the
  session after the SSH connection was lost;
* nothing came from the operator for ``--silence`` seconds: it writes a heartbeat (a byte a
  second) to every remote process's standard input, and sends datagrams every 0.2 s that the
  run's listener writes into ``--heartbeat-file`` (:mod:`netloop.heartbeat`: they do not wait
  on TCP's retransmission backoff after a stall); when the network goes silent, TCP keeps the
  SSH session open for minutes and standard input never ends, so this is what stops a car
  whose operator is gone;
* this process gets SIGINT, SIGTERM or SIGHUP.

With ``--record DIR`` it writes why it ended, as ``DIR/<command>-<pid>.json`` ({'command',
'run', 'pid', 'kind': exited | stdin_closed | heartbeat | signal, 'reason', 'silence_s',
'started', 'signalled' (when it was sent SIGINT), 'stopped', 'exit_status', 'longest_silence_s'
(the longest the operator was silent while the command ran, as seen here, polled every 50 ms)}:
times are this machine's time.time()); the operator fetches it home with the run's records.
``--run`` names the run (shown by ``ps``: how a later run finds processes left over).

The exit status is the command's (128 + signal number when a signal ended it). This is not
an agent: it lives exactly as long as its one SSH session and command, and needs only the
Python standard library (3.8 or later: it runs on the robot).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import List, Optional

from .heartbeat import last_beat

_PR_SET_PDEATHSIG = 1


def _child_setup() -> None:  # between fork and exec: own group, and dies with this process
    os.setpgid(0, 0)
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _stop(child: subprocess.Popen, grace: float, why: str, term: bool = True) -> None:
    """SIGINT, then SIGTERM, then SIGKILL, ``grace``, 2 and 2 seconds apart (``term`` False:
    no SIGTERM, SIGKILL after the grace: with the operator gone a node hangs in its shutdown's
    calls to the unreachable ROS master whichever of the two it got)."""
    print(f"netloop-remote-exec: {why}; stopping {os.path.basename(child.args[0])} "
          f"(pid {child.pid})", file=sys.stderr, flush=True)
    steps = ((signal.SIGINT, grace), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)) if term else \
        ((signal.SIGINT, grace), (signal.SIGKILL, 2.0))
    for sig, wait in steps:
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


def _last_heard(on_stdin: float, heartbeat_file: Optional[str]) -> float:
    """When the operator was last heard: the later of the last byte on standard input and the
    last UDP heartbeat (``time.monotonic()``)."""
    udp = last_beat(heartbeat_file) if heartbeat_file else None
    return on_stdin if udp is None else max(on_stdin, udp)


def _write_record(directory: str, record: dict) -> None:
    """``directory/<command>-<pid>.json``, written whole (a temporary file renamed)."""
    try:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"{os.path.basename(record['command'][0])}-{os.getpid()}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f, indent=1)
        os.replace(path + ".tmp", path)
    except OSError as err:
        print(f"netloop-remote-exec: cannot write its record in {directory}: {err}", file=sys.stderr, flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="netloop-remote-exec", description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment variable of the command (repeatable)")
    parser.add_argument("--cwd", default=None, help="working directory of the command")
    parser.add_argument("--grace", type=float, default=3.0,
                        help="seconds between SIGINT, SIGTERM and SIGKILL when stopping [3]")
    parser.add_argument("--silence", type=float, default=0.0,
                        help="stop the command after this many seconds without a byte on standard input "
                             "(the operator's heartbeat); 0: never [0]")
    parser.add_argument("--heartbeat-file", default=None, metavar="FILE",
                        help="the run's UDP heartbeat file (netloop.heartbeat): a datagram counts as heard too")
    parser.add_argument("--env-file", default=None, metavar="FILE",
                        help="more environment variables, a JSON object in FILE (values kept off the command line)")
    parser.add_argument("--record", default=None, metavar="DIR",
                        help="write why the command ended into DIR/<command>-<pid>.json")
    parser.add_argument("--run", default=None, help="the run this process belongs to (recorded, shown by ps)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- argv of the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (after --)")
    env = dict(os.environ)
    if args.env_file:
        try:
            with open(args.env_file) as f:
                env.update({str(k): str(v) for k, v in json.load(f).items()})
        except (OSError, ValueError, AttributeError) as err:
            parser.error(f"--env-file {args.env_file}: {err}")
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value

    if args.silence < 0:
        parser.error("--silence must be >= 0")
    stop = threading.Event()
    reason: List[tuple] = []     # (kind, text): the first is why the command was stopped
    heard = [time.monotonic()]   # when the last byte came on standard input
    started = time.time()

    def on_signal(signum, _frame):
        reason.append(("signal", f"got {signal.Signals(signum).name}"))
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
                heard[0] = time.monotonic()
        except (OSError, ValueError):
            pass
        reason.append(("stdin_closed", "standard input closed (stopped by the operator, or sshd closed the "
                                       "session: the SSH connection was lost)"))
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    longest = 0.0                # the longest the operator was silent, as this wrapper saw it
    while child.poll() is None and not stop.wait(0.05):
        if not args.silence:
            continue
        silent = time.monotonic() - _last_heard(heard[0], args.heartbeat_file)
        longest = max(longest, silent)
        if silent > args.silence:
            reason.append(("heartbeat", f"no heartbeat from the operator for {args.silence:g} s (the network "
                                        f"or the operator is gone)"))
            break
    kind, why, signalled = "exited", "the command ended by itself", None
    if child.poll() is None:
        kind, why = reason[0] if reason else ("signal", "stopping")
        signalled = time.time()
        _stop(child, args.grace, why, term=kind != "heartbeat")
    status = child.wait()
    code = 128 - status if status < 0 else status
    if args.record:
        _write_record(args.record, {"command": command, "run": args.run, "pid": child.pid, "kind": kind,
                                    "reason": why, "silence_s": args.silence or None, "started": round(started, 3),
                                    "signalled": None if signalled is None else round(signalled, 3),
                                    "stopped": round(time.time(), 3), "exit_status": code,
                                    "longest_silence_s": round(longest, 3) if args.silence else None})
    return code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)   # not sys.exit: the thread blocked reading stdin must not hold up the exit
