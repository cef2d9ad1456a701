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
