"""ROS 2's QoS as netloop uses it: named profiles, overrides, validation.

A topic's QoS is resolved from the least to the most specific setting:

  1. the profile named by ``transport_options.<word>.qos`` (default ``default``), as
     rclcpp names them (``rmw_qos_profile_default``, ``rmw_qos_profile_sensor_data``, and the
     studies' "reliable policy", reliable + transient local);
  2. ``transport_options.<word>.reliability`` / ``durability`` / ``depth``;
  3. ``loop.qos`` for the loop's topics, ``flows[].qos`` for a flow's topics.

History is always KEEP_LAST ``depth`` (what rclcpp's profiles use). Both ends of a topic get
the same QoS, so a subscription is never incompatible with its publisher.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from ..schema import ConfigError, Enum, Int, Map

RELIABILITIES = ["reliable", "best_effort"]
DURABILITIES = ["volatile", "transient_local"]
#: KEEP_LAST depth bounds (a DDS history of 0 is invalid; beyond this a history is a memory sink)
DEPTH_MIN, DEPTH_MAX = 1, 10000


@dataclass(frozen=True)
class Qos:
    reliability: str = "reliable"
    durability: str = "volatile"
    depth: int = 10

    def describe(self) -> str:
        """``reliable/volatile/10``: as ``negotiated_transport`` shows it."""
        return f"{self.reliability}/{self.durability}/{self.depth}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def node_params(self) -> dict[str, Any]:
        """The nodes' private parameters (``~qos_reliability``, ``~qos_durability``, ``~qos_depth``)."""
        return {"qos_reliability": self.reliability, "qos_durability": self.durability, "qos_depth": self.depth}


#: ROS 2's profiles by name (rmw/qos_profiles.h: rmw_qos_profile_default, _sensor_data; the
#: transient_local one is the default made durable, as the size study's "reliable policy")
PROFILES: dict[str, Qos] = {
    "default": Qos("reliable", "volatile", 10),
    "sensor_data": Qos("best_effort", "volatile", 5),
    "transient_local": Qos("reliable", "transient_local", 10),
}


def override_fields(what: str) -> dict[str, Any]:
    """Schema nodes of the three overrides (None = not overridden), for options and the model."""
    return {
        "reliability": Enum(RELIABILITIES, None, f"{what}: reliable (resent until acknowledged) or best_effort "
                                                 f"(a lost sample is lost)", what="reliability"),
        "durability": Enum(DURABILITIES, None, f"{what}: volatile, or transient_local (a subscriber that "
                                               f"joins late gets the publisher's last depth samples)",
                           what="durability"),
        "depth": Int(None, f"{what}: KEEP_LAST history depth [samples]", ge=DEPTH_MIN, le=DEPTH_MAX),
    }


#: ``loop.qos`` and ``flows[].qos``: per-loop / per-flow overrides (ROS 2 transports only)
OVERRIDES = Map(override_fields("ROS 2 transports only"), {},
                "ROS 2 transports (cyclonedds, fastdds, zenoh) only: overrides of the transport's QoS "
                "for these topics: {reliability, durability, depth}")


def check_overrides(value: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    """Validated overrides (ConfigError naming ``key.<field>`` and what is allowed)."""
    out = OVERRIDES.check(dict(value or {}), key)
    return {k: v for k, v in out.items() if v is not None}


def resolve(options: Mapping[str, Any], *overrides: Mapping[str, Any] | None, key: str = "qos") -> Qos:
    """The QoS of a topic: ``options['qos']``'s profile, then the options' own overrides, then each
    of ``overrides`` in turn (most specific last). An unknown profile name is refused naming
    ``key`` and the allowed names."""
    name = options.get("qos") or "default"
    if name not in PROFILES:
        raise ConfigError(key, f"unknown QoS profile {name!r}; allowed: {', '.join(PROFILES)}")
    values = PROFILES[name].as_dict()
    for layer in (options, *overrides):
        for field in ("reliability", "durability", "depth"):
            if layer and layer.get(field) is not None:
                values[field] = layer[field]
    qos = Qos(**values)
    if qos.reliability not in RELIABILITIES:
        raise ConfigError("reliability", f"unknown reliability {qos.reliability!r}; allowed: "
                                         f"{', '.join(RELIABILITIES)}")
    if qos.durability not in DURABILITIES:
        raise ConfigError("durability", f"unknown durability {qos.durability!r}; allowed: {', '.join(DURABILITIES)}")
    if not (isinstance(qos.depth, int) and DEPTH_MIN <= qos.depth <= DEPTH_MAX):
        raise ConfigError("depth", f"expected an integer >= {DEPTH_MIN} and <= {DEPTH_MAX}, got {qos.depth!r}")
    return qos
