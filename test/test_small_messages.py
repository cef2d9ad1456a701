"""11-byte payloads (the scalability study's 'Hello World', ``payload_bytes: 11``) cross every
transport: real runs over a link of two namespaces, one run per transport, an echo flow
(there and back, as the study measured it) and a one-way flow; every message arrives with
its 51 serialized bytes (netloop/LoopSample's 40 and the 11-byte payload)."""
from __future__ import annotations

import os

import pytest
from campaign_helpers import recorded_flows, run_campaign

from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.records import read_events
from netloop.rundir import read_metadata
from netloop.transports import transport_names

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")

COUNT = 20


@pytest.mark.integration
@needs_root
def test_eleven_byte_payloads_cross_every_transport(tmp_path):
    hello = {"payload_bytes": 11, "period": 0.02, "count": COUNT, "start_delay": 0.5}
    _, out = run_campaign(tmp_path, {"link": "ethernet", "transport": "all", "loop": {"type": "none"},
                                     "flows": [{"name": "hello", "kind": "echo", **hello},
                                               {"name": "oneway", "kind": "generic", **hello}]}, "hello")
    runs = {read_metadata(run)["experiment"]["transport"]: run for run in sorted((out / "runs").iterdir())}
    assert sorted(runs) == sorted(transport_names())
    failed = {}
    for transport, run in runs.items():
        meta = read_metadata(run)
        if meta["status"] != "complete":
            failed[transport] = meta.get("error")
            continue
        for flow, record in zip(recorded_flows(run), ("flow_hello_rx.csv", "flow_oneway_rx.csv")):
            f = analyse_flow(run, flow)
            sent = read_events(run / "records" / f"flow_{flow.name}_tx.csv")
            sizes = set(read_events(run / "records" / record).bytes.tolist()) | set(sent.bytes.tolist())
            if not (f.ok and f.sent == COUNT and f.MDR == 1.0 and sizes == {51} and f.payload_bytes == 11):
                failed[f"{transport} {flow.name}"] = (f.problems, f.sent, f.MDR, sizes)
    assert not failed, failed
