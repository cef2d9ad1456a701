"""Head-of-line probe: a small periodic flow beside a bulky periodic flow, without ROS.

It reproduces the transport-level shape of the Pound paper's two-flow scenario (a 1 KB
"laser" message every 20 ms and a 64 KB "image" every 150 ms, each on its own connection,
as TCPROS/UDPROS do) and measures the one-way delay of every message (sender and receiver
share the machine's clock), so the testbed can show where the small message waits.

Run inside the hosts (``tb.exec_prefix(host) + [python, "-m", "netloop.testbed.holprobe"]``)::

    recv --port P --seconds S                     # prints one JSON object: delays per flow
    send --host H --port P --transport T --seconds S [--no-bulk]

``recv`` and ``capture`` count their ``--seconds`` from the first message (waiting up to
:data:`holprobe_endpoints.FIRST_WAIT_S` for it), so a sender that is slow to start on a busy machine still has
its messages counted to the end. Their standard input closing means the sender has ended:
they stop :data:`holprobe_endpoints.DRAIN_S` later (what is still on its way has arrived by then) instead of
at the end of the window.

``--transport``: ``tcp`` (Nagle on), ``tcp_nodelay`` (TCP_NODELAY on both connections) or
``udp`` (the bulk message is cut into ``--datagram`` byte datagrams sent back to back, as
UDPROS does; a message counts once all its datagrams arrived). The flows use ports P
(small) and P+1 (bulk). ``send`` also samples, each time it writes a small message, the
bytes the kernel still holds for the bulk socket (``SIOCOUTQ``: unacknowledged + unsent; for
TCP also ``SIOCOUTQNSD``: not yet sent, i.e. still in the socket), and prints them.

This module is the operator's side (:func:`run_case`: the processes started on a live testbed,
the qdisc backlog sampled, the ns-3 MAC queue's statistics, the stages put together) and the
command line of the processes; the processes themselves are :mod:`holprobe_endpoints`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from .holprobe_endpoints import capture, recv, send, summary


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


def _nic_queue_packets(pid: int) -> int:
    """Packets waiting in the netfilter queues of the namespace process ``pid`` runs in (the
    emulated NIC's flow control holds a host's backlog there: :mod:`netloop.testbed.nic_flow`)."""
    try:
        with open(f"/proc/{pid}/net/netfilter/nfnetlink_queue") as f:
            return sum(int(line.split()[2]) for line in f if line.strip())
    except (OSError, ValueError, IndexError):
        return 0


def run_case(tb, transport: str, bulk: bool = True, seconds: float = 10.0,
             port: int = 7100, sample_s: float = 0.05) -> dict:
    """One measurement on a live testbed: small + bulk flow robot -> operator.

    Returns the receiver's delays, the sender's socket samples, the robot's qdisc backlog
    (with the emulated NIC's flow control, its netfilter queue's packets too) sampled every ``sample_s`` and, for ns-3 links, the robot device's MAC queue statistics
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
            b, p = _qdisc_backlog(tb, "robot")
            backlog.append((b, p + _nic_queue_packets(tx.pid)))
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
    if not tb.station_queue_stats:   # no MAC queue: no per-station statistics
        return None
    before = len(tb.emulator_stats())   # one fresh stats line (the emulator writes one a second)
    deadline = time.monotonic() + 2.5
    while len(tb.emulator_stats()) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = tb.emulator_stats()
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
