"""Link implementations: one interface, several emulations chosen by a profile's ``type``.

The interface, :class:`Link`, and the hosts' addressing are in :mod:`.link_base`; each type's
implementation in a module of its own; this module is the registry from ``type`` to class.

* ``loopback`` (:mod:`.link_base`) — nothing: both hosts are the root namespace, 127.0.0.1.
* ``ethernet`` (:mod:`.ethernet_link`) — a veth pair, each end rate-limited by an htb (or tbf) qdisc.
* ``ns3_wifi`` (:mod:`.ns3_wifi_link`) — taps bridged into a real-time ns-3 802.11a/g/n channel
  (``netloop_wifi_link``, ``src/ns3/wifi_link.cc``), ad-hoc or through an access point. With
  ``hops: 2`` the relay is a host of its own: robot and operator are out of each other's
  radio range, their routes to each other go through the relay's address, and the relay
  namespace forwards IPv4 (ICMP redirects off), so every robot-operator packet crosses the
  channel twice. With ``mode: ap`` the access point lives inside ns-3 (no host, no tap):
  robot and operator are its stations, one subnet, and its MAC forwards every frame between
  them, so again every packet crosses the channel twice.
* ``shaped`` (:mod:`.shaped_link`) — taps joined by the userspace emulator :mod:`netloop.testbed.shaper`.

The tap-based links (:mod:`.tap_link`) run their emulator inside a private ``link`` namespace
(so its taps never appear in the root namespace), wait for its "ready" line and move each tap
into its host.
"""
from __future__ import annotations

from .ethernet_link import EthernetLink
from .link_base import (HOST_OCTET, IFACE, MULTICAST_ROUTE, PREFIX_LEN, PRIORITY_DSCP, SUBNET_PREFIX, Link,
                        LinkContext, LoopbackLink, host_address, htb_classes, priority_band_metadata, robot_names,
                        robot_number, tap_suffix)
from .ns3_wifi_link import Ns3WifiLink, wifi_binary
from .profile_models import LinkProfile
from .shaped_link import ShapedLink
from .tap_link import StatsFile, TapLink

__all__ = ["HOST_OCTET", "IFACE", "IMPLEMENTATIONS", "MULTICAST_ROUTE", "PREFIX_LEN", "PRIORITY_DSCP",
           "SUBNET_PREFIX", "EthernetLink", "Link", "LinkContext", "LoopbackLink", "Ns3WifiLink", "ShapedLink",
           "StatsFile", "TapLink", "host_address", "htb_classes", "make_link", "priority_band_metadata",
           "robot_names", "robot_number", "tap_suffix", "wifi_binary"]

#: a profile's ``type`` -> the class that emulates it (the keys of ``profile_models.MODELS``)
IMPLEMENTATIONS = {"loopback": LoopbackLink, "ethernet": EthernetLink, "ns3_wifi": Ns3WifiLink,
                   "shaped": ShapedLink}


def make_link(profile: LinkProfile) -> Link:
    """The link a validated profile describes (not yet up)."""
    return IMPLEMENTATIONS[profile.type](profile)
