"""The interface every transport implements."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TransportContext:
    """What a transport may need to set itself up for one run."""

    run_dir: Path
    #: host name -> command prefix that runs a process on that host (e.g. ip netns exec ...)
    exec_prefix: dict[str, list[str]] = field(default_factory=dict)
    #: host name -> address other hosts reach it at
    address: dict[str, str] = field(default_factory=dict)


class Transport:
    """A way of carrying the experiment's topics between hosts.

    Subclasses override what they need; the defaults describe a transport that is purely a
    choice made by each subscriber and needs nothing started around the run.
    """

    name: str = ""
    description: str = ""

    def subscriber_transport(self, topic: str, message_bytes: int | None = None) -> str:
        """The ROS transport (``tcp``, ``tcp_nodelay`` or ``udp``) the subscriber of ``topic``
        must request."""
        raise NotImplementedError

    def start(self, ctx: TransportContext) -> None:
        """Start what the transport needs besides the nodes (nothing by default)."""

    def stop(self) -> None:
        """Stop what ``start`` started; safe to call more than once."""

    def metadata(self) -> dict[str, Any]:
        """What to record about this transport in the run's metadata.json."""
        return {"name": self.name, "description": self.description}
