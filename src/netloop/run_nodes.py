"""Starting a run's ROS processes on its hosts: the masters, any node (:class:`Nodes`, what
the transports and the loop kinds start theirs with) and the perturbing flows."""
from __future__ import annotations

import xmlrpc.client
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import paths, rosenv
from .flows import echo_topic, flow_connections, flow_datatype, flow_processes, message_bytes, topic_of
from .hosts import Hosts
from .loops import get_loop_kind
from .master import MasterError, RosMaster
from .netns import NetnsCaller
from .model import Experiment
from .processes import NODE, SENDER, ManagedProcess, ProcessGroup
from .transports import CrossingTopic

#: Where the master runs (the operator side, as is common).
MASTER_HOST = "operator"


class Nodes:
    """Starts ROS processes on the run's hosts, each talking to its host's master (one master
    for all hosts, or one per host for multi-master transports); what a loop kind gets as
    :class:`netloop.loops.base.NodeStarter`."""

    def __init__(self, hosts: Hosts, group: ProcessGroup, masters: dict[str, RosMaster], ros_log: Path):
        self.hosts, self.group, self.masters, self.ros_log = hosts, group, masters, ros_log
        self.host_of: dict[str, str] = {}   # "/node" -> host
        self.started: list[ManagedProcess] = []
        self._callers: dict[str, NetnsCaller] = {}

    def master_of_node(self, node: str) -> RosMaster:
        return self.masters[self.host_of[node]]

    def caller_of_node(self, node: str) -> NetnsCaller:
        """Calls made from the node's own host (its namespace; on real machines, from here):
        asking a node about its connections then does not cross the emulated link."""
        host = self.host_of[node]
        if host not in self._callers:
            self._callers[host] = NetnsCaller(self.hosts.netns(host))
        return self._callers[host]

    def close(self) -> None:
        """End the callers' threads."""
        for caller in self._callers.values():
            caller.close()

    def set_params(self, params: dict[str, Any], namespace: str) -> None:
        """Set parameters on every master (each host's nodes read their own master)."""
        for master in {id(m): m for m in self.masters.values()}.values():
            master.set_params(params, namespace)

    def start(self, name: str, host: str, argv: list[str], params: dict[str, Any] | None = None,
              role: str = NODE) -> ManagedProcess:
        """Start node ``name`` on ``host`` with its private ``params``; ``role``
        (:data:`netloop.processes.ROLES`) says when the run stops it."""
        master = self.masters[host]
        if params:
            master.set_params(self.hosts.translate(host, params), "/" + name)
        env = rosenv.node_env(master.uri, self.hosts.address(host), self.ros_log)
        argv, env, remote = self.hosts.command(host, argv, env)
        proc = self.group.start(name, argv, env=env, host=host, remote=remote, role=role)
        self.host_of["/" + name] = host
        self.started.append(proc)
        return proc

    def uris(self, connections: list[tuple[str, str, str]]) -> dict[str, str]:
        """Where each node of ``connections`` listens (its host's address shows where it was placed)."""
        out = {}
        for node in sorted({n for _, pub, sub in connections for n in (pub, sub)}):
            try:
                out[node] = self.master_of_node(node).lookup_node(node)
            except (MasterError, OSError, xmlrpc.client.Error):  # gone already
                pass
        return out


def start_masters(hosts: Hosts, group: ProcessGroup, multi_master: bool, stack: ExitStack) -> dict[str, RosMaster]:
    """One master on the operator host, or one on every host for a multi-master transport;
    returns the master of each host. Their XML-RPC callers close with ``stack``."""
    on = hosts.hosts if multi_master else [MASTER_HOST]
    masters = []
    for host in on:
        master = RosMaster(group, rosenv.base_env(), address=hosts.address(host), netns=hosts.netns(host),
                           name=f"master_{host}" if multi_master else "master",
                           command=lambda argv, env, host=host: hosts.command(host, argv, env))
        stack.callback(master.rpc_caller.close)
        masters.append(master)
    started = dict(zip(on, RosMaster.start_together(masters)))
    return started if multi_master else {h: started[MASTER_HOST] for h in hosts.hosts}


def crossing_topics(exp: Experiment) -> list[CrossingTopic]:
    """The topics whose publisher and subscriber are on different hosts: the loop kind's,
    then every flow's (one per receiving host)."""
    out = get_loop_kind(exp.loop.type).crossing_topics(exp)
    for flow in exp.flow_instances:
        out += [CrossingTopic(topic_of(flow), flow_datatype(flow), flow.from_, dest, message_bytes(flow), flow.period)
                for dest in flow.to]
        if flow.kind == "echo":
            out.append(CrossingTopic(echo_topic(flow), flow_datatype(flow), flow.to[0], flow.from_,
                                     message_bytes(flow), flow.period))
    return out


def topic_qos(exp: Experiment) -> dict[str, dict[str, Any]]:
    """Per crossing topic the experiment's QoS overrides (``loop.qos`` for the loop's topics,
    ``flows[].qos`` for a flow's), for ROS 2 transports."""
    out: dict[str, dict[str, Any]] = {}
    for t in get_loop_kind(exp.loop.type).crossing_topics(exp):
        out[t.topic] = {k: v for k, v in exp.loop.qos.items() if v is not None}
    for flow in exp.flow_instances:
        for topic in (topic_of(flow), echo_topic(flow)):
            out[topic] = {k: v for k, v in flow.qos.items() if v is not None}
    return out


@dataclass
class StartedFlows:
    """What :func:`start_flows` started: the processes that end a flow by themselves (sources
    with a count, bag players), (topic, publisher, subscriber) of every subscriber started, and
    the late subscribers (``subscriber_delay``) as (delay, process description), soonest first,
    to start once the run is connected."""

    finite: list[ManagedProcess] = field(default_factory=list)
    connections: list[tuple[str, str, str]] = field(default_factory=list)
    late: list[tuple[float, dict[str, Any]]] = field(default_factory=list)


def is_sender(proc: dict[str, Any]) -> bool:
    """A flow's process that only sends (its source, a bag player): it publishes a topic of the
    flow and takes none (a relay or an echoer takes one; a sink publishes none)."""
    return bool(proc["publishes"]) and not proc["subscribes"]


def is_sink(proc: dict[str, Any]) -> bool:
    """A flow's process that only receives."""
    return bool(proc["subscribes"]) and not proc["publishes"]


def start_flows(nodes: Nodes, exp: Experiment, transport, run_dir: Path,
                after_each: Callable[[list[tuple[str, str, str]]], None] | None = None) -> StartedFlows:
    """Every perturbing flow, its subscribers first; each subscriber's ROS transport is the
    flow's own or the run transport's choice. Every subscriber of a flow after its first waits
    ``subscriber_delay`` (it is returned in ``late``, not started). ``after_each(connections)``
    is called after each flow has started, with the connections of the flows started so far."""
    out = StartedFlows()
    for flow in exp.flow_instances:
        if flow.transport != "same":
            procs = flow_processes(flow, flow.transport, run_dir, paths.node_binary, relayed=transport.relays)
        else:
            def endpoint(topic: str, role: str, node: str, host: str, flow=flow) -> dict[str, Any]:
                return transport.endpoint_params(topic, message_bytes(flow), role, node=node, host=host, qos=flow.qos)
            procs = flow_processes(flow, "", run_dir, paths.node_binary, endpoint, relayed=transport.relays)
        delayed = [p for p in procs if is_sink(p)][1:] if flow.subscriber_delay > 0 else []
        for p in procs:
            if p in delayed:
                out.late.append((flow.subscriber_delay, p))
                continue
            proc = nodes.start(p["name"], p["host"], p["argv"], p["params"], role=SENDER if is_sender(p) else NODE)
            if is_sender(p) and (flow.count or flow.kind == "lidar_bag"):   # a bag player ends with its bag
                out.finite.append(proc)
        out.connections += flow_connections([p for p in procs if p not in delayed])
        if after_each is not None:
            after_each(out.connections)
    out.late.sort(key=lambda item: item[0])
    return out
