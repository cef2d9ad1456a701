"""``rlc``: the series RLC circuit of the Pound paper and its controller, y and u crossing the
link. One package, one registry entry (:mod:`netloop.loops`):

  - :mod:`.run`: the run side (checks, crossing topics, the plant and controller nodes,
    ``records/reference.json``);
  - :mod:`.analysis`: the analysis side (step response against the local baseline,
    degradation, prediction; the tables "Every loop run", runs.csv, degradation.csv,
    conditions.csv, prediction.csv, repeated_steps.json; the report's loop sections).

Its keys are the ``loop`` section of the experiment model (:class:`netloop.model.Loop`:
plant, controller, samples, placement.plant/controller, per_robot). The run side's names
(``rlc_parameters``, ``LOOP_SAMPLE_BYTES``, ...) are importable from here, imported on first use.
"""
from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    """A name of the run side (:mod:`.run`), imported when first asked for (the analysis side
    imports this package without the run)."""
    if name.startswith("__"):
        raise AttributeError(name)
    run = importlib.import_module(f"{__name__}.run")
    try:
        return getattr(run, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
