"""Running experiments: one run per (transport, repetition) cell, each in its own run directory.

A run brings up the testbed (hosts and link), starts a ROS master on the operator host (one
per host for relay transports), starts the transport's relays, the flows and the loop (its
kind, :mod:`netloop.loops`, places its nodes), waits for the loop or the flows to end, and
stops everything it started, on every exit path. What the nodes record lands in the run directory as it
happens (see :mod:`netloop.rundir`).
"""
from __future__ import annotations

import datetime as _dt
import json
import shlex
import signal
import time
import xmlrpc.client
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from . import paths, rosenv
from .connections import describe, node_connections
from .cpulimit import CpuLimits, LimitedHosts, cgroup_root
from .experiment import RunSpec, estimated_run_seconds, expand, for_cell, sweep_combinations
from .faults import FaultSchedule
from .flows import echo_topic, flow_connections, flow_datatype, flow_processes, message_bytes, topic_of
from .loops import LoopStart, get_loop_kind
from .machines import SSH_LOST, RealHosts, load_machines
from .master import MasterError, RosMaster
from .model import Experiment
from .processes import ProcessGroup, log_tail
from .rundir import (RunMetadata, cpu_steal_seconds, create_run_dir, invalid_attempts, read_metadata,
                     set_aside, write_json_atomic)
from .schema import ConfigError, to_dict
from .testbed import Testbed, load_profile
from .transports import CrossingTopic, TransportContext, get_transport

#: Where the master runs (the operator side, as is common).
MASTER_HOST = "operator"


class RunFailed(RuntimeError):
    pass


class Interrupted(BaseException):
    """Raised by SIGTERM/SIGINT handlers so that every cleanup runs."""


def install_signal_handlers() -> None:
    def handler(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def negotiated_transports(hosts: "_Hosts", connections: list[tuple[str, str, str]],
                          seen: dict[tuple[str, str, str], str] | None = None) -> dict[str, str] | None:
    """For each (topic, publisher, subscriber): the connection as it really is, keyed by the
    topic (``topic -> /subscriber`` where a topic has several subscribers); None until every
    one is connected. With one master, the publisher's connection to the subscriber
    ('TCPROS', 'TCPROS+NODELAY' or 'UDPROS', TCP_NODELAY read from the sending socket); across
    masters (relay transports), the subscriber's local connection, marked 'via relay'.
    ``seen`` (kept by the caller between polls) holds the connections found so far, so each
    poll asks only about the others (with many robots every question crosses the link)."""
    seen = {} if seen is None else seen
    for connection in connections:
        if connection in seen:
            continue
        topic, publisher, subscriber = connection
        try:
            pub_master, sub_master = hosts.master_of_node(publisher), hosts.master_of_node(subscriber)
            if pub_master is sub_master:
                conns = [c for c in node_connections(pub_master, publisher)
                         if c["topic"] == topic and c["direction"] == "o" and c["destination"] == subscriber
                         and c["connected"]]
                suffix = ""
            else:
                conns = [c for c in node_connections(sub_master, subscriber)
                         if c["topic"] == topic and c["direction"] == "i" and c["connected"]]
                suffix = " via relay"
        except (MasterError, OSError, xmlrpc.client.Error):  # a node not registered yet, or gone
            continue
        if conns:
            seen[connection] = describe(conns[0]) + suffix
    if any(c not in seen for c in connections):
        return None
    several = {t for t, _, _ in connections if sum(1 for c in connections if c[0] == t) > 1}
    return {f"{topic} -> {subscriber}" if topic in several else topic: seen[(topic, publisher, subscriber)]
            for topic, publisher, subscriber in connections}


class _Hosts:
    """Starts ROS processes on the testbed's hosts, each talking to its host's master (one
    master for all hosts, or one per host for multi-master transports)."""

    def __init__(self, testbed: Testbed, group: ProcessGroup, masters: dict[str, RosMaster], ros_log: Path):
        self.testbed, self.group, self.masters, self.ros_log = testbed, group, masters, ros_log
        self.host_of: dict[str, str] = {}   # "/node" -> host
        self.started: list = []

    def master_of_node(self, node: str) -> RosMaster:
        return self.masters[self.host_of[node]]

    def set_params(self, params: dict[str, Any], namespace: str) -> None:
        """Set parameters on every master (each host's nodes read their own master)."""
        for master in {id(m): m for m in self.masters.values()}.values():
            master.set_params(params, namespace)

    def start(self, name: str, host: str, argv: list[str], params: dict[str, Any] | None = None):
        master = self.masters[host]
        if params:
            master.set_params(self.testbed.translate(host, params), "/" + name)
        env = rosenv.node_env(master.uri, self.testbed.address(host), self.ros_log)
        argv, env, remote = self.testbed.command(host, argv, env)
        proc = self.group.start(name, argv, env=env, host=host, remote=remote)
        self.host_of["/" + name] = host
        self.started.append(proc)
        return proc


def _start_masters(testbed: Testbed, group: ProcessGroup, transport, stack: ExitStack) -> dict[str, RosMaster]:
    """One master on the operator host, or one on every host for a multi-master transport."""
    on = testbed.hosts if transport.multi_master else [MASTER_HOST]
    started = {}
    for host in on:
        master = RosMaster(group, rosenv.base_env(), address=testbed.address(host), netns=testbed.netns(host),
                           name=f"master_{host}" if transport.multi_master else "master",
                           command=lambda argv, env, host=host: testbed.command(host, argv, env))
        stack.callback(master.rpc_caller.close)
        started[host] = master.start()
    return started if transport.multi_master else {h: started[MASTER_HOST] for h in testbed.hosts}


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


def _start_flows(hosts: _Hosts, exp: Experiment, transport,
                 run_dir: Path) -> tuple[list, list[tuple[str, str, str]], list[tuple[float, dict[str, Any]]]]:
    """Every perturbing flow (sinks first); returns the processes that end a flow by themselves
    (sources with a count, bag players), (topic, publisher, subscriber) for every subscriber
    started, to check, and the late subscribers (``subscriber_delay``: every subscriber of a flow
    after its first) as (delay, process) to start once the run is connected."""
    finite, connections, late = [], [], []
    for flow in exp.flow_instances:
        if flow.transport != "same":
            procs = flow_processes(flow, flow.transport, run_dir, paths.node_binary)
        else:
            def endpoint(topic: str, role: str, node: str, host: str, flow=flow) -> dict[str, Any]:
                return transport.endpoint_params(topic, message_bytes(flow), role, node=node, host=host, qos=flow.qos)
            procs = flow_processes(flow, "", run_dir, paths.node_binary, endpoint)
        delayed = []
        if flow.subscriber_delay > 0:
            sinks = [p for p in procs if p["name"].startswith(f"flow_{flow.name}_sink")]
            delayed = sinks[1:]
        for p in procs:
            if p in delayed:
                late.append((flow.subscriber_delay, p))
                continue
            proc = hosts.start(p["name"], p["host"], p["argv"], p["params"])
            if p["name"].endswith(("_source", "_play")) and (flow.count or p["name"].endswith("_play")):
                finite.append(proc)
        connections += flow_connections([p for p in procs if p not in delayed])
    return finite, connections, late


def _node_uris(hosts: _Hosts, connections: list[tuple[str, str, str]]) -> dict[str, str]:
    """Where each node of the run listens (its host's address shows where it was placed)."""
    out = {}
    for node in sorted({n for _, pub, sub in connections for n in (pub, sub)}):
        try:
            out[node] = hosts.master_of_node(node).lookup_node(node)
        except (MasterError, OSError, xmlrpc.client.Error):  # gone already
            pass
    return out


def _check_alive(procs) -> None:
    for proc in procs:
        status = proc.poll()
        if status is not None and status != 0:
            raise RunFailed(f"{_ended(proc, status)}:\n{log_tail(proc.log_path)}")


def _ended(proc, status: int) -> str:
    if proc.remote and status == SSH_LOST:
        return (f"{proc.name} on {proc.host}: the SSH connection was lost (ssh exit status {SSH_LOST}); "
                f"its machine stopped the node")
    return f"{proc.name} exited with status {status}"


def check_machines(exp: Experiment, log: Callable[[str], None] = print) -> None:
    """The experiment's real machines checked (RealHostsError naming every problem)."""
    RealHosts(load_machines(exp.machines), Path("check"), log, _middlewares(exp)).check()


def _middlewares(exp: Experiment) -> list[str]:
    """The ROS 2 middlewares the experiment's transports need on every machine."""
    from .transports.ros2 import MIDDLEWARES  # noqa: PLC0415
    return [t for t in exp.transport if t in MIDDLEWARES]


def hosts_for(exp: Experiment, link: dict, run_dir: Path, log: Callable[[str], None]):
    """The run's hosts: real machines when the experiment names a hosts file, else the
    testbed (namespaces joined by the emulated link)."""
    if exp.machines:
        return RealHosts(load_machines(exp.machines), run_dir, log, _middlewares(exp))
    return Testbed(link, log_dir=run_dir / "logs")


def _split_native(transport, connections: list[tuple[str, str, str]]):
    """(ROS 1 connections, native connections): a connection whose publisher and subscriber
    both speak a ROS 2 middleware (``deployment: native``) has no ROS 1 connection to read."""
    native = getattr(transport, "native_nodes", {}) or {}
    ros1 = [c for c in connections if not (c[1] in native and c[2] in native)]
    return ros1, [c for c in connections if c not in ros1]


def _native_matched(transport, connections: list[tuple[str, str, str]], hosts=None) -> list[str]:
    """The nodes of native connections whose status file does not say matched yet (on a real
    machine the file is read there, over SSH, until it does)."""
    waiting = []
    for node in sorted({n for _, pub, sub in connections for n in (pub, sub)}):
        entry = transport.native_nodes[node]
        if entry.get("matched"):
            continue
        status = _read_status(hosts, entry["host"], entry["status_path"])
        if status and status.get("matched_ns"):
            entry["matched"] = True
        else:
            waiting.append(node)
    return waiting


def _read_status(hosts, host: str, path: str) -> dict | None:
    from .transports.ros2 import read_status  # noqa: PLC0415
    remote = getattr(hosts, "is_remote", None)
    if hosts is None or remote is None or not remote(host):
        return read_status(Path(path))
    try:
        text = hosts._ssh(host, f"cat {shlex.quote(hosts.translate(host, path))} 2>/dev/null || true")
        return json.loads(text) if text.strip() else None
    except (OSError, ValueError, RuntimeError):
        return None


def _native_negotiated(transport, connections: list[tuple[str, str, str]]) -> dict[str, str]:
    several = {t for t, _, _ in connections if sum(1 for c in connections if c[0] == t) > 1}
    return {f"{topic} -> {sub}" if topic in several else topic: transport.describe_topic(topic)
            for topic, _, sub in connections}


def _ros2_record(transport) -> dict[str, Any] | None:
    """metadata.json's ``ros2``: the middleware, the deployment, the QoS per topic, and per node
    (native nodes and bridges) its discovery time (matched - started), first sample per topic
    (first arrival - started) and the middleware's wire statistics at exit."""
    if not hasattr(transport, "middleware") or transport.ctx is None:
        return None
    from .transports.ros2 import STATUS_SUFFIX, read_status  # noqa: PLC0415
    nodes: dict[str, Any] = {}
    files = {n[1:]: Path(e["status_path"]) for n, e in transport.native_nodes.items()}
    for p in transport.processes:
        if "status_path" in p["params"]:
            files[p["name"]] = Path(p["params"]["status_path"])
    for node, path in sorted(files.items()):
        st = read_status(path)
        if not st:
            nodes[node] = {"status": "no status file"}
            continue
        start = st.get("started_ns")
        one: dict[str, Any] = {"started_ns": start, "matched": bool(st.get("matched_ns")),
                               "endpoints": st.get("endpoints", {})}
        if start and st.get("matched_ns"):
            one["discovery_s"] = round((st["matched_ns"] - start) / 1e9, 6)
        firsts = {t: ns for t, ns in (st.get("first_rx_ns") or {}).items() if ns and ns > 0}
        if start and firsts:
            one["first_sample_s"] = {t: round((ns - start) / 1e9, 6) for t, ns in firsts.items()}
        for k in ("received", "wire", "final"):
            if k in st:
                one[k] = st[k]
        nodes[node] = one
    discovery = [n["discovery_s"] for n in nodes.values() if "discovery_s" in n]
    return {"middleware": transport.middleware, "deployment": transport.deployment,
            "qos": {t: q.as_dict() for t, q in transport.topic_qos.items()},
            "config_files": transport.metadata().get("config_files", {}), "nodes": nodes,
            "discovery_s_max": max(discovery) if discovery else None, "status_suffix": STATUS_SUFFIX}


def _interfaces(testbed) -> tuple[dict[str, str], dict[str, int]]:
    """Per host its link interface and MTU, where known (namespaces: net0; loopback: lo; real
    machines: the hosts file's interface)."""
    hosts = testbed.hosts
    profile = getattr(testbed, "profile", None) or {}
    if getattr(testbed, "is_loopback", False):
        return {h: "lo" for h in hosts}, {h: 65536 for h in hosts}
    machines = getattr(testbed, "machines", None)
    if machines is not None:
        iface = {h: m.interface for h, m in machines.hosts.items() if getattr(m, "interface", None)}
        return iface, {}
    return {h: "net0" for h in hosts}, {h: int(profile.get("mtu", 1500)) for h in hosts}


class RunPhases:
    """When a run reached each of its phases (time.time()), so that what happened at a moment
    (an emulator stall, say) can be placed in the run: ``nodes_started`` (flows and loop
    launched), ``connected`` (every subscriber connected), ``ended`` (the loop or the flows
    ended), ``senders_stopped`` (the flow sources stopped, messages in flight delivered),
    ``nodes_stopped``."""

    def __init__(self, start_unix: float):
        self.start = start_unix
        self.times: dict[str, float] = {}

    def mark(self, name: str) -> None:
        self.times[name] = time.time()

    def __getitem__(self, name: str) -> float:
        return self.times[name]

    def at(self, t: float) -> str:
        """The phase under way at time ``t`` ('setup' before the first)."""
        return max(((v, k) for k, v in self.times.items() if v <= t), default=(0.0, "setup"))[1]

    def label(self, stalls: list[dict]) -> None:
        """Add to each stall of a health record when it began in the run (s) and in which phase."""
        for st in stalls:
            st["at_s"] = round(st["began"] - self.start, 3)
            st["phase"] = self.at(st["began"])

    def relative(self) -> dict[str, float]:
        return {k: round(v - self.start, 3) for k, v in self.times.items()}


def run_cell(spec: RunSpec, run_dir: Path, log: Callable[[str], None] = print) -> dict:
    """One run (the loop and/or the flows) of one cell; returns the run's metadata. Failures
    are recorded in the run directory, not raised."""
    run_dir = create_run_dir(run_dir)
    exp = spec.experiment
    kind = get_loop_kind(exp.loop.type)
    transport = get_transport(spec.transport)
    link = load_profile(exp.link, exp.link_params)
    testbed = None
    meta = RunMetadata(run_dir, run_id=run_dir.name, experiment=spec.metadata(), transport=transport.metadata(),
                       link=link, loop=kind.metadata(exp))
    status, error = "failed", None
    exit_codes: dict[str, Any] = {}
    steal_before = cpu_steal_seconds()
    phases = RunPhases(meta.data["start_unix"])
    try:
        with ExitStack() as stack:
            testbed = hosts_for(exp, link, run_dir, log)
            if hasattr(transport, "middleware"):   # ROS 2: its record, last (real machines: records home)
                stack.callback(lambda: meta.update(ros2=_ros2_record(transport)) if transport.ctx else None)
            if exp.machines:   # after down(): the clocks after the run, the records home
                stack.callback(lambda: meta.update(link=testbed.metadata()))
            stack.enter_context(testbed)
            meta.update(link=testbed.metadata())
            limits = stack.enter_context(CpuLimits(exp.hosts, run_dir.name))
            stack.callback(lambda: meta.update(host_cpu_limits=limits.stats()) if limits.paths else None)
            testbed = LimitedHosts(testbed, limits)
            group = stack.enter_context(ProcessGroup(run_dir / "logs"))
            masters = _start_masters(testbed, group, transport, stack)
            hosts = _Hosts(testbed, group, masters, run_dir / "logs" / "ros")
            interfaces, mtus = _interfaces(testbed)
            transport.start(TransportContext(
                run_dir, {h: testbed.exec_prefix(h) for h in testbed.hosts},
                {h: testbed.address(h) for h in testbed.hosts}, topics=crossing_topics(exp),
                masters={h: m.uri for h, m in masters.items()}, start=hosts.start,
                options=exp.transport_options.get(transport.name, {}),
                link_mbit=testbed.link_mbit, interface=interfaces, mtu=mtus, topic_qos=topic_qos(exp)))

            stack.callback(transport.stop)
            meta.update(transport=transport.metadata())  # what actually ran (implementation, stats files)

            nodes_started = time.monotonic()
            phases.mark("nodes_started")
            finite, connections, late = _start_flows(hosts, exp, transport, run_dir)
            late.sort(key=lambda item: item[0])
            loop = kind.start(LoopStart(hosts, exp, transport, run_dir, spec.repetition))
            # the processes whose end ends the run (the plant(s), the teleop trial)
            endings = [p for p in (loop.ending if isinstance(loop.ending, list) else [loop.ending]) if p is not None]
            connections += [(topic, pub, sub) for topic, (pub, sub) in loop.connections.items()]
            watched = [p for p in hosts.started if p not in endings]

            # ROS 2 native: no ROS 1 connection to read; each node's status file says when its
            # middleware endpoints are matched
            ros1_connections, native_connections = _split_native(transport, connections)
            negotiated, seen, unmatched = None, {}, []
            connect_deadline = time.monotonic() + exp.connect_timeout
            while time.monotonic() < connect_deadline:
                _check_alive(watched + endings)
                group.sample_cpu()
                if negotiated is None:
                    negotiated = negotiated_transports(hosts, ros1_connections, seen)
                unmatched = _native_matched(transport, native_connections, testbed) if native_connections else []
                if hasattr(transport, "unmatched_bridges"):   # ROS 2 bridges: their middleware side matched too
                    unmatched += transport.unmatched_bridges(lambda h, path: _read_status(testbed, h, path))
                if negotiated is not None and not unmatched:
                    break
                time.sleep(0.05)
            if negotiated is not None and native_connections and not unmatched:
                negotiated = {**negotiated, **_native_negotiated(transport, native_connections)}
            if negotiated and hasattr(transport, "describe_connection") and transport.deployment == "bridge":
                negotiated = {k: transport.describe_connection(k.split(" -> ")[0], v) for k, v in negotiated.items()}
            meta.update(negotiated_transport=negotiated or {}, node_uris=_node_uris(hosts, connections),
                        masters={h: m.uri for h, m in masters.items()})
            if negotiated is None or unmatched:
                missing = sorted(f"{topic} ({publisher} -> {subscriber})"
                                 for topic, publisher, subscriber in ros1_connections
                                 if (topic, publisher, subscriber) not in seen)
                missing += [f"{node} (its {transport.name} endpoints not matched: no matched_ns in its status file "
                            f"records/{node.lstrip('/')}.ros2.json)" for node in unmatched]
                raise RunFailed(f"not every subscriber connected within connect_timeout = {exp.connect_timeout:g} s: "
                                f"{len(missing)} of {len(connections)} "
                                f"still missing: {', '.join(missing)}")
            phases.mark("connected")
            faults = FaultSchedule(exp.faults, testbed, log)
            stack.callback(lambda: meta.update(faults=faults.metadata()) if faults.records else None)
            stack.callback(faults.end_all)
            faults.start()

            # The run ends when the loop's ending processes (the plants, the trial) have ended, or
            # when every finite flow has ended (or `duration` has passed) for a run without one.
            end_by = time.monotonic() + (exp.duration if exp.duration is not None else exp.run_timeout)
            deadline = time.monotonic() + exp.run_timeout
            connected_at = time.monotonic()
            while time.monotonic() < min(deadline, end_by):
                while late and time.monotonic() - connected_at >= late[0][0]:   # late-joining subscribers
                    _, p = late.pop(0)
                    hosts.start(p["name"], p["host"], p["argv"], p["params"])
                _check_alive([p for p in watched if p not in finite] + endings)
                group.sample_cpu()
                faults.poll()
                if endings and all(p.poll() is not None for p in endings):
                    break
                if not endings and finite and all(p.poll() is not None for p in finite):
                    break
                time.sleep(0.05)
            else:
                if time.monotonic() >= deadline and end_by > deadline:
                    raise RunFailed(f"run did not finish within run_timeout = {exp.run_timeout} s")
            for ending in endings:
                if ending.poll() != 0:
                    raise RunFailed(f"{_ended(ending, ending.poll())}:\n{log_tail(ending.log_path)}")
            phases.mark("ended")
            _check_alive(finite)
            # Stop what sends first, then let messages in flight reach their sinks, so the end
            # of a run is not counted as loss.
            senders = [proc for proc in group.processes
                       if proc.name.startswith("flow_") and proc.name.endswith(("_source", "_play"))]
            exit_codes.update(group.stop_together(senders, grace=5.0))  # each drains ~1 s, then exits
            phases.mark("senders_stopped")
            exit_codes.update(group.stop_all())
            phases.mark("nodes_stopped")
            meta.update(cpu=group.cpu_by_host(time.monotonic() - nodes_started))
            # judged over the time messages were under way: a stall while the processes exit
            # after the last message arrived is listed in the health record, not counted
            health = testbed.health(since=phases["nodes_started"], until=phases["senders_stopped"])
            phases.label(health.get("stalls", []))
            steal = _steal_since(steal_before)
            meta.update(link_health=health, cpu_steal_s=steal)
            status = "complete" if health.get("valid", True) else "invalid"
            if status == "invalid":
                error = f"link emulation invalid: {health.get('reason')}"
                counted = [st for st in health.get("stalls", []) if st["counted"]]
                if counted:
                    error += "; stalls: " + ", ".join(f"{st['max_ms']:.0f} ms at {st['at_s']:.1f} s ({st['phase']})"
                                                      for st in counted)
                if steal:
                    error += (f"; the hypervisor took {steal:.2f} s of CPU time from this machine during "
                              f"the run (steal in /proc/stat)")
    except Interrupted as sig:
        status, error = "interrupted", f"stopped by {sig}"
        raise
    except Exception as exc:  # recorded in the run directory, then reported by the caller
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        problems = getattr(testbed, "fetch_problems", None)
        if problems:   # never silently incomplete: a machine's records did not come home
            status = "failed" if status in ("complete", "invalid") else status
            error = "; ".join(([error] if error else []) + problems)
        meta.update(phases=phases.relative())
        meta.finish(status, error=error, exit_codes=exit_codes)
    return meta.data


def campaign_dir_for(exp: Experiment, results: Path | None = None) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(results or paths.RESULTS) / f"{exp.name}-{stamp}"


def _done(run_dir: Path) -> bool:
    """A cell is done when its run finished with a verdict (complete, or invalid link timing)."""
    try:
        return read_metadata(run_dir).get("status") in ("complete", "invalid")
    except (OSError, ValueError):
        return False


def _progress_line(i: int, n: int, cell, exp: Experiment, left_s: float) -> str:
    width = 24
    filled = int(width * (i - 1) / n)
    minutes, seconds = divmod(int(left_s), 60)
    return (f"[{'#' * filled}{'.' * (width - filled)}] {i}/{n}  {cell.condition}  repetition "
            f"{cell.repetition + 1}/{exp.repetitions}  ~{minutes}m{seconds:02d}s left")


def run_experiment(exp: Experiment, out_dir: Path, log: Callable[[str], None] = print, resume: bool = False) -> Path:
    """Run every cell of a validated experiment into ``out_dir``; returns ``out_dir``.

    With ``resume``, cells already done are kept and only the others run; a cell left
    unfinished (failed, interrupted, killed) is moved to ``aborted/`` first, so ``runs/``
    ends with every cell exactly once. A run judged invalid (its link fell behind real
    time) runs again up to ``rerun_invalid`` times; each invalid attempt is moved to
    ``invalid/``, kept and counted but out of the tables. One failing cell does not stop
    the others (unless ``keep_going`` is false); its failure and logs stay in its run directory."""
    import yaml  # noqa: PLC0415

    if any(h.get("cpu") is not None for h in exp.hosts.values()) or any(
            path.startswith("hosts.") and value is not None
            for combo in sweep_combinations(exp.sweep) for path, value in combo):
        cgroup_root()   # CPU limits impossible here (not root, no cpu controller): refused before anything starts
    preflight(exp)
    out_dir = Path(out_dir)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    if not resume:
        with open(out_dir / "experiment.yaml", "w", encoding="utf-8") as f:
            yaml.safe_dump(to_dict(exp), f, sort_keys=False)
    cells = expand(exp)
    todo = [c for c in cells if not _done(out_dir / "runs" / c.run_id)]
    if resume:
        log(f"resuming: {len(cells) - len(todo)} of {len(cells)} cells done, {len(todo)} to run")
    started, estimate = time.monotonic(), estimated_run_seconds(exp)
    for i, cell in enumerate(todo, 1):
        elapsed = time.monotonic() - started
        per_run = elapsed / (i - 1) if i > 1 else estimate
        log(_progress_line(i, len(todo), cell, exp, per_run * (len(todo) - i + 1)))
        run_dir = out_dir / "runs" / cell.run_id
        if run_dir.exists():  # an unfinished earlier attempt: keep it, out of the tables
            set_aside(run_dir, out_dir / "aborted")
        for attempt in range(1 + exp.rerun_invalid):
            if attempt:   # the last verdict was invalid: keep that attempt, out of the tables
                kept = set_aside(run_dir, out_dir / "invalid")
                log(f"    {cell.run_id}: running it again ({attempt + 1} of {1 + exp.rerun_invalid}); "
                    f"the invalid attempt is kept in {kept}")
            meta = run_cell(for_cell(exp, cell), run_dir, log)
            if meta["status"] != "complete":
                log(f"    {cell.run_id} {meta['status']}: {meta.get('error')}  (logs: {run_dir / 'logs'})")
            if meta["status"] != "invalid":
                break
        _write_campaign(out_dir, exp, cells)
        if meta["status"] not in ("complete", "invalid") and not exp.keep_going:
            break
    _write_campaign(out_dir, exp, cells)
    return out_dir


def preflight(exp: Experiment) -> None:
    """What this machine must have for the experiment, refused before anything starts: a ROS 2
    middleware the build lacks (``libnetloop_ros2`` lists what it was built with)."""
    from .transports.ros2 import MIDDLEWARES, missing_middleware  # noqa: PLC0415
    problems = [f"transport {name}: {why}" for name in exp.transport if name in MIDDLEWARES
                for why in [missing_middleware(name)] if why]
    if problems:
        raise ConfigError("transport", "; ".join(problems))


def _steal_since(before: float | None) -> float | None:
    now = cpu_steal_seconds()
    return None if now is None or before is None else round(now - before, 3)


def _write_campaign(out_dir: Path, exp: Experiment, cells) -> None:
    """campaign.json: every cell and its status, as it is on disk now."""
    rows = []
    for cell in cells:
        try:
            meta = read_metadata(out_dir / "runs" / cell.run_id)
            status, error = meta.get("status"), meta.get("error")
        except (OSError, ValueError):
            status, error = "missing", None
        rows.append({"run_id": cell.run_id, "transport": cell.transport, "condition": cell.condition,
                     "settings": dict(cell.settings), "repetition": cell.repetition, "status": status,
                     "error": error, "invalid_attempts": len(invalid_attempts(out_dir, cell.run_id))})
    write_json_atomic(out_dir / "campaign.json", {"experiment": exp.name, "cells": rows})


def campaign_summary(out_dir: Path) -> str:
    """One line on a campaign's outcome from its campaign.json: runs by status, and the
    attempts judged invalid and run again."""
    rows = json.loads((Path(out_dir) / "campaign.json").read_text(encoding="utf-8")).get("cells") or []
    by_status = Counter(row.get("status") or "missing" for row in rows)
    reruns = sum(row.get("invalid_attempts") or 0 for row in rows)
    return (f"{len(rows)} runs: " + ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
            + f"; attempts judged invalid (link behind real time) and run again: {reruns}")


def load_campaign_config(out_dir: Path) -> Experiment:
    """The experiment a campaign directory was started with (for --resume)."""
    from .experiment import validate_experiment  # noqa: PLC0415
    from .schema import load_yaml  # noqa: PLC0415

    path = Path(out_dir) / "experiment.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{out_dir}: not a campaign directory (no experiment.yaml)")
    return validate_experiment(load_yaml(str(path)), str(path))
