"""One run of one cell, phase by phase: :class:`Run` has one method per phase, called in order
by :meth:`Run.execute` (docs/design.md, "A run, phase by phase"). A phase leaves what the next
needs on the run (``hosts``, ``nodes``, ``flows``, ``connections``, ...) and registers its own
teardown on the run's ``ExitStack``, so teardown runs in the reverse order on every exit path.
A test may drive some phases on its own inside ``with run.stack:``."""
from __future__ import annotations

import signal
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from . import tcp_counters
from .cpulimit import CpuLimits, LimitedHosts
from .experiment import RunSpec
from .faults import FaultSchedule
from .hosts import Hosts
from .loops import LoopStart, get_loop_kind
from .machines import SSH_LOST, RealHosts, load_machines
from .master import RosMaster
from .model import Experiment
from .processes import SENDER, ManagedProcess, ProcessGroup, log_tail
from .run_connections import negotiated_transports, wait_connected
from .run_files import RunRecord
from .run_nodes import Nodes, StartedFlows, crossing_topics, start_flows, start_masters, topic_qos
from .run_timeline import RunPhases
from .rundir import RunMetadata, cpu_steal_seconds, create_run_dir
from .testbed import Testbed, load_profile
from .testbed.profile_models import LinkProfile
from .transports import TransportContext, get_transport


class RunFailed(RuntimeError):
    pass


class Interrupted(BaseException):
    """Raised by SIGTERM/SIGINT handlers so that every cleanup runs."""


def install_signal_handlers() -> None:
    def handler(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def middlewares(exp: Experiment) -> list[str]:
    """The ROS 2 middlewares the experiment's transports need on every machine."""
    from .transports.ros2 import MIDDLEWARES  # noqa: PLC0415
    return [t for t in exp.transport if t in MIDDLEWARES]


def hosts_for(exp: Experiment, link: LinkProfile, run_dir: Path, log: Callable[[str], None]) -> Hosts:
    """The run's hosts: real machines when the experiment names a hosts file, else the
    testbed (namespaces joined by the emulated link)."""
    if exp.machines:
        return RealHosts(load_machines(exp.machines), run_dir, log, middlewares(exp))
    return Testbed(link, log_dir=run_dir / "logs")


class Run:
    """One run (the loop and/or the flows) of one cell into ``run_dir``."""

    def __init__(self, spec: RunSpec, run_dir: Path, log: Callable[[str], None] = print):
        self.spec, self.exp, self.log = spec, spec.experiment, log
        self.run_dir = create_run_dir(run_dir)
        self.kind = get_loop_kind(self.exp.loop.type)
        self.transport = get_transport(spec.transport)
        self.link = load_profile(self.exp.link, self.exp.link_overrides)
        self.meta = RunMetadata(self.run_dir, run_id=self.run_dir.name, experiment=spec.metadata(),
                                transport=self.transport.metadata(), link=self.link.to_dict(), loop=self.kind.metadata(self.exp))
        self.phases = RunPhases(self.meta.record.start_unix)
        self.stack = ExitStack()
        self.exit_codes: dict[str, Any] = {}
        self.steal_before = cpu_steal_seconds()
        # what the phases leave for the next ones
        self.own_hosts: Hosts | None = None       # the hosts as made (namespaces or machines)
        self.hosts: Hosts | None = None           # the same, seen through the CPU limits
        self.group: ProcessGroup | None = None
        self.masters: dict[str, RosMaster] = {}
        self.nodes: Nodes | None = None
        self.flows = StartedFlows()
        self.endings: list[ManagedProcess] = []   # the processes whose end ends the run
        self.connections: list[tuple[str, str, str]] = []
        #: (topic, publisher, subscriber) -> how it is connected, as found so far (run_connections)
        self.seen_connections: dict[tuple[str, str, str], str] = {}
        self.nodes_started = 0.0
        self.tcp_after: dict | None = None          # the hosts' TCP counters once the nodes stopped

    # --- the phases, in order ----------------------------------------------------------------
    def bring_up_hosts(self) -> None:
        """Hosts and limits: the namespaces and their link, or the real machines checked and
        their clocks measured; one cgroup per CPU-limited host."""
        hosts = self.own_hosts = hosts_for(self.exp, self.link, self.run_dir, self.log)
        # the transport's record last (real machines: after the records came home)
        self.stack.callback(self._record_transport)
        if self.exp.machines:      # after down(): the clocks after the run, the records home
            self.stack.callback(lambda: self.meta.update(link=hosts.metadata()))
            # each machine's record folder in metadata.json before anything starts there
            hosts.on_records_named = lambda: self.meta.update(link=hosts.metadata())
        self.stack.enter_context(hosts)
        self.meta.update(link=hosts.metadata())
        limits = self.stack.enter_context(CpuLimits(self.exp.hosts, self.run_dir.name))
        self.stack.callback(lambda: self.meta.update(host_cpu_limits=limits.stats()) if limits.paths else None)
        self.hosts = LimitedHosts(hosts, limits)

    def start_masters(self) -> None:
        """The process group (every process's output in ``logs/<name>.log``) and the ROS
        masters: one on ``operator``, or one per host for a multi-master transport."""
        self.group = self.stack.enter_context(ProcessGroup(self.run_dir / "logs"))
        self.masters = start_masters(self.hosts, self.group, self.transport.multi_master, self.stack)
        self.nodes = Nodes(self.hosts, self.group, self.masters, self.run_dir / "logs" / "ros")
        self.stack.callback(self.nodes.close)

    def start_transport(self) -> None:
        """The transport's relays or master-sync processes; metadata says what really ran."""
        hosts, exp = self.hosts, self.exp
        interfaces, mtus = hosts.interfaces()
        self.transport.start(TransportContext(
            self.run_dir, {h: hosts.exec_prefix(h) for h in hosts.hosts}, {h: hosts.address(h) for h in hosts.hosts},
            topics=crossing_topics(exp), masters={h: m.uri for h, m in self.masters.items()}, start=self.nodes.start,
            options=exp.transport_options.get(self.transport.name, {}), link_mbit=hosts.link_mbit,
            interface=interfaces, mtu=mtus, topic_qos=topic_qos(exp)))
        self.stack.callback(self.transport.stop)
        self.meta.update(transport=self.transport.metadata())

    def start_flows(self) -> None:
        """Every perturbing flow: its subscribers first, then its source or bag player. The
        hosts' TCP counters are read first (and again once the nodes stopped: ``host_tcp``)."""
        tcp_before = tcp_counters.read(self.hosts)
        self.stack.callback(lambda: self.meta.update(host_tcp=tcp_counters.delta(
            tcp_before, self.tcp_after if self.tcp_after is not None else tcp_counters.read(self.hosts)) or {}))
        self.nodes_started = time.monotonic()
        self.phases.mark("nodes_started")
        self.flows = start_flows(self.nodes, self.exp, self.transport, self.run_dir, self._glance)
        self.connections += self.flows.connections

    def start_loop(self) -> None:
        """The loop kind's nodes; the processes whose end ends the run (the plants, the trial)."""
        loop = self.kind.start(LoopStart(self.nodes, self.exp, self.transport, self.run_dir, self.spec.repetition))
        ending = loop.ending if isinstance(loop.ending, list) else [loop.ending]
        self.endings = [p for p in ending if p is not None]
        self.connections += [(topic, pub, sub) for topic, (pub, sub) in loop.connections.items()]

    def wait_for_connections(self) -> None:
        """Every (topic, publisher, subscriber) connected within ``connect_timeout``, its
        negotiated transport recorded; RunFailed naming what is missing otherwise."""
        watched = self._watched()
        negotiated, missing = wait_connected(self.nodes, self.hosts, self.transport, self.connections,
                                             self.exp.connect_timeout, lambda: self._tick(watched + self.endings),
                                             self.seen_connections)
        self.meta.update(negotiated_transport=negotiated or {}, node_uris=self.nodes.uris(self.connections),
                         masters={h: m.uri for h, m in self.masters.items()})
        if missing:
            raise RunFailed(f"not every subscriber connected within connect_timeout = {self.exp.connect_timeout:g} s: "
                            f"{len(missing)} of {len(self.connections)} still missing: {', '.join(missing)}")
        self.phases.mark("connected")

    def run_with_faults(self) -> None:
        """Faults timed from "connected"; ends when the loop's ending processes exit, or every
        finite flow ends (or ``duration`` passes) for a run without them; RunFailed at
        ``run_timeout`` or when a process dies."""
        exp, late, finite = self.exp, list(self.flows.late), self.flows.finite
        faults = FaultSchedule(exp.faults, self.own_hosts, self.log)
        self.stack.callback(lambda: self.meta.update(faults=faults.metadata()) if faults.records else None)
        self.stack.callback(faults.end_all)
        faults.start()
        watched = [p for p in self._watched() if p not in finite]
        end_by = time.monotonic() + (exp.duration if exp.duration is not None else exp.run_timeout)
        deadline = time.monotonic() + exp.run_timeout
        connected_at = time.monotonic()
        while time.monotonic() < min(deadline, end_by):
            while late and time.monotonic() - connected_at >= late[0][0]:   # late-joining subscribers
                _, p = late.pop(0)
                self.nodes.start(p["name"], p["host"], p["argv"], p["params"])
            self._tick(watched + self.endings)
            faults.poll()
            if self.endings and all(p.poll() is not None for p in self.endings):
                break
            if not self.endings and finite and all(p.poll() is not None for p in finite):
                break
            time.sleep(0.05)
        else:
            if time.monotonic() >= deadline and end_by > deadline:
                raise RunFailed(f"run did not finish within run_timeout = {exp.run_timeout} s")
        for ending in self.endings:
            if ending.poll() != 0:
                raise RunFailed(f"{_ended(ending, ending.poll())}:\n{log_tail(ending.log_path)}")
        self.phases.mark("ended")
        _check_alive(finite)

    def drain(self) -> None:
        """The senders (role SENDER: flow sources, bag players) stopped first, so messages in
        flight reach their sinks; then every other process (ProcessGroup.stop_all)."""
        self.exit_codes.update(self.group.stop_together(self.group.with_role(SENDER), grace=5.0))  # ~1 s each
        self.phases.mark("senders_stopped")
        self.exit_codes.update(self.group.stop_all())
        self.phases.mark("nodes_stopped")
        self.tcp_after = tcp_counters.read(self.hosts)
        self.meta.update(cpu=self.group.cpu_by_host(time.monotonic() - self.nodes_started))

    def judge_health(self) -> tuple[str, str | None]:
        """The link's health over the time messages were under way (a stall while the
        processes exit after the last message arrived is listed, not counted), each stall
        labelled with its phase, the hypervisor's steal: (status, error)."""
        health = self.hosts.health(since=self.phases["nodes_started"], until=self.phases["senders_stopped"])
        self.phases.label(health.get("stalls", []))
        steal = _steal_since(self.steal_before)
        self.meta.update(link_health=health, cpu_steal_s=steal)
        if health.get("valid", True):
            return "complete", None
        error = f"link emulation invalid: {health.get('reason')}"
        counted = [st for st in health.get("stalls", []) if st["counted"]]
        if counted:
            error += "; stalls: " + ", ".join(f"{st['max_ms']:.0f} ms at {st['at_s']:.1f} s ({st['phase']})"
                                              for st in counted)
        if steal:
            error += (f"; the hypervisor took {steal:.2f} s of CPU time from this machine during "
                      f"the run (steal in /proc/stat)")
        return "invalid", error

    def records_home(self, status: str, error: str | None) -> tuple[str, str | None]:
        """After teardown: records that did not come home (real machines) make a finished run
        ``failed``, never silently incomplete."""
        problems = self.own_hosts.records_problems() if self.own_hosts is not None else []
        if not problems:
            return status, error
        return ("failed" if status in ("complete", "invalid") else status,
                "; ".join(([error] if error else []) + problems))

    def execute(self) -> RunRecord:
        """Every phase in order, teardown on every exit path; returns the run's metadata.
        Failures are recorded in the run directory, not raised (SIGINT/SIGTERM are, after)."""
        status, error = "failed", None
        try:
            with self.stack:
                self.bring_up_hosts()
                self.start_masters()
                self.start_transport()
                self.start_flows()
                self.start_loop()
                self.wait_for_connections()
                self.run_with_faults()
                self.drain()
                status, error = self.judge_health()
        except Interrupted as sig:
            status, error = "interrupted", f"stopped by {sig}"
            raise
        except Exception as exc:  # recorded in the run directory, then reported by the caller
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            status, error = self.records_home(status, error)
            self.meta.update(phases=self.phases.relative())
            self.meta.finish(status, error=error, exit_codes=self.exit_codes)
        return self.meta.record

    # --- helpers -----------------------------------------------------------------------------
    def _glance(self, connections: list[tuple[str, str, str]]) -> None:
        """Note the ROS 1 connections already made while later nodes still start: a short flow
        whose nodes started early may have ended (its source drained and gone) before every node
        of the run is up, and its connection could no longer be read then (over SSH, starting
        32 nodes takes tens of seconds)."""
        native = self.transport.native_connections(connections)
        negotiated_transports(self.nodes, [c for c in connections if c not in native], self.seen_connections)

    def _watched(self) -> list[ManagedProcess]:
        """The processes that must not die: every node started, but the loop's ending ones."""
        return [p for p in self.nodes.started if p not in self.endings]

    def _tick(self, procs: list[ManagedProcess]) -> None:
        _check_alive(procs)
        self.group.sample_cpu()

    def _record_transport(self) -> None:
        record = self.transport.run_record()
        if record:
            self.meta.update(**record)


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


def _steal_since(before: float | None) -> float | None:
    now = cpu_steal_seconds()
    return None if now is None or before is None else round(now - before, 3)
