"""802.11e QoS on the ns-3 Wi-Fi (profile key ``qos``, ``wifi6_qos``) with real namespaces and a
real ns-3 (root only; about half a minute).

The mechanism, not its numbers: both stations are backlogged with unmarked bulk UDP, the robot
sends small probes, every other one marked DSCP EF, and the operator unmarked ones. With QoS an
EF frame goes to the voice access category (RFC 8325's mapping, as Linux's mac80211): it skips
its own station's best-effort queue and contends with AIFSN 2 / CW 3-7 against the other
station's best-effort frames, so the marked probes arrive much sooner than the unmarked ones
sent beside them and than the operator's, queued on the other station. Without QoS all wait in
the same FIFOs and arrive alike. The NIC's flow control is off (``nic_ring_frames: 0``, 16-frame
MAC queues) so the backlog waits in ns-3's MAC queues, the part this tests (the host's queue,
which serves marked packets first, is another mechanism). The emulator's per-access-category counts show where the frames went.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import pytest
from link_health import best_of

from netloop.testbed import Testbed, load_profile
from netloop.testbed import util

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the testbed creates network namespaces"),
]

PROBE_PORT, BULK_PORT = 47011, 47012
EF_TOS = 46 << 2

#: run inside a host: ``sink SECONDS`` (prints the probes' one-way delays as JSON, discards the
#: bulk), ``bulk DST MBIT SECONDS`` (unmarked 1200-byte datagrams), ``probes DST SECONDS
#: MARK`` (64-byte datagrams every 10 ms; MARK 1: every other one marked EF). One host's clock: the
#: namespaces share the kernel's CLOCK_REALTIME.
TRAFFIC = r"""
import json, socket, struct, sys, time
PROBE, BULK, EF = %d, %d, %d
mode = sys.argv[1]
if mode == "sink":
    end = time.time() + float(sys.argv[2])
    probes = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); probes.bind(("", PROBE))
    bulk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); bulk.bind(("", BULK))
    bulk.setblocking(False)
    probes.settimeout(0.002)
    got = []
    while time.time() < end:
        try:
            while True:
                bulk.recv(2048)
        except BlockingIOError:
            pass
        try:
            data = probes.recv(2048)
        except socket.timeout:
            continue
        seq, marked, sent = struct.unpack("!IId", data[:16])
        got.append([seq, marked, (time.time() - sent) * 1e3])
    print(json.dumps(got))
elif mode == "bulk":
    dst, mbit, seconds = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gap, payload = 1200 * 8 / (mbit * 1e6), b"x" * 1200
    start = time.time(); n = 0
    while time.time() < start + seconds:
        s.sendto(payload, (dst, BULK)); n += 1
        pause = start + n * gap - time.time()
        if pause > 0:
            time.sleep(pause)
else:
    dst, seconds, mark = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    plain = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    marked = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    marked.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, EF)
    start = time.time(); seq = 0
    while time.time() < start + seconds:
        m = seq %% 2 if mark else 0
        (marked if m else plain).sendto(struct.pack("!IId", seq, m, time.time()) + b"p" * 48, (dst, PROBE))
        seq += 1
        pause = start + seq * 0.010 - time.time()
        if pause > 0:
            time.sleep(pause)
""" % (PROBE_PORT, BULK_PORT, EF_TOS)


def _traffic(tb: Testbed, host: str, *args) -> subprocess.Popen:
    return subprocess.Popen(tb.exec_prefix(host) + [sys.executable, "-c", TRAFFIC, *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def contend(profile: str, seconds: float = 3.0, bulk_mbit: float = 4.0, robot_bulk: bool = True,
            **params) -> dict:
    """The operator (and, with ``robot_bulk``, the robot) backlogged, the robot's probes
    interleaved: the marked and unmarked probes' median one-way delays (ms), how many arrived,
    the median delay of the operator's own unmarked probes (queued behind its backlog), the
    link's health and the robot's and operator's per-access-category frame counts (None
    without QoS). ``params`` override the profile's keys."""
    with Testbed(load_profile(profile, {"qdisc_rate_fraction": 0, "nic_ring_frames": 0,
                                            "queue_packets": 16, **params})) as tb:
        robot, operator = tb.address("robot"), tb.address("operator")
        sinks = [_traffic(tb, "operator", "sink", seconds + 3), _traffic(tb, "robot", "sink", seconds + 3)]
        procs = [_traffic(tb, "operator", "bulk", robot, bulk_mbit, seconds + 1)]
        if robot_bulk:
            procs.append(_traffic(tb, "robot", "bulk", operator, bulk_mbit, seconds + 1))
        try:
            time.sleep(0.8)   # python start-up; the MAC queues fill
            probes = [_traffic(tb, "robot", "probes", operator, seconds, 1),
                      _traffic(tb, "operator", "probes", robot, seconds, 0)]
            for p in probes:
                p.wait(timeout=seconds + 30)
            for p in procs:
                p.wait(timeout=30)
            out, err = sinks[0].communicate(timeout=30)
            back, _ = sinks[1].communicate(timeout=30)
        finally:
            for p in procs + sinks:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        got = json.loads(out.strip().splitlines()[-1]) if out.strip() else []
        got_back = json.loads(back.strip().splitlines()[-1]) if back.strip() else []
        health = tb.health()
    assert not [n for n in util.netns_list() if n.startswith(f"nl{tb.id}")], "namespaces left behind"
    nodes = tb.metadata()["link"]["final_stats"]["nodes"]
    delays = {m: [d for _, marked, d in got if marked == m] for m in (0, 1)}
    return {"marked_ms": statistics.median(delays[1]) if delays[1] else None,
            "unmarked_ms": statistics.median(delays[0]) if delays[0] else None,
            "operator_unmarked_ms": statistics.median(d for *_, d in got_back) if got_back else None,
            "marked_n": len(delays[1]), "unmarked_n": len(delays[0]), "valid": health["valid"],
            "max_lag_ms": health["max_lag_ms"],
            "robot_ac": nodes[0].get("ac_enqueued"), "operator_ac": nodes[1].get("ac_enqueued")}


def _separated(r: dict) -> bool:
    return (r["marked_ms"] is not None and r["unmarked_ms"] is not None
            and r["marked_ms"] < 0.5 * r["unmarked_ms"])


@pytest.mark.timeout(120)
def test_with_qos_an_ef_frame_is_sent_before_the_best_effort_backlog():
    # the marked probes should wait for about one frame on the air, the unmarked ones behind
    # two full 16-frame best-effort queues sharing it (~tens of ms); a starved emulator can
    # only blur that: the best of up to 3
    r = best_of(lambda: contend("wifi6_qos"), _separated)
    assert r["marked_n"] >= 50 and r["unmarked_n"] >= 10, r
    assert _separated(r), r
    # sent before the unmarked frames queued on the other station: the operator's probes, which
    # wait behind its best-effort backlog
    assert r["marked_ms"] < 0.5 * r["operator_unmarked_ms"], r
    # the robot's marked probes went to the voice queue, its bulk to best effort; nothing of the
    # operator's bulk to voice (its own stack may mark a stray control packet)
    assert r["robot_ac"]["VO"] >= r["marked_n"] and r["robot_ac"]["BE"] > 500, r
    assert r["operator_ac"]["VO"] < 5 and r["operator_ac"]["BE"] > 500, r


@pytest.mark.timeout(120)
def test_without_qos_marked_and_unmarked_frames_wait_alike():
    r = best_of(lambda: contend("wifi6"),
                lambda r: r["marked_ms"] is not None and r["unmarked_ms"] is not None
                and 0.6 * r["unmarked_ms"] < r["marked_ms"] < 1.6 * r["unmarked_ms"])
    assert r["robot_ac"] is None and r["operator_ac"] is None, r   # one DCF queue: no access categories
    assert r["marked_n"] >= 10 and r["unmarked_n"] >= 10, r
    assert 0.6 * r["unmarked_ms"] < r["marked_ms"] < 1.6 * r["unmarked_ms"], r
