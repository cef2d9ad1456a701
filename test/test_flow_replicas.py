"""Vertical scaling (Jordan): ``replicas: N`` starts N independent publisher/subscriber pairs on
the same two hosts, each on its own topic and recorded on its own; sweepable like any key."""
from __future__ import annotations

import csv

import pytest
from campaign_helpers import run_campaign

from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.report import write_report
from netloop.experiment import RunSpec, expand, for_cell, validate_experiment
from netloop.run_files import load_metadata
from netloop.schema import ConfigError


def test_replicas_expand_into_named_flows_and_sweep():
    cfg = validate_experiment({"flows": [{"name": "n", "size_bytes": 4096, "period": 0.01}],
                               "sweep": {"flows[0].replicas": [1, 4, 16]}}, name="v")
    counts = [len(for_cell(cfg, c).experiment.flow_instances) for c in expand(cfg)]
    assert counts == [1, 4, 16]
    four = for_cell(cfg, expand(cfg)[1]).experiment.flow_instances
    assert [f.name for f in four] == ["n_1", "n_2", "n_3", "n_4"] and {f.replicas for f in four} == {1}


def test_replica_names_must_not_collide():
    with pytest.raises(ConfigError, match="flow names n_2 occur twice"):
        validate_experiment({"flows": [{"name": "n", "replicas": 2}, {"name": "n_2"}]}, name="v")


@pytest.mark.integration
def test_three_node_pairs_each_deliver_their_own_topic(tmp_path):
    _, out = run_campaign(tmp_path, {"transport": "tcp_nodelay", "loop": {"type": "none"}, "flows": [
        {"name": "pair", "size_bytes": 4096, "period": 0.01, "count": 75, "replicas": 3, "start_delay": 0.5}]},
        "vertical")
    run = out / "runs" / "tcp_nodelay-r0"
    meta = load_metadata(run).to_json()
    assert meta["status"] == "complete", meta.get("error")
    assert set(meta["negotiated_transport"]) == {"/flows/pair_1", "/flows/pair_2", "/flows/pair_3"}
    for flow in RunSpec.from_metadata(meta["experiment"]).experiment.flow_instances:
        f = analyse_flow(run, flow)
        assert f["ok"] and f["sent"] == 75 and f["MDR"] == 1.0, f


@pytest.mark.integration
def test_swept_node_pairs_in_the_report(tmp_path):
    """A sweep over N: one row per N pooling its pairs, the offered load and the bandwidth of
    the N pairs together, the heading naming every N, and the delay against N."""
    _, out = run_campaign(tmp_path, {"transport": "tcp_nodelay", "loop": {"type": "none"},
                                     "sweep": {"flows[0].replicas": [1, 3]},
                                     "flows": [{"name": "pair", "size_bytes": 4096, "period": 0.01, "count": 100,
                                                "start_delay": 0.5}]}, "vertical")
    assert write_report(out) == out / "report.html"
    md = (out / "report.md").read_text()
    assert "## Flow `pair` (generic, 4096 bytes per message, every 10 ms, 1, 3 replicas (swept))" in md
    assert "figures/flow_pair_scaling.png" in md and "against the swept node pairs N" in md
    with open(out / "flow_pair.csv", newline="") as f:
        rows = {r["setting"]: r for r in csv.DictReader(f)}
    one, three = rows["replicas=1"], rows["replicas=3"]
    assert (one["runs × replicas"], three["runs × replicas"]) == ("1", "3")
    assert float(three["offered [Mbit/s]"]) == pytest.approx(3 * float(one["offered [Mbit/s]"]))
    assert float(three["BW [Mbit/s]"]) == pytest.approx(3 * float(one["BW [Mbit/s]"]), rel=0.05)
