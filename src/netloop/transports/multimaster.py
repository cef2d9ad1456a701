"""``multimaster``: one ROS master per host, kept in sync (multimaster_fkie's scheme).

Each host runs a discovery + sync process next to its master. The hosts find each other by
multicast heartbeats (with unicast to the other hosts' addresses as the fallback where
multicast does not work or does not reach, e.g. the ends of a two-hop chain), and each
sync registers the remote publishers and subscribers of the experiment's crossing topics
in its local master (registerPublisher / registerSubscriber with the remote node's
XML-RPC URI). Nothing relays the data: the local master tells a subscriber about the
remote publisher, and the subscriber connects to it directly over TCPROS or UDPROS, as
``ros_transport`` says (``tcp_nodelay`` by default; ``udp``; ``tcp``; ``mixed`` = UDPROS up
to 16 KiB, TCP_NODELAY above). A peer that disappears is unsynchronised after
``peer_timeout`` and synchronised again when it comes back.

Implementations: ``fkie_master_discovery`` + ``fkie_master_sync`` when installed (ROS
Noetic), started with generated parameters (``mcast_group``, ``mcast_port``,
``robot_hosts``, ``heartbeat_hz``, ``sync_topics``, ...); otherwise netloop's own
:mod:`netloop.transports.mm_sync` (Python), which also reports statistics on
/netloop_relay/stats and in records/relay_mm_sync_<host>_stats.jsonl.
"""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Callable

from ..schema import Enum, Int, List, Num, Str, key, section
from .base import CrossingTopic, TransportContext
from .mm_sync import FROM_OPTIONS as MM_SYNC_FROM_OPTIONS
from .options import mapping_schema, typed
from .relay_common import (SMALL_MESSAGE_BYTES, RelayTransport, TransportError, find_ros_package, host_ports,
                           python_module_argv, ros_executable)

@section("multimaster: discovery and synchronisation")
class MultimasterOptions:
    """``transport_options.multimaster`` (docs/transports.md#options)."""

    implementation: str = key(Enum(["auto", "own", "fkie"], "auto",
                                   "multimaster_fkie when installed (auto), or netloop's own discovery + sync"))
    discovery: str = key(Enum(["auto", "multicast", "static"], "auto",
                              "multicast heartbeats; static = unicast to the other hosts; auto = multicast, with "
                              "unicast to the hosts multicast has not found"))
    mcast_group: str = key(Str("239.255.77.1", "multicast group of the heartbeats"))
    mcast_port: int = key(Int(11511, "UDP port of the multicast heartbeats", ge=1024, le=65535))
    port: int = key(Int(11611, "unicast heartbeat port of each host", ge=1024, le=65000))
    heartbeat_hz: float = key(Num(5.0, "heartbeats per second", gt=0, le=100))
    peer_timeout: float = key(Num(2.0, "a host not heard for this long [s] is unsynchronised", gt=0, le=600))
    static_after: float = key(Num(1.0, "auto: unicast to hosts multicast has not found after this long [s]",
                                  ge=0, le=600))
    sync_interval: float = key(Num(0.2, "seconds between two synchronisations", gt=0, le=60))
    ros_transport: str = key(Enum(["tcp_nodelay", "tcp", "udp", "mixed"], "tcp_nodelay",
                                  "what subscribers ask the remote publishers for"))
    sync_topics: list[str] = key(List(Str(), [], "topics to synchronise (default: the experiment's crossing topics)"))


#: the options as an experiment file holds them
OPTIONS = mapping_schema(MultimasterOptions)


def mm_sync_option_params(options: MultimasterOptions | dict[str, Any] | None) -> dict[str, Any]:
    """The parameters of netloop's own sync (:mod:`.mm_sync`) that come from the options, its
    only defaults (None: every default)."""
    o = typed(MultimasterOptions, options)
    return {k: getattr(o, k) for k in MM_SYNC_FROM_OPTIONS}


def fkie_installed() -> bool:
    return all(find_ros_package(p) is not None for p in ("fkie_master_discovery", "fkie_master_sync"))


#: master_discovery clamps heartbeat_hz to 25.5 and judges a peer offline only while its
#: heartbeats come at >= 0.3 Hz (DiscoveredMaster.MIN_HZ_FOR_QUALILTY), in
#: fkie_master_discovery/src/fkie_master_discovery/master_discovery.py, fkie/multimaster_fkie@143f8e4 (noetic-devel).
FKIE_HEARTBEAT_HZ = (0.3, 25.5)
#: master_sync's default ignore lists name its own nodes '/master_discovery' and '/master_sync';
#: netloop names them per host, so it adds these patterns (fkie_master_sync/src/fkie_master_sync/sync_thread.py@143f8e4).
FKIE_OWN_NODES = ["/master_discovery_*", "/master_sync_*"]


def fkie_discovery_params(options: MultimasterOptions | dict[str, Any], others: list[str], rpc_port: int) -> dict[str, Any]:
    """master_discovery's private parameters (names and types as
    fkie_master_discovery/src/fkie_master_discovery/{__init__,master_discovery}.py read them,
    fkie/multimaster_fkie@143f8e4). A peer is offline when no heartbeat came for
    measurement_intervals x timeout_factor seconds (divided by the rate below 1 Hz), checked every
    second: with measurement_intervals 1, timeout_factor carries netloop's ``peer_timeout``."""
    o = typed(MultimasterOptions, options)
    hz = float(o.heartbeat_hz)
    low, high = FKIE_HEARTBEAT_HZ
    if not low <= hz <= high:
        raise TransportError(f"transport_options.multimaster.heartbeat_hz: {hz:g} is outside what fkie_master_discovery "
                             f"uses ({low:g} .. {high:g} Hz: it clamps above, and detects no lost peer below)")
    static = o.discovery == "static"
    return {"mcast_group": o.mcast_group, "mcast_port": int(o.mcast_port), "heartbeat_hz": hz,
            "robot_hosts": list(others), "send_mcast": not static, "listen_mcast": not static,
            "rpc_port": int(rpc_port), "rosmaster_hz": 5.0, "remove_after": 300.0,
            "measurement_intervals": 1.0, "timeout_factor": float(o.peer_timeout) * min(hz, 1.0)}


def fkie_sync_params(sync_topics: list[str]) -> dict[str, Any]:
    """master_sync's private parameters (fkie_master_sync/src/fkie_master_sync/master_sync.py and
    fkie_master_discovery/src/fkie_master_discovery/filter_interface.py, fkie/multimaster_fkie@143f8e4).
    Its sync_topics entries are patterns: '*' is any text, matched whole and case-insensitively."""
    return {"sync_topics": list(sync_topics), "sync_hosts": [], "ignore_hosts": [],
            "ignore_nodes": list(FKIE_OWN_NODES), "sync_topics_on_demand": False, "resync_on_reconnect": True,
            "resync_on_reconnect_timeout": 0.0, "sync_remote_nodes": False, "check_host": True}


def plan(topics: list[CrossingTopic], address: dict[str, str], ports: dict[str, int],
         options: MultimasterOptions | dict[str, Any], implementation: str, records: Path,
         fkie_binary: Callable[[str, str], Path | None] = ros_executable) -> list[dict[str, Any]]:
    """The processes to start on each host: [{name, host, argv, params, own}]. Pure, for tests."""
    o = typed(MultimasterOptions, options)
    hosts = list(address)
    sync_topics = sorted(o.sync_topics or {t.topic for t in topics})
    peers = [{"host": h, "address": address[h], "port": ports[h]} for h in hosts]
    domain = f"{records.parent.name}-{zlib.crc32(str(records).encode()):08x}"  # this run's syncs only
    out = []
    for h in hosts:
        if implementation == "fkie":
            disc = fkie_binary("fkie_master_discovery", "master_discovery")
            sync = fkie_binary("fkie_master_sync", "master_sync")
            if disc is None or sync is None:
                raise TransportError("multimaster_fkie is installed without its master_discovery/master_sync nodes")
            discovery = fkie_discovery_params(o, [address[o] for o in hosts if o != h], ports[h])
            out.append({"name": f"master_discovery_{h}", "host": h,
                        "argv": [str(disc), f"__name:=master_discovery_{h}"], "params": discovery, "own": False})
            out.append({"name": f"master_sync_{h}", "host": h, "argv": [str(sync), f"__name:=master_sync_{h}"],
                        "params": fkie_sync_params(sync_topics), "own": False})
        else:
            name = f"mm_sync_{h}"
            out.append({"name": name, "host": h, "argv": python_module_argv("netloop.transports.mm_sync", name),
                        "params": mm_sync_option_params(o) | {
                            "host": h, "address": address[h], "domain": domain, "port": ports[h], "peers": peers,
                            "allowed_peers": sorted(set(address.values())), "sync_topics": sync_topics,
                            "stats_path": str(records / f"relay_{name}_stats.jsonl")},
                        "own": True})
    return out


class MultimasterTransport(RelayTransport):
    name = "multimaster"
    description = "one master per host, synchronised (multimaster_fkie's scheme); nodes connect directly"
    relays = False   # the masters are synchronised; the nodes' connections carry the messages
    options_schema = OPTIONS
    stats_type = "netloop/MasterSyncStats"

    def detect_implementation(self) -> str:
        return "fkie" if fkie_installed() else "own"

    def subscriber_transport(self, topic, message_bytes=None):
        choice = typed(MultimasterOptions, self.options).ros_transport
        if choice == "mixed":
            return "udp" if message_bytes is None or message_bytes <= SMALL_MESSAGE_BYTES else "tcp_nodelay"
        return choice

    def start(self, ctx: TransportContext) -> None:
        options = typed(MultimasterOptions, self._begin(ctx))
        impl = options.implementation
        if impl == "auto":
            impl = self.detect_implementation()
        elif impl == "fkie" and not fkie_installed():
            raise TransportError("transport_options.multimaster.implementation is 'fkie' but fkie_master_discovery/"
                                 "fkie_master_sync are not installed")
        self.implementation = impl
        ports = host_ports(ctx, options.port)
        for spec in plan(ctx.topics, ctx.address, ports, options, impl, Path(ctx.run_dir) / "records"):
            self._launch(spec)
        self._write_record()
