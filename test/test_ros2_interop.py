"""A real ROS 2 node and netloop's ROS 2 paths, both ways, between two network namespaces.

The ROS 2 node is rclpy on rmw_fastrtps_cpp (ROS 2 Jazzy from PyPI, as make build installs it:
netloop.ros2.distro), with ROS 2's defaults, in the robot namespace of an `ethernet` testbed
(test/ros2_interop_peer.py, one process for the module). In the operator namespace netloop's own
nodes run as the runner starts them, with the middleware configuration it generates
(netloop.ros2.config): natively on `cyclonedds` and on `fastdds`, and in the bridge deployment
(ROS 1 nodes, a ros2_bridge over Cyclone DDS). For each, the ROS 2 node
  - lists netloop's topics with ROS 2's types (sensor_msgs/msg/Image, netloop/msg/LoopSample);
  - receives flow_source's images and loop messages with their content: every pixel, the
    header's stamp, and the frame_id as netloop sends it ("camera_optical_frame#<seq>", the
    ROS 1 seq it carries: docs/ros2.md); the LoopSamples' fields;
  - publishes images and LoopSamples that netloop's flow_sinks receive with their stamps (and
    the LoopSamples' seq).
It does not list netloop's DDS nodes: they do not publish ROS 2's ros_discovery_info (docs/ros2.md).
Zenoh's side: test_ros2_zenoh_peer.py. Nothing skips for want of ROS 2; root for the namespaces.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import select
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from netloop import paths, rosenv
from netloop.analysis.records import read_events
from netloop.master import RosMaster, wait_for
from netloop.processes import ProcessGroup
from netloop.ros2 import config as ros2config
from netloop.ros2 import distro
from netloop.testbed import Testbed, load_profile
from netloop.transports.relay_common import message_type

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.usefixtures("nothing_left_behind"),
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")]

PEER = Path(__file__).with_name("ros2_interop_peer.py")
COUNT = 5                        # messages each way per topic
WIDTH, HEIGHT = 32, 24           # netloop's images (flow_source ~message image)
LOOP_BYTES = 256                 # netloop's LoopSamples (~size_bytes)
IMAGE, LOOP = "/interop/image", "/interop/loop"                       # netloop -> ROS 2
BACK_IMAGE, BACK_LOOP = "/interop/back/image", "/interop/back/loop"   # ROS 2 -> netloop
_domains = itertools.count(40 + os.getpid() % 100)


class Lab:
    """The testbed, the operator's ROS 1 master, the ROS 2 node in the robot namespace."""

    def __init__(self, base: Path):
        self.base = base
        self.tb = Testbed(load_profile("ethernet", {}), log_dir=base / "testbed").up()
        self.group = ProcessGroup(base / "logs")
        self.master = RosMaster(self.group, rosenv.base_env(), address=self.tb.address("operator"),
                                netns=self.tb.netns("operator"),
                                command=lambda argv, env: self.tb.command("operator", argv, env)).start()
        iface, mtu = self.tb.interfaces()
        self.plan = ros2config.NetPlan([ros2config.HostNet(h, self.tb.address(h), iface[h], mtu[h])
                                        for h in ("robot", "operator")], "multicast")
        env = distro.environment()
        self.peer = subprocess.Popen(self.tb.exec_prefix("robot") + [str(distro.python()), str(PEER)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(base / "logs" / "ros2_peer.log", "wb"), text=True)

    def ask_peer(self, case: dict) -> None:
        self._say(json.dumps(case))
        assert self._line(30) == "ready", self._peer_log()

    def go(self) -> None:
        """netloop's receivers are up: the ROS 2 node may publish."""
        self._say("go")

    def _say(self, line: str) -> None:
        self.peer.stdin.write(line + "\n")
        self.peer.stdin.flush()

    def peer_report(self, timeout: float) -> dict:
        return json.loads(self._line(timeout))

    def _line(self, timeout: float) -> str:
        ready, _, _ = select.select([self.peer.stdout], [], [], timeout)
        assert ready, f"the ROS 2 node said nothing within {timeout} s: {self._peer_log()}"
        line = self.peer.stdout.readline()
        assert line, f"the ROS 2 node ended (exit {self.peer.poll()}): {self._peer_log()}"
        return line.strip()

    def _peer_log(self) -> str:
        return (self.base / "logs" / "ros2_peer.log").read_text()[-3000:]

    def node(self, name: str, binary: str, params: dict, *remaps: str):
        """A netloop node on the operator, its parameters (and only those: an earlier case's of
        the same name are deleted) set first."""
        self.master.rpc(self.master.uri, "deleteParam", f"/{name}")
        self.master.set_params(params, f"/{name}")
        env = rosenv.node_env(self.master.uri, self.tb.address("operator"), self.base / "ros")
        argv, env, _ = self.tb.command("operator", [str(paths.node_binary(binary)), f"__name:={name}", *remaps], env)
        return self.group.start(name, argv, env=env)

    def close(self) -> None:
        if self.peer.poll() is None:
            self.peer.stdin.close()
            try:
                self.peer.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.peer.kill()
                self.peer.wait()
        self.group.stop_all()
        self.tb.down()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    assert distro.missing() is None, distro.missing()    # make build installs ROS 2: no skip
    lab = Lab(tmp_path_factory.mktemp("interop"))
    yield lab
    lab.close()


def middleware_params(lab: Lab, tmp: Path, middleware: str, domain: int, name: str) -> dict:
    """What the runner gives a node of the operator (its generated configuration, a status file)."""
    if middleware == "cyclonedds":
        path, text = tmp / "operator.xml", ros2config.cyclonedds_xml(lab.plan, "operator")
    else:
        path, text = tmp / "operator_fastdds.xml", ros2config.fastdds_xml(lab.plan, "operator", domain)
    path.write_text(text)
    return {"middleware": middleware, "middleware_config": str(path), "domain_id": domain,
            "status_path": str(tmp / f"{name}.ros2.json")}


def typed(datatype: str) -> dict:
    t = message_type(datatype)
    return {"topic": None, "datatype": t["type"], "md5sum": t["md5"], "definition": t["definition"]}


def source_params(kind: str, tmp: Path, name: str) -> dict:
    shape = {"message": "image", "width": WIDTH, "height": HEIGHT} if kind == "image" else \
        {"message": "loop_sample", "size_bytes": LOOP_BYTES}
    return {**shape, "period": 0.05, "count": COUNT, "start_delay": 0.3, "drain": 0.3, "connect_timeout": 20,
            "record_path": str(tmp / f"{name}.csv")}


def exchange(lab: Lab, tmp: Path, middleware: str, bridge: bool) -> tuple[dict, dict[str, Path]]:
    """One case: the ROS 2 node listens and talks while netloop's nodes send and receive.
    Returns the ROS 2 node's report and the record of each topic's netloop end."""
    domain = next(_domains)
    lab.ask_peer({"domain": domain, "listen": {IMAGE: "image", LOOP: "loop"},
                  "talk": {BACK_IMAGE: "image", BACK_LOOP: "loop"}, "count": COUNT, "seconds": 25})
    types = {"image": typed("sensor_msgs/Image"), "loop": typed("netloop/LoopSample")}
    records = {topic: tmp / f"{name}.csv" for topic, name in
               ((IMAGE, "source_image"), (LOOP, "source_loop"), (BACK_IMAGE, "sink_image"), (BACK_LOOP, "sink_loop"))}

    def mw(name: str) -> dict:   # a node's middleware parameters: none for ROS 1 nodes beside a bridge
        return {} if bridge else middleware_params(lab, tmp, middleware, domain, name)

    receivers = []
    if bridge:
        receivers.append(lab.node("bridge", "ros2_bridge", {
            "out_topics": [{**types["image"], "topic": IMAGE}, {**types["loop"], "topic": LOOP}],
            "in_topics": [{**types["image"], "topic": BACK_IMAGE}, {**types["loop"], "topic": BACK_LOOP}],
            **middleware_params(lab, tmp, middleware, domain, "bridge")}))
    for topic, kind in ((BACK_IMAGE, "image"), (BACK_LOOP, "loop")):
        name = records[topic].stem
        typ = {} if bridge else {"datatype": types[kind]["datatype"], "definition": types[kind]["definition"]}
        receivers.append(lab.node(name, "flow_sink", {"record_path": str(records[topic]), "transport": "tcp_nodelay",
                                                      **typ, **mw(name)}, f"flow:={topic}"))
    ready = [tmp / "bridge.ros2.json"] if bridge else [tmp / f"{p.stem}.ros2.json" for p in
                                                       (records[BACK_IMAGE], records[BACK_LOOP])]
    assert wait_for(lambda: all((status(p) or {}).get("matched_ns") for p in ready), 30), \
        f"netloop's {middleware} endpoints did not all match the ROS 2 node's: {[status(p) for p in ready]}"
    if bridge:   # the ROS 1 sinks connected to the bridge's republishers
        assert wait_for(lambda: all(ros1_connected(lab, f"/{records[t].stem}") for t in (BACK_IMAGE, BACK_LOOP)), 10)
    lab.go()
    sources = [lab.node(records[topic].stem, "flow_source", {**source_params(kind, tmp, records[topic].stem),
                                                             **mw(records[topic].stem)}, f"flow:={topic}")
               for topic, kind in ((IMAGE, "image"), (LOOP, "loop"))]
    report = lab.peer_report(40)
    for proc in sources:
        assert proc.popen.wait(timeout=30) == 0, proc.log_path.read_text()[-2000:]
    for proc in receivers:
        proc.popen.send_signal(signal.SIGINT)
        assert proc.popen.wait(timeout=20) == 0, proc.log_path.read_text()[-2000:]
    return report, records


def ros1_connected(lab: Lab, node: str) -> bool:
    """The ROS 1 node has a connected publisher (its TCPROS connection is up)."""
    try:
        return any(c["connected"] and c["direction"] == "i"
                   for c in lab.master.bus_info(lab.master.lookup_node(node)))
    except Exception:   # noqa: BLE001 - not registered yet
        return False


def status(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def flow_image_sha256(seq: int) -> str:
    """flow_source's image `seq`: rgb8, pixel (x, y) = (x + seq, y, x ^ y) mod 256."""
    x, y = np.meshgrid(np.arange(WIDTH), np.arange(HEIGHT))
    px = np.stack([(x + seq) % 256, y % 256, (x ^ y) % 256], axis=-1).astype(np.uint8)
    return hashlib.sha256(px.tobytes()).hexdigest()


def check(report: dict, records: dict[str, Path]) -> None:
    assert report["rmw"] == "rmw_fastrtps_cpp"
    # the graph: netloop's topics with ROS 2's types, both directions
    for topic, ros2_type in ((IMAGE, "sensor_msgs/msg/Image"), (LOOP, "netloop/msg/LoopSample"),
                             (BACK_IMAGE, "sensor_msgs/msg/Image"), (BACK_LOOP, "netloop/msg/LoopSample")):
        assert report["topics"].get(topic) == [ros2_type], report["topics"]
    assert report["nodes"] == ["/interop_peer"], "netloop's DDS nodes publish no ros_discovery_info"
    # netloop -> ROS 2: every message, its content as flow_source made it
    tx_image = read_events(records[IMAGE]).select("tx", IMAGE)
    images = report["received"][IMAGE]
    assert len(images) == COUNT, images
    assert [m["frame_id"] for m in images] == [f"camera_optical_frame#{k}" for k in range(COUNT)]
    assert [m["stamp_ns"] for m in images] == tx_image.stamp_ns.tolist()
    for k, m in enumerate(images):
        assert (m["width"], m["height"], m["encoding"], m["step"], m["is_bigendian"]) == (WIDTH, HEIGHT, "rgb8",
                                                                                          3 * WIDTH, 0)
        assert m["sha256"] == flow_image_sha256(k), f"image {k}'s pixels"
    tx_loop = read_events(records[LOOP]).select("tx", LOOP)
    loops = report["received"][LOOP]
    assert [m["seq"] for m in loops] == list(range(COUNT))
    assert [m["stamp_ns"] for m in loops] == tx_loop.stamp_ns.tolist()
    assert {(m["value"], m["answer_seq"], m["answer_stamp_ns"], m["padding_sum"]) for m in loops} == {(0.0, -1, 0, 0)}
    # padded to LOOP_BYTES serialized for ROS 1: seq 4, value 8, the two stamps 8 each, answer_seq 8,
    # the padding's length 4 bytes
    assert tx_loop.bytes.tolist() == [LOOP_BYTES] * COUNT and {m["padding"] for m in loops} == {LOOP_BYTES - 40}
    # ROS 2 -> netloop: flow_sink recorded each message with the stamp the ROS 2 node gave it
    rx_loop = read_events(records[BACK_LOOP]).select("rx", BACK_LOOP)
    assert rx_loop.seq.tolist() == list(range(COUNT))
    assert rx_loop.stamp_ns.tolist() == report["sent"][BACK_LOOP]
    rx_image = read_events(records[BACK_IMAGE]).select("rx", BACK_IMAGE)
    assert rx_image.stamp_ns.tolist() == report["sent"][BACK_IMAGE]


@pytest.mark.parametrize("middleware", ["cyclonedds", "fastdds"])
def test_a_ros2_node_and_netloops_native_nodes(lab, tmp_path, middleware):
    check(*exchange(lab, tmp_path, middleware, bridge=False))


def test_a_ros2_node_and_netloops_bridge(lab, tmp_path):
    check(*exchange(lab, tmp_path, "cyclonedds", bridge=True))
