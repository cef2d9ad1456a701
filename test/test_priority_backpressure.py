"""The priority relay keeps its low-priority backlog in user space and marks its urgent
datagrams (issue 28, part 1):

* backpressure: over a slow shaped ethernet link (htb) with a bulk low-priority flow, the
  relay holds the backlog while the bytes unsent below its socket reach one frame, so the
  host's qdisc holds at most about one datagram of it (relay stats and ``tc -s qdisc``),
  while the urgent flow still passes; the same run without backpressure fills the qdisc;
* marking: on loopback, a UDP socket with IP_RECVTOS in place of the peer relay sees DSCP EF
  on every datagram of the urgent topic and TOS 0 on the others.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from campaign_helpers import recorded_flows, relay_stats, run_campaign

from netloop import paths, rosenv
from netloop.analysis.flow_run import analyse_flow
from netloop.master import free_port, wait_for
from netloop.processes import ProcessGroup
from netloop.testbed.state import STATE_DIR, ns_name

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("nothing_left_behind")]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")

EF_TOS = 0xB8
#: kernel buffer (truesize) of one queued datagram is ~2.3 KB: "about one frame below" is one
#: held-back datagram's buffer, plus urgent ones that never wait (a late wake-up may bunch them)
THREE_DATAGRAMS = 3 * 2400


class QdiscSampler(threading.Thread):
    """Samples the backlog [packets] of the robot's net0 qdisc of this process's testbed."""

    def __init__(self):
        super().__init__(daemon=True)
        self.max_packets, self.samples, self.stopping = 0, 0, threading.Event()

    def _robot_ns(self) -> str | None:
        for rec in STATE_DIR.glob("*.json"):
            try:
                if json.loads(rec.read_text()).get("owner_pid") == os.getpid():
                    return ns_name(rec.stem, "robot")
            except (OSError, ValueError):
                continue
        return None

    def run(self):
        while not self.stopping.is_set():
            ns = self._robot_ns()
            if ns:
                out = subprocess.run(["tc", "-n", ns, "-s", "qdisc", "show", "dev", "net0"],
                                     capture_output=True, text=True).stdout
                # the root htb's line counts every packet of its leaves
                root = out.split("qdisc ", 2)[1] if out.count("qdisc ") else ""
                m = re.search(r"backlog \S+ (\d+)p", root)
                if m:
                    self.max_packets = max(self.max_packets, int(m.group(1)))
                    self.samples += 1
            time.sleep(0.02)


def bulk_run(tmp_path: Path, backpressure: bool) -> tuple[Path, QdiscSampler]:
    """A 16 KB / 10 ms bulk flow (13 Mbit/s) beside a 1 KB / 20 ms flow over a 4 Mbit/s
    ethernet link, through the priority relay: with backpressure (its defaults: unpaced, the
    small flow marked EF), or as a plain unpaced queue (no backpressure, no marking)."""
    flows = [{"name": "small", "size_bytes": 1024, "period": 0.02, "count": 150},
             {"name": "bulk", "size_bytes": 16384, "period": 0.01, "count": 300}]
    sampler = QdiscSampler()
    sampler.start()
    try:
        _, out = run_campaign(tmp_path / f"bp{int(backpressure)}",
                              {"link": "ethernet", "link_params": {"rate_mbit": 4}, "transport": "priority",
                               "loop": {"type": "none"}, "flows": flows,
                               "transport_options": {"priority": {} if backpressure else
                                                     {"backpressure": False, "dscp": False, "rate_mbit": 50}}},
                              f"bp{int(backpressure)}")
    finally:
        sampler.stopping.set()
        sampler.join(5)
    run_dir = out / "runs" / "priority-r0"
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    return run_dir, sampler


@pytest.mark.root
@needs_root
def test_low_priority_backlog_waits_in_the_relay_not_in_the_qdisc(tmp_path):
    held, held_qdisc = bulk_run(tmp_path, backpressure=True)
    free, free_qdisc = bulk_run(tmp_path, backpressure=False)
    on, off = relay_stats(held, "priority_relay_robot"), relay_stats(free, "priority_relay_robot")
    # with backpressure: the backlog is the relay's, the qdisc holds about one datagram
    assert on["backpressure_bytes"] > 0 and on["rate_mbit"] == 0
    assert on["held_s"] > 0.5 and on["holds"] > 0 and on["held_bytes_max"] > 16384, on
    assert 0 < on["below_bytes_max"] <= THREE_DATAGRAMS, on
    assert held_qdisc.samples > 10 and held_qdisc.max_packets <= 3, held_qdisc.max_packets
    # without: the relay sends faster than the link, the qdisc fills
    assert off["backpressure_bytes"] == 0 and off["held_s"] == 0
    assert off["below_bytes_max"] > 4 * THREE_DATAGRAMS and free_qdisc.max_packets > 10, (off, free_qdisc.max_packets)
    # the small flow (the most urgent here: never held) passes in both; without the relay's
    # mechanisms it waits behind the qdisc's backlog
    small = {name: next(analyse_flow(d, f) for f in recorded_flows(d) if f.name == "small")
             for name, d in (("on", held), ("off", free))}
    assert small["on"]["MDR"] >= 0.97 and small["off"]["MDR"] >= 0.97
    assert small["on"]["delay"]["p50_ms"] < small["off"]["delay"]["p50_ms"], small
    assert on["topics"]["/flows/small"]["sent_msgs"] >= 145 and on["marked_datagrams"] >= 145


# publishes a std_msgs/String on /y and on /flows/bulk every 20 ms until killed
PUBLISH = """
import rospy
from std_msgs.msg import String
rospy.init_node("marking_source", disable_signals=True)
y = rospy.Publisher("/y", String, queue_size=10)
bulk = rospy.Publisher("/flows/bulk", String, queue_size=10)
rate = rospy.Rate(50)
while True:
    y.publish(String("u" * 50))
    bulk.publish(String("b" * 3000))
    rate.sleep()
"""


def receive_tos(sock: socket.socket, seconds: float) -> dict[int, set[int]]:
    """{relay priority byte: TOS values seen} of the datagrams received within `seconds`."""
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    sock.settimeout(0.2)
    seen: dict[int, set[int]] = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            data, anc, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(4))
        except socket.timeout:
            continue
        tos = next((c[2][0] for c in anc if c[0] == socket.IPPROTO_IP and c[1] == socket.IP_TOS), None)
        if len(data) >= 40 and data[:4] == b"NLR1" and tos is not None:
            seen.setdefault(data[7], set()).add(tos)
    return seen


def test_urgent_datagrams_carry_dscp_ef_and_the_others_none(roscore, tmp_path):
    relay_port, peer_port = free_port(), free_port()
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    group = ProcessGroup(tmp_path / "logs")
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        peer.bind(("127.0.0.1", peer_port))
        roscore.set_params({"self": 0, "urgent_priority": 250, "dscp": True, "backpressure_bytes": 1500,
                            "hosts": [{"name": "robot", "address": "127.0.0.1", "port": relay_port},
                                      {"name": "operator", "address": "127.0.0.1", "port": peer_port}],
                            "topics": [{"name": "/y", "priority": 250, "source": 0, "dest": 1},
                                       {"name": "/flows/bulk", "priority": 190, "source": 0, "dest": 1}],
                            "stats_period": 0.2, "stats_path": str(tmp_path / "stats.jsonl")}, "/relay")
        group.start("relay", [str(paths.node_binary("priority_relay")), "__name:=relay"], env=env)
        group.start("source", [sys.executable, "-c", PUBLISH], env=env)
        seen: dict[int, set[int]] = {}
        assert wait_for(lambda: (seen.update({k: seen.get(k, set()) | v for k, v in receive_tos(peer, 0.5).items()})
                                 or {250, 190} <= set(seen)), 20), f"datagrams of both topics: {seen}"
        assert seen[250] == {EF_TOS}, seen           # /y: EF on every datagram
        assert seen[190] == {0}, seen                # the bulk topic: unmarked
        # the stats line is written on a timer: wait for one written after the first urgent datagram
        def last_stats() -> dict:
            path = tmp_path / "stats.jsonl"
            lines = path.read_text().splitlines() if path.exists() else []
            return json.loads(lines[-1]) if lines else {}
        assert wait_for(lambda: last_stats().get("marked_datagrams", 0) > 0, 5), last_stats()
        assert last_stats()["foreign"] == 0
    finally:
        peer.close()
        group.stop_all()
