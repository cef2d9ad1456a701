"""``netloop bench``: a component whose dependency is missing here is reported by name in
bench.md, not hidden (the other figures are kept)."""
from __future__ import annotations

import importlib

from netloop import bench


def test_a_missing_dependency_of_a_bench_part_is_named(monkeypatch):
    real = importlib.import_module

    def import_module(name, package=None):
        if name in ("netloop.testbed.link_bench", "netloop.sim.sim_bench"):
            raise ModuleNotFoundError("No module named 'pybullet'", name="pybullet")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", import_module)
    for got, what in ((bench.testbed_figures(), "testbed"), (bench._optional("netloop.sim.sim_bench", "simulator"),
                                                             "simulator")):
        assert got == {"skipped": f"{what}: ModuleNotFoundError: No module named 'pybullet'"}
    assert bench._testbed_md(bench.testbed_figures()) == [
        "Skipped: testbed: ModuleNotFoundError: No module named 'pybullet'", ""]
