"""Figures of delays: histograms of per-message values per transport (pooled, or one panel
per sweep setting) and the loop's round trip against time beside the flows' send times."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from .plot_style import plt, transport_color


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
