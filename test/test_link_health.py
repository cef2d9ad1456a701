"""The tests' lag policy (test/link_health.py) on run directories whose metadata.json holds
the link health the runner records: healthy, lagging, and invalid for another reason."""
from __future__ import annotations

import json

import pytest
from link_health import assert_finished, link_lag, run_with_healthy_link, starved_by_hypervisor

HEALTHY = {"valid": True, "reason": "ok", "lag_bound_ms": 5, "max_lag_ms": 1.2, "mean_lag_ms": 0.3,
           "late_fraction": 0.0, "late_fraction_allowed": 0.001, "samples": 4000, "late_samples": 0}
LAGGED = dict(HEALTHY, valid=False, reason="ns-3 was more than 5 ms behind real time", max_lag_ms=48.5,
              mean_lag_ms=2.25, late_fraction=0.03, late_samples=120)
EMULATOR_DIED = dict(HEALTHY, valid=False, reason="ns-3 exited unexpectedly (code -9)")


def write_run(run_dir, health):
    run_dir.mkdir(parents=True)
    status = "complete" if health["valid"] else "invalid"
    (run_dir / "metadata.json").write_text(json.dumps({
        "format": "netloop-run/1", "run_id": run_dir.name, "status": status, "link_health": health,
        "error": None if health["valid"] else f"link emulation invalid: {health['reason']}"}))
    return run_dir


def runs_with(*healths):
    """A run function whose n-th call writes one run with the n-th link health."""
    calls = []

    def run(out):
        calls.append(out)
        return {"udp-r0": write_run(out / "udp-r0", healths[len(calls) - 1])}
    return run, calls


def test_lag_is_read_from_the_numbers():
    assert link_lag({"status": "complete", "link_health": HEALTHY}) is None
    assert link_lag({"status": "complete"}) is None                       # no emulator on the link
    lag = link_lag({"status": "invalid", "link_health": LAGGED})
    assert "120 of 4000" in lag and "3.00%" in lag and "max 48.5 ms" in lag
    assert link_lag({"status": "invalid", "link_health": EMULATOR_DIED}) is None


def test_a_run_on_a_real_link_lags_when_the_hypervisor_starved_it():
    """Through SSH netloop watches no emulator: the steal of the run's CPU time is the measure."""
    real = {"status": "complete", "link": {"type": "real"}}
    assert link_lag(dict(real, cpu_steal_s=0.12)) is None
    assert link_lag(dict(real, cpu_steal_s=None)) is None                 # no /proc/stat steal here
    assert "4.88 s of CPU time on a real link" in link_lag(dict(real, cpu_steal_s=4.88))
    assert link_lag({"status": "complete", "link": {"type": "wifi6"}, "cpu_steal_s": 4.88}) is None


def test_steal_is_allowed_per_run():
    """Measurements over several runs (e.g. a testbed's pairs of runs) get the allowance of each."""
    assert starved_by_hypervisor(3.5, runs=4) is None
    assert "4.50 s of CPU time (more than 1 s per run, 4 runs)" in starved_by_hypervisor(4.5, runs=4)


def test_a_healthy_run_runs_once(tmp_path):
    run, calls = runs_with(HEALTHY)
    assert run_with_healthy_link(run, tmp_path) == {"udp-r0": tmp_path / "attempt1" / "udp-r0"}
    assert len(calls) == 1


def test_a_lagging_run_is_run_again_and_says_so(tmp_path):
    run, calls = runs_with(LAGGED, HEALTHY)
    with pytest.warns(UserWarning, match="lagged: attempt 1, udp-r0: 120 of 4000"):
        runs = run_with_healthy_link(run, tmp_path)
    assert runs == {"udp-r0": tmp_path / "attempt2" / "udp-r0"} and len(calls) == 2


def test_lagging_twice_is_an_expected_failure_with_the_numbers(tmp_path):
    run, calls = runs_with(LAGGED, LAGGED)
    with pytest.raises(pytest.xfail.Exception, match="attempt 2, udp-r0: 120 of 4000 .* max 48.5 ms"):
        run_with_healthy_link(run, tmp_path)
    assert len(calls) == 2


def test_an_emulator_that_died_is_a_failure_not_lag(tmp_path):
    run, calls = runs_with(EMULATOR_DIED)
    with pytest.raises(AssertionError, match="exited unexpectedly"):
        run_with_healthy_link(run, tmp_path)
    with pytest.raises(AssertionError, match="invalid"):
        assert_finished({"status": "invalid", "link_health": EMULATOR_DIED, "error": "x"})
    assert len(calls) == 1
