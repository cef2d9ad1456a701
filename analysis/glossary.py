"""The words and numbers of netloop's reports, defined once.

:data:`GLOSSARY` holds the terms every report uses; each loop kind adds its own (its
analysis side's ``glossary_terms``, e.g. the rlc loop's IAE): :func:`terms`. ``netloop report``
prints the generic terms and those of the campaign's loop kinds at the end of every report,
and ``make docs`` writes :func:`glossary_by_kind_markdown` into docs/concepts.md. Each
:class:`Term` is a name as the tables spell it, its unit ("" when it has none) and one or two
sentences saying what it means. The output depends on nothing but the terms, so the
generated block stays stable between runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..loops import loop_analysis, loop_kind_names


@dataclass(frozen=True)
class Term:
    name: str
    unit: str
    meaning: str


GLOSSARY: tuple[Term, ...] = (
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
         "Round trip: from a message's send to the arrival of the answer to it, read on the sender's clock (an "
         "echo flow's reply; a loop's answer to its sample). Its std is the round trip's jitter."),
    Term("std", "same as the value",
         "Standard deviation. Of a delay: its jitter. Over repetitions: the sample standard deviation (n − 1)."),
    Term("p50 / p95 / p99", "same as the value",
         "Percentiles: the value below which 50 % (the median), 95 % or 99 % of the messages lie."),
    Term("overshoot", "%", "How far the step response rises above its final value, in percent of the final value."),
    Term("pp", "", "Percentage points: the difference of two percentages (40 % − 35 % = 5 pp, not 14 %)."),
    Term("settling time", "s", "Time until the response stays within 2 % of its final value."),
    Term("rise time", "s", "Time the response takes from 10 % to 90 % of its final value."),
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
)


def kind_terms(kind: str) -> tuple[Term, ...]:
    """The terms of the loop kind called ``kind``: its analysis side's ``glossary_terms``."""
    return tuple(loop_analysis(kind).glossary_terms)


def terms(kinds: Iterable[str] | None = None) -> tuple[Term, ...]:
    """The terms every report uses (:data:`GLOSSARY`), then those of each loop kind of ``kinds``
    (every registered kind when None), in that order."""
    out, seen = list(GLOSSARY), {t.name for t in GLOSSARY}
    for kind in (loop_kind_names() if kinds is None else kinds):
        for t in kind_terms(kind):
            if t.name not in seen:
                out.append(t)
                seen.add(t.name)
    return tuple(out)


def term(name: str) -> Term:
    """The term called ``name``, generic or of a loop kind (KeyError naming the known terms otherwise)."""
    by_name = {t.name: t for t in terms()}
    try:
        return by_name[name]
    except KeyError:
        raise KeyError(f"no glossary term {name!r} (known: {', '.join(by_name)})") from None


def rows(names: list[str] | None = None, kinds: Iterable[str] | None = None) -> list[list[str]]:
    """[name, unit, meaning] of the terms called ``names`` (every term of :func:`terms` of
    ``kinds`` when None), in the glossary's order."""
    wanted = None if names is None else {term(n).name for n in names}
    every = terms(kinds) if wanted is None else terms()
    return [[t.name, t.unit or "–", t.meaning] for t in every if wanted is None or t.name in wanted]


def glossary_markdown(names: list[str] | None = None, kinds: Iterable[str] | None = ()) -> str:
    """A Markdown table (term | unit | meaning) of the terms called ``names``, or when None of
    the generic terms and those of ``kinds`` (by default none; None: every kind)."""
    lines = ["| term | unit | meaning |", "|---|---|---|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows(names, kinds)]
    return "\n".join(lines) + "\n"


def glossary_by_kind_markdown() -> str:
    """The whole glossary for the docs: the generic terms' table, then one table per loop kind
    that has terms of its own, under its ``loop.type``."""
    out = [glossary_markdown()]
    for kind in loop_kind_names():
        if own := kind_terms(kind):
            out.append(f"Of `loop.type: {kind}` (its reports add them):\n\n" +
                       glossary_markdown(names=[t.name for t in own]))
    return "\n".join(out)
