"""Clock offsets between machines, measured the way NTP does, over the network of the run.

A machine's clock is not the operator's: a one-way delay computed from a stamp made on one
and a receive time read on the other is off by the difference of the two clocks. Before and
after each run on real machines, :func:`measure` estimates each machine's offset::

    t0  request leaves here          (this machine's clock)
    t1  request arrives there        (that machine's clock)
    t2  reply leaves there
    t3  reply arrives here
    offset = ((t1 - t0) + (t2 - t3)) / 2     that clock minus this clock
    rtt    = (t3 - t0) - (t2 - t1)           time on the network, both ways

Whatever the two directions' delays are, the true offset lies within ``rtt / 2`` of the
estimate; queueing only makes a sample's rtt larger, so the samples with the smallest rtt
are kept (as NTP's clock filter does) and their largest half-rtt is the stated uncertainty
(a bound). Beside it, the statistical uncertainty: the standard error of the kept
exchanges' median offset, from their spread. It says how repeatable the estimate is, not
how true: a path whose two directions differ by ``a`` shifts every exchange by ``a / 2``,
which no spread shows and only the bound covers.

The far end is ``python -m netloop.clocksync serve``, started over SSH like every other
process of a run; it answers the operator's address only (``--allow`` and the SSH session's
client), until it has been idle for ``--idle`` seconds.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import sys
import time
from typing import Iterable

_REQUEST = struct.Struct("!Qq")      # seq, t0 [ns]
_REPLY = struct.Struct("!Qqqq")      # seq, t0, t1, t2 [ns]


def allowed_sources(given: Iterable[str] = ()) -> set:
    """The addresses a run's UDP servers on a robot answer: ``given`` (the operator's, from the
    hosts file) and the address this process's SSH session comes from (``SSH_CLIENT``: the
    operator as this machine sees it). Empty (answer anyone) only when neither is known."""
    allowed = {a for a in given if a}
    client = os.environ.get("SSH_CLIENT", "").split()
    if client:
        allowed.add(client[0])
    return allowed


def serve(bind: str = "0.0.0.0", port: int = 0, idle: float = 30.0, out=sys.stdout,
          allow: Iterable[str] = ()) -> None:
    """Answer requests on UDP ``bind:port`` (0: any free port, printed as ``port N``), from the
    operator only (:func:`allowed_sources`); a request from any other address gets no answer."""
    allowed = allowed_sources(allow)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((bind, port))
        sock.settimeout(idle)
        print(f"port {sock.getsockname()[1]}", file=out, flush=True)
        while True:
            try:
                data, peer = sock.recvfrom(64)
            except socket.timeout:
                return
            t1 = time.time_ns()
            if len(data) != _REQUEST.size or (allowed and peer[0] not in allowed):
                continue
            seq, t0 = _REQUEST.unpack(data)
            sock.sendto(_REPLY.pack(seq, t0, t1, time.time_ns()), peer)


def offset_sample(t0: int, t1: int, t2: int, t3: int) -> tuple[float, float]:
    """(offset, rtt) in seconds of one exchange (times in ns, t1 and t2 on the far clock)."""
    return ((t1 - t0) + (t2 - t3)) / 2e9, ((t3 - t0) - (t2 - t1)) / 1e9


def estimate(samples: list[tuple[float, float]], keep: float = 0.25) -> dict:
    """The offset from (offset, rtt) samples in seconds (:func:`offset_sample`): the median offset
    of the quarter (``keep``, at least 3) with the shortest round trips.

    Returns {'offset_ms', 'uncertainty_ms' (the bound: the largest kept half round trip),
    'stat_uncertainty_ms' (standard error of that median: 1.2533 sd / sqrt(kept)),
    'spread_ms' (sd of the kept offsets), 'rtt_min_ms', 'rtt_median_ms', 'samples', 'kept'}."""
    if not samples:
        raise ValueError("no exchanges")
    by_rtt = sorted(samples, key=lambda s: s[1])
    kept = by_rtt[:max(3, int(len(by_rtt) * keep))]
    offsets = [o for o, _ in kept]
    spread = statistics.stdev(offsets) if len(offsets) > 1 else 0.0
    return {"offset_ms": round(statistics.median(offsets) * 1e3, 4),
            "uncertainty_ms": round(max(r for _, r in kept) / 2 * 1e3, 4),
            "stat_uncertainty_ms": round(1.2533 * spread / len(offsets) ** 0.5 * 1e3, 4),
            "spread_ms": round(spread * 1e3, 4),
            "rtt_min_ms": round(by_rtt[0][1] * 1e3, 4),
            "rtt_median_ms": round(statistics.median(r for _, r in samples) * 1e3, 4),
            "samples": len(samples), "kept": len(kept)}


def measure(address: str, port: int, count: int = 16, interval: float = 0.01,
            timeout: float = 0.5, keep: float = 0.25) -> dict:
    """Offset of the clock at ``address`` against this machine's, from ``count`` exchanges.

    Returns :func:`estimate`'s keys and 'lost', 'at' ('at': this machine's time.time() in the
    middle of the exchanges); raises TimeoutError when no reply came at all."""
    samples, lost, started = [], 0, time.time()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.connect((address, port))
        for seq in range(count):
            t0 = time.time_ns()
            sock.send(_REQUEST.pack(seq, t0))
            while True:
                try:
                    data = sock.recv(64)
                except (socket.timeout, ConnectionRefusedError):
                    lost += 1
                    break
                t3 = time.time_ns()
                if len(data) == _REPLY.size:
                    rseq, rt0, t1, t2 = _REPLY.unpack(data)
                    if rseq == seq and rt0 == t0:
                        samples.append(offset_sample(t0, t1, t2, t3))
                        break
            time.sleep(interval)
    if not samples:
        raise TimeoutError(f"no answer from the clock server at {address}:{port} ({count} requests)")
    return {**estimate(samples, keep), "lost": lost, "at": round((started + time.time()) / 2, 3)}


def offset_at(before: dict | None, after: dict | None, t: float) -> tuple[float, float] | None:
    """(offset, uncertainty) in seconds at time ``t`` (this machine's clock), interpolated
    linearly between a measurement before and one after the run (a drifting clock); with
    one of them, that one. None without either."""
    points = [m for m in (before, after) if m]
    if not points:
        return None
    if len(points) == 1 or after["at"] == before["at"]:
        m = points[0]
        return m["offset_ms"] / 1e3, m["uncertainty_ms"] / 1e3
    w = min(max((t - before["at"]) / (after["at"] - before["at"]), 0.0), 1.0)
    offset = (1 - w) * before["offset_ms"] + w * after["offset_ms"]
    return offset / 1e3, max(before["uncertainty_ms"], after["uncertainty_ms"]) / 1e3


def drift_ppm(before: dict | None, after: dict | None) -> float | None:
    """How fast the offset changed between the two measurements [parts per million]."""
    if not before or not after or after["at"] == before["at"]:
        return None
    return round((after["offset_ms"] - before["offset_ms"]) / 1e3 / (after["at"] - before["at"]) * 1e6, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m netloop.clocksync")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="answer clock requests on UDP (prints 'port N')")
    s.add_argument("--bind", default="0.0.0.0")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--idle", type=float, default=30.0, help="exit after this many idle seconds [30]")
    s.add_argument("--allow", action="append", default=[],
                   help="answer this address (repeatable; the SSH session's client is answered too; "
                        "neither given: anyone)")
    m = sub.add_parser("measure", help="measure the offset of a server's clock against this one")
    m.add_argument("address")
    m.add_argument("port", type=int)
    m.add_argument("--count", type=int, default=16)
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve(args.bind, args.port, args.idle, allow=args.allow)
    else:
        import json  # noqa: PLC0415
        print(json.dumps(measure(args.address, args.port, args.count)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
