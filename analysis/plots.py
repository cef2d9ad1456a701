"""Figures of the reports. Every figure has axes with units and a legend, and every
transport has the same colour in every figure (:func:`transport_color`)."""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Iterable

import matplotlib

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


def step_overlay(runs: Iterable[dict], path: Path, title: str = "RLC loop step response") -> Path:
    """Networked step responses (one line per run, coloured by transport) over the local
    baseline, in the manner of the Pound paper's control-loop figure; the lower panel shows
    each run's deviation from the baseline, where small differences become visible."""
    runs = [r for r in runs if r.get("ok")]
    fig, (ax, dev) = plt.subplots(2, 1, figsize=(7.5, 5.6), dpi=110, sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1.4]})
    if runs:
        base = runs[0]
        ax.step(base["t"], base["baseline_y"], where="post", color="0.55", lw=4.0, alpha=0.5,
                label="local baseline (no network)", zorder=1)
        ax.axhline(base["baseline_step"]["SteadyStateValue"], color="0.6", lw=0.8, ls=":")
        dev.axhline(0.0, color="0.55", lw=2.0, alpha=0.5)
    seen = set()
    for r in runs:
        label = r["transport"] if r["transport"] not in seen else None
        seen.add(r["transport"])
        color = transport_color(r["transport"])
        ax.step(r["t"], r["y"], where="post", color=color, lw=1.1, alpha=0.9, label=label, zorder=3)
        n = min(len(r["y"]), len(r["baseline_y"]))
        diff_mv = [1e3 * (a - b) for a, b in zip(r["y"][:n], r["baseline_y"][:n])]
        dev.step(r["t"][:n], diff_mv, where="post", color=color, lw=1.0, alpha=0.9)
    ax.set_ylabel("capacitor voltage y = Vc [V]")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
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
