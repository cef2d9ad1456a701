"""The interface every transport implements."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..schema import Map

#: a connection of the run: (topic, publisher node, subscriber node)
Connection = tuple[str, str, str]


@dataclass(frozen=True)
class CrossingTopic:
    """A topic of the experiment whose publisher and subscriber are on different hosts."""

    topic: str            # e.g. "/y", "/flows/image"
    datatype: str         # e.g. "netloop/LoopSample", "sensor_msgs/CompressedImage"
    source_host: str      # host of the publisher
    dest_host: str        # host of the subscriber
    message_bytes: int    # expected serialized size of one message
    period: float | None = None  # seconds between messages, when known
    control: bool = False        # a control loop's topic (y or u): relays give it precedence


@dataclass
class TransportContext:
    """What a transport may need to set itself up for one run."""

    run_dir: Path
    #: host name -> command prefix that runs a process on that host (e.g. ip netns exec ...)
    exec_prefix: dict[str, list[str]] = field(default_factory=dict)
    #: host name -> address other hosts reach it at
    address: dict[str, str] = field(default_factory=dict)
    #: the topics that cross between hosts, with their direction
    topics: list[CrossingTopic] = field(default_factory=list)
    #: host name -> ROS master URI of that host (one master per host for multi-master transports)
    masters: dict[str, str] = field(default_factory=dict)
    #: start(name, host, argv, params) starts a ROS process on a host with that host's ROS
    #: environment, its private parameters set first, stopped with the run; returns the process
    start: Callable[..., Any] | None = None
    #: this transport's options from the experiment's ``transport_options`` (validated)
    options: dict[str, Any] = field(default_factory=dict)
    #: link capacity [Mbit/s] when the profile has one (e.g. for pacing)
    link_mbit: float | None = None
    #: host name -> its link interface ("net0"; "lo" on loopback; a real machine's own), when known
    interface: dict[str, str] = field(default_factory=dict)
    #: host name -> the link's MTU at that host [bytes], when known
    mtu: dict[str, int] = field(default_factory=dict)
    #: topic -> the experiment's QoS overrides for it ({reliability, durability, depth} from
    #: ``loop.qos`` / ``flows[].qos``; only ROS 2 transports use them)
    topic_qos: dict[str, dict[str, Any]] = field(default_factory=dict)


class Transport:
    """A way of carrying the experiment's topics between hosts.

    Subclasses override what they need; the defaults describe a transport that is purely a
    choice made by each subscriber and needs nothing started around the run.
    """

    name: str = ""
    description: str = ""
    #: True: one ROS master per host, and the transport carries the crossing topics between
    #: them (relays); False: one master, nodes connect directly (TCPROS/UDPROS)
    multi_master: bool = False
    #: True: processes of the transport take each message from its sender's socket and send it
    #: on (relays, bridges), so a sender whose connections acknowledged everything may still
    #: have messages under way: its drain then lasts its whole time (flow_source's ~drain)
    relays: bool = False
    #: schema of this transport's entry in the experiment's ``transport_options`` (None: no options)
    options_schema: Map | None = None
    #: the ROS 2 middleware carrying the topics (``cyclonedds``, ``fastdds``, ``zenoh``), None for
    #: a ROS 1 transport
    middleware: str | None = None

    def subscriber_transport(self, topic: str, message_bytes: int | None = None) -> str:
        """The ROS transport (``tcp``, ``tcp_nodelay`` or ``udp``) the subscriber of ``topic``
        must request."""
        raise NotImplementedError

    def endpoint_params(self, topic: str, message_bytes: int | None = None, role: str = "subscriber",
                        node: str | None = None, host: str | None = None,
                        qos: dict[str, Any] | None = None) -> dict[str, Any]:
        """The private parameters of node ``node`` on ``host`` that carry ``topic`` (``role``:
        ``subscriber`` or ``publisher``) the way this transport does: ROS's transports
        ``{"transport": subscriber_transport(...)}`` for a subscriber, nothing for a publisher;
        a ROS 2 transport deployed natively the middleware's parameters (``~middleware``, its
        configuration file, the QoS resolved with ``qos``, the overrides of the loop or flow,
        ``~status_path``). Called after ``start``, once per node and topic."""
        if role != "subscriber":
            return {}
        return {"transport": self.subscriber_transport(topic, message_bytes)}

    def programs(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        """What this transport runs on every machine of a run, as (kind, name) for the pre-run
        check (:mod:`netloop.prerun_checks`): ``node`` a compiled node of netloop's build,
        ``package`` a ROS package; nothing by default."""
        return []

    def start(self, ctx: TransportContext) -> None:
        """Start what the transport needs besides the nodes (nothing by default)."""

    def stop(self) -> None:
        """Stop what ``start`` started; safe to call more than once."""

    def check_messages(self, largest_bytes: int, options: dict[str, Any]) -> str | None:
        """Whether this transport, with ``options`` (validated), can carry a message of
        ``largest_bytes``: ``None`` when it can, else ``"option: what is wrong"`` (checked before a
        run starts, so an experiment that could never deliver a flow is refused up front)."""
        return None

    def metadata(self) -> dict[str, Any]:
        """What to record about this transport in the run's metadata.json."""
        return {"name": self.name, "description": self.description}

    # --- what a run asks of it while connecting, and after -----------------------------------
    def native_connections(self, connections: list[Connection]) -> list[Connection]:
        """Those of the run's ``connections`` (topic, publisher, subscriber) that have no ROS 1
        connection to read, because the transport's own endpoints carry them (a ROS 2
        middleware's, ``deployment: native``); by default none."""
        return []

    def unmatched(self, native: list[Connection], read_text: Callable[[str, str], str | None]) -> list[str]:
        """What the run must still wait for before it is connected, besides the ROS 1
        connections: the nodes of the ``native`` connections and the transport's own processes
        not matched yet (``read_text(host, path)`` reads a file on a host); by default nothing."""
        return []

    def negotiated(self, ros1: dict[str, str], native: list[Connection]) -> dict[str, str]:
        """The connections as they are, for metadata.json's ``negotiated_transport``, from the
        ROS 1 ones read from the nodes (``ros1``) and the ``native`` ones (empty while some are
        unmatched); by default ``ros1``."""
        return ros1

    def run_record(self) -> dict[str, Any]:
        """Entries of metadata.json written when the run has ended (on real machines, after the
        records came home): a ROS 2 transport's ``ros2``; by default none."""
        return {}
