"""Relay transports without running them: registry and options, and the configurations
generated for each implementation — including those for nimbro_network and
multimaster_fkie, which cannot run on this platform (ROS Noetic packages)."""
from __future__ import annotations

from pathlib import Path

import pytest

from netloop.experiment import validate_experiment
from netloop.schema import ConfigError, validate
from netloop.transports import get_transport, transport_names
from netloop.transports import multimaster, nimbro, priority
from netloop.transports.base import CrossingTopic, TransportContext
from netloop.transports.relay_common import default_priorities, host_ports

TOPICS = [CrossingTopic("/y", "netloop/LoopSample", "robot", "operator", 52, 0.02, control=True),
          CrossingTopic("/u", "netloop/LoopSample", "operator", "robot", 52, 0.02, control=True),
          CrossingTopic("/flows/laser", "netloop/LoopSample", "robot", "operator", 1024, 0.02),
          CrossingTopic("/flows/image", "sensor_msgs/CompressedImage", "robot", "operator", 65536, 0.15)]
ADDRESS = {"robot": "10.77.0.1", "operator": "10.77.0.2"}
TYPES = {"netloop/LoopSample": {"type": "netloop/LoopSample", "md5": "a" * 32, "definition": "uint32 seq\n"},
         "sensor_msgs/CompressedImage": {"type": "sensor_msgs/CompressedImage", "md5": "b" * 32,
                                         "definition": "Header header\n"}}


def fake_binary(name):
    return Path("/devel/lib/netloop") / name


def test_relay_transports_are_registered():
    names = transport_names()
    for name in ("nimbro", "nimbro_mixed", "multimaster", "priority"):
        assert name in names
        t = get_transport(name)
        assert t.multi_master and t.subscriber_transport("/y", 52) == "tcp_nodelay"
        assert t.metadata()["implementation"] == "own"   # neither nimbro nor fkie here


def test_options_are_validated_in_experiments():
    cfg = validate_experiment({"transport": ["priority", "nimbro"], "transport_options": {
        "priority": {"priorities": {"/flows/image": 250}, "rate_mbit": 4},
        "nimbro": {"topics": {"/flows/image": {"rate": 5, "compress": True}}}}}, name="x")
    assert cfg.transport_options["priority"]["priorities"] == {"/flows/image": 250}
    assert cfg.transport_options["priority"]["rate_fraction"] == 0.85        # defaults filled in
    assert cfg.transport_options["nimbro"]["topics"]["/flows/image"]["protocol"] == "auto"
    with pytest.raises(ConfigError, match="transport_options.priority.priorities./y"):
        validate_experiment({"transport": "priority", "transport_options": {"priority": {"priorities": {"/y": 300}}}},
                            name="x")
    with pytest.raises(ConfigError, match="transport_options.multimaster.discovery"):
        validate_experiment({"transport": "multimaster", "transport_options": {"multimaster": {"discovery": "dns"}}},
                            name="x")


def test_real_nimbro_configuration():
    opts = validate(nimbro.OPTIONS, {"topics": {"/flows/image": {"compress": True}}})
    ports = {"robot": 17100, "operator": 17102}
    specs = nimbro.plan(TOPICS, ADDRESS, ports, opts, mixed=True, implementation="nimbro", records=Path("/r"),
                        node_binary=fake_binary, nimbro_binary=lambda n: Path("/opt/ros/noetic/lib/ntt") / n,
                        type_of=TYPES.get)
    by_name = {s["name"]: s for s in specs}
    # small topics robot -> operator over UDP, the image over TCP, /u back over UDP
    udp = by_name["nimbro_udp_sender_robot_to_operator"]
    assert udp["argv"][0] == "/opt/ros/noetic/lib/ntt/udp_sender" and udp["host"] == "robot"
    assert udp["params"] == {"destination_addr": "10.77.0.2", "destination_port": 17102,
                             "topics": [{"name": "/y", "type": "netloop/LoopSample"},
                                        {"name": "/flows/laser", "type": "netloop/LoopSample"}]}
    tcp = by_name["nimbro_tcp_sender_robot_to_operator"]
    assert tcp["argv"][0].endswith("/tcp_sender") and tcp["params"]["destination_port"] == 17103
    assert tcp["params"]["topics"] == [{"name": "/flows/image", "compress": True,
                                        "type": "sensor_msgs/CompressedImage"}]
    assert by_name["nimbro_udp_receiver_operator"]["params"] == {"port": 17102}
    assert by_name["nimbro_tcp_receiver_operator"]["params"] == {"port": 17103}
    assert by_name["nimbro_udp_sender_operator_to_robot"]["params"]["topics"] == [
        {"name": "/u", "type": "netloop/LoopSample"}]
    assert by_name["nimbro_udp_receiver_robot"]["host"] == "robot"
    # nimbro's receivers advertise late: each topic gets a placeholder publisher on its host
    ph = by_name["nimbro_placeholder_u"]
    assert ph["host"] == "robot" and "flow:=/u" in ph["argv"] and ph["params"]["md5sum"] == "a" * 32
    assert not any(s["own"] for s in specs)
    # receivers are started before senders
    names = [s["name"] for s in specs]
    assert names.index("nimbro_udp_receiver_operator") < names.index("nimbro_udp_sender_robot_to_operator")


def test_own_nimbro_configuration_all_udp():
    opts = validate(nimbro.OPTIONS, {})
    specs = nimbro.plan(TOPICS, ADDRESS, {"robot": 17100, "operator": 17102}, opts, mixed=False,
                        implementation="own", records=Path("/run/records"), node_binary=fake_binary,
                        type_of=TYPES.get)
    assert {s["name"] for s in specs} == {"nimbro_udp_receiver_operator", "nimbro_udp_receiver_robot",
                                          "nimbro_udp_sender_robot_to_operator", "nimbro_udp_sender_operator_to_robot"}
    rx = next(s for s in specs if s["name"] == "nimbro_udp_receiver_operator")
    assert rx["argv"][0] == "/devel/lib/netloop/nimbro_udp_receiver"
    assert rx["params"]["role"] == "udp_receiver" and rx["params"]["allowed_peers"] == ["10.77.0.1"]
    assert rx["params"]["stats_path"] == "/run/records/relay_nimbro_udp_receiver_operator_stats.jsonl"
    image = next(t for t in rx["params"]["topics"] if t["name"] == "/flows/image")
    assert image["md5"] == "b" * 32 and image["type"] == "sensor_msgs/CompressedImage"
    tx = next(s for s in specs if s["name"] == "nimbro_udp_sender_robot_to_operator")
    assert tx["params"]["mtu"] == 1500 and len(tx["params"]["topics"]) == 3


def test_priority_defaults_and_plan():
    assert default_priorities(TOPICS) == {"/y": 250, "/u": 250, "/flows/laser": 200, "/flows/image": 190}
    opts = validate(priority.OPTIONS, {"priorities": {"/flows/image": 220}, "compress": ["/flows/image"]})
    specs = priority.plan(TOPICS, ADDRESS, {"robot": 17300, "operator": 17301}, opts, 6.0, Path("/r"),
                          node_binary=fake_binary, type_of=TYPES.get)
    assert [s["name"] for s in specs] == ["priority_relay_robot", "priority_relay_operator"]
    p = specs[0]["params"]
    assert p["self"] == 0 and p["rate_mbit"] == 0 and p["routes"] == []   # backpressure: unpaced
    assert p["backpressure_bytes"] == 1500 and p["urgent_priority"] == 250 and p["dscp"] is True
    assert p["hosts"] == [{"name": "robot", "address": "10.77.0.1", "port": 17300},
                          {"name": "operator", "address": "10.77.0.2", "port": 17301}]
    prio = {t["name"]: t["priority"] for t in p["topics"]}
    assert prio == {"/y": 250, "/u": 250, "/flows/laser": 200, "/flows/image": 220}
    image = next(t for t in p["topics"] if t["name"] == "/flows/image")
    assert image["compress"] and image["source"] == 0 and image["dest"] == 1
    assert priority.pacing_rate(opts, None, False) == 0          # loopback: unpaced
    assert priority.pacing_rate(opts | {"rate_mbit": 3.0}, 6, False) == 3.0
    pound = validate(priority.OPTIONS, {"backpressure": False, "dscp": False})   # the paced queue of the paper
    assert priority.pacing_rate(pound, 6.0, False) == pytest.approx(5.1)
    flows_only = priority.plan([t for t in TOPICS if t.topic.startswith("/flows")], ADDRESS,
                               {"robot": 17300, "operator": 17301}, pound, 6.0, Path("/r"),
                               node_binary=fake_binary, type_of=TYPES.get)[0]["params"]
    assert flows_only["urgent_priority"] == 200 and flows_only["backpressure_bytes"] == 0   # no loop: the top flow
    assert flows_only["dscp"] is False and flows_only["rate_mbit"] == pytest.approx(5.1)


def test_priority_two_hop_forwarding_plan():
    address = {"robot": "10.77.0.1", "relay": "10.77.0.3", "operator": "10.77.0.2"}
    opts = validate(priority.OPTIONS, {})
    specs = {s["host"]: s["params"] for s in priority.plan(TOPICS, address, {h: 17300 for h in address}, opts, 6.0,
                                                           Path("/r"), node_binary=fake_binary, type_of=TYPES.get)}
    assert set(specs) == {"robot", "relay", "operator"}
    assert specs["robot"]["routes"] == [{"dest": 2, "via": 1}] and specs["relay"]["routes"] == []
    assert specs["operator"]["routes"] == [{"dest": 0, "via": 1}]
    assert specs["relay"]["forward"] and specs["robot"]["rate_mbit"] == 0
    assert priority.pacing_rate(opts | {"backpressure": False}, 6.0, True) == pytest.approx(2.1)
    ip = priority.plan(TOPICS, address, {h: 17300 for h in address}, opts | {"forward": "ip"}, 6.0, Path("/r"),
                       node_binary=fake_binary, type_of=TYPES.get)
    assert {s["host"] for s in ip} == {"robot", "operator"} and all(s["params"]["routes"] == [] for s in ip)


def test_fkie_configuration():
    opts = validate(multimaster.OPTIONS, {"heartbeat_hz": 2})
    specs = multimaster.plan(TOPICS, ADDRESS, {"robot": 11611, "operator": 11612}, opts, "fkie", Path("/r"),
                             fkie_binary=lambda pkg, exe: Path("/opt/ros/noetic/lib") / pkg / exe)
    by_name = {s["name"]: s for s in specs}
    disc = by_name["master_discovery_robot"]
    assert disc["argv"][0] == "/opt/ros/noetic/lib/fkie_master_discovery/master_discovery"
    assert disc["params"]["mcast_group"] == "239.255.77.1" and disc["params"]["mcast_port"] == 11511
    assert disc["params"]["robot_hosts"] == ["10.77.0.2"] and disc["params"]["heartbeat_hz"] == 2
    assert disc["params"]["send_mcast"] and disc["params"]["rpc_port"] == 11611
    sync = by_name["master_sync_operator"]
    assert sync["params"]["sync_topics"] == ["/flows/image", "/flows/laser", "/u", "/y"]
    assert sync["params"]["resync_on_reconnect"] is True
    static = multimaster.plan(TOPICS, ADDRESS, {"robot": 1, "operator": 2}, opts | {"discovery": "static"}, "fkie",
                              Path("/r"), fkie_binary=lambda pkg, exe: Path("/x") / exe)
    assert not static[0]["params"]["send_mcast"] and not static[0]["params"]["listen_mcast"]


def test_own_multimaster_configuration():
    opts = validate(multimaster.OPTIONS, {"ros_transport": "mixed"})
    specs = multimaster.plan(TOPICS, ADDRESS, {"robot": 11611, "operator": 11612}, opts, "own", Path("/run/records"))
    assert [s["name"] for s in specs] == ["mm_sync_robot", "mm_sync_operator"]
    p = specs[0]["params"]
    assert "netloop.transports.mm_sync" in specs[0]["argv"] and "__name:=mm_sync_robot" in specs[0]["argv"]
    assert p["peers"] == [{"host": "robot", "address": "10.77.0.1", "port": 11611},
                          {"host": "operator", "address": "10.77.0.2", "port": 11612}]
    assert p["allowed_peers"] == ["10.77.0.1", "10.77.0.2"] and p["domain"] == specs[1]["params"]["domain"]
    assert p["heartbeat_hz"] == 5.0 and p["peer_timeout"] == 2.0 and p["mcast_port"] == 11511
    t = get_transport("multimaster")
    t.options = opts
    try:
        assert t.subscriber_transport("/y", 52) == "udp" and t.subscriber_transport("/flows/image", 65536) == "tcp_nodelay"
    finally:
        t.options = {}


def test_ports_never_overlap_on_one_address(tmp_path):
    ctx = TransportContext(tmp_path, address={"robot": "127.0.0.1", "operator": "127.0.0.1", "relay": "127.0.0.1"})
    ports = host_ports(ctx, 17100, per_host=2)
    blocks = [set(range(p, p + 2)) for p in ports.values()]
    assert len(set.union(*blocks)) == 6
    ns = TransportContext(tmp_path, address=ADDRESS)
    assert host_ports(ns, 17100, per_host=2) == {"robot": 17100, "operator": 17102}


def test_own_sync_takes_the_options_values_from_its_parameters_and_refuses_without_them():
    """mm_sync has no defaults of its own for what the options set (MultimasterOptions holds
    them): a parameter left unset is refused by name."""
    from netloop.transports import mm_sync
    params = {"~" + k: v for k, v in multimaster.mm_sync_option_params({"heartbeat_hz": 2}).items()}
    cfg = mm_sync.read_config(lambda name, default: params.get(name, default))
    assert cfg["heartbeat_hz"] == 2 and cfg["peer_timeout"] == 2.0 and cfg["discovery"] == "auto"
    assert cfg["stats_period"] == 1.0     # the node's own default
    del params["~peer_timeout"]
    with pytest.raises(SystemExit, match="~peer_timeout is not set .*transport_options.multimaster.peer_timeout"):
        mm_sync.read_config(lambda name, default: params.get(name, default))
