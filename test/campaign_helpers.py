"""Helpers shared by the test modules that run whole campaigns (imported as `campaign_helpers`)."""
from __future__ import annotations

import json
from pathlib import Path

from netloop.analysis import flow_run
from netloop.experiment import validate_experiment
from netloop.model import Experiment, Flow
from netloop.run_files import load_metadata
from netloop.runner import campaign_dir_for, run_experiment


def run_campaign(tmp_path: Path, doc: dict, name: str) -> tuple[Experiment, Path]:
    """Validate ``doc``, run every cell into ``tmp_path``; returns (config, campaign dir)."""
    cfg = validate_experiment(doc, name=name)
    out = campaign_dir_for(cfg, tmp_path)
    run_experiment(cfg, out, log=lambda _: None)
    return cfg, out


def campaign_runs(tmp_path: Path, doc: dict, name: str) -> dict[str, Path]:
    """Runs the campaign like :func:`run_campaign`; returns its run directories by run id
    (e.g. ``{"udp-r0": ...}``), the shape :func:`link_health.run_with_healthy_link` takes."""
    _, out = run_campaign(tmp_path, doc, name)
    return {d.name: d for d in sorted((out / "runs").iterdir())}


def only_run(tmp_path: Path, doc: dict, name: str, timing: bool = True) -> tuple[Path, dict]:
    """The run directory and metadata of a one-cell campaign, under the tests' lag policy
    (:mod:`link_health`): a test that asserts timing (``timing``) gets a run whose link kept up
    (run again once if it lagged; xfail if it lagged twice); one that asserts counts accepts a
    run whose only problem is a lagging link."""
    from link_health import assert_finished, run_with_healthy_link   # noqa: PLC0415
    if timing:
        runs = run_with_healthy_link(lambda where: campaign_runs(where, doc, name), tmp_path)
    else:
        runs = campaign_runs(tmp_path, doc, name)
    assert len(runs) == 1, runs
    run_dir = next(iter(runs.values()))
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert_finished(meta)
    return run_dir, meta


def recorded_flows(run_dir: Path) -> list[Flow]:
    """The flows a run started, typed, as its metadata.json records them (sweep values
    applied, replicas expanded)."""
    flows, problems = flow_run.recorded_flows(load_metadata(run_dir))
    assert not problems, problems
    return [recorded.flow for recorded in flows]


def relay_stats(run_dir: Path, node: str) -> dict:
    """The last statistics line a relay process wrote in a run."""
    return json.loads((run_dir / "records" / f"relay_{node}_stats.jsonl").read_text().splitlines()[-1])
