"""Figures of delays: empirical CDFs of per-message values per transport on a log axis (pooled,
or one panel per sweep setting) and the loop's round trip against time beside the flows' send
times."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from .plot_style import plt, transport_color


def _ecdf(ax, values, color: str, label: str, floor: float | None) -> None:
    """One empirical CDF: the share of values at or below x, as a step line; with ``floor``
    (log axis) values below it drawn at it, and counted in the label."""
    v = np.sort(np.asarray(values, float))
    v = v[np.isfinite(v)]
    if not v.size:
        return
    below = int(np.sum(v < floor)) if floor is not None else 0
    if floor is not None:
        v = np.maximum(v, floor)
    ax.step(v, np.arange(1, v.size + 1) / v.size, where="post", color=color, lw=1.5,
            label=f"{label} ({v.size}{f', {below} below {floor:g}' if below else ''})")


def _floor(samples: Iterable[list[float]]) -> float:
    """Where a log axis of delays starts: a tenth of the smallest positive value (at least 1 µs)."""
    positive = [x for values in samples for x in values if np.isfinite(x) and x > 0]
    return max(1e-3, 0.1 * min(positive)) if positive else 1e-3


def delay_ecdfs(samples: dict[str, list[float]], path: Path, xlabel: str = "one-way delay [ms]",
                title: str = "Loop message delay", log: bool = True) -> Path:
    """The empirical CDF of per-message values (e.g. delays in ms), one line per transport, on a
    log axis (``log``): the body of every distribution and each one's tail stay readable at once,
    where a linear histogram lets one long tail flatten the rest."""
    return delay_ecdfs_by_setting({"—": samples}, path, xlabel, title, log)


def delay_ecdfs_by_setting(samples: dict[str, dict[str, list[float]]], path: Path,
                           xlabel: str = "one-way delay [ms]", title: str = "Loop message delay",
                           log: bool = True) -> Path:
    """Empirical CDFs per transport, one panel per setting (sweep value) so that a sweep's
    conditions are not pooled; ``samples`` is {setting: {transport: values}}. Log x axis with
    ``log`` (delays), linear without (periods around their nominal value)."""
    settings = list(samples) or ["—"]
    floor = _floor(v for panel in samples.values() for v in panel.values()) if log else None
    fig, axes = plt.subplots(len(settings), 1, figsize=(7.5, 1.4 + 2.6 * len(settings)), dpi=110, squeeze=False)
    for ax, setting in zip(axes[:, 0], settings):
        for name, values in samples.get(setting, {}).items():
            _ecdf(ax, values, transport_color(name), name, floor)
        if log:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("share of messages ≤ x")
        ax.grid(True, which="both", alpha=0.3)
        if setting != "—":
            ax.set_title(setting, fontsize=9, loc="left")
        if samples.get(setting):
            ax.legend(fontsize=7, loc="lower right")
        ax.set_xlabel(xlabel + (" (log scale)" if log else ""))
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
