"""Robustness of the relay nodes against what the network may bring: malformed, truncated,
duplicated, reordered, incomplete, oversized and foreign packets (real nodes on a real
roscore, loopback, no root). The relays must never crash, never grow without bound, count
what they drop, and keep delivering valid messages. The decoders themselves are fuzzed by
test/fuzz (see test_transport_fuzz.py) and unit-tested by the C++ gtest."""
from __future__ import annotations

import json
import random
import socket
import struct
import time
from pathlib import Path

import pytest
from waiting import wait_until

from netloop import paths, rosenv
from netloop.analysis.records import read_events
from netloop.master import free_port
from netloop.processes import ProcessGroup
from netloop.transports.relay_common import message_type

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("nothing_left_behind")]

HEADER = struct.Struct("<IBBBBBBBBIIIIIHHHH")
FRAME = struct.Struct("<IBBBBIIIIII")
PACKET_MAGIC, FRAME_MAGIC = 0x31524C4E, 0x31544C4E
MAX_DATAGRAM = 1472



def fnv1a(name: str) -> int:
    h = 2166136261
    for b in name.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def packets(data: bytes, topic: str, msg_id: int, kind: int = 1, epoch: int = 7, src: int = 0, dst: int = 0,
            frag_size: int = MAX_DATAGRAM - 40) -> list[bytes]:
    """The datagrams of one message, as src/relays/wire/format.h describes them."""
    count = max(1, -(-len(data) // frag_size))
    out = []
    for i in range(count):
        part = data[i * frag_size:(i + 1) * frag_size]
        out.append(HEADER.pack(PACKET_MAGIC, 1, kind, 0, 0, src, dst, 1, 0, fnv1a(topic), epoch, msg_id,
                               len(data), len(data), i, count, frag_size, len(part)) + part)
    return out


def frame(data: bytes, topic: str, msg_id: int, kind: int = 1) -> bytes:
    return FRAME.pack(FRAME_MAGIC, 1, kind, 0, 0, fnv1a(topic), 7, msg_id, len(data), len(data), 0) + data


def type_announcement(topic: str, t: dict) -> bytes:
    def s16(s: str) -> bytes:
        return struct.pack("<H", len(s)) + s.encode()
    return s16(topic) + s16(t["type"]) + s16(t["md5"]) + struct.pack("<I", len(t["definition"])) + t["definition"].encode()


def loop_sample(seq: int, padding: int = 0) -> bytes:
    now = time.time()
    secs, nsecs = int(now), int((now % 1) * 1e9)
    return struct.pack("<IdIIqIII", seq, 0.5, secs, nsecs, -1, 0, 0, padding) + bytes(padding)


@pytest.fixture
def nodes(roscore, tmp_path):
    """Starts netloop nodes on the test's roscore; stops them after the test."""
    group = ProcessGroup(tmp_path / "logs")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")

    def start(binary: str, name: str, params: dict, *remaps: str):
        roscore.set_params(params, "/" + name)
        return group.start(name, [str(paths.node_binary(binary)), f"__name:={name}", *remaps], env=env)
    yield start
    group.stop_all()


def sink(nodes, tmp_path, topic: str):
    """flow_sink recording every message arriving on `topic`."""
    path = tmp_path / "rx.csv"
    proc = nodes("flow_sink", "sink", {"transport": "tcp_nodelay", "record_path": str(path)}, f"flow:={topic}")
    return proc, path


def connected(roscore, node: str, topic: str) -> bool:
    try:
        return any(c["topic"] == topic and c["connected"] for c in roscore.bus_info(roscore.lookup_node(node)))
    except Exception:  # noqa: BLE001 - not registered yet
        return False


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def received_seqs(path: Path) -> list[int]:
    return read_events(path).seq.tolist() if path.exists() else []


def stats_after(path: Path, t_ns: int, timeout: float = 5.0) -> dict:
    """The first statistics line the relay wrote after wall time ``t_ns``: its counts include
    everything it had handled by then."""
    def first_later():
        for line in path.read_text().splitlines() if path.exists() else []:
            try:
                s = json.loads(line)
            except ValueError:  # the line being written
                continue
            if s["stamp_ns"] > t_ns:
                return s
        return None
    wait_until(first_later, timeout, f"a statistics line in {path.name} written after the last message")
    return first_later()


def own_socket(proto: str, port: int) -> dict:
    """The local socket bound to 127.0.0.1:``port`` as /proc/net/{udp,tcp} shows it: its state
    ("0A" = listening) and the bytes waiting in its receive queue (empty dict if none)."""
    for line in Path(f"/proc/net/{proto}").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == f"0100007F:{port:04X}":
            return {"state": fields[3], "rx_queue": int(fields[4].split(":")[1], 16)}
    return {}


def test_udp_receiver_survives_hostile_datagrams(roscore, nodes, tmp_path):
    lt = message_type("netloop/LoopSample")
    port, stats = free_port(), tmp_path / "stats.jsonl"
    relay = nodes("nimbro_udp_receiver", "rx", {
        "role": "udp_receiver", "address": "127.0.0.1", "port": port, "allowed_peers": ["127.0.0.1"],
        "topics": [{"name": "/t", "type": lt["type"], "md5": lt["md5"], "definition": lt["definition"]}],
        "reassembly_timeout": 0.3, "max_message_bytes": 1 << 20, "max_pending_bytes": 2 << 20,
        "max_pending_messages": 16, "stats_period": 0.2, "stats_path": str(stats)})
    proc, rx = sink(nodes, tmp_path, "/t")
    wait_until(lambda: connected(roscore, "/sink", "/t"), 15, "the sink to connect to the receiver")
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    dest = ("127.0.0.1", port)
    send = lambda p, s=peer: s.sendto(p, dest)  # noqa: E731

    # a fragmented message, its datagrams reversed and each sent twice: delivered once
    m1 = packets(loop_sample(1, padding=3000), "/t", 1)
    assert len(m1) == 3
    for p in reversed(m1 + m1):
        send(p)
    # garbage, truncations, wrong magic/version/kind, inconsistent fragments
    rng = random.Random(4)
    for _ in range(300):
        send(bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 200))))
    for p in m1:
        send(p[:rng.randrange(0, len(p))])
    bad = bytearray(m1[0])
    bad[4] = 9
    send(bytes(bad))
    bad = bytearray(m1[0])
    bad[34] = 200  # frag_count
    send(bytes(bad))
    # a message from an address that is not a peer
    foreign = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    foreign.bind(("127.0.0.2", 0))
    for p in packets(loop_sample(2), "/t", 2):
        foreign.sendto(p, dest)
    # an unknown topic, and an incomplete message (its last datagram lost)
    send(packets(loop_sample(3), "/other", 3)[0])
    for p in packets(loop_sample(4, padding=5000), "/t", 4)[:-1]:
        send(p)
    # a flood of first fragments of huge messages: memory must stay bounded
    rss0 = rss_kib(relay.pid)
    for i in range(3000):
        head = packets(bytes(1 << 20), "/t", 1000 + i)[0]
        send(head)
    wait_until(lambda: own_socket("udp", port).get("rx_queue") == 0, 20, "the receiver to read the whole flood")
    # still delivering
    for p in packets(loop_sample(5, padding=2000), "/t", 5):
        send(p)
    wait_until(lambda: 5 in received_seqs(rx), 5, "a valid message sent after the attack to arrive")
    s = stats_after(stats, time.time_ns())   # every datagram before the last one has been handled
    assert relay.poll() is None and proc.poll() is None
    assert received_seqs(rx) == [1, 5]          # m1 once, nothing foreign, incomplete or unknown
    assert s["foreign"] >= 1 and s["unknown_topic"] >= 1
    assert sum(s["malformed"].values()) >= 300
    r = s["reassembly"]
    assert r["duplicate_messages"] + r["duplicate_packets"] >= 3
    assert r["timed_out"] + r["evicted"] >= 1 and r["pending_bytes"] <= 2 << 20
    assert r["evicted"] + r["too_large"] >= 2900
    assert rss_kib(relay.pid) - rss0 < 64 * 1024, "receiver memory grew by more than 64 MB"
    assert s["topics"]["/t"]["published"] == 2


def test_tcp_receiver_closes_bad_streams(roscore, nodes, tmp_path):
    lt = message_type("netloop/LoopSample")
    port, stats = free_port(), tmp_path / "stats.jsonl"
    relay = nodes("nimbro_tcp_receiver", "rx", {
        "role": "tcp_receiver", "address": "127.0.0.1", "port": port, "allowed_peers": ["127.0.0.1"],
        "topics": [{"name": "/t"}], "stats_period": 0.2, "stats_path": str(stats)})  # type learnt from the stream
    proc, rx = sink(nodes, tmp_path, "/t")
    wait_until(lambda: own_socket("tcp", port).get("state") == "0A", 15, "the TCP receiver to listen")
    # not a peer: refused
    c = socket.socket()
    c.bind(("127.0.0.2", 0))
    c.connect(("127.0.0.1", port))
    c.settimeout(3)
    assert c.recv(10) == b""  # closed by the receiver
    # garbage from a peer: the connection is dropped
    g = socket.create_connection(("127.0.0.1", port))
    g.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(100))
    g.settimeout(3)
    assert g.recv(10) == b""
    # a frame claiming 4 GB: dropped before buffering anything
    h = socket.create_connection(("127.0.0.1", port))
    h.sendall(FRAME.pack(FRAME_MAGIC, 1, 1, 0, 0, fnv1a("/t"), 7, 1, 0xFFFFFFF0, 0xFFFFFFF0, 0))
    h.settimeout(3)
    assert h.recv(10) == b""
    # a proper stream: the type announcement (the receiver advertises /t, the sink connects),
    # then messages cut at random points
    ok = socket.create_connection(("127.0.0.1", port))
    ok.sendall(frame(type_announcement("/t", lt), "/t", 0, kind=2))
    wait_until(lambda: connected(roscore, "/sink", "/t"), 10, "/t advertised from the type announcement")
    stream = b"".join(frame(loop_sample(k, padding=k * 100), "/t", k) for k in range(1, 6))
    pos = 0
    while pos < len(stream):
        n = random.randint(1, 700)
        ok.sendall(stream[pos:pos + n])
        pos += n
        time.sleep(0.001)
    wait_until(lambda: len(received_seqs(rx)) >= 5, 10, "the five messages of the cut stream")
    s = stats_after(stats, time.time_ns())
    assert relay.poll() is None and proc.poll() is None
    assert s["foreign"] == 1 and s["stream_errors"] == 2
    assert received_seqs(rx) == [1, 2, 3, 4, 5]
    # nimbro's acknowledgement: one byte back per frame handled (the type and five messages)
    acks, ok_deadline = b"", time.monotonic() + 5
    ok.settimeout(0.2)
    while len(acks) < 6 and time.monotonic() < ok_deadline:
        try:
            acks += ok.recv(16)
        except socket.timeout:
            pass
    assert acks == bytes([1] * 6)
    ok.close()


class FrameReader:
    """The receiving end of a tcp_sender, played by the test: a listening socket that decodes
    the stream frames (src/relays/wire/format.h) arriving on its current connection."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(2)
        self.listener.settimeout(15)
        self.port = self.listener.getsockname()[1]
        self.conn, self.buf = None, b""

    def accept(self) -> None:
        self.conn, _ = self.listener.accept()
        self.buf = b""

    def frames(self, quiet: float, first: float | None = None) -> list[tuple[int, int]]:
        """(kind, msg_id) of every whole frame that arrives until ``quiet`` s pass without a
        byte (the first byte waited for up to ``first`` s, when given); [] and the connection
        marked closed (conn None) if the sender closed it."""
        out = []
        self.conn.settimeout(first if first is not None else quiet)
        while True:
            try:
                chunk = self.conn.recv(65536)
            except socket.timeout:
                return out
            self.conn.settimeout(quiet)
            if not chunk:
                self.conn.close()
                self.conn = None
                return out
            self.buf += chunk
            while len(self.buf) >= FRAME.size:
                f = FRAME.unpack_from(self.buf)
                if len(self.buf) < FRAME.size + f[9]:
                    break
                assert f[0] == FRAME_MAGIC
                out.append((f[2], f[7]))
                self.buf = self.buf[FRAME.size + f[9]:]

    def ack(self) -> None:
        self.conn.sendall(b"\x01")

    def close(self) -> None:
        for s in (self.conn, self.listener):
            if s is not None:
                s.close()


@pytest.mark.parametrize("message_ack", [True, False], ids=["stop_and_wait", "pipelined"])
def test_tcp_sender_waits_for_each_acknowledgement(roscore, nodes, tmp_path, message_ack):
    """nimbro_topic_transport's tcp_sender writes one message, then waits for the receiver's
    one-byte acknowledgement before the next; a message whose acknowledgement does not come is
    sent again on a new connection. With message_ack false every message is written at once."""
    rx, stats = FrameReader(), tmp_path / "stats.jsonl"
    try:
        relay = nodes("nimbro_tcp_sender", "tx", {
            "role": "tcp_sender", "destination_addr": "127.0.0.1", "destination_port": rx.port,
            "address": "127.0.0.1", "topics": [{"name": "/t"}], "message_ack": message_ack,
            "ack_timeout": 1.0, "stats_period": 0.2, "stats_path": str(stats)})
        nodes("flow_source", "source", {"message": "loop_sample", "size_bytes": 300, "period": 0.01,
                                         "count": 8, "record_path": ""}, "flow:=/t")
        rx.accept()
        # the type announcement goes with the first message (the source may start late on a
        # loaded machine); all 8 are published within 0.1 s of it. With acknowledgements the
        # sender waits ack_timeout (1 s) for the announcement's: answer well before that
        first = rx.frames(quiet=1.0 if not message_ack else 0.3, first=15)
        if not message_ack:
            assert [k for k, _ in first] == [2] + [1] * 8 and [m for k, m in first if k == 1] == list(range(8))
            assert stats_after(stats, time.time_ns())["acks"] == 0
            return
        assert first == [(2, 0)]                      # the type announcement, then nothing unacknowledged
        rx.ack()
        assert rx.frames(quiet=0.5) == [(1, 0)]       # one acknowledgement, one message
        # no acknowledgement for message 0: after ack_timeout the sender closes the connection
        # and sends it again, first, on a new one (types announced again on every connection)
        assert rx.frames(quiet=3.0) == [] and rx.conn is None
        rx.accept()
        got = rx.frames(quiet=0.5)
        assert got == [(2, 0)]
        data = []
        while len(data) < 8:
            rx.ack()
            step = rx.frames(quiet=0.5)
            assert len(step) == 1, step               # each acknowledgement lets exactly one frame out
            data += [m for k, m in step if k == 1]
        assert data == list(range(8))                 # message 0 again, then the rest in order
        rx.ack()
        s = stats_after(stats, time.time_ns())
        assert s["connects"] == 2 and s["acks"] == 1 + 1 + 8   # type, message 0; type again, all 8
        assert s["topics"]["/t"]["send_errors"] == 1 and s["topics"]["/t"]["out_msgs"] == 8
        assert relay.poll() is None
    finally:
        rx.close()


def test_priority_relay_drops_foreign_and_malformed(roscore, nodes, tmp_path):
    lt = message_type("netloop/LoopSample")
    peer_port, own_port, stats = free_port(), free_port(), tmp_path / "stats.jsonl"
    relay = nodes("priority_relay", "prio", {
        "self": 1, "hosts": [{"name": "robot", "address": "127.0.0.1", "port": peer_port},
                             {"name": "operator", "address": "127.0.0.1", "port": own_port}],
        "topics": [{"name": "/t", "type": lt["type"], "md5": lt["md5"], "definition": lt["definition"],
                    "priority": 100, "source": 0, "dest": 1}],
        "stats_period": 0.2, "stats_path": str(stats), "max_pending_bytes": 1 << 20})
    proc, rx = sink(nodes, tmp_path, "/t")
    wait_until(lambda: connected(roscore, "/sink", "/t"), 15, "the sink to connect to the relay")
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", peer_port))          # the configured peer: address AND port
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other.bind(("127.0.0.1", 0))                 # right address, wrong port: foreign
    dest = ("127.0.0.1", own_port)
    for p in packets(loop_sample(1), "/t", 1, src=0, dst=1):
        other.sendto(p, dest)
    for p in packets(loop_sample(2), "/t", 2, src=5, dst=1):   # no such host
        peer.sendto(p, dest)
    for p in packets(loop_sample(3), "/t", 3, src=1, dst=1):   # claims to come from ourselves
        peer.sendto(p, dest)
    for _ in range(200):
        peer.sendto(random.randbytes(random.randrange(0, 100)), dest)
    for p in packets(loop_sample(4, padding=4000), "/t", 4, src=0, dst=1)[::-1]:
        peer.sendto(p, dest)
    wait_until(lambda: 4 in received_seqs(rx), 5, "the valid message from the peer")
    s = stats_after(stats, time.time_ns())   # every datagram before it has been handled
    assert relay.poll() is None
    assert received_seqs(rx) == [4]
    assert s["foreign"] >= 1 and sum(s["malformed"].values()) >= 200
    assert s["topics"]["/t"]["published"] == 1
