"""The ROS 2 study files and helpers: what each cell really runs, the calibration's handling of
rows the Pound paper has no number for, and the parsing of ddsperf's output (no runs here)."""
from __future__ import annotations

from netloop import calibrate_link as calibrate, paths
from netloop.experiment import expand, for_cell, load_experiment
from netloop.transports.ros2_bench import parse_ddsperf


def test_size_study_cells_carry_both_qos_to_the_middlewares():
    exp = load_experiment(paths.EXPERIMENTS / "maruyama_figs7_10_local.yaml")
    seen = set()
    for cell in expand(exp):
        run = for_cell(exp, cell).experiment
        qos = run.flows[0].qos
        seen.add((cell.transport, run.flows[0].size_bytes, qos["reliability"], qos["durability"]))
    for t in ("cyclonedds", "fastdds", "zenoh", "rmw_fastrtps_cpp"):
        for size in (256, 4194304):
            assert (t, size, "reliable", "transient_local") in seen
            assert (t, size, "best_effort", "volatile") in seen
    assert len(seen) == 150


def test_late_join_and_subscriber_files():
    late = load_experiment(paths.EXPERIMENTS / "maruyama_table4_initial_loss.yaml")
    assert late.flows[0].subscribers == 2 and late.flows[0].subscriber_delay > 0
    durabilities = {for_cell(late, c).experiment.flows[0].qos["durability"] for c in expand(late)}
    assert durabilities == {"volatile", "transient_local"}
    subs = load_experiment(paths.EXPERIMENTS / "maruyama_figs17_19_subscribers.yaml")
    assert subs.flows[0].subscribers == 5


def test_calibration_ignores_transports_without_a_published_number():
    row = {"D": 5.0, "std_Jd": 2.0, "MDR": 100.0, "std_D": 1.0, "std_source": 0.1}
    ours = {t: {"laser": dict(row), "image": dict(row, D=100.0)}
            for t in ["tcp", "tcp_nodelay", "udp", "priority", "multimaster", "cyclonedds", "fastdds", "zenoh"]}
    result = calibrate.fidelity(ours)
    assert {r["transport"] for r in result["rows"]} <= set(calibrate.METHODS.values())
    assert "cyclonedds" not in result["ranking"]["methods"]
    exp = load_experiment(paths.EXPERIMENTS / calibrate.EXPERIMENT)
    assert {"cyclonedds", "fastdds", "zenoh"} <= set(exp.transport)


def test_parse_ddsperf_ping_lines():
    text = ("[25844] participant vm:25844: new (self)\n"
            "[25844] 1.000  vm:25729 size 4096 mean 135.033us min 62.077us 50% 101.989us 90% 214.566us "
            "99% 611.526us max 611.526us cnt 49\n"
            "[25844] 1.000  rss:7.4MB vcsw:132 ivcsw:13 ddsperf:1%+0%\n")
    rows = parse_ddsperf(text)
    assert rows == [{"size": 4096, "mean_us": 135.033, "min_us": 62.077, "p50_us": 101.989, "p90_us": 214.566,
                     "p99_us": 611.526, "max_us": 611.526, "count": 49}]
