"""Figures of loops with repeated steps: each transport's steps with the interval the verdict
uses (:func:`step_intervals`), and which runs a step-response overlay of a square wave shows
(:func:`first_repetition`, :func:`typical_runs`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .degradation import repetition_of
from .plot_style import plt, transport_color
from .repeated_steps import RankedSteps


def step_intervals(ranked: list[RankedSteps], path: Path, title: str = "Each step against the local loop",
                   name: str = "iae_mVs") -> Path:
    """One row per transport, best at the top: every step's IAE(y − baseline) as a dot, the
    median as a bar across, the 95 % bootstrap interval as a thick line; the best transport's
    interval shaded across the figure, so that an interval apart from it reads as a clear
    difference. A logarithmic axis when the medians span more than 30×."""
    rows = [r for r in ranked if r.rank is not None]
    fig, ax = plt.subplots(figsize=(7.5, 1.0 + 0.38 * max(len(rows), 1)), dpi=110)
    rng = np.random.default_rng(0)
    for i, r in enumerate(rows):
        color = transport_color(r.group.transport)
        values = np.asarray(r.group.values(name), float)
        ax.plot(values, i + rng.uniform(-0.18, 0.18, len(values)), ".", ms=3, color=color, alpha=0.55)
        lo, hi = r.interval
        ax.plot([lo, hi], [i, i], color=color, lw=4.5, solid_capstyle="butt")
        ax.plot([r.group.median(name)] * 2, [i - 0.3, i + 0.3], color="black", lw=1.4)
    if rows:
        lo, hi = rows[0].interval
        ax.axvspan(lo, hi, color=transport_color(rows[0].group.transport), alpha=0.12, lw=0)
        medians = [r.group.median(name) for r in rows if r.group.median(name) > 0]
        if medians and max(medians) / min(medians) > 30:
            ax.set_xscale("log")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r.group.transport} ({len(r.group.steps)})" for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("IAE(y − baseline) per step [mV·s] (dots: steps; bar: median; thick line: 95 % interval)")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def first_repetition(run_ids: list[str]) -> list[int]:
    """Indices of the runs of the first repetition (run id ending ``-r0``): with a random phase the
    steps differ between repetitions but are the same for every transport within one, so an
    overlay of square-wave responses shows one repetition, not a median across different steps."""
    return [i for i, rid in enumerate(run_ids) if repetition_of(rid) == 0]


def typical_runs(deviation_iae: list[float], factor: float = 10.0) -> list[int]:
    """Indices of the runs to scale a square-wave overlay to: those whose IAE(y − baseline) is
    within ``factor`` × the median run's, so that one transport far off does not flatten every
    other one into a line (what it swings beyond is cut at the frame)."""
    v = np.asarray(deviation_iae, float)
    ok = np.isfinite(v)
    if not ok.any():
        return list(range(len(v)))
    limit = factor * float(np.median(v[ok]))
    return [i for i, x in enumerate(v) if np.isfinite(x) and x <= limit]


def aligned_steps(t, y, base_y, steps: list[dict] | None, reference: float = 1.0) -> tuple[list, list]:
    """Every step of one run and the baseline's as a step up of size 1 from the level before it:
    (y − y at the step) / (level after − level before), each from its step's sample; a run with
    no square wave is one step of ``reference`` from its first sample. Returns ([steps of y],
    [steps of the baseline]), arrays on the run's sample grid."""
    y, base_y = np.asarray(y, float), np.asarray(base_y, float)
    if not steps:
        size = reference or 1.0
        return [(y - y[0]) / size], [(base_y - base_y[0]) / size]
    ys, bs = [], []
    for s in steps:
        k, n = int(s["k"]), int(s["samples"])
        size = s.get("size") or (1.0 if s["direction"] == "up" else -1.0)
        ys.append((y[k:k + n] - y[k]) / size)
        bs.append((base_y[k:k + n] - base_y[k]) / size)
    return ys, bs


def step_panels(groups: list[tuple[str, list[np.ndarray], list[np.ndarray], str]], period: float, path: Path,
                title: str = "Step response per transport", band: tuple[float, float] = (10, 90)) -> Path:
    """Small multiples, one panel per transport (``groups``: (transport, its steps, the baseline's
    steps, a note), in reading order): the median of its steps (line, transport colour) with the
    ``band`` percentiles over them (shaded; min–max with fewer than 5 steps) over the local
    baseline's median step (black dashed), every step normalised to a step up of size 1 and cut to
    the shortest step. Shared axes, so panels compare at a glance."""
    n = max(len(groups), 1)
    cols = min(4, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.35 * cols + 0.8, 1.75 * rows + 0.9), dpi=110, sharex=True,
                             sharey=True, squeeze=False)
    length = min((len(s) for _, steps, _, _ in groups for s in steps if len(s)), default=2)
    t = np.arange(length) * period
    lo_all, hi_all = [], []
    for ax, (transport, steps, base, note) in zip(axes.flat, groups):
        ys = np.array([s[:length] for s in steps if len(s) >= length])
        bs = np.array([b[:length] for b in base if len(b) >= length])
        if len(bs):
            ax.step(t, np.median(bs, axis=0), where="post", color="black", lw=1.3, ls=(0, (4, 2)), zorder=4)
        if len(ys):
            color = transport_color(transport)
            lo, hi = ((np.percentile(ys, band[0], axis=0), np.percentile(ys, band[1], axis=0)) if len(ys) >= 5
                      else (ys.min(axis=0), ys.max(axis=0)))
            ax.fill_between(t, lo, hi, step="post", color=color, alpha=0.25, lw=0, zorder=2)
            ax.step(t, np.median(ys, axis=0), where="post", color=color, lw=1.6, zorder=3)
            lo_all.append(lo.min())
            hi_all.append(hi.max())
        ax.set_title(f"{transport} {note}".strip(), fontsize=8, loc="left")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    if lo_all:
        lo, hi = min(lo_all + [0.0]), max(hi_all + [0.0])
        spread = hi - lo or 1.0
        typical = float(np.median(hi_all))      # one transport far off must not flatten the others
        top = min(hi, typical + 0.6 * max(typical - lo, 0.1))
        axes[0, 0].set_ylim(lo - 0.05 * spread, top + 0.05 * (top - lo))
    for ax in axes[-1, :]:
        ax.set_xlabel("time since the step [s]", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("y / step size [1]", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
