"""A run's phases driven one at a time (netloop.run.Run), without a whole run: real roscore
and real flow nodes on loopback; and the declared hosts interface (netloop.hosts.Hosts)."""
from __future__ import annotations

import inspect

import pytest

from netloop.cpulimit import LimitedHosts
from netloop.experiment import expand, for_cell, validate_experiment
from netloop.hosts import Hosts
from netloop.machines import RealHosts
from netloop.processes import CORE, NODE, SENDER
from netloop.run import Run
from netloop.testbed import Testbed

pytestmark = pytest.mark.integration


def _run(tmp_path, flows) -> Run:
    cfg = validate_experiment({"transport": "tcp_nodelay", "loop": {"type": "none"}, "flows": flows}, name="phases")
    return Run(for_cell(cfg, expand(cfg)[0]), tmp_path / "runs" / "tcp_nodelay-r0", log=lambda _: None)


def test_hosts_masters_flows_and_connections_of_a_run_on_their_own(tmp_path):
    """Hosts, masters, transport, flows and connections, then teardown: the flow's subscriber
    connected with the transport asked for, the roles each process was started with, and
    nothing left running."""
    run = _run(tmp_path, [{"name": "probe", "kind": "generic", "size_bytes": 64, "period": 0.05, "count": 100}])
    with run.stack:
        run.bring_up_hosts()
        assert isinstance(run.hosts, LimitedHosts) and run.hosts.hosts == ["robot", "operator"]
        run.start_masters()
        assert {m.uri for m in run.masters.values()} == {run.masters["operator"].uri}   # one master
        assert [p.role for p in run.group.processes] == [CORE, CORE]                      # rosmaster, rosout
        run.start_transport()
        run.start_flows()
        roles = {p.name: p.role for p in run.group.processes}
        assert roles["flow_probe_source"] == SENDER and roles["flow_probe_sink"] == NODE, roles
        run.wait_for_connections()
        assert run.meta.data["negotiated_transport"] == {"/flows/probe": "TCPROS+NODELAY"}, run.meta.data
        assert "connected" in run.phases.relative()
        procs = list(run.group.processes)
    assert all(p.poll() is not None for p in procs)      # the stack stopped every process


def test_each_hosts_class_implements_the_declared_interface_itself():
    """Testbed, RealHosts and LimitedHosts subclass Hosts and define every method of it
    (nothing reached through __getattr__)."""
    declared = {name for name, member in vars(Hosts).items() if getattr(member, "__isabstractmethod__", False)}
    assert {"hosts", "command", "read_text", "interfaces", "records_problems", "up", "down"} <= declared
    for cls in (Testbed, RealHosts, LimitedHosts):
        assert issubclass(cls, Hosts) and not inspect.isabstract(cls), cls
        assert "__getattr__" not in vars(cls), cls
        assert not declared - set(vars(cls)), (cls, declared - set(vars(cls)))
