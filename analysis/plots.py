"""Figures of the reports. Every figure has axes with units and a legend, and every
transport has the same colour in every figure (:func:`transport_color`)."""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

#: Fixed colours of the transports (colour-blind-safe Okabe-Ito palette), baseline in black.
TRANSPORT_COLORS = {
    "baseline": "#000000",
    "tcp": "#E69F00",
    "tcp_nodelay": "#56B4E9",
    "udp": "#009E73",
    "udp/tcp_nodelay": "#0072B2",
    "nimbro": "#D55E00",
    "nimbro_mixed": "#CC79A7",
    "multimaster": "#999933",
    "priority": "#882255",
}
_FALLBACK = ["#332288", "#117733", "#44AA99", "#88CCEE", "#DDCC77", "#AA4499"]


def transport_color(name: str) -> str:
    return TRANSPORT_COLORS.get(name) or _FALLBACK[zlib.crc32(name.encode()) % len(_FALLBACK)]


@dataclass(frozen=True)
class Curve:
    """The key of one curve of a figure: its transport and the values of the other swept keys
    (``others``: (name, value) pairs), so that curves differing in any swept key stay apart."""

    transport: str
    others: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """E.g. 'tcp, link=wifi6, cpu=0.5' (the transport alone without other keys)."""
        return ", ".join([self.transport] + [f"{k}={v}" for k, v in self.others])

    def __str__(self) -> str:
        return self.label


LINESTYLES = ["-", "--", ":", "-."]


def curve_styles(keys: Iterable["Curve | str"]) -> dict[Any, dict[str, Any]]:
    """Matplotlib style of each curve key: colour by transport (as in every figure), line
    style and marker by the values of the other swept keys (the same values, the same
    style), and the label."""
    keys = list(keys)
    others = list(dict.fromkeys(k.others for k in keys if isinstance(k, Curve)))
    out = {}
    for k in keys:
        transport = k.transport if isinstance(k, Curve) else str(k)
        n = others.index(k.others) if isinstance(k, Curve) else 0
        out[k] = {"color": transport_color(transport), "ls": LINESTYLES[n % len(LINESTYLES)],
                  "marker": MARKERS[n % len(MARKERS)], "label": str(k)}
    return out


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


def delay_histograms(runs: Iterable[dict], samples: dict[str, list[float]], path: Path,
                     xlabel: str = "one-way delay [ms]", title: str = "Loop message delay") -> Path:
    """Overlaid histograms of per-message values (e.g. delays in ms), one per transport."""
    fig, ax = plt.subplots(figsize=(7.5, 3.8), dpi=110)
    for name, values in samples.items():
        if len(values):
            ax.hist(values, bins=50, histtype="step", lw=1.4, color=transport_color(name), label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("messages")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if samples:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def delay_histograms_by_setting(samples: dict[str, dict[str, list[float]]], path: Path,
                                xlabel: str = "one-way delay [ms]", title: str = "Loop message delay") -> Path:
    """Histograms per transport, one panel per setting (sweep value) so that a sweep's
    conditions are not pooled; ``samples`` is {setting: {transport: values}}."""
    settings = list(samples) or ["—"]
    fig, axes = plt.subplots(len(settings), 1, figsize=(7.5, 1.2 + 2.4 * len(settings)), dpi=110, squeeze=False)
    for ax, setting in zip(axes[:, 0], settings):
        for name, values in samples.get(setting, {}).items():
            if len(values):
                ax.hist(values, bins=50, histtype="step", lw=1.4, color=transport_color(name), label=name)
        ax.set_ylabel("messages")
        ax.grid(True, alpha=0.3)
        if setting != "—":
            ax.set_title(setting, fontsize=9, loc="left")
        if samples.get(setting):
            ax.legend(fontsize=8)
    axes[-1, 0].set_xlabel(xlabel)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">"]


def degradation_scatter(groups: list[dict], x_key: str, xlabel: str, path: Path, title: str,
                        model: dict | None = None) -> Path:
    """Degradation against a network number (delay or jitter), one point per condition at
    the mean over its repetitions, bars spanning min–max over the repetitions, the single
    runs as small dots; colour = transport, marker = setting. Upper panel IAE(y − baseline),
    lower panel Δovershoot. Runs that did not settle are ringed in red. ``model`` (optional):
    {"x": ms, "iae_dev_mVs": ..., "delta_overshoot_pp": ..., "label": ...} drawn as a grey line."""
    from matplotlib.lines import Line2D  # noqa: PLC0415

    fig, axes = plt.subplots(2, 1, figsize=(7.5, 6.4), dpi=110, sharex=True)
    settings = list(dict.fromkeys(g["setting"] for g in groups))
    panels = (("iae_dev_mVs", "IAE(y − baseline) [mV·s]"), ("delta_overshoot_pp", "Δovershoot vs baseline [pp]"))
    hidden = 0
    for ax, (y_key, ylabel) in zip(axes, panels):
        overshoot = y_key == "delta_overshoot_pp"
        if model is not None:
            mx, my = np.asarray(model["x"], float), np.asarray(model[y_key], float)
            if overshoot and "settled" in model:   # overshoot is only defined for a settled response
                my = np.where(np.asarray(model["settled"], bool), my, np.nan)
            ax.plot(mx, my, color="0.55", lw=1.6, ls="--", zorder=1)
        for g in groups:
            sx, sy = g["stats"][x_key], g["stats"][y_key]
            if not (sx["n"] and sy["n"]):
                continue
            if overshoot and g["verdicts"].get("unstable") == g["n"]:
                hidden += 1
                continue
            color = transport_color(g["transport"])
            marker = MARKERS[settings.index(g["setting"]) % len(MARKERS)]
            ax.errorbar(sx["mean"], sy["mean"], xerr=[[sx["mean"] - sx["min"]], [sx["max"] - sx["mean"]]],
                        yerr=[[sy["mean"] - sy["min"]], [sy["max"] - sy["mean"]]], fmt=marker, color=color,
                        ms=7, mec="black", mew=0.6, capsize=3, lw=1.1, zorder=3)
            for r in g["runs"]:
                x, y = r.get(x_key), r.get(y_key)
                if x is None or y is None:
                    continue
                ax.plot([x], [y], ".", color=color, ms=3.5, alpha=0.7, zorder=2)
                if r.get("verdict") != "settled":
                    ax.plot([x], [y], "o", mfc="none", mec="#D00000", ms=11, mew=1.4, zorder=4)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    iae = [r.get("iae_dev_mVs") for g in groups for r in g["runs"]]
    iae = np.array([v for v in iae if v is not None and np.isfinite(v) and v > 0])
    if iae.size and iae.max() > 100 * iae.min():      # spans decades: a log axis keeps the small ones visible
        axes[0].set_yscale("log")
        axes[0].set_ylim(bottom=iae.min() / 3)
        axes[0].set_ylabel("IAE(y − baseline) [mV·s], log scale")
    if hidden:
        axes[1].text(0.99, 0.97, f"{hidden} condition(s) with only unstable runs not shown (overshoot undefined)",
                     transform=axes[1].transAxes, ha="right", va="top", fontsize=7.5, color="#D00000")
    axes[-1].set_xlabel(xlabel)
    axes[0].set_title(title)
    handles = [Line2D([], [], color=transport_color(t), marker="o", ls="", mec="black", mew=0.6, label=t)
               for t in dict.fromkeys(g["transport"] for g in groups)]
    if len(settings) > 1 or settings[:1] != ["—"]:
        handles += [Line2D([], [], color="0.4", marker=MARKERS[i % len(MARKERS)], ls="", label=s)
                    for i, s in enumerate(settings)]
    if model is not None:
        handles.append(Line2D([], [], color="0.55", ls="--", label=model.get("label", "model")))
    if any(r.get("verdict") != "settled" for g in groups for r in g["runs"]):
        handles.append(Line2D([], [], marker="o", mfc="none", mec="#D00000", ls="", ms=9,
                              label="did not settle / unstable"))
    handles.append(Line2D([], [], color="0.3", marker="o", ls="-", lw=1, ms=5,
                          label="mean, bars min–max over repetitions"))
    axes[0].legend(handles=handles, fontsize=7.5, loc="best")
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


def scaling_curves(curves: dict[Curve | str, list[tuple[float, float, float, float]]], path: Path, xlabel: str,
                   ylabel: str, title: str, theory=None, knees: dict[Curve | str, float | None] | None = None) -> Path:
    """A delay against a swept value, per curve: ``curves`` is {key: [(x, median, p5, p95),
    ...]}, a key a transport or a :class:`Curve` (transport and the other swept keys' values:
    colour by transport, line style by the rest), drawn as the median line over its 5–95 %
    band, on log axes. ``theory``: (label, f) draws f(x) dotted, or (label, x) a dotted
    vertical line at x; ``knees``: {key: x} marks where that curve's delay explodes."""
    fig, ax = plt.subplots(figsize=(7.5, 4.4), dpi=110)
    xs_all = [x for pts in curves.values() for x, *_ in pts]
    styles = curve_styles(curves)
    for key, pts in curves.items():
        x, med, lo, hi = (np.asarray(v, float) for v in zip(*pts))
        style = styles[key]
        color = style["color"]
        ax.fill_between(x, np.maximum(lo, 1e-3), np.maximum(hi, 1e-3), color=color, alpha=0.15, lw=0)
        ax.plot(x, np.maximum(med, 1e-3), ms=4, lw=1.5, **style)
        knee = (knees or {}).get(key)
        if knee is not None:
            y = med[list(x).index(knee)]
            ax.plot([knee], [y], marker="X", ms=11, color=color, mec="black", zorder=5)
    if theory is not None and xs_all:
        label, what = theory
        if callable(what):
            grid = np.geomspace(min(xs_all), max(xs_all), 50)
            ax.plot(grid, [what(g) for g in grid], color="0.3", ls=":", lw=1.2, label=label)
        else:
            ax.axvline(float(what), color="0.3", ls=":", lw=1.2, label=label)
    if knees and any(v is not None for v in knees.values()):
        ax.plot([], [], marker="X", ms=9, color="white", mec="black", ls="", label="delay explodes (> 10 × lightest)")
    if xs_all and max(xs_all) / max(min(xs_all), 1e-12) >= 10:
        ax.set_xscale("log")
    ax.set_yscale("log")
    return _save_curves(fig, ax, path, xlabel, ylabel + " (median, 5–95 % band)", title)


def _save_curves(fig, ax, path: Path, xlabel: str, ylabel: str, title: str) -> Path:
    """Label, grid (minor ticks too, for log axes), legend and save a figure of curves."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def bandwidth_curves(curves: dict[Curve | str, list[tuple[float, float]]], path: Path, title: str,
                     offered: list[tuple[float, float]] | None = None,
                     capacity_mbit: float | None = None) -> Path:
    """Delivered Mbit/s against the message size, one line per curve (``curves``: {transport
    or :class:`Curve`: [(size_bytes, mbit_s), ...]}); ``offered`` the sender's load at each
    size (dashed), ``capacity_mbit`` the link's nominal capacity (dotted). Log x, linear y from 0."""
    fig, ax = plt.subplots(figsize=(7.5, 4.4), dpi=110)
    styles = curve_styles(curves)
    for key, pts in curves.items():
        x, y = zip(*pts)
        ax.plot(x, y, ms=4, lw=1.5, **styles[key])
    if offered:
        x, y = zip(*offered)
        ax.plot(x, y, color="0.4", ls="--", lw=1.0, label="offered by the sender")
    if capacity_mbit:
        ax.axhline(capacity_mbit, color="0.3", ls=":", lw=1.2, label="link's nominal capacity")
    ax.set_xscale("log")
    top = max([b for pts in curves.values() for _, b in pts] + [y for _, y in offered or []] +
              [capacity_mbit or 0.0])
    ax.set_ylim(0, 1.1 * top if top > 0 else 1.0)
    return _save_curves(fig, ax, path, "message size [bytes]", "delivered bandwidth [Mbit/s]", title)


def delay_timeline(traces: list[tuple[str, dict]], path: Path, title: str = "Where the loop waited",
                   span_s: float = 4.0) -> Path:
    """The loop's round trip (sample → its actuation at the plant) [ms] against the time of
    the sample, the first ``span_s`` seconds (where single bursts can be told apart), one panel
    per transport (``traces``: (transport, run's delay_trace)); each perturbing flow's send
    times as vertical ticks at the bottom, the reference's steps as dotted lines."""
    fig, axes = plt.subplots(len(traces), 1, figsize=(7.5, 1.2 + 1.25 * len(traces)), dpi=110, sharex=True,
                             squeeze=False)
    flow_colors = ["0.35", "tab:red", "tab:purple", "tab:brown"]
    for ax, (transport, trace) in zip(axes[:, 0], traces):
        rtt = np.asarray(trace.get("rtt_ms") or [], float)
        t = np.asarray(trace.get("sample_s") or [], float)
        shown = t <= span_s
        rtt, t = rtt[shown], t[shown]
        ax.plot(t, rtt, ".", ms=2.2, color=transport_color(transport), label=f"{transport}: RTT per sample")
        top = float(np.nanpercentile(rtt, 99.5)) * 1.15 if rtt.size else 1.0
        for i, (flow, sends) in enumerate(sorted((trace.get("flows") or {}).items())):
            s = np.asarray(sends, float)
            s = s[(s >= 0) & (s <= (t.max() if t.size else 0))]
            ax.vlines(s, 0, 0.12 * top, color=flow_colors[i % len(flow_colors)], lw=0.9,
                      label=f"flow {flow}: message sent")
        for step in trace.get("steps_s") or []:
            if step <= span_s:
                ax.axvline(step, color="0.55", lw=0.7, ls=":")
        ax.set_ylim(0, top)
        ax.set_ylabel("RTT [ms]")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=6.5, ncol=2)
    axes[0, 0].set_title(title)
    axes[-1, 0].set_xlabel("time since the first sample [s] (dotted: the reference's steps)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
