"""Transports: how the subscribers of an experiment are connected, chosen by one word.

Every transport implements :class:`Transport`. The runner asks it, per subscriber, which
ROS transport the subscriber must request (``subscriber_transport``), and lets it start and
stop whatever it needs besides the nodes (relays, extra masters) around a run.

Implementations here:
  - ``tcp``, ``tcp_nodelay``, ``udp``: ROS's own TCPROS (Nagle on), TCPROS with
    TCP_NODELAY, and UDPROS (roscpp only), requested by the subscriber (:class:`RosTransport`).
  - ``udp/tcp_nodelay``: UDPROS for small messages and TCP_NODELAY for large ones, chosen
    per topic by message size (:class:`MixedRosTransport`).

Relay transports (``multi_master = True``: one ROS master per host; the runner calls
``start(ctx)`` before the nodes; every relay reports statistics on /netloop_relay/stats
(``netloop/RelayStats``; mm_sync: ``netloop/MasterSyncStats``) and in
``records/relay_<process>_stats.jsonl``; ``runs/<id>/transport.json`` records what ran):
  - ``nimbro``, ``nimbro_mixed``: nimbro_topic_transport's sender/receiver pairs (the real
    package when installed, else netloop's own nodes, one per role): every topic over UDP
    (fragmented to the MTU, reassembled, incomplete messages dropped after a timeout), or
    small topics over UDP and large ones (> 16 KiB) over TCP (:mod:`.nimbro`).
  - ``multimaster``: discovery + master synchronisation (multimaster_fkie when installed,
    else :mod:`.mm_sync`); subscribers connect directly to remote publishers (:mod:`.multimaster`).
  - ``priority``: the Pound scheme, one paced UDP relay per host with one queue ordered by
    topic priority, priorities changeable at run time (:mod:`.priority`).

ROS 2's middlewares (one master per host as well; :mod:`.ros2`):
  - ``cyclonedds``, ``fastdds``, ``zenoh``: Cyclone DDS, Fast DDS, Zenoh, spoken by the nodes
    themselves (``deployment: native``, a ROS 2 node) or by a ``ros2_bridge`` per host between
    ROS 1 nodes (``deployment: bridge``); ROS 2's topic and type names, CDR, QoS profiles.

The package imports nothing itself: each name below is imported from its module on first use
(PEP 562), so that a robot can run :mod:`.mm_sync` (``python -m netloop.transports.mm_sync``,
Python 3.8, standard library and rospy only; see :mod:`netloop.robot_side`) without the
operator's side, which the transports' classes import.
"""
from __future__ import annotations

import importlib as _importlib

#: name -> the module of this package that defines it.
_EXPORTS = {
    "CrossingTopic": "base", "Transport": "base", "TransportContext": "base",
    "MultimasterTransport": "multimaster", "NimbroTransport": "nimbro", "PriorityTransport": "priority",
    "RosTransport": "ros", "MixedRosTransport": "ros", "Ros2Transport": "ros2",
    "transport_names": "catalog", "get_transport": "catalog", "left_out_of_all": "catalog",
    "transports_for_all": "catalog",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
