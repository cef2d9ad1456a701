"""nimbro and nimbro_mixed end to end with netloop's own relays (nimbro_network cannot be
installed here; its configuration is tested in test_transport_config.py): the RLC loop and
perturbing flows on loopback and ethernet, the per-topic rate limit and compression, and
fragmentation over a lossy link, where a message missing a datagram is dropped after the
reassembly timeout while single-datagram messages get through."""
from __future__ import annotations

import json
import os

import pytest
from campaign_helpers import recorded_flows, relay_stats, run_campaign
from link_health import assert_finished

from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.loop_run import analyse_loop_run, load_loop_run
from netloop.rundir import read_metadata

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("nothing_left_behind")]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
LASER = {"name": "laser", "size_bytes": 1024, "period": 0.02, "count": 0}
IMAGE = {"name": "image", "size_bytes": 65536, "period": 0.15, "count": 0}



def run(tmp_path, doc, name="nimbro"):
    return run_campaign(tmp_path, doc, name)


last = relay_stats


def check(cfg, run_dir, min_mdr=0.97):
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    assert all(v == "TCPROS+NODELAY via relay" or v.endswith("via relay") for v in meta["negotiated_transport"].values())
    if cfg.loop.type == "rlc":
        a = analyse_loop_run(load_loop_run(run_dir))
        assert a["ok"], a["problems"]
        assert abs(a["step"]["Overshoot"] - a["baseline_step"]["Overshoot"]) < 2.0
    flows = {f.name: analyse_flow(run_dir, f) for f in recorded_flows(run_dir)}
    for name, f in flows.items():
        assert f["MDR"] >= min_mdr, (name, f["MDR"])
    return flows


@pytest.fixture(scope="module")
def loopback_runs(tmp_path_factory):
    return run(tmp_path_factory.mktemp("lo"), {"link": "loopback", "transport": ["nimbro", "nimbro_mixed"],
                                               "loop": {"samples": 100}, "flows": [LASER, IMAGE]})


def test_nimbro_on_loopback_every_topic_over_udp(loopback_runs):
    cfg, out = loopback_runs
    run_dir = out / "runs" / "nimbro-r0"
    check(cfg, run_dir)
    tx = last(run_dir, "nimbro_udp_sender_robot_to_operator")
    image = tx["topics"]["/flows/image"]
    assert image["out_msgs"] >= 5 and image["datagrams"] >= 46 * image["out_msgs"]   # 64 KB in 1500-byte packets
    rx = last(run_dir, "nimbro_udp_receiver_operator")
    assert rx["topics"]["/flows/image"]["published"] >= image["out_msgs"] - 1
    assert rx["foreign"] == 0 and not any(rx["malformed"].values())
    assert not (run_dir / "records" / "relay_nimbro_tcp_receiver_operator_stats.jsonl").exists()


def test_nimbro_mixed_on_loopback_images_over_tcp(loopback_runs):
    cfg, out = loopback_runs
    run_dir = out / "runs" / "nimbro_mixed-r0"
    check(cfg, run_dir)
    assert set(last(run_dir, "nimbro_tcp_sender_robot_to_operator")["topics"]) == {"/flows/image"}
    assert set(last(run_dir, "nimbro_udp_sender_robot_to_operator")["topics"]) == {"/y", "/flows/laser"}
    tcp_rx = last(run_dir, "nimbro_tcp_receiver_operator")
    assert tcp_rx["accepted"] == 1 and tcp_rx["topics"]["/flows/image"]["published"] >= 5
    record = json.loads((run_dir / "transport.json").read_text())
    assert record["implementation"] == "own" and record["mixed"]


@pytest.mark.root
@needs_root
def test_nimbro_over_ethernet_with_rate_limit_and_compression(tmp_path):
    cfg, out = run(tmp_path, {"link": "ethernet", "transport": ["nimbro", "nimbro_mixed"], "loop": {"samples": 100},
                              "flows": [LASER, IMAGE], "transport_options": {
                                  "nimbro": {"topics": {"/flows/image": {"rate": 3.0}, "/flows/laser": {"compress": True}}},
                                  "nimbro_mixed": {"topics": {"/flows/laser": {"protocol": "tcp"}}}}})
    flows = check(cfg, out / "runs" / "nimbro-r0", min_mdr=0.0)
    assert flows["laser"]["MDR"] >= 0.97
    assert 0.3 < flows["image"]["MDR"] < 0.65          # 6.7 Hz offered, at most 3 Hz sent
    tx = last(out / "runs" / "nimbro-r0", "nimbro_udp_sender_robot_to_operator")["topics"]
    assert tx["/flows/image"]["rate_dropped"] > 0
    assert tx["/flows/laser"]["out_bytes"] < tx["/flows/laser"]["in_bytes"] / 5   # zero padding compresses well
    check(cfg, out / "runs" / "nimbro_mixed-r0")
    tcp = last(out / "runs" / "nimbro_mixed-r0", "nimbro_tcp_sender_robot_to_operator")["topics"]
    assert set(tcp) == {"/flows/laser", "/flows/image"}                       # protocol forced per topic


@pytest.mark.root
@needs_root
def test_fragmented_messages_missing_a_datagram_are_dropped(tmp_path):
    flows = [dict(LASER, count=250), dict(IMAGE, count=30)]
    _, out = run(tmp_path, {"link": "shaped", "link_params": {"loss": 0.03, "delay_ms": 2, "rate_mbit": 50},
                           "transport": "nimbro", "loop": {"type": "none"}, "flows": flows,
                           "transport_options": {"nimbro": {"reassembly_timeout": 0.2}}})
    run_dir = out / "runs" / "nimbro-r0"
    # the loss and reassembly checked here do not depend on timing: a lagging shaper is accepted
    assert_finished(read_metadata(run_dir))
    laser, image = (analyse_flow(run_dir, f) for f in recorded_flows(run_dir))
    assert laser["MDR"] > 0.9                      # one datagram each: ~3 % lost
    assert image["MDR"] < 0.6                      # 46 datagrams each: 0.97^46 = 25 % complete
    rx = last(run_dir, "nimbro_udp_receiver_operator")["reassembly"]
    assert rx["timed_out"] >= 5 and rx["pending_messages"] <= 1 and rx["messages"] >= laser["received"]


def test_compressed_topic_arrives_whole(tmp_path):
    """A 64 KB flow with compress: true is deflated by the sender and inflated by the
    receiver before republishing: every message arrives, at its full serialized size."""
    flows = [dict(IMAGE, count=20)]
    cfg, out = run(tmp_path, {"transport": "nimbro", "loop": {"type": "none"}, "flows": flows,
                              "transport_options": {"nimbro": {"topics": {"/flows/image": {"compress": True}}}}})
    run_dir = out / "runs" / "nimbro-r0"
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    image = analyse_flow(run_dir, recorded_flows(run_dir)[0])
    assert image["MDR"] == 1.0 and image["mean_bytes"] == 65536
    sent = last(run_dir, "nimbro_udp_sender_robot_to_operator")["topics"]["/flows/image"]
    assert sent["in_bytes"] == 20 * 65536 and sent["out_bytes"] < sent["in_bytes"] / 10  # zero padding deflates
