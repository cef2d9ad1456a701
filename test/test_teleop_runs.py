"""Teleoperation runs through `netloop run`: the simulated car on the robot host, the trial
on the operator host, over each ROS transport (UDPROS via roscpp relays on the car's host),
with a live-topic flow from the car, and the local baseline run (root only)."""
from __future__ import annotations

import json
import os
import re

import pytest
from campaign_helpers import recorded_flows

from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.rendering import Document
from netloop.analysis.teleop_run import analyse_teleop_run
from netloop.experiment import validate_experiment
from netloop.loops.teleop.analysis import teleop_section
from netloop.runner import campaign_dir_for, run_experiment

pytestmark = [pytest.mark.integration, pytest.mark.root,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")]


def sim_lag(run_dir) -> str | None:
    """How the run's simulator fell behind real time, from its closing log line ("real-time
    factor min A mean B; C s given up"): a mean under 0.97 or more than 0.1 s of simulated time
    given up (the rise times are compared within 0.15 s). None: it kept up."""
    m = re.search(r"real-time factor min ([0-9.]+) mean ([0-9.]+); ([0-9.]+) s given up",
                  (run_dir / "logs" / "sim.log").read_text(errors="replace"))
    assert m, f"no closing line in {run_dir / 'logs' / 'sim.log'}"
    low, mean, given_up = (float(g) for g in m.groups())
    if mean >= 0.97 and given_up <= 0.1:
        return None
    return f"{run_dir.name}: real-time factor mean {mean:.2f}, min {low:.2f}, {given_up:.2f} s given up"


def _lags(out) -> list[str]:
    return [lag for lag in map(sim_lag, sorted((out / "runs").iterdir())) if lag]


@pytest.fixture(scope="module")
def teleop_campaign(tmp_path_factory):
    """The campaign, run once more when a simulator fell behind real time (at a load average of
    8 a car never reached 90 % of its speed step within the trial: rise time nan); ``lagged``
    (the third item) says how when it fell behind in both."""
    cfg, out = _teleop_campaign(tmp_path_factory)
    first = _lags(out)
    if not first:
        return cfg, out, None
    cfg, out = _teleop_campaign(tmp_path_factory)
    again = _lags(out)
    return cfg, out, (f"first campaign: {'; '.join(first)}; second: {'; '.join(again)}" if again else None)


def _teleop_campaign(tmp_path_factory):
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
    _, out, lagged = teleop_campaign
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
    _, out, lagged = teleop_campaign
    local = analyse_teleop_run(out / "runs" / "tcp_nodelay__trial=robot-r0")
    assert local["ok"] and local["local"], local["problems"]
    for run in ("tcp_nodelay-r0", "udp-r0"):
        r = analyse_teleop_run(out / "runs" / run)
        assert r["ok"] and not r["local"], r["problems"]
    section = teleop_section([analyse_teleop_run(d) for d in sorted((out / "runs").iterdir())], out)
    md = Document("teleop", base=out).add(section).markdown()
    assert "trial on the car (local)" in md and "over udp" in md
    assert (out / "teleop_speed.png").stat().st_size > 10_000
    if lagged:   # timing only on runs whose simulator kept real time (link_health's policy)
        pytest.xfail("the simulator fell behind real time in both campaigns (machine busy): " + lagged)
    for run in ("tcp_nodelay-r0", "udp-r0"):
        r = analyse_teleop_run(out / "runs" / run)
        for key in ("speed", "heading"):   # over a 100 Mbit/s link the loop behaves as locally
            assert r[key]["metrics"]["RiseTime"] == pytest.approx(local[key]["metrics"]["RiseTime"], abs=0.15)
        assert r["odom_delay"]["p50_ms"] < 5


def test_live_topic_flow_from_the_car(teleop_campaign):
    cfg, out, lagged = teleop_campaign
    f = analyse_flow(out / "runs" / "udp-r0", recorded_flows(out / "runs" / "udp-r0")[0])
    assert f["ok"] and f["MDR"] >= 0.95 and f["sent"] >= 40
    assert f["mean_bytes"] == pytest.approx(1497, abs=10)     # 360-ray LaserScan
    if lagged:   # the simulator's scans come at its pace (131.8 ms apart at a load average of 10)
        pytest.xfail("the simulator fell behind real time in both campaigns (machine busy): " + lagged)
    assert f["period"]["mean_ms"] == pytest.approx(100, rel=0.1)
