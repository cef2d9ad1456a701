"""An independent Zenoh peer sees netloop's zenoh middleware as a ROS 2 node on rmw_zenoh_cpp.

The peer is the eclipse-zenoh Python package (requirements.txt, the release netloop's shim is
built on); netloop's side is its C++ backend (test/cpp/ros2_zenoh_pub.cpp over libnetloop_ros2).
The peer plays rmw_zenoh_cpp nodes: it declares their liveliness tokens and reads netloop's in the
format written down below from rmw_zenoh_cpp 0.2.10 (ROS 2 Jazzy; ros2-gbp/rmw_zenoh-release,
tag release/jazzy/rmw_zenoh_cpp/0.2.10-1), not from netloop's code. Checked: the key expression
(domain, topic, DDS type, RIHS01 hash), the payload (the CDR bytes unchanged), the attachment of
every sample, the node's and the endpoints' tokens as rmw_zenoh's graph cache parses them (so
`ros2 node list` / `ros2 topic list -t` on rmw_zenoh would list them), and that netloop counts a
ROS 2 node's tokens as matches. Loopback only, explicit TCP endpoints (no scouting).
"""

import socket
import subprocess
import threading
import time

import pytest
import zenoh  # eclipse-zenoh, pinned in requirements.txt
from zenoh.ext import Int64, z_deserialize, z_serialize

from netloop import build_record, paths
from netloop.ros2 import names

PUB = paths.DEVEL / "lib" / "netloop" / "ros2_zenoh_pub"
STRING_HASH = names.type_hash("std_msgs/String")

# --- rmw_zenoh_cpp 0.2.10's graph, from its source ----------------------------------------------
# src/detail/liveliness_utils.cpp, Entity::Entity: a token is the non-empty parts joined by '/':
#   @ros2_lv/<domain>/<zid>/<node id>/<entity id>/<NN|MP|MS|SS|SC>/<enclave>/<namespace>/<node name>
#   [/<topic>/<type>/<type hash>/<qos>]           (topic parts for every entity but a node)
# each of enclave, namespace, node name, topic, type and hash with '/' replaced by '%'
# (mangle_name). A node's own token has its id twice (NodeData::make).
# qos_to_keyexpr: "<rel>:<dur>:<hist>,<depth>:<deadline s>,<ns>:<lifespan s>,<ns>:<liveliness>,
# <lease s>,<ns>", a field left empty when it equals QoS::default_qos() (src/detail/qos.cpp:
# reliable, volatile, keep last, depth 42, durations infinite, liveliness automatic), else the
# number of rmw's enum (rmw/types.h: reliability reliable 1, best effort 2; durability transient
# local 1, volatile 2; history keep last 1, keep all 2).
# The attachment of a sample (src/detail/attachment_helpers.cpp, since 0.2.4): zenoh-ext
# serialization of the sequence number (int64), the source timestamp (int64, ns) and the
# publisher's GID (16 bytes, written with its length).
QOS_DEFAULT_PROFILE = "::,10:,:,:,,"      # reliable, volatile, keep last 10 (ROS 2's default)
QOS_SENSOR_DATA = "2::,5:,:,:,,"          # best effort, volatile, keep last 5


def _mangle(name):
    return name.replace("/", "%")


def rmw_zenoh_token(domain, zid, node_id, entity_id, kind, namespace, node, topic=None, dds_type=None,
                    type_hash=None, qos=None):
    """A token as rmw_zenoh_cpp forms it (enclave "/", rcl's default)."""
    parts = ["@ros2_lv", str(domain), zid, str(node_id), str(entity_id), kind, _mangle("/"), _mangle(namespace),
             _mangle(node)]
    if kind != "NN":
        parts += [_mangle(topic), _mangle(dds_type), _mangle(type_hash), qos]
    return "/".join(parts)


def parse_token(key):
    """What rmw_zenoh's graph cache takes from a token (Entity::make(keyexpr)): None if invalid."""
    parts = key.split("/")
    if len(parts) < 9 or parts[0] != "@ros2_lv" or any(not p for p in parts) or parts[5] not in (
            "NN", "MP", "MS", "SS", "SC"):
        return None
    entity = {"domain": int(parts[1]), "zid": parts[2], "nid": parts[3], "id": parts[4], "kind": parts[5],
              "enclave": parts[6].replace("%", "/"), "namespace": parts[7].replace("%", "/"),
              "node": parts[8].replace("%", "/")}
    if parts[5] != "NN":
        if len(parts) < 13:
            return None
        qos = parts[12].split(":")
        if len(qos) < 6 or len(qos[2].split(",")) < 2:
            return None
        entity.update(topic=parts[9].replace("%", "/"), type=parts[10].replace("%", "/"),
                      type_hash=parts[11].replace("%", "/"), qos=parts[12])
    return entity


def ros_type_name(dds_type):
    """graph_cache.cpp's _demangle_if_ros_type: "std_msgs::msg::dds_::String_" -> "std_msgs/msg/String"."""
    pkg, _, rest = dds_type.partition("::msg::dds_::")
    return f"{pkg}/msg/{rest[:-1]}" if rest.endswith("_") else dds_type


# --- helpers ----------------------------------------------------------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cdr_string(text):
    data = text.encode() + b"\0"
    return b"\x00\x01\x00\x00" + len(data).to_bytes(4, "little") + data


def _sessions(tmp_path, name):
    """The peer's configuration (listening on a free port) and netloop's file connecting to it."""
    port = _free_port()
    conf = zenoh.Config.from_json5(
        '{mode: "peer", listen: {endpoints: ["tcp/127.0.0.1:%d"]}, scouting: {multicast: {enabled: false}}}' % port)
    config = tmp_path / f"{name}.json5"
    config.write_text('{mode: "peer", connect: {endpoints: ["tcp/127.0.0.1:%d"]}, '
                      'scouting: {multicast: {enabled: false}}}\n' % port)
    return conf, config


class Graph:
    """The tokens of a domain, as a liveliness subscriber with history sees them."""

    def __init__(self, session, domain):
        self.keys, self.lock = set(), threading.Lock()
        self.sub = session.liveliness().declare_subscriber(f"@ros2_lv/{domain}/**", self._on, history=True)

    def _on(self, sample):
        if sample.kind == zenoh.SampleKind.PUT:
            with self.lock:
                self.keys.add(str(sample.key_expr))

    def entities(self, node):
        with self.lock:
            parsed = [parse_token(k) for k in self.keys]
        return [e for e in parsed if e and e["node"] == node]


def _require_zenoh_build():
    """netloop's zenoh middleware: a failure where the build was meant to have it, else a skip."""
    why = build_record.missing("zenoh")
    if why and build_record.meant_to_have("zenoh"):
        pytest.fail(why)
    if why:
        pytest.skip(why)
    assert PUB.exists(), f"{PUB} is missing from a build with the zenoh middleware"


# --- the tests --------------------------------------------------------------------------------

def test_a_ros2_node_on_rmw_zenoh_sees_netloops_publisher(tmp_path):
    _require_zenoh_build()
    key = names.zenoh_key_expr(0, "/chatter", "std_msgs/String", STRING_HASH)
    assert key == ("0/chatter/std_msgs::msg::dds_::String_/"
                   "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18")
    conf, config = _sessions(tmp_path, "pub")
    received, lock = [], threading.Lock()

    def on_sample(sample):
        att = sample.attachment
        with lock:
            received.append((str(sample.key_expr), sample.payload.to_bytes(), att.to_bytes() if att else None))

    with zenoh.open(conf) as session:
        zid = str(session.zid())
        graph = Graph(session, 0)
        # two rmw_zenoh listeners: /listener (a subscription with ROS 2's default QoS, and a real
        # Zenoh subscriber) and /robot/listener (sensor_data, token only)
        dds_type = "std_msgs::msg::dds_::String_"
        tokens = [session.liveliness().declare_token(t) for t in (
            rmw_zenoh_token(0, zid, 0, 0, "NN", "/", "listener"),
            rmw_zenoh_token(0, zid, 0, 1, "MS", "/", "listener", "/chatter", dds_type, STRING_HASH,
                            QOS_DEFAULT_PROFILE),
            rmw_zenoh_token(0, zid, 2, 2, "NN", "/robot", "listener"),
            rmw_zenoh_token(0, zid, 2, 3, "MS", "/robot", "listener", "/chatter", dds_type, STRING_HASH,
                            QOS_SENSOR_DATA))]
        sub = session.declare_subscriber(key, on_sample)
        t0 = time.time_ns()
        res = subprocess.run([str(PUB), str(config), "0", "/chatter", "std_msgs/String", STRING_HASH,
                              "hello from netloop", "3"], capture_output=True, text=True, timeout=60)
        t1 = time.time_ns()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with lock:
                if len(received) >= 3:
                    break
            time.sleep(0.05)
        seen = graph.entities("ros2_zenoh_pub")
        sub.undeclare()
        for t in tokens:
            t.undeclare()
        graph.sub.undeclare()
    assert res.returncode == 0, res.stdout + res.stderr
    assert "samples_sent 3" in res.stdout, res.stdout
    assert "matched_at_end 2" in res.stdout, "both ROS 2 subscriptions' tokens count as matches:\n" + res.stdout
    # the graph: the node, and its publisher with topic, type, hash and QoS
    nodes = [e for e in seen if e["kind"] == "NN"]
    pubs = [e for e in seen if e["kind"] == "MP"]
    assert len(nodes) == 1 and len(pubs) == 1, sorted(graph.keys)
    node, pub = nodes[0], pubs[0]
    assert (node["domain"], node["enclave"], node["namespace"], node["nid"], node["id"]) == (0, "/", "/", "0", "0")
    assert node["zid"] != zid and pub["zid"] == node["zid"] and pub["nid"] == node["nid"] and pub["id"] != "0"
    assert (pub["topic"], ros_type_name(pub["type"]), pub["type_hash"], pub["qos"]) == (
        "/chatter", "std_msgs/msg/String", STRING_HASH, QOS_DEFAULT_PROFILE)
    # the samples
    assert len(received) == 3, received
    gids = set()
    for i, (k, payload, att) in enumerate(received, start=1):
        assert k == key
        assert payload == _cdr_string("hello from netloop")
        assert att is not None, "no attachment"
        seq, stamp, gid = z_deserialize(tuple[Int64, Int64, bytes], zenoh.ZBytes(att))
        assert seq == i
        assert t0 <= stamp <= t1
        assert len(gid) == 16
        gids.add(gid)
    assert len(gids) == 1, "one publisher, one GID"


def test_netloop_receives_a_ros2_talker_on_rmw_zenoh(tmp_path):
    _require_zenoh_build()
    key = names.zenoh_key_expr(7, "/from_python", "std_msgs/String", STRING_HASH)
    conf, config = _sessions(tmp_path, "sub")
    sample = _cdr_string("hello from python")
    with zenoh.open(conf) as session:
        zid = str(session.zid())
        graph = Graph(session, 7)
        tokens = [session.liveliness().declare_token(t) for t in (
            rmw_zenoh_token(7, zid, 0, 0, "NN", "/", "talker"),
            rmw_zenoh_token(7, zid, 0, 1, "MP", "/", "talker", "/from_python", "std_msgs::msg::dds_::String_",
                            STRING_HASH, QOS_DEFAULT_PROFILE))]
        pub = session.declare_publisher(key)
        proc = subprocess.Popen([str(PUB), "--sub", str(config), "7", "/from_python", "std_msgs/String", STRING_HASH,
                                 "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            seq = 0
            deadline = time.monotonic() + 15
            while proc.poll() is None and time.monotonic() < deadline:
                seq += 1
                pub.put(sample, attachment=z_serialize((Int64(seq), Int64(time.time_ns()), bytes(range(16)))))
                time.sleep(0.1)
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        seen = graph.entities("ros2_zenoh_sub")
        pub.undeclare()
        for t in tokens:
            t.undeclare()
        graph.sub.undeclare()
    assert proc.returncode == 0, out + err
    lines = [ln.split()[1] for ln in out.splitlines() if ln.startswith("received ")]
    assert len(lines) >= 2
    assert all(bytes.fromhex(h) == sample for h in lines)
    assert "matched_at_end 1" in out, "the talker's token counts as a matched publisher:\n" + out
    subs = [e for e in seen if e["kind"] == "MS"]
    assert [e["kind"] for e in seen if e["kind"] == "NN"] == ["NN"] and len(subs) == 1, seen
    assert (subs[0]["topic"], ros_type_name(subs[0]["type"]), subs[0]["type_hash"], subs[0]["qos"]) == (
        "/from_python", "std_msgs/msg/String", STRING_HASH, QOS_DEFAULT_PROFILE)
