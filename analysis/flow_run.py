"""Analysis of the perturbing flows of a run: the measurements of the Pound paper's tables.

Per flow and per subscriber: the period at the destination (J_d: mean and std of the
inter-arrival time), the source's own period (its publish times: how steadily the sender
sent, the part of J_d's jitter that is not the network's), the delay D (mean, std and
percentiles; one-way, exact as the hosts share one clock; for an ``echo`` flow the round
trip, sender's publish to the echo's arrival, on the sender's clock), the message delivery
ratio MDR (distinct messages received / sent), the bandwidth used at the receiver BW
(bytes received x 8 over the reception span, Mbit/s), and where the receiver's
``<record>.receive.json`` exists the messages its subscriber queue dropped and those lost
before it (the publisher's queue on TCPROS).

The sent side is the source's tx record (its publish time), or for a bag replay the tap on
the sending host (rows of kind "tap", matched on header seq and stamp).

The flows are the typed :class:`netloop.model.Flow` instances of the run's recorded
experiment (:func:`recorded_flows`): replicas expanded, the cell's sweep values applied.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model import Flow, RunSpec
from ..run_files import MetadataError, RunRecord
from ..rundir import RunDir, sink_names
from ..schema import ConfigError
from . import clocks, metrics, outages
from .records import RecordError, read_events
from .results import FlowResult


#: the kinds whose message size is configured exactly (the others' is measured: mean_bytes)
SIZED_KINDS = ("generic", "echo")


@dataclass
class RecordedFlow:
    """One flow a run started: the typed flow, the experiment's entry it comes from and its
    replica number (None for an entry without replicas)."""

    flow: Flow
    entry: str
    replica: int | None = None
    replicas: int = 1
    per_robot: bool = False       # the replicas are the entry on each robot (per_robot)


def recorded_flows(meta: RunRecord) -> tuple[list[RecordedFlow], list[str]]:
    """The flows a run started (typed, replicas expanded) from its metadata, and the problems
    of a recorded experiment that does not fit the model (then no flow)."""
    doc = meta.experiment
    if not doc or not doc.get("flows"):
        return [], []
    try:
        spec = RunSpec.from_metadata(doc)
    except ConfigError as err:
        return [], [f"the recorded experiment does not fit the model: {err}"]
    robots = spec.experiment.robot_hosts() if any(f.per_robot for f in spec.experiment.flows) else None
    out = []
    for entry in spec.experiment.flows:
        instances = entry.instances(robots)
        out += [RecordedFlow(one, entry.name, k if len(instances) > 1 else None, len(instances), entry.per_robot)
                for k, one in enumerate(instances, 1)]
    return out, []


def analyse_flow(run_dir: Path, flow: Flow | RecordedFlow) -> FlowResult:
    """The measurements of a flow with one subscriber (see :func:`analyse_flow_receivers`
    for a flow with several); ValueError for a flow with several."""
    results = analyse_flow_receivers(run_dir, flow)
    if len(results) != 1:
        raise ValueError(f"flow {results[0].flow} has {len(results)} subscribers: use analyse_flow_receivers")
    return results[0]


def analyse_flow_receivers(run_dir: Path, flow: Flow | RecordedFlow) -> list[FlowResult]:
    """The measurements of one flow, one result per subscriber (in ``rundir.sink_names`` order)."""
    recorded = flow if isinstance(flow, RecordedFlow) else RecordedFlow(flow, flow.name)
    receivers = sink_names(recorded.flow)
    several = len(receivers) > 1
    return [analyse_receiver(run_dir, recorded, record, f"#{k} on {host}" if several else None, host)
            for k, (_node, host, record) in enumerate(receivers, 1)]


def _on_one_clock(meta: RunRecord, out: FlowResult, from_host: str, to_host: str, sent_s: np.ndarray,
                  delays: np.ndarray) -> np.ndarray:
    """The delays corrected for the machines' clock offsets (real machines; unchanged on the
    testbed's one clock), their uncertainty in ``out``."""
    correction = clocks.correct(meta, from_host, to_host, sent_s, delays)
    if correction is None:
        return delays
    out.clock_uncertainty_ms = round(correction.uncertainty_s * 1e3, 4)
    return correction.delays


def _outages(meta: RunRecord, out: FlowResult, sent: dict, keys: set, arrivals_s: np.ndarray) -> None:
    """What each outage of the run did to this receiver's messages (analysis.outages);
    ``sent``: key -> send time [ns] of every message sent, ``keys``: those received."""
    if not outages.windows(meta):
        return
    order = list(sent)
    sent_s = np.array([sent[k] / 1e9 for k in order])
    out.outages = outages.per_outage(meta, sent_s, np.array([k in keys for k in order]), arrivals_s)


def analyse_receiver(run_dir: Path, recorded: RecordedFlow, record: str, subscriber: str | None = None,
                     host: str | None = None) -> FlowResult:
    """The measurements of one receiver of a flow (its record ``records/<record>``, on
    ``host``: the flow's first destination when not given)."""
    flow = recorded.flow
    out = FlowResult(flow=flow.name, kind=flow.kind, entry=recorded.entry, replica=recorded.replica,
                     replicas=recorded.replicas, per_robot=recorded.per_robot,
                     size_bytes=flow.loop_sample_bytes if flow.kind in SIZED_KINDS else None,
                     payload_bytes=flow.payload_bytes if flow.kind in SIZED_KINDS else None,
                     period_s=flow.period, subscriber=subscriber,
                     measures="round trip" if flow.kind == "echo" else "one-way")
    run = RunDir(run_dir)
    try:
        tx = read_events(run.record(f"flow_{flow.name}_tx"))
        rx = read_events(run.records / record)
    except RecordError as err:
        out.problems.append(str(err))
        return out
    tap = flow.kind in ("lidar_bag", "topic")
    # send time of each message, keyed as the receiver sees it
    if tap:
        sent = {(s, st): r for s, st, r in zip(tx.seq.tolist(), tx.stamp_ns.tolist(), tx.recv_ns.tolist())}
        keys = list(zip(rx.seq.tolist(), rx.stamp_ns.tolist()))
    else:
        sent = dict(zip(tx.seq.tolist(), tx.stamp_ns.tolist()))
        keys = rx.seq.tolist()
    delays = np.array([(r - sent[k]) / 1e9 for k, r in zip(keys, rx.recv_ns.tolist()) if k in sent])
    number = {k: n for n, k in enumerate(sent)}   # message number: its place in the sending order
    out.message_numbers = [number[k] for k in keys if k in sent]
    try:   # the clocks and the outages of the run
        meta = run.load_metadata()
    except MetadataError:
        meta = RunRecord()
    if flow.kind != "echo":   # an echo's round trip is read on one clock
        delays = _on_one_clock(meta, out, flow.from_, host or flow.to[0],
                               np.array([sent[k] / 1e9 for k in keys if k in sent]), delays)
    received = len(set(keys) & set(sent))
    _outages(meta, out, sent, set(keys), rx.recv_ns / 1e9)
    arrivals = np.sort(rx.recv_ns / 1e9)
    span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else math.nan
    bw = (rx.bytes.sum() * 8 / 1e6) / (span + flow.period) if len(arrivals) > 1 and flow.period else math.nan
    out.ok, out.sent, out.received = True, len(sent), received
    out.MDR = received / len(sent) if sent else math.nan
    out.period, out.delay = metrics.period_stats(arrivals), metrics.delay_stats(delays)
    out.source_period = metrics.period_stats(np.array(list(sent.values()), float) / 1e9)
    out.bandwidth_mbit = float(bw)
    out.mean_bytes = float(rx.bytes.mean()) if len(rx) else math.nan
    out.delays_ms, out.periods_ms = (delays * 1e3).tolist(), (np.diff(arrivals) * 1e3).tolist()
    out.sent_s = [sent[k] / 1e9 for k in keys if k in sent]
    out.subscriber_queue_drops, out.lost_before_subscriber = _receive_losses(run.records / record)
    if tx.truncated_rows or rx.truncated_rows:
        out.problems.append("a record ends in a cut-off row (skipped)")
    return out


def _receive_losses(record: Path) -> tuple[int | None, int | None]:
    """(subscriber-queue drops, losses before the subscriber) from the receiver's
    ``<record>.receive.json`` (None, None where the node wrote none)."""
    try:
        summary = json.loads(record.with_suffix(".receive.json").read_text(encoding="utf-8"))
        return int(summary["subscriber_queue_drops"]), int(summary["lost_before_subscriber"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, None
