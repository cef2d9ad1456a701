"""The ``rlc`` kind's words of the report's glossary (:mod:`netloop.analysis.glossary` adds them
to the generic terms in a report of rlc runs and in docs/concepts.md)."""
from __future__ import annotations

from ...analysis.glossary import Term

TERMS: tuple[Term, ...] = (
    Term("y, u", "V",
         "The loop's two messages: y is the plant's sample (capacitor voltage, plant → controller), u the "
         "controller's answer (controller → plant)."),
    Term("local baseline", "",
         "The same loop with no network: the exact discrete model at the same sample period, zero delay, "
         "no loss. What every networked run is compared with."),
    Term("IAE", "mV·s", "Integral of the absolute tracking error, Σ|r − y|·T over the run (r: the reference)."),
    Term("IAE(y − baseline)", "mV·s",
         "Σ|y − y_baseline|·T: how far the networked response strays from the local baseline. The headline "
         "degradation number: 0 means the network changed nothing."),
    Term("ΔIAE", "mV·s",
         "IAE of the run minus IAE of the baseline. Small for a P loop, whose steady-state error dominates IAE; "
         "IAE(y − baseline) is the better measure."),
    Term("Δovershoot", "pp", "Overshoot of the run minus overshoot of the baseline, in percentage points."),
    Term("stale u", "",
         "An actuation that reached the plant after a newer one had been applied; the plant drops it."),
    Term("repeated steps", "",
         "A square-wave reference (loop.controller.square_wave): each step of each run compared with the "
         "local baseline's step of the same direction; every step of every repetition is one sample."),
    Term("95 % CI", "",
         "Of repeated steps: a seeded percentile bootstrap interval of the median over a transport's steps."),
    Term("clearly worse / not a clear difference", "",
         "Of repeated steps: a difference is clear only when the two transports' intervals do not overlap; "
         "overlapping intervals are not a clear difference, however far apart the medians."),
    Term("prediction", "mV",
         "The run's own measured delays and losses replayed through the exact loop model; its RMS error "
         "against the measured y says whether delay and loss explain the run (at most 5 mV: explained)."),
)
