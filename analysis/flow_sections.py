"""The perturbing flows' part of a report: one section per flow of the experiment file, with
the Pound paper's table (J_d, D with its percentiles, MDR, BW) per transport, per sweep
setting and per subscriber, the flow's CSV, empirical CDFs of D and J_d, D against the message
number run by run (:mod:`sequence_figure`), and where the flow's message size, period or
replica count was swept the delay against the swept value, one curve per transport and
values of the other swept keys.

Input: the :class:`RunAnalysis` of the complete runs (their ``flows``: one
:class:`FlowResult` per flow instance and subscriber, see :mod:`flow_run`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import degradation, plots, sequence_figure
from .rendering import Section
from .results import FlowResult, RunAnalysis
from .tables import fmt, median_of, write_csv


@dataclass
class FlowSample:
    """One flow result with the run it belongs to."""

    run: RunAnalysis
    result: FlowResult

    @property
    def setting(self) -> str:
        return degradation.setting_of(self.run)


def samples_of(runs: list[RunAnalysis], entry: str) -> list[FlowSample]:
    """Every analysed result of one flow entry (its replicas and subscribers) in the runs."""
    return [FlowSample(a, f) for a in runs for f in a.flows if f.entry == entry and f.ok]


def entries(runs: list[RunAnalysis]) -> list[str]:
    """The flow entries of the runs, in the experiment's order."""
    return list(dict.fromkeys(f.entry for a in runs for f in a.flows))


def _delay_word(kind_measures: str) -> str:
    return "RTT" if kind_measures == "round trip" else "D"


def columns(swept: bool, several_subscribers: bool, replicas: bool, measures: str, drops: bool) -> list[str]:
    d = _delay_word(measures)
    return ((["setting"] if swept else []) + ["transport"] + (["subscriber"] if several_subscribers else []) +
            ["runs" + (" × replicas" if replicas else ""), "offered [Mbit/s]", "mean J_d [ms]", "std J_d [ms]",
             "std source period [ms]", f"mean {d} [ms]",
             f"std {d} [ms]", f"p50 {d} [ms]", f"p95 {d} [ms]", f"p99 {d} [ms]", "MDR [%]", "BW [Mbit/s]"] +
            (["subscriber-queue drops", "lost before subscriber"] if drops else []))


def table_rows(samples: list[FlowSample], swept: bool, several_subscribers: bool, drops: bool,
               setting_rank: list[str], transport_order: list[str] | None = None) -> list[list[Any]]:
    """One row per setting × transport × subscriber: medians over the repetitions and replicas
    (drops: their sum)."""
    groups: dict[tuple[str, str, str], list[FlowSample]] = {}
    for s in samples:
        groups.setdefault((s.setting, s.run.transport, s.result.subscriber or ""), []).append(s)
    rows = []
    for (setting, transport, subscriber), group in groups.items():
        fl = [s.result for s in group]
        per_run: dict[str, float] = {}   # BW: the row's replicas together, per run
        for s in group:
            per_run[s.run.run_id] = per_run.get(s.run.run_id, 0.0) + s.result.bandwidth_mbit

        def med(get):
            return median_of(get(f) for f in fl)

        def total(get):
            vals = [get(f) for f in fl if get(f) is not None]
            return sum(vals) if vals else None
        rows.append(([setting] if swept else []) + [transport] + ([subscriber] if several_subscribers else []) + [
            len(fl), offered_mbit(fl), med(lambda f: f.period["mean_ms"]), med(lambda f: f.period["std_ms"]),
            med(lambda f: (f.source_period or {}).get("std_ms")),
            med(lambda f: f.delay["mean_ms"]), med(lambda f: f.delay["std_ms"]), med(lambda f: f.delay["p50_ms"]),
            med(lambda f: f.delay["p95_ms"]), med(lambda f: f.delay["p99_ms"]), med(lambda f: 100 * f.MDR),
            median_of(per_run.values())] +
            ([total(lambda f: f.subscriber_queue_drops), total(lambda f: f.lost_before_subscriber)] if drops else []))
    transports = list(transport_order or []) + sorted({s.run.transport for s in samples} - set(transport_order or []))

    def rank(items: list[str], item: str) -> int:
        return items.index(item) if item in items else len(items)
    col = 1 if swept else 0
    rows.sort(key=lambda r: (rank(setting_rank, r[0]) if swept else 0, rank(transports, r[col])))
    return rows


def offered_mbit(results: list[FlowResult]) -> float | None:
    """The load the flow's instances in one row offer the link together [Mbit/s]: size × 8 /
    period for each distinct replica (an echo crosses twice); None where the size is measured,
    not configured."""
    per_instance = {}
    for f in results:
        if f.size_bytes is None or not f.period_s:
            return None
        per_instance[f.flow] = f.size_bytes * 8 / f.period_s / 1e6 * (2 if f.measures == "round trip" else 1)
    return sum(per_instance.values()) if per_instance else None


def _values(samples: list[FlowSample], attr: str) -> list[Any]:
    return sorted({getattr(s.result, attr) for s in samples if getattr(s.result, attr) is not None})


def heading(entry: str, samples: list[FlowSample]) -> str:
    """The section's heading: the flow, its kind, and its message size and period (every value
    when they were swept)."""
    if not samples:
        return f"Flow `{entry}`"
    first = samples[0].result
    sizes, periods = _values(samples, "size_bytes"), _values(samples, "period_s")
    parts = [first.kind]
    measured = median_of(s.result.mean_bytes for s in samples)
    if not sizes and measured is not None:
        parts.append(f"{measured:.0f} bytes per message (measured)")
    payloads = _values(samples, "payload_bytes")
    if sizes:
        parts.append(("sizes " + ", ".join(f"{s:g}" for s in sizes) + " bytes per message (swept)") if len(sizes) > 1
                     else f"{sizes[0]:g} bytes per message")
    if payloads:
        parts.append(("payloads " + ", ".join(f"{p:g}" for p in payloads) + " bytes") if len(payloads) > 1
                     else f"{payloads[0]:g}-byte payload")
    if periods:
        parts.append(("periods " + ", ".join(f"{1e3 * p:g}" for p in periods) + " ms (swept)") if len(periods) > 1
                     else f"every {1e3 * periods[0]:g} ms")
    counts = _values(samples, "replicas")
    what = "robots" if any(s.result.per_robot for s in samples) else "replicas"
    if len(counts) > 1:
        parts.append(", ".join(str(n) for n in counts) + f" {what} (swept)")
    elif counts and counts[0] > 1:
        parts.append(f"{counts[0]} {what}")
    if first.measures == "round trip":
        parts.append("round trip through an echoer")
    return f"Flow `{entry}` ({', '.join(parts)})"


def setting_rank(runs: list[RunAnalysis]) -> list[str]:
    labels = {degradation.setting_of(a): degradation.cell_of(a)[2] for a in runs}
    return sorted(labels, key=lambda k: (degradation.setting_sort_key(labels[k]), k))


def sections(runs: list[RunAnalysis], out_dir: Path, fig_dir: Path, capacity_mbit: float | None = None,
             transport_order: list[str] | None = None) -> list[Section]:
    """One section per flow entry of the complete runs; writes ``flow_<entry>.csv`` into
    ``out_dir`` and the figures into ``fig_dir``. Rows in sweep order, then in
    ``transport_order`` (the experiment's), then by name."""
    rank = setting_rank(runs)
    swept = len({degradation.setting_of(a) for a in runs if a.flows}) > 1
    out = []
    for entry in entries(runs):
        samples = samples_of(runs, entry)
        several = any(s.result.subscriber for s in samples)
        replicas = any(s.result.replica for s in samples)
        drops = any(s.result.subscriber_queue_drops is not None for s in samples)
        measures = samples[0].result.measures if samples else "one-way"
        header = columns(swept, several, replicas, measures, drops)
        rows = table_rows(samples, swept, several, drops, rank, transport_order)
        write_csv(out_dir / f"flow_{entry}.csv", header, rows)
        section = Section(heading(entry, samples))
        if not samples:
            out.append(section.p("No complete run of this flow could be analysed (see Problems)."))
            continue
        section.table(header, rows, digits=2)
        if any(s.result.per_robot for s in samples):
            section.p("Each robot (medians over the repetitions): is one robot worse off than the others?")
            section.table(*per_robot_rows(samples, rank, transport_order))
        word = _delay_word(measures)
        what = "round-trip time" if measures == "round trip" else "one-way delay"
        for kind, series, label in (("delay", "delays_ms", f"{what} {word} [ms]"),
                                    ("period", "periods_ms", "period at the destination J_d [ms]")):
            by: dict[str, dict[str, list[float]]] = {}
            for s in samples:
                key = s.setting if swept else degradation.NO_SWEEP
                by.setdefault(key, {}).setdefault(s.run.transport, []).extend(getattr(s.result, series))
            by = dict(sorted(by.items(), key=lambda kv: rank.index(kv[0]) if kv[0] in rank else len(rank)))
            fig = fig_dir / f"flow_{entry}_{kind}.png"
            plots.delay_ecdfs_by_setting(by, fig, xlabel=label, title=f"Flow {entry}: {label}", log=kind == "delay")
            section.fig(fig, f"Flow {entry}: the {label} per transport as an empirical CDF (the share of messages "
                             f"at or below each value{'; log axis' if kind == 'delay' else ''})"
                             f"{', one panel per setting' if swept else ''}.")
        for figure in (sequence_figure.sequence_figure(entry, samples, fig_dir, rank, word, what),
                       scaling_figure(entry, samples, fig_dir, capacity_mbit),
                       bandwidth_figure(entry, samples, fig_dir, capacity_mbit)):
            if figure is not None:
                section.fig(*figure)
        out.append(section)
    return out


def _host_order(host: str) -> tuple[int, str]:
    """Sorts ``robot``, ``robot2`` ... ``robot10`` by their number (a name without one first)."""
    digits = host[len(host.rstrip("0123456789")):]
    return (int(digits) if digits else 1, host)


def per_robot_rows(samples: list[FlowSample], rank: list[str],
                   transport_order: list[str] | None) -> tuple[list[str], list[list]]:
    """The table of a per_robot flow entry: one row per setting, transport and robot."""
    groups: dict[tuple[str, str, str], list[FlowSample]] = {}
    for s in samples:
        groups.setdefault((s.setting, s.run.transport, s.result.flow), []).append(s)
    order = transport_order or []

    def key(k):
        setting, transport, flow = k
        return (rank.index(setting) if setting in rank else len(rank),
                order.index(transport) if transport in order else len(order), transport,
                _host_order(flow.rsplit("_", 1)[-1]))
    rows = [[setting, transport, flow.rsplit("_", 1)[-1], len(group),
             median_of(g.result.delay["p50_ms"] for g in group if g.result.delay),
             median_of(g.result.delay["p95_ms"] for g in group if g.result.delay),
             median_of(100 * g.result.MDR for g in group if g.result.MDR is not None)]
            for (setting, transport, flow), group in sorted(groups.items(), key=lambda kv: key(kv[0]))]
    return ["setting", "transport", "robot", "runs", "p50 D [ms]", "p95 D [ms]", "MDR [%]"], rows


def swept_axis(samples: list[FlowSample]) -> str | None:
    """The one flow parameter the samples vary ("size_bytes", "period_s" or "replicas"), else
    None. Size and period varied together, one period per size (a ``zip`` sweep, e.g. a
    constant offered load as in Pound's Fig. 19), count as a size sweep."""
    varied = [attr for attr in ("size_bytes", "period_s", "replicas") if len(_values(samples, attr)) > 1]
    if varied == ["size_bytes", "period_s"]:
        pairs = {(s.result.size_bytes, s.result.period_s) for s in samples}
        if len(pairs) == len(_values(samples, "size_bytes")):
            return "size_bytes"
    return varied[0] if len(varied) == 1 else None


def bandwidth_figure(entry: str, samples: list[FlowSample], fig_dir: Path,
                     capacity_mbit: float | None) -> tuple[Path, str] | None:
    """Where the flow's message size was swept: the bandwidth delivered at the receiver
    (median over repetitions) against the size per transport, with the offered load and the
    link's capacity (the Pound paper's Fig. 19)."""
    if swept_axis(samples) != "size_bytes":
        return None
    curves: dict[plots.Curve, list[tuple[float, float]]] = {}
    offered: dict[float, float] = {}
    for s in samples:
        if s.result.size_bytes and s.result.period_s:
            offered[float(s.result.size_bytes)] = 8 * s.result.size_bytes / s.result.period_s / 1e6
    for key, group in by_curve(samples, "size_bytes").items():
        points = []
        for size in _values(group, "size_bytes"):
            bw = [s.result.bandwidth_mbit if s.result.bandwidth_mbit is not None and
                  math.isfinite(s.result.bandwidth_mbit) else 0.0 for s in group if s.result.size_bytes == size]
            if bw:
                points.append((float(size), float(np.median(bw))))
        if points:
            curves[key] = sorted(points)
    if not curves:
        return None
    path = fig_dir / f"flow_{entry}_bandwidth.png"
    plots.bandwidth_curves(curves, path, title=f"Flow {entry}: delivered bandwidth against the message size",
                           offered=sorted(offered.items()), capacity_mbit=capacity_mbit)
    worst = min(curves, key=lambda t: min(b for _, b in curves[t]))
    caption = ("Bandwidth delivered at the receiver (message bytes × 8 over the receiving time, median "
               f"of the repetitions) per {curves_word(curves)} against the message size (log axis), with the load "
               "the sender offered (dashed)" + (f" and the link's nominal capacity ({fmt(capacity_mbit, 1)} "
                                                 f"Mbit/s, dotted)" if capacity_mbit else "") +
               f". Lowest: {worst}, {fmt(min(b for _, b in curves[worst]), 2)} Mbit/s at "
               f"{fmt(min(curves[worst], key=lambda p: p[1])[0], 0)} bytes.")
    return path, caption


def scaling_figure(entry: str, samples: list[FlowSample], fig_dir: Path,
                   capacity_mbit: float | None) -> tuple[Path, str] | None:
    """Where the flow's size, period or replica count was swept: the delay (median, p5–p95 band) against the
    swept value per transport on log axes, the link's air time of one message (size over
    capacity) and the value where the delay explodes (10 × its value at the lightest load)."""
    axis = swept_axis(samples)
    if axis is None:
        return None
    word = _delay_word(samples[0].result.measures)
    curves: dict[plots.Curve, list[tuple[float, float, float, float]]] = {}
    for key, group in by_curve(samples, axis).items():
        points = []
        for value in _values(group, axis):
            delays = np.concatenate([np.asarray(s.result.delays_ms, float) for s in group
                                     if getattr(s.result, axis) == value] or [[]])
            if delays.size:
                p5, p50, p95 = np.percentile(delays, [5, 50, 95])
                x = 1.0 / value if axis == "period_s" else value
                points.append((float(x), float(p50), float(p5), float(p95)))
        if points:
            curves[key] = sorted(points)
    if not curves:
        return None
    size = _values(samples, "size_bytes")
    theory = None
    if capacity_mbit:
        if axis == "size_bytes":
            theory = ("one message's air time at the link capacity (size / capacity)",
                      lambda x: 8 * x / (capacity_mbit * 1e3))
        elif axis == "period_s" and size:
            theory = ("link saturated: size × rate = capacity", capacity_mbit * 1e6 / (8 * size[0]))
        elif axis == "replicas" and size and len(_values(samples, "period_s")) == 1:
            per_pair = 8 * size[0] / _values(samples, "period_s")[0] / 1e6
            theory = ("link saturated: N × size × rate = capacity", capacity_mbit / per_pair)
    xlabel = {"size_bytes": "message size [bytes]", "period_s": "rate [Hz]",
              "replicas": "robots N, each sending" if any(s.result.per_robot for s in samples)
              else "node pairs N (replicas)"}[axis]
    path = fig_dir / f"flow_{entry}_scaling.png"
    knees = {key: explodes_at(points) for key, points in curves.items()}
    plots.scaling_curves(curves, path, xlabel=xlabel, ylabel=f"{word} [ms]",
                         title=f"Flow {entry}: {word} against the {xlabel.split(' [')[0]}", theory=theory, knees=knees)
    knee_text = "; ".join(f"{t} from {fmt(x, 0)}" for t, x in knees.items() if x is not None)
    caption = (f"Median {word} per {curves_word(curves)} (line) with its 5–95 % band, against the swept "
               f"{xlabel.split(' [')[0]} (log axes)"
               + (f"; dotted: {theory[0]}" if theory else "") +
               (f". The delay explodes (above 10 × its value at the lightest setting): {knee_text}." if knee_text else
                ". The delay does not explode (stays within 10 × its value at the lightest setting)."))
    return path, caption


def axis_settings(sample: FlowSample) -> dict[str, Any]:
    """The swept keys of a sample's run, by their short name (the last part of the key path,
    as in the run's condition; the whole path where two keys share a last part)."""
    settings = degradation.cell_of(sample.run)[2]
    short = [k.rsplit(".", 1)[-1] for k in settings]
    return {(k.rsplit(".", 1)[-1] if short.count(k.rsplit(".", 1)[-1]) == 1 else k): v for k, v in settings.items()}


def other_keys(samples: list[FlowSample], axis: str) -> list[str]:
    """The swept keys the figure's axis does not decide: those with more than one value at
    one value of the axis (a key swept with it in a zip, or the axis's own key, has one)."""
    seen: dict[str, dict[Any, set[str]]] = {}
    for s in samples:
        x = getattr(s.result, axis)
        for k, v in axis_settings(s).items():
            seen.setdefault(k, {}).setdefault(x, set()).add(repr(v))
    return [k for k, by_x in seen.items() if any(len(values) > 1 for values in by_x.values())]


def by_curve(samples: list[FlowSample], axis: str) -> dict[plots.Curve, list[FlowSample]]:
    """The samples of each curve of a figure against ``axis``: one per transport and values of
    the other swept keys (a link, a CPU level swept besides the axis), in the samples' order."""
    others = other_keys(samples, axis)
    out: dict[plots.Curve, list[FlowSample]] = {}
    for s in samples:
        settings = axis_settings(s)
        key = plots.Curve(s.run.transport, tuple((k, settings.get(k)) for k in others))
        out.setdefault(key, []).append(s)
    return out


def curves_word(curves: dict) -> str:
    """'transport', or what else keys the curves (e.g. 'transport and link, cpu')."""
    others = next((k.others for k in curves if isinstance(k, plots.Curve) and k.others), ())
    return "transport" + (" and " + ", ".join(k for k, _ in others) if others else "")


def explodes_at(points: list[tuple[float, float, float, float]], factor: float = 10.0) -> float | None:
    """The first x whose median is above ``factor`` × the median at the lightest load (the
    smallest x), else None."""
    if len(points) < 2 or not math.isfinite(points[0][1]) or points[0][1] <= 0:
        return None
    return next((x for x, med, _, _ in points[1:] if med > factor * points[0][1]), None)
