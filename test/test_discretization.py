"""The plant's exact simulation against python-control, and the local baseline."""
from __future__ import annotations

import json
import subprocess

import control
import numpy as np
import pytest

from netloop import paths
from netloop.analysis import baseline

LOOP = {"plant": {"R": 1.0, "L": 0.1, "C": 0.1, "period": 0.02, "initial_state": [0.0, 0.0]},
        "controller": {"K": 1.0, "Ki": 0.0, "Kd": 0.0, "reference": 1.0}, "samples": 150}


def cpp_zoh(R, L, C, h):
    out = subprocess.run([str(paths.node_binary("rlc_zoh")), repr(R), repr(L), repr(C), repr(h)],
                         capture_output=True, text=True, check=True).stdout
    z = json.loads(out)
    return np.array(z["phi"]), np.array(z["gamma"])


@pytest.mark.parametrize("R,L,C,h", [(1.0, 0.1, 0.1, 0.02), (1.0, 0.1, 0.1, 0.0003), (1.0, 0.1, 0.1, 0.5),
                                     (2.2, 0.05, 0.47, 0.01), (0.1, 1.0, 0.01, 0.02), (10.0, 0.1, 0.1, 0.1)])
def test_cpp_zoh_matches_python_control(R, L, C, h):
    phi, gamma = cpp_zoh(R, L, C, h)
    sysd = baseline.rlc_zoh(R, L, C, h)
    np.testing.assert_allclose(phi, np.asarray(sysd.A), rtol=0, atol=1e-9)
    np.testing.assert_allclose(gamma, np.asarray(sysd.B).ravel(), rtol=0, atol=1e-9)


def test_cpp_zoh_refuses_bad_parameters():
    res = subprocess.run([str(paths.node_binary("rlc_zoh")), "0", "0.1", "0.1", "0.02"], capture_output=True, text=True)
    assert res.returncode == 2 and "R must be a finite number > 0" in res.stderr


def test_baseline_equals_python_control_closed_loop():
    """u(k) = K (r - y(k)) applied at the sample: the closed loop feedback(K G_d, 1)."""
    b = baseline.local_baseline(LOOP)
    Gd = baseline.rlc_zoh(1.0, 0.1, 0.1, 0.02)
    cl = control.feedback(1.0 * Gd, 1)
    resp = control.step_response(cl, T=np.arange(150) * 0.02)
    np.testing.assert_allclose(b.y, np.squeeze(resp.outputs), atol=1e-12)
    assert b.y[-1] == pytest.approx(0.5, abs=1e-3)  # K/(1+K) r


def test_simulate_loop_without_delay_is_the_baseline():
    b = baseline.local_baseline(LOOP)
    s = baseline.simulate_loop(LOOP, np.zeros(150))
    np.testing.assert_allclose(s.y, b.y, atol=1e-12)


def test_simulate_loop_with_a_full_period_delay_is_one_sample_late():
    """Delay = T exactly: u(k) acts from sample k+1, i.e. the loop with one sample of delay."""
    s = baseline.simulate_loop(LOOP, np.full(150, 0.02))
    Phi, Gamma = (np.asarray(m) for m in (baseline.rlc_zoh(1, .1, .1, .02).A, baseline.rlc_zoh(1, .1, .1, .02).B))
    x, u_prev, y = np.zeros(2), 0.0, []
    for _ in range(150):
        y.append(x[0])
        u = 1.0 - x[0]
        x = Phi @ x + Gamma.ravel() * u_prev
        u_prev = u
    np.testing.assert_allclose(s.y, y, atol=1e-9)


def test_delay_increases_overshoot():
    """The 'about 40 %' of the Pound paper: delay adds overshoot to the ~32 % of the local loop."""
    from netloop.analysis.metrics import step_metrics
    ov = [step_metrics(r.t, r.y)["Overshoot"] for r in
          (baseline.simulate_loop(LOOP, np.full(150, d)) for d in (0.0, 0.005, 0.01))]
    assert ov[0] == pytest.approx(34.9, abs=0.3)  # continuous-time loop: 30.5 %; ZOH sampling adds ~T/2 of lag
    assert ov[0] < ov[1] < ov[2]
