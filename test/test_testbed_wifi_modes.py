"""ns-3 Wi-Fi beyond ad-hoc 802.11a: an access point inside ns-3 (every frame crosses the
air twice) and 802.11g / 802.11n profiles, on real namespaces, taps and ns-3 (root only;
about two minutes). Timing is asserted only on runs whose emulator kept real time: a
lagging measurement is taken once more, then the test is an expected failure with the lag."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from netloop.schema import ConfigError
from netloop.testbed import Testbed, load_profile
from netloop.testbed import link_bench as bench, util
from netloop.testbed.links import wifi_binary
import test_testbed
from test_testbed import _assert_gone

#: the testbed module's fixture (every testbed of a test torn down, nothing left in the kernel)
nothing_left_behind = test_testbed.nothing_left_behind

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the testbed creates network namespaces"),
]


def figures_on_healthy_link(profile: str, seconds: float = 2.5) -> dict:
    """bench.wifi_figures of ``profile``, measured again once if ns-3 lagged real time."""
    lags = []
    for _ in range(2):
        fig = bench.wifi_figures(profile, seconds=seconds, pings=40)
        if fig["valid"]:
            return fig
        lags.append(f"late {fig['late_fraction']:.2%}, max {fig['max_lag_ms']:.1f} ms")
    pytest.xfail(f"ns-3 lagged real time on {profile} twice: {'; '.join(lags)}")


@pytest.mark.timeout(150)
def test_access_point_forwards_every_frame_so_it_crosses_the_air_twice(tmp_path):
    with Testbed(load_profile("wifi6_ap"), log_dir=tmp_path) as tb:
        assert tb.hosts == ["robot", "operator"]  # the access point is inside ns-3, no host
        r = bench.rtt(tb, count=20, interval=0.02)
        assert r["received"] == 20, r
        meta = tb.metadata()["link"]
        assert meta["mode"] == "ap" and "access point" in meta["standard"]
        assert meta["positions_m"] == {"robot": 0, "access_point": 10, "operator": 20}
        bench.goodput(tb, seconds=2)
    # Stations address every frame to the AP; its MAC forwards each one down to the other
    # station (mac_tx: packets a station's MAC took; mac_rx: packets it delivered up;
    # data_mpdu_tx: data frames on the air, retries included).
    robot, operator, ap = tb.metadata()["link"]["final_stats"]["nodes"]
    sent = robot["mac_tx"] + operator["mac_tx"]
    assert sent > 500, (robot, operator, ap)
    assert (robot["mac_rx"], operator["mac_rx"]) == (operator["mac_tx"], robot["mac_tx"])
    assert sent <= ap["data_mpdu_tx"] < 1.3 * sent, (robot, operator, ap)  # relayed, + retries
    assert robot["data_mpdu_tx"] + operator["data_mpdu_tx"] >= sent  # and each went up first
    _assert_gone(tb)

    # Against ad-hoc at the same rate: twice the air time per packet, half the goodput. The
    # echo's round trip adds one more air crossing each way: a 128-byte frame at 6 Mbit/s with
    # DIFS, SIFS and its ACK holds the air ~0.29 ms, so ~0.58 ms more. The RTT's host part (taps,
    # ns-3's scheduling, the Python echo: ~0.6 ms and noisy on a shared machine) is not doubled,
    # so the difference of the medians is asserted, not their ratio (measured 0.30-0.57 ms; a
    # median that noise pushed out of the band is measured again, up to twice, the lowest kept).
    adhoc, infra = figures_on_healthy_link("wifi6"), figures_on_healthy_link("wifi6_ap")
    rtts = {"wifi6": [adhoc["rtt_median_ms"]], "wifi6_ap": [infra["rtt_median_ms"]]}
    for _ in range(2):   # load only adds delay: the median that looks too slow is measured again
        diff = min(rtts["wifi6_ap"]) - min(rtts["wifi6"])
        if 0.2 < diff < 1.2:
            break
        rtts["wifi6" if diff <= 0.2 else "wifi6_ap"].append(rtt_median("wifi6" if diff <= 0.2 else "wifi6_ap"))
    assert 0.2 < min(rtts["wifi6_ap"]) - min(rtts["wifi6"]) < 1.2, (rtts, adhoc, infra)
    assert 0.35 < infra["goodput_mbit_s"] / adhoc["goodput_mbit_s"] < 0.65, (adhoc, infra)


def rtt_median(profile: str, pings: int = 40) -> float:
    """The median UDP echo RTT on a fresh ``profile`` link, as bench.wifi_figures measures it."""
    with Testbed(load_profile(profile)) as tb:
        time.sleep(1.0)  # past the lag warm-up
        r = bench.rtt(tb, count=pings, interval=0.02)
    assert r["received"] == pings, r
    return r["rtt_median_ms"]


@pytest.mark.timeout(200)
@pytest.mark.parametrize("profile, goodput_range", [
    ("wifi_g54", (12, 30)),        # 802.11g ERP-OFDM 54 Mbit/s: ~20 Mbit/s of TCP
    ("wifi_n_mcs7", (30, 64)),     # 802.11n MCS 7 with A-MPDU: ~50 Mbit/s
    ("wifi_n_mcs7_ap", (15, 35)),  # the same through the access point: about half
])
def test_g_and_n_profiles_carry_traffic_at_their_rates(profile, goodput_range):
    fig = figures_on_healthy_link(profile)
    assert fig["rtt_received"] == fig["rtt_sent"], fig
    lo, hi = goodput_range
    assert lo < fig["goodput_mbit_s"] < hi, fig
    # faster than 802.11a at 6 Mbit/s, whose measured goodput is ~4.6 Mbit/s
    assert fig["rtt_median_ms"] < 3, fig


@pytest.mark.timeout(30)
def test_bad_wifi_parameters_refused_before_anything_starts(nothing_left_behind):
    before = set(util.netns_list())
    for overrides, key, words in [
        ({"hops": 2, "max_range_m": 30, "distance_m": 20}, "mode", ["hops: 1"]),
        ({"phy_rate": "OfdmRate54Mbps"}, "phy_rate", ["not a rate of 802.11n", "HtMcs0", "HtMcs7"]),
        ({"standard": "802.11g"}, "phy_rate", ["ErpOfdmRate6Mbps", "ErpOfdmRate54Mbps"]),
        ({"mode": "mesh"}, "mode", ["allowed: adhoc, ap"]),
        ({"rate_manager": "aarf"}, "rate_manager", ["allowed: constant, ideal, minstrel"]),
        ({"max_range_m": 5}, "max_range_m", ["could not hear the access point"]),
    ]:
        with pytest.raises(ConfigError) as err:
            Testbed(load_profile("wifi_n_mcs7_ap", overrides))
        assert err.value.key == key, err.value
        for w in words:
            assert w in str(err.value)
    assert set(util.netns_list()) == before and not nothing_left_behind
    # The ns-3 program refuses what it does not know too, before creating any tap.
    for arg, words in [("--mode=mesh", "allowed adhoc, ap"), ("--standard=80211ac", "allowed 80211a"),
                       ("--manager=aarf", "allowed constant, ideal, minstrel")]:
        out = subprocess.run([str(wifi_binary()), "--taps=a,b", "--ips=10.0.0.1,10.0.0.2", arg],
                             capture_output=True, text=True, timeout=20)
        assert out.returncode == 2 and words in out.stderr, out.stderr
