"""The RLC loop's reference as a schedule of steps: one definition for the controller node
(``rlc/reference_steps`` and ``rlc/reference_levels``), the offline baseline and the analysis.

A schedule is a list of ``(k, level)``: from sensor sample ``k`` on, the reference is
``level``. The first entry is ``(0, level)``. Without a square wave
(``loop.controller.square_wave.count`` 0) it is ``[(0, reference)]``: today's single step.
"""
from __future__ import annotations

import math
from typing import Any

#: where a run records its schedule (records/<name>)
RECORD_NAME = "reference.json"


def square_wave_schedule(square_wave: dict[str, Any], high: float, sample_period: float,
                         repetition: int = 0) -> list[tuple[int, float]]:
    """The steps of ``square_wave`` (a ``loop.controller.square_wave`` mapping) at sensor
    period ``sample_period``: step j (0 .. 2 count - 1) at time j period / 2, later by a random
    0 to period / 8 with ``random_phase`` (numpy's default_rng seeded with (seed, repetition)),
    up to ``high`` for even j, down to ``low`` for odd j; each at the first sample at or after
    its time."""
    import numpy as np  # noqa: PLC0415 - `netloop validate` runs without numpy; only a run draws the phases

    count = int(square_wave.get("count") or 0)
    if count == 0:
        return [(0, float(high))]
    period, low = float(square_wave["period"]), float(square_wave.get("low", 0.0))
    rng = np.random.default_rng([int(square_wave.get("seed", 1)), int(repetition)])
    out = [(0, low)]
    for j in range(2 * count):
        t = j * period / 2 + (rng.uniform(0.0, period / 8) if square_wave.get("random_phase", True) else 0.0)
        out.append((int(math.ceil(t / sample_period - 1e-9)), float(high) if j % 2 == 0 else low))
    return out


def loop_schedule(loop: dict[str, Any], repetition: int = 0) -> list[tuple[int, float]]:
    """The schedule of an experiment's ``loop`` mapping (as metadata.json records it)."""
    ctl = loop["controller"]
    return square_wave_schedule(ctl.get("square_wave") or {}, ctl["reference"], loop["plant"]["period"], repetition)


def seconds_needed(square_wave: dict[str, Any]) -> float:
    """Seconds of samples a square wave needs: its last step and half a period after it."""
    count = int(square_wave.get("count") or 0)
    if count == 0:
        return 0.0
    period = float(square_wave["period"])
    return count * period + (period / 8 if square_wave.get("random_phase", True) else 0.0)


def step_list(schedule: list[tuple[int, float]]) -> list[tuple[int, float, float]]:
    """The square wave's steps of a schedule as (k, level before, level after): every entry
    after the first (which sets the level the run starts from); none for a single step."""
    return [(k, prev, new) for (_, prev), (k, new) in zip(schedule, schedule[1:]) if new != prev]
