"""Traffic probes for checking links: bulk TCP goodput and UDP round-trip time.

Each sub-command prints one JSON object on stdout. Run them inside hosts with
``tb.exec_prefix(host) + [python, "-m", "netloop.testbed.probe", ...]``::

    tcp-sink  --port P [--timeout S]             # accept one connection, count bytes
    tcp-send  --host H --port P --seconds S      # send as fast as possible for S seconds
    udp-echo  --port P [--timeout S]             # echo datagrams until idle for S seconds
    udp-ping  --host H --port P --count N --interval S [--size B] [--dontroute]

Goodput is measured by the sink from its first to its last received byte. ``udp-ping``
sends numbered, timestamped datagrams and reports RTT statistics, the lost fraction and how
many replies arrived after a later-sent one (``reordered``);
``--dontroute`` (SO_DONTROUTE) bypasses the routing table, so only a directly reachable
neighbour can answer.
"""
from __future__ import annotations

import argparse
import json
import select
import socket
import statistics
import struct
import sys
import time

_HDR = struct.Struct("!Id")


def tcp_sink(port: int, timeout: float) -> dict:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    srv.settimeout(timeout)
    conn, peer = srv.accept()
    conn.settimeout(timeout)
    total, first, last = 0, None, None
    buf = bytearray(1 << 16)
    while True:
        n = conn.recv_into(buf)
        if not n:
            break
        now = time.monotonic()
        if first is None:
            first = now
        last = now
        total += n
    conn.close()
    srv.close()
    secs = (last - first) if first is not None and last > first else 0.0
    return {"bytes": total, "seconds": secs, "mbit_s": total * 8 / secs / 1e6 if secs else 0.0,
            "peer": peer[0]}


def tcp_send(host: str, port: int, seconds: float, connect_timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + connect_timeout
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=connect_timeout)
            break
        except (ConnectionRefusedError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    chunk = b"\0" * (1 << 16)
    sent = 0
    end = time.monotonic() + seconds
    sock.settimeout(max(5.0, seconds))
    while time.monotonic() < end:
        sent += sock.send(chunk)
    sock.shutdown(socket.SHUT_WR)
    # wait for the sink to close: everything was received. The send buffer (megabytes once TCP
    # has grown it) still crosses at the link's rate, slower while an emulator lags real time,
    # whose run the caller then judges by its lag rather than by a timeout here
    sock.settimeout(20.0)
    sock.recv(1)
    sock.close()
    return {"bytes_sent": sent, "seconds": seconds}


def udp_echo(port: int, timeout: float) -> dict:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port))
    sock.settimeout(timeout)
    n = 0
    try:
        while True:
            data, peer = sock.recvfrom(65536)
            sock.sendto(data, peer)
            n += 1
    except socket.timeout:
        pass
    return {"echoed": n}


def udp_ping(host: str, port: int, count: int, interval: float, size: int, wait: float,
             dontroute: bool) -> dict:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if dontroute:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_DONTROUTE, 1)
    sock.setblocking(False)
    size = max(size, _HDR.size)
    rtts: dict[int, float] = {}
    highest, reordered = -1, 0
    sent = 0
    errors = 0
    start = time.monotonic()
    next_send = start
    end = None
    while True:
        now = time.monotonic()
        if sent < count and now >= next_send:
            payload = _HDR.pack(sent, now) + b"\0" * (size - _HDR.size)
            try:
                sock.sendto(payload, (host, port))
            except OSError:
                errors += 1
            sent += 1
            next_send = start + sent * interval
            if sent == count:
                end = now + wait
        if end is not None and (now >= end or len(rtts) == count):
            break
        timeout = (next_send if sent < count else end) - time.monotonic()
        r, _, _ = select.select([sock], [], [], max(0.0, timeout))
        if r:
            while True:
                try:
                    data = sock.recv(65536)
                except BlockingIOError:
                    break
                if len(data) >= _HDR.size:
                    seq, t0 = _HDR.unpack_from(data)
                    if seq in rtts:
                        continue
                    rtts[seq] = (time.monotonic() - t0) * 1e3
                    if seq < highest:
                        reordered += 1
                    highest = max(highest, seq)
    vals = sorted(rtts.values())
    out = {"sent": sent, "received": len(vals), "send_errors": errors, "reordered": reordered,
           "loss": 1 - len(vals) / sent if sent else None}
    if vals:
        out.update({"rtt_min_ms": vals[0], "rtt_median_ms": statistics.median(vals),
                    "rtt_mean_ms": statistics.fmean(vals), "rtt_max_ms": vals[-1],
                    "rtt_p95_ms": vals[min(len(vals) - 1, int(0.95 * len(vals)))]})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="netloop link probes (JSON on stdout)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("tcp-sink")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--timeout", type=float, default=30.0)
    p = sub.add_parser("tcp-send")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seconds", type=float, default=3.0)
    p = sub.add_parser("udp-echo")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--timeout", type=float, default=10.0)
    p = sub.add_parser("udp-ping")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--interval", type=float, default=0.05)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--wait", type=float, default=1.0, help="seconds to wait after the last send")
    p.add_argument("--dontroute", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "tcp-sink":
        res = tcp_sink(a.port, a.timeout)
    elif a.cmd == "tcp-send":
        res = tcp_send(a.host, a.port, a.seconds)
    elif a.cmd == "udp-echo":
        res = udp_echo(a.port, a.timeout)
    else:
        res = udp_ping(a.host, a.port, a.count, a.interval, a.size, a.wait, a.dontroute)
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
