"""Repeated steps (``loop.controller.square_wave``): per-step metrics, per-transport
distributions with confidence intervals, and a verdict that calls a difference clear only
when the intervals separate.

Each run's records are cut into steps at the sample indices of its reference schedule
(``records/reference.json``, :mod:`netloop.reference`). Per step, from the step's sample to
the next step's (or the run's end):

- ``iae_mVs``: IAE(y − baseline) [mV·s], the loop against the local baseline, which follows
  the same schedule (so each step is compared with the baseline step of the same direction
  from the same state);
- ``overshoot_pct``: the step's overshoot [%] beyond the level it settles to, both signs
  normalised to a step up (python-control's ``step_info``, :func:`metrics.step_metrics`);
- ``settling_s``: its 2 % settling time [s] (NaN in the records when the step did not settle
  before the next one: ``settled`` false; ``window_s`` is how long the step lasted);
  ``delta_overshoot_pp`` and ``delta_settling_s`` against the baseline's step.

A step that did not settle has a settling time longer than its window, not none: medians and
intervals of the settling times count it as +inf (censored, :data:`CENSORED`), so the median
is finite while fewer than half the steps did not settle, and "not settled" otherwise.

Per transport (and sweep setting) every step of every repetition is one sample of the
distribution. Its interval is a seeded percentile bootstrap of the median
(:func:`bootstrap_ci`, 95 %, 2000 resamples). Ranking by the median IAE; a transport is
**clearly worse** than another only when its interval lies wholly above the other's, else
the two are **not a clear difference** (:func:`clear_difference`). The random phase of the
steps against the perturbing flows makes each step a fresh draw of where it falls among
the flows' bursts; steps of one run still share that run's conditions, so the interval is
narrower than one over whole runs would be.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..run_files import RunRecord
from . import metrics
from .rlc_result import rlc_loop

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 1
METRICS = ("iae_mVs", "overshoot_pct", "settling_s")
#: metrics whose missing value means "longer than the step" (+inf in medians and intervals)
CENSORED = ("settling_s", "delta_settling_s")
BEST, SAME = "best", "not a clear difference"


# -- the run's schedule ---------------------------------------------------------------------------

def run_schedule(meta: RunRecord, run_dir: Path) -> list[tuple[int, float]] | None:
    """A square-wave run's reference schedule [(k, level)]: as its records/reference.json
    recorded it, else computed from its metadata (seed, repetition); None for a single step."""
    from netloop import reference  # noqa: PLC0415 - the run side's one definition

    exp = meta.experiment
    loop = exp.get("loop") or {}
    wave = (loop.get("controller") or {}).get("square_wave") or {}
    if not wave.get("count"):
        return None
    try:
        doc = json.loads((Path(run_dir) / "records" / reference.RECORD_NAME).read_text(encoding="utf-8"))
        return [(int(k), float(v)) for k, v in doc["schedule"]]
    except (OSError, ValueError, KeyError, TypeError):
        return reference.loop_schedule(loop, int(exp.get("repetition") or 0))


def attach_schedule(meta: RunRecord, run_dir: Path) -> RunRecord:
    """The run's metadata with its schedule in the experiment's loop (``reference_schedule``),
    where the baseline (:func:`baseline.law_from_config`) and the replays find it: a copy,
    ``meta`` itself unchanged (it stays what the model validates); ``meta`` for a single step."""
    schedule = run_schedule(meta, run_dir)
    loop = meta.experiment.get("loop")
    if schedule is None or not isinstance(loop, dict):
        return meta
    experiment = dict(meta.experiment, loop=dict(loop, reference_schedule=[[k, v] for k, v in schedule]))
    return dataclasses.replace(meta, experiment=experiment)


def step_list(loop: dict[str, Any]) -> list[tuple[int, float, float]]:
    """(k, level before, level after) of every step of a loop mapping with a schedule."""
    from netloop import reference  # noqa: PLC0415

    return reference.step_list([(int(k), float(v)) for k, v in loop.get("reference_schedule") or ()])


def finite_median(values) -> float:
    """The median of the finite values, NaN for none (a step that did not settle has no settling time)."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    return float(np.median(v)) if v else math.nan


# -- per step ---------------------------------------------------------------------------------------

def step_windows(steps: list[tuple[int, float, float]], samples: int) -> list[tuple[int, int, float, float]]:
    """(first sample, end sample, before, after) of each step that has samples in the run."""
    starts = [k for k, _, _ in steps] + [samples]
    return [(k, min(end, samples), before, after) for (k, before, after), end in zip(steps, starts[1:])
            if k < samples - 2]


def one_step(t, y, base_y, window: tuple[int, int, float, float], T: float) -> dict[str, Any]:
    """The metrics of one step (module docstring): y and the baseline over its window."""
    k, end, before, after = window
    sign = 1.0 if after >= before else -1.0
    tw = np.asarray(t[k:end], float) - float(t[k])
    yw, bw = np.asarray(y[k:end], float), np.asarray(base_y[k:end], float)
    final = sign * (bw[-1] - bw[0])   # the level the baseline's step settles to, as a step up from 0
    meas = metrics.step_metrics(tw, sign * (yw - yw[0]), yfinal=final)
    base = metrics.step_metrics(tw, sign * (bw - bw[0]), yfinal=final)
    return {"k": int(k), "t_s": float(t[k]), "direction": "up" if sign > 0 else "down", "samples": int(end - k),
            "size": float(after - before), "window_s": float((end - k) * T),
            "settled": bool(math.isfinite(meas["SettlingTime"])),
            "iae_mVs": 1e3 * metrics.integral_errors(yw - bw, T)["IAE"],
            "overshoot_pct": meas["Overshoot"], "settling_s": meas["SettlingTime"],
            "delta_overshoot_pp": meas["Overshoot"] - base["Overshoot"],
            "delta_settling_s": meas["SettlingTime"] - base["SettlingTime"]}


def run_steps(t, y, base_y, loop: dict[str, Any], T: float) -> list[dict[str, Any]]:
    """Every step of one run (none without a square-wave schedule)."""
    return [one_step(t, y, base_y, w, T) for w in step_windows(step_list(loop), len(y))]


def run_verdict(y, steps: list[dict[str, Any]], reference: float) -> str:
    """'unstable' (y not finite or beyond 10 x the reference), 'did not settle' (half the steps
    or more without a settling time) or 'settled', for a run of repeated steps."""
    y = np.asarray(y, float)
    if y.size == 0 or not np.all(np.isfinite(y)) or np.max(np.abs(y)) > 10 * max(abs(reference), 1e-9):
        return "unstable"
    unsettled = sum(1 for s in steps if not math.isfinite(s["settling_s"]))
    return "did not settle" if 2 * unsettled >= max(len(steps), 1) else "settled"


# -- intervals and verdict --------------------------------------------------------------------------

def bootstrap_ci(values, statistic=np.median, confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                 seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` of ``values`` (NaN dropped, +inf kept:
    a censored value), seeded: the same values give the same interval. (NaN, NaN) for no
    values; (v, v) for one. With +inf among the values the interval's ends are resampled
    statistics themselves (no interpolation across an infinite one)."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], float)
    if v.size == 0:
        return math.nan, math.nan
    if v.size == 1:
        return float(v[0]), float(v[0])
    rng = np.random.default_rng(seed)
    stats = statistic(v[rng.integers(0, v.size, size=(resamples, v.size))], axis=1)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha], method="linear" if np.isfinite(v).all() else "inverted_cdf")
    return float(lo), float(hi)


def clear_difference(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two intervals do not overlap (a difference called clear)."""
    return bool(all(map(math.isfinite, (*a, *b))) and (a[0] > b[1] or b[0] > a[1]))


@dataclass
class TransportSteps:
    """Every step of one transport's runs (of one sweep setting)."""

    transport: str
    setting: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    runs: int = 0

    def values(self, name: str) -> list[float]:
        """The steps' values of ``name``; for a :data:`CENSORED` one +inf where a step did not settle."""
        if name in CENSORED:
            return [s[name] if s.get(name) is not None and math.isfinite(s[name]) else math.inf for s in self.steps
                    if s.get(name) is not None]
        return [s[name] for s in self.steps if s.get(name) is not None and math.isfinite(s[name])]

    def settled(self) -> int:
        """How many of the steps settled."""
        return sum(1 for s in self.steps if math.isfinite(s.get("settling_s", math.nan)))

    def median(self, name: str = "iae_mVs") -> float:
        v = self.values(name)
        return float(np.median(v)) if v else math.nan

    def interval(self, name: str = "iae_mVs") -> tuple[float, float]:
        return bootstrap_ci(self.values(name))


@dataclass
class RankedSteps:
    rank: int | None
    group: TransportSteps
    interval: tuple[float, float]
    verdict: str
    clearly_better_than: list[str] = field(default_factory=list)


def rank_steps(groups: list[TransportSteps], name: str = "iae_mVs", unit: str = "mV·s") -> list[RankedSteps]:
    """Best first by the median of ``name``; each with its interval, its verdict against the
    best (best / not a clear difference / clearly worse by X) and the transports whose
    intervals lie wholly above its own."""
    usable = sorted((g for g in groups if g.values(name)), key=lambda g: g.median(name))
    cis = {id(g): g.interval(name) for g in usable}
    out = []
    for i, g in enumerate(usable):
        best = usable[0]
        if g is best:
            verdict = BEST
        elif clear_difference(cis[id(g)], cis[id(best)]):
            verdict = f"clearly worse by {g.median(name) - best.median(name):.3g} {unit}"
        else:
            verdict = SAME
        better = [o.transport for o in usable if o is not g and cis[id(o)][0] > cis[id(g)][1]]
        out.append(RankedSteps(i + 1, g, cis[id(g)], verdict, better))
    out += [RankedSteps(None, g, (math.nan, math.nan), "no step") for g in groups if not g.values(name)]
    return out


# -- the campaign ------------------------------------------------------------------------------------

def has_steps(runs: list) -> bool:
    """Whether any run (RunAnalysis) has repeated steps."""
    return any(loop is not None and loop.steps for loop in map(rlc_loop, runs))


def transport_steps(runs: list, setting_of) -> list[TransportSteps]:
    """One group per (setting, transport) of the runs (RunAnalysis) with steps, in run order."""
    groups: dict[tuple[str, str], TransportSteps] = {}
    for a in runs:
        loop = rlc_loop(a)
        if loop is None or not loop.steps:
            continue
        g = groups.setdefault((setting_of(a), a.transport), TransportSteps(a.transport, setting_of(a)))
        g.steps += loop.steps
        g.runs += 1
    return list(groups.values())


def headline(ranked: list[RankedSteps]) -> str:
    """One sentence: the ranking and which differences are clear."""
    usable = [r for r in ranked if r.rank is not None]
    if not usable:
        return "Repeated steps: no step could be analysed."
    best = usable[0]
    clear = [r.group.transport for r in usable[1:] if r.verdict != SAME]
    same = [r.group.transport for r in usable[1:] if r.verdict == SAME]
    text = (f"**{best.group.transport}** kept the loop closest to local over {len(best.group.steps)} repeated "
            f"steps ({best.group.runs} run{'s' if best.group.runs != 1 else ''}): median IAE(y − baseline) per "
            f"step {best.group.median():.3g} mV·s ({100 * CONFIDENCE:.0f} % bootstrap interval "
            f"{_ci(best.interval)})")
    if clear:
        text += f"; clearly better than {', '.join(clear)}"
    if same:
        text += f"; not a clear difference from {', '.join(same)}"
    return text + "."


def to_json(ranked: list[RankedSteps]) -> list[dict[str, Any]]:
    """The verdict as JSON rows (analysis.json's ``repeated_steps``)."""
    return [{"rank": r.rank, "transport": r.group.transport, "setting": r.group.setting, "runs": r.group.runs,
             "steps": len(r.group.steps), "verdict": r.verdict, "clearly_better_than": r.clearly_better_than,
             **{f"{m}_median": r.group.median(m) for m in METRICS},
             **{f"{m}_ci": list(r.group.interval(m)) for m in METRICS}} for r in ranked]


#: how a censored settling time (+inf: longer than its step) reads in a table
NOT_SETTLED = "not settled"


def value_text(value: float) -> str:
    """A median or an interval's end: 3 significant digits; +inf (a censored settling time)
    :data:`NOT_SETTLED`: the step ended before it settled."""
    if math.isinf(value) and value > 0:
        return NOT_SETTLED
    return f"{value:.3g}"


def _ci(ci: tuple[float, float]) -> str:
    if any(math.isnan(x) for x in ci):
        return "–"
    return f"{value_text(ci[0])}–{value_text(ci[1])}"


#: an overshoot [%] from which on a step is written as diverging, not as a number
DIVERGING_PCT = 1000.0


def overshoot_text(value: float) -> Any:
    """An overshoot [%] for a table: the value, or "> 1000 (diverging)" from DIVERGING_PCT on
    (a response that swings ten times its step is unstable, not overshooting)."""
    if value is not None and math.isfinite(value) and value >= DIVERGING_PCT:
        return f"> {DIVERGING_PCT:.0f} (diverging)"
    return value


def median_text(group: TransportSteps, name: str) -> str:
    """'median [interval]' of one metric of a transport's steps (settling times censored; an
    overshoot's median from DIVERGING_PCT on as diverging)."""
    median = group.median(name)
    if name == "overshoot_pct" and isinstance(overshoot_text(median), str):
        return overshoot_text(median)
    lo, hi = group.interval(name)
    if math.isinf(median) and math.isinf(lo):   # no resample of the steps settled: nothing to bound
        return NOT_SETTLED
    if name == "overshoot_pct" and isinstance(overshoot_text(hi), str):
        return f"{value_text(median)} [{value_text(lo)}–> {DIVERGING_PCT:.0f}]"
    return f"{value_text(median)} [{_ci((lo, hi))}]"


HEADER = ["rank", "transport", "steps (runs)", "IAE(y − baseline) per step [mV·s]: median [95 % CI]",
          "overshoot [%]: median [CI]", "settling [s]: median [CI]", "verdict", "clearly better than"]


def table_rows(ranked: list[RankedSteps]) -> list[list[Any]]:
    """The rows of the repeated-step table."""
    def cell(r: RankedSteps, m: str) -> str:
        return median_text(r.group, m) if r.group.values(m) else "–"
    return [[r.rank if r.rank is not None else "–", r.group.transport, f"{len(r.group.steps)} ({r.group.runs})",
             cell(r, "iae_mVs"), cell(r, "overshoot_pct"), cell(r, "settling_s"), r.verdict,
             ", ".join(r.clearly_better_than) or "–"] for r in ranked]
