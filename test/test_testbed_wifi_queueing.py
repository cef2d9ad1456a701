"""Where a small message waits on the emulated Wi-Fi, and the channel's impairments, on real
namespaces, taps, netfilter queues and ns-3 (root only; about three minutes).

The mechanism, not a number: on ``wifi6`` (the NIC's flow control holds the backlog in the
host until the device has room, one frame per packet, loss-based TCP, TCP Small Queues capped
at one packet) a bulk TCP flow leaves only a couple of frames in front of a small TCP_NODELAY
message, so its delay stays within a few air times of its unperturbed delay, while a 64 KB
message sent as a burst of UDP datagrams puts its ~47 datagrams in the host's FIFO ahead of
the small one. A configured frame error rate costs that fraction of the data frames a MAC
retry; the retry limit bounds the attempts; beside other stations the backlog stays in the
kernel, not in ns-3's device queue.
Timing is asserted only when ns-3 kept real time (otherwise measured once more, then xfail)."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from netloop.rundir import cpu_steal_seconds
from netloop.schema import ConfigError
from netloop.testbed import Testbed, load_profile
from netloop.testbed import link_bench as bench, holprobe, profiles
import test_testbed
from test_testbed import ALONE_S, PROBE_S, _assert_gone, delivered_in_full
from link_health import starved_by_hypervisor

nothing_left_behind = test_testbed.nothing_left_behind

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the testbed creates network namespaces"),
]

#: air time of one 1500-byte data frame at 6 Mbit/s with its ACK, DIFS and mean backoff
AIR_MS = 2.23
#: seconds of a probe beside the random background pair: longer than PROBE_S to average it (67
#: images: a run's median image delay then moves ~1 ms with the pair's random frames, not ~1.4)
BACKGROUND_S = 10.0


def _case(tb, transport: str, bulk: bool, seconds: float = PROBE_S) -> dict:
    for _ in range(2):
        r = holprobe.run_case(tb, transport, bulk=bulk, seconds=seconds)
        if r["health"]["valid"]:
            return r
    pytest.xfail(f"ns-3 lagged real time twice: {r['health']['reason']}")


@pytest.mark.timeout(240)
def test_small_nodelay_message_waits_a_few_air_times_beside_bulk_tcp_but_not_beside_udp_bursts(
        tmp_path):
    with Testbed(load_profile("wifi6"), log_dir=tmp_path) as tb:
        alone = _case(tb, "tcp_nodelay", bulk=False, seconds=ALONE_S)
        nod = _case(tb, "tcp_nodelay", bulk=True)
        udp = _case(tb, "udp", bulk=True)
    _assert_gone(tb)
    base = alone["receiver"]["small"]["median"]
    assert base < 3 * AIR_MS, alone["receiver"]["small"]
    d_nod = nod["receiver"]["small"]["median"]
    d_udp = udp["receiver"]["small"]["median"]
    # both flows delivered in full
    small_n, bulk_n = delivered_in_full(PROBE_S)
    assert nod["receiver"]["small"]["n"] >= small_n and udp["receiver"]["small"]["n"] >= small_n
    assert nod["receiver"]["bulk"]["n"] >= bulk_n and udp["receiver"]["bulk"]["n"] >= bulk_n
    # TCP_NODELAY: within a few air times of unperturbed ...
    assert d_nod < base + 6 * AIR_MS, (base, nod["receiver"]["small"], nod.get("stages_ms"))
    # ... because TCP Small Queues keep the image in its socket (not yet sent) and the qdisc
    # and the device queue hold only a few frames in front of the small message
    assert nod["sender"]["bulk_notsent_at_small_send"]["mean"] > 8000, nod["sender"]
    assert nod["qdisc_backlog_packets"]["mean"] < 5, nod["qdisc_backlog_packets"]
    assert nod["mac_queue"]["small_ahead_mean"] < 3, nod["mac_queue"]
    # UDP bursts: the 64 KB message's datagrams sit in the qdisc ahead of the small one
    assert d_udp > base + 8 * AIR_MS and d_udp > 2 * d_nod, (d_udp, d_nod, base)
    assert udp["qdisc_backlog_packets"]["max"] >= 20, udp["qdisc_backlog_packets"]
    assert udp["qdisc_backlog_packets"]["mean"] > 2 * nod["qdisc_backlog_packets"]["mean"]


@pytest.mark.timeout(240)
def test_tcp_small_queues_cap_leaves_one_bulk_packet_in_the_qdisc(tmp_path):
    """TCP Small Queues count what waits in the host's queue, not the frames ns-3's device
    holds (a tap frees each packet as it enters), so the kernel's TSQ (two packets) would keep
    two image frames in the host on top of the device's; ``wifi6`` caps a socket's bytes below
    it (net.ipv4.tcp_limit_output_bytes of the hosts' namespaces) to one packet."""
    def measure(attempt: int) -> tuple[dict, dict]:
        probes, sysctls, recorded = {}, {}, {}
        for name, override in (("kernel", {"tcp_limit_output_bytes": 0}), ("wifi6", {})):
            with Testbed(load_profile("wifi6", override), log_dir=tmp_path / f"{name}{attempt}") as tb:
                read = tb.exec_prefix("robot") + ["sysctl", "-n", "net.ipv4.tcp_limit_output_bytes"]
                sysctls[name] = int(subprocess.run(read, capture_output=True, text=True,
                                                   check=True).stdout)
                recorded[name] = tb.metadata()["link"]["tcp_limit_output_bytes"]
                probes[name] = _case(tb, "tcp_nodelay", bulk=True)
            _assert_gone(tb)
        assert (sysctls["wifi6"], recorded["wifi6"]) == (1000, 1000)
        assert recorded["kernel"] is None and sysctls["kernel"] > 100000
        kernel, capped = probes["kernel"], probes["wifi6"]
        k_q, c_q = kernel["qdisc_backlog_packets"], capped["qdisc_backlog_packets"]
        # one image packet (sometimes the small one beside it) instead of two or three
        assert c_q["mean"] < 1.5 and c_q["max"] <= 3, c_q
        assert c_q["mean"] < k_q["mean"] - 0.5, (c_q, k_q)
        # the image is still held in its socket, not dropped: both flows in full
        assert capped["sender"]["bulk_notsent_at_small_send"]["mean"] > 8000, capped["sender"]
        small_n, bulk_n = delivered_in_full(PROBE_S)
        assert capped["receiver"]["small"]["n"] >= small_n and capped["receiver"]["bulk"]["n"] >= bulk_n
        return kernel, capped

    def medians(pairs: list[tuple[dict, dict]], flow: str) -> tuple[float, float]:
        """(kernel, capped) median delay of ``flow``, the mean over the measurements."""
        return tuple(float(np.mean([p[i]["receiver"][flow]["median"] for p in pairs])) for i in (0, 1))

    def judged(pairs) -> bool:
        (k_bulk, c_bulk), (k_small, c_small) = medians(pairs, "bulk"), medians(pairs, "small")
        return c_bulk < k_bulk + 2 * AIR_MS and c_small < k_small + AIR_MS / 2

    pairs = [measure(1)]
    if not judged(pairs):   # medians of two 3-s probes on a busy host: measure both once more
        pairs.append(measure(2))
    (k_bulk, c_bulk), (k_small, c_small) = medians(pairs, "bulk"), medians(pairs, "small")
    # the image is not slowed ...
    assert c_bulk < k_bulk + 2 * AIR_MS, (c_bulk, k_bulk, len(pairs))
    # ... and the small message has less in front of it
    assert c_small < k_small + AIR_MS / 2, (c_small, k_small, len(pairs))


@pytest.mark.timeout(120)
def test_frame_error_rate_costs_that_fraction_of_data_frames_a_retry(tmp_path):
    rate, count = 0.1, 600
    with Testbed(load_profile("wifi6", {"frame_error_rate": rate}), log_dir=tmp_path) as tb:
        r = bench.rtt(tb, count=count, interval=0.004, wait=1.5)
        meta = tb.metadata()["link"]
        assert meta["frame_error_rate"] == rate and meta["retry_limit"] == 7
    assert r["loss"] == 0, r   # 7 attempts: a frame is lost only with probability 1e-7
    nodes = tb.metadata()["link"]["final_stats"]["nodes"]
    tx = sum(n["data_mpdu_tx"] for n in nodes)
    retries = sum(n["retries"] for n in nodes)
    fer_drops = sum(n["fer_drops"] for n in nodes)
    assert tx > 1200, nodes
    # every frame goes on the air once, and once more for each retry
    assert tx == sum(n["mac_tx"] for n in nodes) + retries, nodes
    # A retry is a corrupted frame or a collision. Echo request and reply collide when a late
    # reply (the echo is a Python process on a shared host) meets the next request and both
    # stations draw the same backoff slot: both frames are lost, both stations retry.
    collided = retries - fer_drops
    assert collided >= 0 and collided % 2 == 0, (fer_drops, retries)
    assert collided / 2 <= count / 16, (fer_drops, retries)   # at most 1 in CWmin+1 = 16 meetings
    # the configured fraction of the frames that reached the receiver is corrupted
    assert abs(fer_drops / (tx - collided) - rate) < 0.035, (fer_drops, tx, collided)


@pytest.mark.timeout(120)
def test_retry_limit_bounds_the_attempts_per_frame(tmp_path):
    with Testbed(load_profile("wifi6", {"frame_error_rate": 0.5, "retry_limit": 1}),
                 log_dir=tmp_path) as tb:
        for _ in range(5):   # ARP has to get through first (its frames are lost too)
            if bench.rtt(tb, count=10, interval=0.3)["received"]:
                break
        r = bench.rtt(tb, count=300, interval=0.004, wait=1.5)
    nodes = tb.metadata()["link"]["final_stats"]["nodes"]
    tx = sum(n["data_mpdu_tx"] for n in nodes)
    fails = sum(n["final_fail"] for n in nodes)
    # one attempt per frame: every corrupted frame is given up, none is retransmitted
    assert fails == sum(n["retries"] for n in nodes) and 0.35 < fails / tx < 0.65, nodes
    assert 0.55 < r["loss"] < 0.95, r   # a ping needs both its frames: ~1 - 0.5^2 lost


def test_background_stations_need_an_ad_hoc_channel():
    with pytest.raises(ConfigError) as err:
        load_profile("wifi6_ap", {"background_pairs": 1, "background_mbit": 1.0})
    assert "background_pairs" in str(err.value) and "ad-hoc" in str(err.value)


@pytest.mark.timeout(120)
def test_background_stations_take_their_share_of_the_air(tmp_path):
    """Two other pairs offering 1.5 Mbit/s each contend for the same channel: the hosts' bulk
    TCP gets clearly less of the air than alone, and ns-3 reports the frames it sent."""
    with Testbed(load_profile("wifi6"), log_dir=tmp_path / "alone") as tb:
        alone = bench.goodput(tb, seconds=3)["mbit_s"]
    with Testbed(load_profile("wifi6", {"background_pairs": 2, "background_mbit": 1.5}),
                 log_dir=tmp_path / "shared") as tb:
        shared = bench.goodput(tb, seconds=3)["mbit_s"]
        r = bench.rtt(tb, count=50, interval=0.02)
    link = tb.metadata()["link"]
    bg = link["final_stats"]["background"]
    assert bg["pairs"] == 2 and bg["sent"] > 0.8 * bg["offered"] > 0, bg
    # 3 Mbit/s of 1000-byte frames take ~45 % of the air at 6 Mbit/s
    assert shared < 0.8 * alone, (shared, alone)
    assert r["received"] >= 45, r
    _assert_gone(tb)



@pytest.mark.timeout(300)
def test_flow_control_keeps_the_backlog_in_the_kernel_beside_other_stations(tmp_path):
    """On ``wifi6_shared`` another pair offering 0.5 Mbit/s takes ~10 % of the air, at random
    moments. A host that sends at a fixed rate set for the idle air (the hosts' htb at 0.9 x
    its one-sender capacity, no flow control) sends more than is left: the excess piles up in
    ns-3's device queue, in front of the small message. Under the NIC's flow control the device
    holds two frames whatever the other pair does, fewer frames wait there and the small
    message arrives sooner, the bulk flow as fast as before. Each figure is the mean of the
    measurements' medians; the background is random, so when any figure is off after the first
    pair of runs both kinds are measured once more before it is judged.

    The bulk figure also depends on the sending host's own latency: under flow control the
    device has one frame of slack (2.2 ms) for the host's next packet to reach it (TCP Small
    Queues let it out only when the previous one has left: our reading, not traced), where the
    fixed rate keeps several frames in ns-3's queue. ns-3's own hop is counted and small (the
    robot's device sat empty waiting for a released frame ~6 ms in a 5 s run). So, as for a real
    link (link_health), a bulk figure that misses while the hypervisor starved the runs is an
    expected failure with the numbers, not a verdict."""
    shared = load_profile("wifi6_shared")
    as_if_idle = 0.9 * 6 / (6 - profiles.background_air_mbit(shared))   # the htb rate of the idle air

    def measure(attempt: int) -> tuple[dict, dict]:
        rates, cases = {}, {}
        for name, override in (("as_if_idle", {"qdisc_rate_fraction": as_if_idle, "nic_ring_frames": 0}),
                               ("flow_control", {})):
            with Testbed(load_profile("wifi6_shared", override), log_dir=tmp_path / f"{name}{attempt}") as tb:
                link = tb.metadata()["link"]
                rates[name] = ((link["kernel_shaper"] or {}).get("rate_kbit"),
                               (link["nic_flow_control"] or {}).get("ring_frames"))
                cases[name] = _case(tb, "tcp_nodelay", bulk=True, seconds=BACKGROUND_S)
                cases[name]["nic"] = tb.metadata()["link"]["final_stats"]["nodes"][0].get("nic")
            _assert_gone(tb)
        assert rates == {"as_if_idle": (5400, None), "flow_control": (None, 2)}, rates
        for c in cases.values():   # both flows delivered in full
            small_n, bulk_n = delivered_in_full(BACKGROUND_S)
            assert c["receiver"]["small"]["n"] >= small_n and c["receiver"]["bulk"]["n"] >= bulk_n, c["receiver"]
        return cases["as_if_idle"], cases["flow_control"]

    def figures(pairs) -> dict:
        """(fixed rate, flow control): frames ahead of the small message in ns-3's device queue,
        the small and the bulk message's median delay, each the mean over the pairs of runs."""
        def mean(get):
            return tuple(float(np.mean([get(p[k]) for p in pairs])) for k in (0, 1))
        return {"ahead": mean(lambda c: c["mac_queue"]["small_ahead_mean"]),
                "small": mean(lambda c: c["receiver"]["small"]["median"]),
                "bulk": mean(lambda c: c["receiver"]["bulk"]["median"])}

    def judged(f: dict) -> bool:
        return (f["ahead"][1] < 3.5 and f["ahead"][0] > 1.5 * f["ahead"][1]
                and f["small"][1] < f["small"][0] - AIR_MS and f["bulk"][1] < f["bulk"][0] + 2 * AIR_MS)

    steal_before = cpu_steal_seconds()
    pairs = [measure(1)]
    if not judged(figures(pairs)):   # random background on a busy host: measure both once more
        pairs.append(measure(2))
    f = figures(pairs)
    stolen = cpu_steal_seconds() - steal_before if steal_before is not None else 0.0
    hop = [p[1]["nic"] for p in pairs]   # the robot's emulated NIC under flow control
    why = (f, len(pairs), f"steal {stolen:.2f} s", hop)
    assert hop[0] and hop[0]["released"] > 0 and hop[0]["transit_mean_ms"] < AIR_MS, why
    assert f["ahead"][1] < 3.5 and f["ahead"][0] > 1.5 * f["ahead"][1], why
    assert f["small"][1] < f["small"][0] - AIR_MS, why
    starved = starved_by_hypervisor(stolen, runs=2 * len(pairs))
    if f["bulk"][1] >= f["bulk"][0] + 2 * AIR_MS and starved:
        pytest.xfail(f"the bulk image under flow control {f['bulk'][1]:.1f} ms against "
                     f"{f['bulk'][0]:.1f} ms, while {starved}")
    assert f["bulk"][1] < f["bulk"][0] + 2 * AIR_MS, why


@pytest.mark.timeout(60)
def test_minstrel_rate_manager_carries_traffic(tmp_path):
    with Testbed(load_profile("wifi6", {"rate_manager": "minstrel", "qdisc_rate_fraction": 0}),
                 log_dir=tmp_path) as tb:
        r = bench.rtt(tb, count=20, interval=0.02)
        assert r["received"] == 20, r
        assert "Minstrel" in tb.metadata()["link"]["standard"]


@pytest.mark.parametrize("override, key", [
    ({"standard": "802.11g", "phy_rate": "ErpOfdmRate6Mbps", "qdisc_rate_fraction": 0.9,
      "nic_ring_frames": 0}, "qdisc_rate_fraction"),
    ({"rate_manager": "ideal", "qdisc_rate_fraction": 0.9, "nic_ring_frames": 0}, "qdisc_rate_fraction"),
    ({"qdisc_rate_fraction": 0.9}, "qdisc_rate_fraction"),   # a fixed rate beside the flow control
    ({"nic_ring_frames": -1}, "nic_ring_frames"),
    ({"retry_limit": 0}, "retry_limit"),
    ({"frame_error_rate": 1.0}, "frame_error_rate"),
    ({"tcp_congestion_control": "vegas"}, "tcp_congestion_control"),
    ({"gso_max_segs": -1}, "gso_max_segs"),
    ({"tcp_limit_output_bytes": -1}, "tcp_limit_output_bytes"),
    ({"error_burst": 0.5}, "error_burst"),
    ({"background_pairs": 1}, "background_mbit"),
    ({"background_pairs": 17, "background_mbit": 1}, "background_pairs"),
])
def test_impairment_and_queueing_keys_are_validated(override, key):
    with pytest.raises(ConfigError) as err:
        load_profile("wifi6", override)
    assert key in str(err.value)


@pytest.mark.timeout(120)
def test_error_bursts_keep_the_rate_but_outlast_the_retries(tmp_path):
    # same long-run loss (30 %), in runs of 20 frames on average: with 3 attempts per frame a
    # burst usually takes all, so many frames are given up; independent losses of 30 % give
    # up a frame only with probability 0.027
    def run(burst):
        prof = load_profile("wifi6", {"frame_error_rate": 0.3, "error_burst": burst,
                                      "retry_limit": 3})
        with Testbed(prof, log_dir=tmp_path / f"b{burst}") as tb:
            bench.rtt(tb, count=400, interval=0.004, wait=1.5)
        nodes = tb.metadata()["link"]["final_stats"]["nodes"]
        tx = sum(n["data_mpdu_tx"] for n in nodes)
        return sum(n["fer_drops"] for n in nodes) / tx, sum(n["final_fail"] for n in nodes) / tx
    lost_ind, fail_ind = run(1)
    lost_burst, fail_burst = run(20)
    assert abs(lost_ind - 0.3) < 0.05 and abs(lost_burst - 0.3) < 0.12, (lost_ind, lost_burst)
    assert fail_burst > 2.5 * fail_ind, (fail_ind, fail_burst)
