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


class MixedRosTransport(Transport):
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
