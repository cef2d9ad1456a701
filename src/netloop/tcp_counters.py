"""The hosts' TCP and UDP counters over a run: what a run's transports did about losses on the
link, from the kernel of each host (``/proc/net/snmp`` and ``/proc/net/netstat``, as ``nstat``
reads them), recorded as ``host_tcp`` in a run's metadata.json.

    retrans_segs       TCP segments sent again (Tcp: RetransSegs)
    timeouts           retransmission timer expiries, RTOs (TcpExt: TCPTimeouts)
    loss_probes        tail loss probes sent (TcpExt: TCPLossProbes)
    fast_retrans       retransmissions on duplicate ACKs / SACK (TcpExt: TCPFastRetrans)
    spurious_rtos      RTOs that F-RTO found needless (TcpExt: TCPSpuriousRTOs)
    out_segs           TCP segments sent (Tcp: OutSegs)
    udp_sndbuf_errors  datagrams refused for a full send buffer (Udp: SndbufErrors)
    nic_queue_dropped  packets the host's netfilter queue dropped, full (the emulated Wi-Fi NIC's
                       flow control holds the host's backlog there: netloop.testbed.nic_flow)
"""
from __future__ import annotations

import subprocess
from typing import Optional

#: (section, the kernel's name) of each counter kept
COUNTERS = {"retrans_segs": ("Tcp", "RetransSegs"), "timeouts": ("TcpExt", "TCPTimeouts"),
            "loss_probes": ("TcpExt", "TCPLossProbes"), "fast_retrans": ("TcpExt", "TCPFastRetrans"),
            "spurious_rtos": ("TcpExt", "TCPSpuriousRTOs"), "out_segs": ("Tcp", "OutSegs"),
            "udp_sndbuf_errors": ("Udp", "SndbufErrors")}
FILES = ("/proc/net/snmp", "/proc/net/netstat", "/proc/net/netfilter/nfnetlink_queue")


def parse(text: str) -> dict:
    """{counter: value} of :data:`COUNTERS` from the two files' text (pairs of lines: a section's
    names, then its values)."""
    table: dict = {}
    lines = [l.split() for l in text.splitlines() if ":" in l]
    for names, values in zip(lines, lines[1:]):
        if names[0] == values[0] and not names[1].lstrip("-").isdigit():
            for name, value in zip(names[1:], values[1:]):
                table[(names[0].rstrip(":"), name)] = value
    out = {key: int(table[where]) for key, where in COUNTERS.items()
           if where in table and table[where].lstrip("-").isdigit()}
    # nfnetlink_queue: one line per queue, "number portid total mode range dropped user_dropped ..."
    queues = [l.split() for l in text.splitlines() if ":" not in l and len(l.split()) >= 7]
    if queues and all(f.isdigit() for q in queues for f in q[:7]):
        out["nic_queue_dropped"] = sum(int(q[5]) + int(q[6]) for q in queues)
    return out


def read(hosts, timeout: float = 5.0) -> dict:
    """{host: counters} read in each host (its namespace, or over SSH); a host that cannot be
    read is left out, and so is one that is this machine's own namespace (loopback: its
    counters are every process's on the machine)."""
    out = {}
    for host in hosts.hosts:
        if hosts.netns(host) is None and not hosts.is_remote(host):
            continue
        try:
            done = subprocess.run(hosts.exec_prefix(host) + ["cat", *FILES], capture_output=True,
                                  text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.stdout:   # a file the kernel lacks is left out, the others read
            out[host] = parse(done.stdout)
    return out


def delta(before: dict, after: dict) -> Optional[dict]:
    """{host: {counter: after - before}} for the hosts and counters read both times; None when
    none was."""
    out = {h: {k: after[h][k] - v for k, v in before[h].items() if k in after[h]}
           for h in before if h in after}
    return out or None
