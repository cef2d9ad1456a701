"""``nimbro`` and ``nimbro_mixed``: topic relays with nimbro_topic_transport's semantics.

One ROS master per host. For every pair of hosts a topic crosses, a *sender* on the
publisher's host subscribes the topic (any type), serializes each message, optionally
compresses it and limits its rate, and sends it to a *receiver* on the subscriber's host,
which republishes it with the original type for the local subscribers:

  ``nimbro``        every topic over UDP: each message cut into datagrams that fit one
                    1500-byte IP packet, reassembled at the receiver (incomplete messages
                    dropped after ``reassembly_timeout``);
  ``nimbro_mixed``  the paper's "Nimbro*": topics whose messages are at most
                    ``threshold_bytes`` (16 KiB: the loop, a laser) over UDP, larger ones
                    (images) over TCP.

Per topic (``transport_options: {nimbro: {topics: {/flows/image: {rate: 5, compress: true,
protocol: tcp}}}}``): ``rate`` [Hz] drops messages over the rate, ``compress`` zlib (bz2 in
nimbro), ``protocol`` forces UDP or TCP.

Over TCP, as nimbro_topic_transport's tcp_sender/tcp_receiver (AIS-Bonn/nimbro_network, every
version: master@7e1de20 and the develop rewrite): Nagle stays on and the message is
stop-and-wait — the receiver writes one byte after publishing each message and the sender
waits for it before the next. ``message_ack: false`` / ``tcp_nodelay: true`` give a pipelined,
Nagle-free relay instead (netloop's own relay only).

Implementations: when ``nimbro_topic_transport`` is installed (ROS Noetic:
/opt/ros/noetic/share/nimbro_topic_transport, or a catkin workspace rospack finds), it is
started with generated parameters, in whichever of its two variants is installed
(:func:`nimbro_variant`):

  ``master``   (AIS-Bonn/nimbro_network@7e1de20; needs Qt4 to build, which Noetic's Ubuntu 20.04
               lacks) ``udp_sender``/``udp_receiver``, ``tcp_sender``/``tcp_receiver``: one sender
               per protocol and destination (``destination_addr``, ``destination_port``,
               ``topics: [{name, rate, compress, type}]``), one receiver per protocol and host
               (``port``);
  ``develop``  (the branch that builds on Noetic, AIS-Bonn/nimbro_network@ed6683b) ``sender`` and
               ``receiver``: one sender per destination carrying both protocols
               (``destination_addr``, ``port``, ``udp_topics``/``tcp_topics: [{name, rate,
               compress}]``), one receiver per host listening for UDP and TCP on the same
               ``port``. Its sender applies ``rate`` to TCP topics too, compresses with zstd.

Either variant's receivers advertise a topic only once something about it arrives, so a
placeholder publisher (``flow_sink`` in relay mode, which never publishes) advertises each
relayed topic at start, so that the loop's plant sees its ``u`` publisher and starts.
Otherwise (always on Debian 12) netloop's own nodes, one per role as master's (``nimbro_udp_sender``,
``nimbro_udp_receiver``, ``nimbro_tcp_sender``, ``nimbro_tcp_receiver``: src/relays/nimbro_*.cpp)
with the same semantics, which also advertises at start from the type given in its
configuration and reports statistics (/netloop_relay/stats, records/relay_<node>_stats.jsonl).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from .. import paths
from ..schema import Bool, Enum, Int, Map, Num, key, section, validate
from .base import CrossingTopic, TransportContext
from .options import mapping_schema, typed
from .relay_common import (SMALL_MESSAGE_BYTES, RelayTransport, TransportError, find_ros_package, host_ports,
                           message_type, ros_executable)

NIMBRO_PACKAGE = "nimbro_topic_transport"

@section("per topic: {rate, compress, protocol}", default={})
class NimbroTopic:
    """``transport_options.nimbro.topics.<topic>``."""

    rate: float = key(Num(0.0, "at most this many messages per second (0 = no limit); more are dropped", ge=0))
    compress: bool = key(Bool(False, "compress each message (zlib here, bz2 in nimbro_topic_transport)"))
    protocol: str = key(Enum(["auto", "udp", "tcp"], "auto", "force UDP or TCP for this topic"))


@section("nimbro, nimbro_mixed: the relays' implementation, ports, sizes, TCP behaviour, per-topic settings")
class NimbroOptions:
    """``transport_options.nimbro`` / ``.nimbro_mixed`` (docs/transports.md#options)."""

    implementation: str = key(Enum(["auto", "own", "nimbro"], "auto",
                                   "nimbro_topic_transport when installed (auto), or netloop's own relay"))
    port: int = key(Int(17100, "UDP receiver port on each host; the TCP receiver listens on port + 1",
                        ge=1024, le=65000))
    mtu: int = key(Int(1500, "IP packet size the datagrams are cut to", ge=576, le=65535))
    threshold_bytes: int = key(Int(SMALL_MESSAGE_BYTES, "nimbro_mixed: larger messages go over TCP", ge=0))
    reassembly_timeout: float = key(Num(0.5, "an incomplete UDP message is dropped after this many seconds",
                                        gt=0, le=60))
    max_message_bytes: int = key(Int(16 << 20, "larger messages are refused by the receivers", ge=1024, le=1 << 30))
    message_ack: bool = key(Bool(True, "TCP: the receiver acknowledges each message with one byte and the sender "
                                       "waits for it before writing the next (as nimbro_topic_transport always "
                                       "does)"))
    tcp_nodelay: bool = key(Bool(False, "TCP: disable Nagle's algorithm on the relay's connection "
                                        "(nimbro_topic_transport never does)"))
    topics: dict[str, NimbroTopic] = key(Map({}, {}, "per topic: {rate, compress, protocol}",
                                             extra=NimbroTopic.schema))

    def topic(self, name: str) -> NimbroTopic:
        """The settings of one topic (every default when it has none)."""
        return self.topics.get(name) or validate(NimbroTopic.schema, {})


#: the options as an experiment file holds them
OPTIONS = mapping_schema(NimbroOptions)


#: nimbro_topic_transport's variants: the node executables each installs
VARIANTS = {"master": ("udp_sender", "udp_receiver", "tcp_sender", "tcp_receiver"),
            "develop": ("sender", "receiver")}
#: what a missing nimbro_topic_transport needs, said when ``implementation: nimbro`` finds none
NIMBRO_NEEDED = ("build AIS-Bonn/nimbro_network in a catkin workspace on the machines and source it: on ROS Noetic "
                 "its develop branch (nodes sender/receiver; the master branch's udp_sender needs Qt4, which "
                 "Noetic's Ubuntu 20.04 lacks), elsewhere either branch")


def nimbro_variant(executable: Callable[[str], Path | None] = lambda n: ros_executable(NIMBRO_PACKAGE, n),
                   package: Callable[[], Path | None] = lambda: find_ros_package(NIMBRO_PACKAGE)) -> str | None:
    """``master`` or ``develop``: the variant of nimbro_topic_transport installed here (master's
    nodes first when a workspace somehow has both), or None."""
    if package() is None:
        return None
    for variant, nodes in VARIANTS.items():
        if all(executable(n) is not None for n in nodes):
            return variant
    return None


def nimbro_installed() -> bool:
    return nimbro_variant() is not None


def topic_protocol(topic: CrossingTopic, options: NimbroOptions | dict[str, Any], mixed: bool) -> str:
    """``udp`` or ``tcp``: the topic's own choice, else by its message size (``nimbro_mixed``)."""
    o = typed(NimbroOptions, options)
    forced = o.topic(topic.topic).protocol
    if forced != "auto":
        return forced
    return "tcp" if mixed and topic.message_bytes > o.threshold_bytes else "udp"


def _safe(name: str) -> str:
    return name.strip("/").replace("/", "_") or "root"


#: nimbro_topic_transport's UDP datagram header holds the topic name and type in char[64]
#: arrays (nimbro_topic_transport/src/udp/udp_packet.h, AIS-Bonn/nimbro_network@7e1de20):
#: longer ones are cut to 63 characters and arrive under another name.
NIMBRO_UDP_NAME_CHARS = 63


def check_nimbro_limits(topics: list[CrossingTopic], options: NimbroOptions | dict[str, Any], mixed: bool,
                        type_of: Callable[[str], dict | None], variant: str = "master") -> None:
    """Refuse what nimbro_topic_transport cannot carry, naming the key: a topic name or type
    longer than its UDP header holds (both variants: char[64]), a ``rate`` on a TCP topic
    (master's tcp_sender reads no rate; develop's sender limits every topic), another TCP
    behaviour than stop-and-wait with Nagle (both), and a message type unknown here (the
    receivers look the type up on the receiving host — master with ``rosmsg``, develop with its
    get_msg_def.py — and cannot publish what they do not find)."""
    o = typed(NimbroOptions, options)
    for t in topics:
        proto = topic_protocol(t, o, mixed)
        key = f"transport_options.nimbro.topics.{t.topic}"
        if proto == "udp":
            for what, text in (("topic name", t.topic), ("message type", t.datatype)):
                if len(text) > NIMBRO_UDP_NAME_CHARS:
                    raise TransportError(f"{key}: {what} '{text}' has {len(text)} characters; nimbro_topic_transport's "
                                         f"UDP header holds at most {NIMBRO_UDP_NAME_CHARS} (use protocol: tcp or "
                                         "implementation: own)")
        if proto == "tcp" and variant == "master" and o.topic(t.topic).rate:
            raise TransportError(f"{key}.rate: nimbro_topic_transport's tcp_sender has no rate limit (it reads only "
                                 "name, compress, type, enable); use protocol: udp, no rate, or implementation: own")
        if proto == "tcp":
            for key_name, upstream in (("message_ack", True), ("tcp_nodelay", False)):
                if getattr(o, key_name) != upstream:
                    raise TransportError(f"transport_options.nimbro.{key_name}: nimbro_topic_transport's TCP path "
                                         f"always runs with {key_name}: {str(upstream).lower()}; use "
                                         "implementation: own for another value")
        if type_of(t.datatype) is None:
            raise TransportError(f"{key}: message type '{t.datatype}' is not installed here; nimbro_topic_transport's "
                                 "receivers need it installed on the receiving host (they run rosmsg md5/show)")


def plan(topics: list[CrossingTopic], address: dict[str, str], ports: dict[str, int],
         options: NimbroOptions | dict[str, Any], mixed: bool, implementation: str, records: Path,
         node_binary: Callable[[str], Path] = paths.node_binary,
         nimbro_binary: Callable[[str], Path | None] = lambda n: ros_executable(NIMBRO_PACKAGE, n),
         type_of: Callable[[str], dict | None] = message_type, variant: str = "master") -> list[dict[str, Any]]:
    """The processes to start: [{name, host, argv, params, own}] — receivers first, then
    senders (then, for nimbro_topic_transport, the placeholder publishers). Pure: it starts
    nothing, so the configuration generated for the real nimbro is tested here too.
    ``variant`` (implementation ``nimbro`` only): nimbro_topic_transport's ``master`` or ``develop``."""
    options = typed(NimbroOptions, options)
    if implementation == "nimbro":
        if variant not in VARIANTS:
            raise TransportError(f"unknown nimbro_topic_transport variant {variant!r}; known: {', '.join(VARIANTS)}")
        check_nimbro_limits(topics, options, mixed, type_of, variant)
    receivers: dict[tuple[str, str], list[CrossingTopic]] = {}
    senders: dict[tuple[str, str, str], list[CrossingTopic]] = {}
    for t in topics:
        proto = topic_protocol(t, options, mixed)
        receivers.setdefault((t.dest_host, proto), []).append(t)
        senders.setdefault((t.source_host, t.dest_host, proto), []).append(t)

    def port_of(host: str, proto: str) -> int:
        return ports[host] + (1 if proto == "tcp" else 0)

    def topic_entry(t: CrossingTopic, full_type: bool, with_type: bool = True) -> dict[str, Any]:
        opts = options.topic(t.topic)
        entry: dict[str, Any] = {"name": t.topic}
        if opts.rate:
            entry["rate"] = float(opts.rate)
        if opts.compress:
            entry["compress"] = True
        if not with_type:   # develop's sender learns the type from the master and the messages
            return entry
        entry["type"] = t.datatype
        if full_type:
            info = type_of(t.datatype)
            if info:
                entry.update(md5=info["md5"], definition=info["definition"])
            else:
                del entry["type"]  # learnt from the sender's announcement
        return entry

    def binary(role: str) -> str:
        if implementation == "own":
            return str(node_binary(f"nimbro_{role}"))   # netloop's node of the same role
        exe = nimbro_binary(role)
        if exe is None:
            raise TransportError(f"{NIMBRO_PACKAGE} has no executable '{role}'")
        return str(exe)

    out = []
    develop = implementation == "nimbro" and variant == "develop"
    if develop:   # one sender per pair of hosts, one receiver per host
        out += _develop_relays(topics, address, ports, options, mixed, binary,
                               lambda t: topic_entry(t, False, with_type=False))
    for (host, proto), ts in (sorted(receivers.items()) if not develop else ()):
        name = f"nimbro_{proto}_receiver_{host}"
        params: dict[str, Any] = {"port": port_of(host, proto)}
        if implementation == "own":
            params.update(role=f"{proto}_receiver", address=address[host],
                          allowed_peers=sorted({address[t.source_host] for t in ts}),
                          topics=[topic_entry(t, True) for t in ts],
                          reassembly_timeout=options.reassembly_timeout,
                          max_message_bytes=options.max_message_bytes,
                          stats_path=str(records / f"relay_{name}_stats.jsonl"))
            if proto == "tcp":
                params["message_ack"] = options.message_ack
        out.append({"name": name, "host": host, "argv": [binary(f"{proto}_receiver"), f"__name:={name}"],
                    "params": params, "own": implementation == "own"})
    for (src, dst, proto), ts in (sorted(senders.items()) if not develop else ()):
        name = f"nimbro_{proto}_sender_{src}_to_{dst}"
        params = {"destination_addr": address[dst], "destination_port": port_of(dst, proto),
                  "topics": [topic_entry(t, implementation == "own") for t in ts]}
        if implementation == "own":
            params.update(role=f"{proto}_sender", address=address[src], mtu=options.mtu,
                          stats_path=str(records / f"relay_{name}_stats.jsonl"))
            if proto == "tcp":
                params.update(message_ack=options.message_ack, tcp_nodelay=options.tcp_nodelay)
        out.append({"name": name, "host": src, "argv": [binary(f"{proto}_sender"), f"__name:={name}"],
                    "params": params, "own": implementation == "own"})
    if implementation == "nimbro":
        for t in topics:  # advertise each topic at start (nimbro's receivers do so only later)
            info = type_of(t.datatype)   # known: check_nimbro_limits refused unknown types
            name = f"nimbro_placeholder_{_safe(t.topic)}"
            out.append({"name": name, "host": t.dest_host,
                        "argv": [str(node_binary("flow_sink")), f"__name:={name}", f"flow:={t.topic}",
                                 f"flow_in:=/netloop_placeholder{t.topic}"],
                        "params": {"republish": True, "datatype": info["type"], "md5sum": info["md5"],
                                   "definition": info["definition"], "transport": "tcp_nodelay", "kind": "tap",
                                   "record_path": ""},
                        "own": False})
    return out


def _develop_relays(topics: list[CrossingTopic], address: dict[str, str], ports: dict[str, int],
                    options: NimbroOptions, mixed: bool, binary: Callable[[str], str],
                    entry: Callable[[CrossingTopic], dict[str, Any]]) -> list[dict[str, Any]]:
    """nimbro_topic_transport's develop variant: one ``receiver`` per receiving host (UDP and TCP
    on ``port``: src/receiver/udp_receiver.cpp and tcp_receiver.cpp read ~port), then one
    ``sender`` per pair of hosts with ``destination_addr``, ``port`` and the topic lists
    ``udp_topics``/``tcp_topics`` (src/sender/sender.cpp, udp_sender.cpp, tcp_sender.cpp)."""
    out = []
    for host in sorted({t.dest_host for t in topics}):
        name = f"nimbro_receiver_{host}"
        out.append({"name": name, "host": host, "argv": [binary("receiver"), f"__name:={name}"],
                    "params": {"port": ports[host]}, "own": False})
    pairs: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = {}
    for t in topics:
        lists = pairs.setdefault((t.source_host, t.dest_host), {})
        lists.setdefault(f"{topic_protocol(t, options, mixed)}_topics", []).append(entry(t))
    for (src, dst), lists in sorted(pairs.items()):
        name = f"nimbro_sender_{src}_to_{dst}"
        out.append({"name": name, "host": src, "argv": [binary("sender"), f"__name:={name}"],
                    "params": {"destination_addr": address[dst], "port": ports[dst], **lists}, "own": False})
    return out


class NimbroTransport(RelayTransport):
    options_schema = OPTIONS

    def __init__(self, name: str, mixed: bool, description: str):
        self.name, self.mixed, self.description = name, mixed, description
        super().__init__()

    def check_messages(self, largest_bytes: int, options: NimbroOptions | dict[str, Any]) -> str | None:
        limit = typed(NimbroOptions, options).max_message_bytes
        if largest_bytes > limit:
            return (f"max_message_bytes: a {largest_bytes}-byte message is larger than max_message_bytes "
                    f"{limit}: the receiving relay would refuse every such message")
        return None

    def detect_implementation(self) -> str:
        return "nimbro" if nimbro_installed() else "own"

    def programs(self, options: NimbroOptions | dict[str, Any]) -> list[tuple[str, str]]:
        """netloop's relays, or nimbro_network's package where it runs instead (as start() chooses)."""
        impl = typed(NimbroOptions, options).implementation
        if impl == "nimbro" or (impl == "auto" and nimbro_installed()):
            return [("package", NIMBRO_PACKAGE)]
        return [("node", f"nimbro_{proto}_{role}") for proto in ("udp", "tcp") for role in ("sender", "receiver")]

    def start(self, ctx: TransportContext) -> None:
        options = typed(NimbroOptions, self._begin(ctx))
        impl = options.implementation
        self.variant = nimbro_variant()
        if impl == "auto":
            impl = "nimbro" if self.variant else "own"
        elif impl == "nimbro" and self.variant is None:
            where = find_ros_package(NIMBRO_PACKAGE)
            found = (f"{NIMBRO_PACKAGE} is at {where} but has neither master's nodes "
                     f"({', '.join(VARIANTS['master'])}) nor develop's ({', '.join(VARIANTS['develop'])}): is it "
                     "built?" if where else f"{NIMBRO_PACKAGE} is not installed (looked in /opt/ros/noetic/share "
                                            "and with rospack)")
            raise TransportError(f"transport_options.{self.name}.implementation is 'nimbro' but {found}; "
                                 f"{NIMBRO_NEEDED}; or use implementation: own")
        self.implementation = impl
        if impl == "nimbro":   # say which of upstream's variants runs (also in transport.json: nimbro_variant)
            print(f"{self.name}: nimbro_topic_transport's {self.variant} variant ({', '.join(VARIANTS[self.variant])}) "
                  f"at {find_ros_package(NIMBRO_PACKAGE)}", file=sys.stderr, flush=True)
        ports = host_ports(ctx, options.port, per_host=2)
        for spec in plan(ctx.topics, ctx.address, ports, options, self.mixed, impl, Path(ctx.run_dir) / "records",
                         variant=self.variant or "master"):
            self._launch(spec)
        self._write_record()

    def metadata(self):
        threshold = typed(NimbroOptions, self.options).threshold_bytes
        variant = getattr(self, "variant", None) if self.ctx is not None else nimbro_variant()
        return super().metadata() | {
            "mixed": self.mixed, "threshold_bytes": threshold if self.mixed else None,
            # which nimbro_topic_transport was found here (None: not installed)
            "nimbro_variant": (f"{variant} ({', '.join(VARIANTS[variant])})" if variant else None)}
