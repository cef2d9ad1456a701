"""The report of a square-wave campaign as a control engineer reads it, on synthetic records
whose answer is known: the summary states the loop's delay and jitter margins and where each
transport's measured delay sits against them (one far inside, one beyond the delay margin);
per-step numbers only (no whole-run overshoot of a square wave, no undefined value, IAE labelled
per step or per run); the decision table with the loop's RTT and MDR; steps.csv and runs.csv;
and each run's MCAP file, read back with the mcap library: its channels and message counts are
the records'."""
from __future__ import annotations

import csv
import math
import re

import numpy as np
import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from netloop.analysis import synthetic
from netloop.analysis.records import read_events
from netloop.analysis.report import write_report

WAVE = {"period": 2.0, "count": 3, "low": 0.0, "random_phase": True, "seed": 3}
#: one-way delays [s] per transport: tcp well inside the margins; nimbro 80 ms each way, a loop
#: delay of 160 ms, beyond the 148 ms delay margin; udp loses some actuations
ONE_WAY = {"tcp": 0.002, "udp": 0.003, "nimbro": 0.080}
LOOP_CHANNELS = {"/reference", "/y", "/u", "/loop/rtt", "/loop/y/delay", "/loop/u/delay"}


def delays(cell, cfg, rng):
    n = cfg["loop"]["samples"]
    d = ONE_WAY[cell.transport] + 0.002 * rng.random(n)
    u = d.copy()
    if cell.transport == "udp":
        u[[30, 31, 200]] = np.nan
    return d, u


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("exports") / "camp"
    synthetic.write_campaign(out, {"name": "camp", "link": "loopback", "transport": ["tcp", "udp", "nimbro"],
                                   "repetitions": 2, "loop": {"samples": 320, "controller": {
                                       "K": 1.0, "reference": 1.0, "square_wave": WAVE}}}, delays)
    write_report(out)
    return out


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [line.strip().strip("|").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    return [c.strip() for c in lines[0]], [[c.strip() for c in row] for row in lines[1:]]   # "|---" is no row


def test_the_summary_states_the_margins_and_every_transport_against_them(campaign):
    summary = _section((campaign / "report.md").read_text(), "Summary")
    assert re.search(r"\*\*delay margin 148 ms\*\* \(157 ms as a continuous loop", summary)
    assert "**jitter margin 90.4 ms** at no constant delay" in summary
    line = next(p for p in summary.split("\n\n") if p.startswith("Measured loop delay"))
    inside, beyond = line.split("median loop delay beyond the delay margin, unstable expected: ")
    assert "inside the jitter margin, stability guaranteed: tcp" in inside and "udp" in inside
    assert beyond.startswith("nimbro 16") and "nimbro" not in inside
    assert "agrees with the margins for every transport" in summary


def test_the_margins_section_sets_each_transport_beside_them(campaign):
    md = (campaign / "report.md").read_text()
    tables = [_table(t) for t in re.findall(r"(?:^\|.*\n)+", _section(md, "Stability margins"), re.M)]
    header, rows = next(t for t in tables if t[0][0] == "transport")
    by = {r[0]: dict(zip(header, r)) for r in rows}
    assert by["tcp"]["vs delay margin (p50 / p99 / max)"] == "inside / inside / inside"
    assert by["tcp"]["expected"] == "stable, guaranteed" and by["tcp"]["observed"].startswith("agrees")
    assert by["nimbro"]["vs delay margin (p50 / p99 / max)"] == "beyond / beyond / beyond"
    assert by["nimbro"]["expected"] == "unstable"
    assert "figures/margins.png" in md and (campaign / "figures" / "margins.png").stat().st_size > 10_000
    rows = list(csv.DictReader(open(campaign / "margins.csv", encoding="utf-8")))
    assert [r["transport"] for r in rows] == ["tcp", "udp", "nimbro"]
    assert float(rows[0]["delay margin [ms]"]) == pytest.approx(147.69, abs=0.01)


def test_square_wave_tables_hold_per_step_numbers_only(campaign):
    md = (campaign / "report.md").read_text()
    header, rows = _table(_section(md, "Every loop run"))
    assert not {"overshoot [%]", "settling [s]", "rise [s]", "y final [V]"} & set(header)
    assert all(("per step" in h or "per run" in h) for h in header if "IAE" in h)
    metrics = header.index("verdict")          # from here on every cell is a number or a verdict
    assert all(cell != "–" for row in rows for cell in row[metrics:]), rows
    # no percentage above 1,000 anywhere in the report's tables
    for table in re.findall(r"(?:^\|.*\n)+", md, re.M):
        head, body = _table(table)
        for i, name in enumerate(head):
            if "[%]" in name:
                for row in body:
                    value = re.match(r"[\d.]+", row[i])
                    assert value is None or float(value.group()) < 1000, (name, row[i])
    decision_header, _ = _table(_section(md, "Decision table"))
    assert {"RTT p50 / p99 [ms]", "MDR y / u [%]"} <= set(decision_header)
    assert decision_header.index("RTT p50 / p99 [ms]") == decision_header.index(
        "IAE(y − baseline) per step [mV·s]: median [95 % CI]") + 1


def test_steps_csv_has_every_step_of_every_run(campaign):
    steps = list(csv.DictReader(open(campaign / "steps.csv", encoding="utf-8")))
    runs = list(csv.DictReader(open(campaign / "runs.csv", encoding="utf-8")))
    assert len(runs) == 6 and len(steps) == sum(int(r["steps (settled)"].split()[0]) for r in runs)
    assert {s["direction"] for s in steps} == {"up", "down"}
    for s in steps:
        assert (s["settled"] == "yes") == (s["settling [s]"] != "")
    nimbro = [s for s in steps if s["transport"] == "nimbro"]
    assert any(s["settled"] == "no" for s in nimbro)   # beyond the delay margin: its steps do not settle
    assert "IAE(y − baseline) per step [mV·s]" in steps[0]


def _read(path):
    """(channel -> (schema name, message count), /y's values in order) of an MCAP file."""
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        channels = {c.topic: (summary.schemas[c.schema_id].name, summary.statistics.channel_message_counts[i])
                    for i, c in summary.channels.items()}
        y = [m.data for _s, _c, _m, m in reader.iter_decoded_messages(topics=["/y"])]
        meta = {r.name: r.metadata for r in reader.iter_metadata()}
    return channels, y, meta


@pytest.mark.parametrize("run", ["tcp-r0", "udp-r1"])
def test_each_runs_time_series_reads_back_from_its_mcap_file(campaign, run):
    channels, y, meta = _read(campaign / "mcap" / f"{run}.mcap")
    assert set(channels) == LOOP_CHANNELS
    assert {schema for schema, _ in channels.values()} == {"std_msgs/msg/Float64"}
    plant = read_events(campaign / "runs" / run / "records" / "plant.csv")
    controller = read_events(campaign / "runs" / run / "records" / "controller.csv")
    samples = len(plant.select("tx", "y"))
    applied, stale = len(plant.select("rx", "u")), len(plant.select("stale", "u"))
    assert channels["/y"][1] == channels["/reference"][1] == samples == 320
    assert channels["/u"][1] == applied and channels["/loop/rtt"][1] == applied + stale
    assert channels["/loop/y/delay"][1] == len(controller.select("rx", "y"))
    assert channels["/loop/u/delay"][1] == applied + stale
    assert (applied + stale < samples) == run.startswith("udp")    # udp lost three actuations
    np.testing.assert_allclose(y, plant.select("tx", "y").value)
    assert meta["netloop"]["run_id"] == run and meta["netloop"]["transport"] == run.split("-")[0]
    html = (campaign / "report.html").read_text()
    assert f'href="mcap/{run}.mcap"' in html and 'href="steps.csv"' in html and 'href="runs.csv"' in html


def test_a_settling_time_no_step_reached_reads_not_settled():
    from netloop.analysis import repeated_steps
    g = repeated_steps.TransportSteps("x", "", [{"settling_s": math.nan}, {"settling_s": 0.5},
                                                {"settling_s": math.nan}])
    assert g.median("settling_s") == math.inf and g.settled() == 1
    assert repeated_steps.median_text(g, "settling_s").startswith("not settled [")
    g.steps.append({"settling_s": 0.4})
    g.steps.append({"settling_s": 0.6})
    assert repeated_steps.median_text(g, "settling_s").startswith("0.6 [")   # 3 of 5 settled: a median
