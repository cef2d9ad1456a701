"""The figures of repeated-step loops: the interval figure is drawn from a ranking, the overlay
of a square wave shows one repetition (the steps differ between repetitions) and is scaled to
the runs that are not far off."""
from __future__ import annotations

import math

from netloop.analysis import repeated_steps, step_plots


def test_first_repetition_and_typical_runs():
    ids = ["tcp-r0", "tcp-r1", "udp__delay_ms=10-r0", "udp-r10", "priority-r0"]
    assert step_plots.first_repetition(ids) == [0, 2, 4]
    assert step_plots.typical_runs([4.0, 5.0, 6.0, 1000.0]) == [0, 1, 2]
    assert step_plots.typical_runs([math.nan, 3.0]) == [1]
    assert step_plots.typical_runs([math.nan]) == [0]


def test_step_intervals_draws_every_ranked_transport(tmp_path):
    def group(name, values):
        return repeated_steps.TransportSteps(name, "", [{"iae_mVs": v} for v in values], 1)
    ranked = repeated_steps.rank_steps([group("udp", [40, 50, 60, 45, 55]), group("priority", [3, 4, 5, 4, 3]),
                                        group("tcp", [])])
    path = step_plots.step_intervals(ranked, tmp_path / "s.png")
    assert path.stat().st_size > 5000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
