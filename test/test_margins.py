"""The loop's margins (analysis.margins): closed-form cases, python-control's margins of the
continuous loop, and netloop's own loop model (baseline.simulate_loop, the exact replay of
rlc_plant and loop_controller that test_prediction checks against the real nodes) just inside
and just outside the computed delay margin; the jitter margin's published continuous criterion
and its sampled counterpart; the hold delays a run's jitter is measured with."""
from __future__ import annotations

import math

import control
import numpy as np
import pytest

from netloop.analysis import baseline, loop_timing, margin_report
from netloop.analysis import margins as m
from netloop.analysis.results import LoopTiming

RLC = baseline.rlc_state_space(1.0, 0.1, 0.1)
T = 0.02
P_CONTROL = control.tf([1.0], [1.0], T)
INTEGRATOR = control.ss([[0.0]], [[1.0]], [[1.0]], [[0.0]])


def loop_cfg(K=1.0, Ki=0.0, Kd=0.0, samples=100):
    return {"plant": {"R": 1.0, "L": 0.1, "C": 0.1, "period": T, "initial_state": [0.0, 0.0]},
            "controller": {"K": K, "Ki": Ki, "Kd": Kd, "reference": 1.0}, "samples": samples}


@pytest.fixture(scope="module")
def rlc_margins():
    return m.margins(RLC, P_CONTROL, T, control.tf([1.0], [1.0]), boundary_points=8)


# -- closed forms -------------------------------------------------------------------------------

@pytest.mark.parametrize("K,h", [(10.0, 0.1), (15.0, 0.1), (19.0, 0.1)])
def test_integrator_under_p_control(K, h):
    """x' = u, u = -K x: continuous delay margin pi / (2K) (90° at crossover K); sampled with a
    delay tau < h, x(k+1) = (1 - K (h - tau)) x(k) - K tau x(k-1), stable while K tau < 1 (Jury),
    so for 1 <= K h < 2 the sampled delay margin is exactly 1 / K. Kao & Lincoln's jitter margin
    of the continuous loop: max_w w |K / (iw + K)| = K, so 1 / K."""
    assert m.delay_margin(INTEGRATOR, control.tf([K], [1.0])) == pytest.approx(math.pi / (2 * K), rel=1e-9)
    assert m.delay_margin(INTEGRATOR, control.tf([K], [1.0], h), h) == pytest.approx(1.0 / K, abs=1e-8)
    assert m.jitter_margin(INTEGRATOR, control.tf([K], [1.0])) == pytest.approx(1.0 / K, rel=2e-3)


def test_first_order_plant_under_p_control():
    """a / (s + a) under P gain K: continuous crossover a sqrt(K^2 - 1), phase margin
    pi - atan(sqrt(K^2 - 1)); sampled with tau < h the characteristic polynomial is
    z^2 - (phi - K g1) z + K g0 (phi = e^{-ah}, g1 = 1 - e^{-a(h - tau)}, g0 = e^{-a(h - tau)} - phi),
    which for a = 10, h = 0.1, K = 2 loses stability where K g0 = 1: tau = h + ln(1/K + phi) / a."""
    a, K, h = 10.0, 2.0, 0.1
    plant = control.ss([[-a]], [[a]], [[1.0]], [[0.0]])
    wc = a * math.sqrt(K * K - 1)
    continuous = (math.pi - math.atan(math.sqrt(K * K - 1))) / wc
    assert m.delay_margin(plant, control.tf([K], [1.0])) == pytest.approx(continuous, rel=1e-9)
    sampled = h + math.log(1 / K + math.exp(-a * h)) / a
    assert m.delay_margin(plant, control.tf([K], [1.0], h), h) == pytest.approx(sampled, abs=1e-8)
    assert m.is_stable(plant, control.tf([K], [1.0], h), h, 0.99 * sampled)
    assert not m.is_stable(plant, control.tf([K], [1.0], h), h, 1.01 * sampled)


def test_sampled_plant_is_c2d_and_a_whole_period_is_one_sample():
    """No delay: python-control's ZOH discretisation; a delay of one period: the same times z^-1."""
    zoh = control.c2d(RLC, T, "zoh")
    theta = np.linspace(0.05, 3.0, 7)
    z = np.exp(1j * theta)
    for delay, shift in ((0.0, 1.0), (T, 1 / z)):
        got = np.array([complex(m.sampled_plant(RLC, T, delay)(zi)) for zi in z])
        np.testing.assert_allclose(got, np.array([complex(zoh(zi)) for zi in z]) * shift, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="delay must be finite and >= 0"):
        m.sampled_plant(RLC, T, -0.001)


# -- the RLC loop of the default experiment -------------------------------------------------------

def test_continuous_rlc_margins_are_python_controls(rlc_margins):
    """R 1, L 0.1, C 0.1 under K 1: |G| = 1 at 10 rad/s with 90° of phase, so the delay margin
    is pi / 20 s = 157 ms; as sampled every 20 ms the hold costs about T/2 of it."""
    gm, pm, _sm, _wpc, wgc, _wms = control.stability_margins(RLC)
    assert rlc_margins.continuous_phase_margin_deg == pytest.approx(pm) == pytest.approx(90.0, abs=1e-6)
    assert rlc_margins.continuous_crossover_rad_s == pytest.approx(wgc) == pytest.approx(10.0, abs=1e-6)
    assert math.isinf(rlc_margins.continuous_gain_margin) and math.isinf(gm)
    assert rlc_margins.continuous_delay_margin_s == pytest.approx(math.radians(pm) / wgc) == pytest.approx(math.pi / 20)
    assert rlc_margins.continuous_delay_margin_s - T / 2 - 0.001 < rlc_margins.delay_margin_s \
        < rlc_margins.continuous_delay_margin_s - T / 2 + 0.001
    sgm, spm, _s, _w, swgc, _wm = control.stability_margins(control.ss(P_CONTROL) * control.c2d(RLC, T, "zoh"))
    assert (rlc_margins.gain_margin, rlc_margins.phase_margin_deg, rlc_margins.crossover_rad_s) == \
        pytest.approx((sgm, spm, swgc))


def _oscillation_growth(y: np.ndarray, final: float) -> float:
    """How much the oscillation about ``final`` grew from the second fifth of the run to the last."""
    n = len(y) // 5
    return float(np.max(np.abs(y[-n:] - final)) / np.max(np.abs(y[n:2 * n] - final)))


@pytest.mark.parametrize("controller", [{"K": 1.0}, {"K": 0.8, "Ki": 2.0}])
def test_netloops_loop_model_is_stable_just_inside_the_delay_margin_only(controller):
    """The loop as netloop replays its runs (the same exact model and the same actuator rule as
    the nodes) with a constant loop delay 3 % below the computed sampled margin settles, 3 %
    above it oscillates ever wider (160 s of loop: so near the margin the oscillation grows or
    decays by a few per mille per period); for P and for PI control."""
    n = 8000
    cfg = loop_cfg(samples=n)
    cfg["controller"] = {"K": 1.0, "Ki": 0.0, "Kd": 0.0, "reference": 1.0} | controller
    dm = m.delay_margin(RLC, baseline.controller_tf(cfg), T)
    assert 0.05 < dm < 0.5
    final = baseline.local_baseline(cfg, n).y[-1]
    inside = baseline.simulate_loop(cfg, np.full(n, 0.97 * dm)).y
    outside = baseline.simulate_loop(cfg, np.full(n, 1.03 * dm)).y
    assert _oscillation_growth(inside, final) < 0.8
    assert _oscillation_growth(outside, final) > 1.25


# -- the jitter margin ---------------------------------------------------------------------------

def test_jitter_margin_tends_to_kao_lincoln_as_the_loop_samples_faster(rlc_margins):
    """The sampled criterion is the continuous one (Kao & Lincoln: 1 / max w |T|, 0.1 s for the
    RLC loop) plus what sampling and the hold cost, which vanishes as T -> 0."""
    assert rlc_margins.continuous_jitter_margin_s == pytest.approx(0.1, rel=1e-3)
    fast = m.jitter_margin(RLC, control.tf([1.0], [1.0], 0.001), 0.001)
    assert fast == pytest.approx(rlc_margins.continuous_jitter_margin_s, rel=0.01)
    assert 0.8 * fast < rlc_margins.jitter_margin_s < fast


def test_jitter_margin_never_exceeds_what_a_constant_delay_allows(rlc_margins):
    """A constant delay L + J is one of the delays the jitter margin J at L covers: J can never
    reach the delay margin less L; the boundary falls to 0 at the delay margin."""
    dm = rlc_margins.delay_margin_s
    for L, J in zip(rlc_margins.boundary_delay_s, rlc_margins.boundary_jitter_s):
        assert 0 <= J <= dm - L + 1e-9
    assert rlc_margins.boundary_jitter_s[-1] == 0.0
    assert list(rlc_margins.boundary_jitter_s) == sorted(rlc_margins.boundary_jitter_s, reverse=True)
    assert rlc_margins.jitter_at(0.0) == pytest.approx(rlc_margins.jitter_margin_s)
    assert rlc_margins.jitter_at(dm) == 0.0


def test_delays_varying_within_the_jitter_margin_keep_the_loop_stable(rlc_margins):
    """netloop's loop model under delays that jump within [L, L + J_m(L)] (every sample its own
    draw, and a slow square wave of the delay near the loop's resonance) stays stable: what the
    criterion guarantees, checked on the replay."""
    cfg = loop_cfg(samples=3000)
    final = baseline.local_baseline(cfg, 3000).y[-1]
    rng = np.random.default_rng(5)
    for L in (0.0, 0.05):
        J = rlc_margins.jitter_at(L)
        for delays in (L + J * rng.random(3000), L + J * (np.sin(np.arange(3000) * T * 2 * math.pi / 0.6) > 0)):
            y = baseline.simulate_loop(cfg, delays).y
            assert np.all(np.isfinite(y)) and _oscillation_growth(y, final) < 1.0


def test_hold_delays_cover_a_lost_answer_with_the_next_one():
    """Sample 1's answer is lost: the plant holds sample 0's u until sample 2's arrives, 2 T + 5 ms
    after sample 1... less the sample's own time: its hold delay is T + 5 ms. The last sample's
    answer never came: no hold delay (the run ended)."""
    times = np.arange(5) * T
    delays = np.array([0.004, np.inf, 0.005, 0.030, np.inf])
    hold = loop_timing.hold_delays(times, delays)
    np.testing.assert_allclose(hold[:4], [0.004, T + 0.005, 0.005, 0.030])
    assert math.isinf(hold[4])


def test_expectations_and_their_agreement_with_what_the_runs_did(rlc_margins):
    """Inside the jitter margin: stable, guaranteed, and an unstable run contradicts it; a median
    loop delay beyond the delay margin: unstable expected, and a settled run contradicts that."""
    timing = _timing
    dm = 1e3 * rlc_margins.delay_margin_s
    near = margin_report.expectation(timing(1.0, 5.0, 1.0 + 0.9 * 1e3 * rlc_margins.jitter_at(0.001)), rlc_margins)
    assert near[1:] == ("near", margin_report.GUARANTEED)
    assert margin_report.expectation(timing(1.0, 20.0, 200.0), rlc_margins)[1:] == ("beyond", margin_report.OPEN)
    assert margin_report.expectation(timing(dm + 5, dm + 30, dm + 80), rlc_margins)[1:] == (
        "beyond", margin_report.UNSTABLE)
    assert margin_report.agreement(margin_report.GUARANTEED, {"settled": 2}) == (True, "agrees (2 settled)")
    agrees, text = margin_report.agreement(margin_report.GUARANTEED, {"settled": 1, "unstable": 1})
    assert agrees is False and text.startswith("DISAGREES") and "1 of 2" in text
    assert margin_report.agreement(margin_report.UNSTABLE, {"did not settle": 2})[0] is True
    assert margin_report.agreement(margin_report.UNSTABLE, {"settled": 1})[0] is False
    assert margin_report.agreement(margin_report.OPEN, {"unstable": 1})[0] is None


def _timing(L: float, p50: float, hold_max: float) -> LoopTiming:
    """A run's loop timing [ms]: smallest delay L, median p50, largest hold delay hold_max."""
    return LoopTiming(samples=100, answered=100, min_ms=L, p50_ms=p50, p99_ms=hold_max, max_ms=hold_max,
                      hold_p99_ms=hold_max, hold_max_ms=hold_max)
