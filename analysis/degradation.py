"""Degradation across a campaign: one point per loop run, the loop's degradation against the
delay and jitter its own messages experienced, grouped per cell condition.

Per run (a *point*):

- degradation: IAE(y - baseline) [mV·s] (how far the response strays from the local one;
  the headline number), ΔIAE (IAE - IAE of the baseline, IAE = Σ|r - y|·T; the point keeps
  it in V·s, tables and CSV files show it in mV·s), overshoot
  [%] and Δovershoot [pp], settling time [s], and the verdict ``settled`` / ``did not
  settle`` / ``unstable`` (diverging: |y| beyond 10 |r|, or an oscillation whose amplitude
  grows from the second to the last quarter of the run);
- network: loop delay = RTT (a sample's stamp to the arrival of the u answering it, on the
  plant's clock): mean, std (the loop's jitter), p50/p95/p99; one-way delay per direction
  (y: plant -> controller, u: controller -> plant): mean, std, p95, p99; MDR per direction;
  stale actuations;
- the prediction error of :mod:`prediction` (RMS [mV], Δovershoot [pp], explained or not).

Grouping: the cell *condition* is the transport plus the sweep settings
(``metadata.experiment.cell``); the *setting* is the condition without the transport
(e.g. ``delay_ms=10``, or ``—`` without a sweep): summaries compare transports within one
setting. Over the repetitions of a condition every number gets n, mean, std, min, max and
median.
"""
from __future__ import annotations

import math
import re
from statistics import median

import numpy as np

from .results import ConditionGroup, LoopRunResult, PredictionResult, RunPoint

NO_SWEEP = "—"

#: the labels of IAE(y − baseline): over a whole run, or over one step of a square wave (each
#: table says which it shows)
IAE_RUN = "IAE(y − baseline) per run [mV·s]"
IAE_STEP = "IAE(y − baseline) per step [mV·s]"

#: (key, label with unit) of the numbers of a point, in table order.
POINT_FIELDS = [
    ("iae_dev_mVs", IAE_RUN),
    ("delta_IAE", "ΔIAE per run [mV·s]"),
    ("overshoot", "overshoot [%]"),
    ("delta_overshoot_pp", "Δovershoot [pp]"),
    ("settling_s", "settling [s]"),
    ("rtt_mean_ms", "RTT mean [ms]"),
    ("rtt_std_ms", "RTT std [ms]"),
    ("rtt_p50_ms", "RTT p50 [ms]"),
    ("rtt_p99_ms", "RTT p99 [ms]"),
    ("y_mean_ms", "y one-way mean [ms]"),
    ("y_std_ms", "y one-way std [ms]"),
    ("y_p95_ms", "y one-way p95 [ms]"),
    ("y_p99_ms", "y one-way p99 [ms]"),
    ("u_mean_ms", "u one-way mean [ms]"),
    ("u_std_ms", "u one-way std [ms]"),
    ("u_p95_ms", "u one-way p95 [ms]"),
    ("u_p99_ms", "u one-way p99 [ms]"),
    ("mdr_y", "MDR y [%]"),
    ("mdr_u", "MDR u [%]"),
    ("stale_u", "stale u"),
    ("pred_rms_mV", "prediction RMS error [mV]"),
    ("pred_max_mV", "prediction max error [mV]"),
    ("pred_dovershoot_pp", "prediction Δovershoot [pp]"),
]
FIELD_LABELS = dict(POINT_FIELDS)
#: fields a point keeps in another unit than its label's: the factor tables and CSV files
#: multiply them by (MDR: a share 0..1 written in %; ΔIAE: V·s written in mV·s)
CSV_SCALE = {"mdr_y": 100.0, "mdr_u": 100.0, "delta_IAE": 1e3}


def _num(value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v


def verdict(t, y, step: dict, reference: float) -> str:
    """'unstable', 'did not settle' or 'settled' for a measured step response."""
    y = np.asarray(y, float)
    if y.size == 0 or not np.all(np.isfinite(y)) or np.max(np.abs(y)) > 10 * max(abs(reference), 1e-9):
        return "unstable"
    q = max(1, y.size // 4)
    final = _num(step.get("SteadyStateValue"))
    if y.size >= 8 and math.isfinite(final):
        early, late = np.ptp(y[q:2 * q]), np.ptp(y[-q:])
        if late > 1.2 * early and late > 0.02 * max(abs(final), 1e-9):
            return "unstable"
    return "settled" if step.get("settled") else "did not settle"


def cell_of(a) -> tuple[str, str, dict]:
    """(condition, setting, settings) of an analysed run (anything with ``cell`` and
    ``transport``: a RunAnalysis, a LoopRunResult), from its metadata's cell."""
    cell = a.cell or {}
    transport = a.transport or "?"
    condition = str(cell.get("condition") or transport)
    setting = condition[len(transport):].strip() if condition.startswith(transport) else condition
    return condition, setting or NO_SWEEP, dict(cell.get("settings") or {})


def setting_of(a) -> str:
    """The sweep setting of an analysed run (:data:`NO_SWEEP` without a sweep)."""
    return cell_of(a)[1]


def repetition_of(run_id: str) -> int | None:
    m = re.search(r"-r(\d+)$", run_id)
    return int(m.group(1)) if m else None


def run_point(a: LoopRunResult, prediction: PredictionResult | None = None) -> RunPoint:
    """The point of one analysed loop run."""
    condition, setting, settings = cell_of(a)
    p = RunPoint(run_id=a.run_id, transport=a.transport, condition=condition, setting=setting, settings=settings,
                 repetition=repetition_of(a.run_id), status=a.status, ok=bool(a.ok))
    if not a.ok:
        return p
    step, sensor, act, rtt = a.step, a.sensor, a.actuation, a.rtt
    p.iae_dev_mVs, p.delta_IAE = 1e3 * a.deviation["IAE"], a.delta_IAE
    p.overshoot, p.delta_overshoot_pp, p.settling_s = step["Overshoot"], a.delta_overshoot_pp, step["SettlingTime"]
    p.verdict = verdict(a.t, a.y, step, a.reference if a.reference is not None else 1.0)
    if a.steps:   # a square wave: whether its steps settled, not the whole run's (repeated_steps);
        # its delta_overshoot_pp is already the steps' median (loop_run)
        from .repeated_steps import TransportSteps, run_verdict  # noqa: PLC0415
        p.verdict = run_verdict(a.y, a.steps, a.reference if a.reference is not None else 1.0)
        steps = TransportSteps(a.transport, setting, list(a.steps))
        p.overshoot, p.settling_s = steps.median("overshoot_pct"), steps.median("settling_s")   # inf: most did not settle
        p.steps, p.steps_settled = len(a.steps), steps.settled()
    for stat in ("mean", "std", "p50", "p95", "p99"):
        setattr(p, f"rtt_{stat}_ms", rtt.get(f"{stat}_ms"))
    p.mdr_y, p.mdr_u, p.stale_u = sensor.MDR, act.MDR, a.stale_actuations
    for key, d in (("y", sensor), ("u", act)):
        for stat in ("mean", "std", "p95", "p99"):
            setattr(p, f"{key}_{stat}_ms", d.delay.get(f"{stat}_ms"))
    if prediction is not None and prediction.ok:
        p.pred_rms_mV, p.pred_max_mV = prediction.rms_mV, prediction.max_mV
        p.pred_dovershoot_pp, p.explained = prediction.delta_overshoot_pp, prediction.explained
    return p


def spread(values) -> dict[str, float]:
    """n, mean, std (sample), min, max, median of the finite values."""
    v = np.array([x for x in (_num(x) for x in values) if math.isfinite(x)])
    if v.size == 0:
        return {"n": 0, "mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan, "median": math.nan}
    return {"n": int(v.size), "mean": float(v.mean()), "std": float(v.std(ddof=1)) if v.size > 1 else 0.0,
            "min": float(v.min()), "max": float(v.max()), "median": float(median(v.tolist()))}


def setting_sort_key(settings: dict):
    out = []
    for v in settings.values():
        out.append((0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v)))
    return tuple(out)


def group(points: list[RunPoint], transport_order: list[str] | None = None) -> list[ConditionGroup]:
    """One group per condition (setting x transport) over the usable points, in sweep order,
    then in ``transport_order`` (default: sorted by name)."""
    runs: dict[tuple[str, str], list[RunPoint]] = {}
    for p in points:
        if p.ok and p.status == "complete":
            runs.setdefault((p.setting, p.transport), []).append(p)
    out = []
    for (setting, transport), rs in runs.items():
        out.append(ConditionGroup(
            setting=setting, transport=transport, condition=rs[0].condition, settings=rs[0].settings, runs=rs,
            n=len(rs), stats={key: spread(getattr(r, key) for r in rs) for key, _ in POINT_FIELDS},
            verdicts={v: sum(r.verdict == v for r in rs) for v in ("settled", "did not settle", "unstable")},
            run_ids=[r.run_id for r in rs]))
    transports = [t for t in (transport_order or []) if isinstance(t, str)]
    transports += sorted({p.transport for p in points} - set(transports))
    out.sort(key=lambda g: (setting_sort_key(g.settings), g.setting, transports.index(g.transport)))
    return out


def settings_in_order(groups: list[dict]) -> list[str]:
    return list(dict.fromkeys(g.setting for g in groups))


def ranking(groups: list[dict], setting: str, key: str = "iae_dev_mVs") -> list[dict]:
    """The transports of one setting, best (lowest median of ``key``) first."""
    gs = [g for g in groups if g.setting == setting and g.stats[key]["n"]]
    return sorted(gs, key=lambda g: g.stats[key]["median"])


def summary_sentences(groups: list[dict], points: list[dict]) -> list[str]:
    """The automatically written summary: per setting, which transport kept the loop
    closest to local (lowest median IAE(y − baseline)) and by how much; unstable runs."""
    out = []
    for setting in settings_in_order(groups):
        ranked = ranking(groups, setting)
        where = "" if setting == NO_SWEEP else f"With {setting}: "
        if not ranked:
            continue
        best = ranked[0]
        b = best.stats["iae_dev_mVs"]
        rtt = best.stats["rtt_mean_ms"]
        text = (f"{where}**{best.transport}** kept the loop closest to local: median IAE(y − baseline) per run "
                f"{b['median']:.2f} mV·s over {b['n']} run{'s' if b['n'] != 1 else ''} "
                f"(loop delay {rtt['median']:.2f} ms mean RTT)")
        if len(ranked) == 1:
            text += "; it is the only transport with usable runs here."
        else:
            nxt = ranked[1].stats["iae_dev_mVs"]
            worst = ranked[-1]
            diff = nxt["median"] - b["median"]
            rel = 100 * diff / nxt["median"] if nxt["median"] else math.nan
            text += (f", {diff:.2f} mV·s ({rel:.0f} %) less than the next, {ranked[1].transport} "
                     f"({nxt['median']:.2f} mV·s)")
            if worst is not ranked[1]:
                w = worst.stats["iae_dev_mVs"]
                text += f"; worst {worst.transport} ({w['median']:.2f} mV·s)"
            if b["max"] >= nxt["min"]:
                text += (". The ranges over repetitions overlap (best up to "
                         f"{b['max']:.2f}, next from {nxt['min']:.2f} mV·s): not a clear difference.")
            else:
                text += "."
        runs = [r for g in ranked for r in g.runs]
        unsettled = [r for r in runs if r.verdict != "settled"]
        if unsettled and len(unsettled) == len(runs):
            kinds = sorted({r.verdict for r in unsettled})
            text += (f" But no transport kept this loop in shape: all {len(runs)} runs "
                     f"{' or '.join('were unstable' if k == 'unstable' else 'did not settle' for k in kinds)}.")
        out.append(text)
    bad = [p for p in points if p.ok and p.status == "complete" and p.verdict != "settled"]
    if bad:
        out.append("Runs that did not settle or were unstable: " + ", ".join(
            f"`{p.run_id}` ({p.verdict}, RTT mean {_num(p.rtt_mean_ms):.1f} ms)" for p in bad) + ".")
    elif any(p.ok for p in points):
        out.append("Every analysed run settled (2 % band) — none was unstable.")
    return out
