"""Whether a run's subscribers are connected, and how: the negotiated ROS transport of every
(topic, publisher, subscriber), read from the nodes (``getBusInfo``; TCP_NODELAY from the
sending socket, :mod:`netloop.connections`), polled until all are up or ``connect_timeout``."""
from __future__ import annotations

import time
import xmlrpc.client
from typing import Callable

from .connections import describe, node_connections
from .hosts import Hosts
from .master import MasterError
from .run_nodes import Nodes
from .transports import Transport

#: how often the connections are asked about [s]
POLL_S = 0.05


def negotiated_transports(nodes: Nodes, connections: list[tuple[str, str, str]],
                          seen: dict[tuple[str, str, str], str] | None = None) -> dict[str, str] | None:
    """For each (topic, publisher, subscriber): the connection as it really is, keyed by the
    topic (``topic -> /subscriber`` where a topic has several subscribers); None until every
    one is connected. With one master, the publisher's connection to the subscriber
    ('TCPROS', 'TCPROS+NODELAY' or 'UDPROS', TCP_NODELAY read from the sending socket); across
    masters (relay transports), the subscriber's local connection, marked 'via relay'.
    ``seen`` (kept by the caller between polls) holds the connections found so far, so each
    poll asks only about the others (with many robots every question crosses the link)."""
    seen = {} if seen is None else seen
    for connection in connections:
        if connection in seen:
            continue
        topic, publisher, subscriber = connection
        try:
            pub_master, sub_master = nodes.master_of_node(publisher), nodes.master_of_node(subscriber)
            if pub_master is sub_master:
                conns = [c for c in node_connections(pub_master, publisher, nodes.caller_of_node(publisher))
                         if c["topic"] == topic and c["direction"] == "o" and c["destination"] == subscriber
                         and c["connected"]]
                suffix = ""
            else:
                conns = [c for c in node_connections(sub_master, subscriber, nodes.caller_of_node(subscriber))
                         if c["topic"] == topic and c["direction"] == "i" and c["connected"]]
                suffix = " via relay"
        except (MasterError, OSError, xmlrpc.client.Error):  # a node not registered yet, or gone
            continue
        if conns:
            seen[connection] = describe(conns[0]) + suffix
    if any(c not in seen for c in connections):
        return None
    several = {t for t, _, _ in connections if sum(1 for c in connections if c[0] == t) > 1}
    return {f"{topic} -> {subscriber}" if topic in several else topic: seen[(topic, publisher, subscriber)]
            for topic, publisher, subscriber in connections}


def wait_connected(nodes: Nodes, hosts: Hosts, transport: Transport, connections: list[tuple[str, str, str]],
                   timeout: float, between_polls: Callable[[], None],
                   seen: dict[tuple[str, str, str], str] | None = None) -> tuple[dict[str, str] | None, list[str]]:
    """Poll every ``POLL_S`` until each of ``connections`` is connected (native ROS 2
    connections: both nodes' middleware endpoints matched) or ``timeout`` s have passed;
    ``between_polls`` runs before each poll (checks that no process died, samples CPU).
    Returns the negotiated transport of each connection (:func:`negotiated_transports`; None
    when not every ROS 1 connection is up) and what is still missing ([] when connected).
    ``seen``: the connections found before (while later nodes were starting), kept in it."""
    native = transport.native_connections(connections)
    ros1 = [c for c in connections if c not in native]
    found, seen, unmatched = None, {} if seen is None else seen, []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        between_polls()
        if found is None:
            found = negotiated_transports(nodes, ros1, seen)
        unmatched = transport.unmatched(native, hosts.read_text)
        if found is not None and not unmatched:
            break
        time.sleep(POLL_S)
    if found is not None:
        found = transport.negotiated(found, [] if unmatched else native)
    missing = sorted(f"{topic} ({publisher} -> {subscriber})" for topic, publisher, subscriber in ros1
                     if (topic, publisher, subscriber) not in seen)
    missing += [f"{node} (its {transport.name} endpoints not matched: no matched_ns in its status file "
                f"records/{node.lstrip('/')}.ros2.json)" for node in unmatched]
    return found, missing
