"""The options of the ROS 2 transports (``transport_options.cyclonedds``, ``.fastdds``,
``.zenoh``, ``.rmw_fastrtps_cpp``): deployment, QoS profile and overrides, discovery, domain;
the DDS libraries' RTPS message size; Zenoh's mode; the real rmw's XML profiles file. Typed as
:class:`Ros2Options` (:class:`DdsOptions` adds ``message_size``, :class:`ZenohOptions`
``mode``, :class:`RmwOptions` ``profiles_file``); ``options_schema(middleware)`` is the mapping
an experiment file holds (:mod:`.options`)."""
from __future__ import annotations

import functools

from ..ros2.qos import PROFILES, override_fields
from ..schema import Enum, Int, Map, Str, key, section
from .options import mapping_schema

MIDDLEWARES = ("cyclonedds", "fastdds", "zenoh", "rmw_fastrtps_cpp")
#: the middlewares that are real ROS 2 (rcl and an rmw of a ROS 2 distribution), not netloop's
#: nodes speaking the middleware library directly
REAL_ROS2 = ("rmw_fastrtps_cpp",)
#: ROS_DOMAIN_ID's range (ROS 2: 0..232 on Linux, so that the DDS ports stay below 65536)
DOMAIN_ID_MAX = 232

_OVERRIDES = override_fields("override of the profile's")


@section("ROS 2: deployment, QoS, discovery")
class Ros2Options:
    """``transport_options.cyclonedds`` / ``.fastdds`` (docs/transports.md#options)."""

    deployment: str = key(Enum(["native", "bridge"], "native",
                               "native: the nodes speak the middleware (a ROS 2 node); bridge: ROS 1 nodes, a "
                               "bridge per host carries the crossing topics", what="deployment"))
    qos: str = key(Enum(list(PROFILES), "default",
                        "ROS 2's QoS profile: default (reliable, volatile, keep last 10), sensor_data (best "
                        "effort, volatile, 5), transient_local (reliable, transient local, 10)", what="QoS profile"))
    reliability: str | None = key(_OVERRIDES["reliability"])
    durability: str | None = key(_OVERRIDES["durability"])
    depth: int | None = key(_OVERRIDES["depth"])
    discovery: str = key(Enum(["multicast", "peers"], "multicast",
                              "multicast: SPDP multicast / Zenoh scouting over the link (ROS 2's default); peers: "
                              "unicast to the hosts' addresses", what="discovery"))
    domain_id: int = key(Int(0, "ROS_DOMAIN_ID", ge=0, le=DOMAIN_ID_MAX))

    @property
    def zenoh_mode(self) -> str:
        """``peer`` or ``router`` (only Zenoh has a router)."""
        return "peer"


@section("ROS 2 over DDS: deployment, QoS, discovery, RTPS message size")
class DdsOptions(Ros2Options):
    """``transport_options.cyclonedds`` / ``.fastdds``."""

    message_size: str = key(Enum(["rmw", "mtu"], "rmw",
                                 "rmw: the library's own largest RTPS message, as rmw_fastrtps_cpp and "
                                 "rmw_cyclonedds_cpp leave it (Fast DDS 65,500 bytes, Cyclone DDS 14,720): a large "
                                 "sample leaves in few datagrams, each cut into IP fragments; mtu: every RTPS "
                                 "message capped at the link's MTU (one IP packet each, a 64 KB sample ~49 "
                                 "datagrams)", what="RTPS message size"))


@section("ROS 2 over Zenoh: deployment, QoS, discovery, mode")
class ZenohOptions(Ros2Options):
    """``transport_options.zenoh``."""

    mode: str = key(Enum(["peer", "router"], "peer",
                         "peer: the nodes find each other (scouting or peers); router: a Zenoh router on the "
                         "operator, every node connects to it (rmw_zenoh's default), data goes peer to peer",
                         what="zenoh mode"))

    @property
    def zenoh_mode(self) -> str:
        return self.mode


@section("real ROS 2 (rcl + rmw_fastrtps_cpp): QoS, domain, Fast DDS XML profiles")
class RmwOptions(Ros2Options):
    """``transport_options.rmw_fastrtps_cpp``: the nodes are rcl nodes of ROS 2 Jazzy with
    rmw_fastrtps_cpp's defaults, untouched but for what is set here."""

    deployment: str = key(Enum(["native"], "native", "native: the nodes are rcl nodes (real ROS 2)",
                               what="deployment"))
    discovery: str = key(Enum(["multicast"], "multicast",
                              "multicast: Fast DDS's SPDP multicast, rmw_fastrtps_cpp's default", what="discovery"))
    profiles_file: str | None = key(Str(None, "a Fast DDS XML profiles file handed to every node as "
                                              "FASTRTPS_DEFAULT_PROFILES_FILE, as a ROS 2 user does (absolute, or "
                                              "relative to the directory netloop runs in; copied into the run "
                                              "directory); none: rmw_fastrtps_cpp's defaults"))


def options_model(middleware: str) -> type[Ros2Options]:
    """The typed options of one middleware."""
    return {"zenoh": ZenohOptions, "rmw_fastrtps_cpp": RmwOptions}.get(middleware, DdsOptions)


@functools.lru_cache(maxsize=None)
def options_schema(middleware: str) -> Map:
    """The options of one middleware as an experiment file holds them."""
    schema = mapping_schema(options_model(middleware))
    schema.doc = f"{middleware}: deployment, QoS, discovery"
    return schema
