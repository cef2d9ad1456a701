"""Relay statistics are a typed message (netloop/RelayStats on /netloop_relay/stats, as
`rostopic echo` shows it) and the JSON lines of records/relay_<process>_stats.jsonl are the
same reports; and every get_transport() call gives a transport of its own."""
from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest

from netloop import paths, rosenv
from netloop.master import free_port, wait_for
from netloop.processes import ProcessGroup
from netloop.transports import TransportContext, get_transport, transport_names
from netloop.transports.relay_common import STATS_TOPIC, RelayTransport

# A subscriber with the generated message class (what rostopic echo does): prints the first
# report in which the relay counted a malformed datagram, as JSON.
ECHO = """
import json, sys, threading, rospy
from netloop.msg import RelayStats
got = threading.Event()
out = {}
def on_report(m):
    if m.malformed.bad_magic and not got.is_set():
        out.update(type=m._type, role=m.role, node=m.node, stamp_ns=m.header.stamp.to_nsec(), bad_magic=m.malformed.bad_magic,
                   foreign=m.foreign, packets=m.reassembly.packets, topics=[t.topic for t in m.topics],
                   topic_type=type(m.topics[0]).__name__)
        got.set()
rospy.init_node("stats_echo", disable_signals=True)
rospy.Subscriber(sys.argv[1], RelayStats, on_report)
ok = got.wait(20)
print(json.dumps(out if ok else None))
"""


def test_get_transport_gives_independent_instances(tmp_path):
    for name in transport_names():
        a, b = get_transport(name), get_transport(name)
        assert a is not b and type(a) is type(b) and a.name == b.name == name
        assert a.options_schema is b.options_schema   # what experiment validation reads
    a, b = get_transport("priority"), get_transport("priority")
    assert isinstance(a, RelayTransport)
    a._begin(TransportContext(tmp_path / "run", options={"rate_mbit": 3}))
    assert a.options["rate_mbit"] == 3 and a.ctx is not None
    assert b.ctx is None and b.options == {} and b.processes == []   # nothing leaks into the other
    with pytest.raises(RuntimeError, match="already started"):
        a._begin(TransportContext(tmp_path / "run2"))
    a.stop()
    assert a.metadata()["options"]["rate_mbit"] == 3   # still describes its run after stop
    assert (tmp_path / "run" / "transport.json").exists()


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_relay_stats_arrive_typed_and_match_the_json_lines(roscore, tmp_path):
    port, stats = free_port(), tmp_path / "stats.jsonl"
    group = ProcessGroup(tmp_path / "logs")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    try:
        roscore.set_params({"role": "udp_receiver", "address": "127.0.0.1", "port": port,
                            "topics": [{"name": "/t"}], "stats_period": 0.2, "stats_path": str(stats)}, "/rx")
        group.start("rx", [str(paths.node_binary("nimbro_udp_receiver")), "__name:=rx"], env=env)
        assert wait_for(stats.exists, 15), "the relay wrote no report"
        echo = subprocess.Popen([str(paths.REPO / ".venv/bin/python"), "-c", ECHO, STATS_TOPIC], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
            try:
                out, err = "", ""
                for _ in range(100):   # until the subscriber has connected and seen a count
                    peer.sendto(b"JUNK" + bytes(60), ("127.0.0.1", port))
                    try:
                        out, err = echo.communicate(timeout=0.2)
                        break
                    except subprocess.TimeoutExpired:
                        continue
            finally:
                if echo.poll() is None:
                    echo.kill()
                    echo.wait()
        assert echo.returncode == 0, err
        report = json.loads(out.strip().splitlines()[-1])
        assert report is not None, "no typed report with the malformed datagram arrived"
        assert report["type"] == "netloop/RelayStats" and report["topic_type"] == "RelayTopicStats"
        assert report["role"] == "udp_receiver" and report["node"] == "/rx" and report["topics"] == ["/t"]
        assert report["bad_magic"] >= 1 and report["foreign"] == 0 and report["packets"] == 0

        # the JSON line of the same report: the receiver's fields only, values as published
        lines = [json.loads(line) for line in stats.read_text().splitlines()]
        same = [s for s in lines if s["stamp_ns"] == report["stamp_ns"]]
        assert len(same) == 1, "every published report is also one JSON line"
        line = same[0]
        assert line["role"] == "udp_receiver" and line["malformed"]["bad_magic"] == report["bad_magic"]
        assert set(line["malformed"]) == {"too_short", "bad_magic", "bad_version", "bad_kind", "bad_flags",
                                          "bad_length", "bad_fragment", "too_large"}
        assert {"foreign", "unknown_topic", "untyped", "type_mismatch", "bad_payload", "reassembly", "cpu_s"} <= set(line)
        assert not {"destination", "connected", "rate_mbit", "connections"} & set(line)   # other roles' fields
        assert set(line["topics"]) == {"/t"} and line["topics"]["/t"]["published"] == 0
    finally:
        group.stop_all()


# The first report a subscriber receives, with its header (what nimbro_network's GUI reads).
HEADER_ECHO = """
import json, sys, rospy
from netloop.msg import RelayStats
rospy.init_node("stats_header_echo", disable_signals=True)
m = rospy.wait_for_message(sys.argv[1], RelayStats, timeout=20)
print(json.dumps({"role": m.role, "node": m.node, "stamp_ns": m.header.stamp.to_nsec(),
                  "frame_id": m.header.frame_id, "seq": m.header.seq, "received_ns": rospy.Time.now().to_nsec()}))
"""


@pytest.mark.integration
@pytest.mark.usefixtures("nothing_left_behind")
def test_a_running_relays_stats_message_has_a_header_stamped_with_the_report_time(roscore, tmp_path):
    """A role's own node (the UDP sender) publishes netloop/RelayStats whose std_msgs/Header
    carries the report's wall-clock time, the same instant as the JSON line's ``stamp_ns``."""
    stats = tmp_path / "stats.jsonl"
    group = ProcessGroup(tmp_path / "logs")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    started_ns = time.time_ns()
    try:
        roscore.set_params({"destination_addr": "127.0.0.1", "destination_port": free_port(),
                            "address": "127.0.0.1", "topics": [{"name": "/t"}], "stats_period": 0.2,
                            "stats_path": str(stats)}, "/tx")
        group.start("tx", [str(paths.node_binary("nimbro_udp_sender")), "__name:=tx"], env=env)
        echo = subprocess.run([str(paths.REPO / ".venv/bin/python"), "-c", HEADER_ECHO, STATS_TOPIC], env=env,
                              capture_output=True, text=True, timeout=60)
        assert echo.returncode == 0, echo.stderr[-3000:]
        report = json.loads(echo.stdout.strip().splitlines()[-1])
        assert report["role"] == "udp_sender" and report["node"] == "/tx" and report["frame_id"] == ""
        assert started_ns < report["stamp_ns"] <= report["received_ns"], report   # the report's wall clock
        assert report["received_ns"] - report["stamp_ns"] < 5e9
        assert wait_for(lambda: any(json.loads(line)["stamp_ns"] == report["stamp_ns"]
                                    for line in stats.read_text().splitlines()), 5), "no JSON line of that report"
    finally:
        group.stop_all()


def test_master_sync_stats_message_carries_the_report_time_in_its_header():
    from netloop.transports.mm_sync import stats_message
    report = {"role": "mm_sync", "node": "/mm_sync_robot", "host": "robot", "stamp_ns": 1_764_000_000_123_456_789,
              "cpu_s": 0.5, "discovery": "auto", "multicast": True, "multicast_error": None, "epoch": 7,
              "version": 3, "peers": {"operator": {"address": "10.77.0.2", "via": ["multicast"], "age_s": 0.1,
                                                   "epoch": 9, "master": "http://10.77.0.2:11311/", "synced": True}},
              "local": {"publishers": 2, "subscribers": 1}, "registrations": 3, "heartbeats_sent": 10}
    m = stats_message(report)
    assert m.header.stamp.to_nsec() == report["stamp_ns"] and m.header.frame_id == ""
    assert m.node == "/mm_sync_robot" and m.peers[0].host == "operator" and m.local_publishers == 2
    assert "stamp_ns" not in m.__slots__
