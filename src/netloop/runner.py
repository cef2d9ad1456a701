"""Running experiments: one run per (transport, repetition) cell, each in its own run directory.

A run brings up the testbed (hosts and link), starts a ROS master on the operator host,
loads the loop's parameters, starts the controller and the plant on the hosts the
experiment names, waits for the plant to finish its samples, and stops everything it
started, on every exit path. What the nodes record lands in the run directory as it
happens (see :mod:`netloop.rundir`).
"""
from __future__ import annotations

import datetime as _dt
import shutil
import signal
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from . import paths, rosenv
from .experiment import (estimated_run_seconds, expand, for_cell, link_capacity_mbit, rlc_parameters,
                         teleop_trial_params)
from .flows import flow_datatype, flow_processes, message_bytes, topic_of
from .connections import describe, node_connections
from .master import RosMaster
from .processes import ProcessGroup, log_tail
from .rundir import RunMetadata, create_run_dir, read_metadata, write_json_atomic
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


def negotiated_transports(hosts: "_Hosts", flows: dict[str, tuple[str, str]]) -> dict[str, str] | None:
    """For each topic -> (publisher, subscriber): the connection as it really is; None until
    every one is connected. With one master, the publisher's connection to the subscriber
    ('TCPROS', 'TCPROS+NODELAY' or 'UDPROS', TCP_NODELAY read from the sending socket); across
    masters (relay transports), the subscriber's local connection, marked 'via relay'."""
    out = {}
    try:
        for topic, (publisher, subscriber) in flows.items():
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
            if not conns:
                return None
            out[topic] = describe(conns[0]) + suffix
    except Exception:  # a node not registered yet, or gone
        return None
    return out


LOOP_FLOWS = {"/y": ("/plant", "/controller"), "/u": ("/controller", "/plant")}


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
            master.set_params(params, "/" + name)
        env = rosenv.node_env(master.uri, self.testbed.address(host), self.ros_log)
        proc = self.group.start(name, argv, env=env, prefix=self.testbed.exec_prefix(host))
        self.host_of["/" + name] = host
        self.started.append(proc)
        return proc


def _start_masters(testbed: Testbed, group: ProcessGroup, transport, stack: ExitStack) -> dict[str, RosMaster]:
    """One master on the operator host, or one on every host for a multi-master transport."""
    on = testbed.hosts if transport.multi_master else [MASTER_HOST]
    started = {}
    for host in on:
        master = RosMaster(group, rosenv.base_env(), address=testbed.address(host), prefix=testbed.exec_prefix(host),
                           netns=testbed.netns(host), name=f"master_{host}" if transport.multi_master else "master")
        stack.callback(master.rpc_caller.close)
        started[host] = master.start()
    return started if transport.multi_master else {h: started[MASTER_HOST] for h in testbed.hosts}


def crossing_topics(cfg: dict) -> list[CrossingTopic]:
    """The topics whose publisher and subscriber are on different hosts."""
    out = []
    loop = cfg["loop"]
    if loop["type"] == "rlc" and loop["placement"]["plant"] != loop["placement"]["controller"]:
        size, period = loop["padding_bytes"] + 52, loop["plant"]["period"]
        plant, ctl = loop["placement"]["plant"], loop["placement"]["controller"]
        out += [CrossingTopic("/y", "netloop/LoopSample", plant, ctl, size, period),
                CrossingTopic("/u", "netloop/LoopSample", ctl, plant, size, period)]
    if loop["type"] == "teleop" and loop["placement"]["car"] != loop["placement"]["trial"]:
        car, trial = loop["placement"]["car"], loop["placement"]["trial"]
        out += [CrossingTopic("/odom", "nav_msgs/Odometry", car, trial, 700, 0.02),
                CrossingTopic("/cmd_vel", "geometry_msgs/Twist", trial, car, 48, 0.05)]
    for flow in cfg["flows"]:
        out.append(CrossingTopic(topic_of(flow), flow_datatype(flow), flow["from"], flow["to"],
                                 message_bytes(flow), flow["period"]))
    return out


def _start_loop(hosts: _Hosts, cfg: dict, transport, run_dir: Path):
    """The RLC controller and plant, placed as the experiment says; returns (plant, controller)."""
    loop = cfg["loop"]
    size = loop["padding_bytes"] + 64
    hosts.set_params(rlc_parameters(loop), "/rlc")
    controller = hosts.start("controller", loop["placement"]["controller"],
                             [str(paths.node_binary("loop_controller")), "__name:=controller"],
                             {"transport": transport.subscriber_transport("/y", size),
                              "padding_bytes": loop["padding_bytes"],
                              "record_path": str(run_dir / "records" / "controller.csv")})
    plant = hosts.start("plant", loop["placement"]["plant"], [str(paths.node_binary("rlc_plant")), "__name:=plant"],
                        {"transport": transport.subscriber_transport("/u", size),
                         "padding_bytes": loop["padding_bytes"], "samples": loop["samples"],
                         "warmup": loop["warmup"], "record_path": str(run_dir / "records" / "plant.csv")})
    return plant, controller


TOPIC_TOOLS_RELAY = next((p for p in ("/opt/ros/noetic/lib/topic_tools/relay", "/usr/lib/topic_tools/relay")
                          if Path(p).exists()), "relay")


def _start_teleop(hosts: _Hosts, cfg: dict, transport, run_dir: Path):
    """The simulated car on its host and the scripted trial on its host; returns (trial, the
    connections to check). rospy (the simulator) has no UDPROS, so for udp a roscpp relay on
    the car's host carries odom out (odom -> odom_net) and cmd_vel in (cmd_vel_net -> cmd_vel,
    subscribed unreliably); the trial then uses odom_net and cmd_vel_net."""
    loop = cfg["loop"]
    car, trial_host = loop["placement"]["car"], loop["placement"]["trial"]
    crossing = car != trial_host
    odom_transport = transport.subscriber_transport("/odom", 700) if crossing else "tcp_nodelay"
    cmd_transport = transport.subscriber_transport("/cmd_vel", 48) if crossing else "tcp_nodelay"
    hosts.start("sim", car, [str(paths.node_binary("sim_node.py")), "__name:=sim"],
                dict(loop["teleop"]["sim"], world=loop["teleop"]["world"]))
    trial_argv = [str(paths.node_binary("teleop_trial")), "__name:=trial"]
    connections = {"/odom": ("/sim", "/trial"), "/cmd_vel": ("/trial", "/sim")}
    if odom_transport == "udp":
        hosts.start("odom_relay", car, [TOPIC_TOOLS_RELAY, "odom", "odom_net", "__name:=odom_relay"])
        trial_argv.append("odom:=odom_net")
        connections["/odom"] = ("/sim", "/odom_relay")
        connections["/odom_net"] = ("/odom_relay", "/trial")
    if cmd_transport == "udp":
        hosts.start("cmd_relay", car, [TOPIC_TOOLS_RELAY, "cmd_vel_net", "cmd_vel", "__name:=cmd_relay",
                                       "_unreliable:=true"])
        trial_argv.append("cmd_vel:=cmd_vel_net")
        connections["/cmd_vel"] = ("/cmd_relay", "/sim")
        connections["/cmd_vel_net"] = ("/trial", "/cmd_relay")
    params = dict(teleop_trial_params(loop), transport=odom_transport,
                  record_path=str(run_dir / "records" / "trial.csv"))
    trial = hosts.start("trial", trial_host, trial_argv, params)
    return trial, connections


def _start_flows(hosts: _Hosts, cfg: dict, transport, run_dir: Path) -> tuple[list, dict[str, tuple[str, str]]]:
    """Every perturbing flow (sinks first); returns the processes that end a flow by themselves
    (sources with a count, bag players) and topic -> (publisher, subscriber) to check."""
    finite, connections = [], {}
    for flow in cfg["flows"]:
        ros_transport = (flow["transport"] if flow["transport"] != "same"
                         else transport.subscriber_transport(topic_of(flow), message_bytes(flow)))
        procs = flow_processes(flow, ros_transport, run_dir, paths.node_binary)
        for p in procs:
            proc = hosts.start(p["name"], p["host"], p["argv"], p["params"])
            if p["name"].endswith(("_source", "_play")) and (flow["count"] or p["name"].endswith("_play")):
                finite.append(proc)
        publisher = next(p["name"] for p in procs if p["name"].endswith(("_source", "_relay")))
        connections[topic_of(flow)] = ("/" + publisher, "/" + procs[0]["name"])
    return finite, connections


def _node_uris(hosts: _Hosts, connections: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Where each node of the run listens (its host's address shows where it was placed)."""
    out = {}
    for node in sorted({n for pair in connections.values() for n in pair}):
        try:
            out[node] = hosts.master_of_node(node).lookup_node(node)
        except Exception:  # gone already
            pass
    return out


def _check_alive(procs) -> None:
    for proc in procs:
        status = proc.poll()
        if status is not None and status != 0:
            raise RunFailed(f"{proc.name} exited with status {status}:\n{log_tail(proc.log_path)}")


def run_cell(cfg: dict, run_dir: Path, log: Callable[[str], None] = print) -> dict:
    """One run (the loop and/or the flows) with the transport in ``cfg['transport']``;
    returns the run's metadata. Failures are recorded in the run directory, not raised."""
    run_dir = create_run_dir(run_dir)
    loop = cfg["loop"]
    transport = get_transport(cfg["transport"])
    link = load_profile(cfg["link"], cfg["link_params"])
    meta = RunMetadata(run_dir, run_id=run_dir.name, experiment=cfg, transport=transport.metadata(),
                       link=link, loop={"type": loop["type"], "placement": loop["placement"]})
    status, error = "failed", None
    exit_codes: dict[str, Any] = {}
    try:
        with ExitStack() as stack:
            testbed = stack.enter_context(Testbed(link, log_dir=run_dir / "logs"))
            meta.update(link=testbed.metadata())
            group = stack.enter_context(ProcessGroup(run_dir / "logs"))
            masters = _start_masters(testbed, group, transport, stack)
            hosts = _Hosts(testbed, group, masters, run_dir / "logs" / "ros")
            transport.start(TransportContext(
                run_dir, {h: testbed.exec_prefix(h) for h in testbed.hosts},
                {h: testbed.address(h) for h in testbed.hosts}, topics=crossing_topics(cfg),
                masters={h: m.uri for h, m in masters.items()}, start=hosts.start,
                options=cfg["transport_options"].get(transport.name, {}),
                link_mbit=link_capacity_mbit(link)))
            stack.callback(transport.stop)
            meta.update(transport=transport.metadata())  # what actually ran (implementation, stats files)

            finite, connections = _start_flows(hosts, cfg, transport, run_dir)
            plant = None  # the process whose end ends the run (the plant, or the teleop trial)
            if loop["type"] == "rlc":
                plant, controller = _start_loop(hosts, cfg, transport, run_dir)
                connections.update(LOOP_FLOWS)
            elif loop["type"] == "teleop":
                plant, teleop_connections = _start_teleop(hosts, cfg, transport, run_dir)
                connections.update(teleop_connections)
            watched = [p for p in hosts.started if p is not plant]

            negotiated = None
            connect_deadline = time.monotonic() + 20.0
            while negotiated is None and time.monotonic() < connect_deadline:
                _check_alive(watched + ([plant] if plant else []))
                negotiated = negotiated_transports(hosts, connections)
                time.sleep(0.05)
            meta.update(negotiated_transport=negotiated or {}, node_uris=_node_uris(hosts, connections),
                        masters={h: m.uri for h, m in masters.items()})
            if negotiated is None:
                raise RunFailed(f"not every subscriber connected within 20 s: {sorted(connections)}")

            # The run ends when the plant has sent its samples, or when every finite flow has
            # ended (or `duration` has passed) for a run without a loop.
            end_by = time.monotonic() + (cfg["duration"] if cfg["duration"] is not None else cfg["run_timeout"])
            deadline = time.monotonic() + cfg["run_timeout"]
            while time.monotonic() < min(deadline, end_by):
                _check_alive([p for p in watched if p not in finite])
                if plant is not None and plant.poll() is not None:
                    break
                if plant is None and finite and all(p.poll() is not None for p in finite):
                    break
                time.sleep(0.05)
            else:
                if time.monotonic() >= deadline and end_by > deadline:
                    raise RunFailed(f"run did not finish within run_timeout = {cfg['run_timeout']} s")
            if plant is not None and plant.poll() != 0:
                raise RunFailed(f"{plant.name} exited with status {plant.poll()}:\n{log_tail(plant.log_path)}")
            _check_alive(finite)
            # Stop what sends first, then let messages in flight reach their sinks, so the end
            # of a run is not counted as loss.
            for proc in group.processes:
                if proc.name.startswith("flow_") and proc.name.endswith(("_source", "_play")):
                    exit_codes[proc.name] = group.stop(proc, grace=5.0)  # it drains ~1 s, then exits
            exit_codes.update(group.stop_all())
            health = testbed.health()
            meta.update(link_health=health)
            status = "complete" if health.get("valid", True) else "invalid"
            if status == "invalid":
                error = f"link emulation invalid: {health.get('reason')}"
    except Interrupted as sig:
        status, error = "interrupted", f"stopped by {sig}"
        raise
    except Exception as exc:  # recorded in the run directory, then reported by the caller
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        meta.finish(status, error=error, exit_codes=exit_codes)
    return meta.data


def campaign_dir_for(cfg: dict, results: Path | None = None) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(results or paths.RESULTS) / f"{cfg['name']}-{stamp}"


def _done(run_dir: Path) -> bool:
    """A cell is done when its run finished with a verdict (complete, or invalid link timing)."""
    try:
        return read_metadata(run_dir).get("status") in ("complete", "invalid")
    except (OSError, ValueError):
        return False


def _progress_line(i: int, n: int, cell, cfg: dict, left_s: float) -> str:
    width = 24
    filled = int(width * (i - 1) / n)
    minutes, seconds = divmod(int(left_s), 60)
    return (f"[{'#' * filled}{'.' * (width - filled)}] {i}/{n}  {cell.condition}  repetition "
            f"{cell.repetition + 1}/{cfg['repetitions']}  ~{minutes}m{seconds:02d}s left")


def run_experiment(cfg: dict, out_dir: Path, log: Callable[[str], None] = print, resume: bool = False) -> Path:
    """Run every cell of a validated experiment into ``out_dir``; returns ``out_dir``.

    With ``resume``, cells already done are kept and only the others run; a cell left
    unfinished (failed, interrupted, killed) is moved to ``aborted/`` first, so ``runs/``
    ends with every cell exactly once. One failing cell does not stop the others
    (unless ``keep_going`` is false); its failure and logs stay in its run directory."""
    import yaml  # noqa: PLC0415

    out_dir = Path(out_dir)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    if not resume:
        with open(out_dir / "experiment.yaml", "w", encoding="utf-8") as f:
            yaml.safe_dump(cfg, f, sort_keys=False)
    cells = expand(cfg)
    todo = [c for c in cells if not _done(out_dir / "runs" / c.run_id)]
    if resume:
        log(f"resuming: {len(cells) - len(todo)} of {len(cells)} cells done, {len(todo)} to run")
    started, estimate = time.monotonic(), estimated_run_seconds(cfg)
    for i, cell in enumerate(todo, 1):
        elapsed = time.monotonic() - started
        per_run = elapsed / (i - 1) if i > 1 else estimate
        log(_progress_line(i, len(todo), cell, cfg, per_run * (len(todo) - i + 1)))
        run_dir = out_dir / "runs" / cell.run_id
        if run_dir.exists():  # an unfinished earlier attempt: keep it, out of the tables
            aborted = out_dir / "aborted"
            aborted.mkdir(exist_ok=True)
            attempt = 1 + sum(1 for _ in aborted.glob(f"{cell.run_id}.attempt*"))
            shutil.move(str(run_dir), str(aborted / f"{cell.run_id}.attempt{attempt}"))
        meta = run_cell(for_cell(cfg, cell), run_dir, log)
        if meta["status"] != "complete":
            log(f"    {cell.run_id} {meta['status']}: {meta.get('error')}  (logs: {run_dir / 'logs'})")
        _write_campaign(out_dir, cfg, cells)
        if meta["status"] not in ("complete", "invalid") and not cfg["keep_going"]:
            break
    _write_campaign(out_dir, cfg, cells)
    return out_dir


def _write_campaign(out_dir: Path, cfg: dict, cells) -> None:
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
                     "error": error})
    write_json_atomic(out_dir / "campaign.json", {"experiment": cfg["name"], "cells": rows})


def load_campaign_config(out_dir: Path) -> dict:
    """The experiment a campaign directory was started with (for --resume)."""
    from .experiment import validate_experiment  # noqa: PLC0415
    from .schema import load_yaml  # noqa: PLC0415

    path = Path(out_dir) / "experiment.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{out_dir}: not a campaign directory (no experiment.yaml)")
    return validate_experiment(load_yaml(str(path)), str(path))
