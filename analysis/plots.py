"""Figures of the reports. Every figure has axes with units and a legend, and every
transport has the same colour in every figure (:mod:`plot_style`).

This module draws the loop's signals against time: step responses over the local baseline
(:func:`step_overlay`, cropped by :func:`transient_end`), predicted against measured
(:func:`prediction_overlay`), two campaigns side by side (:func:`compare_overlay`). The other
figures live by kind in :mod:`delay_plots` and :mod:`sweep_plots`; their names are imported
here too, so the report's modules name every figure as ``plots.<figure>``."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from .delay_plots import delay_ecdfs, delay_ecdfs_by_setting, delay_timeline
from .plot_style import LINESTYLES, MARKERS, TRANSPORT_COLORS, Curve, curve_styles, plt, transport_color
from .sweep_plots import bandwidth_curves, degradation_scatter, scaling_curves

__all__ = ["Curve", "LINESTYLES", "MARKERS", "TRANSPORT_COLORS", "bandwidth_curves", "compare_overlay",
           "curve_styles", "degradation_scatter", "delay_ecdfs", "delay_ecdfs_by_setting",
           "delay_timeline", "group_by_transport", "plt", "prediction_overlay", "scaling_curves",
           "step_overlay", "transient_end", "transport_color"]


def _settled(run: dict) -> bool:
    t = run.get("step", {}).get("SettlingTime")
    return t is not None and bool(np.isfinite(t))


def transient_end(runs: list[dict], factor: float = 1.5, minimum: float = 1.5) -> float:
    """Where a step-response figure can end: ``factor`` × the longest settling time of the
    runs that settled and of their baseline (at least ``minimum`` seconds, at most the runs'
    length), and past the last fault window. When no run settled, the whole run."""
    if not runs:
        return minimum
    length = max(float(r["t"][-1]) for r in runs if len(r["t"]))
    baseline = runs[0].get("baseline_step", {}).get("SettlingTime")
    times = [r["step"]["SettlingTime"] for r in runs if _settled(r)]
    if not times or baseline is None or not np.isfinite(baseline):
        return length
    end = max(minimum, factor * max(times + [baseline]))
    windows = runs[0].get("outage_windows_s") or []
    if windows:
        end = max(end, max(e for _, e in windows) + minimum)
    return min(end, length)


def _scale_to_settled(runs: list[dict], end: float, ax, dev) -> None:
    """When some runs did not settle, scale both panels to the runs that did and the baseline
    (what they swing beyond is cut at the frame, and the legend says which did not settle), so
    that one unstable transport does not flatten every other one into a line."""
    settled = [r for r in runs if _settled(r)]
    if settled and len(settled) < len(runs):
        _scale_to(settled, end, ax, dev)


def _scale_to(shown: list[dict], end: float, ax, dev) -> None:
    """Both panels' limits from ``shown`` runs and their baseline only."""
    ys, devs = [], []
    for r in shown:
        t = np.asarray(r["t"], float)
        keep = t <= end
        y, b = np.asarray(r["y"], float)[keep], np.asarray(r["baseline_y"], float)[keep]
        n = min(len(y), len(b))
        ys += [y, b]
        devs.append(1e3 * (y[:n] - b[:n]))
    for axis, values in ((ax, np.concatenate(ys)), (dev, np.concatenate(devs))):
        lo, hi = float(values.min()), float(values.max())
        pad = 0.15 * (hi - lo) or 0.1
        axis.set_ylim(lo - pad, hi + pad)


def _on_grid(t, y, grid) -> np.ndarray:
    """A sampled (zero-order-hold) signal read on another time grid: the last sample at or
    before each instant."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    idx = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, len(t) - 1)
    return y[idx]


def group_by_transport(runs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in runs:
        out.setdefault(r["transport"], []).append(r)
    return out


def step_overlay(runs: Iterable[dict], path: Path, title: str = "RLC loop step response",
                 aggregate: bool | None = None, scale_to: list[int] | None = None) -> Path:
    """Networked step responses over the local baseline (black dashed, on top), in the manner
    of the Pound paper's control-loop figure, cropped to the transient (:func:`transient_end`);
    the lower panel shows each response's deviation from the baseline [mV], where small
    differences become visible. With several runs per transport (``aggregate`` None: decided
    so), one median line per transport with a min–max band over its runs; else one line per
    run. ``scale_to``: indices (into ``runs``) of the runs the panels are scaled to (the
    others are cut at the frame), in place of the runs that settled."""
    runs = list(runs)
    shown_scale = [runs[i] for i in scale_to or [] if runs[i].get("ok")]
    runs = [r for r in runs if r.get("ok")]
    groups = group_by_transport(runs)
    if aggregate is None:
        aggregate = any(len(g) > 1 for g in groups.values())
    fig, (ax, dev) = plt.subplots(2, 1, figsize=(7.5, 5.6), dpi=110, sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1.6]})
    end = transient_end(runs)
    if runs:
        base = runs[0]
        ax.step(base["t"], base["baseline_y"], where="post", color="black", lw=2.0, ls=(0, (5, 2)),
                label="local baseline (no network)", zorder=6)
        ax.axhline(base["baseline_step"]["SteadyStateValue"], color="0.6", lw=0.8, ls=":")
        dev.axhline(0.0, color="black", lw=1.6, ls=(0, (5, 2)), zorder=6)
        windows = base.get("outage_windows_s") or []
        kinds = base.get("fault_kinds") or ["outage"] * len(windows)
        labelled = set()
        for (start, stop), kind in zip(windows, kinds):   # in an outage the plant holds its last u
            for axis in (ax, dev):
                axis.axvspan(start, stop, color="tab:red" if kind == "outage" else "tab:orange", alpha=0.12, lw=0,
                             label=("link outage" if kind == "outage" else kind)
                             if (kind not in labelled and axis is ax) else None)
            labelled.add(kind)
    if aggregate and runs:
        period = float(np.median(np.diff(runs[0]["t"]))) if len(runs[0]["t"]) > 1 else 0.02
        grid = np.arange(0.0, end + period, period / 2)
        base_y = _on_grid(runs[0]["t"], runs[0]["baseline_y"], grid)
        for transport, rs in groups.items():
            color = transport_color(transport)
            ys = np.array([_on_grid(r["t"], r["y"], grid) for r in rs])
            for axis, values in ((ax, ys), (dev, 1e3 * (ys - base_y))):
                lo, med, hi = values.min(axis=0), np.median(values, axis=0), values.max(axis=0)
                if len(rs) > 1:
                    axis.fill_between(grid, lo, hi, step="post", color=color, alpha=0.14, lw=0, zorder=2)
                unsettled = sum(not _settled(r) for r in rs)
                label = f"{transport} ({len(rs)} run{'s' if len(rs) != 1 else ''}" + \
                    (f", {unsettled} did not settle)" if unsettled else ")")
                axis.step(grid, med, where="post", color=color, lw=1.5, zorder=3, label=label if axis is ax else None)
        ax.plot([], [], color="0.4", lw=1.5, label="line: median, band: min–max")
    else:
        seen = set()
        for r in runs:
            label = r["transport"] if r["transport"] not in seen else None
            seen.add(r["transport"])
            color = transport_color(r["transport"])
            ax.step(r["t"], r["y"], where="post", color=color, lw=1.2, alpha=0.9, label=label, zorder=3)
            n = min(len(r["y"]), len(r["baseline_y"]))
            diff_mv = [1e3 * (a - b) for a, b in zip(r["y"][:n], r["baseline_y"][:n])]
            dev.step(r["t"][:n], diff_mv, where="post", color=color, lw=1.1, alpha=0.9, zorder=3)
    ax.set_xlim(-0.02 * end, end)
    if scale_to is not None and shown_scale and len(shown_scale) < len(runs):
        _scale_to(shown_scale, end, ax, dev)
    elif scale_to is None:
        _scale_to_settled(runs, end, ax, dev)
    ax.set_ylabel("capacitor voltage y = Vc [V]")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=7.5)
    dev.set_xlabel("time since the first sample [s]")
    dev.set_ylabel("y − baseline [mV]")
    dev.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def prediction_overlay(predictions: list[dict], path: Path, title: str = "Predicted vs measured",
                       end: float | None = None) -> Path:
    """Measured y (transport colour) and the response predicted from the run's own measured
    delays (black dashed) on top; below, the prediction error ŷ − y in mV for the prediction
    (solid) and for the median delay alone (dashed, lighter). ``end``: the time axis stops
    there (the transient, :func:`transient_end`)."""
    preds = [p for p in predictions if p.get("ok")]
    fig, (ax, err) = plt.subplots(2, 1, figsize=(7.5, 5.6), dpi=110, sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1.6]})
    seen = set()
    for i, p in enumerate(preds):
        color = transport_color(p["transport"])
        ax.step(p["t"], p["y"], where="post", color=color, lw=1.4, alpha=0.85,
                label=p["transport"] if p["transport"] not in seen else None, zorder=2)
        seen.add(p["transport"])
        ax.step(p["t"], p["modes"]["measured"]["y_hat"], where="post", color="black", lw=0.9, ls="--",
                label="predicted from measured delays" if i == 0 else None, zorder=3)
        for mode, ls, lw, alpha, label in (("mean_delay", (0, (4, 2)), 0.9, 0.6, "ŷ − y, median delay only"),
                                           ("measured", "-", 1.6, 1.0, "ŷ − y, measured delays (the prediction)")):
            e = [1e3 * (a - b) for a, b in zip(p["modes"][mode]["y_hat"], p["y"])]
            err.step(p["t"], e, where="post", color=color, lw=lw, ls=ls, alpha=alpha,
                     label=label if i == 0 else None)
    ax.set_ylabel("capacitor voltage y = Vc [V]")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if preds:
        ax.legend(loc="lower right", fontsize=8)
        err.legend(loc="upper right", fontsize=7)
    err.axhline(0.0, color="0.55", lw=0.8)
    if end:
        ax.set_xlim(-0.02 * end, end)
    err.set_xlabel("time since the first sample [s]")
    err.set_ylabel("ŷ − y [mV]")
    err.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def compare_overlay(pairs: list[tuple[str, list[dict], list[dict]]], labels: tuple[str, str], path: Path,
                    title: str = "Step response, A vs B") -> Path:
    """One panel per (name, runs of A, runs of B): A solid, B dashed, in the transport's
    colour, over the local baseline (grey, of the first run shown)."""
    n = max(1, len(pairs))
    fig, axes = plt.subplots(n, 1, figsize=(7.5, 1.4 + 2.6 * n), dpi=110, sharex=True, squeeze=False)
    for ax, (name, runs_a, runs_b) in zip(axes[:, 0], pairs):
        ref = next((r for r in runs_a + runs_b if r.get("ok")), None)
        if ref is not None:
            ax.step(ref["t"], ref["baseline_y"], where="post", color="0.55", lw=4.0, alpha=0.5,
                    label="local baseline", zorder=1)
        for runs, ls, label in ((runs_a, "-", labels[0]), (runs_b, "--", labels[1])):
            for i, r in enumerate(x for x in runs if x.get("ok")):
                ax.step(r["t"], r["y"], where="post", color=transport_color(r["transport"]), ls=ls, lw=1.1,
                        label=f"{label}" if i == 0 else None, zorder=3)
        ax.set_title(name, fontsize=9, loc="left")
        ax.set_ylabel("y = Vc [V]")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=7.5)
    axes[-1, 0].set_xlabel("time since the first sample [s]")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
