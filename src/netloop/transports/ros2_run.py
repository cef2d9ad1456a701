"""What a run does differently with a ROS 2 transport, behind :class:`Ros2Transport
<netloop.transports.ros2.Ros2Transport>`'s run hooks (:class:`netloop.transports.base.Transport`):
a connection whose two nodes speak the middleware natively has no ROS 1 connection to read, so
each node's status file says when its endpoints are matched; bridges' middleware side must be
matched too; and metadata.json gets a ``ros2`` record."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .base import Connection
from .ros2_bridge_plan import STATUS_SUFFIX

if TYPE_CHECKING:
    from .ros2 import Ros2Transport


def native_connections(t: Ros2Transport, connections: list[Connection]) -> list[Connection]:
    """The connections whose publisher and subscriber both speak the middleware (``deployment:
    native``): they have no ROS 1 connection to read."""
    return [c for c in connections if c[1] in t.native_nodes and c[2] in t.native_nodes]


def read_status(read_text: Callable[[str, str], str | None], host: str, path: str) -> dict | None:
    """A node's middleware status file, read on its host with ``read_text(host, path)`` (None
    while it is not there)."""
    text = read_text(host, path)
    try:
        return json.loads(text) if text and text.strip() else None
    except ValueError:   # written as we read it
        return None


def unmatched(t: Ros2Transport, native: list[Connection], read_text: Callable[[str, str], str | None]) -> list[str]:
    """The nodes whose middleware endpoints are not matched yet: the native connections' nodes
    whose status file has no ``matched_ns`` (once matched, a node is not asked again), then the
    bridges not matched on their middleware side."""
    waiting = []
    for node in sorted({n for _, pub, sub in native for n in (pub, sub)}):
        entry = t.native_nodes[node]
        if entry.get("matched"):
            continue
        status = read_status(read_text, entry["host"], entry["status_path"])
        if status and status.get("matched_ns"):
            entry["matched"] = True
        else:
            waiting.append(node)
    return waiting + t.unmatched_bridges(lambda h, path: read_status(read_text, h, path))


def negotiated(t: Ros2Transport, ros1: dict[str, str], native: list[Connection]) -> dict[str, str]:
    """The connections as they are, for metadata.json: the ROS 1 ones (``ros1``, read from the
    nodes), each native one as the transport describes its topic, a bridged one as the
    transport describes the bridge over its ROS 1 connection."""
    several = {topic for topic, _, _ in native if sum(1 for c in native if c[0] == topic) > 1}
    out = {**ros1, **{f"{topic} -> {sub}" if topic in several else topic: t.describe_topic(topic)
                      for topic, _, sub in native}}
    if t.deployment == "bridge":
        out = {k: t.describe_connection(k.split(" -> ")[0], v) for k, v in out.items()}
    return out


def ros2_record(t: Ros2Transport) -> dict[str, Any] | None:
    """metadata.json's ``ros2``: the middleware, the deployment, the QoS per topic, and per node
    (native nodes and bridges) its discovery time (matched - started), first sample per topic
    (first arrival - started) and the middleware's wire statistics at exit (None: the transport
    was never started)."""
    if t.ctx is None:
        return None
    files = {n[1:]: Path(e["status_path"]) for n, e in t.native_nodes.items()}
    for p in t.processes:
        if "status_path" in p["params"]:
            files[p["name"]] = Path(p["params"]["status_path"])
    nodes = {node: _node_record(path) for node, path in sorted(files.items())}
    discovery = [n["discovery_s"] for n in nodes.values() if "discovery_s" in n]
    from .ros2 import stack_of  # noqa: PLC0415
    return {"middleware": t.middleware, "deployment": t.deployment, "stack": stack_of(t.middleware),
            "qos": {topic: q.as_dict() for topic, q in t.topic_qos.items()},
            "config_files": t.metadata().get("config_files", {}), "nodes": nodes,
            "discovery_s_max": max(discovery) if discovery else None, "status_suffix": STATUS_SUFFIX}


def _node_record(path: Path) -> dict[str, Any]:
    """One node's part of the ``ros2`` record, from its status file (here: after the run, the
    records of real machines are home)."""
    from .ros2 import read_status as read_here  # noqa: PLC0415
    st = read_here(path)
    if not st:
        return {"status": "no status file"}
    start = st.get("started_ns")
    one: dict[str, Any] = {"started_ns": start, "matched": bool(st.get("matched_ns")),
                           "endpoints": st.get("endpoints", {})}
    if start and st.get("matched_ns"):
        one["discovery_s"] = round((st["matched_ns"] - start) / 1e9, 6)
    firsts = {t: ns for t, ns in (st.get("first_rx_ns") or {}).items() if ns and ns > 0}
    if start and firsts:
        one["first_sample_s"] = {t: round((ns - start) / 1e9, 6) for t, ns in firsts.items()}
    for k in ("received", "wire", "final"):
        if k in st:
            one[k] = st[k]
    return one
