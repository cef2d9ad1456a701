"""Synthetic run directories whose exact answer is known: records written from
:func:`baseline.simulate_loop` with a chosen per-message delay trace, or (flows only,
:func:`write_flow_run`) each flow message's chosen delay.

The records look like the nodes' own (format netloop-events/1, metadata netloop-run/1), so
the whole analysis (records -> delays -> prediction, degradation, report, compare) can be
checked without ROS against a response computed independently of it. Used by the tests.

Delays are given per sample k: ``y_delays[k]`` plant -> controller, ``u_delays[k]``
controller -> plant, NaN where that message is lost. The controller numbers its u in the
order it receives the y (as loop_controller does), and the plant drops a u whose number is
not newer than the last applied one (recorded as ``stale``), as rlc_plant does.
"""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..run_files import CampaignCell, CampaignRecord, RunRecord, save_campaign, save_metadata
from . import baseline
from .records import HEADER

T0_NS = 1_795_000_000_000_000_000


@dataclass
class SyntheticRun:
    run_dir: Path
    times: np.ndarray       # sample instants [s] from the first sample
    y: np.ndarray           # the loop's response at the samples [V] (what the records hold)
    loop_delays: np.ndarray  # sample k's stamp -> arrival of its u at the plant [s] (inf where lost)
    lost: np.ndarray        # no u for sample k reached the plant
    stale: np.ndarray       # a u for sample k arrived but was dropped as older than one applied


def _row(kind, topic, seq, value, stamp, recv=-1, answer_seq=-1, answer_stamp=-1, size=40) -> str:
    return f"{kind},{topic},{seq},{value!r},{stamp},{recv},{answer_seq},{answer_stamp},{size}\n"


def _transport_record(name: str) -> dict[str, Any]:
    """What the runner records about a transport (name, description). This module writes run
    directories as a run would, so it, alone in analysis/, asks the run-time registry."""
    from ..transports import get_transport  # noqa: PLC0415
    try:
        return get_transport(name).metadata()
    except KeyError:   # a name the registry does not know: recorded as given
        return {"name": name}


def _with_schedule(run_dir: Path, cfg: dict) -> dict:
    """The run's loop mapping; with a square wave, its schedule attached (as the analysis
    attaches it) and written to records/reference.json as the run writes it."""
    from .. import reference  # noqa: PLC0415

    loop = cfg["loop"]
    if not ((loop["controller"].get("square_wave") or {}).get("count")):
        return loop
    schedule = reference.loop_schedule(loop, int(cfg.get("repetition") or 0))
    (run_dir / "records" / reference.RECORD_NAME).write_text(
        json.dumps({"schedule": [[k, v] for k, v in schedule]}), encoding="utf-8")
    return dict(loop, reference_schedule=[[k, v] for k, v in schedule])


def write_run(run_dir: str | Path, cfg: dict, y_delays, u_delays, sample_times=None, controller_s: float = 0.0,
              status: str = "complete", t0_ns: int = T0_NS) -> SyntheticRun:
    """One run directory for the experiment ``cfg`` (validated, one transport, with ``cell``)."""
    run_dir = Path(run_dir)
    (run_dir / "records").mkdir(parents=True, exist_ok=True)
    loop = _with_schedule(run_dir, cfg)
    y_delays, u_delays = np.asarray(y_delays, float), np.asarray(u_delays, float)
    n = len(y_delays)
    times = np.arange(n) * loop["plant"]["period"] if sample_times is None else np.asarray(sample_times, float)
    stamp = t0_ns + np.round((times - times[0]) * 1e9).astype(np.int64)
    y_ok = np.isfinite(y_delays)
    y_arr = np.where(y_ok, stamp + np.round(np.nan_to_num(y_delays) * 1e9).astype(np.int64), -1)
    u_send = np.where(y_ok, y_arr + int(round(controller_s * 1e9)), -1)
    # the controller answers the y in the order they reach it
    received = sorted(np.flatnonzero(y_ok).tolist(), key=lambda k: (y_arr[k], k))
    useq = np.full(n, -1, np.int64)
    useq[received] = np.arange(len(received))
    u_ok = y_ok & np.isfinite(u_delays)
    u_arr = np.where(u_ok, u_send + np.round(np.nan_to_num(u_delays) * 1e9).astype(np.int64), -1)
    times_s = (stamp - stamp[0]) / 1e9
    delays = np.where(u_ok, (u_arr - stamp[0]) / 1e9 - times_s, np.inf)
    resp = baseline.simulate_loop(loop, np.where(u_ok, delays, 0.0), lost=~u_ok, sample_times=times_s, seqs=useq)
    law = baseline.law_from_config(loop).sequence()
    next(law)
    u_value = np.array([law.send(v) for v in resp.y])
    # which actuations the plant applies, and which it drops as stale
    stale = np.zeros(n, bool)
    last = -1
    for k in sorted(np.flatnonzero(u_ok).tolist(), key=lambda k: (u_arr[k], useq[k])):
        if useq[k] <= last:
            stale[k] = True
        else:
            last = useq[k]
    plant_rows, ctl_rows = [], []
    for k in range(n):
        plant_rows.append((stamp[k], 1, _row("tx", "y", k, float(resp.y[k]), stamp[k])))
        if u_ok[k]:
            kind = "stale" if stale[k] else "rx"
            plant_rows.append((u_arr[k], 0, _row(kind, "u", useq[k], float(u_value[k]), u_send[k], u_arr[k], k,
                                                 stamp[k])))
        if y_ok[k]:
            ctl_rows.append((y_arr[k], 0, _row("rx", "y", k, float(resp.y[k]), stamp[k], y_arr[k])))
            ctl_rows.append((u_send[k], 1, _row("tx", "u", useq[k], float(u_value[k]), u_send[k], -1, k, stamp[k])))
    for name, rows in (("plant", plant_rows), ("controller", ctl_rows)):
        rows.sort(key=lambda r: (r[0], r[1]))
        (run_dir / "records" / f"{name}.csv").write_text(",".join(HEADER) + "\n" + "".join(r[2] for r in rows),
                                                         encoding="utf-8")
    save_metadata(run_dir, _metadata(run_dir, cfg, status))
    return SyntheticRun(run_dir, times_s, resp.y, delays, ~u_ok, stale)


def _metadata(run_dir: Path, cfg: dict, status: str) -> RunRecord:
    """A run's metadata.json as the runner writes it (the parts the analysis reads)."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")
    loop = cfg["loop"]
    record = RunRecord(status=status, start_time=now, end_time=None if status == "running" else now)
    record.update(run_id=run_dir.name, experiment=cfg, transport=_transport_record(cfg["transport"]),
                  git={"commit": "synthetic", "dirty": False}, host={"cpu": "synthetic", "cores": 0},
                  link={"profile": cfg["link"], "params": {"description": "synthetic records (analysis.synthetic)"},
                        "capacity_mbit": None},
                  loop={"type": loop["type"], "placement": loop["placement"]}, negotiated_transport={},
                  error=None if status == "complete" else f"synthetic {status}")
    return record


def write_flow_run(run_dir: str | Path, cfg: dict, delays: dict[str, Any], status: str = "complete",
                   t0_ns: int = T0_NS) -> Path:
    """A run directory of flows (the experiment ``cfg`` as a run's metadata records it): for
    each flow instance (replicas expanded) whose name ``delays`` holds, its sender's tx record
    (message k sent at k x period, seq k) and its receivers' records, each message arriving
    ``delays[name][k]`` seconds after it was sent (NaN: lost); an echo flow's delay is its
    round trip. Messages have the flow's serialized size (40 + payload_bytes or size_bytes)."""
    from ..rundir import sink_names  # noqa: PLC0415
    from .flow_run import recorded_flows  # noqa: PLC0415

    run_dir = Path(run_dir)
    (run_dir / "records").mkdir(parents=True, exist_ok=True)
    meta = _metadata(run_dir, cfg, status)
    flows, problems = recorded_flows(meta)
    if problems:
        raise ValueError("; ".join(problems))
    for recorded in flows:
        flow = recorded.flow
        if flow.name not in delays:
            continue
        d = np.asarray(delays[flow.name], float)
        topic = flow.topic or f"/flows/{flow.name}"
        sent = t0_ns + np.round(np.arange(len(d)) * flow.period * 1e9).astype(np.int64)
        arrive = sent + np.round(np.nan_to_num(d) * 1e9).astype(np.int64)
        size = flow.loop_sample_bytes
        tx = "".join(_row("tx", topic, k, 0.0, sent[k], size=size) for k in range(len(d)))
        (run_dir / "records" / f"flow_{flow.name}_tx.csv").write_text(",".join(HEADER) + "\n" + tx,
                                                                       encoding="utf-8")
        order = sorted(np.flatnonzero(np.isfinite(d)).tolist(), key=lambda k: (arrive[k], k))
        rx_topic = f"{topic}/echo" if flow.kind == "echo" else topic
        rx = "".join(_row("rx", rx_topic, k, 0.0, sent[k], arrive[k], size=size) for k in order)
        for _node, _host, record in sink_names(flow):
            (run_dir / "records" / record).write_text(",".join(HEADER) + "\n" + rx, encoding="utf-8")
    save_metadata(run_dir, meta)
    return run_dir


DelayModel = Callable[[Any, dict, np.random.Generator], tuple[np.ndarray, np.ndarray]]
FlowDelayModel = Callable[[Any, dict, str, np.random.Generator], np.ndarray]


def write_campaign(out_dir: str | Path, doc: dict, delays: DelayModel | FlowDelayModel, seed: int = 1) -> Path:
    """A whole campaign directory (experiment.yaml, campaign.json, runs/) for the experiment
    document ``doc``; ``delays(cell, run_cfg, rng)`` returns (y_delays, u_delays) of a run.
    With ``loop.type: none`` (flows only), ``delays(cell, run_cfg, flow_name, rng)`` returns the
    delays of one flow instance's messages (:func:`write_flow_run`)."""
    import yaml  # noqa: PLC0415

    from ..experiment import expand, for_cell, validate_experiment  # noqa: PLC0415
    from ..schema import to_dict  # noqa: PLC0415

    out_dir = Path(out_dir)
    cfg = validate_experiment(doc, name=doc.get("name", "synthetic"))
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    (out_dir / "experiment.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False), encoding="utf-8")
    rng = np.random.default_rng(seed)
    campaign = CampaignRecord(cfg.name)
    for cell in expand(cfg):
        run_cfg = for_cell(cfg, cell).metadata()   # the experiment as the run's metadata.json records it
        if run_cfg["loop"]["type"] == "none":
            names = [f.name for f in for_cell(cfg, cell).experiment.flow_instances]
            write_flow_run(out_dir / "runs" / cell.run_id, run_cfg, {n: delays(cell, run_cfg, n, rng) for n in names})
        else:
            y_d, u_d = delays(cell, run_cfg, rng)
            write_run(out_dir / "runs" / cell.run_id, run_cfg, y_d, u_d)
        campaign.cells.append(CampaignCell(run_id=cell.run_id, transport=cell.transport, condition=cell.condition,
                                           settings=dict(cell.settings), repetition=cell.repetition,
                                           status="complete"))
    save_campaign(out_dir, campaign)
    return out_dir
