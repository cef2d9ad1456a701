"""The multimaster transport: one master per host, kept in sync by netloop's discovery +
sync (multimaster_fkie is not installable here). End to end with the RLC loop and a flow:
on loopback (static peer list), over ethernet namespaces (multicast discovery), and on
the two-hop chain where multicast cannot reach the far end (unicast fallback); and the
re-synchronisation after a peer disappears and comes back."""
from __future__ import annotations

import json
import os
import time

import pytest
from campaign_helpers import recorded_flows, run_campaign
from link_health import assert_finished

from netloop import paths, rosenv
from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.loop_run import analyse_loop_run, load_loop_run
from netloop.analysis.records import read_events
from netloop.master import RosMaster, free_port, wait_for
from netloop.processes import ProcessGroup
from netloop.transports.relay_common import python_module_argv
from netloop.transports.multimaster import mm_sync_option_params

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("nothing_left_behind")]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
LASER = {"name": "laser", "size_bytes": 1024, "period": 0.02, "count": 0}



def run(tmp_path, doc, name="mm"):
    """Runs the campaign; returns (config, the directory of its one multimaster run)."""
    cfg, out = run_campaign(tmp_path, doc, name)
    return cfg, out / "runs" / "multimaster-r0"


def stats(run_dir, host):
    lines = (run_dir / "records" / f"relay_mm_sync_{host}_stats.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def check_run(run_dir, allow_lag=False):
    """The run's relays, masters, loop and flows; ``allow_lag``: a lagging emulated link is
    accepted (what is checked then does not depend on timing)."""
    meta = json.loads((run_dir / "metadata.json").read_text())
    if allow_lag:
        assert_finished(meta)
    else:
        assert meta["status"] == "complete", meta.get("error")
    assert all(v.endswith("via relay") for v in meta["negotiated_transport"].values()), meta["negotiated_transport"]
    assert set(meta["masters"]) == set(meta["link"]["hosts"]) and len(set(meta["masters"].values())) == len(meta["masters"])
    a = analyse_loop_run(load_loop_run(run_dir))
    assert a["ok"], a["problems"]
    for flow in recorded_flows(run_dir):
        f = analyse_flow(run_dir, flow)
        assert f["MDR"] >= 0.97, (flow.name, f["MDR"])
    record = json.loads((run_dir / "transport.json").read_text())
    assert record["implementation"] == "own" and record["stats_files"]
    return a


def test_multimaster_on_loopback_with_static_peers(tmp_path):
    _, run_dir = run(tmp_path, {"link": "loopback", "transport": "multimaster", "loop": {"samples": 100},
                               "flows": [LASER], "transport_options": {"multimaster": {"discovery": "static"}}})
    a = check_run(run_dir)
    assert abs(a["step"]["Overshoot"] - a["baseline_step"]["Overshoot"]) < 1.0
    reports = stats(run_dir, "operator")
    s = reports[-1]
    assert s["peers"]["robot"]["via"] == ["unicast"] and not s["conflicts"]
    assert max(r["registrations"] for r in reports) == 3   # /plant (pub /y, sub /u), the laser's source
    assert s["registrations"] == 0                         # all unregistered at shutdown


@pytest.mark.root
@needs_root
def test_multimaster_over_ethernet_by_multicast(tmp_path):
    _, run_dir = run(tmp_path, {"link": "ethernet", "transport": "multimaster", "loop": {"samples": 100},
                               "flows": [LASER], "transport_options": {"multimaster": {"discovery": "multicast"}}})
    a = check_run(run_dir)
    assert abs(a["step"]["Overshoot"] - a["baseline_step"]["Overshoot"]) < 2.0
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["node_uris"]["/plant"].startswith("http://10.77.0.1:")  # the data path is direct
    for host, other in (("robot", "operator"), ("operator", "robot")):
        s = stats(run_dir, host)[-1]
        assert s["multicast"] and s["peers"][other]["via"] == ["multicast"]
        assert s["registered"] >= 2 and not s["conflicts"]


@pytest.mark.root
@needs_root
def test_multimaster_two_hop_falls_back_to_unicast(tmp_path):
    _, run_dir = run(tmp_path, {"link": "wifi6_2hop", "transport": "multimaster", "loop": {"samples": 100}})
    check_run(run_dir, allow_lag=True)
    s = stats(run_dir, "operator")[-1]
    # the relay host is in radio range (multicast); the robot is not: found by unicast
    assert s["peers"]["relay"]["via"] == ["multicast"]
    assert s["peers"]["robot"]["via"] == ["unicast"]


def test_resync_after_a_peer_disappears_and_comes_back(tmp_path, ros_env):
    """Two masters on loopback with a sync each; a publisher on A, a subscriber on B. When A's
    sync dies, B unsynchronises A after peer_timeout (the subscriber loses the publisher);
    when it comes back, B synchronises it again and messages flow again."""
    group = ProcessGroup(tmp_path / "logs")
    try:
        masters = {}
        for h in ("a", "b"):
            m = RosMaster(group, dict(ros_env, ROS_LOG_DIR=str(tmp_path / "ros"), ROS_HOME=str(tmp_path / "ros")),
                          name=f"master_{h}")
            masters[h] = m.start()
        ports = {h: free_port() for h in masters}
        peers = [{"host": h, "address": "127.0.0.1", "port": p} for h, p in ports.items()]

        def env(h):
            return rosenv.node_env(masters[h].uri, "127.0.0.1", tmp_path / "ros")

        def start_sync(h):
            name = f"mm_sync_{h}"
            masters[h].set_params(mm_sync_option_params(None) | {
                                   "host": h, "address": "127.0.0.1", "domain": str(tmp_path), "discovery": "static",
                                   "port": ports[h], "peers": peers, "allowed_peers": ["127.0.0.1"],
                                   "heartbeat_hz": 10.0, "peer_timeout": 1.0, "sync_interval": 0.1,
                                   "sync_topics": ["/t"], "stats_period": 0.2,
                                   "stats_path": str(tmp_path / f"{name}.jsonl")}, "/" + name)
            return group.start(name, python_module_argv("netloop.transports.mm_sync", name), env=env(h))

        def publishers_of_t(h):
            code, _, state = masters[h].rpc(masters[h].uri, "getSystemState")
            return next((nodes for topic, nodes in state[0] if topic == "/t"), [])

        rx = tmp_path / "rx.csv"
        masters["b"].set_params({"transport": "tcp_nodelay", "record_path": str(rx)}, "/sink")
        group.start("sink", [str(paths.node_binary("flow_sink")), "__name:=sink", "flow:=/t"], env=env("b"))
        masters["a"].set_params({"message": "loop_sample", "size_bytes": 200, "period": 0.02, "count": 0,
                                 "start_delay": 0.0}, "/source")
        group.start("source", [str(paths.node_binary("flow_source")), "__name:=source", "flow:=/t"], env=env("a"))
        sync_a = start_sync("a")
        start_sync("b")

        def received():
            return len(read_events(rx)) if rx.exists() else 0
        assert wait_for(lambda: received() > 20, 20), "no message crossed the synchronised masters"
        assert publishers_of_t("b") == ["/source"]

        group.stop(sync_a)          # A's sync disappears (its master and nodes keep running)
        assert wait_for(lambda: publishers_of_t("b") == [], 5), "B kept the publisher of a lost peer"

        def stopped_growing():      # messages already in flight may still land: wait for a quiet second
            before = received()
            time.sleep(1.0)
            return received() == before
        assert wait_for(stopped_growing, 6, interval=0.0), "the subscriber kept receiving from a lost peer"
        stalled = received()

        sync_a = start_sync("a")     # A comes back: synchronised again, messages flow again
        assert wait_for(lambda: publishers_of_t("b") == ["/source"], 10)
        assert wait_for(lambda: received() > stalled + 20, 10)
        s = [json.loads(x) for x in (tmp_path / "mm_sync_b.jsonl").read_text().splitlines()][-1]
        assert s["peer_lost"] >= 1 and (s["peer_back"] + s["peer_restarted"]) >= 1 and not s["conflicts"]
        # A's new sync adopted its predecessor's registration of the remote subscriber
        code, _, state = masters["a"].rpc(masters["a"].uri, "getSystemState")
        assert ["/t", ["/sink"]] in [[t, n] for t, n in state[1]]
    finally:
        group.stop_all()
