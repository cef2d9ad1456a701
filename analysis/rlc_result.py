"""The ``rlc`` kind's typed result of one run, held in :attr:`RunAnalysis.result
<netloop.analysis.results.RunAnalysis.result>` and set by the kind's analysis side
(:class:`netloop.loops.rlc.analysis.RlcAnalysis`), and the accessors the rlc parts of the
analysis (loop sections, repeated steps, ``netloop compare``) read it with.

A module of its own, importing only :mod:`.results`, so that every module may import it
(the kind's analysis side imports those that read it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .results import LoopRunResult, LoopTiming, PredictionResult, RunAnalysis, RunResult, to_json

#: the keys of the generic analysis.json entry an rlc run's loop result writes itself
_LOOP_KEYS = ("run_id", "transport", "status", "ok", "cell")


@dataclass
class RlcRunResult(RunResult):
    """An RLC-loop run: its loop (with ``loop.per_robot``, the first robot's: the one the loop
    tables show), every robot's loop by robot (per_robot only), and the prediction of its
    response from its measured delays and its loop delay in the terms of the margins (both when
    its loop could be analysed)."""

    loop: LoopRunResult
    prediction: PredictionResult | None = None
    robot_loops: dict[str, LoopRunResult] = field(default_factory=dict)
    timing: LoopTiming | None = None

    @property
    def ok(self) -> bool:
        """Whether the loop could be analysed."""
        return self.loop.ok

    def run_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The run's analysis.json entry: the loop result's keys at the top level (its run_id,
        transport, status, problems, ok, cell, ... first), then the generic entry's other keys,
        with ``prediction`` and ``timing`` this run's."""
        rest = {k: v for k, v in entry.items() if k not in _LOOP_KEYS}
        return self.loop.to_json() | rest | {"prediction": to_json(self.prediction), "timing": to_json(self.timing)}


def rlc_result(a: RunAnalysis) -> RlcRunResult | None:
    """The rlc kind's result of a run (None: not an rlc run, or one whose analysis failed)."""
    return a.result if isinstance(a.result, RlcRunResult) else None


def rlc_loop(a: RunAnalysis) -> LoopRunResult | None:
    """The loop result of an rlc run (the first robot's with per_robot; None: no rlc result)."""
    r = rlc_result(a)
    return r.loop if r is not None else None


def rlc_prediction(a: RunAnalysis) -> PredictionResult | None:
    """The prediction of an rlc run (None: none made, or no rlc result)."""
    r = rlc_result(a)
    return r.prediction if r is not None else None


def robot_loops(a: RunAnalysis) -> dict[str, LoopRunResult]:
    """Every robot's loop of an rlc run with ``loop.per_robot``, by robot ({} otherwise)."""
    r = rlc_result(a)
    return r.robot_loops if r is not None else {}


def rlc_timing(a: RunAnalysis) -> LoopTiming | None:
    """The loop delay of an rlc run in the terms of the margins (None: not measured)."""
    r = rlc_result(a)
    return r.timing if r is not None else None
