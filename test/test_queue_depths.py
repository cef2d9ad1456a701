"""Queue depths of the C++ nodes on a real roscore: ~publisher_queue_size and
~subscriber_queue_size are honoured, bad values refused, and what a queue discards is
counted by the receiver (missing sequence numbers, roscpp's subscriber-queue drops)."""
from __future__ import annotations

import json

import pytest
from registrations import forget_node

from netloop import paths, rosenv
from netloop.analysis.records import read_events
from netloop.loops.rlc import rlc_parameters
from netloop.experiment import validate_experiment

pytestmark = pytest.mark.integration

SENT = 300


def run_flow(master, tmp_path, *, sink_queue, source_queue=10, process_time=0.0, size_bytes=256, period=0.002,
             transport="tcp_nodelay"):
    """flow_source -> flow_sink on loopback; returns (tx events, rx events, the sink's receive summary)."""
    env = rosenv.node_env(master.uri, "127.0.0.1", tmp_path / "ros")
    master.set_params({"transport": transport, "record_path": str(tmp_path / "rx.csv"),
                       "subscriber_queue_size": sink_queue, "publisher_queue_size": 10,
                       "process_time": process_time}, "/sink")
    master.set_params({"message": "loop_sample", "size_bytes": size_bytes, "period": period, "count": SENT,
                       "start_delay": 0.5, "publisher_queue_size": source_queue, "subscriber_queue_size": 10,
                       "record_path": str(tmp_path / "tx.csv")}, "/source")
    sink = master.group.start("sink", [str(paths.node_binary("flow_sink")), "__name:=sink", "flow:=/flows/q"], env=env)
    source = master.group.start("source", [str(paths.node_binary("flow_source")), "__name:=source",
                                           "flow:=/flows/q"], env=env)
    assert source.popen.wait(timeout=60) == 0, source.log_path.read_text()[-2000:]
    # The sink works through what it queued (process_time per message), then stops on SIGINT.
    assert master.group.stop(sink, grace=10) == 0, sink.log_path.read_text()[-2000:]
    summary = json.loads((tmp_path / "rx.receive.json").read_text())
    return read_events(tmp_path / "tx.csv"), read_events(tmp_path / "rx.csv"), summary


def test_deep_subscriber_queue_loses_nothing(roscore, tmp_path):
    tx, rx, s = run_flow(roscore, tmp_path, sink_queue=1000, process_time=0.004)
    assert len(tx) == SENT and len(rx) == SENT
    assert (s["received"], s["missing_seqs"], s["subscriber_queue_drops"]) == (SENT, 0, 0)
    assert (s["first_seq"], s["highest_seq"], s["subscriber_queue_size"]) == (0, SENT - 1, 1000)
    assert s["wire_messages"] == SENT
    # With nothing discarded, the backlog becomes latency: the last message waited behind
    # the ones before it (about SENT x (process_time - period)).
    delays = (rx.recv_ns - rx.stamp_ns) / 1e6
    assert delays.max() > 200, delays.max()


def test_short_subscriber_queue_drops_are_counted(roscore, tmp_path):
    tx, rx, s = run_flow(roscore, tmp_path, sink_queue=1, process_time=0.004)
    assert len(tx) == SENT
    lost = len(tx) - len(rx)
    assert lost > SENT / 4, f"a 1-deep queue behind a 4 ms callback at 500 Hz should drop many, lost {lost}"
    # Every missing seq is one the subscriber queue discarded: nothing was lost before it.
    assert s["received"] == len(rx)
    assert s["missing_seqs"] == lost
    assert s["subscriber_queue_drops"] == lost
    assert s["lost_before_subscriber"] == 0
    assert s["wire_messages"] == SENT
    assert set(rx.seq.tolist()) | set(range(SENT)) == set(range(SENT))
    assert SENT - 1 in rx.seq.tolist()  # roscpp discards the oldest: the newest always gets through


def test_short_publisher_queue_losses_are_inferred_at_the_receiver(roscore, tmp_path):
    """Big messages published faster than loopback TCP takes them: the publisher's 1-deep
    outbox discards; the receiver sees the gaps with no subscriber-queue drop, so on TCPROS
    they are the publisher's (roscpp counts them nowhere)."""
    tx, rx, s = run_flow(roscore, tmp_path, sink_queue=1000, source_queue=1, size_bytes=4_000_000, period=0.0005)
    lost = len(tx) - len(rx)
    assert lost > 0, "the publisher queue should have discarded some 4 MB messages"
    assert s["subscriber_queue_drops"] == 0
    assert s["missing_seqs"] == lost == s["lost_before_subscriber"]
    assert s["wire_messages"] == len(rx)


@pytest.mark.parametrize("node", ["rlc_plant", "loop_controller", "flow_source", "flow_sink"])
@pytest.mark.parametrize("param,value,message", [
    ("publisher_queue_size", 0, "publisher_queue_size = 0 is invalid: expected an integer from 1 to 1000000"),
    ("subscriber_queue_size", -5, "subscriber_queue_size = -5 is invalid"),
    ("subscriber_queue_size", "ten", "subscriber_queue_size must be an integer"),
    ("publisher_queue_size", 2.5, "publisher_queue_size must be an integer"),
])
def test_bad_queue_depth_refused(roscore, tmp_path, node, param, value, message):
    roscore.set_params(rlc_parameters(validate_experiment({}, name="t").loop), "/rlc")
    roscore.set_params({param: value, "frames_dir": str(tmp_path)}, "/n")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    proc = roscore.group.start("n", [str(paths.node_binary(node)), "__name:=n"], env=env)
    assert proc.popen.wait(timeout=20) == 2
    assert f"/n/{message}" in proc.log_path.read_text()
    forget_node(roscore, "/n")   # it exited without unregistering: the master stays clean


def test_loop_nodes_use_and_report_their_queues(roscore, tmp_path):
    """The plant and controller take their queue depths and write what they received of u and y."""
    loop = validate_experiment({}, name="t").loop
    roscore.set_params(rlc_parameters(loop), "/rlc")
    queues = {"publisher_queue_size": 1000, "subscriber_queue_size": 500}
    roscore.set_params({"record_path": str(tmp_path / "controller.csv"), **queues}, "/controller")
    roscore.set_params({"samples": 100, "record_path": str(tmp_path / "plant.csv"), **queues}, "/plant")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    ctl = roscore.group.start("controller", [str(paths.node_binary("loop_controller")), "__name:=controller"], env=env)
    plant = roscore.group.start("plant", [str(paths.node_binary("rlc_plant")), "__name:=plant"], env=env)
    assert plant.popen.wait(timeout=60) == 0
    assert roscore.group.stop(ctl) == 0
    assert "queues 1000 (y) / 500 (u)" in plant.log_path.read_text()
    assert "queues 1000 (u) / 500 (y)" in ctl.log_path.read_text()
    u = json.loads((tmp_path / "plant.receive.json").read_text())
    y = json.loads((tmp_path / "controller.receive.json").read_text())
    assert (y["topic"], y["received"], y["missing_seqs"], y["subscriber_queue_size"]) == ("/y", 100, 0, 500)
    assert (u["topic"], u["subscriber_queue_size"], u["subscriber_queue_drops"]) == ("/u", 500, 0)
    plant_rx = read_events(tmp_path / "plant.csv").select("rx", "u")
    assert u["received"] == len(plant_rx) and u["missing_seqs"] == 0
