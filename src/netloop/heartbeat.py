"""The operator's heartbeat as UDP datagrams, beside the byte a second over SSH.

Every process netloop starts on a robot hears the operator through its SSH session's standard
input (:mod:`netloop.processes` writes a byte a second; :mod:`netloop.remote_exec` stops the
node when none has come for its silence bound). Over a stalled Wi-Fi that byte rides on TCP:
what was sent during the stall is retransmitted on TCP's backoff (0.2, 0.6, 1.4, 3.0 s ... after
the first loss), so a 2 s stall can look like more than 3 s of silence on the robot. Datagrams
have no backoff: the first one sent after the stall arrives.

So each run also starts, on every remote machine, one listener (``python3 -m netloop.heartbeat
listen``, over SSH like every process): it binds a UDP port on the machine's address, prints
``port N``, reads the run's token from ``--token-file`` (written through ssh's standard input
with mode 0600: never on a command line), and for every datagram that carries the token and
comes from the operator's address (``--allow``, and the address the SSH session comes from)
writes the time (``time.monotonic()``, one clock for every process of the machine) into the
run's heartbeat file. The wrappers read that file (``--heartbeat-file``): a node's silence is
the time since the later of its last byte on standard input and the last datagram. The
listener ends with its SSH session (its wrapper stops it) or after ``--idle`` seconds without a
datagram; a dead listener only takes the datagrams away, never the byte over SSH.

:class:`Beats` is the operator's side: a thread sending a datagram every :data:`PERIOD_S` to
every listener. Robot-side (Python 3.8, the standard library only).
"""
from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from typing import Iterable, List, Optional, Tuple

from .clocksync import allowed_sources

#: seconds between two datagrams to a machine
PERIOD_S = 0.2
#: a run's token: 32 characters (16 random bytes in hex)
TOKEN_BYTES = 32
_BEAT = struct.Struct(f"!{TOKEN_BYTES}sQ")     # the run's token, a sequence number
_TIME = struct.Struct("d")


def write_beat(fd: int, when: float) -> None:
    """The time of a heartbeat into the heartbeat file (8 bytes, written in one call)."""
    os.pwrite(fd, _TIME.pack(when), 0)


def last_beat(path: str) -> Optional[float]:
    """The ``time.monotonic()`` of the last heartbeat written to ``path``; None without one."""
    try:
        with open(path, "rb") as f:
            data = f.read(_TIME.size)
    except OSError:
        return None
    return _TIME.unpack(data)[0] if len(data) == _TIME.size else None


def listen(bind: str, path: str, token: bytes, allow: Iterable[str], idle: float = 60.0,
           out=sys.stdout) -> None:
    """Answer nothing, record every valid heartbeat into ``path`` (see the module's doc) until
    ``idle`` seconds pass without one (or its wrapper stops it). Prints ``port N`` once bound."""
    allowed = allowed_sources(allow)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    write_beat(fd, time.monotonic())      # the run's start counts as heard
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((bind, 0))
        print(f"port {sock.getsockname()[1]}", file=out, flush=True)
        last = time.monotonic()
        while time.monotonic() - last < idle:
            ready, _, _ = select.select([sock], [], [], 1.0)
            if not ready:
                continue
            data, (source, _port) = sock.recvfrom(64)
            if len(data) == _BEAT.size and _BEAT.unpack(data)[0] == token and (not allowed or source in allowed):
                last = time.monotonic()
                write_beat(fd, last)
    os.close(fd)


class Beats:
    """The operator's heartbeat datagrams: one every ``period`` seconds to each (address,
    port), with ``token``, from a thread of its own until :meth:`stop`."""

    def __init__(self, token: bytes, period: float = PERIOD_S):
        self.token, self.period = token, period
        self.targets: List[Tuple[str, int]] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.sent = 0

    def add(self, address: str, port: int) -> None:
        self.targets.append((address, port))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="heartbeat-udp", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            while not self._stop.is_set():
                self.sent += 1
                for target in list(self.targets):
                    try:
                        sock.sendto(_BEAT.pack(self.token, self.sent), target)
                    except OSError:    # no route during an outage: the next one goes when there is one
                        pass
                self._stop.wait(self.period)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.period + 1.0)
            self._thread = None


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m netloop.heartbeat")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("listen", help="record the operator's heartbeat datagrams into a file (prints 'port N')")
    p.add_argument("--token-file", required=True, help="the run's token (a file only its user reads)")
    p.add_argument("--bind", default="0.0.0.0")
    p.add_argument("--file", required=True, help="the run's heartbeat file (the wrappers' --heartbeat-file)")
    p.add_argument("--allow", action="append", default=[], help="an address heartbeats may come from (repeatable; "
                                                                "the SSH session's client is allowed too)")
    p.add_argument("--idle", type=float, default=60.0, help="end after this many seconds without a heartbeat [60]")
    args = parser.parse_args(argv)
    try:
        with open(args.token_file, "rb") as f:
            token = f.read().strip()
    except OSError as err:
        parser.error(f"--token-file: {err}")
    if len(token) != TOKEN_BYTES:
        parser.error(f"--token-file {args.token_file}: not a token of {TOKEN_BYTES} characters")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # SIGINT is how its wrapper stops it: a SIGINT ignored by whatever started this process (a
    # shell's background job, nohup) is inherited across exec, and Python then raises no
    # KeyboardInterrupt: the listener would stay until its idle bound
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        listen(args.bind, args.file, token, args.allow, args.idle)
    except KeyboardInterrupt:   # SIGINT from its wrapper: the run is over
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
