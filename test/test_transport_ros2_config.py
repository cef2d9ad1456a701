"""ROS 2 transports without running them: options, QoS resolution and validation, the
middlewares' generated configuration files (parsed as XML / JSON5), the nodes' parameters and
the bridges' plan; every bad option refused naming its key."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from netloop.experiment import experiment_warnings, validate_experiment
from netloop.ros2 import config as ros2config
from netloop.ros2.qos import PROFILES, Qos, resolve
from netloop.schema import ConfigError, validate
from netloop.transports import get_transport, transport_names
from netloop.transports import ros2
from netloop.transports.base import CrossingTopic, Transport, TransportContext

TOPICS = [CrossingTopic("/y", "netloop/LoopSample", "robot", "operator", 40, 0.02, control=True),
          CrossingTopic("/u", "netloop/LoopSample", "operator", "robot", 40, 0.02, control=True),
          CrossingTopic("/flows/image", "sensor_msgs/CompressedImage", "robot", "operator", 65536, 0.15)]
ADDRESS = {"robot": "10.77.0.1", "operator": "10.77.0.2"}
CY = "{https://cdds.io/config}"
FD = "{http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles}"


def plan(discovery="multicast", shared=False, mode="peer", message_size="rmw"):
    addr = {h: "127.0.0.1" for h in ADDRESS} if shared else ADDRESS
    return ros2config.NetPlan([ros2config.HostNet(h, a, "lo" if shared else "net0", 1500) for h, a in addr.items()],
                              discovery, shared, mode, ADDRESS["operator"] if mode == "router" else None,
                              message_size=message_size)


def started(name, tmp_path, options=None, topics=TOPICS, topic_qos=None, monkeypatch=None):
    """A transport started on a context whose start() only records what it would start."""
    t = get_transport(name)
    launched = []
    if monkeypatch is not None:
        monkeypatch.setattr(ros2, "missing_middleware", lambda m: None)
        monkeypatch.setattr(ros2, "message_type", lambda d: {"type": d, "md5": "a" * 32, "definition": "uint32 seq\n"})
        monkeypatch.setattr(ros2.paths, "node_binary", lambda n: Path("/devel/lib/netloop") / n)
    ctx = TransportContext(tmp_path, {h: [] for h in ADDRESS}, dict(ADDRESS), topics=topics,
                           masters={h: f"http://{a}:11311" for h, a in ADDRESS.items()},
                           start=lambda *a: launched.append(a) or object(), options=options or {},
                           interface={h: "net0" for h in ADDRESS}, mtu={h: 1500 for h in ADDRESS},
                           topic_qos=topic_qos or {})
    t.start(ctx)
    return t, launched


# --- registry and options -------------------------------------------------------------------

def test_the_ros2_words_are_registered_after_the_ros1_words():
    names = transport_names()
    assert names[-4:] == ["cyclonedds", "fastdds", "zenoh", "rmw_fastrtps_cpp"]
    assert names.index("priority") < names.index("cyclonedds")
    for name in ("cyclonedds", "fastdds", "zenoh", "rmw_fastrtps_cpp"):
        t = get_transport(name)
        assert t.middleware == name and t.multi_master and t.deployment == "native"
    cfg = validate_experiment({"transport": "all"}, name="x")
    assert {"cyclonedds", "fastdds", "zenoh"} <= set(cfg.transport)


def test_options_defaults_and_every_bad_option_names_its_key():
    opts = validate(get_transport("cyclonedds").options_schema, {})
    assert opts == {"deployment": "native", "qos": "default", "reliability": None, "durability": None,
                    "depth": None, "discovery": "multicast", "domain_id": 0, "message_size": "rmw"}
    bad = {"deployment": "ros1_bridge", "qos": "best", "reliability": "sometimes", "durability": "persistent",
           "depth": 0, "discovery": "dns", "domain_id": 233, "message_size": "jumbo"}
    for key, value in bad.items():
        with pytest.raises(ConfigError) as err:
            validate_experiment({"transport": "fastdds", "transport_options": {"fastdds": {key: value}}}, name="x")
        assert f"transport_options.fastdds.{key}" in str(err.value), str(err.value)
    with pytest.raises(ConfigError, match="allowed: reliable, best_effort"):
        validate_experiment({"transport": "zenoh", "transport_options": {"zenoh": {"reliability": "x"}}}, name="x")
    with pytest.raises(ConfigError, match="allowed: default, sensor_data, transient_local"):
        validate_experiment({"transport": "zenoh", "transport_options": {"zenoh": {"qos": "x"}}}, name="x")
    # mode is Zenoh's alone
    assert validate_experiment({"transport": "zenoh", "transport_options": {"zenoh": {"mode": "router"}}},
                               name="x").transport_options["zenoh"]["mode"] == "router"
    for dds in ("cyclonedds", "fastdds"):
        with pytest.raises(ConfigError, match=f"transport_options.{dds}.mode"):
            validate_experiment({"transport": dds, "transport_options": {dds: {"mode": "router"}}}, name="x")
    assert validate_experiment({"transport": "cyclonedds", "transport_options": {"cyclonedds": {"domain_id": 232}}},
                               name="x").transport_options["cyclonedds"]["domain_id"] == 232


def test_loop_and_flow_qos_keys():
    cfg = validate_experiment({"transport": "cyclonedds", "loop": {"qos": {"reliability": "best_effort"}},
                               "flows": [{"name": "img", "qos": {"durability": "transient_local", "depth": 1}}]},
                              name="x")
    assert cfg.loop.qos["reliability"] == "best_effort" and cfg.flows[0].qos["depth"] == 1
    for doc, key in (({"loop": {"qos": {"reliability": "maybe"}}}, "loop.qos.reliability"),
                     ({"loop": {"qos": {"history": 3}}}, "loop.qos.history"),
                     ({"flows": [{"name": "a", "qos": {"depth": 0}}]}, "flows[0].qos.depth"),
                     ({"flows": [{"name": "a", "qos": {"durability": "persistent"}}]}, "flows[0].qos.durability")):
        with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
            validate_experiment({"transport": "cyclonedds", **doc}, name="x")
    # ROS 1 transports: accepted, with a warning that they ignore it
    cfg = validate_experiment({"transport": "tcp_nodelay", "loop": {"qos": {"depth": 3}}}, name="x")
    assert any("loop.qos" in w and "ROS 2 transports" in w for w in experiment_warnings(cfg))
    assert not experiment_warnings(validate_experiment({"transport": "zenoh", "loop": {"qos": {"depth": 3}}},
                                                       name="x"))


def test_what_native_nodes_cannot_do_is_refused():
    with pytest.raises(ConfigError, match="transport_options.cyclonedds.deployment"):
        validate_experiment({"transport": "cyclonedds", "loop": {"type": "teleop"}}, name="x")
    validate_experiment({"transport": "cyclonedds", "transport_options": {"cyclonedds": {"deployment": "bridge"}},
                         "loop": {"type": "teleop"}}, name="x")
    with pytest.raises(ConfigError, match=r"flows\[0\].transport"):
        validate_experiment({"transport": "fastdds", "flows": [{"name": "a", "transport": "udp"}]}, name="x")
    with pytest.raises(ConfigError, match=r"flows\[0\].subscriber_delay"):
        validate_experiment({"transport": "fastdds", "flows": [{"name": "a", "subscriber_delay": 2}]}, name="x")
    validate_experiment({"transport": "fastdds", "flows": [{"name": "a", "subscribers": 2, "subscriber_delay": 2}]},
                        name="x")


def test_missing_middleware_is_refused_before_anything_starts(monkeypatch):
    from netloop import runner
    monkeypatch.setattr(ros2, "available_middlewares", lambda: ("cyclonedds",))
    cfg = validate_experiment({"transport": ["cyclonedds", "fastdds", "zenoh"]}, name="x")
    with pytest.raises(ConfigError) as err:
        runner.preflight(cfg)
    assert "transport fastdds: this build has no fastdds" in str(err.value)
    assert "transport zenoh" in str(err.value) and "it has: cyclonedds" in str(err.value)
    runner.preflight(validate_experiment({"transport": "cyclonedds"}, name="x"))


# --- QoS ------------------------------------------------------------------------------------

def test_qos_profiles_and_overrides():
    assert PROFILES["default"] == Qos("reliable", "volatile", 10)
    assert PROFILES["sensor_data"] == Qos("best_effort", "volatile", 5)
    assert PROFILES["transient_local"] == Qos("reliable", "transient_local", 10)
    assert resolve({"qos": "sensor_data"}) == Qos("best_effort", "volatile", 5)
    assert resolve({"qos": "sensor_data", "depth": 1}, {"reliability": "reliable"}) == Qos("reliable", "volatile", 1)
    assert resolve({"qos": "transient_local", "durability": None}, {}, {"depth": 2}).describe() == \
        "reliable/transient_local/2"
    with pytest.raises(ConfigError, match="qos: unknown QoS profile 'x'; allowed: default, sensor_data"):
        resolve({"qos": "x"})


# --- configuration files ----------------------------------------------------------------------

def test_cyclonedds_xml_multicast_and_peers():
    root = ET.fromstring(ros2config.cyclonedds_xml(plan(), "robot"))
    general = root.find(f"{CY}Domain/{CY}General")
    assert general.find(f"{CY}Interfaces/{CY}NetworkInterface").get("address") == "10.77.0.1"
    assert general.find(f"{CY}AllowMulticast").text == "spdp"
    # rmw_cyclonedds_cpp leaves Cyclone's message and fragment sizes (14,720 and 1,344 bytes)
    assert general.find(f"{CY}MaxMessageSize") is None and general.find(f"{CY}FragmentSize") is None
    general = ET.fromstring(ros2config.cyclonedds_xml(plan(message_size="mtu"), "robot")).find(f"{CY}Domain/{CY}General")
    assert general.find(f"{CY}MaxMessageSize").text == "1472B"          # one IP packet on a 1500-byte MTU
    assert int(general.find(f"{CY}FragmentSize").text[:-1]) + ros2config.RTPS_OVERHEAD_BYTES <= 1472
    assert root.find(f"{CY}Domain/{CY}Discovery/{CY}Peers") is None
    root = ET.fromstring(ros2config.cyclonedds_xml(plan("peers"), "operator"))
    assert root.find(f"{CY}Domain/{CY}General/{CY}AllowMulticast").text == "false"
    peers = [p.get("address") for p in root.iter(f"{CY}Peer")]
    assert peers == ["10.77.0.1", "10.77.0.2"]
    assert root.find(f"{CY}Domain/{CY}Discovery/{CY}ParticipantIndex").text == "auto"
    # loopback: lo may carry multicast only when Cyclone is told so
    root = ET.fromstring(ros2config.cyclonedds_xml(plan(shared=True), "robot"))
    assert root.find(f"{CY}Domain/{CY}General/{CY}Interfaces/{CY}NetworkInterface").get("multicast") == "true"


def test_fastdds_xml_default_profile_without_shared_memory():
    root = ET.fromstring(ros2config.fastdds_xml(plan("peers"), "robot", domain_id=7))
    profiles = root.find(f"{FD}profiles")
    descriptor = profiles.find(f"{FD}transport_descriptors/{FD}transport_descriptor")
    assert descriptor.find(f"{FD}type").text == "UDPv4"
    assert [a.text for a in descriptor.iter(f"{FD}address")] == ["10.77.0.1"]
    participant = profiles.find(f"{FD}participant")
    assert participant.get("is_default_profile") == "true"
    assert participant.find(f"{FD}domainId").text == "7"
    rtps = participant.find(f"{FD}rtps")
    assert rtps.find(f"{FD}useBuiltinTransports").text == "false"     # no SHM: samples cross the link
    peers = [a.text for a in rtps.iter(f"{FD}address")]
    assert peers == ["10.77.0.1", "10.77.0.2"]
    multicast = ET.fromstring(ros2config.fastdds_xml(plan(), "robot"))
    assert not list(multicast.iter(f"{FD}initialPeersList"))


def test_fastdds_and_cyclonedds_writers_as_the_rmws_configure_them(tmp_path, monkeypatch):
    """What rmw_fastrtps_cpp / rmw_cyclonedds_cpp (Jazzy) leave to the library stays the
    library's: no RTPS message size (Fast DDS 65,500 bytes) and no heartbeat or flow controller
    in the profiles; the writers' publish mode (synchronous), history memory and data sharing are
    set by the nodes as the rmw sets them. ``message_size: mtu`` caps messages at the MTU."""
    root = ET.fromstring(ros2config.fastdds_xml(plan(), "robot"))
    assert not list(root.iter(f"{FD}maxMessageSize"))
    assert not [e for e in root.iter() if e.tag.split("}")[-1] in
                ("heartbeatPeriod", "publishMode", "flow_controller_descriptors", "data_writer", "publisher")]
    capped = ET.fromstring(ros2config.fastdds_xml(plan(message_size="mtu"), "robot"))
    assert int(next(capped.iter(f"{FD}maxMessageSize")).text) == 1472
    t, _ = started("cyclonedds", tmp_path, {"message_size": "mtu"}, monkeypatch=monkeypatch)
    assert "<MaxMessageSize>1472B</MaxMessageSize>" in (tmp_path / "transport" / "robot.xml").read_text()
    source = (Path(__file__).resolve().parents[1] / "src" / "ros2" / "fastdds.cpp").read_text()
    for setting in ("wqos.publish_mode().kind = eprosima::fastdds::dds::SYNCHRONOUS_PUBLISH_MODE",
                    "wqos.endpoint().history_memory_policy = eprosima::fastrtps::rtps::PREALLOCATED_WITH_REALLOC",
                    "wqos.data_sharing().off()", "rqos.data_sharing().off()"):
        assert setting in source, setting
    assert "message_size" not in validate(ros2.options_schema("zenoh"), {})     # DDS only


def test_zenoh_json5_scouting_peers_and_router():
    cfg = json.loads(ros2config.json5_text(ros2config.zenoh_config(plan(), "robot"), "c").split("\n", 1)[1])
    assert cfg["mode"] == "peer" and cfg["scouting"]["multicast"]["enabled"]
    assert cfg["scouting"]["multicast"]["interface"] == "net0"
    assert cfg["listen"]["endpoints"] == ["tcp/10.77.0.1:0"]
    p = plan("peers")
    ports = [ros2config.plan_zenoh_port(p, n, h) for n, h in (("plant", "robot"), ("controller", "operator"),
                                                                ("sink", "operator"))]
    assert ports == [17447, 17447, 17448]                       # per host's namespace
    last = ros2config.zenoh_config(p, "operator", "sink")
    assert last["listen"]["endpoints"] == ["tcp/10.77.0.2:17448"]
    assert last["connect"]["endpoints"] == ["tcp/10.77.0.1:17447", "tcp/10.77.0.2:17447"]
    assert not last["scouting"]["multicast"]["enabled"]
    shared = plan("peers", shared=True)
    assert [ros2config.plan_zenoh_port(shared, n, h) for n, h in (("a", "robot"), ("b", "operator"))] == [17447, 17448]
    r = plan(mode="router")
    node = ros2config.zenoh_config(r, "robot", "plant")
    assert node["connect"]["endpoints"] == ["tcp/10.77.0.2:7447"] and node["mode"] == "peer"
    router = ros2config.zenoh_config(r, "operator", router=True)
    assert router["mode"] == "router" and router["listen"]["endpoints"] == ["tcp/10.77.0.2:7447"]


# --- the transport's plan -------------------------------------------------------------------

def test_ros1_transports_endpoint_params_are_the_subscriber_transport():
    t = get_transport("udp/tcp_nodelay")
    assert t.endpoint_params("/y", 40, "subscriber") == {"transport": "udp"}
    assert t.endpoint_params("/flows/image", 1 << 20, "subscriber") == {"transport": "tcp_nodelay"}
    assert t.endpoint_params("/y", 40, "publisher") == {}
    assert Transport.endpoint_params.__doc__


def test_native_endpoint_params(tmp_path, monkeypatch):
    t, launched = started("cyclonedds", tmp_path, {"qos": "sensor_data"}, monkeypatch=monkeypatch)
    assert launched == []                                         # native: nothing besides the nodes
    assert (tmp_path / "transport" / "robot.xml").is_file() and (tmp_path / "transport" / "operator.xml").is_file()
    params = t.endpoint_params("/y", 40, "subscriber", node="controller", host="operator", qos={"depth": 2})
    assert params == {"transport": "tcp_nodelay", "middleware": "cyclonedds",
                      "middleware_config": str(tmp_path / "transport" / "operator.xml"), "domain_id": 0,
                      "qos_reliability": "best_effort", "qos_durability": "volatile", "qos_depth": 2,
                      "status_path": str(tmp_path / "records" / "controller.ros2.json"),
                      # a raw middleware input (flow_sink) takes the type from these
                      "middleware_in": True, "datatype": "netloop/LoopSample", "md5sum": "a" * 32,
                      "definition": "uint32 seq\n"}
    assert t.describe_topic("/y") == "cyclonedds native best_effort/volatile/2"
    assert t.native_nodes["/controller"]["topics"] == ["/y"]
    meta = t.metadata()
    assert meta["deployment"] == "native" and meta["config_files"]["robot"] == "transport/robot.xml"
    t.stop()
    assert json.loads((tmp_path / "transport.json").read_text())["middleware"] == "cyclonedds"


def test_bridge_starts_one_bridge_per_host(tmp_path, monkeypatch):
    t, launched = started("fastdds", tmp_path, {"deployment": "bridge", "qos": "transient_local"},
                          topic_qos={"/flows/image": {"reliability": "best_effort"}}, monkeypatch=monkeypatch)
    assert [(name, host) for name, host, *_ in launched] == [("ros2_bridge_robot", "robot"),
                                                              ("ros2_bridge_operator", "operator")]
    robot = launched[0][3]
    assert [e["topic"] for e in robot["out_topics"]] == ["/y", "/flows/image"]
    assert [e["topic"] for e in robot["in_topics"]] == ["/u"]
    image = robot["out_topics"][1]
    assert image["reliability"] == "best_effort" and image["durability"] == "transient_local"
    assert image["md5sum"] == "a" * 32 and image["definition"]
    assert robot["middleware"] == "fastdds" and robot["middleware_config"].endswith("transport/robot.xml")
    assert robot["stats_path"].endswith("records/relay_ros2_bridge_robot_stats.jsonl")
    assert "<maxMessageSize>" not in (tmp_path / "transport" / "robot.xml").read_text()   # message_size: rmw
    assert t.endpoint_params("/y", 40, "subscriber", node="controller", host="operator") == \
        {"transport": "tcp_nodelay"}


def test_report_section_from_the_ros2_record():
    from types import SimpleNamespace

    from netloop.analysis import ros2_section
    from netloop.run_files import RunRecord
    wire = {"samples_sent": 50, "samples_received": 49, "retransmits": -1, "heartbeats": 3, "acknacks": -1,
            "samples_lost": 0, "samples_rejected": -1}
    record = {"middleware": "cyclonedds", "deployment": "native",
              "qos": {"/y": {"reliability": "reliable", "durability": "volatile", "depth": 10}},
              "nodes": {"plant": {"discovery_s": 0.012, "first_sample_s": {"/u": 0.2}, "wire": wire},
                        "controller": {"discovery_s": 0.1, "first_sample_s": {"/y": 0.3}, "wire": wire}}}
    runs = [SimpleNamespace(run_id="cyclonedds-r0", meta=RunRecord(ros2=record)),
            SimpleNamespace(run_id="tcp-r0", meta=RunRecord())]
    section = ros2_section.section(runs)
    assert section.title == "ROS 2 middlewares"
    table = next(b for b in section.blocks if hasattr(b, "rows"))
    row = dict(zip(table.header, table.rows[0]))
    assert row["discovery [ms]"] == pytest.approx(100) and row["first sample [ms]"] == pytest.approx(200)
    assert row["sent"] == 100 and row["heartbeats"] == 6 and row["retransmits"] != row["retransmits"]   # NaN
    assert len(table.rows) == 1
    assert ros2_section.section(runs[1:]) is None


def test_multicast_discovery_refused_on_a_two_hop_chain():
    with pytest.raises(ConfigError, match="transport_options.zenoh.discovery: .*2-hop chain.*use discovery: peers"):
        validate_experiment({"transport": "zenoh", "link": "wifi6_2hop"}, name="x")
    validate_experiment({"transport": "zenoh", "link": "wifi6_2hop",
                         "transport_options": {"zenoh": {"discovery": "peers"}}}, name="x")
    validate_experiment({"transport": "cyclonedds", "link": "wifi6"}, name="x")      # ns-3 Wi-Fi carries multicast


def test_a_machine_whose_build_lacks_the_middleware_is_refused(tmp_path, monkeypatch):
    """machines.py's check asks each machine's build (netloop_ros2_info there) and names the
    machine and what it lacks."""
    import subprocess

    import yaml

    from netloop import machines
    from netloop.runner import _middlewares
    root = tmp_path / "robot_checkout"
    info = root / ".build/ws/devel/lib/netloop/netloop_ros2_info"
    info.parent.mkdir(parents=True)
    info.write_text("#!/bin/sh\necho cyclonedds\necho fastdds\n")
    info.chmod(0o755)
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(yaml.safe_dump({"hosts": {"operator": {"address": "127.0.0.1", "local": True},
                                               "robot": {"address": "192.0.2.7", "root": str(root)}}}))
    cfg = validate_experiment({"transport": ["cyclonedds", "zenoh"], "machines": str(hosts)}, name="x")
    assert _middlewares(cfg) == ["cyclonedds", "zenoh"]

    def run_here(self, host, command, timeout=60):   # the robot's check script, run here
        return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=timeout)
    monkeypatch.setattr(machines.RealHosts, "_ssh_run", run_here)
    real = machines.RealHosts(machines.load_machines(str(hosts)), tmp_path / "run", lambda _: None,
                              _middlewares(cfg))
    with pytest.raises(machines.RealHostsError) as err:
        real.check()
    assert real.checks["robot"]["ros2"].split() == ["cyclonedds", "fastdds"]
    assert "robot (192.0.2.7): its build of netloop has no zenoh (libnetloop_ros2 there has: cyclonedds, " \
           "fastdds)" in str(err.value)


def test_rtps_message_size_on_loopback_stays_within_fast_dds_limit():
    lo = ros2config.NetPlan([ros2config.HostNet(h, "127.0.0.1", "lo", 65536) for h in ADDRESS], "multicast", True,
                            message_size="mtu")
    root = ET.fromstring(ros2config.fastdds_xml(lo, "robot"))
    assert int(next(root.iter(f"{FD}maxMessageSize")).text) == 65000      # Fast DDS refuses more


def test_zenoh_warns_of_messages_its_congestion_control_drops():
    big = {"name": "big", "size_bytes": 1_000_000, "period": 3.0, "count": 3}
    warnings = experiment_warnings(validate_experiment({"transport": "zenoh", "link": "wifi6", "flows": [big]},
                                                       name="x"))
    assert any("flows[0] (big)" in w and "congestion control" in w for w in warnings), warnings
    small = dict(big, size_bytes=65536)
    assert not [w for w in experiment_warnings(validate_experiment(
        {"transport": "zenoh", "link": "wifi6", "flows": [small]}, name="x")) if "zenoh" in w]
    assert not [w for w in experiment_warnings(validate_experiment(
        {"transport": "zenoh", "link": "ethernet", "flows": [big]}, name="x")) if "zenoh" in w]


def test_transport_all_leaves_out_a_middleware_the_build_lacks_and_says_so(monkeypatch):
    """`transport: all` on a build without zenoh (no Rust >= 1.75 there) runs every other
    transport and warns why zenoh is left out; naming zenoh itself is still refused at the run's
    start (runner.preflight); where nothing is built yet, all twelve words are checked."""
    monkeypatch.setattr(ros2, "available_middlewares", lambda: ("cyclonedds", "fastdds", "rmw_fastrtps_cpp"))
    exp = validate_experiment({"transport": "all", "link": "loopback"}, name="all")
    assert exp.transport == [t for t in transport_names() if t != "zenoh"]
    warnings = experiment_warnings(exp)
    assert any(w.startswith("transport all leaves out zenoh: this build has no zenoh") for w in warnings)
    listed = validate_experiment({"transport": ["tcp", "cyclonedds"], "link": "loopback"}, name="listed")
    assert not any("leaves out" in w for w in experiment_warnings(listed))
    monkeypatch.setattr(ros2, "available_middlewares", lambda: None)
    assert validate_experiment({"transport": "all", "link": "loopback"}, name="all").transport == transport_names()
