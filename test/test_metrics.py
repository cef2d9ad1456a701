"""Metrics against cases whose answer is known in closed form."""
from __future__ import annotations

import math

import numpy as np
import pytest

from netloop.analysis import metrics


def test_second_order_step_overshoot_matches_formula():
    zeta, wn = 0.5, 10.0
    t = np.linspace(0, 3, 30001)
    wd = wn * math.sqrt(1 - zeta ** 2)
    y = 1 - np.exp(-zeta * wn * t) * (np.cos(wd * t) + zeta / math.sqrt(1 - zeta ** 2) * np.sin(wd * t))
    m = metrics.step_metrics(t, y, yfinal=1.0)
    assert m["Overshoot"] == pytest.approx(100 * math.exp(-math.pi * zeta / math.sqrt(1 - zeta ** 2)), abs=0.01)
    assert m["PeakTime"] == pytest.approx(math.pi / wd, abs=1e-3)
    assert m["settled"] and m["SteadyStateValue"] == 1.0


def test_unsettled_response_is_flagged():
    t = np.arange(200) * 0.02
    y = np.sin(5 * t) + 1.0
    assert metrics.step_metrics(t, y)["settled"] is False


def test_integral_errors():
    e = np.array([1.0, -1.0, 2.0])
    assert metrics.integral_errors(e, 0.5) == {"IAE": 2.0, "ISE": 3.0}


def test_delay_stats_in_ms():
    d = np.arange(1, 101) / 1000.0  # 1..100 ms
    s = metrics.delay_stats(d)
    assert s["n"] == 100 and s["mean_ms"] == pytest.approx(50.5) and s["p50_ms"] == pytest.approx(50.5)
    assert s["p99_ms"] == pytest.approx(99.01) and s["max_ms"] == pytest.approx(100.0)
    assert math.isnan(metrics.delay_stats([])["mean_ms"])


def test_period_and_delivery():
    arrivals = np.array([0.0, 0.02, 0.04, 0.07])
    p = metrics.period_stats(arrivals)
    assert p["mean_ms"] == pytest.approx(70 / 3) and p["std_ms"] == pytest.approx(np.std([20, 20, 30], ddof=1))
    assert metrics.delivery_ratio([0, 1, 2, 3], [0, 2, 2, 3]) == 0.75
