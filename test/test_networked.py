"""Runs across hosts: plant and controller in different network namespaces joined by an
emulated link (root only). Checks placement, that a delay-dominated loop degrades as its
measured delays say it should, and perturbing flows over the ns-3 802.11a link."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
from campaign_helpers import campaign_runs, recorded_flows, run_campaign
from link_health import run_with_healthy_link

from netloop.analysis import baseline
from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.loop_run import analyse_loop_run, load_loop_run
from netloop.analysis.metrics import step_metrics
from netloop.analysis.records import read_events
from netloop.run_files import load_metadata

pytestmark = [pytest.mark.integration, pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")]


@pytest.fixture(scope="module")
def ethernet_runs(tmp_path_factory):
    return run_campaign(tmp_path_factory.mktemp("eth"), {"link": "ethernet", "transport": ["tcp_nodelay", "udp"],
                                                         "loop": {"samples": 100}}, "eth")


@pytest.mark.parametrize("transport", ["tcp_nodelay", "udp"])
def test_plant_and_controller_on_their_hosts(ethernet_runs, transport):
    _, out = ethernet_runs
    meta = load_metadata(out / "runs" / f"{transport}-r0").to_json()
    assert meta["status"] == "complete", meta.get("error")
    assert meta["node_uris"]["/plant"].startswith("http://10.77.0.1:")       # robot
    assert meta["node_uris"]["/controller"].startswith("http://10.77.0.2:")  # operator
    assert meta["link"]["profile"] == "ethernet" and set(meta["link"]["hosts"]) == {"robot", "operator"}
    a = analyse_loop_run(load_loop_run(out / "runs" / f"{transport}-r0"))
    assert a["ok"] and abs(a["step"]["Overshoot"] - a["baseline_step"]["Overshoot"]) < 2.0


def test_delay_explains_the_degradation_on_a_shaped_link(tmp_path):
    """20 ms each way: the loop's u arrives ~40 ms after its sample. Replaying the measured
    per-sample delays through the exact loop model reproduces the measured response."""
    doc = {"link": "shaped", "link_params": {"delay_ms": 20}, "transport": "udp", "loop": {"samples": 100}}
    run_dir = run_with_healthy_link(lambda out: campaign_runs(out, doc, "shaped"), tmp_path)["udp-r0"]
    loop = load_metadata(run_dir).to_json()["experiment"]["loop"]   # as the run recorded it
    a = analyse_loop_run(load_loop_run(run_dir))
    assert a["ok"], a["problems"]
    assert 38 < a["rtt"]["p50_ms"] < 48
    assert a["step"]["Overshoot"] > a["baseline_step"]["Overshoot"] + 15   # 40 ms delay: ~57 % vs 35 %

    plant = read_events(run_dir / "records" / "plant.csv")
    y, u = plant.select("tx", "y"), plant.select("rx", "u")
    t0 = y.stamp_ns[0]
    applied = dict(zip(u.answer_seq.tolist(), ((u.recv_ns - t0) / 1e9).tolist()))
    times = (y.stamp_ns - t0) / 1e9
    delays = np.array([applied.get(k, np.inf) - times[k] for k in range(len(times))])
    lost = ~np.isfinite(delays)
    replay = baseline.simulate_loop(loop, np.where(lost, 0.0, delays), lost=lost, sample_times=times)
    np.testing.assert_allclose(replay.y, y.value, atol=2e-3)   # the plant's own exact model: same response
    assert step_metrics(replay.t, replay.y)["Overshoot"] == pytest.approx(a["step"]["Overshoot"], abs=0.5)


def test_flows_over_ns3_wifi(tmp_path):
    flows = [{"name": "laser", "size_bytes": 1024, "period": 0.02, "count": 100},
             {"name": "image", "size_bytes": 65536, "period": 0.15, "count": 14}]
    doc = {"link": "wifi6", "transport": ["tcp_nodelay", "udp"], "loop": {"type": "none"}, "flows": flows}
    runs = run_with_healthy_link(lambda out: campaign_runs(out, doc, "wifi"), tmp_path)
    results = {}
    for transport in ("tcp_nodelay", "udp"):
        run_dir = runs[f"{transport}-r0"]
        meta = load_metadata(run_dir).to_json()
        assert meta["link"]["type"] == "ns3_wifi" and meta["link_health"]["max_lag_ms"] is not None
        _assert_messages_within_the_judged_window(run_dir, meta)
        results[transport] = {f.name: analyse_flow(run_dir, f) for f in recorded_flows(run_dir)}
    for transport, r in results.items():
        laser, image = r["laser"], r["image"]
        assert laser["MDR"] >= 0.97 and image["MDR"] >= 0.9, (transport, laser["MDR"], image["MDR"])
        # a 64 KB message needs ~110 ms of 6 Mbit/s air time: far above loopback's fractions of a ms
        assert 80 < image["delay"]["p50_ms"] < 400, (transport, image["delay"])
        assert laser["delay"]["p50_ms"] > 0.5
        assert image["bandwidth_mbit"] == pytest.approx(65536 * 8 / 0.15 / 1e6, rel=0.2)


def _assert_messages_within_the_judged_window(run_dir, meta):
    """The link's health is judged from the start of the nodes to the moment the senders have
    stopped and what was in flight has arrived: every message recorded lies in that window, so
    a stall outside it (listed in the health record with its phase) cannot touch a record."""
    phases = meta["phases"]
    order = ["nodes_started", "connected", "ended", "senders_stopped", "nodes_stopped"]
    assert list(phases) == order and all(0 <= phases[a] <= phases[b] for a, b in zip(order, order[1:])), phases
    first, last = math.inf, -math.inf
    for path in (run_dir / "records").glob("*.csv"):
        events = read_events(path)
        first = min(first, events.stamp_ns.min() / 1e9)
        received = events.recv_ns[events.recv_ns > 0]
        if received.size:
            last = max(last, received.max() / 1e9)
    start = meta["start_unix"]
    assert start + phases["nodes_started"] <= first and last <= start + phases["senders_stopped"], (
        first - start, last - start, phases)
    for stall in meta["link_health"]["stalls"]:
        assert stall["phase"] in ["setup"] + order and stall["at_s"] == pytest.approx(stall["began"] - start, abs=1e-3)
