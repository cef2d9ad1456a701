"""The ``bridge`` deployment of the ROS 2 transports: one ``ros2_bridge`` process
(src/relays/ros2_bridge.cpp) per host, with the crossing topics it carries out and in."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .. import paths
from .base import CrossingTopic, TransportContext
from .relay_common import TransportError

if TYPE_CHECKING:
    from .ros2 import Ros2Transport

#: the DDS status files' suffix (records/<node>.ros2.json)
STATUS_SUFFIX = ".ros2.json"


def bridge_plan(transport: Ros2Transport, topics: list[CrossingTopic],
                type_of: Callable[[str], dict[str, str] | None]) -> list[dict[str, Any]]:
    """One ``ros2_bridge`` per host a crossing topic leaves or reaches: [{name, host, argv, params}]
    with ``out_topics`` (ROS 1 -> middleware) and ``in_topics`` (middleware -> ROS 1), each
    {topic, datatype, md5sum, definition, reliability, durability, depth} (src/relays/ros2_bridge.cpp).
    Pure apart from the type look-up (``type_of``: a datatype's {type, md5, definition} or None)."""
    assert transport.ctx is not None
    ctx = transport.ctx
    hosts = list(ctx.address)
    out = []
    for h in hosts:
        leaving = list({t.topic: t for t in topics if t.source_host == h}.values())
        arriving = list({t.topic: t for t in topics if t.dest_host == h}.values())
        if not leaving and not arriving:
            continue
        name = f"ros2_bridge_{h}"

        def entry(t: CrossingTopic) -> dict[str, Any]:
            qos = transport.topic_qos.setdefault(t.topic, transport.qos_for(_topic_overrides(ctx, t.topic)))
            info = type_of(t.datatype) or {}
            if not info:
                raise TransportError(f"transport {transport.name} (bridge): message type {t.datatype!r} of "
                                     f"{t.topic} is not installed")
            return {"topic": t.topic, "datatype": info["type"], "md5sum": info["md5"],
                    "definition": info["definition"], **qos.as_dict()}
        params = {"middleware": transport.middleware, "middleware_config": transport.config_files[h],
                  "domain_id": transport.settings.domain_id, "out_topics": [entry(t) for t in leaving],
                  "in_topics": [entry(t) for t in arriving],
                  "stats_path": str(Path(ctx.run_dir) / "records" / f"relay_{name}_stats.jsonl"),
                  "status_path": str(Path(ctx.run_dir) / "records" / f"{name}{STATUS_SUFFIX}")}
        if transport.middleware == "zenoh":
            params["type_hashes"] = dict(transport.type_hashes)
        out.append({"name": name, "host": h, "argv": [str(paths.node_binary("ros2_bridge")), f"__name:={name}"],
                    "params": params})
    return out


def _topic_overrides(ctx: TransportContext, topic: str) -> dict[str, Any]:
    return ctx.topic_qos.get(topic, {})
