"""Transports: how the subscribers of an experiment are connected, chosen by one word.

Every transport implements :class:`Transport`. The runner asks it, per subscriber, which
ROS transport the subscriber must request (``subscriber_transport``), and lets it start and
stop whatever it needs besides the nodes (relays, extra masters) around a run.

Implementations here:
  - ``tcp``, ``tcp_nodelay``, ``udp``: ROS's own TCPROS (Nagle on), TCPROS with
    TCP_NODELAY, and UDPROS (roscpp only), requested by the subscriber (:class:`RosTransport`).
  - ``udp/tcp_nodelay``: UDPROS for small messages and TCP_NODELAY for large ones, chosen
    per topic by message size (:class:`MixedRosTransport`).
"""
from __future__ import annotations

from .base import CrossingTopic, Transport, TransportContext
from .ros import MixedRosTransport, RosTransport

_REGISTRY: dict[str, Transport] = {t.name: t for t in (
    RosTransport("tcp", "TCPROS with Nagle's algorithm on (ROS's default)"),
    RosTransport("tcp_nodelay", "TCPROS with TCP_NODELAY, asked for by the subscriber"),
    RosTransport("udp", "UDPROS (roscpp only), datagrams of at most 1400 bytes"),
    MixedRosTransport("udp/tcp_nodelay", "udp", "tcp_nodelay", 16384,
                      "UDPROS for messages up to 16 KiB (loop, laser), TCP_NODELAY for larger ones (images)"),
)}


def transport_names() -> list[str]:
    """Names accepted in experiment files, in a stable order."""
    return list(_REGISTRY)


def get_transport(name: str) -> Transport:
    """The transport called ``name``; KeyError lists the allowed names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown transport {name!r}; allowed: {', '.join(_REGISTRY)}") from None


__all__ = ["CrossingTopic", "Transport", "TransportContext", "RosTransport", "MixedRosTransport", "transport_names", "get_transport"]
