"""Campaigns: the matrix of transports x sweep values x repetitions, and resuming one."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
import yaml

from netloop import paths
from netloop.experiment import expand, for_cell, set_path, validate_experiment
from netloop.master import wait_for
from netloop.schema import ConfigError


def test_matrix_expansion_order_and_ids():
    cfg = validate_experiment({"link": "shaped", "transport": ["tcp", "udp"], "repetitions": 2,
                               "sweep": {"link_params.delay_ms": [0, 20], "loop.controller.K": [1.0, 2.0]}},
                              name="m")
    cells = expand(cfg)
    assert len(cells) == 2 * 2 * 2 * 2
    assert len({c.run_id for c in cells}) == len(cells)
    assert [c.repetition for c in cells[:8]] == [0] * 8    # repetition by repetition
    assert cells[0].run_id == "tcp__delay_ms=0__K=1.0-r0"
    assert cells[3].condition == "tcp delay_ms=20 K=2.0"
    run = for_cell(cfg, cells[3])
    assert run.experiment.link_params["delay_ms"] == 20 and run.experiment.loop.controller.K == 2.0
    assert run.transport == "tcp" and run.settings == {"link_params.delay_ms": 20, "loop.controller.K": 2.0}
    meta = run.metadata()   # what metadata.json records: plain data, the run's one transport and its cell
    assert meta["transport"] == "tcp" and meta["cell"]["settings"] == run.settings
    assert meta["loop"]["controller"]["K"] == 2.0 and meta["flows"] == []


def test_sweep_of_flow_size_and_all_transports():
    cfg = validate_experiment({"transport": "all", "flows": [{"name": "img", "size_bytes": 1024}],
                               "sweep": {"flows[0].size_bytes": [1024, 65536]}}, name="m")
    cells = expand(cfg)
    from netloop.transports import transport_names
    assert cfg.transport == transport_names()
    assert {for_cell(cfg, c).experiment.flows[0].size_bytes for c in cells} == {1024, 65536}


def test_zip_sweep_varies_keys_together():
    """Pound Fig. 19: size and period varied together (a constant offered load), crossed with
    the other axes."""
    cfg = validate_experiment({"flows": [{"name": "bulk"}], "transport": ["tcp", "udp"], "sweep": {
        "zip": {"flows[0].size_bytes": [1024, 4096, 16384], "flows[0].period": [0.001, 0.004, 0.016]},
        "loop.controller.K": [1.0, 2.0]}}, name="z")
    cells = expand(cfg)
    assert len(cells) == 2 * 3 * 2
    loads = set()
    for c in cells:
        flow = for_cell(cfg, c).experiment.flows[0]
        loads.add(round(flow.size_bytes / flow.period))
    assert loads == {1024_000}
    assert cells[0].condition == "tcp size_bytes=1024 period=0.001 K=1.0"


@pytest.mark.parametrize("zip_,words", [
    ({"flows[0].size_bytes": [1024, 2048], "flows[0].period": [0.1]},
     "sweep.zip: the lists of a zip group must have equal lengths, got flows[0].size_bytes: 2, flows[0].period: 1"),
    ({"flows[0].size_bytes": [1024, 2048]}, "sweep.zip: expected a mapping of at least two key paths"),
    ([{"flows[0].size_bytes": [1, 2], "flows[0].period": [0.1, 0.2]}, {"loop.controller.K": 3}],
     "sweep.zip[1]: expected a mapping of at least two key paths"),
    ({"flows[0].size_bytes": [1024, 1024], "flows[0].period": [0.1, 0.2]}, "values must be distinct"),
])
def test_bad_zip_sweeps_refused(zip_, words):
    with pytest.raises(ConfigError) as err:
        validate_experiment({"flows": [{"name": "bulk"}], "sweep": {"zip": zip_}}, name="z")
    assert words in str(err.value)


@pytest.mark.parametrize("sweep,words", [
    ({"link_params.delay_ms": [5, -1]}, "sweep (link_params.delay_ms=-1): link_params.delay_ms"),
    ({"loop.plant.Q": [1]}, "loop.plant.Q: unknown key"),
    ({"flows[2].size_bytes": [10]}, "sweep.flows[2].size_bytes: no such key"),
    ({"loop.controller.K": []}, "sweep.loop.controller.K: expected a non-empty list of values"),
])
def test_bad_sweeps_refused(sweep, words):
    with pytest.raises(ConfigError) as err:
        validate_experiment({"link": "shaped", "sweep": sweep}, name="m")
    assert words in str(err.value)


def test_set_path():
    doc = {"a": {"b": [{"c": 1}, {"c": 2}]}}
    set_path(doc, "a.b[1].c", 5)
    assert doc["a"]["b"][1]["c"] == 5
    with pytest.raises(IndexError):
        set_path(doc, "a.b[4].c", 1)


@pytest.mark.integration
def test_interrupted_campaign_resumes_with_every_cell_exactly_once(tmp_path):
    exp = tmp_path / "camp.yaml"
    exp.write_text(yaml.safe_dump({"name": "camp", "transport": ["tcp_nodelay", "udp"], "repetitions": 2,
                                   "loop": {"samples": 40}}))
    results = tmp_path / "results"
    netloop = [str(paths.REPO / ".venv/bin/python"), "-m", "netloop", "run"]
    env = dict(os.environ, PYTHONPATH=str(paths.REPO / "src"))
    proc = subprocess.Popen(netloop + [str(exp), "--out", str(results)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def campaign():
        found = list(results.glob("camp-*"))
        return found[0] if found else None

    def cells_done():
        c = campaign()
        if c is None or not (c / "campaign.json").exists():
            return 0
        return sum(r["status"] == "complete" for r in json.loads((c / "campaign.json").read_text())["cells"])
    assert wait_for(lambda: cells_done() >= 2, 120), proc.communicate(timeout=5)[0].decode()[-2000:]
    proc.send_signal(signal.SIGTERM)   # interrupt the third cell (or between cells)
    out = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 130 and "--resume" in out
    camp = campaign()
    done_before = {r["run_id"] for r in json.loads((camp / "campaign.json").read_text())["cells"]
                   if r["status"] == "complete"}
    assert 2 <= len(done_before) < 4
    mtimes = {r: (camp / "runs" / r / "metadata.json").stat().st_mtime for r in done_before}

    res = subprocess.run(netloop + ["--resume", str(camp)], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"resuming: {len(done_before)} of 4 cells done" in res.stdout
    runs = sorted(p.name for p in (camp / "runs").iterdir())
    assert runs == sorted(["tcp_nodelay-r0", "udp-r0", "tcp_nodelay-r1", "udp-r1"])
    cells = json.loads((camp / "campaign.json").read_text())["cells"]
    assert [c["status"] for c in cells] == ["complete"] * 4
    for r, mtime in mtimes.items():     # the done cells were not run again
        assert (camp / "runs" / r / "metadata.json").stat().st_mtime == mtime
    assert (camp / "report.md").exists()
