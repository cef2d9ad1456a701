"""The words and numbers of netloop's reports, defined once.

:data:`GLOSSARY` is the single source: ``netloop report`` prints it at the end of every
report (the terms its tables use), and ``make docs`` writes :func:`glossary_markdown` into
docs/concepts.md. Each :class:`Term` is a name as the tables spell it, its unit ("" when it
has none) and one or two sentences saying what it means. The output of
:func:`glossary_markdown` depends on nothing but this file, so the generated block stays
stable between runs.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    name: str
    unit: str
    meaning: str


GLOSSARY: tuple[Term, ...] = (
    Term("y, u", "V",
         "The loop's two messages: y is the plant's sample (capacitor voltage, plant → controller), u the "
         "controller's answer (controller → plant)."),
    Term("local baseline", "",
         "The same loop with no network: the exact discrete model at the same sample period, zero delay, "
         "no loss. What every networked run is compared with."),
    Term("D", "ms",
         "One-way delay of a message: from the sender's publish to the subscriber's callback (on one clock, or "
         "corrected by the measured clock offset between machines)."),
    Term("J_d", "ms",
         "Period at the destination: time between two consecutive arrivals. Its std is the jitter the "
         "receiver sees."),
    Term("MDR", "%",
         "Message delivery ratio: messages delivered over messages sent, in percent (100 % = nothing lost)."),
    Term("BW", "Mbit/s", "Bandwidth used at the receiver: message bytes × 8 over the receiving time."),
    Term("offered load", "Mbit/s", "What a flow's sender offers the link: message size × 8 / period."),
    Term("RTT", "ms",
         "Loop delay (round trip): from a sample's stamp on the plant to the arrival, at the plant, of the u "
         "answering it, read on the plant's clock. Its std is the loop's jitter."),
    Term("std", "same as the value",
         "Standard deviation. Of a delay: its jitter. Over repetitions: the sample standard deviation (n − 1)."),
    Term("p50 / p95 / p99", "same as the value",
         "Percentiles: the value below which 50 % (the median), 95 % or 99 % of the messages lie."),
    Term("IAE", "mV·s", "Integral of the absolute tracking error, Σ|r − y|·T over the run (r: the reference)."),
    Term("IAE(y − baseline)", "mV·s",
         "Σ|y − y_baseline|·T: how far the networked response strays from the local baseline. The headline "
         "degradation number: 0 means the network changed nothing."),
    Term("ΔIAE", "mV·s",
         "IAE of the run minus IAE of the baseline. Small for a P loop, whose steady-state error dominates IAE; "
         "IAE(y − baseline) is the better measure."),
    Term("overshoot", "%", "How far the step response rises above its final value, in percent of the final value."),
    Term("Δovershoot", "pp", "Overshoot of the run minus overshoot of the baseline, in percentage points."),
    Term("pp", "", "Percentage points: the difference of two percentages (40 % − 35 % = 5 pp, not 14 %)."),
    Term("settling time", "s", "Time until the response stays within 2 % of its final value."),
    Term("rise time", "s", "Time the response takes from 10 % to 90 % of its final value."),
    Term("stale u", "",
         "An actuation that reached the plant after a newer one had been applied; the plant drops it."),
    Term("IAE vs local", "s",
         "Teleoperation: Σ|y − y_local|·Δt of a speed or heading step normalised to 0 → 1, against the same "
         "trial run on the car's own host."),
    Term("command age", "ms",
         "Teleoperation: a command's publish time minus the stamp of the odometry it was computed from."),
    Term("condition", "",
         "One transport at one setting of the swept parameters (e.g. udp at delay_ms=10); without a sweep, "
         "the transport alone."),
    Term("repetition", "",
         "One of the runs of a condition; a condition's numbers are the median over its repetitions, its "
         "spread their min–max."),
    Term("rank", "", "Order within a setting, best (lowest median of the ranked number) first."),
    Term("best", "", "The verdict of the condition with the lowest median of the ranked number."),
    Term("indistinguishable from best", "",
         "The verdict when this condition's min–max over its repetitions overlaps the best one's: the "
         "repetitions cannot tell the two apart."),
    Term("worse by X (Y %)", "",
         "The verdict when the ranges do not overlap: its median is X above the best one's, Y % of the "
         "best's. With one repetition there is no spread and every difference reads so; run 3 or more."),
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

_BY_NAME = {t.name: t for t in GLOSSARY}


def term(name: str) -> Term:
    """The term called ``name`` (KeyError naming the known terms otherwise)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no glossary term {name!r} (known: {', '.join(_BY_NAME)})") from None


def rows(names: list[str] | None = None) -> list[list[str]]:
    """[name, unit, meaning] of the terms called ``names`` (every term when None), in the
    glossary's order."""
    wanted = None if names is None else {term(n).name for n in names}
    return [[t.name, t.unit or "–", t.meaning] for t in GLOSSARY if wanted is None or t.name in wanted]


def glossary_markdown(names: list[str] | None = None) -> str:
    """The glossary (or the terms called ``names``) as a Markdown table: term | unit | meaning."""
    lines = ["| term | unit | meaning |", "|---|---|---|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows(names)]
    return "\n".join(lines) + "\n"
