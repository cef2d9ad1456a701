"""A flow's delay against the message number, run by run: the figure the scalability study
(Jordan 2017) draws throughout (each message's round trip against its index), where a
start-up transient, a queue that builds up over a run or one bad run shows at a glance
while a histogram pools it away.

One panel per sweep setting; in each, per transport, one thin line per run (the mean over
the run's replicas and subscribers of each message number's delay), and with several
repetitions their mean per message number as a thick line (the study's "averaged across
runs"). A lost message is a gap. Runs longer than :data:`MAX_POINTS` messages are drawn as
the median of consecutive messages, so that 1,000 to 100,000 messages stay readable.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator

from .plot_style import plt, transport_color
from .results import FlowResult

#: the most points one line has; a longer run is drawn as medians of consecutive messages
MAX_POINTS = 1500


def run_trace(results: list[FlowResult]) -> np.ndarray:
    """The delay [ms] of each message number of one run (index = message number, from 0):
    the mean over the run's instances (replicas, subscribers) that received it; NaN where
    none did (a lost message)."""
    size = max((max(r.message_numbers) + 1 for r in results if r.message_numbers), default=0)
    total, count = np.zeros(size), np.zeros(size)
    for r in results:
        numbers = np.asarray(r.message_numbers, int)
        np.add.at(total, numbers, np.asarray(r.delays_ms, float)[:len(numbers)])
        np.add.at(count, numbers, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def thinned(trace: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray, int]:
    """(message numbers, values, messages per point): the trace itself when it has at most
    ``max_points`` messages, else the median of each run of ``per`` consecutive messages
    (NaN where all of them were lost), at the first number of the run."""
    n = len(trace)
    if n <= max_points:
        return np.arange(n), trace, 1
    per = math.ceil(n / max_points)
    padded = np.full(per * math.ceil(n / per), np.nan)
    padded[:n] = trace
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a bin of lost messages only: NaN
        medians = np.nanmedian(padded.reshape(-1, per), axis=1)
    return np.arange(0, len(padded), per), medians, per


def _mean_of_runs(traces: list[np.ndarray]) -> np.ndarray:
    size = max(len(t) for t in traces)
    stack = np.full((len(traces), size), np.nan)
    for i, t in enumerate(traces):
        stack[i, :len(t)] = t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(stack, axis=0)


def panels(samples) -> dict[str, dict[str, list[np.ndarray]]]:
    """{setting: {transport: [trace of each run]}} of a flow entry's samples
    (:class:`flow_sections.FlowSample`), in the samples' order."""
    runs: dict[tuple[str, str, str], list[FlowResult]] = {}
    for s in samples:
        runs.setdefault((s.setting, s.run.transport, s.run.run_id), []).append(s.result)
    out: dict[str, dict[str, list[np.ndarray]]] = {}
    for (setting, transport, _run), results in runs.items():
        trace = run_trace(results)
        if len(trace):
            out.setdefault(setting, {}).setdefault(transport, []).append(trace)
    return out


def sequence_figure(entry: str, samples, fig_dir: Path, rank: list[str], word: str,
                    what: str) -> tuple[Path, str] | None:
    """The figure of one flow entry and its caption; None when no sample has message
    numbers. ``rank``: the settings in sweep order; ``word``/``what``: 'RTT'/'round-trip
    time' or 'D'/'one-way delay'."""
    by_setting = panels(samples)
    if not by_setting:
        return None
    settings = sorted(by_setting, key=lambda k: rank.index(k) if k in rank else len(rank))
    path = fig_dir / f"flow_{entry}_sequence.png"
    per = draw(by_setting, settings, path, ylabel=f"{what} {word} [ms]",
               title=f"Flow {entry}: {word} of each message against its number")
    several = any(len(traces) > 1 for panel in by_setting.values() for traces in panel.values())
    instances = any(s.result.replica or s.result.subscriber for s in samples)
    caption = (f"{what.capitalize()} of each message against its number (the order it was sent in), as the "
               f"scalability study plots it{', one panel per setting' if len(settings) > 1 else ''}: one thin "
               f"line per run" + (" (the mean over its replicas and subscribers)" if instances else "") +
               (", the mean of the runs per message number thick" if several else "") +
               "; a gap is a lost message" +
               (f"; a run of more than {MAX_POINTS} messages is drawn as the medians of consecutive messages "
                f"(up to {per} a point)" if per > 1 else "") + ".")
    return path, caption


def draw(by_setting: dict[str, dict[str, list[np.ndarray]]], settings: list[str], path: Path, ylabel: str,
         title: str) -> int:
    """Draw the panels; returns the most messages per point of any line (1: every message)."""
    cols = 1 if len(settings) <= 4 else 2 if len(settings) <= 12 else 3
    rows = math.ceil(len(settings) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(min(7.5 * cols, 15.0), 1.0 + 2.6 * rows), dpi=110,
                                   squeeze=False)
    most = 1
    finite = [t[np.isfinite(t)] for panel in by_setting.values() for traces in panel.values() for t in traces]
    values = np.concatenate(finite) if finite else np.array([])
    log = bool(values.size) and values.min() > 0 and values.max() > 30 * values.min()   # spans decades
    for ax, setting in zip(axes.flat, settings):
        for transport, traces in by_setting[setting].items():
            color = transport_color(transport)
            for trace in traces:
                x, y, per = thinned(trace)
                most = max(most, per)
                ax.plot(x, y, color=color, lw=0.6 if len(traces) > 1 else 0.9,
                        alpha=0.45 if len(traces) > 1 else 0.9,
                        label=None if len(traces) > 1 else f"{transport} (1 run)")
            if len(traces) > 1:
                x, y, _ = thinned(_mean_of_runs(traces))
                ax.plot(x, y, color=color, lw=1.5, label=f"{transport} (mean of {len(traces)} runs)")
        if log:
            ax.set_yscale("log")
        if setting != "—":
            ax.set_title(setting, fontsize=9, loc="left")
        ax.set_xlabel("message number")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, which="both", alpha=0.25)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if len(by_setting[setting]) > 4:   # many transports: the legend beside the panel, not over the lines
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        else:
            ax.legend(fontsize=7.5, loc="upper right")
    for ax in list(axes.flat)[len(settings):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return most

