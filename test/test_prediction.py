"""Prediction of a run's response from its measured delays (analysis.prediction).

Synthetic runs (records written from the exact loop with a known delay trace, including a
lost actuation and one overtaken by the next) must be reproduced to rounding; a run whose
response was disturbed by something other than delay must be flagged; and a real loopback
run of the nodes must be reproduced by replaying its own records."""
from __future__ import annotations

import os

import numpy as np
import pytest

from netloop.analysis import baseline, prediction, synthetic
from netloop.analysis.loop_run import load_loop_run
from netloop.analysis.records import read_events
from netloop.analysis.report import write_report
from netloop.experiment import expand, for_cell, validate_experiment


def run_cfg(samples=80, **loop):
    cfg = validate_experiment({"transport": "udp", "loop": {"samples": samples, **loop}}, name="p")
    return for_cell(cfg, expand(cfg)[0]).metadata()


def known_trace(n=80, seed=3):
    rng = np.random.default_rng(seed)
    y_d = 0.003 + rng.uniform(0, 0.004, n)
    u_d = 0.004 + rng.uniform(0, 0.006, n)
    u_d[12] = np.nan          # u answering sample 12 is lost
    u_d[25] = 0.045           # u answering 25 arrives after the u of 26 and 27: dropped as stale
    y_d[40] = 0.026           # y(40) reaches the controller after y(41): the controller answers 41 first
    return y_d, u_d


def test_trace_read_from_records_is_the_known_one(tmp_path):
    cfg = run_cfg()
    y_d, u_d = known_trace()
    synthetic.write_run(tmp_path / "udp-r0", cfg, y_d, u_d)
    plant = read_events(tmp_path / "udp-r0" / "records" / "plant.csv")
    assert plant.select("stale", "u").answer_seq.tolist() == [25]
    trace = prediction.actuation_trace(plant)
    assert np.flatnonzero(trace.lost).tolist() == [12, 25]
    assert np.flatnonzero(trace.stale).tolist() == [25]
    ok = ~trace.lost
    np.testing.assert_allclose(trace.delays[ok], (y_d + u_d)[ok], atol=2e-9)   # ns rounding of the stamps
    # the controller numbered its u in the order the y arrived: 41 before 40
    assert trace.seqs[41] == 40 and trace.seqs[40] == 41


def test_prediction_reproduces_a_known_run_exactly(tmp_path):
    cfg = run_cfg()
    y_d, u_d = known_trace()
    s = synthetic.write_run(tmp_path / "udp-r0", cfg, y_d, u_d)
    p = prediction.analyse_prediction(load_loop_run(tmp_path / "udp-r0"))
    assert p["ok"], p["problems"]
    assert p["lost"] == 2 and p["stale"] == 1
    assert p["rms_mV"] < 1e-6 and p["max_mV"] < 1e-6      # |y - y_hat| < 1e-9 V
    np.testing.assert_allclose(p["modes"]["measured"]["y_hat"], s.y, atol=1e-9)
    assert p["explained"] and prediction.finding(p) is None
    # the median delay alone does not explain this jittery run as well
    assert p["modes"]["mean_delay"]["rms_mV"] > 100 * p["rms_mV"]


def test_synthetic_runs_match_independent_discrete_models(tmp_path):
    """The generator itself: zero delay is python-control's c2d loop; a delay of exactly one
    period is x(k+1) = Phi x(k) + Gamma u(k-1)."""
    cfg = run_cfg(samples=60)
    n = 60
    zero = synthetic.write_run(tmp_path / "a", cfg, np.zeros(n), np.zeros(n))
    np.testing.assert_allclose(zero.y, baseline.local_baseline(cfg["loop"], n).y, atol=1e-12)
    one = synthetic.write_run(tmp_path / "b", cfg, np.full(n, 0.008), np.full(n, 0.012))  # 20 ms = T
    sysd = baseline.rlc_zoh(1.0, 0.1, 0.1, 0.02)
    Phi, Gamma = np.asarray(sysd.A), np.asarray(sysd.B).ravel()
    x, u_prev, y = np.zeros(2), 0.0, []
    for _ in range(n):
        y.append(x[0])
        u = 1.0 * (1.0 - x[0])
        x = Phi @ x + Gamma * u_prev
        u_prev = u
    np.testing.assert_allclose(one.y, y, atol=1e-9)
    p = prediction.analyse_prediction(load_loop_run(tmp_path / "b"))
    assert p["modes"]["mean_delay"]["rms_mV"] < 1e-6      # no jitter: the median delay says it all


def test_a_run_not_explained_by_its_delays_is_a_finding(tmp_path):
    cfg = run_cfg()
    y_d, u_d = known_trace()
    run = tmp_path / "campaign" / "runs" / "udp-r0"
    synthetic.write_run(run, cfg, y_d, u_d)
    # something other than the network disturbed the plant: its samples are off by 20 mV from k = 30
    plant = run / "records" / "plant.csv"
    lines = plant.read_text().splitlines(keepends=True)
    out = [lines[0]]
    for line in lines[1:]:
        f = line.split(",")
        if f[0] == "tx" and int(f[2]) >= 30:
            f[3] = repr(float(f[3]) + 0.020)
        out.append(",".join(f))
    plant.write_text("".join(out))
    p = prediction.analyse_prediction(load_loop_run(run))
    assert p["ok"] and not p["explained"]
    assert 5.0 < p["rms_mV"] < 20.0 and p["max_mV"] == pytest.approx(20.0, abs=1.0)
    text = prediction.finding(p)
    assert "something other than delay and loss" in text and "udp-r0" in text
    md = write_report(tmp_path / "campaign").with_name("report.md").read_text()
    html = (tmp_path / "campaign" / "report.html").read_text()
    for doc in (md, html):
        assert "NOT explained" in doc and "something other than delay and loss" in doc


def test_broken_runs_give_no_prediction_and_no_crash(tmp_path):
    cfg = run_cfg(samples=30)
    run = tmp_path / "udp-r0"
    synthetic.write_run(run, cfg, np.full(30, 0.001), np.full(30, 0.001))
    (run / "records" / "plant.csv").unlink()
    p = prediction.analyse_prediction(load_loop_run(run))
    assert not p["ok"] and "plant.csv" in p["problems"][0]
    (run / "metadata.json").write_text('{"status": "comp')
    p = prediction.analyse_prediction(load_loop_run(run))
    assert not p["ok"] and "not an RLC loop run" in p["problems"][0]


@pytest.mark.integration
def test_prediction_reproduces_real_loopback_runs(tmp_path):
    from netloop.runner import campaign_dir_for, run_experiment
    cfg = validate_experiment({"transport": ["tcp_nodelay", "udp"], "loop": {"samples": 80, "warmup": 0.2}},
                              name="pred")
    out = campaign_dir_for(cfg, tmp_path)
    run_experiment(cfg, out, log=lambda _: None)
    for run in ("tcp_nodelay-r0", "udp-r0"):
        p = prediction.analyse_prediction(load_loop_run(out / "runs" / run))
        assert p["ok"], p["problems"]
        # the plant is the same exact model: replaying its own records reproduces it to rounding
        assert p["rms_mV"] < 1e-6 and abs(p["delta_overshoot_pp"]) < 1e-6, p["rms_mV"]
        assert p["explained"]
    md = write_report(out).with_name("report.md").read_text()
    assert "reproduces every run" in md and "## Prediction from measured delays" in md
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 5
    # every run explained: the section is one sentence (numbers per run in prediction.csv), no figure
    section = md.split("## Prediction from measured delays\n", 1)[1].split("\n## ", 1)[0]
    assert "reproduces every run exactly" in section and "`prediction.csv`" in section and "![" not in section


@pytest.mark.integration
@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_prediction_reproduces_a_real_lossy_jittery_run(tmp_path):
    """Across the userspace link emulator with loss and reordering jitter: the records hold
    lost and (often) stale actuations, and the replay still reproduces the run."""
    from netloop.runner import campaign_dir_for, run_experiment
    cfg = validate_experiment({"link": "shaped", "transport": "udp", "loop": {"samples": 100, "warmup": 0.2},
                               "link_params": {"delay_ms": 10, "jitter_ms": 8, "loss": 0.05, "reorder": True}},
                              name="lossy")
    out = campaign_dir_for(cfg, tmp_path)
    run_experiment(cfg, out, log=lambda _: None)
    # (a loaded machine may mark the link timing invalid; the records are complete either way)
    p = prediction.analyse_prediction(load_loop_run(out / "runs" / "udp-r0"))
    assert p["ok"], p["problems"]
    assert p["lost"] >= 1
    assert p["rms_mV"] < 1e-6 and p["explained"]
    assert p["modes"]["mean_delay"]["rms_mV"] > 1e3 * p["rms_mV"]
