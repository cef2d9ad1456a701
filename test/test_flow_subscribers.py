"""One publisher, several subscribers (Maruyama et al., Figs. 17-19): a flow's ``to`` lists
hosts and ``subscribers`` gives the number on each; every subscriber is its own node with its
own record file, connected and checked before the run counts."""
from __future__ import annotations

import csv
import json
import os

import pytest
from campaign_helpers import recorded_flows
from link_health import assert_finished

from netloop.analysis.flow_run import analyse_flow_receivers
from netloop.analysis.records import read_events
from netloop.analysis.report import write_report
from netloop.experiment import validate_experiment
from netloop.flows import sink_names
from netloop.runner import campaign_dir_for, run_experiment
from netloop.schema import ConfigError


def _campaign(tmp_path, doc):
    cfg = validate_experiment(doc, name="subs")
    out = campaign_dir_for(cfg, tmp_path)
    run_experiment(cfg, out, log=lambda _: None)
    return cfg, out


def test_sink_names_are_numbered_only_when_several():
    one = validate_experiment({"flows": [{"name": "img"}]}, name="x").flows[0]
    assert sink_names(one) == [("flow_img_sink", "operator", "flow_img_rx.csv")]
    three = validate_experiment({"flows": [{"name": "img", "subscribers": 3}]}, name="x").flows[0]
    assert [n for n, _, _ in sink_names(three)] == ["flow_img_sink1", "flow_img_sink2", "flow_img_sink3"]


@pytest.mark.integration
def test_three_subscribers_each_receive_every_message(tmp_path):
    _, out = _campaign(tmp_path, {
        "transport": "tcp_nodelay", "loop": {"type": "none"},
        "flows": [{"name": "img", "size_bytes": 16384, "period": 0.02, "count": 60, "subscribers": 3,
                   "start_delay": 0.5}]})
    run = out / "runs" / "tcp_nodelay-r0"
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    assert meta["negotiated_transport"] == {f"/flows/img -> /flow_img_sink{k}": "TCPROS+NODELAY" for k in (1, 2, 3)}
    sent = read_events(run / "records" / "flow_img_tx.csv").select("tx", "/flows/img")
    assert len(sent) == 60
    for k in (1, 2, 3):
        got = read_events(run / "records" / f"flow_img_rx{k}.csv").select("rx", "/flows/img")
        assert sorted(got.seq.tolist()) == sorted(sent.seq.tolist())
        assert (got.recv_ns >= got.stamp_ns).all()
    # the report gives each subscriber its own row, with its own delays
    results = analyse_flow_receivers(run, recorded_flows(run)[0])
    assert [f.subscriber for f in results] == ["#1 on operator", "#2 on operator", "#3 on operator"]
    assert all(f.ok and f.MDR == 1.0 for f in results)
    write_report(out)
    with open(out / "flow_img.csv", newline="") as f:
        rows = {r["subscriber"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"#1 on operator", "#2 on operator", "#3 on operator"}
    for f in results:
        assert float(rows[f.subscriber]["p95 D [ms]"]) == pytest.approx(f.delay["p95_ms"])
    md = (out / "report.md").read_text()
    assert "| tcp_nodelay | #2 on operator | 1 |" in md


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_subscribers_on_two_hosts_of_a_two_hop_link(tmp_path):
    _, out = _campaign(tmp_path, {
        "link": "wifi6_2hop", "transport": "udp", "loop": {"type": "none"},
        "flows": [{"name": "scan", "size_bytes": 2048, "period": 0.05, "count": 40, "from": "relay",
                   "to": ["operator", "robot"], "start_delay": 0.5}]})
    run = out / "runs" / "udp-r0"
    meta = json.loads((run / "metadata.json").read_text())
    assert_finished(meta)   # counts only: a lagging ns-3 link is accepted
    assert set(meta["negotiated_transport"].values()) == {"UDPROS"}
    assert meta["node_uris"]["/flow_scan_sink1"] != meta["node_uris"]["/flow_scan_sink2"]
    for k in (1, 2):
        got = read_events(run / "records" / f"flow_scan_rx{k}.csv").select("rx", "/flows/scan")
        assert len(got) >= 36   # 40 sent, one hop each way from the relay; UDPROS may lose a few


def test_bad_destinations_refused_at_once():
    with pytest.raises(ConfigError) as err:
        validate_experiment({"flows": [{"name": "a", "to": ["operator", "robot"], "subscribers": 0}]}, name="x")
    assert [k for k, _ in err.value.errors] == ["flows[0].subscribers"]
    with pytest.raises(ConfigError) as err:
        validate_experiment({"flows": [{"name": "a", "to": ["operator", "robot"]}]}, name="x")
    assert err.value.key == "flows[0].to[1]" and "a flow must cross the link" in str(err.value)
