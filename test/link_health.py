"""The tests' one policy for runs whose emulated link lagged behind real time.

The userspace shaper and ns-3 run in real time; on a busy machine they can fall behind, and
the runner then marks the run ``invalid`` and records the lag samples under ``link_health``
in its metadata.json. Tests read those numbers, never the error text:

- a test that asserts timing runs through :func:`run_with_healthy_link`: a lagging run is
  run once more, and if it lags again the test is an expected failure (xfail) whose reason
  gives the lag numbers. Timing is never asserted on a run the emulator did not keep up with,
  and never silently skipped. On a real link (machines reached through SSH, which may be
  namespaces joined by an emulator netloop does not watch) there is no lag to read, so a run
  from which the hypervisor took more than :data:`STARVED_STEAL_S` of CPU time counts as lagging.
- a check that does not depend on timing (counts, loss, discovery) accepts a run whose only
  problem is a lagging link: :func:`assert_finished`.
- a number measured directly on a live link that load on the machine can only push one way (a
  round trip only gets longer, a goodput only lower) is measured again when it misses that
  side of its bound: :func:`best_of` (the other side, and everything else, is still asserted
  on the measurement kept).
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Callable, TypeVar

import pytest

from netloop.run_files import load_metadata


T = TypeVar("T")


def best_of(measure: Callable[[], T], good: Callable[[T], bool], tries: int = 3) -> T:
    """``measure()`` up to ``tries`` times until ``good(result)``; returns that result, or the
    last one (whose assertion then fails) with every earlier one reported as a warning. For
    a physics number that a starved emulator or a busy CPU only pushes one way: ``good``
    tests that side alone, so a link that is really slower still fails every try."""
    results = []
    for _ in range(tries):
        results.append(measure())
        if good(results[-1]):
            break
    if len(results) > 1:
        warnings.warn(f"measured {len(results)} times (load on the machine): {results}", stacklevel=2)
    return results[-1]


#: CPU seconds the hypervisor may take from a run on a real link (/proc/stat steal, the run's
#: cpu_steal_s) before its timing is not trusted: a run of a few seconds starved for a fifth of
#: it or more (2026-11-29: 4.9 s stolen during a run through SSH over wifi6 took its loop's
#: RTT p50 from 1.8 to 14.5 ms)
STARVED_STEAL_S = 1.0


def starved_by_hypervisor(steal_s: float | None, runs: int = 1, where: str = "") -> str | None:
    """Why ``runs`` runs' timing is not trusted when the hypervisor took more than
    :data:`STARVED_STEAL_S` of CPU time per run from them (``steal_s``, /proc/stat steal);
    None otherwise or where the kernel does not report steal."""
    steal = steal_s or 0.0
    if steal <= STARVED_STEAL_S * runs:
        return None
    per_run = f"{STARVED_STEAL_S:g} s" + (f" per run, {runs} runs" if runs > 1 else "")
    return f"the hypervisor took {steal:.2f} s of CPU time{where} (more than {per_run})"


def link_lag(meta: dict) -> str | None:
    """How the run's emulated link lagged behind real time, with its numbers; None when the
    link kept up (or has no emulator), or when it is invalid for another reason (e.g. the
    emulator died: that is a failure, not lag). A run on a real link lags when the hypervisor
    starved it (:data:`STARVED_STEAL_S`)."""
    if (meta.get("link") or {}).get("type") == "real":
        return starved_by_hypervisor(meta.get("cpu_steal_s"), where=" on a real link")
    health = meta.get("link_health") or {}
    if health.get("valid", True):
        return None
    late, allowed = health.get("late_fraction"), health.get("late_fraction_allowed") or 0.0
    if not health.get("late_samples") or late is None or (allowed and late <= allowed):
        return None
    return (f"{health['late_samples']} of {health['samples']} lag samples ({late:.2%}, allowed "
            f"{allowed:.2%}) more than {health['lag_bound_ms']:g} ms behind real time; "
            f"max {health['max_lag_ms']:.1f} ms, mean {health['mean_lag_ms']:.2f} ms")


def assert_finished(meta: dict, label: str = "") -> None:
    """The run finished: complete, or invalid only because its emulated link lagged."""
    ok = meta.get("status") == "complete" or (meta.get("status") == "invalid" and link_lag(meta))
    assert ok, f"run {label or meta.get('run_id')} {meta.get('status')}: {meta.get('error')}"


def run_with_healthy_link(run: Callable[[Path], dict[str, Path]], out: Path) -> dict[str, Path]:
    """``run(directory)`` runs one or more experiments into ``directory`` and returns their run
    directories by label. When any of them finished on a lagging link, all run once more (into
    a fresh directory); when a run lags again, the test is marked xfail with the lag numbers.
    Returns the run directories of the attempt whose link kept up."""
    lags: list[str] = []
    for attempt in (1, 2):
        runs = run(Path(out) / f"attempt{attempt}")
        for label, run_dir in runs.items():
            meta = load_metadata(run_dir).to_json()
            assert_finished(meta, label)
            lag = link_lag(meta)
            if lag:
                lags.append(f"attempt {attempt}, {label}: {lag}")
        if not any(s.startswith(f"attempt {attempt},") for s in lags):
            if lags:
                warnings.warn("ran again after the emulated link lagged: " + "; ".join(lags), stacklevel=2)
            return runs
    pytest.xfail("the emulated link lagged behind real time in both attempts (machine busy), so "
                 "its timing cannot be checked: " + "; ".join(lags))
