"""An independent Zenoh peer sees netloop's zenoh middleware as a ROS 2 node on rmw_zenoh_cpp.

The peer is the eclipse-zenoh Python package (requirements.txt, the release netloop's shim is
built on); netloop's side is its C++ backend (test/cpp/ros2_zenoh_pub.cpp over libnetloop_ros2).
The peer plays rmw_zenoh_cpp nodes: it declares their liveliness tokens and reads netloop's in the
format written down below from rmw_zenoh_cpp 0.2.10 (ROS 2 Jazzy; ros2-gbp/rmw_zenoh-release,
tag release/jazzy/rmw_zenoh_cpp/0.2.10-1), not from netloop's code. Checked: the key expression
(domain, topic, DDS type, RIHS01 hash), the payload (the CDR bytes unchanged), the attachment of
every sample, the node's and the endpoints' tokens as rmw_zenoh's graph cache parses them (so
`ros2 node list` / `ros2 topic list -t` on rmw_zenoh would list them), that netloop counts a
ROS 2 node's tokens as matches, and (as root: a packet socket on lo) that a best-effort publisher's
samples leave in best-effort frames as rmw_zenoh_cpp 0.2.10's do. Loopback only, explicit TCP
endpoints (no scouting).
"""

import os
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
# rmw_publisher_data.cpp (0.2.3 on, through 0.2.10), PublisherData::make: congestion control drop,
# reliability Z_RELIABILITY_RELIABLE for a reliable QoS (and block for reliable + KEEP_ALL),
# Z_RELIABILITY_BEST_EFFORT for best effort. On the wire (Zenoh 1.x, a TCP link): every batch is
# its length (2 bytes, little endian) and transport messages; a FRAME's header is 0x05 with flag
# R (0x20) for the reliable channel (zenoh-protocol's transport/frame.rs).
FRAME_ID, FRAME_RELIABLE, HEADER_ID_MASK = 0x05, 0x20, 0x1F


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


class StreamCapture:
    """The TCP bytes sent to ``port`` on lo, captured by a packet socket (root) while it runs."""

    def __init__(self, port):
        self.port, self.data, self.seen = port, bytearray(), set()
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))   # ETH_P_ALL
        self.sock.bind(("lo", 0))
        self.sock.settimeout(0.1)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            try:
                frame, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] == socket.PACKET_OUTGOING:   # lo shows each packet leaving and arriving
                continue
            ip = frame[14:]
            if ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            ihl, total = (ip[0] & 0x0F) * 4, int.from_bytes(ip[2:4], "big")
            tcp = ip[ihl:total]
            seq = int.from_bytes(tcp[4:8], "big")
            payload = tcp[(tcp[12] >> 4) * 4:]
            if int.from_bytes(tcp[2:4], "big") == self.port and payload and seq not in self.seen:
                self.seen.add(seq)
                self.data += payload

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()

    def batch_heads(self):
        """The first transport message header of every Zenoh batch of the stream."""
        heads, i, data = [], 0, bytes(self.data)
        while i + 2 < len(data):
            n = int.from_bytes(data[i:i + 2], "little")
            if n == 0:
                break
            heads.append(data[i + 2])
            i += 2 + n
        return heads


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


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a packet socket on lo")
def test_best_effort_samples_leave_in_best_effort_frames(tmp_path):
    """As rmw_zenoh_cpp 0.2.3-0.2.10: a best-effort publisher's samples go on Zenoh's best-effort
    channel (FRAME without flag R), a reliable one's on the reliable channel; read off the TCP
    stream to the peer (a sample every 100 ms leaves in a batch of its own)."""
    _require_zenoh_build()
    count = 5
    frames = {}
    for reliability in ("reliable", "best_effort"):
        conf, config = _sessions(tmp_path, reliability)
        port = int(config.read_text().split("tcp/127.0.0.1:")[1].split('"')[0])
        capture = StreamCapture(port)
        try:
            with zenoh.open(conf) as session:
                key = names.zenoh_key_expr(0, "/chatter", "std_msgs/String", STRING_HASH)
                sub = session.declare_subscriber(key, lambda sample: None)
                res = subprocess.run([str(PUB), str(config), "0", "/chatter", "std_msgs/String", STRING_HASH,
                                      "hello", str(count), reliability], capture_output=True, text=True, timeout=60)
                sub.undeclare()
        finally:
            capture.close()
        assert res.returncode == 0 and f"samples_sent {count}" in res.stdout, res.stdout + res.stderr
        heads = [h for h in capture.batch_heads() if h & HEADER_ID_MASK == FRAME_ID]
        frames[reliability] = (sum(1 for h in heads if h & FRAME_RELIABLE), sum(1 for h in heads if not h & FRAME_RELIABLE))
    assert frames["reliable"][1] == 0 and frames["reliable"][0] >= count, frames
    assert frames["best_effort"][1] >= count, frames
