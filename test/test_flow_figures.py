"""The flow report's figures on synthetic records (analysis.synthetic, no ROS): the delay
against the message number run by run (the scalability study's figure), and the scaling
figure's curves keyed by every swept key, not by transport only; and the 11-byte payload of
the flow model (payload_bytes)."""
from __future__ import annotations

import numpy as np
import pytest

from netloop.analysis import flow_sections, sequence_figure
from netloop.analysis.report import analyse_run, write_report
from netloop.analysis.synthetic import write_campaign
from netloop.experiment import validate_experiment
from netloop.flows import message_bytes
from netloop.schema import ConfigError

MESSAGES = 1200


def _echo(**extra) -> dict:
    return {"name": "hello", "kind": "echo", "payload_bytes": 11, "period": 0.001, "count": MESSAGES, **extra}


def _ramp(cell, run_cfg, name, rng) -> np.ndarray:
    """1 ms, growing by 1 ms every 100 messages on udp; every 97th message lost; the
    repetition adds 0.5 ms (so the runs' mean is known)."""
    k = np.arange(MESSAGES)
    d = 1e-3 * (1.0 + (k // 100 if cell.transport == "udp" else 0 * k)) + 0.5e-3 * cell.repetition
    d[k % 97 == 5] = np.nan
    return d


@pytest.fixture(scope="module")
def sequence_campaign(tmp_path_factory):
    out = write_campaign(tmp_path_factory.mktemp("seq") / "c", {
        "name": "seq", "transport": ["tcp", "udp"], "repetitions": 2, "loop": {"type": "none"},
        "flows": [_echo()]}, _ramp)
    write_report(out)
    return out


def test_each_message_keeps_its_number_and_delay(sequence_campaign):
    a = analyse_run(sequence_campaign / "runs" / "udp-r1")
    f = a.flows[0]
    assert f.size_bytes == 51 and f.payload_bytes == 11            # 40 + the 11-byte payload
    assert len(f.message_numbers) == len(f.delays_ms) == MESSAGES - len(range(5, MESSAGES, 97))
    trace = sequence_figure.run_trace([f])
    k = np.arange(MESSAGES)
    expected = np.where(k % 97 == 5, np.nan, 1.0 + k // 100 + 0.5)
    np.testing.assert_allclose(trace, expected, atol=1e-6)           # a lost message is a gap (NaN)


def test_the_report_draws_the_delay_against_the_message_number(sequence_campaign):
    md = (sequence_campaign / "report.md").read_text()
    assert "## Flow `hello` (echo, 51 bytes per message, 11-byte payload, every 1 ms" in md
    assert "figures/flow_hello_sequence.png" in md
    assert (sequence_campaign / "figures" / "flow_hello_sequence.png").stat().st_size > 10_000
    caption = md.split("figures/flow_hello_sequence.png)", 1)[1].strip().split("\n", 1)[0]
    assert "against its number" in caption and "mean of the runs" in caption and "lost message" in caption
    assert "medians of consecutive" not in caption                  # 1,200 messages: every one drawn


def test_runs_mean_per_message_number_and_long_runs_thinned():
    runs = [np.array([1.0, 2.0, np.nan, 4.0]), np.array([3.0, 4.0, 5.0])]
    np.testing.assert_allclose(sequence_figure._mean_of_runs(runs), [2.0, 3.0, 5.0, 4.0])
    trace = np.arange(10_000, dtype=float)
    trace[:20] = np.nan                                              # a whole bin lost stays a gap
    x, y, per = sequence_figure.thinned(trace)
    assert per == 7 and len(x) == len(y) <= sequence_figure.MAX_POINTS
    assert np.isnan(y[0]) and y[3] == np.median(trace[21:28]) and x[3] == 21
    x, y, per = sequence_figure.thinned(trace[:1000])
    assert per == 1 and len(y) == 1000


def _by_link(cell, run_cfg, name, rng) -> np.ndarray:
    """Round trip 1 ms on ethernet; on wifi6 it grows 20-fold from 4 replicas on."""
    s = dict(cell.settings)
    base = 1e-3 if s["link"] == "ethernet" else (2e-3 if s["flows[0].replicas"] < 4 else 40e-3)
    return np.full(50, base * (2 if cell.transport == "udp" else 1))


def test_scaling_curves_keep_a_second_swept_key_apart(tmp_path):
    out = write_campaign(tmp_path / "c", {
        "name": "vertical", "transport": ["tcp", "udp"], "loop": {"type": "none"},
        "flows": [_echo(count=50, period=0.01)],
        "sweep": {"link": ["ethernet", "wifi6"], "flows[0].replicas": [1, 2, 4]}}, _by_link)
    runs = [analyse_run(d) for d in sorted((out / "runs").iterdir())]
    samples = flow_sections.samples_of(runs, "hello")
    assert flow_sections.swept_axis(samples) == "replicas"
    assert flow_sections.other_keys(samples, "replicas") == ["link"]
    curves = flow_sections.by_curve(samples, "replicas")
    assert sorted(c.label for c in curves) == ["tcp, link=ethernet", "tcp, link=wifi6",
                                                "udp, link=ethernet", "udp, link=wifi6"]
    assert all({s.run.cell["settings"]["link"] for s in group} == {dict(c.others)["link"]}
               for c, group in curves.items())
    path, caption = flow_sections.scaling_figure("hello", samples, tmp_path, None)
    assert path.stat().st_size > 10_000
    assert "Median RTT per transport and link" in caption
    # only the wifi6 curves explode (20 x at 4 replicas); merged by transport they would not tell
    assert "tcp, link=wifi6 from 4; udp, link=wifi6 from 4." in caption and "link=ethernet from" not in caption


def test_a_key_zipped_with_the_axis_is_the_axis_not_a_curve(tmp_path):
    out = write_campaign(tmp_path / "c", {
        "name": "zip", "transport": "tcp", "loop": {"type": "none"}, "hosts": {"robot": {"cpu": 1.0}},
        "flows": [{"name": "bulk", "kind": "generic", "size_bytes": 1024, "period": 0.01, "count": 40}],
        "sweep": {"hosts.robot.cpu": [1.0, 0.5],
                  "zip": {"flows[0].size_bytes": [1024, 4096, 16384], "flows[0].period": [0.01, 0.02, 0.04]}}},
        lambda cell, cfg, name, rng: np.full(40, 1e-3 / dict(cell.settings)["hosts.robot.cpu"]))
    samples = flow_sections.samples_of([analyse_run(d) for d in sorted((out / "runs").iterdir())], "bulk")
    assert flow_sections.swept_axis(samples) == "size_bytes"
    assert flow_sections.other_keys(samples, "size_bytes") == ["cpu"]
    assert sorted(c.label for c in flow_sections.by_curve(samples, "size_bytes")) == ["tcp, cpu=0.5", "tcp, cpu=1.0"]
    _, caption = flow_sections.bandwidth_figure("bulk", samples, tmp_path, None)
    assert "per transport and cpu against the message size" in caption


def test_payload_bytes_makes_the_message_and_is_refused_where_it_means_nothing():
    def flow(**f):
        return validate_experiment({"loop": {"type": "none"}, "flows": [dict(name="a", count=5, **f)]},
                                   name="x").flows[0]
    assert message_bytes(flow(payload_bytes=11)) == 51
    assert message_bytes(flow(payload_bytes=0)) == message_bytes(flow(size_bytes=40)) == 40
    assert message_bytes(flow(payload_bytes=11, size_bytes=51)) == 51      # the two agree
    for bad, where, says in (({"payload_bytes": 11, "size_bytes": 2048}, "flows[0].size_bytes", "give one"),
                             ({"size_bytes": 11}, "flows[0].size_bytes", ">= 40"),
                             ({"payload_bytes": -1}, "flows[0].payload_bytes", ">= 0"),
                             ({"payload_bytes": 11, "kind": "camera"}, "flows[0].payload_bytes", "generic and echo")):
        with pytest.raises(ConfigError) as err:
            flow(**bad)
        assert where in str(err.value) and says in str(err.value)


def test_a_long_run_is_drawn_as_medians_and_says_so(tmp_path):
    from netloop.analysis.results import FlowResult, RunAnalysis
    n = 5000
    run = RunAnalysis(run_id="tcp-r0", transport="tcp", status="complete", loop_type="none")
    result = FlowResult(flow="hello", kind="echo", entry="hello", ok=True, measures="round trip",
                        delays_ms=list(np.linspace(1, 50, n)), message_numbers=list(range(n)))
    path, caption = sequence_figure.sequence_figure("hello", [flow_sections.FlowSample(run, result)], tmp_path,
                                                    [], "RTT", "round-trip time")
    assert path.stat().st_size > 10_000
    assert caption.startswith("Round-trip time of each message against its number")
    assert f"more than {sequence_figure.MAX_POINTS} messages" in caption and "(up to 4 a point)" in caption
    assert "mean of the runs" not in caption and "one panel per setting" not in caption


def test_a_flows_mcap_file_holds_each_delivered_messages_delay(sequence_campaign):
    """A flows-only run's MCAP file: one channel per flow, one message per delivered message, its
    delay in seconds at its send time, in the order sent."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    f = analyse_run(sequence_campaign / "runs" / "udp-r1").flows[0]
    with open(sequence_campaign / "mcap" / "udp-r1.mcap", "rb") as stream:
        reader = make_reader(stream, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert [c.topic for c in summary.channels.values()] == ["/flows/hello/delay"]
        got = [(m.log_time, d.data) for _s, _c, m, d in reader.iter_decoded_messages()]
    assert len(got) == len(f.delays_ms) == MESSAGES - len(range(5, MESSAGES, 97))
    np.testing.assert_allclose([d for _, d in got], 1e-3 * np.asarray(f.delays_ms), rtol=1e-12)
    assert [t for t, _ in got] == sorted(t for t, _ in got)
