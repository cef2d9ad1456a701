"""The computed delay margin against the real loop: the C++ plant and controller nodes in two
namespaces joined by the userspace shaped link, with a constant delay each way that puts the
loop delay about 10 % inside and 10 % outside the sampled loop's delay margin (148 ms for the
default loop). Inside, the loop settles and its oscillation dies away; outside, it grows; the
report's margins section expects and observes both. 16 s of loop per run: in 'make test-studies'
(NETLOOP_TEST_STUDIES=1), as the default experiment's quick run."""
from __future__ import annotations

import csv
import os

import numpy as np
import pytest
from campaign_helpers import campaign_runs
from link_health import run_with_healthy_link

from netloop.analysis import baseline, margins
from netloop.analysis.loop_run import analyse_loop_run, load_loop_run
from netloop.analysis.report import write_report

pytestmark = [pytest.mark.integration, pytest.mark.root,
              pytest.mark.studies,   # 16 s loops over an emulated link: make test-studies
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")]

SAMPLES = 800
#: one-way delay each way [ms]: a loop delay of about 133 ms (0.9 x the margin) and 165 ms (1.12 x)
DELAYS_MS = (66, 82)


def _growth(y: np.ndarray, final: float) -> float:
    n = len(y) // 5
    return float(np.max(np.abs(y[-n:] - final)) / np.max(np.abs(y[n:2 * n] - final)))


def test_the_real_loop_is_stable_inside_the_computed_delay_margin_and_not_outside(tmp_path):
    doc = {"name": "margin", "link": "shaped", "transport": "udp", "sweep": {"link_params.delay_ms": list(DELAYS_MS)},
           "loop": {"samples": SAMPLES}}
    runs = run_with_healthy_link(lambda out: campaign_runs(out, doc, "margin"), tmp_path)
    loop = baseline.local_baseline({"plant": {"R": 1.0, "L": 0.1, "C": 0.1, "period": 0.02,
                                              "initial_state": [0.0, 0.0]},
                                    "controller": {"K": 1.0, "Ki": 0.0, "Kd": 0.0, "reference": 1.0}}, SAMPLES)
    dm_ms = 1e3 * margins.delay_margin(baseline.rlc_state_space(), baseline.controller_tf(
        {"plant": {"period": 0.02}, "controller": {"K": 1.0, "Ki": 0.0, "Kd": 0.0}}), 0.02)
    inside, outside = (analyse_loop_run(load_loop_run(runs[f"udp__delay_ms={d}-r0"])) for d in DELAYS_MS)
    assert inside.ok and outside.ok, inside.problems + outside.problems
    assert 0.8 * dm_ms < inside.rtt["p50_ms"] < 0.95 * dm_ms < 1.05 * dm_ms < outside.rtt["p50_ms"] < 1.25 * dm_ms
    assert _growth(np.asarray(inside.y), loop.y[-1]) < 0.7
    assert _growth(np.asarray(outside.y), loop.y[-1]) > 1.5
    camp = next(iter(runs.values())).parent.parent
    write_report(camp)
    rows = {r["setting"]: r for r in csv.DictReader(open(camp / "margins.csv", encoding="utf-8"))}
    assert rows["delay_ms=66"]["p50 vs delay margin"] in ("inside", "near")
    assert rows["delay_ms=66"]["expected"] in ("stable, guaranteed", "no guarantee")
    assert rows["delay_ms=82"]["p50 vs delay margin"] == "beyond"
    assert rows["delay_ms=82"]["expected"] == "unstable" and rows["delay_ms=82"]["agrees"] == "yes", rows
    assert "Stability margins, delay_ms=82" in (camp / "report.md").read_text()
