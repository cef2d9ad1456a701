"""The C++ loop nodes on a real roscore: transports really negotiated, bad parameters
refused, records readable after a kill."""
from __future__ import annotations

import signal

import pytest

from netloop import paths, rosenv
from netloop.analysis.records import read_events
from netloop.connections import node_connections
from netloop.master import MasterError, wait_for
from netloop.experiment import validate_experiment
from netloop.loops.rlc import rlc_parameters

pytestmark = pytest.mark.integration

LOOP = validate_experiment({}, name="t").loop


def start_loop(master, tmp_path, transport, samples=400):
    master.set_params(rlc_parameters(LOOP), "/rlc")
    master.set_params({"transport": transport, "record_path": str(tmp_path / "controller.csv")}, "/controller")
    master.set_params({"transport": transport, "samples": samples, "record_path": str(tmp_path / "plant.csv")},
                      "/plant")
    env = rosenv.node_env(master.uri, "127.0.0.1", tmp_path / "ros")
    ctl = master.group.start("controller", [str(paths.node_binary("loop_controller")), "__name:=controller"], env=env)
    plant = master.group.start("plant", [str(paths.node_binary("rlc_plant")), "__name:=plant"], env=env)
    return plant, ctl


def outbound(master, node, topic):
    """The node's outgoing connection on topic, or None while the node is not up yet."""
    try:
        conns = node_connections(master, node)
    except MasterError:
        return None
    conns = [c for c in conns if c["topic"] == topic and c["direction"] == "o"]
    return conns[0] if conns else None


@pytest.mark.parametrize("transport,ros_name,nodelay", [
    ("tcp", "TCPROS", False), ("tcp_nodelay", "TCPROS", True), ("udp", "UDPROS", None)])
def test_requested_transport_is_negotiated(roscore, tmp_path, transport, ros_name, nodelay):
    plant, ctl = start_loop(roscore, tmp_path, transport)
    assert wait_for(lambda: outbound(roscore, "/plant", "/y") and outbound(roscore, "/controller", "/u"), 15)
    for publisher, topic, subscriber in (("/plant", "/y", "/controller"), ("/controller", "/u", "/plant")):
        conn = outbound(roscore, publisher, topic)
        assert conn["transport"] == ros_name, f"{topic}: {conn}"
        assert conn["destination"] == subscriber
        # TCP_NODELAY read from the sending socket itself (the publisher sets it on request).
        assert conn["tcp_nodelay"] is nodelay, f"{topic}: {conn}"
    # The subscriber's view (rosnode info) agrees on the transport.
    def inbound():
        return [c for c in node_connections(roscore, "/plant") if c["topic"] == "/u" and c["direction"] == "i"]
    assert wait_for(inbound, 10) and inbound()[0]["transport"] == ros_name


@pytest.mark.parametrize("param,value,message", [
    ("/rlc/R", 0.0, "/rlc/R = 0 is invalid: expected a finite number > 0"),
    ("/rlc/C", -0.1, "/rlc/C = -0.1 is invalid"),
    ("/rlc/period", float("nan"), "/rlc/period = nan is invalid"),
    ("/plant/transport", "quic", "unknown transport 'quic'; allowed: tcp, tcp_nodelay, udp"),
    ("/rlc/initial_state", [1.0], "must be a list of two finite numbers"),
])
def test_plant_refuses_bad_parameters(roscore, tmp_path, param, value, message):
    roscore.set_params(rlc_parameters(LOOP), "/rlc")
    roscore.set_params({param.rsplit("/", 1)[1]: value}, param.rsplit("/", 1)[0])
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    plant = roscore.group.start("plant", [str(paths.node_binary("rlc_plant")), "__name:=plant"], env=env)
    assert plant.popen.wait(timeout=20) == 2
    assert message in plant.log_path.read_text()


def test_controller_refuses_bad_transport(roscore, tmp_path):
    roscore.set_params({"transport": "carrier_pigeon"}, "/controller")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    ctl = roscore.group.start("controller", [str(paths.node_binary("loop_controller")), "__name:=controller"], env=env)
    assert ctl.popen.wait(timeout=20) == 2
    assert "unknown transport 'carrier_pigeon'" in ctl.log_path.read_text()


def test_plant_gives_up_without_controller(roscore, tmp_path):
    roscore.set_params({"connect_timeout": 1.0}, "/plant")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    plant = roscore.group.start("plant", [str(paths.node_binary("rlc_plant")), "__name:=plant"], env=env)
    assert plant.popen.wait(timeout=20) == 3
    assert "no controller connected within 1.0 s" in plant.log_path.read_text()


def test_killed_nodes_leave_readable_records(roscore, tmp_path):
    plant, ctl = start_loop(roscore, tmp_path, "tcp_nodelay", samples=100000)
    assert wait_for(lambda: (tmp_path / "plant.csv").exists() and
                    len((tmp_path / "plant.csv").read_text().splitlines()) > 60, 20)
    plant.popen.send_signal(signal.SIGKILL)
    ctl.popen.send_signal(signal.SIGKILL)
    plant.popen.wait(5)
    ctl.popen.wait(5)
    p, c = read_events(tmp_path / "plant.csv"), read_events(tmp_path / "controller.csv")
    y = p.select("tx", "y")
    assert len(y) >= 30 and y.seq.tolist() == list(range(len(y)))
    assert len(c.select("rx", "y")) >= len(y) - 2
    # every u the plant applied was answered to a sample it had sent
    u = p.select("rx", "u")
    assert len(u) >= 25 and set(u.answer_seq.tolist()) <= set(y.seq.tolist())
