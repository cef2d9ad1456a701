"""Degradation across a campaign (analysis.degradation) on synthetic campaigns whose delays
are known: one point per run with the delay and jitter its messages saw, groups per
condition with the spread over repetitions, verdicts and the written summary."""
from __future__ import annotations

import numpy as np
import pytest

from netloop.analysis import degradation, synthetic
from netloop.analysis.loop_run import analyse_loop_run, load_loop_run
from netloop.analysis.prediction import analyse_prediction

BASE_MS = {"tcp_nodelay": 0.5, "udp": 3.0}     # per transport, one way
JITTER_MS = {"tcp_nodelay": 0.2, "udp": 2.0}   # uniform, one way
TRACES: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def delays(cell, cfg, rng):
    n = cfg["loop"]["samples"]
    extra = cfg["link_params"]["delay_ms"]
    one_way = [(BASE_MS[cell.transport] + extra + rng.uniform(0, JITTER_MS[cell.transport], n)) / 1e3
               for _ in range(2)]
    TRACES[cell.run_id] = (one_way[0], one_way[1])
    return one_way[0], one_way[1]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("deg") / "deg"
    doc = {"name": "deg", "link": "shaped", "transport": ["tcp_nodelay", "udp"], "repetitions": 2,
           "sweep": {"link_params.delay_ms": [0, 10, 30]}, "loop": {"samples": 100, "controller": {"K": 2.0}}}
    synthetic.write_campaign(out, doc, delays)
    analyses = []
    for d in sorted((out / "runs").iterdir()):
        run = load_loop_run(d)
        analyses.append((analyse_loop_run(run), analyse_prediction(run)))
    points = [degradation.run_point(a, prediction) for a, prediction in analyses]
    return out, analyses, points, degradation.group(points)


def test_one_point_per_run_with_the_delays_its_messages_saw(campaign):
    _, analyses, points, _ = campaign
    assert len(points) == 12 and all(p["ok"] for p in points)
    for p in points:
        y_d, u_d = TRACES[p["run_id"]]
        assert p["rtt_mean_ms"] == pytest.approx(1e3 * np.mean(y_d + u_d), abs=1e-5)
        assert p["rtt_std_ms"] == pytest.approx(1e3 * np.std(y_d + u_d, ddof=1), abs=1e-5)
        assert p["y_mean_ms"] == pytest.approx(1e3 * np.mean(y_d), abs=1e-5)
        assert p["u_std_ms"] == pytest.approx(1e3 * np.std(u_d, ddof=1), abs=1e-5)
        assert p["y_p99_ms"] == pytest.approx(1e3 * np.percentile(y_d, 99), abs=1e-5)
        assert p["mdr_y"] == 1.0 and p["mdr_u"] == 1.0 and p["stale_u"] == 0
        assert p["setting"] in ("delay_ms=0", "delay_ms=10", "delay_ms=30")
        assert p["condition"] == f"{p['transport']} {p['setting']}"
        assert p["repetition"] in (0, 1)
        assert p["pred_rms_mV"] < 1e-6 and p["explained"]
    a = analyses[0][0]
    assert points[0]["iae_dev_mVs"] == pytest.approx(1e3 * a["deviation"]["IAE"])


def test_degradation_grows_with_delay_and_the_verdicts(campaign):
    _, _, points, groups = campaign
    assert [(g["setting"], g["transport"]) for g in groups] == [
        ("delay_ms=0", "tcp_nodelay"), ("delay_ms=0", "udp"), ("delay_ms=10", "tcp_nodelay"),
        ("delay_ms=10", "udp"), ("delay_ms=30", "tcp_nodelay"), ("delay_ms=30", "udp")]
    iae = {(g["setting"], g["transport"]): g["stats"]["iae_dev_mVs"]["mean"] for g in groups}
    for t in ("tcp_nodelay", "udp"):
        assert iae[("delay_ms=0", t)] < iae[("delay_ms=10", t)] < iae[("delay_ms=30", t)]
    # K = 2 over 2 s: ~2 ms of loop delay settles, ~25 ms still rings at the end, ~65 ms diverges
    expected = {"delay_ms=0": "settled", "delay_ms=10": "did not settle", "delay_ms=30": "unstable"}
    for g in groups:
        assert g["verdicts"][expected[g["setting"]]] == 2, (g["setting"], g["transport"], g["verdicts"])


def test_groups_spread_over_repetitions(campaign):
    _, _, points, groups = campaign
    for g in groups:
        assert g["n"] == 2
        vals = [p["iae_dev_mVs"] for p in points if p["run_id"] in g["run_ids"]]
        s = g["stats"]["iae_dev_mVs"]
        assert s["mean"] == pytest.approx(np.mean(vals)) and s["std"] == pytest.approx(np.std(vals, ddof=1))
        assert s["min"] == min(vals) and s["max"] == max(vals) and s["n"] == 2


def test_summary_names_the_transport_closest_to_local_and_the_unstable_runs(campaign):
    _, _, points, groups = campaign
    text = "\n".join(degradation.summary_sentences(groups, points))
    assert "With delay_ms=0: **tcp_nodelay** kept the loop closest to local" in text
    assert "With delay_ms=10: **tcp_nodelay** kept the loop closest to local" in text
    r = degradation.ranking(groups, "delay_ms=10")
    diff = r[1]["stats"]["iae_dev_mVs"]["median"] - r[0]["stats"]["iae_dev_mVs"]["median"]
    assert f"{diff:.2f} mV·s" in text
    assert "`udp__delay_ms=30-r0` (unstable" in text and "`tcp_nodelay__delay_ms=30-r1` (unstable" in text
    assert "`udp__delay_ms=10-r1` (did not settle" in text


def test_verdict_and_spread_edge_cases():
    t = np.arange(100) * 0.02
    growing = 0.5 + 0.1 * np.exp(0.05 * np.arange(100)) * np.sin(np.arange(100))
    assert degradation.verdict(t, growing, {"SteadyStateValue": 0.5, "settled": False}, 1.0) == "unstable"
    steady = 0.5 + 0.05 * np.sin(np.arange(100))          # neither decaying nor growing
    assert degradation.verdict(t, steady, {"SteadyStateValue": 0.5, "settled": False}, 1.0) == "did not settle"
    assert degradation.verdict(t, [0.0, np.nan, 1.0], {"settled": False}, 1.0) == "unstable"
    s = degradation.spread([1.0, None, float("nan"), 3.0])
    assert s["n"] == 2 and s["mean"] == 2.0 and s["median"] == 2.0
    assert degradation.spread([])["n"] == 0
    assert degradation.repetition_of("udp__delay_ms=3-r12") == 12
