"""The C++ nodes on ROS 2's middlewares, on a real roscore, over loopback: the RLC loop closes
with the plant and the controller speaking a middleware natively (~middleware), flows carry
images with their header seq, bad middleware parameters are refused, and ros2_bridge carries a
roscpp topic to a roscpp subscriber of another ROS master. Parametrized over the middlewares
this build has (``netloop_ros2_info`` lists them, one per line)."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import numpy as np
import pytest
from registrations import forget_node

from netloop import build_record, paths, rosenv
from netloop.analysis.records import read_events
from netloop.experiment import validate_experiment
from netloop.loops.rlc import rlc_parameters
from netloop.master import RosMaster, free_port, wait_for
from netloop.transports.relay_common import message_type

pytestmark = pytest.mark.integration

LOOP = validate_experiment({}, name="t").loop


def built_middlewares() -> tuple[list[str], str | None]:
    """What ``netloop_ros2_info`` says this build has (none without the binary), and why it
    could not be asked (None when it answered)."""
    info = paths.node_binary("netloop_ros2_info")
    if not info.exists():
        return [], None
    run = subprocess.run([str(info)], capture_output=True, text=True)
    if run.returncode != 0:
        return [], f"{info} exited with {run.returncode}: {run.stderr.strip()}"
    return run.stdout.split(), None


BUILT, INFO_ERROR = built_middlewares()
#: what the tests run on: what the build has, and what it was meant to have but lacks (those fail)
MIDDLEWARES = BUILT + [m for m in build_record.expected_middlewares() if m not in BUILT]


def test_netloop_ros2_info_answers():
    assert INFO_ERROR is None, INFO_ERROR


def test_the_build_has_every_middleware_it_was_meant_to():
    """scripts/build.sh records what it meant libnetloop_ros2 to have (every DDS middleware whose
    package `make setup` installs; zenoh where a cargo >= 1.75 is found); a failed cargo build or
    a missing package fails here, not as skipped tests."""
    assert build_record.record_path().is_file(), f"no {build_record.record_path()}: run 'make build'"
    lacking = [m for m in build_record.expected_middlewares() if m not in BUILT]
    assert not lacking, "\n".join(build_record.unmet())
needs_middleware = pytest.mark.skipif(not MIDDLEWARES, reason="this build has no ROS 2 middleware")

CYCLONE_XML = """<CycloneDDS><Domain id="any"><General><Interfaces><NetworkInterface name="lo"/></Interfaces>
<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>
<MaxAutoParticipantIndex>40</MaxAutoParticipantIndex><Peers><Peer address="127.0.0.1"/></Peers>
</Discovery></Domain></CycloneDDS>
"""

FASTDDS_XML = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"><profiles>
 <transport_descriptors><transport_descriptor><transport_id>netloop_udp</transport_id><type>UDPv4</type>
  <maxInitialPeersRange>40</maxInitialPeersRange>
  <interfaceWhiteList><address>127.0.0.1</address></interfaceWhiteList></transport_descriptor>
 </transport_descriptors>
 <participant profile_name="netloop_test" is_default_profile="true"><rtps>
  <userTransports><transport_id>netloop_udp</transport_id></userTransports>
  <useBuiltinTransports>false</useBuiltinTransports>
  <builtin><initialPeersList><locator><udpv4><address>127.0.0.1</address></udpv4></locator></initialPeersList>
  </builtin></rtps></participant>
</profiles></dds>
"""


class Loopback:
    """Middleware configuration files that keep discovery and traffic on loopback: Cyclone DDS
    and Fast DDS by unicast peers on 127.0.0.1; Zenoh peers listening on their own port, each
    connecting to the ports of the ones set up before it (no multicast scouting)."""

    def __init__(self, middleware: str, tmp_path):
        self.middleware, self.dir = middleware, tmp_path / "mw"
        self.dir.mkdir(exist_ok=True)
        self.zenoh_ports: list[int] = []
        # a domain of our own: other tests on this machine may be on loopback too
        self.domain_id = 1 + (os.getpid() * 7 + id(self)) % 200

    def config(self, node: str) -> str:
        if self.middleware == "cyclonedds":
            path, text = self.dir / "cyclonedds.xml", CYCLONE_XML
        elif self.middleware == "fastdds":
            path, text = self.dir / "fastdds.xml", FASTDDS_XML
        else:
            port = free_port()
            connect = ", ".join(f'"tcp/127.0.0.1:{p}"' for p in self.zenoh_ports)
            self.zenoh_ports.append(port)
            path = self.dir / f"{node}.json5"
            text = ('{\n  mode: "peer",\n  listen: { endpoints: ["tcp/127.0.0.1:%d"] },\n'
                    '  connect: { endpoints: [%s] },\n  scouting: { multicast: { enabled: false } },\n}\n'
                    % (port, connect))
        path.write_text(text)
        return str(path)

    def params(self, node: str, status_path) -> dict:
        out = {"middleware": self.middleware, "middleware_config": self.config(node), "domain_id": self.domain_id,
               "status_path": str(status_path)}
        if self.middleware == "zenoh":
            from netloop.ros2.names import type_hash  # noqa: PLC0415
            out["type_hashes"] = {t: type_hash(t) for t in ("netloop/LoopSample", "sensor_msgs/Image")}
        return out


def status(path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def start(master, tmp_path, name, binary, *args):
    env = rosenv.node_env(master.uri, "127.0.0.1", tmp_path / "ros")
    return master.group.start(name, [str(paths.node_binary(binary)), f"__name:={name}", *args], env=env)


@needs_middleware
@pytest.mark.parametrize("middleware", MIDDLEWARES)
def test_loop_closes_over_the_middleware(roscore, tmp_path, middleware):
    mw = Loopback(middleware, tmp_path)
    samples = 100   # 2 s at the loop's 20 ms: the median round trip of 100 is as clear as of 200
    roscore.set_params(rlc_parameters(LOOP), "/rlc")
    roscore.set_params({"record_path": str(tmp_path / "controller.csv"),
                        **mw.params("controller", tmp_path / "controller.ros2.json")}, "/controller")
    roscore.set_params({"samples": samples, "record_path": str(tmp_path / "plant.csv"), "connect_timeout": 30.0,
                        **mw.params("plant", tmp_path / "plant.ros2.json")}, "/plant")
    ctl = start(roscore, tmp_path, "controller", "loop_controller")
    plant = start(roscore, tmp_path, "plant", "rlc_plant")
    assert plant.popen.wait(timeout=90) == 0, plant.log_path.read_text()[-3000:]
    ctl.popen.send_signal(signal.SIGINT)
    assert ctl.popen.wait(timeout=20) == 0, ctl.log_path.read_text()[-3000:]

    p, c = read_events(tmp_path / "plant.csv"), read_events(tmp_path / "controller.csv")
    y = p.select("tx", "y")
    assert y.seq.tolist() == list(range(samples))
    assert len(c.select("rx", "y")) >= samples - 2  # reliable: every y, bar the last in flight
    u = p.select("rx", "u")
    assert len(u) >= samples - 5
    # Round trips on the plant's clock: y sent -> u (answering it) received.
    rtt_ms = (u.recv_ns - u.answer_stamp_ns) / 1e6
    assert (u.answer_seq >= 0).all() and (rtt_ms > 0).all()
    assert float(np.median(rtt_ms)) < 20, f"median round trip {float(np.median(rtt_ms)):.2f} ms on loopback"

    for node, rx_topic, tx_topic in (("plant", "/u", "/y"), ("controller", "/y", "/u")):
        st = status(tmp_path / f"{node}.ros2.json")
        assert st and st["final"] is True and st["middleware"] == middleware, st
        assert st["matched_ns"] and st["matched_ns"] > st["started_ns"], st
        assert st["endpoints"][rx_topic] >= 1 and st["endpoints"][tx_topic] >= 1, st
        assert st["first_rx_ns"][rx_topic] >= st["matched_ns"] - 10**9, st  # after discovery (clock: 1 s slack)
        assert st["received"][rx_topic] >= samples - 5
        assert st["wire"]["samples_sent"] >= samples - 5 and st["wire"]["samples_received"] >= samples - 5
    summary = json.loads((tmp_path / "plant.receive.json").read_text())
    assert summary["topic"] == "/u" and summary["received"] == len(u) and summary["wire_messages"] >= len(u)


@needs_middleware
@pytest.mark.parametrize("middleware", MIDDLEWARES)
def test_image_flow_keeps_its_header_seq(roscore, tmp_path, middleware):
    """Raw images source -> sink natively: ROS 2's Header has no seq, the nodes carry it in
    frame_id and take it back out, so the sink records seq 0..n-1 as over roscpp."""
    mw = Loopback(middleware, tmp_path)
    image = message_type("sensor_msgs/Image")
    count = 30
    roscore.set_params({"record_path": str(tmp_path / "rx.csv"), "datatype": image["type"],
                        "definition": image["definition"], **mw.params("sink", tmp_path / "sink.ros2.json")},
                       "/sink")
    # start_delay: the source's writer matching the sink's reader does not mean the reader has
    # matched the writer yet, and a volatile reader does not get what was published before
    # (Cyclone DDS once lost seq 0 so); netloop's flows start start_delay (1 s) after the match
    roscore.set_params({"message": "image", "width": 64, "height": 48, "period": 0.02, "count": count,
                        "record_path": str(tmp_path / "tx.csv"), "start_delay": 0.3, "drain": 0.5,
                        **mw.params("source", tmp_path / "source.ros2.json")}, "/source")
    sink = start(roscore, tmp_path, "sink", "flow_sink", "flow:=/flows/cam")
    source = start(roscore, tmp_path, "source", "flow_source", "flow:=/flows/cam")
    assert source.popen.wait(timeout=60) == 0, source.log_path.read_text()[-3000:]
    assert wait_for(lambda: (tmp_path / "rx.csv").exists() and
                    len(read_events(tmp_path / "rx.csv").select("rx", "/flows/cam")) >= count, 10)
    sink.popen.send_signal(signal.SIGINT)
    assert sink.popen.wait(timeout=20) == 0
    tx = read_events(tmp_path / "tx.csv").select("tx", "/flows/cam")
    rx = read_events(tmp_path / "rx.csv").select("rx", "/flows/cam")
    assert rx.seq.tolist() == list(range(count)) == tx.seq.tolist()
    assert rx.stamp_ns.tolist() == tx.stamp_ns.tolist()
    assert rx.bytes.tolist() == tx.bytes.tolist()  # the ROS 1 message, frame_id as sent
    assert status(tmp_path / "sink.ros2.json")["first_rx_ns"]["/flows/cam"] > 0
    summary = json.loads((tmp_path / "rx.receive.json").read_text())
    assert summary["received"] == count and summary["missing_seqs"] == 0


@needs_middleware
def test_echo_flow_crosses_twice(roscore, tmp_path):
    """source -> echoer (flow_sink relay mode, ~middleware_in) -> sink, every hop native."""
    mw = Loopback(MIDDLEWARES[0], tmp_path)
    loop = message_type("netloop/LoopSample")
    typed = {"datatype": loop["type"], "md5sum": loop["md5"], "definition": loop["definition"]}
    count = 40
    roscore.set_params({"record_path": str(tmp_path / "rx.csv"), **typed,
                        **mw.params("sink", tmp_path / "sink.ros2.json")}, "/sink")
    roscore.set_params({"republish": True, "kind": "tap", "middleware_in": True, "record_path":
                        str(tmp_path / "echo.csv"), **typed, **mw.params("echo", tmp_path / "echo.ros2.json")},
                       "/echo")
    roscore.set_params({"message": "loop_sample", "size_bytes": 512, "period": 0.02, "count": count, "drain": 0.5,
                        "start_delay": 0.3,   # the echo's reader matched too (see the image flow's test)
                        "record_path": str(tmp_path / "tx.csv"), **mw.params("source", tmp_path / "src.ros2.json")},
                       "/source")
    sink = start(roscore, tmp_path, "sink", "flow_sink", "flow:=/flows/e/echo")
    echo = start(roscore, tmp_path, "echo", "flow_sink", "flow:=/flows/e/echo", "flow_in:=/flows/e")
    assert wait_for(lambda: (status(tmp_path / "sink.ros2.json") or {}).get("matched_ns"), 30)
    source = start(roscore, tmp_path, "source", "flow_source", "flow:=/flows/e")
    assert source.popen.wait(timeout=60) == 0, source.log_path.read_text()[-3000:]
    assert wait_for(lambda: len(read_events(tmp_path / "rx.csv").select("rx", "/flows/e/echo")) >= count, 10)
    for proc in (sink, echo):
        proc.popen.send_signal(signal.SIGINT)
        assert proc.popen.wait(timeout=20) == 0
    tx = read_events(tmp_path / "tx.csv").select("tx", "/flows/e")
    rx = read_events(tmp_path / "rx.csv").select("rx", "/flows/e/echo")
    assert rx.seq.tolist() == tx.seq.tolist() == list(range(count))
    assert (rx.recv_ns > rx.stamp_ns).all()
    assert len(read_events(tmp_path / "echo.csv").select("tap", "/flows/e/echo")) == count
    st = status(tmp_path / "echo.ros2.json")
    assert st["endpoints"] == {"/flows/e/echo": 1, "/flows/e": 1}, st


@needs_middleware
@pytest.mark.parametrize("param,value,message", [
    ("middleware", "carrier_pigeon",
     "/plant/middleware: 'carrier_pigeon' is not a middleware of this build; allowed: "),
    ("qos_reliability", "mostly", "/plant/qos_reliability: "),
    ("qos_durability", "forever", "/plant/qos_durability: "),
    ("qos_depth", 0, "/plant/qos_depth = 0 is invalid"),
    ("domain_id", 300, "/plant/domain_id = 300 is invalid"),
    ("middleware_config", "/nonexistent/dds.xml", "/plant/middleware_config: cannot read '/nonexistent/dds.xml'"),
])
def test_bad_middleware_parameters_are_refused(roscore, tmp_path, param, value, message):
    roscore.set_params(rlc_parameters(LOOP), "/rlc")
    roscore.set_params({"middleware": MIDDLEWARES[0], param: value}, "/plant")
    plant = start(roscore, tmp_path, "plant", "rlc_plant")
    assert plant.popen.wait(timeout=20) == 2
    forget_node(roscore, "/plant")   # it exited without unregistering: the master stays clean
    log = plant.log_path.read_text()
    assert message in log, log[-2000:]
    if param == "middleware":
        assert ", ".join(BUILT) in log


@needs_middleware
@pytest.mark.parametrize("middleware", MIDDLEWARES)
def test_bridge_carries_a_topic_between_two_masters(roscore, tmp_path, middleware):
    """flow_source (roscpp, master A) -> ros2_bridge A -> middleware -> ros2_bridge B -> flow_sink
    (roscpp over TCPROS, master B): images arrive whole, header seq included."""
    mw = Loopback(middleware, tmp_path)
    other = RosMaster(roscore.group, dict(roscore.env), name="master_b").start()
    image = message_type("sensor_msgs/Image")
    entry = [{"topic": "/flows/cam", "datatype": image["type"], "md5sum": image["md5"],
              "definition": image["definition"]}]
    count = 30
    roscore.set_params({"out_topics": entry, "stats_path": str(tmp_path / "relay_bridge_a_stats.jsonl"),
                        "stats_period": 0.2, **mw.params("bridge_a", tmp_path / "bridge_a.ros2.json")}, "/bridge_a")
    other.set_params({"in_topics": entry, "stats_path": str(tmp_path / "relay_bridge_b_stats.jsonl"),
                      "stats_period": 0.2, **mw.params("bridge_b", tmp_path / "bridge_b.ros2.json")}, "/bridge_b")
    other.set_params({"record_path": str(tmp_path / "rx.csv"), "transport": "tcp_nodelay"}, "/sink")
    bridge_b = start(other, tmp_path, "bridge_b", "ros2_bridge")
    bridge_a = start(roscore, tmp_path, "bridge_a", "ros2_bridge")
    sink = start(other, tmp_path, "sink", "flow_sink", "flow:=/flows/cam")
    for name in ("bridge_a", "bridge_b"):
        assert wait_for(lambda: (status(tmp_path / f"{name}.ros2.json") or {}).get("matched_ns"), 30), \
            (tmp_path / "master-logs").exists() and name
    roscore.set_params({"message": "image", "width": 64, "height": 48, "period": 0.02, "count": count,
                        "record_path": str(tmp_path / "tx.csv"), "start_delay": 0.5, "drain": 0.5}, "/source")
    source = start(roscore, tmp_path, "source", "flow_source", "flow:=/flows/cam")
    assert source.popen.wait(timeout=60) == 0, source.log_path.read_text()[-3000:]
    assert wait_for(lambda: (tmp_path / "rx.csv").exists() and
                    len(read_events(tmp_path / "rx.csv").select("rx", "/flows/cam")) >= count, 10)
    for proc in (sink, bridge_a, bridge_b):
        proc.popen.send_signal(signal.SIGINT)
        assert proc.popen.wait(timeout=20) == 0, proc.log_path.read_text()[-2000:]
    tx = read_events(tmp_path / "tx.csv").select("tx", "/flows/cam")
    rx = read_events(tmp_path / "rx.csv").select("rx", "/flows/cam")
    assert rx.seq.tolist() == tx.seq.tolist() == list(range(count))
    assert rx.bytes.tolist() == tx.bytes.tolist()

    last_a = json.loads((tmp_path / "relay_bridge_a_stats.jsonl").read_text().splitlines()[-1])
    last_b = json.loads((tmp_path / "relay_bridge_b_stats.jsonl").read_text().splitlines()[-1])
    assert last_a["role"] == last_b["role"] == "ros2_bridge" and last_a["middleware"] == middleware
    assert last_a["topics"]["/flows/cam"]["in_msgs"] == count and last_a["topics"]["/flows/cam"]["out_msgs"] == count
    assert last_b["topics"]["/flows/cam"]["in_msgs"] == count and last_b["topics"]["/flows/cam"]["published"] == count
    assert last_a["wire"]["samples_sent"] >= count and last_a["matched"]["/flows/cam"] >= 1
    st_b = status(tmp_path / "bridge_b.ros2.json")
    assert st_b["final"] and st_b["first_rx_ns"]["/flows/cam"] > 0 and st_b["received"]["/flows/cam"] == count


@needs_middleware
def test_bridge_needs_a_middleware_and_topics(roscore, tmp_path):
    bridge = start(roscore, tmp_path, "bridge", "ros2_bridge")
    assert bridge.popen.wait(timeout=20) == 2
    forget_node(roscore, "/bridge")
    assert "/bridge/middleware is required; allowed: " + ", ".join(BUILT) in bridge.log_path.read_text()
    roscore.set_params({"middleware": MIDDLEWARES[0], "in_topics": [{"topic": "/x", "datatype": "std_msgs/String",
                                                                     "definition": "string data\n"}]}, "/bridge2")
    bridge = start(roscore, tmp_path, "bridge2", "ros2_bridge")
    assert bridge.popen.wait(timeout=20) == 2
    forget_node(roscore, "/bridge2")
    assert "/bridge2/in_topics[0].md5sum is required" in bridge.log_path.read_text()


@needs_middleware
@pytest.mark.parametrize("middleware", MIDDLEWARES)
def test_sink_without_the_type_is_refused_with_its_participant_up(roscore, tmp_path, middleware):
    """A configuration error found after the participant exists still ends the node with 2."""
    roscore.set_params(Loopback(middleware, tmp_path).params("sink", tmp_path / "sink.ros2.json"), "/sink")
    sink = start(roscore, tmp_path, "sink", "flow_sink", "flow:=/flows/x")
    assert sink.popen.wait(timeout=20) == 2
    forget_node(roscore, "/sink")
    assert "needs ~datatype and ~definition" in sink.log_path.read_text()
