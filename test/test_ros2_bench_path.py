"""make bench's breakdown of the native Cyclone DDS path (netloop.transports.ros2_bench_path):
the nodes' stage traces joined by seq with the flow's records, and how bench.md states the parts.
Synthetic traces and records in the formats the nodes write; no node runs here."""
from __future__ import annotations

from netloop.transports import ros2_bench, ros2_bench_path

HEADER = "kind,topic,seq,value,stamp_ns,recv_ns,answer_seq,answer_stamp_ns,bytes\n"
T0 = 1_800_000_000_000_000_000


def write_run(tmp_path, n=5):
    """A run whose message k is stamped at T0 + k ms and passes its stages after 10, 15, 150,
    190, 194 and 197 µs (the write call returning at 120 µs); message 5 was never received."""
    traces, records = tmp_path / "stages", tmp_path / "run" / "records"
    traces.mkdir()
    records.mkdir(parents=True)
    pub = ["seq,entered_ns,converted_ns,written_ns"]
    sub = ["seq,delivered_ns,running_ns,converted_ns"]
    tx, rx = [HEADER.strip()], [HEADER.strip()]
    for k in range(n + 1):
        t = T0 + k * 1_000_000
        pub.append(f"{k},{t + 10_000},{t + 15_000},{t + 135_000}")
        tx.append(f"tx,/flows/probe,{k},0,{t},-1,-1,-1,4096")
        if k < n:
            sub.append(f"{k},{t + 150_000},{t + 190_000},{t + 194_000}")
            rx.append(f"rx,/flows/probe,{k},0,{t},{t + 197_000},-1,-1,4096")
    (traces / "flow_probe_source__flows_probe.pub.stages.csv").write_text("\n".join(pub) + "\n")
    (traces / "flow_probe_sink__flows_probe.sub.stages.csv").write_text("\n".join(sub) + "\n")
    (records / "flow_probe_tx.csv").write_text("\n".join(tx) + "\n")
    (records / "flow_probe_rx.csv").write_text("\n".join(rx) + "\n")
    return traces, records.parent


def test_the_stages_of_every_received_message_from_its_stamp(tmp_path):
    b = ros2_bench_path.stage_breakdown(*write_run(tmp_path))
    assert b["messages"] == 5
    assert b["from_stamp_us"] == {"entered": 10.0, "converted": 15.0, "delivered": 150.0, "running": 190.0,
                                  "converted_back": 194.0, "recorded": 197.0}
    assert b["parts_us"] == {"entered": 10.0, "converted": 5.0, "delivered": 135.0, "running": 40.0,
                             "converted_back": 4.0, "recorded": 3.0}
    assert b["cyclone_write_call_us"] == 120.0


def test_without_traces_the_breakdown_says_so(tmp_path):
    assert "no stage trace" in ros2_bench_path.stage_breakdown(tmp_path, tmp_path)["error"]


def test_bench_md_states_the_parts_and_ddsperfs_half_round_trip(tmp_path):
    stages = ros2_bench_path.stage_breakdown(*write_run(tmp_path))
    r = {"message_bytes": 4096, "rate_hz": 50.0, "latency": {"loopback": {"cyclonedds": {"run": "complete",
                                                                                          "D_p50_ms": 0.197}}},
         "stages": {"loopback": stages},
         "ddsperf": {"loopback": {"seconds": 10, "round_trips": 500, "half_rtt_us": 110.0,
                                  "half_rtt_mean_us_range": [100.0, 130.0]}},
         "pingpong": {"loopback": {"ping_one_way_us": {"p50": 140.0}, "pong_one_way_us": {"p50": 50.0},
                                   "half_round_trip_us": 96.0}},
         "goal": {"loopback": {"netloop_cyclonedds_one_way_p50_ms": 0.197, "ratio": 1.79, "goal": 1.5,
                               "meets_goal": False}}}
    text = "\n".join(ros2_bench.markdown(r))
    assert "ddsperf prints half the round trip" in text
    assert "| loopback | 10 | 500 | 110.0 | 100–130 | 0.197 | 1.79 (missed) |" in text
    assert "| taken by the sink's own thread (roscpp's callback queue) | 190.0 | 40.0 |" in text
    assert "| loopback | 140.0 | 50.0 | 96.0 | 110.0 |" in text
    assert ("**loopback**: 1.79× ddsperf's half round trip (missed; goal ≤ 1.5). Of the traced messages' 197.0 µs: "
            "netloop's conversions and record 22.0 µs, Cyclone's leg 135.0 µs, the hand-off to the sink's thread "
            "40.0 µs.") in text


def test_ddsperf_lines_are_read_as_printed():
    line = ("[1] 3.000  vm:1 size 4096 mean 138.858us min 80.654us 50% 137.174us 90% 188.390us 99% 211.229us "
            "max 211.229us cnt 50")
    assert ros2_bench.parse_ddsperf(line) == [{"size": 4096, "mean_us": 138.858, "min_us": 80.654, "p50_us": 137.174,
                                               "p90_us": 188.39, "p99_us": 211.229, "max_us": 211.229, "count": 50}]
