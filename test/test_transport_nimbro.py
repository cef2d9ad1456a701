"""nimbro and nimbro_mixed end to end with netloop's own relays (nimbro_network cannot be
installed here; its configuration is tested in test_transport_config.py): the RLC loop and
perturbing flows on loopback and ethernet, the per-topic rate limit and compression, and
fragmentation over a lossy link, where a message missing a datagram is dropped after the
reassembly timeout while single-datagram messages get through."""
from __future__ import annotations

import json
import os

import pytest
from campaign_helpers import recorded_flows, relay_stats, run_campaign
from link_health import assert_finished

from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.loop_run import analyse_loop_run, load_loop_run
from netloop.run_files import load_metadata

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("nothing_left_behind")]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
LASER = {"name": "laser", "size_bytes": 1024, "period": 0.02, "count": 0}
IMAGE = {"name": "image", "size_bytes": 65536, "period": 0.15, "count": 0}



def run(tmp_path, doc, name="nimbro"):
    return run_campaign(tmp_path, doc, name)


last = relay_stats


def check(cfg, run_dir, min_mdr=0.97):
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    assert all(v == "TCPROS+NODELAY via relay" or v.endswith("via relay") for v in meta["negotiated_transport"].values())
    if cfg.loop.type == "rlc":
        a = analyse_loop_run(load_loop_run(run_dir))
        assert a["ok"], a["problems"]
        assert abs(a["step"]["Overshoot"] - a["baseline_step"]["Overshoot"]) < 2.0
    flows = {f.name: analyse_flow(run_dir, f) for f in recorded_flows(run_dir)}
    for name, f in flows.items():
        assert f["MDR"] >= min_mdr, (name, f["MDR"])
    return flows


@pytest.fixture(scope="module")
def loopback_runs(tmp_path_factory):
    return run(tmp_path_factory.mktemp("lo"), {"link": "loopback", "transport": ["nimbro", "nimbro_mixed"],
                                               "loop": {"samples": 100}, "flows": [LASER, IMAGE]})


def test_nimbro_on_loopback_every_topic_over_udp(loopback_runs):
    cfg, out = loopback_runs
    run_dir = out / "runs" / "nimbro-r0"
    check(cfg, run_dir)
    tx = last(run_dir, "nimbro_udp_sender_robot_to_operator")
    image = tx["topics"]["/flows/image"]
    assert image["out_msgs"] >= 5 and image["datagrams"] >= 46 * image["out_msgs"]   # 64 KB in 1500-byte packets
    rx = last(run_dir, "nimbro_udp_receiver_operator")
    assert rx["topics"]["/flows/image"]["published"] >= image["out_msgs"] - 1
    assert rx["foreign"] == 0 and not any(rx["malformed"].values())
    assert not (run_dir / "records" / "relay_nimbro_tcp_receiver_operator_stats.jsonl").exists()


def test_nimbro_mixed_on_loopback_images_over_tcp(loopback_runs):
    cfg, out = loopback_runs
    run_dir = out / "runs" / "nimbro_mixed-r0"
    check(cfg, run_dir)
    assert set(last(run_dir, "nimbro_tcp_sender_robot_to_operator")["topics"]) == {"/flows/image"}
    assert set(last(run_dir, "nimbro_udp_sender_robot_to_operator")["topics"]) == {"/y", "/flows/laser"}
    tcp_rx = last(run_dir, "nimbro_tcp_receiver_operator")
    assert tcp_rx["accepted"] == 1 and tcp_rx["topics"]["/flows/image"]["published"] >= 5
    record = json.loads((run_dir / "transport.json").read_text())
    assert record["implementation"] == "own" and record["mixed"]


@pytest.mark.root
@needs_root
def test_nimbro_over_ethernet_with_rate_limit_and_compression(tmp_path):
    cfg, out = run(tmp_path, {"link": "ethernet", "transport": ["nimbro", "nimbro_mixed"], "loop": {"samples": 100},
                              "flows": [LASER, IMAGE], "transport_options": {
                                  "nimbro": {"topics": {"/flows/image": {"rate": 3.0}, "/flows/laser": {"compress": True}}},
                                  "nimbro_mixed": {"topics": {"/flows/laser": {"protocol": "tcp"}}}}})
    flows = check(cfg, out / "runs" / "nimbro-r0", min_mdr=0.0)
    assert flows["laser"]["MDR"] >= 0.97
    assert 0.3 < flows["image"]["MDR"] < 0.65          # 6.7 Hz offered, at most 3 Hz sent
    tx = last(out / "runs" / "nimbro-r0", "nimbro_udp_sender_robot_to_operator")["topics"]
    assert tx["/flows/image"]["rate_dropped"] > 0
    assert tx["/flows/laser"]["out_bytes"] < tx["/flows/laser"]["in_bytes"] / 5   # zero padding compresses well
    check(cfg, out / "runs" / "nimbro_mixed-r0")
    tcp = last(out / "runs" / "nimbro_mixed-r0", "nimbro_tcp_sender_robot_to_operator")["topics"]
    assert set(tcp) == {"/flows/laser", "/flows/image"}                       # protocol forced per topic


@pytest.mark.root
@needs_root
def test_fragmented_messages_missing_a_datagram_are_dropped(tmp_path):
    flows = [dict(LASER, count=150), dict(IMAGE, count=20)]
    _, out = run(tmp_path, {"link": "shaped", "link_params": {"loss": 0.03, "delay_ms": 2, "rate_mbit": 50},
                           "transport": "nimbro", "loop": {"type": "none"}, "flows": flows,
                           "transport_options": {"nimbro": {"reassembly_timeout": 0.2}}})
    run_dir = out / "runs" / "nimbro-r0"
    # the loss and reassembly checked here do not depend on timing: a lagging shaper is accepted
    assert_finished(load_metadata(run_dir).to_json())
    laser, image = (analyse_flow(run_dir, f) for f in recorded_flows(run_dir))
    assert laser["MDR"] > 0.9                      # one datagram each: ~3 % lost
    assert image["MDR"] < 0.6                      # 46 datagrams each: 0.97^46 = 25 % complete
    rx = last(run_dir, "nimbro_udp_receiver_operator")["reassembly"]
    assert rx["timed_out"] >= 5 and rx["pending_messages"] <= 1 and rx["messages"] >= laser["received"]


def test_compressed_topic_arrives_whole(tmp_path):
    """A 64 KB flow with compress: true is deflated by the sender and inflated by the
    receiver before republishing: every message arrives, at its full serialized size."""
    flows = [dict(IMAGE, count=10)]
    cfg, out = run(tmp_path, {"transport": "nimbro", "loop": {"type": "none"}, "flows": flows,
                              "transport_options": {"nimbro": {"topics": {"/flows/image": {"compress": True}}}}})
    run_dir = out / "runs" / "nimbro-r0"
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    image = analyse_flow(run_dir, recorded_flows(run_dir)[0])
    assert image["MDR"] == 1.0 and image["mean_bytes"] == 65536
    sent = last(run_dir, "nimbro_udp_sender_robot_to_operator")["topics"]["/flows/image"]
    assert sent["in_bytes"] == 10 * 65536 and sent["out_bytes"] < sent["in_bytes"] / 10  # zero padding deflates


# -- nimbro_network's develop branch (the one that builds on Noetic): its sender/receiver --------
# Read at AIS-Bonn/nimbro_network@ed6683b663ec5ea84fbfdd069915b98523f1d181 (develop), beside the
# master support checked in test_upstream_tools.py (@7e1de20).
from pathlib import Path  # noqa: E402

from netloop.schema import validate  # noqa: E402
from netloop.transports import nimbro  # noqa: E402
from netloop.transports.base import CrossingTopic, TransportContext  # noqa: E402
from netloop.transports.relay_common import TransportError  # noqa: E402

DEV_TOPICS = [CrossingTopic("/y", "netloop/LoopSample", "robot", "operator", 52, 0.02, control=True),
              CrossingTopic("/u", "netloop/LoopSample", "operator", "robot", 52, 0.02, control=True),
              CrossingTopic("/flows/image", "sensor_msgs/CompressedImage", "robot", "operator", 65536, 0.15)]
DEV_ADDRESS = {"robot": "10.77.0.1", "operator": "10.77.0.2"}
DEV_TYPES = {"netloop/LoopSample": {"type": "netloop/LoopSample", "md5": "a" * 32, "definition": "uint32 seq\n"},
             "sensor_msgs/CompressedImage": {"type": "sensor_msgs/CompressedImage", "md5": "b" * 32,
                                             "definition": "Header header\n"}}


def develop_plan(options: dict, mixed: bool = True, variant: str = "develop"):
    return {s["name"]: s for s in nimbro.plan(
        DEV_TOPICS, DEV_ADDRESS, {"robot": 17100, "operator": 17102}, validate(nimbro.OPTIONS, options),
        mixed=mixed, implementation="nimbro", records=Path("/r"), node_binary=lambda n: Path("/devel/lib/netloop") / n,
        nimbro_binary=lambda n: Path("/ws/devel/lib/nimbro_topic_transport") / n, type_of=DEV_TYPES.get,
        variant=variant)}


def _round_trip(master, params: dict, namespace: str) -> dict:
    master.set_params(params, namespace)
    code, msg, value = master.rpc(master.uri, "getParam", namespace)
    assert code == 1, msg
    return value


def test_develop_sender_gets_what_sender_cpp_reads(roscore):
    """src/sender/sender.cpp: ~udp_topics and ~tcp_topics, arrays of structs with a name (string);
    subscriber.cpp casts ``rate`` to double (an XML-RPC int would throw), compressor.cpp takes
    ``compress`` as bool (or an int level); udp_sender.cpp / tcp_sender.cpp read ~destination_addr
    (string) and ~port (int, UDP and TCP alike). One sender per pair of hosts, both protocols."""
    specs = develop_plan({"topics": {"/y": {"rate": 50, "compress": True}, "/flows/image": {"rate": 5}}})
    senders = {n: s for n, s in specs.items() if "_sender_" in n}
    assert set(senders) == {"nimbro_sender_robot_to_operator", "nimbro_sender_operator_to_robot"}
    s = senders["nimbro_sender_robot_to_operator"]
    assert Path(s["argv"][0]).name == "sender" and s["host"] == "robot" and not s["own"]
    got = _round_trip(roscore, s["params"], "/sender")
    assert set(got) == {"destination_addr", "port", "udp_topics", "tcp_topics"}
    assert got["destination_addr"] == "10.77.0.2" and type(got["port"]) is int and got["port"] == 17102
    (y,) = got["udp_topics"]
    assert y == {"name": "/y", "rate": 50.0, "compress": True} and type(y["rate"]) is float
    (image,) = got["tcp_topics"]                        # mixed: the 64 KB image over TCP
    assert image == {"name": "/flows/image", "rate": 5.0}  # develop's subscriber limits TCP topics too
    back = _round_trip(roscore, senders["nimbro_sender_operator_to_robot"]["params"], "/sender_back")
    assert back == {"destination_addr": "10.77.0.1", "port": 17100, "udp_topics": [{"name": "/u"}]}


def test_develop_has_one_receiver_per_host_reading_only_its_port(roscore):
    """src/receiver/udp_receiver.cpp and tcp_receiver.cpp both bind ~port (int, default 5050): one
    receiver takes a host's UDP and TCP topics; the type comes with the data."""
    specs = develop_plan({})
    receivers = [s for n, s in specs.items() if "_receiver_" in n]
    assert sorted(s["name"] for s in receivers) == ["nimbro_receiver_operator", "nimbro_receiver_robot"]
    for s in receivers:
        assert Path(s["argv"][0]).name == "receiver"
        got = _round_trip(roscore, s["params"], "/" + s["name"])
        assert list(got) == ["port"] and type(got["port"]) is int
    names = list(specs)
    assert max(names.index(s["name"]) for s in receivers) < names.index("nimbro_sender_robot_to_operator")
    # its receivers advertise a topic only once something about it arrived: placeholders as for master
    assert {n for n in names if n.startswith("nimbro_placeholder_")} == {
        "nimbro_placeholder_y", "nimbro_placeholder_u", "nimbro_placeholder_flows_image"}


def test_develop_keeps_what_both_variants_share_and_drops_what_it_lifted():
    """develop's UDP data header (src/udp_packet.h, UDPData::Header) still holds the topic name
    and type in char[64]; its tcp_sender.cpp still waits for one acknowledgement byte per message
    and never sets TCP_NODELAY. A rate on a TCP topic, which master refuses, is fine."""
    long_topic = "/" + "t" * 63
    opts = validate(nimbro.OPTIONS, {})
    for variant in ("master", "develop"):
        with pytest.raises(TransportError, match=f"topic name '{long_topic}' has 64 characters"):
            nimbro.plan([CrossingTopic(long_topic, "netloop/LoopSample", "robot", "operator", 52, 0.02)],
                        DEV_ADDRESS, {"robot": 1, "operator": 3}, opts, False, "nimbro", Path("/r"),
                        nimbro_binary=lambda n: Path("/x") / n, type_of=DEV_TYPES.get, variant=variant)
        with pytest.raises(TransportError, match="transport_options.nimbro.message_ack"):
            develop_plan({"message_ack": False}, variant=variant)
    with pytest.raises(TransportError, match="tcp_sender has no rate limit"):
        develop_plan({"topics": {"/flows/image": {"rate": 5.0}}}, variant="master")
    develop_plan({"topics": {"/flows/image": {"rate": 5.0}}})
    with pytest.raises(TransportError, match="unknown nimbro_topic_transport variant 'next'"):
        develop_plan({}, variant="next")


def test_the_variant_found_is_told_apart_by_its_nodes():
    here = Path("/opt/ros/noetic/share/nimbro_topic_transport")

    def nodes(*names):
        return lambda n: Path("/lib") / n if n in names else None

    assert nimbro.nimbro_variant(nodes("udp_sender", "udp_receiver", "tcp_sender", "tcp_receiver"),
                                 lambda: here) == "master"
    assert nimbro.nimbro_variant(nodes("sender", "receiver", "transceiver"), lambda: here) == "develop"
    assert nimbro.nimbro_variant(nodes(), lambda: here) is None                 # a package not built
    assert nimbro.nimbro_variant(nodes("sender", "receiver"), lambda: None) is None


def test_implementation_nimbro_without_it_says_what_is_needed(tmp_path):
    transport = nimbro.NimbroTransport("nimbro", False, "")
    ctx = TransportContext(run_dir=tmp_path, options={"implementation": "nimbro"})
    if nimbro.nimbro_installed():
        pytest.skip("nimbro_topic_transport is installed here")
    with pytest.raises(TransportError) as err:
        transport.start(ctx)
    text = str(err.value)
    assert text.startswith("transport_options.nimbro.implementation is 'nimbro' but nimbro_topic_transport is "
                           "not installed"), text
    assert "develop branch (nodes sender/receiver" in text and "needs Qt4" in text and "implementation: own" in text
    assert transport.metadata()["nimbro_variant"] is None


def test_the_develop_variant_found_is_said_and_started(tmp_path, monkeypatch, capsys):
    """With nimbro_topic_transport's develop nodes installed (stand-ins here), the transport
    says which variant runs, starts its receiver and sender, and records the variant."""
    share = tmp_path / "share" / "nimbro_topic_transport"
    monkeypatch.setattr(nimbro, "find_ros_package", lambda name: share)
    monkeypatch.setattr(nimbro, "ros_executable", lambda pkg, n: tmp_path / "lib" / pkg / n
                        if n in nimbro.VARIANTS["develop"] else None)
    started = []
    ctx = TransportContext(run_dir=tmp_path, options={"implementation": "nimbro"},
                           address=DEV_ADDRESS, topics=DEV_TOPICS[:2],
                           start=lambda name, host, argv, params: started.append((name, host, argv[0], params)))
    transport = nimbro.NimbroTransport("nimbro", False, "")
    transport.start(ctx)
    said = capsys.readouterr().err
    assert f"nimbro: nimbro_topic_transport's develop variant (sender, receiver) at {share}" in said, said
    names = [s[0] for s in started]
    assert names[:2] == ["nimbro_receiver_operator", "nimbro_receiver_robot"]
    assert {"nimbro_sender_robot_to_operator", "nimbro_sender_operator_to_robot"} <= set(names)
    assert all(Path(s[2]).name in ("sender", "receiver", "flow_sink") for s in started)
    assert transport.metadata()["nimbro_variant"] == "develop (sender, receiver)"
    assert transport.metadata()["implementation"] == "nimbro"
