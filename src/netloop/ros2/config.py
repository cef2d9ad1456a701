"""The middlewares' own configuration files, generated per host (or per node) into the run
directory (``transport/<host>.xml``, ``transport/<node>.json5``), and read by the library
through the nodes' ``~middleware_config`` parameter:

  - **Cyclone DDS 0.10** (``CYCLONEDDS_URI``): what rmw_cyclonedds_cpp (Jazzy) gives a node
    that has no configuration of its own, with the host's address as the only interface;
    discovery by SPDP multicast (``AllowMulticast spdp``: only discovery goes multicast, data
    is unicast, which is what Cyclone chooses itself on a wireless interface) or by a ``<Peers>``
    list of every host's address with multicast off; ``ParticipantIndex auto`` so that unicast
    discovery finds every participant of a host. RTPS messages keep Cyclone's default size
    (14,720 bytes, fragments of 1,344), or with ``message_size: mtu`` are capped at the link's
    MTU so that none leaves as IP fragments. Cyclone has no shared memory unless iceoryx is
    configured (it is not), so every sample crosses the network stack.
  - **Fast DDS 2.9** (``FASTRTPS_DEFAULT_PROFILES_FILE``): a default participant profile with
    one UDPv4 transport limited to the host's address (``interfaceWhiteList``) and the
    built-in transports off (no shared memory: samples really cross the link, also between
    two nodes of one host); ``initialPeersList`` with every host's address for ``peers``. RTPS
    messages keep Fast DDS's default size (65,500 bytes: a 64 KB sample is two messages, each
    cut into IP fragments), as rmw_fastrtps_cpp leaves it, or with ``message_size: mtu`` are
    capped at the link's MTU. The writers' QoS that rmw_fastrtps_cpp sets (synchronous
    publishing, history memory PREALLOCATED_WITH_REALLOC, data sharing off) is set by the
    nodes (``src/ros2/fastdds.cpp``); heartbeat and NACK timings stay Fast DDS's defaults, as
    the rmw leaves them.
  - **Zenoh 1.x** (JSON5): mode ``peer``; multicast scouting on the host's interface, or, for
    ``peers``, a listening endpoint per node on a port of its own and connect endpoints to every
    node planned before it (a connection is two-way, so the nodes form a full mesh; gossip
    spreads the rest); with a router on the operator (``mode: router``), rmw_zenoh's scheme:
    every node connects to the router, which only helps discovery (gossip), data goes peer to
    peer.

Pure functions of their arguments (tests parse their output).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

#: bytes of IPv4 + UDP headers in every datagram
IP_UDP_BYTES = 28
#: RTPS header + the DATA_FRAG submessage header (with inline QoS room) kept free in a datagram
RTPS_OVERHEAD_BYTES = 128
#: Zenoh's default TCP/UDP port (rmw_zenoh's router listens there)
ZENOH_PORT = 7447
#: first port of the nodes' own Zenoh endpoints in ``peers`` discovery
ZENOH_PEER_PORT_BASE = 17447
#: Zenoh's multicast scouting group (its default)
ZENOH_SCOUT_GROUP = "224.0.0.224:7446"
#: largest Zenoh message (its default, 1 GiB): larger ones are refused by the receiving side
ZENOH_MAX_MESSAGE_BYTES = 1 << 30
#: DDS participants of one host that unicast discovery probes for (Cyclone's
#: MaxAutoParticipantIndex, Fast DDS's maxInitialPeersRange): a run's nodes on one host
DDS_PARTICIPANTS_PER_HOST = 120


@dataclass
class HostNet:
    """What a host's configuration needs about the network."""

    host: str
    address: str                       # the host's address (ROS_IP)
    interface: str | None = None       # its link interface ("net0"), None when unknown (real machines: given)
    mtu: int = 1500


@dataclass
class NetPlan:
    """Every host of a run, and how discovery goes."""

    hosts: list[HostNet]
    discovery: str = "multicast"       # multicast | peers
    shared_namespace: bool = False     # loopback: every host is this machine's one namespace
    zenoh_mode: str = "peer"           # peer | router
    router_address: str | None = None  # zenoh router (operator's address) for mode router
    #: zenoh peers: node -> (its host, its listening port), in the order the nodes were planned
    zenoh_ports: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: DDS: ``rmw`` (the library's default RTPS message size) or ``mtu`` (one IP packet each)
    message_size: str = "rmw"

    def host(self, name: str) -> HostNet:
        return next(h for h in self.hosts if h.host == name)

    def peer_addresses(self) -> list[str]:
        return list(dict.fromkeys(h.address for h in self.hosts))


#: largest RTPS message Fast DDS accepts (its UDP transport refuses a maxMessageSize above it)
RTPS_MESSAGE_MAX = 65000


def rtps_message_bytes(mtu: int) -> int:
    """Largest RTPS message that leaves as one IP packet on a link of ``mtu`` (lo's 65536 is
    capped where Fast DDS refuses more)."""
    return min(mtu - IP_UDP_BYTES, RTPS_MESSAGE_MAX)


def rtps_fragment_bytes(mtu: int) -> int:
    """Payload of one DATA_FRAG that, with its headers, fits one RTPS message."""
    return (rtps_message_bytes(mtu) - RTPS_OVERHEAD_BYTES) // 4 * 4


def cyclonedds_xml(plan: NetPlan, host: str) -> str:
    """Cyclone DDS 0.10 configuration of one host."""
    me = plan.host(host)
    multicast = plan.discovery == "multicast"
    # lo has no MULTICAST flag: Cyclone must be told it may use multicast there (as rmw_cyclonedds
    # does for ROS_LOCALHOST_ONLY)
    iface_attrs = f"address={quoteattr(me.address)}" + (' multicast="true"' if multicast and plan.shared_namespace
                                                        else "")
    peers = sizes = ""
    if plan.message_size == "mtu":
        sizes = (f"\n      <MaxMessageSize>{rtps_message_bytes(me.mtu)}B</MaxMessageSize>"
                 f"\n      <FragmentSize>{rtps_fragment_bytes(me.mtu)}B</FragmentSize>")
    if not multicast:
        peers = ("\n      <Peers>\n" + "".join(f"        <Peer address={quoteattr(a)}/>\n"
                                            for a in plan.peer_addresses()) + "      </Peers>")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- netloop: Cyclone DDS configuration of host {host} (discovery: {plan.discovery}, message size: {plan.message_size}) -->
<CycloneDDS xmlns="https://cdds.io/config">
  <Domain Id="any">
    <General>
      <Interfaces>
        <NetworkInterface {iface_attrs}/>
      </Interfaces>
      <AllowMulticast>{"spdp" if multicast else "false"}</AllowMulticast>{sizes}
    </General>
    <Discovery>
      <ParticipantIndex>auto</ParticipantIndex>
      <MaxAutoParticipantIndex>{DDS_PARTICIPANTS_PER_HOST}</MaxAutoParticipantIndex>{peers}
    </Discovery>
  </Domain>
</CycloneDDS>
"""


def fastdds_xml(plan: NetPlan, host: str, domain_id: int = 0) -> str:
    """Fast DDS 2.9 profiles of one host: the default participant profile."""
    me = plan.host(host)
    peers = size = ""
    if plan.message_size == "mtu":
        size = f"\n        <maxMessageSize>{rtps_message_bytes(me.mtu)}</maxMessageSize>"
    if plan.discovery == "peers":
        peers = ("\n        <initialPeersList>\n" + "".join(
            f"          <locator><udpv4><address>{a}</address></udpv4></locator>\n" for a in plan.peer_addresses())
            + "        </initialPeersList>")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- netloop: Fast DDS profiles of host {host} (discovery: {plan.discovery}, message size: {plan.message_size}) -->
<dds xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <profiles>
    <transport_descriptors>
      <transport_descriptor>
        <transport_id>netloop_udpv4</transport_id>
        <type>UDPv4</type>{size}
        <maxInitialPeersRange>{DDS_PARTICIPANTS_PER_HOST}</maxInitialPeersRange>
        <interfaceWhiteList>
          <address>{me.address}</address>
        </interfaceWhiteList>
      </transport_descriptor>
    </transport_descriptors>
    <participant profile_name="netloop_{host}" is_default_profile="true">
      <domainId>{domain_id}</domainId>
      <rtps>
        <userTransports>
          <transport_id>netloop_udpv4</transport_id>
        </userTransports>
        <useBuiltinTransports>false</useBuiltinTransports>
        <builtin>{peers}
        </builtin>
      </rtps>
    </participant>
  </profiles>
</dds>
"""


def zenoh_config(plan: NetPlan, host: str, node: str | None = None, router: bool = False) -> dict:
    """Zenoh 1.x configuration of one node (``router``: the operator's router itself)."""
    me = plan.host(host)
    if router:
        return {"mode": "router", "listen": {"endpoints": [f"tcp/{me.address}:{ZENOH_PORT}"]},
                "scouting": {"multicast": {"enabled": False}, "gossip": {"enabled": True}},
                "transport": _zenoh_transport(me)}
    out: dict = {"mode": "peer", "transport": _zenoh_transport(me)}
    if plan.zenoh_mode == "router":
        out.update(listen={"endpoints": [f"tcp/{me.address}:0"]},
                   connect={"endpoints": [f"tcp/{plan.router_address}:{ZENOH_PORT}"], "timeout_ms": -1,
                            "exit_on_failure": False},
                   scouting={"multicast": {"enabled": False}, "gossip": {"enabled": True}})
    elif plan.discovery == "peers":
        if node is None or node not in plan.zenoh_ports:
            raise ValueError(f"zenoh peers: no port planned for node {node!r}")
        order = list(plan.zenoh_ports)
        earlier = [plan.zenoh_ports[n] for n in order[:order.index(node)]]
        out.update(listen={"endpoints": [f"tcp/{me.address}:{plan.zenoh_ports[node][1]}"]},
                   connect={"endpoints": [f"tcp/{plan.host(h).address}:{p}" for h, p in earlier],
                            "timeout_ms": -1, "exit_on_failure": False},
                   scouting={"multicast": {"enabled": False}, "gossip": {"enabled": True}})
    else:
        out.update(listen={"endpoints": [f"tcp/{me.address}:0"]},
                   scouting={"multicast": {"enabled": True, "address": ZENOH_SCOUT_GROUP,
                                           "interface": me.interface or "auto",
                                           "autoconnect": {"peer": ["router", "peer"]}},
                             "gossip": {"enabled": True}})
    return out


def plan_zenoh_port(plan: NetPlan, node: str, host: str) -> int:
    """Gives ``node`` (on ``host``) its own listening port for ``peers`` discovery (ports are per
    host's namespace; on a shared namespace they are unique across hosts)."""
    if node not in plan.zenoh_ports:
        same = [n for n, (h, _) in plan.zenoh_ports.items() if plan.shared_namespace or h == host]
        plan.zenoh_ports[node] = (host, ZENOH_PEER_PORT_BASE + len(same))
    return plan.zenoh_ports[node][1]


def _zenoh_transport(me: HostNet) -> dict:
    return {"link": {"rx": {"max_message_size": ZENOH_MAX_MESSAGE_BYTES}}}


def json5_text(config: dict, comment: str) -> str:
    """A Zenoh configuration as JSON5 (JSON is JSON5) with a comment line on top."""
    return f"// {comment}\n" + json.dumps(config, indent=2) + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
