"""DSCP marking and the hosts' strict-priority band (real namespaces; about half a minute).

- The htb on a host's net0 (EthernetLink, and TapLink's with ``qdisc_rate_fraction``) serves
  packets marked EF / CS6 / CS7 first: with a backlog of unmarked UDP queued below, a marked
  datagram sent after it arrives long before an unmarked one sent at the same moment.
- ``transport_options: {tcp_nodelay: {dscp: EF}}`` makes the loop's nodes mark their own
  sockets: in a run with a flow beside the loop, the band of marked packets on the robot's
  net0 counts the loop's samples and none of the flow's packets.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from campaign_helpers import run_campaign
from link_health import best_of

from netloop.testbed import Testbed, load_profile, state
from netloop.transports import get_transport
from netloop.transports.base import CrossingTopic, TransportContext

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
PORT = 7400
EF_TOS = 46 << 2
#: unmarked datagrams queued ahead of the probes: 120 x 1428 bytes at 4 Mbit/s drain in ~0.34 s
BACKLOG = 120

# operator: receives on PORT until it has both probes (or 5 s), prints {tag: receive time}
RECEIVER = f"""
import json, socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", {PORT}))
s.settimeout(5.0)
print("ready", flush=True)
got = {{}}
try:
    while not ("marked" in got and "unmarked" in got):
        data, _ = s.recvfrom(2048)
        tag = data.split(b" ")[0].decode()
        got[tag] = time.time()          # for 'bulk': the last one
except socket.timeout:
    pass
print(json.dumps(got), flush=True)
"""

# robot: BACKLOG unmarked datagrams back to back, then an unmarked and a marked probe
SENDER = f"""
import json, socket, sys, time
host = sys.argv[1]
bulk, plain, marked = (socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(3))
marked.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, {EF_TOS})
bulk.sendto(b"warm x", (host, {PORT}))   # the neighbour's address resolved before the burst
time.sleep(0.3)
for k in range({BACKLOG}):
    bulk.sendto(b"bulk " + bytes(1400), (host, {PORT}))
t = time.time()
plain.sendto(b"unmarked x", (host, {PORT}))
marked.sendto(b"marked x", (host, {PORT}))
print(json.dumps({{"sent": t}}), flush=True)
"""


def _probe_once(tb: Testbed) -> dict:
    """One backlog and two probes; returns each probe's and the backlog's delay [ms], and the
    packets each class of the robot's htb sent meanwhile ("10:" marked, "20:" the rest)."""
    before = _qdisc_packets(tb.netns("robot"))
    rx = subprocess.Popen(tb.exec_prefix("operator") + [sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE,
                          text=True)
    try:
        assert rx.stdout.readline().strip() == "ready"
        tx = subprocess.run(tb.exec_prefix("robot") + [sys.executable, "-c", SENDER, tb.address("operator")],
                            capture_output=True, text=True, timeout=20, check=True)
        got = json.loads(rx.communicate(timeout=20)[0].strip().splitlines()[-1])
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
    sent = json.loads(tx.stdout)["sent"]
    after = _qdisc_packets(tb.netns("robot"))
    return {**{tag: round((t - sent) * 1000, 2) for tag, t in got.items() if tag != "warm"},
            **{h: after.get(h, 0) - before.get(h, 0) for h in ("10:", "20:")}}


@pytest.mark.root
@needs_root
@pytest.mark.timeout(90)
@pytest.mark.parametrize("profile,params", [
    ("ethernet", {"rate_mbit": 4, "queue_packets": 200}),
    # TapLink's htb (qdisc_rate_fraction), in front of the userspace emulator
    ("shaped", {"rate_mbit": 4, "queue_packets": 200, "qdisc_rate_fraction": 0.9, "qdisc_limit_packets": 200}),
], ids=["ethernet", "shaped"])
def test_marked_datagram_leaves_before_the_unmarked_backlog(profile, params):
    with Testbed(load_profile(profile, params)) as tb:
        meta = tb.metadata()["link"]
        assert meta["priority_band"]["dscp"] == {"EF": 46, "CS6": 48, "CS7": 56}
        # the marked probe is sent last, yet it arrives before the unmarked one and before the
        # backlog has drained; the unmarked probe waits behind all of it (same run: the load on
        # the machine delays both alike; best of three for a sender starved in mid-burst)
        d = best_of(lambda: _probe_once(tb),
                    lambda d: {"marked", "unmarked", "bulk"} <= d.keys() and d["marked"] < d["unmarked"] / 4)
        assert {"marked", "unmarked", "bulk"} <= d.keys(), d
        assert d["unmarked"] > 150, d          # ~0.3 s of backlog ahead of it
        assert d["marked"] < d["unmarked"] / 4 and d["marked"] < d["bulk"], d
        assert d["10:"] == 1 and d["20:"] >= BACKLOG + 1, d   # the marked probe alone in its class


def _qdisc_packets(netns: str) -> dict[str, int]:
    """Packets each qdisc on ``netns``'s net0 has sent, by handle (10: marked class, 20: the rest)."""
    out = subprocess.run(["tc", "-n", netns, "-s", "-j", "qdisc", "show", "dev", "net0"], capture_output=True,
                         text=True)
    if out.returncode != 0 or not out.stdout.strip():
        return {}
    return {q["handle"]: q.get("packets", 0) for q in json.loads(out.stdout)}


@pytest.mark.root
@needs_root
@pytest.mark.timeout(120)
@pytest.mark.usefixtures("nothing_left_behind")
def test_loop_marked_ef_and_flow_not(tmp_path, monkeypatch):
    """tcp_nodelay with ``dscp: EF`` beside an unmarked flow (16 KB / 20 ms, ~12 packets each)
    on ethernet: the robot's marked class carries the plant's samples (and its ACKs of u), its
    other class the flow; the counters are read from the robot's net0 while the run goes on."""
    made: list[str] = []
    real_new_id = state.new_id

    def tracking_new_id():
        made.append(real_new_id())
        return made[-1]

    monkeypatch.setattr(state, "new_id", tracking_new_id)
    last: dict[str, int] = {}
    done = threading.Event()

    def watch():
        while not done.is_set():
            if made:
                now = _qdisc_packets(state.ns_name(made[-1], "robot"))
                if now.get("10:", 0) + now.get("20:", 0) >= last.get("10:", 0) + last.get("20:", 0):
                    last.update(now)
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    samples, flow = 150, {"name": "bulk", "size_bytes": 16384, "period": 0.02, "count": 0, "start_delay": 0}
    try:
        _, out = run_campaign(tmp_path, {"link": "ethernet", "transport": "tcp_nodelay",
                                         "transport_options": {"tcp_nodelay": {"dscp": "EF"}},
                                         "loop": {"samples": samples}, "flows": [flow]}, "dscp")
    finally:
        done.set()
        watcher.join(timeout=5)
    meta = json.loads((out / "runs" / "tcp_nodelay-r0" / "metadata.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    assert meta["transport"]["dscp"] == "EF" and meta["link"]["link"]["priority_band"] is not None
    marked, other = last.get("10:", 0), last.get("20:", 0)
    # each y is one packet, then the ACKs of u, the plant's XML-RPC and rosout: measured 2.6 per
    # sample; the flow's ~12 packets per 16 KB message, as many messages as samples, are all in
    # the other class (measured 18 per sample; marked, they would make the first one as large)
    assert 0.8 * samples <= marked <= 3 * samples + 100, last
    assert other >= 6 * samples, last


def test_dscp_option_reaches_only_the_loops_nodes():
    t = get_transport("tcp_nodelay")
    t.start(TransportContext(run_dir=None, options={"dscp": "EF"}, topics=[
        CrossingTopic("/y", "netloop/LoopSample", "robot", "operator", 48, 0.02, control=True),
        CrossingTopic("/flows/image", "netloop/LoopSample", "robot", "operator", 65536)]))
    assert t.endpoint_params("/y", 48, "publisher") == {"dscp": "EF"}
    assert t.endpoint_params("/y", 48) == {"transport": "tcp_nodelay", "dscp": "EF"}
    assert t.endpoint_params("/flows/image", 65536) == {"transport": "tcp_nodelay"}
    plain = get_transport("udp")
    plain.start(TransportContext(run_dir=None, topics=[
        CrossingTopic("/y", "netloop/LoopSample", "robot", "operator", 48, 0.02, control=True)]))
    assert plain.endpoint_params("/y", 48) == {"transport": "udp"} and plain.metadata()["dscp"] == "none"
