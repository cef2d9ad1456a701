"""Teleoperation runs through `netloop run`: the simulated car on the robot host, the trial
on the operator host, over each ROS transport (UDPROS via roscpp relays on the car's host),
with a live-topic flow from the car, and the local baseline run (root only)."""
from __future__ import annotations

import json
import os

import pytest
from campaign_helpers import recorded_flows

from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.rendering import Document
from netloop.analysis.teleop_run import analyse_teleop_run, teleop_section
from netloop.experiment import validate_experiment
from netloop.runner import campaign_dir_for, run_experiment

pytestmark = [pytest.mark.integration, pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")]


@pytest.fixture(scope="module")
def teleop_campaign(tmp_path_factory):
    cfg = validate_experiment({
        "link": "ethernet", "transport": ["tcp_nodelay", "udp"],
        "loop": {"type": "teleop", "teleop": {"world": "arena", "trial": {"duration": 6},
                                              "sim": {"camera_rate": 10}}},
        "flows": [{"name": "scan", "kind": "topic", "source_topic": "/scan", "datatype": "sensor_msgs/LaserScan",
                   "size_bytes": 1500, "period": 0.1}]}, name="tele")
    out = campaign_dir_for(cfg, tmp_path_factory.mktemp("tele"))
    run_experiment(cfg, out, log=lambda _: None)
    return cfg, out


def test_runs_complete_with_the_requested_transports(teleop_campaign):
    _, out = teleop_campaign
    runs = {p.name: json.loads((p / "metadata.json").read_text()) for p in (out / "runs").iterdir()}
    assert set(runs) == {"tcp_nodelay__trial=robot-r0", "tcp_nodelay-r0", "udp-r0"}
    for name, meta in runs.items():
        assert meta["status"] == "complete", (name, meta.get("error"))
    assert runs["udp-r0"]["negotiated_transport"]["/odom_net"] == "UDPROS"
    assert runs["udp-r0"]["negotiated_transport"]["/cmd_vel_net"] == "UDPROS"
    assert runs["tcp_nodelay-r0"]["negotiated_transport"]["/cmd_vel"] == "TCPROS+NODELAY"
    assert runs["tcp_nodelay-r0"]["node_uris"]["/trial"].startswith("http://10.77.0.2:")   # operator
    assert runs["tcp_nodelay-r0"]["node_uris"]["/sim"].startswith("http://10.77.0.1:")     # robot
    assert runs["tcp_nodelay__trial=robot-r0"]["node_uris"]["/trial"].startswith("http://10.77.0.1:")


def test_trial_steps_track_the_local_baseline(teleop_campaign):
    _, out = teleop_campaign
    local = analyse_teleop_run(out / "runs" / "tcp_nodelay__trial=robot-r0")
    assert local["ok"] and local["local"], local["problems"]
    for run in ("tcp_nodelay-r0", "udp-r0"):
        r = analyse_teleop_run(out / "runs" / run)
        assert r["ok"] and not r["local"], r["problems"]
        for key in ("speed", "heading"):   # over a 100 Mbit/s link the loop behaves as locally
            assert r[key]["metrics"]["RiseTime"] == pytest.approx(local[key]["metrics"]["RiseTime"], abs=0.15)
        assert r["odom_delay"]["p50_ms"] < 5
    section = teleop_section([analyse_teleop_run(d) for d in sorted((out / "runs").iterdir())], out)
    md = Document("teleop", base=out).add(section).markdown()
    assert "trial on the car (local)" in md and "over udp" in md
    assert (out / "teleop_speed.png").stat().st_size > 10_000


def test_live_topic_flow_from_the_car(teleop_campaign):
    cfg, out = teleop_campaign
    f = analyse_flow(out / "runs" / "udp-r0", recorded_flows(out / "runs" / "udp-r0")[0])
    assert f["ok"] and f["MDR"] >= 0.95 and f["sent"] >= 40
    assert f["mean_bytes"] == pytest.approx(1497, abs=10)     # 360-ray LaserScan
    assert f["period"]["mean_ms"] == pytest.approx(100, rel=0.1)
