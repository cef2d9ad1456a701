"""The flows' part of the report on real runs (loopback, one host): the Pound paper's table
with the delay's percentiles in Markdown, HTML and CSV, a heading that names every swept
value, an echo flow's delay labelled as the round trip it is, and the delay-against-size
figure of a size sweep (Jordan's and Pound's Fig. 19 scaling plots)."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from campaign_helpers import run_campaign

from netloop.analysis import flow_sections
from netloop.analysis.report import analyse_run, write_report

SIZES = [256, 16384, 262144]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    _, out = run_campaign(tmp_path_factory.mktemp("flowrep"), {
        "transport": "tcp_nodelay", "loop": {"type": "none"},
        "sweep": {"flows[0].size_bytes": SIZES},
        "flows": [{"name": "data", "kind": "generic", "size_bytes": 256, "period": 0.02, "count": 30,
                   "start_delay": 0.5},
                  {"name": "ping", "kind": "echo", "size_bytes": 64, "period": 0.02, "count": 30, "start_delay": 0.5}]},
        "flowrep")
    assert write_report(out) == out / "report.html"
    return out


@pytest.mark.integration
def test_percentiles_in_every_table(swept):
    md = (swept / "report.md").read_text()
    html = (swept / "report.html").read_text()
    for column in ("p50 D [ms]", "p95 D [ms]", "p99 D [ms]"):
        assert column in md and f"<th>{column}</th>" in html
    with open(swept / "flow_data.csv", newline="") as f:
        rows = {r["setting"]: r for r in csv.DictReader(f)}
    assert list(rows) == [f"size_bytes={s}" for s in SIZES]   # in sweep order, numbers as numbers
    for run_dir in sorted((swept / "runs").iterdir()):
        a = analyse_run(run_dir)
        data = next(f for f in a.flows if f.flow == "data")
        row = rows[f"size_bytes={data.size_bytes}"]
        delays = np.array(data.delays_ms)
        assert float(row["p50 D [ms]"]) == pytest.approx(np.percentile(delays, 50))
        assert float(row["p99 D [ms]"]) == pytest.approx(np.percentile(delays, 99))
        assert float(row["p50 D [ms]"]) <= float(row["p95 D [ms]"]) <= float(row["p99 D [ms]"])


@pytest.mark.integration
def test_heading_names_the_swept_sizes_and_the_echo_round_trip(swept):
    md = (swept / "report.md").read_text()
    assert "## Flow `data` (generic, sizes 256, 16384, 262144 bytes per message (swept), every 20 ms)" in md
    assert "## Flow `ping` (echo, 64 bytes per message, every 20 ms, round trip through an echoer)" in md
    ping = md.split("## Flow `ping`", 1)[1]
    assert "p95 RTT [ms]" in ping and "p95 D [ms]" not in ping.split("\n## ", 1)[0]
    glossary = md.split("## Glossary\n", 1)[1]          # a flows-only report's: the generic terms only
    assert "| RTT | ms |" in glossary and "| D | ms |" in glossary and "IAE" not in glossary


@pytest.mark.integration
def test_size_sweep_gets_its_scaling_figure(swept):
    md = (swept / "report.md").read_text()
    assert "figures/flow_data_scaling.png" in md
    assert (swept / "figures" / "flow_data_scaling.png").stat().st_size > 10_000
    assert "figures/flow_ping_scaling.png" not in md        # the echo flow was not swept
    assert "figures/flow_data_bandwidth.png" in md and "figures/flow_ping_bandwidth.png" not in md


def test_explodes_at_marks_the_first_tenfold_median():
    pts = [(1.0, 2.0, 1.0, 3.0), (10.0, 3.0, 2.0, 4.0), (100.0, 25.0, 20.0, 30.0), (1000.0, 300.0, 200.0, 400.0)]
    assert flow_sections.explodes_at(pts) == 100.0
    assert flow_sections.explodes_at(pts[:2]) is None
    assert flow_sections.explodes_at(pts[:1]) is None


@pytest.mark.integration
def test_offered_load_and_the_hosts_cpu(swept):
    with open(swept / "flow_data.csv", newline="") as f:
        offered = {r["setting"]: float(r["offered [Mbit/s]"]) for r in csv.DictReader(f)}
    for size in SIZES:
        assert offered[f"size_bytes={size}"] == pytest.approx(size * 8 / 0.02 / 1e6)
    with open(swept / "flow_ping.csv", newline="") as f:   # an echo crosses the link twice
        assert [float(r["offered [Mbit/s]"]) for r in csv.DictReader(f)] == pytest.approx([2 * 64 * 8 / 0.02 / 1e6] * 3)
    md = (swept / "report.md").read_text()
    cpu = md.split("## CPU of the hosts", 1)[1].split("\n## ", 1)[0]
    assert "| setting | transport | runs | operator [% of a core] | robot [% of a core] |" in cpu
    rows = [line for line in cpu.splitlines() if line.startswith("| size_bytes=")]
    assert [r.split(" | ")[0] for r in rows] == [f"| size_bytes={s}" for s in SIZES]
    for run_dir in sorted((swept / "runs").iterdir()):
        a = analyse_run(run_dir)
        robot = a.meta.cpu["robot"]
        assert set(robot["processes"]) == {"flow_data_source", "flow_ping_source", "flow_ping_sink"}
        assert 0 < robot["cpu_seconds"] == pytest.approx(sum(robot["processes"].values()), abs=0.01)


def _sample(transport, size, period, mbit):
    from netloop.analysis.results import FlowResult, RunAnalysis
    run = RunAnalysis(run_id=f"{transport}-{size}", transport=transport, status="complete", loop_type="none")
    return flow_sections.FlowSample(run, FlowResult(flow="bulk", kind="generic", entry="bulk", ok=True,
                                                    size_bytes=size, period_s=period, bandwidth_mbit=mbit))


def test_a_zip_of_size_and_period_is_a_size_sweep_with_its_bandwidth_figure(tmp_path):
    """Pound's Fig. 19: size and period varied together (constant offered load): the report
    draws the delivered bandwidth against the size per transport."""
    sizes, periods = [1024, 65536, 262144], [0.00126, 0.08066, 0.32264]
    samples = [_sample(t, s, p, bw) for t, bws in (("tcp", (4.6, 4.7, 4.7)), ("udp", (4.5, 0.4, 0.0)))
               for s, p, bw in zip(sizes, periods, bws)]
    assert flow_sections.swept_axis(samples) == "size_bytes"
    path, caption = flow_sections.bandwidth_figure("bulk", samples, tmp_path, 6.0)
    assert path == tmp_path / "flow_bulk_bandwidth.png" and path.stat().st_size > 10_000
    assert "Lowest: udp, 0.00 Mbit/s at 262144 bytes" in caption and "6.0 Mbit/s, dotted" in caption
    # a grid of sizes x periods is not one axis: no figure
    grid = [_sample("tcp", s, p, 1.0) for s in (1024, 4096) for p in (0.01, 0.02)]
    assert flow_sections.swept_axis(grid) is None
    assert flow_sections.bandwidth_figure("bulk", grid, tmp_path, 6.0) is None
