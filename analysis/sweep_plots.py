"""Figures of one number against another, per condition: the loop's degradation against the
network's delay or jitter (:func:`degradation_scatter`), a delay against a swept value
(:func:`scaling_curves`) and delivered bandwidth against the message size
(:func:`bandwidth_curves`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .plot_style import MARKERS, Curve, curve_styles, plt, transport_color


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
    panels = (("iae_dev_mVs", "IAE(y − baseline) per run [mV·s]"), ("delta_overshoot_pp", "Δovershoot vs baseline [pp]"))
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
        axes[0].set_ylabel("IAE(y − baseline) per run [mV·s], log scale")
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
