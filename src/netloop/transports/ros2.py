"""``cyclonedds``, ``fastdds``, ``zenoh``, ``rmw_fastrtps_cpp``: ROS 2's middlewares as transports.

One class, four words. The first three are netloop's nodes speaking the middleware library
directly; ``rmw_fastrtps_cpp`` is real ROS 2: the same nodes with their crossing topics on rcl
nodes of ROS 2 Jazzy (the ``libnetloop_ros2_mw_rmw_fastrtps_cpp`` plug-in, rmw_fastrtps_cpp with
its defaults; :mod:`netloop.ros2.distro`), native only. Two deployments, as ROS users have them
(``transport_options.<word>.deployment``):

  ``native`` (default)  the loop's plant and controller and the flow endpoints speak the
                        middleware themselves (``libnetloop_ros2``: CDR samples on ``rt/<topic>``
                        with rmw's type names, exactly what a ROS 2 node puts on the wire); no
                        ROS 1 connection carries a crossing topic. Each node still reads its
                        parameters from its host's ROS 1 master (one per host, as for the
                        relays, so no roscpp connection can silently cross), and writes a status
                        file (``records/<node>.ros2.json``) when its endpoints are matched and at
                        exit; the runner waits for those instead of ROS 1 connections.
  ``bridge``            the ROS 1 nodes stay as they are and connect to a ``ros2_bridge`` on
                        their host (TCP_NODELAY); the bridges carry the crossing topics over the
                        middleware (ros1_bridge + DDS, or a Zenoh ROS 1 bridge).

Options (``transport_options: {cyclonedds: {...}}``): ``deployment``, ``qos`` (ROS 2's profile
by name), ``reliability``, ``durability``, ``depth`` (overrides), ``discovery`` (``multicast``:
SPDP multicast / Zenoh scouting over the link, as ROS 2 does out of the box; ``peers``: the
hosts' addresses), ``domain_id`` (ROS_DOMAIN_ID), DDS only ``message_size`` (``rmw``: the
library's own RTPS message size, as the rmw leaves it; ``mtu``: one IP packet each), Zenoh only
``mode`` (``peer``, or ``router``: a router on the operator, rmw_zenoh's scheme). ``loop.qos`` and ``flows[].qos`` override the QoS
per loop and per flow. The middleware's own configuration is generated per host in the run
directory (:mod:`netloop.ros2.config`).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from .. import paths
from ..jsonio import write_json_atomic
from ..ros2 import config as ros2config
from ..ros2 import distro
from ..ros2.qos import Qos, resolve
from ..schema import validate
from . import ros2_run
from .base import Connection, CrossingTopic, Transport, TransportContext
from .relay_common import TransportError, _shorten, message_type
from .ros2_bridge_plan import STATUS_SUFFIX, bridge_plan
from .options import typed
from .ros2_options import MIDDLEWARES, REAL_ROS2, Ros2Options, options_model, options_schema

#: what the libraries are called where a middleware is missing from the build
LIBRARY_OF = {"cyclonedds": "Cyclone DDS (Debian: cyclonedds-dev)",
              "fastdds": "Fast DDS (Debian: libfastrtps-dev libfastcdr-dev)",
              "zenoh": "Zenoh (the zenoh crate through src/zenoh_shim: cargo, scripts/build.sh)",
              "rmw_fastrtps_cpp": "ROS 2 Jazzy (.venv-ros2-jazzy, scripts/setup.sh)"}


# --- what this build has ----------------------------------------------------------------------

def _library() -> Path:
    return paths.DEVEL / "lib" / "libnetloop_ros2.so"


_AVAILABLE: list[tuple[str, ...]] = []


def available_middlewares() -> tuple[str, ...] | None:
    """The middlewares the built ``libnetloop_ros2`` has (asked of ``netloop_ros2_info`` when
    built, else read from the library: the DDS libraries it links, the Zenoh shim's symbols);
    None when nothing is built. A non-empty answer is kept for the process (an empty one, e.g.
    while the library is being relinked, is asked again)."""
    if _AVAILABLE:
        return _AVAILABLE[0]
    found = _ask_build()
    if found:
        _AVAILABLE.append(found)
    return found


def _ask_build() -> tuple[str, ...] | None:
    try:
        info = paths.node_binary("netloop_ros2_info")
    except FileNotFoundError:
        info = None
    if info is not None:
        try:
            out = subprocess.run([str(info)], capture_output=True, text=True, timeout=20).stdout
            words = re.findall(r"\b(" + "|".join(MIDDLEWARES) + r")\b", out)
            return tuple(m for m in MIDDLEWARES if m in words)
        except (OSError, subprocess.SubprocessError):
            pass
    lib = _library()
    if not lib.is_file():
        return None
    try:
        needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, timeout=20).stdout
        symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True,
                                 timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    have = []
    if "libddsc.so" in needed:
        have.append("cyclonedds")
    if "libfastrtps.so" in needed:
        have.append("fastdds")
    if re.search(r"\bz_|zenoh_shim|nlz_|ZenohParticipant", symbols) or "libzenoh" in needed:
        have.append("zenoh")
    for plugin in sorted(lib.parent.glob("libnetloop_ros2_mw_*.so")):   # src/ros2/factory.cpp
        have.append(plugin.name[len("libnetloop_ros2_mw_"):-len(".so")])
    return tuple(m for m in MIDDLEWARES if m in have)


def missing_middleware(middleware: str) -> str | None:
    """Why ``middleware`` cannot run with this build, or None."""
    if middleware in REAL_ROS2:
        why = distro.missing(distro.DEFAULT_DISTRO)
        if why:
            return why
    have = available_middlewares()
    if have is None:
        return f"libnetloop_ros2 is not built ({_library()}): run 'make build'"
    if middleware not in have:
        return (f"this build has no {middleware} ({LIBRARY_OF[middleware]} was not found when it was built); "
                f"it has: {', '.join(have) or 'none'}")
    return None


# --- the transport ---------------------------------------------------------------------------

class Ros2Transport(Transport):
    """One of ROS 2's middlewares, deployed natively or through a bridge per host."""

    multi_master = True

    def __init__(self, name: str, description: str, middleware: str):
        if middleware not in MIDDLEWARES:
            raise ValueError(f"not a ROS 2 middleware: {middleware!r}")
        self.name, self.description, self.middleware = name, description, middleware
        self.options_schema = options_schema(middleware)
        self.ctx: TransportContext | None = None
        self.options: dict[str, Any] = {}
        self.plan: ros2config.NetPlan | None = None
        self.config_files: dict[str, str] = {}          # host (or node) -> file
        self.native_nodes: dict[str, dict[str, Any]] = {}   # "/node" -> {host, status_path, topics, qos}
        self.topic_qos: dict[str, Qos] = {}
        self.processes: list[dict[str, Any]] = []        # bridges / router: name, host, argv, params
        self.handles: dict[str, Any] = {}
        self.type_hashes: dict[str, str] = {}

    @property
    def settings(self) -> Ros2Options:
        """The options, typed (every default before ``start``)."""
        return typed(options_model(self.middleware), self.options)

    @property
    def deployment(self) -> str:
        return self.settings.deployment

    @property
    def relays(self) -> bool:
        """Bridged: each host's bridge takes the nodes' ROS 1 messages on (natively the nodes'
        own endpoints carry them, and flow_source waits its whole drain over a middleware)."""
        return self.deployment == "bridge"

    def subscriber_transport(self, topic, message_bytes=None):
        return "tcp_nodelay"   # bridge: the node's connection to its local bridge

    def programs(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        """A bridge per machine in ``bridge`` deployment (the middleware itself, native or
        bridged, is a machine's build check: machine_readiness)."""
        deployment = typed(options_model(self.middleware), options or {}).deployment
        return [("node", "ros2_bridge")] if deployment == "bridge" else []

    # --- planning ----------------------------------------------------------------------------
    def qos_for(self, overrides: dict[str, Any] | None = None) -> Qos:
        return resolve(self.options or validate(self.options_schema, {}), overrides or {},
                       key=f"transport_options.{self.name}.qos")

    def endpoint_params(self, topic: str, message_bytes: int | None = None, role: str = "subscriber",
                        node: str | None = None, host: str | None = None,
                        qos: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.deployment == "bridge" or self.ctx is None:
            return {"transport": "tcp_nodelay"} if role == "subscriber" else {}
        if node is None or host is None:
            raise ValueError("native ROS 2 endpoints need the node's name and host")
        resolved = self.qos_for(qos)
        self.topic_qos[topic] = resolved
        status = Path(self.ctx.run_dir) / "records" / f"{node}{STATUS_SUFFIX}"
        entry = self.native_nodes.setdefault("/" + node, {"host": host, "status_path": str(status), "topics": []})
        if topic not in entry["topics"]:
            entry["topics"].append(topic)
        entry["qos"] = resolved.describe()
        params = {"transport": "tcp_nodelay", "middleware": self.middleware,
                  "middleware_config": self._config_for(host, node), "domain_id": self.settings.domain_id,
                  **resolved.node_params(), "status_path": str(status)}
        if self.middleware == "zenoh":
            params["type_hashes"] = dict(self.type_hashes)
        if role == "subscriber":   # a raw middleware input (flow_sink) needs the type (src/nodes/flow_sink.cpp)
            params["middleware_in"] = True
            info = self._type_of(topic)
            if info:
                params.update(datatype=info["type"], md5sum=info["md5"], definition=info["definition"])
        return params

    def _type_of(self, topic: str) -> dict[str, str] | None:
        assert self.ctx is not None
        datatype = next((t.datatype for t in self.ctx.topics if t.topic == topic), None)
        return message_type(datatype) if datatype else None

    def _config_for(self, host: str, node: str) -> str:
        assert self.plan is not None and self.ctx is not None
        if self.middleware == "zenoh" and self.plan.discovery == "peers" and self.plan.zenoh_mode == "peer":
            ros2config.plan_zenoh_port(self.plan, node, host)
            path = Path(self.ctx.run_dir) / "transport" / f"{node}.json5"
            ros2config.write(path, ros2config.json5_text(ros2config.zenoh_config(self.plan, host, node),
                                                         f"netloop: Zenoh configuration of node {node} on {host}"))
            self.config_files[node] = str(path)
            return str(path)
        return self.config_files.get(host, "")

    def _net_plan(self, ctx: TransportContext, options: Ros2Options) -> ros2config.NetPlan:
        addresses = ctx.address
        shared = len(set(addresses.values())) < len(addresses)   # loopback: one namespace for all
        hosts = [ros2config.HostNet(h, a, ctx.interface.get(h) or ("lo" if shared else None), ctx.mtu.get(h, 1500))
                 for h, a in addresses.items()]
        router = addresses.get("operator", next(iter(addresses.values()))) if options.zenoh_mode == "router" else None
        return ros2config.NetPlan(hosts, options.discovery, shared, options.zenoh_mode, router,
                                  message_size=getattr(options, "message_size", "rmw"))

    def _write_host_configs(self) -> None:
        assert self.plan is not None and self.ctx is not None
        out = Path(self.ctx.run_dir) / "transport"
        for h in self.plan.hosts:
            if self.middleware == "cyclonedds":
                path = ros2config.write(out / f"{h.host}.xml", ros2config.cyclonedds_xml(self.plan, h.host))
            elif self.middleware in REAL_ROS2:   # the rmw's defaults; a profiles file if the user gives one
                given = self.options.get("profiles_file")
                if not given:
                    continue
                path = out / "profiles.xml"
                if not path.exists():
                    out.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(Path(given).expanduser().resolve(), path)
            elif self.middleware == "fastdds":
                path = ros2config.write(out / f"{h.host}.xml",
                                        ros2config.fastdds_xml(self.plan, h.host, self.settings.domain_id))
            else:
                path = ros2config.write(out / f"{h.host}.json5", ros2config.json5_text(
                    ros2config.zenoh_config(self.plan, h.host) if self.plan.discovery == "multicast"
                    or self.plan.zenoh_mode == "router" else {"mode": "peer"},
                    f"netloop: Zenoh configuration of host {h.host}"))
            self.config_files[h.host] = str(path)

    def _type_hashes(self, topics: list[CrossingTopic]) -> dict[str, str]:
        if self.middleware != "zenoh":
            return {}
        from ..ros2 import names  # noqa: PLC0415 - R2's RIHS01 hashes
        types = sorted({t.datatype for t in topics} | {"netloop/LoopSample"})
        out = {}
        for datatype in types:
            out[datatype] = names.type_hash(datatype)
        return out

    # --- running ------------------------------------------------------------------------------
    def start(self, ctx: TransportContext) -> None:
        if self.ctx is not None:
            raise RuntimeError(f"transport {self.name!r} already started: get_transport() gives one instance per run")
        missing = missing_middleware(self.middleware)
        if missing:
            raise TransportError(f"transport {self.name}: {missing}")
        self.ctx = ctx
        self.options = validate(self.options_schema, ctx.options or {})
        (Path(ctx.run_dir) / "records").mkdir(parents=True, exist_ok=True)
        self.plan = self._net_plan(ctx, self.settings)
        self.type_hashes = self._type_hashes(ctx.topics)
        self._write_host_configs()
        if self.middleware == "zenoh" and self.plan.zenoh_mode == "router":
            self._start_router()
        if self.settings.deployment == "bridge":
            for spec in bridge_plan(self, ctx.topics, message_type):
                self._launch(spec)
        self._write_record()

    def _start_router(self) -> None:
        """A Zenoh router on the operator (rmw_zenoh's ``zenohd``): a session opened in router mode
        by the PyPI eclipse-zenoh package (:mod:`netloop.ros2.zenoh_router`), the same Zenoh
        release as the nodes' shim."""
        assert self.plan is not None and self.ctx is not None
        host = "operator" if "operator" in self.ctx.address else next(iter(self.ctx.address))
        path = ros2config.write(Path(self.ctx.run_dir) / "transport" / "zenoh_router.json5", ros2config.json5_text(
            ros2config.zenoh_config(self.plan, host, router=True), "netloop: the Zenoh router on the operator"))
        self.config_files["router"] = str(path)
        name = "zenoh_router"
        self._launch({"name": name, "host": host,
                      "argv": [sys.executable, "-m", "netloop.ros2.zenoh_router", str(path), f"__name:={name}"],
                      "params": {}})

    def _launch(self, spec: dict[str, Any]) -> None:
        assert self.ctx is not None and self.ctx.start is not None, "transport started without ctx.start"
        self.processes.append(spec)
        self.handles[spec["name"]] = self.ctx.start(spec["name"], spec["host"], spec["argv"], spec["params"])

    def _write_record(self) -> None:
        if self.ctx is None:
            return
        record = self.metadata() | {"processes": [{"name": p["name"], "host": p["host"], "argv": p["argv"],
                                                   "params": _shorten(p["params"])} for p in self.processes],
                                    "masters": dict(self.ctx.masters)}
        write_json_atomic(Path(self.ctx.run_dir) / "transport.json", record, indent=1)

    def stop(self) -> None:
        self._write_record()

    # --- checks before anything starts -----------------------------------------------------------
    def check_messages(self, largest_bytes: int, options: dict[str, Any]) -> str | None:
        if self.middleware == "zenoh" and largest_bytes > ros2config.ZENOH_MAX_MESSAGE_BYTES:
            return (f"deployment: a {largest_bytes}-byte message is larger than Zenoh's largest message "
                    f"(transport.link.rx.max_message_size, {ros2config.ZENOH_MAX_MESSAGE_BYTES} bytes)")
        return None

    # --- what ran ------------------------------------------------------------------------------
    def describe_topic(self, topic: str) -> str:
        """What carries a native topic, for ``negotiated_transport``: ``cyclonedds native
        reliable/volatile/10``."""
        qos = self.topic_qos.get(topic) or self.qos_for()
        return f"{self.middleware} native {qos.describe()}"

    def describe_connection(self, topic: str, ros1: str) -> str:
        """``negotiated_transport`` of a bridged topic: the node's local ROS 1 connection and what
        the bridges carry it over (``TCPROS+NODELAY via ros2_bridge (cyclonedds reliable/volatile/10)``)."""
        qos = self.topic_qos.get(topic) or self.qos_for()
        return ros1.replace(" via relay", "") + f" via ros2_bridge ({self.middleware} {qos.describe()})"

    def unmatched_bridges(self, read=None) -> list[str]:
        """Bridges whose status file does not say matched yet (their middleware endpoints);
        ``read(host, path)`` reads a status file (default: here)."""
        read = read or (lambda _host, path: read_status(Path(path)))
        waiting = []
        for p in self.processes:
            path = p["params"].get("status_path")
            if not path or p.get("matched"):
                continue
            if (read(p["host"], path) or {}).get("matched_ns"):
                p["matched"] = True
            else:
                waiting.append(p["name"])
        return waiting

    # --- the run's hooks (what a run does differently with ROS 2: transports/ros2_run.py) --------
    def native_connections(self, connections: list[Connection]) -> list[Connection]:
        return ros2_run.native_connections(self, connections)

    def unmatched(self, native: list[Connection], read_text: Callable[[str, str], str | None]) -> list[str]:
        return ros2_run.unmatched(self, native, read_text)

    def negotiated(self, ros1: dict[str, str], native: list[Connection]) -> dict[str, str]:
        return ros2_run.negotiated(self, ros1, native)

    def run_record(self) -> dict[str, Any]:
        record = ros2_run.ros2_record(self)
        return {} if record is None else {"ros2": record}

    def metadata(self) -> dict[str, Any]:
        opts = self.options or validate(self.options_schema, {})
        out = {"name": self.name, "description": self.description, "middleware": self.middleware,
               "ros2_stack": stack_of(self.middleware),
               "deployment": self.settings.deployment, "multi_master": True, "options": opts,
               "qos": self.qos_for().as_dict()}
        if self.ctx is not None:
            out.update(config_files={k: str(Path(v).relative_to(self.ctx.run_dir)) for k, v in self.config_files.items()},
                       topic_qos={t: q.describe() for t, q in self.topic_qos.items()},
                       native_nodes={n: {"host": e["host"], "topics": e["topics"], "qos": e.get("qos"),
                                         "status": str(Path(e["status_path"]).relative_to(self.ctx.run_dir))}
                                     for n, e in self.native_nodes.items()})
            if self.processes:
                out["relay_processes"] = {p["name"]: p["host"] for p in self.processes}
                out["stats_files"] = sorted(f"records/relay_{p['name']}_stats.jsonl" for p in self.processes)
        return out


def stack_of(middleware: str) -> dict[str, Any]:
    """What a row of ``middleware`` is: real ROS 2 (rcl and an rmw, with their versions) or
    netloop's nodes speaking the middleware library directly (metadata.json, the report)."""
    if middleware in REAL_ROS2:
        versions = distro.DISTROS[distro.DEFAULT_DISTRO]
        return {"kind": "ros2", "distro": distro.DEFAULT_DISTRO,
                "label": (f"real ROS 2 {distro.DEFAULT_DISTRO.capitalize()}: rcl {versions['rcl']} + rmw_fastrtps_cpp "
                          f"{versions['rmw_fastrtps_cpp']} (Fast DDS {versions['fastdds']})"),
                "versions": dict(versions)}
    library = {"cyclonedds": "Cyclone DDS 0.10", "fastdds": "Fast DDS 2.9", "zenoh": "Zenoh 1.10"}[middleware]
    return {"kind": "middleware-direct",
            "label": f"netloop's nodes on {library} directly (ROS 2's names, CDR and QoS; no rcl/rmw)"}


def read_status(path: Path) -> dict[str, Any] | None:
    """A node's status file, or None while it has not written one."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


