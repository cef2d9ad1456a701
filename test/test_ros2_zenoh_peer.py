"""An independent Zenoh peer receives what netloop's zenoh middleware publishes, as rmw_zenoh would.

The peer is the eclipse-zenoh Python package (requirements.txt, the release netloop's shim is
built on); the publisher is netloop's C++ backend (test/cpp/ros2_zenoh_pub.cpp over libnetloop_ros2).
Checked: the key expression is rmw_zenoh's (domain, topic, DDS type, RIHS01 hash from
netloop.ros2.names), the payload is the CDR bytes unchanged, and every sample carries rmw_zenoh's
attachment (sequence number from 1, source timestamp [ns], 16-byte source GID). Loopback only.
"""

import socket
import subprocess
import threading
import time

import pytest

from netloop import paths
from netloop.ros2 import names

zenoh = pytest.importorskip("zenoh", reason="eclipse-zenoh (requirements.txt) is not installed")
from zenoh.ext import Int64, z_deserialize  # noqa: E402

PUB = paths.DEVEL / "lib" / "netloop" / "ros2_zenoh_pub"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cdr_string(text):
    data = text.encode() + b"\0"
    return b"\x00\x01\x00\x00" + len(data).to_bytes(4, "little") + data


@pytest.mark.skipif(not PUB.exists(), reason="this build has no zenoh middleware (the Zenoh shim needs cargo, Rust >= 1.75)")
def test_python_zenoh_peer_receives_netloop_samples(tmp_path):
    port = _free_port()
    key = names.zenoh_key_expr(0, "/chatter", "std_msgs/String", names.type_hash("std_msgs/String"))
    assert key == ("0/chatter/std_msgs::msg::dds_::String_/"
                   "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18")
    conf = zenoh.Config.from_json5(
        '{mode: "peer", listen: {endpoints: ["tcp/127.0.0.1:%d"]}, scouting: {multicast: {enabled: false}}}' % port)
    received, lock = [], threading.Lock()

    def on_sample(sample):
        att = sample.attachment
        with lock:
            received.append((str(sample.key_expr), sample.payload.to_bytes(), att.to_bytes() if att else None))

    config = tmp_path / "pub.json5"
    config.write_text('{mode: "peer", connect: {endpoints: ["tcp/127.0.0.1:%d"]}, '
                      'scouting: {multicast: {enabled: false}}}\n' % port)
    with zenoh.open(conf) as session:
        sub = session.declare_subscriber(key, on_sample)
        t0 = time.time_ns()
        res = subprocess.run([str(PUB), str(config), "0", "/chatter", "std_msgs/String",
                              names.type_hash("std_msgs/String"), "hello from netloop", "3"],
                             capture_output=True, text=True, timeout=60)
        t1 = time.time_ns()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with lock:
                if len(received) >= 3:
                    break
            time.sleep(0.05)
        sub.undeclare()
    assert res.returncode == 0, res.stdout + res.stderr
    assert "matched 1" in res.stdout, res.stdout
    assert "samples_sent 3" in res.stdout, res.stdout
    assert len(received) == 3, received
    gids = set()
    for i, (k, payload, att) in enumerate(received, start=1):
        assert k == key
        assert payload == _cdr_string("hello from netloop")
        assert att is not None, "no attachment"
        fields = z_deserialize(tuple[str, Int64, str, Int64, str, bytes], zenoh.ZBytes(att))
        assert fields[0::2] == ("sequence_number", "source_timestamp", "source_gid")
        seq, stamp, gid = fields[1], fields[3], fields[5]
        assert seq == i
        assert t0 <= stamp <= t1
        assert len(gid) == 16
        gids.add(gid)
    assert len(gids) == 1, "one publisher, one GID"


@pytest.mark.skipif(not PUB.exists(), reason="this build has no zenoh middleware (the Zenoh shim needs cargo, Rust >= 1.75)")
def test_netloop_receives_a_python_zenoh_peer_publishing_as_rmw_zenoh(tmp_path):
    port = _free_port()
    type_hash = names.type_hash("std_msgs/String")
    key = names.zenoh_key_expr(7, "/from_python", "std_msgs/String", type_hash)
    conf = zenoh.Config.from_json5(
        '{mode: "peer", listen: {endpoints: ["tcp/127.0.0.1:%d"]}, scouting: {multicast: {enabled: false}}}' % port)
    config = tmp_path / "sub.json5"
    config.write_text('{mode: "peer", connect: {endpoints: ["tcp/127.0.0.1:%d"]}, '
                      'scouting: {multicast: {enabled: false}}}\n' % port)
    sample = _cdr_string("hello from python")
    with zenoh.open(conf) as session:
        pub = session.declare_publisher(key)
        proc = subprocess.Popen([str(PUB), "--sub", str(config), "7", "/from_python", "std_msgs/String", type_hash, "2"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            seq = 0
            deadline = time.monotonic() + 15
            while proc.poll() is None and time.monotonic() < deadline:
                seq += 1
                att = zenoh.ext.z_serialize(("sequence_number", Int64(seq), "source_timestamp", Int64(time.time_ns()),
                                             "source_gid", bytes(16)))
                pub.put(sample, attachment=att)
                time.sleep(0.1)
            out, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        pub.undeclare()
    assert proc.returncode == 0, out + err
    lines = [ln.split()[1] for ln in out.splitlines() if ln.startswith("received ")]
    assert len(lines) >= 2
    assert all(bytes.fromhex(h) == sample for h in lines)
    assert "samples_received" in out
