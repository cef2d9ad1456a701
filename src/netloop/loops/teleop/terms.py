"""The ``teleop`` kind's words of the report's glossary (:mod:`netloop.analysis.glossary` adds
them to the generic terms in a report of teleop runs and in docs/concepts.md)."""
from __future__ import annotations

from ...analysis.glossary import Term

TERMS: tuple[Term, ...] = (
    Term("IAE vs local", "s",
         "Teleoperation: Σ|y − y_local|·Δt of a speed or heading step normalised to 0 → 1, against the same "
         "trial run on the car's own host."),
    Term("command age", "ms",
         "Teleoperation: a command's publish time minus the stamp of the odometry it was computed from."),
)
