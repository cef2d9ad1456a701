"""The head-of-line probe's processes, run inside the hosts (:mod:`holprobe` starts them and
reads their JSON line): ``recv`` (the receiver of both flows: one-way delay of every message),
``capture`` (the small flow's packets seen on an interface, kernel-timestamped) and ``send``
(the small and the bulk flow, with the kernel's send-queue samples). Raw sockets, no ROS;
sender and receiver share the machine's clock."""
from __future__ import annotations

import fcntl
import json
import select
import socket
import statistics
import struct
import sys
import termios
import threading
import time

_HDR = struct.Struct("!IIdHH")   # length, seq, send time, fragment, fragments
SIOCOUTQ = termios.TIOCOUTQ
SIOCOUTQNSD = 0x894B
#: how long ``recv`` and ``capture`` wait for the first message before giving up
FIRST_WAIT_S = 30.0
#: how long ``recv`` and ``capture`` go on after their standard input closed (the sender ended,
#: 0.5 s after its last message): a 64 KB burst crosses a 5 Mbit/s link in 0.1 s, a full
#: 100-packet queue in 0.25 s
DRAIN_S = 1.0


def _window(seconds: float):
    """A time window that opens with the first message: ``started()`` on each message,
    ``open()`` while ``seconds`` have not passed since the first (or, before it, until
    :data:`FIRST_WAIT_S`)."""
    state = {"end": time.time() + FIRST_WAIT_S, "first": False, "stdin": _stdin_watched()}

    def started() -> None:
        if not state["first"]:
            state["first"], state["end"] = True, time.time() + seconds

    def is_open() -> bool:
        if state["stdin"] and _stdin_closed():
            state["stdin"] = False
            state["end"] = min(state["end"], time.time() + DRAIN_S)
        return time.time() < state["end"]
    return started, is_open


def _stdin_watched() -> bool:
    """Whether standard input is a pipe (run_case's): its end is the sender's end."""
    import os
    import stat
    try:
        return stat.S_ISFIFO(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError):
        return False


def _stdin_closed() -> bool:
    """Whether standard input reached its end (read without blocking)."""
    ready, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(ready) and sys.stdin.buffer.read1(4096) == b""


def _ioctl_int(sock: socket.socket, req: int) -> int:
    """The integer an ioctl of ``sock`` returns (SIOCOUTQ, SIOCOUTQNSD), -1 when refused."""
    try:
        return struct.unpack("i", fcntl.ioctl(sock.fileno(), req, b"\0\0\0\0"))[0]
    except OSError:
        return -1


def summary(values: list[float]) -> dict:
    """n, mean, median, p95, max and std of ``values`` (``{"n": 0}`` for none)."""
    if not values:
        return {"n": 0}
    s = sorted(values)
    return {"n": len(s), "mean": statistics.fmean(s), "median": statistics.median(s),
            "p95": s[min(len(s) - 1, int(0.95 * len(s)))], "max": s[-1],
            "std": statistics.pstdev(s)}


def recv(port: int, seconds: float) -> dict:
    """Receive both flows (TCP or UDP) on ``port`` (small) and ``port`` + 1 (bulk) for
    ``seconds`` from the first message: each flow's one-way delay summary, the small flow's
    delays, and the UDP messages left incomplete."""
    delays: dict[str, list[float]] = {"small": [], "bulk": []}
    names = {port: "small", port + 1: "bulk"}
    listeners, udps = {}, {}
    for p in names:
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind(("0.0.0.0", p))
        t.listen(1)
        listeners[t] = names[p]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        u.bind(("0.0.0.0", p))
        udps[u] = names[p]
    conns: dict[socket.socket, list] = {}
    frags: dict[tuple, set] = {}
    print(json.dumps({"ready": True}), flush=True)
    started, is_open = _window(seconds)
    while is_open():
        socks = list(listeners) + list(udps) + list(conns)
        ready, _, _ = select.select(socks, [], [], 0.2)
        now = time.time()
        if ready:
            started()
        for s in ready:
            if s in listeners:
                c, _ = s.accept()
                conns[c] = [listeners[s], bytearray()]
            elif s in udps:
                data = s.recv(65535)
                length, seq, ts, frag, nfrag = _HDR.unpack_from(data)
                key = (udps[s], seq)
                got = frags.setdefault(key, set())
                got.add(frag)
                if len(got) == nfrag:
                    delays[udps[s]].append((now - ts) * 1e3)
                    del frags[key]
            else:
                name, buf = conns[s]
                data = s.recv(1 << 20)
                if not data:
                    del conns[s]
                    continue
                buf += data
                while len(buf) >= _HDR.size:
                    length = _HDR.unpack_from(buf)[0]
                    if len(buf) < length:
                        break
                    ts = _HDR.unpack_from(buf)[2]
                    delays[name].append((now - ts) * 1e3)
                    del buf[:length]
    return {"small": summary(delays["small"]), "bulk": summary(delays["bulk"]),
            "small_delays_ms": [round(d, 3) for d in delays["small"]],
            "incomplete_udp": len(frags)}


def capture(port: int, seconds: float, iface: str = "net0") -> dict:
    """Kernel-timestamped capture on ``iface`` of the small flow's packets (destination port
    ``port``, TCP or UDP) whose payload starts with a message header: how long after the
    application wrote them they passed this interface. On the sender an outgoing packet
    is seen after the qdisc released it (dev_queue_xmit_nit), on the receiver an incoming
    one as the emulator delivered it."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, 29, 1)   # SO_TIMESTAMP
    s.settimeout(0.2)
    seen: dict[int, float] = {}
    print(json.dumps({"ready": True}), flush=True)
    started, is_open = _window(seconds)
    while is_open():
        try:
            data, anc, _, _ = s.recvmsg(65535, 64)
        except socket.timeout:
            continue
        if len(data) < 34 or data[12:14] != b"\x08\x00":
            continue
        ihl = (data[14] & 0x0F) * 4
        proto = data[23]
        l4 = 14 + ihl
        if proto == 6:
            dport = struct.unpack_from("!H", data, l4 + 2)[0]
            pay = l4 + (data[l4 + 12] >> 4) * 4
        elif proto == 17:
            dport = struct.unpack_from("!H", data, l4 + 2)[0]
            pay = l4 + 8
        else:
            continue
        if dport != port or len(data) < pay + _HDR.size:
            continue
        length, seq, ts, frag, nfrag = _HDR.unpack_from(data, pay)
        if length > 1 << 20 or not (0 < ts and abs(ts - time.time()) < 60):
            continue
        started()
        when = time.time()
        for level, kind, val in anc:
            if level == socket.SOL_SOCKET and kind == 29:
                sec, usec = struct.unpack("qq", val[:16])
                when = sec + usec * 1e-6
        seen.setdefault(seq, (when - ts) * 1e3)
    return {"delays_ms": summary(list(seen.values())), "by_seq": seen}


def send(host: str, port: int, transport: str, seconds: float, small_size: int,
         small_period: float, bulk_size: int, bulk_period: float, bulk: bool,
         datagram: int) -> dict:
    """Send the small and (with ``bulk``) the bulk flow to ``host`` for ``seconds``, each on its
    own connection or socket; the kernel's send queues sampled at each small message."""
    udp = transport == "udp"
    socks = {}
    for name, p in (("small", port), ("bulk", port + 1)):
        if udp:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            s.connect((host, p))
        else:
            s = socket.create_connection((host, p), timeout=5)
            if transport == "tcp_nodelay":
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks[name] = s
    samples: list[dict] = []
    stop = time.time() + seconds
    lock = threading.Lock()

    def write(name: str, seq: int, size: int) -> None:
        s = socks[name]
        ts = time.time()
        if udp:
            room = datagram - _HDR.size
            n = max(1, -(-size // datagram))
            for i in range(n):
                s.send(_HDR.pack(size, seq, ts, i, n) + bytes(min(room, max(0, size - i * room))))
        else:
            s.sendall(_HDR.pack(size, seq, ts, 0, 1) + bytes(size - _HDR.size))

    def loop(name: str, size: int, period: float) -> None:
        seq, t0 = 0, time.time() + (0.005 if name == "bulk" else 0.0)
        while True:
            t = t0 + seq * period
            if t > stop:
                return
            time.sleep(max(0.0, t - time.time()))
            if name == "small":
                b = socks["bulk"]
                with lock:
                    samples.append({"small_outq": _ioctl_int(socks["small"], SIOCOUTQ),
                                    "bulk_outq": _ioctl_int(b, SIOCOUTQ),
                                    "bulk_notsent": -1 if udp else _ioctl_int(b, SIOCOUTQNSD)})
            write(name, seq, size)
            seq += 1

    threads = [threading.Thread(target=loop, args=("small", small_size, small_period))]
    if bulk:
        threads.append(threading.Thread(target=loop, args=("bulk", bulk_size, bulk_period)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(0.5)
    for s in socks.values():
        s.close()
    outq = [x["bulk_outq"] for x in samples if x["bulk_outq"] >= 0]
    nsd = [x["bulk_notsent"] for x in samples if x["bulk_notsent"] >= 0]
    small_outq = [x["small_outq"] for x in samples if x["small_outq"] >= 0]
    return {"transport": transport, "bulk": bulk, "small_outq_at_send": summary(small_outq),
            "bulk_outq_at_small_send": summary(outq),
            "bulk_notsent_at_small_send": summary(nsd)}
