"""ROS's own transports, chosen by the subscriber through its transport hints.

Option (``transport_options: {tcp_nodelay: {dscp: EF}}``, the same for ``tcp``, ``udp`` and
``udp/tcp_nodelay``): ``dscp`` (``none``, ``EF``, ``CS5``, ``CS6``, ``CS7``, ``AF41``; default
``none``) is given to the loop's nodes as ``~dscp``: each marks its own IP sockets (IP_TOS and
SO_PRIORITY, ``include/netloop/socket_marking.h``) at start and every 0.2 s, so TCPROS and
UDPROS connections carry the mark without changing ROS. The testbed hosts' htb serves EF,
CS6 and CS7 before everything else; only the loop's nodes are marked, never a flow's.
"""
from __future__ import annotations

from typing import Any

from ..schema import Enum, key, section
from .base import Transport, TransportContext
from .options import mapping_schema, typed

#: the DSCP names the ``dscp`` option accepts (``none``: the nodes leave their sockets alone)
DSCP_NAMES = ["none", "EF", "CS5", "CS6", "CS7", "AF41"]


@section("tcp, tcp_nodelay, udp, udp/tcp_nodelay: marking of the loop's sockets")
class RosOptions:
    """``transport_options.<word>`` of ROS's own transports (docs/transports.md#options)."""

    dscp: str = key(Enum(DSCP_NAMES, "none", "DSCP the loop's nodes mark their sockets with (IP_TOS and "
                                             "SO_PRIORITY; the testbed hosts serve EF, CS6 and CS7 first); none: "
                                             "unmarked"))


#: the options as an experiment file holds them
OPTIONS = mapping_schema(RosOptions)


class _LoopMarking(Transport):
    """The ``dscp`` option of ROS's transports: the loop's nodes get ``~dscp``."""

    options_schema = OPTIONS
    dscp = "none"                                  # until start() reads the option
    control_topics: frozenset[str] = frozenset()

    def start(self, ctx: TransportContext) -> None:
        self.dscp = typed(RosOptions, ctx.options).dscp
        self.control_topics = frozenset(t.topic for t in ctx.topics if t.control)

    def endpoint_params(self, topic: str, message_bytes: int | None = None, role: str = "subscriber",
                        node: str | None = None, host: str | None = None,
                        qos: dict[str, Any] | None = None) -> dict[str, Any]:
        out = super().endpoint_params(topic, message_bytes, role, node, host, qos)
        if self.dscp != "none" and topic in self.control_topics:
            out["dscp"] = self.dscp
        return out

    def metadata(self) -> dict[str, Any]:
        return super().metadata() | {"dscp": self.dscp}


class RosTransport(_LoopMarking):
    """TCPROS, TCPROS with TCP_NODELAY, or UDPROS for every subscriber of the run."""

    def __init__(self, name: str, description: str):
        if name not in ("tcp", "tcp_nodelay", "udp"):
            raise ValueError(f"not a ROS transport: {name!r}")
        self.name, self.description = name, description

    def subscriber_transport(self, topic, message_bytes=None):
        return self.name


class MixedRosTransport(_LoopMarking):
    """Per topic by message size: small messages (at most ``threshold_bytes``, e.g. the loop's
    and a laser's) over ``small``, large ones (images) over ``large`` — the mixed UDP /
    TCP_NODELAY setting of the Pound paper."""

    def __init__(self, name: str, small: str, large: str, threshold_bytes: int, description: str):
        self.name, self.small, self.large = name, small, large
        self.threshold_bytes, self.description = threshold_bytes, description

    def subscriber_transport(self, topic, message_bytes=None):
        if message_bytes is None:
            return self.small
        return self.small if message_bytes <= self.threshold_bytes else self.large

    def metadata(self):
        return super().metadata() | {"small": self.small, "large": self.large,
                                     "threshold_bytes": self.threshold_bytes}
