"""The loop's stability margins beside the delay the network gave it: the report's part that
answers a control engineer's first question, how much delay and jitter this loop can take and
whether the measured network stayed inside that.

A loop kind with a model (:class:`LoopModel`: plant, controller, sample period) gets its
margins from :func:`margins.margins`; each transport's measured loop delay and jitter
(:class:`results.LoopTiming`, pooled over its runs) is set against them (:func:`assess`):

- against the **delay margin** DM (the largest constant loop delay the sampled loop takes):
  the loop delay's p50, p99 and max, each *inside* (below :data:`NEAR` x DM), *near* (from
  NEAR x DM) or *beyond* (at or above DM);
- against the **jitter margin** J_m(L) at the transport's smallest loop delay L: its jitter J
  (largest hold delay less L): inside, near or beyond in the same way.

What the margins lead one to expect: *stable, guaranteed* when J is within J_m(L) (the
criterion proves it for every delay sequence in [L, L + J]); *unstable* when even the median
loop delay is beyond DM; else *no guarantee* (the criterion is sufficient, not necessary). Each
expectation is set beside what the runs did (settled / did not settle / unstable) and the
report says where the two disagree: a guaranteed loop that went unstable, or a loop beyond its
delay margin that settled.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import margins as margin_math
from .loop_timing import pooled
from .plot_style import plt, transport_color
from .rendering import Section
from .results import LoopTiming
from .tables import sig

#: from this share of a margin on, a measured value is "near" it
NEAR = 0.8
GUARANTEED, UNSTABLE, OPEN = "stable, guaranteed", "unstable", "no guarantee"
CRITERIA = ("the delay margin of the sampled loop (its poles for a constant loop delay, the hold included); the "
            "jitter margin by the small-gain criteria of Kao & Lincoln (2004, Automatica 40(8), \"Simple "
            "stability criteria for systems with time-varying delays\") and Cervin, Lincoln, Eker, Årzén & "
            "Wittenmark (2004, RTCSA, \"The jitter margin and its application in the design of real-time "
            "control systems\"), derived for this loop's actuator (analysis/margins.py)")


@dataclass
class LoopModel:
    """What the margins of a loop kind are computed from: its continuous plant, its discrete
    controller (sample time ``dt``), the same controller as if continuous, and a description."""

    description: str
    plant: Any
    controller: Any
    dt: float
    continuous_controller: Any = None

    def margins(self, boundary_points: int = 16) -> margin_math.LoopMargins:
        return margin_math.margins(self.plant, self.controller, self.dt, self.continuous_controller,
                                   boundary_points=boundary_points)


@dataclass
class Assessment:
    """One transport (of one setting) against the margins."""

    setting: str
    transport: str
    timing: LoopTiming
    run_points: list[tuple[str, LoopTiming]]       # (run id, its timing): the figure's points
    jitter_margin_ms: float                        # J_m at the transport's L
    delay_position: dict[str, str]                 # p50 / p99 / max -> inside / near / beyond
    jitter_position: str
    expected: str
    verdicts: dict[str, int] = field(default_factory=dict)
    agrees: bool | None = None                     # None: the margins predict nothing to check
    agreement: str = ""


def position(value: float, margin: float) -> str:
    """'inside' (below NEAR x margin), 'near' (up to the margin) or 'beyond' (at or above it)."""
    if not math.isfinite(margin):
        return "inside"
    if value >= margin:
        return "beyond"
    return "near" if value >= NEAR * margin else "inside"


def expectation(timing: LoopTiming, m: margin_math.LoopMargins) -> tuple[float, str, str]:
    """(J_m at L [ms], the jitter's position, the expectation) of one timing."""
    dm = 1e3 * m.delay_margin_s
    jm = 1e3 * m.jitter_at(timing.min_ms / 1e3)
    jitter = "beyond" if timing.min_ms >= dm else position(timing.jitter_ms, jm) if jm > 0 else "beyond"
    if jitter != "beyond":
        return jm, jitter, GUARANTEED
    return jm, jitter, UNSTABLE if timing.p50_ms >= dm else OPEN


def agreement(expected: str, verdicts: dict[str, int]) -> tuple[bool | None, str]:
    """Whether what the runs did agrees with the expectation, and the sentence saying so."""
    n = sum(verdicts.values())
    unstable, settled = verdicts.get("unstable", 0), verdicts.get("settled", 0)
    observed = ", ".join(f"{verdicts[v]} {v}" for v in ("settled", "did not settle", "unstable")
                         if verdicts.get(v)) or "no run"
    if expected == GUARANTEED:
        if unstable:
            return False, (f"DISAGREES: the jitter margin guarantees stability, yet {unstable} of {n} run(s) went "
                           "unstable: something other than the delay (losses the hold does not cover, reordered "
                           "samples, the nodes' clocks or scheduling) shaped them")
        return True, f"agrees ({observed})"
    if expected == UNSTABLE:
        if settled:
            return False, (f"DISAGREES: the median loop delay is beyond the delay margin, yet {settled} of {n} "
                           "run(s) settled (the delay varied: a constant delay this long would not)")
        return True, f"agrees ({observed})"
    return None, f"not decided by the margins ({observed})"


def assess(groups: list[tuple[str, str, list[tuple[str, LoopTiming | None]], dict[str, int]]],
           m: margin_math.LoopMargins) -> list[Assessment]:
    """One :class:`Assessment` per (setting, transport, [(run id, timing)], verdict counts)."""
    out = []
    dm = 1e3 * m.delay_margin_s
    for setting, transport, runs, verdicts in groups:
        points = [(rid, t) for rid, t in runs if t is not None]
        timing = pooled([t for _, t in points])
        if timing is None:
            continue
        jm, jitter, expected = expectation(timing, m)
        agrees, text = agreement(expected, verdicts)
        out.append(Assessment(setting, transport, timing, points, jm,
                              {k: position(getattr(timing, f"{k}_ms"), dm) for k in ("p50", "p99", "max")},
                              jitter, expected, dict(verdicts), agrees, text))
    return out


# -- text ---------------------------------------------------------------------------------------

def margins_sentence(model: LoopModel, m: margin_math.LoopMargins) -> str:
    """The loop's margins in one sentence."""
    return (f"Margins of the loop's own model ({model.description}): **delay margin {sig(1e3 * m.delay_margin_s)} ms** "
            f"({sig(1e3 * m.continuous_delay_margin_s)} ms as a continuous loop; phase margin "
            f"{sig(m.phase_margin_deg)}° at {sig(m.crossover_rad_s)} rad/s, gain margin {_gain(m.gain_margin)}), "
            f"**jitter margin {sig(1e3 * m.jitter_margin_s)} ms** at no constant delay, less as the constant part "
            "grows (Stability margins).")


def _gain(g: float) -> str:
    return "∞" if not math.isfinite(g) else f"{sig(g)} ({sig(20 * math.log10(g))} dB)"


def _numbers(a: Assessment) -> str:
    t = a.timing
    return f"{a.transport} {sig(t.p50_ms)} / {sig(t.p99_ms)} / {sig(t.max_ms)} ms, jitter {sig(t.jitter_ms)} ms"


def summary(model: LoopModel, m: margin_math.LoopMargins, found: list[Assessment], where: str = "") -> list[str]:
    """The summary's sentences: the margins, every transport against them, and where the runs
    disagree with what the margins lead one to expect."""
    out = [where + margins_sentence(model, m)]
    if not found:
        return out
    parts = []
    groups = (("inside the jitter margin, stability guaranteed", lambda a: a.expected == GUARANTEED
               and a.jitter_position == "inside"),
              ("near the jitter margin, still guaranteed", lambda a: a.expected == GUARANTEED
               and a.jitter_position == "near"),
              ("beyond the jitter margin within the delay margin, no guarantee", lambda a: a.expected == OPEN),
              ("median loop delay beyond the delay margin, unstable expected", lambda a: a.expected == UNSTABLE))
    for label, test in groups:
        members = [a for a in found if test(a)]
        if members:
            parts.append(f"{label}: " + "; ".join(_numbers(a) for a in members))
    out.append(where + "Measured loop delay (p50 / p99 / max) and jitter against them — " + " — ".join(parts) + ".")
    wrong = [a for a in found if a.agrees is False]
    if wrong:
        out.append(where + "Where the runs disagree with the margins: " +
                   "; ".join(f"**{a.transport}**: {a.agreement}" for a in wrong) + ".")
    else:
        checked = [a.transport for a in found if a.agrees]
        out.append(where + ("What the runs did agrees with the margins" +
                            (f" ({', '.join(checked)}; the others are not decided by them)." if len(checked) < len(found)
                             else " for every transport.") if checked else
                            "The margins decide no transport's stability here (the criterion is sufficient only)."))
    return out


HEADER = ["transport", "loop delay p50 / p99 / max [ms]", "vs delay margin (p50 / p99 / max)", "L [ms]",
          "jitter J [ms] (p99)", "jitter margin at L [ms]", "J vs jitter margin", "expected", "observed"]


def rows(found: list[Assessment]) -> list[list[Any]]:
    out = []
    for a in found:
        t = a.timing
        out.append([a.transport, f"{sig(t.p50_ms)} / {sig(t.p99_ms)} / {sig(t.max_ms)}",
                    " / ".join(a.delay_position[k] for k in ("p50", "p99", "max")), sig(t.min_ms),
                    f"{sig(t.jitter_ms)} ({sig(t.jitter_p99_ms)})", sig(a.jitter_margin_ms), a.jitter_position,
                    a.expected, a.agreement])
    return out


def margins_table(m: margin_math.LoopMargins) -> tuple[list[str], list[list[Any]]]:
    """The loop's margins, sampled (as it runs) and continuous (as if it were not sampled)."""
    return (["", "gain margin", "phase margin [°]", "crossover [rad/s]", "delay margin [ms]",
             "jitter margin at no constant delay [ms]"],
            [[f"sampled every {1e3 * m.dt:g} ms (as it runs)", _gain(m.gain_margin), sig(m.phase_margin_deg),
              sig(m.crossover_rad_s), sig(1e3 * m.delay_margin_s), sig(1e3 * m.jitter_margin_s)],
             ["continuous (no sampling, no hold)", _gain(m.continuous_gain_margin),
              sig(m.continuous_phase_margin_deg), sig(m.continuous_crossover_rad_s),
              sig(1e3 * m.continuous_delay_margin_s), sig(1e3 * m.continuous_jitter_margin_s)]])


def section(model: LoopModel, m: margin_math.LoopMargins, found: list[Assessment], fig: Path,
            title: str = "Stability margins") -> Section:
    """The margins, every transport against them, and the boundary figure."""
    out = Section(title)
    out.p(f"The loop's own model: {model.description}. The plant samples y every {1e3 * m.dt:g} ms, the "
          "controller answers each sample at once and the plant applies each answer when it arrives and holds it: "
          "y's delay and u's delay add up to one loop delay per sample, the RTT. Margins: " + CRITERIA + ".")
    out.table(*margins_table(m))
    out.p(f"Each transport's loop delay and jitter over its runs: p50 / p99 / max of the loop delay (each *inside* "
          f"below {NEAR:.0%} of the delay margin, *near*, or *beyond*); L its smallest loop delay; J the largest time "
          "from a sample until the plant held an answer to it or a newer one, less L (a lost or stale answer counts "
          "until the next one acts; in brackets the 99th percentile); the jitter margin at L. Expected: *stable, "
          "guaranteed* when J is within the jitter margin, *unstable* when the median loop delay is beyond the delay "
          "margin, else *no guarantee* (the criterion is sufficient only). Observed: the runs' verdicts.")
    out.table(HEADER, rows(found))
    boundary_figure(m, found, fig)
    out.fig(fig, "The jitter margin against the constant part of the loop delay (line; below it, stability is "
                 "guaranteed for every delay sequence in [L, L + J]); dotted: the same for the loop as if continuous "
                 "(Kao & Lincoln); the delay margin dashed. One point per run at (L, J): filled with J from the "
                 "largest hold delay, hollow from their 99th percentile. Log axes: the constant part 0 is drawn at the "
                 "left edge.")
    out.p("Assumptions: the controller's answer to a newer sample is never overtaken by an older one (UDP can "
          "reorder y; the plant then orders by the controller's numbering); the plant and controller are the "
          "model (the prediction section checks the run against it).")
    return out


# -- the figure ---------------------------------------------------------------------------------

def boundary_figure(m: margin_math.LoopMargins, found: list[Assessment], path: Path) -> Path:
    """The jitter margin's boundary (J against L, ms, log axes) and every run's measured point:
    filled at its largest hold delay, hollow at the 99th percentile of them."""
    fig, ax = plt.subplots(figsize=(8.6, 4.6), dpi=110)
    dm = 1e3 * m.delay_margin_s
    pts = [t for a in found for _, t in a.run_points]
    xs = [t.min_ms for t in pts if t.min_ms > 0]
    ys = [v for t in pts for v in (t.jitter_ms, t.jitter_p99_ms) if v > 0]
    jm0 = 1e3 * max(m.jitter_margin_s, m.continuous_jitter_margin_s)
    xmin = 0.5 * min(xs + [dm / 100 if math.isfinite(dm) else 1.0])
    xmax = 1.5 * max(xs + [dm if math.isfinite(dm) else 1.0])
    ymin = 0.5 * min(ys + [jm0 / 20 if jm0 > 0 else 1.0])
    ymax = 2.0 * max(ys + [jm0 if jm0 > 0 else 1.0])
    for xs_s, ys_s, style in ((m.boundary_delay_s, m.boundary_jitter_s, "sampled"),
                              (m.continuous_boundary_delay_s, m.continuous_boundary_jitter_s, "continuous")):
        x, y = 1e3 * np.asarray(xs_s, float), 1e3 * np.asarray(ys_s, float)
        if not x.size:
            continue
        x = np.maximum(x, xmin)          # the constant part 0 at the frame's left edge
        y = np.maximum(y, ymin)          # the margin's end, 0 at the delay margin, at its bottom
        if style == "sampled":
            ax.fill_between(x, ymin, y, color="0.87", lw=0, label="stability guaranteed (jitter margin)")
            ax.plot(x, y, color="black", lw=1.6)
        else:
            ax.plot(x, y, color="0.3", lw=1.0, ls=":", label="the same as a continuous loop (Kao & Lincoln)")
    if math.isfinite(dm):
        ax.axvline(dm, color="black", lw=1.0, ls="--", label=f"delay margin {sig(dm)} ms")
    seen = set()
    for a in found:
        color = transport_color(a.transport)
        for _run_id, t in a.run_points:
            x = max(t.min_ms, xmin)
            ax.plot([x, x], [max(t.jitter_p99_ms, ymin), max(t.jitter_ms, ymin)], color=color, lw=0.9, alpha=0.7)
            ax.plot(x, max(t.jitter_ms, ymin), "o", ms=6, color=color, ls="none",
                    label=a.transport if a.transport not in seen else None, zorder=4)
            ax.plot(x, max(t.jitter_p99_ms, ymin), "o", ms=5, mfc="none", mec=color, ls="none", zorder=4)
            seen.add(a.transport)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)
    ax.set_xlabel("constant part of the loop delay L [ms] (a run's smallest loop delay)")
    ax.set_ylabel("jitter J [ms] (largest hold delay − L)")
    ax.set_title("Jitter margin and each run's loop delay")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def csv_rows(found: list[Assessment], m: margin_math.LoopMargins) -> tuple[list[str], list[list[Any]]]:
    """margins.csv: one row per setting and transport, with the loop's margins."""
    header = ["setting", "transport", "runs", "delay margin [ms]", "jitter margin at L [ms]", "L [ms]",
              "loop delay p50 [ms]", "loop delay p99 [ms]", "loop delay max [ms]", "jitter J [ms]", "jitter J p99 [ms]",
              "p50 vs delay margin", "p99 vs delay margin", "max vs delay margin", "J vs jitter margin", "expected",
              "agrees", "observed"]
    return header, [[a.setting, a.transport, len(a.run_points), 1e3 * m.delay_margin_s, a.jitter_margin_ms,
                     a.timing.min_ms, a.timing.p50_ms, a.timing.p99_ms, a.timing.max_ms, a.timing.jitter_ms,
                     a.timing.jitter_p99_ms, a.delay_position["p50"], a.delay_position["p99"], a.delay_position["max"],
                     a.jitter_position, a.expected, a.agrees, a.agreement] for a in found]
