"""``priority``: the Pound scheme — one relay per host, one UDP socket between hosts, a
priority per topic and a single send queue that holds the backlog.

Each host runs ``priority_relay`` (src/relays/priority_relay.cpp). It subscribes the topics
published on its host (any type), cuts each message into datagrams of one IP packet and
queues them in one queue ordered by priority (FIFO within a priority): a small urgent
message overtakes a large one between two datagrams. Nothing waits where the relay cannot
reorder it: with ``backpressure`` a datagram that is not urgent leaves only while the bytes
still unsent below the relay's socket (SIOCOUTQ: the host's qdisc) are under
``backpressure_bytes``, so the backlog waits in the relay, the link's own queue (its htb)
sets the rate, and an urgent message waits behind at most about one frame. Urgent datagrams
(priority >= ``dscp_min_priority``) always go at once and carry DSCP EF (``dscp``), so the
host's qdisc and an 802.11e MAC can serve them first. Without backpressure, datagrams
leave at a fixed pace (``rate_fraction`` x the link's capacity), as in Pound. The relay's
queue is bounded (``max_queue_bytes``); room is made by dropping the least urgent messages
first.

Options (``transport_options: {priority: {...}}``):
  ``priorities``      {topic: 0..255}, higher = more urgent. Default (Pound's order): the
                      loop's ``/y`` and ``/u`` 250, then the other topics by message size,
                      smallest first: 200, 190, ...
  ``backpressure``    true (default): non-urgent datagrams wait in the relay while the bytes
                      unsent below its socket are >= ``backpressure_bytes`` (default 1500:
                      one queued datagram's buffer is larger, so one goes when the qdisc
                      holds none of the relay's); unpaced unless ``rate_mbit`` is given.
  ``dscp``            true (default): datagrams of topics with priority >= ``dscp_min_priority``
                      (250: the loop's /y and /u; with no such topic the highest priority
                      present) carry DSCP EF (IP TOS 0xb8), the others none.
  ``rate_mbit``       pacing rate (a cap with backpressure); without backpressure the default is
                      ``rate_fraction`` x the link's nominal capacity (ctx.link_mbit),
                      ``rate_fraction_2hop`` x on a two-hop chain (every datagram crosses the
                      shared channel twice); no pacing when the link has no capacity
                      (loopback) and none is given.
  ``rate_fraction``   0.85 (without backpressure): the 6 Mbit/s 802.11a link of ``wifi6``
                      carries ~5.3 Mbit/s of UDP (1500-byte packets): 5.1 Mbit/s. Measured
                      2026-11-26 (2-core VM, Pound's two flows, medians of 3): the laser's D
                      4.82 ms paced, 5.04 with backpressure alone (an image datagram still
                      waits in the htb ahead of it), 3.26 with backpressure and EF (the htb
                      serves EF first); a 5.1 Mbit/s cap on top: 3.65. Hence no default pace.
  ``rate_fraction_2hop`` 0.35: the ``wifi6_2hop`` chain carries ~2.7 Mbit/s of UDP end to
                      end; 2.1 Mbit/s leaves room for the loop's traffic both ways.
  ``forward``         ``relay`` (default): on a chain, the relay host's priority_relay
                      forwards datagrams by their priority with its own backpressure; ``ip``:
                      the ends address each other and the relay namespace routes (IP).
  ``max_queue_bytes``, ``mtu``, ``overhead_bytes``, ``reassembly_timeout``, ``port``,
  ``compress`` (list of topics to zlib-compress).

Priorities can be changed during a run: ``PriorityTransport.set_priorities({topic: p})`` (on
the run's transport instance) or ``set_run_priorities(run_dir, {topic: p})`` (from any
process, through the run's transport.json) sets each relay's ``~priorities`` parameter
(``rosparam set /priority_relay_<host>/priorities "[{topic: /flows/image, priority: 250}]"``
does the same by hand); the relays read it every 0.2 s and queued messages follow at once.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from .. import paths
from ..schema import Bool, Enum, Int, List, Map, Num, Str, key, section
from .base import CrossingTopic, TransportContext
from .options import mapping_schema, typed
from .relay_common import RelayTransport, default_priorities, host_ports, message_type


@section("priority: the Pound relay's priorities, backpressure, marking and pacing")
class PriorityOptions:
    """``transport_options.priority`` (docs/transports.md#options)."""

    priorities: dict[str, int] = key(Map({}, {}, "topic -> priority 0..255 (higher = more urgent)",
                                         extra=Int(doc="priority", ge=0, le=255)))
    backpressure: bool = key(Bool(True, "non-urgent datagrams wait in the relay while the bytes unsent below its "
                                        "socket (SIOCOUTQ: the host's qdisc) are >= backpressure_bytes; no default "
                                        "pacing"))
    backpressure_bytes: int = key(Int(1500, "backpressure threshold [bytes unsent below the socket, counted as the "
                                            "kernel's buffers: one queued 1472-byte datagram is ~2.3 KB]",
                                      ge=1, le=1 << 24))
    backpressure_poll_ms: float = key(Num(0.3, "a held datagram looks again after this long [ms]", gt=0, le=10))
    dscp: bool = key(Bool(True, "datagrams of topics with priority >= dscp_min_priority carry DSCP EF (IP TOS 0xb8)"))
    dscp_min_priority: int = key(Int(250, "urgent topics: marked EF and never held back (with no topic this "
                                          "urgent, the highest priority present)", ge=0, le=255))
    rate_mbit: float | None = key(Num(None, "pacing rate [Mbit/s of IP packets]; without backpressure default "
                                            "rate_fraction x link capacity, with backpressure a cap (default none)",
                                      gt=0))
    rate_fraction: float = key(Num(0.85, "without backpressure: default pacing rate as a fraction of the link's "
                                         "nominal capacity", gt=0, le=1))
    rate_fraction_2hop: float = key(Num(0.35, "the same on a two-hop chain (every datagram crosses the channel "
                                              "twice, and the ends are hidden from each other)", gt=0, le=1))
    forward: str = key(Enum(["relay", "ip"], "relay",
                            "two-hop chains: forwarding by the relay host's relay, or IP routing"))
    max_queue_bytes: int = key(Int(256 * 1024, "bytes the send queue holds; beyond, least urgent messages are "
                                               "dropped", ge=16 * 1024, le=1 << 30))
    mtu: int = key(Int(1500, "IP packet size the datagrams are cut to", ge=576, le=65535))
    overhead_bytes: int = key(Int(28, "bytes counted per datagram on top of its UDP payload when pacing (IP + UDP)",
                                  ge=0, le=200))
    credit_ms: float = key(Num(1.0, "pacing: time lost to a late wake-up that may be made up for [ms]",
                               ge=0, le=100))
    reassembly_timeout: float = key(Num(0.5, "an incomplete message is dropped after this many seconds",
                                        gt=0, le=60))
    rt_priority: int = key(Int(0, "SCHED_FIFO priority of the relays' send/receive threads (0 = normal; needs "
                                  "root)", ge=0, le=99))
    port: int = key(Int(17300, "UDP port of each host's relay", ge=1024, le=65000))
    compress: list[str] = key(List(Str(), [], "topics whose messages are zlib-compressed"))


#: the options as an experiment file holds them
OPTIONS = mapping_schema(PriorityOptions)


#: bytes of the relay's own header in every datagram (src/relays/wire/format.h kPacketHeaderSize)
PACKET_HEADER_BYTES = 40
#: bytes of IP + UDP header in every datagram (kIpUdpOverhead)
IP_UDP_BYTES = 28


def queued_bytes(message_bytes: int, mtu: int) -> int:
    """Bytes one message occupies in the relay's send queue: its datagrams' payloads with the
    relay header each (how PriorityQueue::push counts them)."""
    per_packet = mtu - IP_UDP_BYTES - PACKET_HEADER_BYTES
    packets = max(1, -(-message_bytes // per_packet))
    return message_bytes + packets * PACKET_HEADER_BYTES


def pacing_rate(options: PriorityOptions | dict[str, Any], link_mbit: float | None, two_hop: bool) -> float:
    """Pacing rate [Mbit/s]; 0 = unpaced (with backpressure the queue below sets the pace)."""
    o = typed(PriorityOptions, options)
    if o.rate_mbit:
        return float(o.rate_mbit)
    if not link_mbit or o.backpressure:
        return 0.0
    return link_mbit * (o.rate_fraction_2hop if two_hop else o.rate_fraction)


def urgent_priority(priorities: dict[str, int], options: PriorityOptions | dict[str, Any]) -> int:
    """The lowest priority that is urgent (never held back, marked EF): ``dscp_min_priority``,
    or the highest priority present when no topic reaches it."""
    least = typed(PriorityOptions, options).dscp_min_priority
    return min(least, max(priorities.values(), default=least))


def plan(topics: list[CrossingTopic], address: dict[str, str], ports: dict[str, int],
         options: PriorityOptions | dict[str, Any], link_mbit: float | None, records: Path, node_binary: Callable[[str], Path] = paths.node_binary,
         type_of: Callable[[str], dict | None] = message_type) -> list[dict[str, Any]]:
    """One relay per host (the relay host of a chain only when it forwards): [{name, host,
    argv, params}]. Pure, for tests."""
    o = typed(PriorityOptions, options)
    hosts = list(address)
    index = {h: i for i, h in enumerate(hosts)}
    chain = "relay" in hosts and len(hosts) == 3
    forwarding = chain and o.forward == "relay"
    ends = [h for h in hosts if h != "relay"]

    def routes_of(h: str) -> list[dict[str, int]]:  # an end reaches the other end through the relay host
        if not forwarding or h == "relay":
            return []
        return [{"dest": index[b], "via": index["relay"]} for b in ends if b != h]

    priorities = default_priorities(topics) | o.priorities
    entries = []
    for t in topics:
        entry: dict[str, Any] = {"name": t.topic, "priority": int(priorities.get(t.topic, 100)),
                                 "source": index[t.source_host], "dest": index[t.dest_host],
                                 "compress": t.topic in o.compress}
        info = type_of(t.datatype)
        if info:
            entry.update(type=info["type"], md5=info["md5"], definition=info["definition"])
        entries.append(entry)
    rate = pacing_rate(o, link_mbit, chain)
    urgent = urgent_priority({e["name"]: e["priority"] for e in entries}, o)
    host_list = [{"name": h, "address": address[h], "port": ports[h]} for h in hosts]
    out = []
    for h in hosts:
        involved = any(t.source_host == h or t.dest_host == h for t in topics)
        if not involved and not (forwarding and h == "relay"):
            continue
        name = f"priority_relay_{h}"
        out.append({"name": name, "host": h, "argv": [str(node_binary("priority_relay")), f"__name:={name}"],
                    "params": {"self": index[h], "hosts": host_list, "routes": routes_of(h), "topics": entries,
                               "rate_mbit": rate, "overhead_bytes": o.overhead_bytes,
                               "backpressure_bytes": o.backpressure_bytes if o.backpressure else 0,
                               "backpressure_poll_ms": o.backpressure_poll_ms,
                               "urgent_priority": urgent, "dscp": o.dscp,
                               "credit_ms": o.credit_ms, "max_queue_bytes": o.max_queue_bytes,
                               "mtu": o.mtu, "forward": forwarding,
                               "reassembly_timeout": o.reassembly_timeout,
                               "rt_priority": o.rt_priority,
                               "stats_path": str(records / f"relay_{name}_stats.jsonl")},
                    "own": True})
    return out


_SET_PARAM = """
import json, sys, xmlrpc.client
master, name, value = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
code, msg, _ = xmlrpc.client.ServerProxy(master).setParam("/netloop_priority", name, value)
sys.exit(0 if code == 1 else msg)
"""


def _set_relay_priorities(processes: list[dict[str, Any]], masters: dict[str, str],
                          exec_prefix: dict[str, list[str]], priorities: dict[str, int]) -> None:
    """Sets the ~priorities parameter of each relay process, on its host's master."""
    value = [{"topic": t, "priority": int(p)} for t, p in sorted(priorities.items())]
    for spec in processes:
        host = spec["host"]
        cmd = list(exec_prefix.get(host, [])) + [sys.executable, "-c", _SET_PARAM, masters[host],
                                                 f"/{spec['name']}/priorities", json.dumps(value)]
        subprocess.run(cmd, check=True, capture_output=True, timeout=10)


def set_run_priorities(run_dir: Path, priorities: dict[str, int]) -> None:
    """Changes topic priorities ({topic: 0..255}) of the relays of a run that is going on,
    from any process: its runs/<id>/transport.json says which relays run where."""
    record_path = Path(run_dir) / "transport.json"
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError) as e:
        raise RuntimeError(f"{record_path}: no record of a started transport ({e})") from None
    if record.get("name") != "priority":
        raise RuntimeError(f"{record_path}: the run's transport is {record.get('name')!r}, not 'priority'")
    _set_relay_priorities(record["processes"], record["masters"], record["exec_prefix"], priorities)


class PriorityTransport(RelayTransport):
    name = "priority"
    description = ("Pound: one UDP relay per host, one queue ordered by topic priority; the backlog waits "
                   "in the relay (backpressure), urgent datagrams marked EF")
    options_schema = OPTIONS

    def programs(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        return [("node", "priority_relay")]

    def start(self, ctx: TransportContext) -> None:
        options = typed(PriorityOptions, self._begin(ctx))
        self.implementation = "own"
        ports = host_ports(ctx, options.port)
        self.specs = plan(ctx.topics, ctx.address, ports, options, ctx.link_mbit, Path(ctx.run_dir) / "records")
        for spec in self.specs:
            self._launch(spec)
        self._write_record()

    def check_messages(self, largest_bytes: int, options: PriorityOptions | dict[str, Any]) -> str | None:
        o = typed(PriorityOptions, options)
        need = queued_bytes(largest_bytes, o.mtu)
        if need > o.max_queue_bytes:
            return (f"max_queue_bytes: a {largest_bytes}-byte message takes {need} bytes of the relay's "
                    f"send queue (datagrams of mtu {o.mtu} with a {PACKET_HEADER_BYTES}-byte header "
                    f"each), more than max_queue_bytes {o.max_queue_bytes}: the relay would refuse "
                    f"every such message; set max_queue_bytes to at least {need}")
        return None

    def current_priorities(self) -> dict[str, int]:
        return {t["name"]: t["priority"] for t in (self.processes[0]["params"]["topics"] if self.processes else [])}

    def set_priorities(self, priorities: dict[str, int]) -> None:
        """Changes topic priorities of the running relays (their ~priorities parameter), from
        the host of each relay (so it works whether hosts are namespaces or not)."""
        assert self.ctx is not None, "priority transport not started"
        _set_relay_priorities(self.processes, self.ctx.masters, self.ctx.exec_prefix, priorities)
        self.overrides = dict(priorities)

    def metadata(self):
        out = super().metadata()
        if self.ctx is not None and self.processes:
            params = self.processes[0]["params"]
            out.update(priorities=self.current_priorities(), rate_mbit=params["rate_mbit"],
                       forward=params["forward"], backpressure_bytes=params["backpressure_bytes"],
                       urgent_priority=params["urgent_priority"], dscp=params["dscp"])
        return out
