"""``netloop bench``: a component whose dependency is missing here is reported by name in
bench.md, not hidden (the other figures are kept)."""
from __future__ import annotations

import importlib

from netloop import bench_suite


def test_a_missing_dependency_of_a_bench_part_is_named(monkeypatch):
    real = importlib.import_module

    def import_module(name, package=None):
        if name in ("netloop.testbed.link_bench", "netloop.sim.sim_bench"):
            raise ModuleNotFoundError("No module named 'pybullet'", name="pybullet")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", import_module)
    for got, what in ((bench_suite.testbed_figures(), "testbed"),
                      (bench_suite._optional("netloop.sim.sim_bench", "simulator"), "simulator")):
        assert got == {"skipped": f"{what}: ModuleNotFoundError: No module named 'pybullet'"}
    assert bench_suite._testbed_md(bench_suite.testbed_figures()) == [
        "Skipped: testbed: ModuleNotFoundError: No module named 'pybullet'", ""]


def test_only_runs_the_parts_asked_and_keeps_the_others_figures(tmp_path, monkeypatch):
    import json

    import pytest
    calls = []

    def part(name, value):
        def run(out, work):
            calls.append(name)
            return value
        return run

    monkeypatch.setattr(bench_suite, "PARTS", {"testbed": ("t", part("testbed", {"skipped": "first"})),
                                         "priority": ("p", part("priority", {"skipped": "second"}))})
    assert bench_suite.main(tmp_path) == 0 and calls == ["testbed", "priority"]
    first = json.loads((tmp_path / "bench.json").read_text())
    monkeypatch.setattr(bench_suite, "PARTS",
                        dict(bench_suite.PARTS, priority=("p", part("priority", {"skipped": "again"}))))
    assert bench_suite.main(tmp_path, "priority") == 0 and calls[-1] == "priority" and len(calls) == 3
    got = json.loads((tmp_path / "bench.json").read_text())
    assert got["testbed"] == {"skipped": "first"} and got["priority"] == {"skipped": "again"}
    assert got["dates"]["testbed"] == first["dates"]["testbed"]
    assert "Skipped: again" in (tmp_path / "bench.md").read_text()
    with pytest.raises(ValueError, match="unknown part nope; one or more of testbed, priority"):
        bench_suite.parse_only("priority,nope")
