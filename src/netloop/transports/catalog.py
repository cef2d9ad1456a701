"""The transports by name: the registry behind :func:`netloop.transports.get_transport`
(imported on first use by the package, see :mod:`netloop.transports`)."""
from __future__ import annotations

from ..registry import Registry
from .base import Transport
from .multimaster import MultimasterTransport
from .nimbro import NimbroTransport
from .priority import PriorityTransport
from .ros import MixedRosTransport, RosTransport
from .ros2 import Ros2Transport

#: name -> factory of a new, unstarted instance. Each run gets its own instance (a transport
#: keeps what it started for one run), so nothing is shared between runs or cells.
_TRANSPORTS: Registry[Transport] = Registry("transport", {
    "tcp": lambda: RosTransport("tcp", "TCPROS with Nagle's algorithm on (ROS's default)"),
    "tcp_nodelay": lambda: RosTransport("tcp_nodelay", "TCPROS with TCP_NODELAY, asked for by the subscriber"),
    "udp": lambda: RosTransport("udp", "UDPROS (roscpp only), datagrams of at most 1400 bytes"),
    "udp/tcp_nodelay": lambda: MixedRosTransport(
        "udp/tcp_nodelay", "udp", "tcp_nodelay", 16384,
        "UDPROS for messages up to 16 KiB (loop, laser), TCP_NODELAY for larger ones (images)"),
    "nimbro": lambda: NimbroTransport("nimbro", False,
                                      "nimbro_topic_transport: every topic over UDP, fragmented to the MTU"),
    "nimbro_mixed": lambda: NimbroTransport(
        "nimbro_mixed", True,
        "nimbro_topic_transport, the paper's Nimbro*: messages up to 16 KiB over UDP, larger over TCP"),
    "multimaster": MultimasterTransport,
    "priority": PriorityTransport,
    "cyclonedds": lambda: Ros2Transport("cyclonedds", "ROS 2 over Eclipse Cyclone DDS 0.10 (native nodes, or a "
                                                      "bridge per host)", "cyclonedds"),
    "fastdds": lambda: Ros2Transport("fastdds", "ROS 2 over eProsima Fast DDS 2.9 (native nodes, or a bridge "
                                                "per host)", "fastdds"),
    "zenoh": lambda: Ros2Transport("zenoh", "ROS 2 over Eclipse Zenoh 1.x as rmw_zenoh uses it (native nodes, or "
                                            "a bridge per host)", "zenoh"),
    "rmw_fastrtps_cpp": lambda: Ros2Transport("rmw_fastrtps_cpp", "real ROS 2: the nodes are rcl nodes of ROS 2 "
                                                                  "Jazzy with rmw_fastrtps_cpp (Fast DDS 2.14)",
                                              "rmw_fastrtps_cpp"),
})


def transport_names() -> list[str]:
    """Names accepted in experiment files, in a stable order."""
    return _TRANSPORTS.names()


def left_out_of_all() -> dict[str, str]:
    """The transports ``transport: all`` leaves out on this machine, each with why: the ROS 2
    middlewares the build lacks (e.g. zenoh where no Rust >= 1.75 was found). Nothing is left out
    where nothing is built yet: a file is then checked for every word, and the run refuses what
    is missing before it starts."""
    from .ros2 import MIDDLEWARES, available_middlewares, missing_middleware  # noqa: PLC0415
    if available_middlewares() is None:
        return {}
    return {name: why for name in MIDDLEWARES for why in [missing_middleware(name)] if why}


def transports_for_all() -> list[str]:
    """What ``transport: all`` means here: every transport the package has, less those this
    build cannot run (:func:`left_out_of_all`)."""
    left_out = left_out_of_all()
    return [name for name in transport_names() if name not in left_out]


def get_transport(name: str) -> Transport:
    """A new instance of the transport called ``name`` (one per run: instances are never
    shared); KeyError lists the allowed names."""
    return _TRANSPORTS.get(name)


__all__ = ["transport_names", "get_transport", "left_out_of_all", "transports_for_all"]
