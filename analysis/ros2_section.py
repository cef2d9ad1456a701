"""The report's "ROS 2 middlewares" section: per run over a ROS 2 transport (cyclonedds,
fastdds, zenoh, rmw_fastrtps_cpp) what its nodes are (real ROS 2, rcl + rmw, or netloop's nodes
on the middleware library directly), its deployment and QoS, discovery (status file's matched - started, the
slowest node), the first sample (first arrival - started) and what the middleware did on the
wire (samples, and where the library exposes them retransmissions, heartbeats, ACKNACKs,
samples lost or rejected), from ``metadata.json`` → ``ros2`` (written by the runner from the
nodes' and bridges' ``records/<node>.ros2.json``). Losses, MDR and the late joiners' initial
losses are in the flow and loop sections, from the same records as every transport's."""
from __future__ import annotations

import math
from typing import Any

from .rendering import Section

WIRE = ("samples_sent", "samples_received", "retransmits", "retransmit_bytes", "heartbeats", "acknacks", "throttles",
        "samples_lost", "samples_rejected")


def _sum(nodes: list[dict[str, Any]], key: str) -> float:
    """Sum over the nodes that expose ``key`` (-1 = not exposed); NaN when none does."""
    values = [n["wire"][key] for n in nodes if isinstance(n.get("wire"), dict) and n["wire"].get(key, -1) >= 0]
    return int(sum(values)) if values else math.nan


def _qos_text(record: dict[str, Any]) -> str:
    qos = record.get("qos") or {}
    texts = sorted({f"{q['reliability']}/{q['durability']}/{q['depth']}" for q in qos.values()})
    return ", ".join(texts) or "—"


def _stack_text(record: dict[str, Any]) -> str:
    """What the run's nodes are: "real ROS 2 Jazzy: rcl ... + rmw_fastrtps_cpp ..." or netloop's
    middleware-direct nodes (records before this field: the latter)."""
    stack = record.get("stack") or {}
    return stack.get("label") or "netloop's nodes on the middleware directly"


def section(runs: list) -> Section | None:
    """None when no run used a ROS 2 transport."""
    rows, node_rows = [], []
    for a in runs:
        record = a.meta.ros2
        if not record:
            continue
        nodes = list((record.get("nodes") or {}).items())
        values = [n for _, n in nodes]
        discovery = [n["discovery_s"] for n in values if "discovery_s" in n]
        firsts = [s for n in values for s in (n.get("first_sample_s") or {}).values()]
        rows.append([a.run_id, record.get("middleware"), _stack_text(record), record.get("deployment"),
                     _qos_text(record), len(nodes),
                     1e3 * max(discovery) if discovery else math.nan, 1e3 * min(firsts) if firsts else math.nan]
                    + [_sum(values, k) for k in WIRE])
        for name, n in nodes:
            first = n.get("first_sample_s") or {}
            node_rows.append([a.run_id, name, 1e3 * n["discovery_s"] if "discovery_s" in n else math.nan,
                              ", ".join(f"{t} {1e3 * s:.0f}" for t, s in sorted(first.items())) or "—"]
                             + [_sum([n], k) for k in WIRE[:2]])
    if not rows:
        return None
    out = Section("ROS 2 middlewares")
    out.p("Runs over ROS 2's middlewares: discovery is the slowest node's time from its start to every "
          "middleware endpoint matched; first sample the earliest first arrival after a node's start (the "
          "loop's warmup and the flows' start_delay are in it). Wire figures are summed over the run's nodes "
          "(or bridges) as the library exposes them; blank = not exposed by that library. Per node: "
          "`metadata.json` → `ros2.nodes`, from `records/<node>.ros2.json`. \"Nodes are\": real ROS 2 (the "
          "loop's and flows' nodes are rcl nodes with an rmw of a ROS 2 distribution) or netloop's nodes "
          "speaking the middleware library directly under ROS 2's names (docs/ros2.md).")
    out.table(["run", "middleware", "nodes are", "deployment", "QoS", "nodes", "discovery [ms]", "first sample [ms]",
               "sent", "received", "retransmits", "retransmitted bytes", "heartbeats", "acknacks", "throttles", "lost",
               "rejected"], rows, digits=1)
    out.h(3, "Per node")
    out.table(["run", "node", "discovery [ms]", "first sample per topic [ms]", "sent", "received"], node_rows,
              digits=1)
    return out
