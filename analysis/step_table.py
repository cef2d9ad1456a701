"""The RLC loop's runs as tables of their steps: the columns of "Every loop run" for a
square-wave reference (per-step medians beside the per-run numbers that mean something for a
square wave, no whole-run overshoot or settling time, which a square wave does not have), and
steps.csv, one row per step of every run (a single-step run is one step).

Every number says what it is taken over: "per step" (one step of the square wave, from its
sample to the next step's) or "per run" (the whole run)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from . import degradation, repeated_steps
from .results import LoopRunResult
from .rlc_result import rlc_loop

def _steps(r: LoopRunResult) -> repeated_steps.TransportSteps:
    return repeated_steps.TransportSteps(r.transport, "", list(r.steps))


def run_verdict(r: LoopRunResult) -> str:
    """settled / did not settle / unstable of a square-wave run (:func:`repeated_steps.run_verdict`)."""
    return repeated_steps.run_verdict(r.y, r.steps, r.reference if r.reference is not None else 1.0)


def _settling(r: LoopRunResult) -> str:
    return repeated_steps.value_text(_steps(r).median("settling_s"))


#: "Every loop run" (runs.csv) of square-wave runs: (label, value of a LoopRunResult)
SQUARE_RUN_COLUMNS: list[tuple[str, Callable[[LoopRunResult], Any]]] = [
    ("verdict", run_verdict),
    ("steps (settled)", lambda r: f"{len(r.steps)} ({_steps(r).settled()})"),
    ("IAE(y − baseline) per step: median [mV·s]", lambda r: _steps(r).median("iae_mVs")),
    (degradation.IAE_RUN, lambda r: 1e3 * r.deviation["IAE"]),
    ("overshoot per step: median [%]", lambda r: repeated_steps.overshoot_text(_steps(r).median("overshoot_pct"))),
    ("settling per step: median [s]", _settling),
    ("IAE(r − y) per run [mV·s]", lambda r: 1e3 * r.tracking["IAE"]),
]


def step_csv(runs: list) -> tuple[list[str], list[list[Any]]]:
    """steps.csv: one row per step of every analysed run (RunAnalysis); a single-step run is
    one step, its whole run (k 0, up)."""
    header = ["run", "transport", "setting", "repetition", "step", "k", "t [s]", "direction", "window [s]",
              "IAE(y − baseline) per step [mV·s]", "overshoot [%]", "settling [s]", "settled", "Δovershoot [pp]",
              "Δsettling [s]"]
    rows = []
    for a in runs:
        r = rlc_loop(a)
        if r is None or not r.ok:
            continue
        first = [a.run_id, a.transport, degradation.setting_of(a), degradation.repetition_of(a.run_id)]
        if r.steps:
            for i, s in enumerate(r.steps):
                rows.append(first + [i, s["k"], s["t_s"], s["direction"], s.get("window_s"), s["iae_mVs"],
                                     s["overshoot_pct"], s["settling_s"], math.isfinite(s["settling_s"]),
                                     s["delta_overshoot_pp"], s["delta_settling_s"]])
        else:
            settling = r.step["SettlingTime"]
            rows.append(first + [0, 0, 0.0, "up", float(r.t[-1]) + (r.period_s or 0.0) if r.t else None,
                                 1e3 * r.deviation["IAE"], r.step["Overshoot"], settling,
                                 bool(np.isfinite(settling)), r.delta_overshoot_pp, r.delta_settling_s])
    return header, rows
