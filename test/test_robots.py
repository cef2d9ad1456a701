"""Many robots on one channel (link profiles' ``robots: N``; flows' ``per_robot``): the
hosts and their addresses, ns-3 with N robot stations around the operator, the Ethernet
switch, and a campaign in which every robot streams to the operator at once."""
from __future__ import annotations

import json
import os

import pytest
from campaign_helpers import campaign_runs

from netloop.analysis.report import analyse_run, write_report
from netloop.analysis.rlc_result import rlc_loop, robot_loops
from netloop.experiment import validate_experiment
from netloop.run_files import load_metadata
from netloop.schema import ConfigError
from netloop.testbed import Testbed, load_profile
from netloop.testbed import link_bench as bench
from netloop.testbed.links import host_address

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the testbed creates network namespaces")

LASER = {"name": "laser", "kind": "generic", "from": "robot", "to": "operator", "size_bytes": 1000,
         "period": 0.05, "count": 60, "per_robot": True}


def test_robot_hosts_are_named_and_addressed_in_order():
    tb = Testbed(load_profile("wifi6", {"robots": 4}))          # creates nothing
    assert tb.hosts == ["robot", "robot2", "robot3", "robot4", "operator"]
    assert [host_address(h) for h in tb.hosts] == ["10.77.0.1", "10.77.0.12", "10.77.0.13", "10.77.0.14",
                                                   "10.77.0.2"]
    assert Testbed(load_profile("ethernet", {"robots": 3})).hosts == ["robot", "robot2", "robot3", "operator"]
    assert Testbed(load_profile("wifi6")).hosts == ["robot", "operator"]


@pytest.mark.parametrize("link, params, key, words", [
    ("wifi6", {"robots": 17}, "robots", "<= 16"),
    ("wifi6_2hop", {"robots": 3}, "robots", "hops: 1"),
    ("ethernet", {"robots": 0}, "robots", ">= 1"),
])
def test_impossible_robot_counts_are_refused(link, params, key, words):
    with pytest.raises(ConfigError) as err:
        load_profile(link, params)
    assert err.value.key == key and words in str(err.value), str(err.value)


def test_a_per_robot_flow_is_one_flow_per_robot():
    exp = validate_experiment({"link": "wifi6", "link_params": {"robots": 3}, "loop": {"type": "none"},
                               "flows": [LASER]}, name="x")
    assert [(f.name, f.from_, f.to) for f in exp.flow_instances] == [
        ("laser_robot", "robot", ["operator"]), ("laser_robot2", "robot2", ["operator"]),
        ("laser_robot3", "robot3", ["operator"])]
    with pytest.raises(ConfigError) as err:
        validate_experiment({"link": "wifi6", "loop": {"type": "none"}, "flows": [dict(LASER, replicas=2)]}, name="x")
    assert err.value.key == "flows[0].per_robot" and "not both" in str(err.value)
    with pytest.raises(ConfigError) as err:   # robot3 does not exist with two robots
        validate_experiment({"link": "wifi6", "link_params": {"robots": 2}, "loop": {"type": "none"},
                             "flows": [dict(LASER, per_robot=False, **{"from": "robot3"})]}, name="x")
    assert "robot3" in str(err.value)


@needs_root
@pytest.mark.timeout(120)
@pytest.mark.parametrize("profile", ["wifi6", "ethernet"])
def test_every_robot_reaches_the_operator_and_each_other(tmp_path, profile):
    with Testbed(load_profile(profile, {"robots": 3}), log_dir=tmp_path) as tb:
        for robot in ("robot", "robot2", "robot3"):
            r = bench.rtt(tb, src=robot, dst="operator", count=10, interval=0.02)
            assert r["received"] == 10, (robot, r)
        assert bench.rtt(tb, src="robot2", dst="robot3", count=10, interval=0.02)["received"] == 10
        meta = tb.metadata()
        if profile == "wifi6":   # ns-3: the operator in the middle, the robots on a circle around it
            pos = meta["link"]["positions_m"]
            assert pos["operator"] == [0.0, 0.0] and pos["robot"] == [10.0, 0.0]
            assert all(abs(x * x + y * y - 100.0) < 1e-2 for h, (x, y) in pos.items() if h != "operator")


@needs_root
@pytest.mark.timeout(300)
def test_three_robots_stream_to_the_operator_on_one_wifi_channel(tmp_path):
    doc = {"name": "robots", "link": "wifi6", "link_params": {"robots": 3}, "transport": "udp",
           "loop": {"type": "none"}, "flows": [LASER]}
    runs = campaign_runs(tmp_path, doc, "robots")
    run_dir = runs["udp-r0"]
    meta = load_metadata(run_dir).to_json()
    assert meta["status"] in ("complete", "invalid"), meta.get("error")
    assert set(meta["link"]["hosts"]) == {"robot", "robot2", "robot3", "operator"}
    flows = analyse_run(run_dir).flows
    assert [f.flow for f in flows] == ["laser_robot", "laser_robot2", "laser_robot3"]
    assert [f.entry for f in flows] == ["laser"] * 3 and [f.replicas for f in flows] == [3] * 3
    for f in flows:
        assert f.ok and f.sent == 60 and f.MDR > 0.9, (f.flow, f.MDR)
    text = write_report(run_dir.parent.parent).with_suffix(".md").read_text()
    assert "## Flow `laser` (generic, 1000 bytes per message, every 50 ms, 3 robots)" in text, text[:2000]
    assert "Each robot" in text and "| udp | robot3 | 1 |" in text


RLC = {"type": "rlc", "per_robot": True, "plant": {"R": 1.0, "L": 0.1, "C": 0.1, "period": 0.02},
       "samples": 100, "warmup": 0.5}


@pytest.mark.parametrize("loop, key, words", [
    ({"type": "teleop", "per_robot": True}, "loop.per_robot", "only the rlc loop"),
    (dict(RLC, placement={"plant": "operator", "controller": "robot"}), "loop.placement.plant",
     "leave the plant on 'robot'"),
    (dict(RLC, placement={"controller": "robot2"}), "loop.placement.controller", "not a robot"),
])
def test_a_loop_per_robot_needs_the_rlc_loop_with_its_plants_on_the_robots(loop, key, words):
    with pytest.raises(ConfigError) as err:
        validate_experiment({"link": "ethernet", "link_params": {"robots": 3}, "loop": loop}, name="x")
    assert err.value.key == key and words in str(err.value), str(err.value)


def test_a_loop_per_robot_crosses_the_link_on_topics_of_its_own():
    from netloop.runner import crossing_topics      # noqa: PLC0415
    exp = validate_experiment({"link": "wifi6", "link_params": {"robots": 3}, "loop": RLC}, name="x")
    assert [(t.topic, t.source_host, t.dest_host, t.control) for t in crossing_topics(exp)] == [
        (f"/{r}/{d}", *(hosts if d == "y" else hosts[::-1]), True)
        for r in ("robot", "robot2", "robot3") for d, hosts in (("y", (r, "operator")), ("u", (r, "operator")))]


@needs_root
@pytest.mark.timeout(300)
def test_three_robots_each_run_their_own_loop_at_once(tmp_path):
    """One RLC loop per robot on a shared switch; the priority relays (one per host) give every
    loop's topics the top priority. Each loop is analysed on its own and they behave alike."""
    doc = {"name": "robot_loops", "link": "ethernet", "link_params": {"robots": 3},
           "transport": ["tcp_nodelay", "priority"], "loop": RLC}
    runs = campaign_runs(tmp_path, doc, "robot_loops")
    for transport in ("tcp_nodelay", "priority"):
        run_dir = runs[f"{transport}-r0"]
        meta = load_metadata(run_dir).to_json()
        assert meta["status"] == "complete", meta.get("error")
        assert meta["loop"]["robots"] == ["robot", "robot2", "robot3"]
        assert {f"/{r}/{d}" for r in meta["loop"]["robots"] for d in "yu"} <= set(meta["negotiated_transport"])
        a = analyse_run(run_dir)
        loops = robot_loops(a)
        assert list(loops) == ["robot", "robot2", "robot3"] and rlc_loop(a) is loops["robot"]
        overshoots = []
        for robot, loop in loops.items():
            assert loop.ok and loop.samples == 100 and loop.sensor.MDR == loop.actuation.MDR == 1.0, robot
            assert (run_dir / "records" / f"plant_{robot}.csv").is_file()
            overshoots.append(loop.step["Overshoot"])
        assert max(overshoots) - min(overshoots) < 2.0, overshoots    # the same loop, over the same switch
        if transport == "priority":
            relay = json.loads((run_dir / "transport.json").read_text())   # every loop first (Pound's order)
            assert relay["priorities"] == {f"/{r}/{d}": 250 for r in ("robot", "robot2", "robot3") for d in "yu"}
    text = write_report(next(iter(runs.values())).parent.parent).with_suffix(".md").read_text()
    assert "## Loops per robot" in text and "| priority | robot3 | 1 |" in text
