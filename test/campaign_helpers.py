"""Helpers shared by the test modules that run whole campaigns (imported as `campaign_helpers`)."""
from __future__ import annotations

import json
from pathlib import Path

from netloop.experiment import validate_experiment
from netloop.runner import campaign_dir_for, run_experiment


def run_campaign(tmp_path: Path, doc: dict, name: str) -> tuple[dict, Path]:
    """Validate ``doc``, run every cell into ``tmp_path``; returns (config, campaign dir)."""
    cfg = validate_experiment(doc, name=name)
    out = campaign_dir_for(cfg, tmp_path)
    run_experiment(cfg, out, log=lambda _: None)
    return cfg, out


def relay_stats(run_dir: Path, node: str) -> dict:
    """The last statistics line a relay process wrote in a run."""
    return json.loads((run_dir / "records" / f"relay_{node}_stats.jsonl").read_text().splitlines()[-1])
