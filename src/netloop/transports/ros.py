"""ROS's own transports, chosen by the subscriber through its transport hints."""
from __future__ import annotations

from .base import Transport


class RosTransport(Transport):
    """TCPROS, TCPROS with TCP_NODELAY, or UDPROS for every subscriber of the run."""

    def __init__(self, name: str, description: str):
        if name not in ("tcp", "tcp_nodelay", "udp"):
            raise ValueError(f"not a ROS transport: {name!r}")
        self.name, self.description = name, description

    def subscriber_transport(self, topic, message_bytes=None):
        return self.name
