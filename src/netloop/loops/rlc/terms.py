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
    Term("IAE", "mV·s", "Integral of the absolute tracking error, IAE(r − y) = Σ|r − y|·T over the run (r: the "
                        "reference)."),
    Term("IAE(y − baseline)", "mV·s",
         "Σ|y − y_baseline|·T: how far the networked response strays from the local baseline. The headline "
         "degradation number: 0 means the network changed nothing. Taken per run (over the whole run) or per step "
         "(over one step of a square wave, to the next step): every label says which."),
    Term("per step / per run", "",
         "Of a square wave's numbers: over one step (from its sample to the next step's) or over the whole run. "
         "A run of a square wave has no overshoot or settling time of its own; its steps have."),
    Term("not settled", "",
         "A step that did not settle (2 % band) before the next one: its settling time is longer than the step. "
         "Medians and intervals count it as longer than any that settled, and read \"not settled\" when it decides "
         "them."),
    Term("loop delay", "ms",
         "Per sample: from its stamp to the arrival at the plant of the u answering it (the loop's RTT): y's delay "
         "and u's delay added, as the margins count them."),
    Term("delay margin", "ms",
         "The largest constant loop delay the sampled loop (its plant, controller, sample period and hold) takes "
         "and stays stable, from its model; the continuous loop's (phase margin / crossover) beside it."),
    Term("jitter margin", "ms",
         "The largest jitter J such that every loop delay varying within [L, L + J] keeps the loop provably stable "
         "(a small-gain criterion: Kao & Lincoln 2004; Cervin et al. 2004), at the constant part L; it falls to 0 "
         "at the delay margin. Sufficient, not necessary."),
    Term("L, J (measured)", "ms",
         "A run's smallest loop delay (L), and its largest hold delay less L (J): the hold delay of a sample is the "
         "time until the plant holds an answer to it or to a newer one, so a lost answer counts until the next acts."),
    Term("inside / near / beyond", "",
         "A measured delay against a margin: below 80 % of it, from 80 % to it, at or above it."),
    Term("stable, guaranteed / unstable / no guarantee", "",
         "What the margins lead one to expect of a transport: J within the jitter margin at L; the median loop delay "
         "beyond the delay margin; neither. The report sets it beside what the runs did and says where they "
         "disagree."),
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
