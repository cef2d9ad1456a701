"""Head-of-line probe: a small periodic flow beside a bulky periodic flow, without ROS.

It reproduces the transport-level shape of the Pound paper's two-flow scenario (a 1 KB
"laser" message every 20 ms and a 64 KB "image" every 150 ms, each on its own connection,
as TCPROS/UDPROS do) and measures the one-way delay of every message (sender and receiver
share the machine's clock), so the testbed can show where the small message waits.

Run inside the hosts (``tb.exec_prefix(host) + [python, "-m", "netloop.testbed.holprobe"]``)::

    recv --port P --seconds S                     # prints one JSON object: delays per flow
    send --host H --port P --transport T --seconds S [--no-bulk]

``recv`` and ``capture`` count their ``--seconds`` from the first message (waiting up to
:data:`FIRST_WAIT_S` for it), so a sender that is slow to start on a busy machine still has
its messages counted to the end. Their standard input closing means the sender has ended:
they stop :data:`DRAIN_S` later (what is still on its way has arrived by then) instead of
at the end of the window.

``--transport``: ``tcp`` (Nagle on), ``tcp_nodelay`` (TCP_NODELAY on both connections) or
``udp`` (the bulk message is cut into ``--datagram`` byte datagrams sent back to back, as
UDPROS does; a message counts once all its datagrams arrived). The flows use ports P
(small) and P+1 (bulk). ``send`` also samples, each time it writes a small message, the
bytes the kernel still holds for the bulk socket (``SIOCOUTQ``: unacknowledged + unsent; for
TCP also ``SIOCOUTQNSD``: not yet sent, i.e. still in the socket), and prints them.
"""
from __future__ import annotations

import argparse
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
    try:
        return struct.unpack("i", fcntl.ioctl(sock.fileno(), req, b"\0\0\0\0"))[0]
    except OSError:
        return -1


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    s = sorted(values)
    return {"n": len(s), "mean": statistics.fmean(s), "median": statistics.median(s),
            "p95": s[min(len(s) - 1, int(0.95 * len(s)))], "max": s[-1],
            "std": statistics.pstdev(s)}


def recv(port: int, seconds: float) -> dict:
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


def _qdisc_backlog(tb, host: str) -> tuple[int, int]:
    """(bytes, packets) waiting in the qdiscs of ``host``'s net0 (the root's backlog line)."""
    import subprocess
    out = subprocess.run(["tc", "-n", tb.netns(host), "-s", "qdisc", "show", "dev", "net0"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("backlog"):
            parts = line.split()
            b, p = parts[1], parts[2]
            mult = {"K": 1000, "M": 1000000}.get(b[-2:-1], 1) if b.endswith("b") else 1
            num = b[:-1] if b.endswith("b") else b
            num = num[:-1] if num[-1:] in "KM" else num
            return int(float(num) * mult), int(p.rstrip("p"))
    return 0, 0


def run_case(tb, transport: str, bulk: bool = True, seconds: float = 10.0,
             port: int = 7100, sample_s: float = 0.05) -> dict:
    """One measurement on a live testbed: small + bulk flow robot -> operator.

    Returns the receiver's delays, the sender's socket samples, the robot's qdisc backlog
    sampled every ``sample_s`` and, for ns-3 links, the robot device's MAC queue statistics
    over the run (from the emulator's stats lines)."""
    import os
    import subprocess
    from pathlib import Path
    src = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    py = [sys.executable, "-m", "netloop.testbed.holprobe"]
    # recv and capture end DRAIN_S after their standard input (one pipe) closes, which it does
    # once the sender ended; at the latest at the end of their window
    sender_ended, sender_running = os.pipe()
    rx = subprocess.Popen(tb.exec_prefix("operator") + py + ["recv", "--port", str(port),
                                                             "--seconds", str(seconds + 3)],
                          stdin=sender_ended, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env)
    caps = {h: subprocess.Popen(tb.exec_prefix(h) + py + ["capture", "--port", str(port),
                                                          "--seconds", str(seconds + 2)],
                                stdin=sender_ended, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
            for h in ("robot", "operator")}
    os.close(sender_ended)
    try:
        rx.stdout.readline()   # ready
        for c in caps.values():
            c.stdout.readline()
        stats0 = _ns3_node_stats(tb)
        t_start = time.time()
        tx = subprocess.Popen(tb.exec_prefix("robot") + py + [
            "send", "--host", tb.address("operator"), "--port", str(port), "--transport",
            transport, "--seconds", str(seconds)] + ([] if bulk else ["--no-bulk"]),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        backlog = []
        while tx.poll() is None:
            backlog.append(_qdisc_backlog(tb, "robot"))
            time.sleep(sample_s)
        tx_out, tx_err = tx.communicate()
        os.close(sender_running)
        sender_running = None
        rx_out, rx_err = rx.communicate(timeout=seconds + 30)
        cap_out = {h: c.communicate(timeout=seconds + 30)[0] for h, c in caps.items()}
    finally:
        if sender_running is not None:
            os.close(sender_running)
        for p in [rx] + list(caps.values()):
            if p.poll() is None:
                p.kill()
                p.wait()
    stats1 = _ns3_node_stats(tb)
    result = {"transport": transport, "bulk": bulk, "load": open("/proc/loadavg").read().split()[:3],
              "receiver": json.loads(rx_out.strip().splitlines()[-1]),
              "sender": json.loads(tx_out.strip().splitlines()[-1]) if tx_out.strip() else
              {"error": tx_err[-300:]},
              "qdisc_backlog_packets": summary([b[1] for b in backlog]),
              "qdisc_backlog_bytes": summary([b[0] for b in backlog]),
              "health": tb.health(since=t_start)}
    cap = {h: json.loads(o.strip().splitlines()[-1]) for h, o in cap_out.items() if o.strip()}
    if len(cap) == 2:
        out_q = cap["robot"]["by_seq"]
        air = cap["operator"]["by_seq"]
        both = [k for k in out_q if k in air]
        result["stages_ms"] = {
            "socket_and_qdisc": summary([out_q[k] for k in both]),
            "tap_ns3_mac_air": summary([air[k] - out_q[k] for k in both]),
            "matched": len(both)}
    if stats0 is not None and stats1 is not None:
        a, b = stats0[0], stats1[0]   # the robot's device
        arr = b["small_arrivals"] - a["small_arrivals"]
        result["mac_queue"] = {
            "small_arrivals": arr,
            "small_ahead_mean": ((b["small_ahead_mean"] * b["small_arrivals"]
                                  - a["small_ahead_mean"] * a["small_arrivals"]) / arr
                                 if arr else None),
            "mac_queue_max": b["mac_queue_max_total"],
            "queue_drop": b["queue_drop"] - a["queue_drop"],
            "retries": b["retries"] - a["retries"],
            "data_mpdu_tx": b["data_mpdu_tx"] - a["data_mpdu_tx"],
        }
    return result


def _ns3_node_stats(tb) -> list[dict] | None:
    link = getattr(tb, "_link", None)
    stats = getattr(link, "stats", None)
    if stats is None:
        return None
    before = len(stats.stats())   # one fresh stats line (the emulator writes one a second)
    deadline = time.monotonic() + 2.5
    while len(stats.stats()) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = stats.stats()
    nodes = lines[-1].get("nodes") if lines else None   # ns-3's per-device lines only
    return nodes if nodes and "small_arrivals" in nodes[0] else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m netloop.testbed.holprobe")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, default=7100)
    r.add_argument("--seconds", type=float, default=12.0)
    c = sub.add_parser("capture")
    c.add_argument("--port", type=int, default=7100)
    c.add_argument("--seconds", type=float, default=12.0)
    c.add_argument("--iface", default="net0")
    s = sub.add_parser("send")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, default=7100)
    s.add_argument("--transport", choices=["tcp", "tcp_nodelay", "udp"], default="tcp_nodelay")
    s.add_argument("--seconds", type=float, default=10.0)
    s.add_argument("--small-size", type=int, default=1024)
    s.add_argument("--small-period", type=float, default=0.020)
    s.add_argument("--bulk-size", type=int, default=65536)
    s.add_argument("--bulk-period", type=float, default=0.150)
    s.add_argument("--datagram", type=int, default=1400)
    s.add_argument("--no-bulk", dest="bulk", action="store_false")
    a = ap.parse_args(argv)
    if a.cmd == "recv":
        out = recv(a.port, a.seconds)
    elif a.cmd == "capture":
        out = capture(a.port, a.seconds, a.iface)
    else:
        out = send(a.host, a.port, a.transport, a.seconds, a.small_size, a.small_period,
                   a.bulk_size, a.bulk_period, a.bulk, a.datagram)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
