"""`netloop report` on a campaign with a sweep, repetitions and broken run directories:
report.html is self-contained (every figure embedded), report.md and the CSV tables agree
with the analysis, the summary names the transport closest to local, and every broken run
is reported as such (never a crash, never silently dropped)."""
from __future__ import annotations

import csv
import json
import re
import shutil

import numpy as np
import pytest

from netloop.analysis import degradation, synthetic
from netloop.analysis.rendering import Document, Section, inline, summary_paragraphs
from netloop.analysis.results import RunAnalysis
from netloop.analysis.loop_run import analyse_loop_run, load_loop_run
from netloop.cli import main

BASE_MS = {"tcp": 4.0, "udp": 0.4}


def delays(cell, cfg, rng):
    n = cfg["loop"]["samples"]
    extra = cfg["link_params"]["delay_ms"] / 1e3
    return [BASE_MS[cell.transport] / 1e3 + extra + rng.uniform(0, 0.002, n) for _ in range(2)]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "camp"
    synthetic.write_campaign(out, {"name": "camp", "link": "shaped", "transport": ["tcp", "udp"], "repetitions": 2,
                                   "sweep": {"link_params.delay_ms": [0, 15]}, "loop": {"samples": 80}}, delays)
    runs = out / "runs"
    good = runs / "udp__delay_ms=0-r0"
    # broken run directories, each in its own way
    for name in ("cut", "nometa", "badmeta", "norecords", "malformed", "killed"):
        shutil.copytree(good, runs / f"{name}-r0")
        meta = runs / f"{name}-r0" / "metadata.json"
        meta.write_text(json.dumps(json.loads(meta.read_text()) | {"run_id": f"{name}-r0"}))
    plant = runs / "cut-r0" / "records" / "plant.csv"
    plant.write_text(plant.read_text()[:-25])                       # last row cut off by a kill
    (runs / "nometa-r0" / "metadata.json").unlink()
    meta = runs / "badmeta-r0" / "metadata.json"
    meta.write_text(meta.read_text()[:200])                         # truncated JSON
    shutil.rmtree(runs / "norecords-r0" / "records")
    ctl = runs / "malformed-r0" / "records" / "controller.csv"
    lines = ctl.read_text().splitlines(keepends=True)
    ctl.write_text("".join(lines[:10] + ["rx,y,zz,not-a-number\n"] + lines[10:]))
    meta = runs / "killed-r0" / "metadata.json"
    m = json.loads(meta.read_text())
    m.update(status="running", end_time=None)
    meta.write_text(json.dumps(m))
    (runs / "teleop-r0").mkdir()                                    # a teleop run without its record
    (runs / "teleop-r0" / "metadata.json").write_text(json.dumps(
        {"format": "netloop-run/1", "status": "complete", "run_id": "teleop-r0", "experiment": {"transport": "udp", "loop": {"type": "teleop"}}}))
    camp = json.loads((out / "campaign.json").read_text())
    camp["cells"].append({"run_id": "udp__delay_ms=99-r0", "transport": "udp", "condition": "udp delay_ms=99",
                          "settings": {"link_params.delay_ms": 99}, "repetition": 0, "status": "failed",
                          "error": "RunFailed: the emulator crashed"})
    (out / "campaign.json").write_text(json.dumps(camp))
    assert main(["report", str(out)]) == 0
    return out


def test_html_is_self_contained_and_has_every_figure(campaign):
    html = (campaign / "report.html").read_text()
    md = (campaign / "report.md").read_text()
    srcs = re.findall(r"""src\s*=\s*["']([^"']*)["']""", html)
    assert srcs and all(r.startswith("data:image/png;base64,") for r in srcs), [r[:40] for r in srcs]
    # the only links: the report's own exports, files beside it (CSV tables, the runs' MCAP files)
    links = re.findall(r"""href\s*=\s*["']([^"']*)["']""", html)
    assert links and all((campaign / link).is_file() and not re.match(r"\w+:", link) for link in links), links
    assert {"runs.csv", "steps.csv", "margins.csv"} <= set(links) and any(link.startswith("mcap/") for link in links)
    assert "<link" not in html and "<script" not in html and "url(" not in html
    figures = re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.png)\)", md)
    assert len(figures) == html.count("<img ") and len(figures) >= 6
    for f in figures:
        assert (campaign / f).stat().st_size > 10_000, f
    for name in ("step_response__delay_ms=0.png", "step_response__delay_ms=15.png", "degradation_vs_delay.png",
                 "degradation_vs_jitter.png", "delay_sensor.png"):
        assert f"figures/{name}" in md
    assert "prediction__delay_ms=15.png" not in md      # every run explained: the prediction is one sentence
    for section in ("## Summary", "## Decision table", "## Degradation against delay and jitter",
                    "## Prediction from measured delays", "## Loop messages per direction", "## Every loop run",
                    "## Problems", "## Glossary"):
        assert section in md
        assert f"<h2>{section[3:]}</h2>" in html


def test_every_broken_run_is_reported(campaign):
    md = (campaign / "report.md").read_text()
    html = (campaign / "report.html").read_text()
    problems_md = md.split("## Problems", 1)[1]
    problems_html = html.split("<h2>Problems</h2>", 1)[1]
    expected = {"cut-r0": "last row cut off", "nometa-r0": "metadata.json missing",
                "badmeta-r0": "metadata.json unreadable", "norecords-r0": "record file missing",
                "malformed-r0": "malformed row", "killed-r0": "run incomplete", "teleop-r0": "trial.csv",
                "udp__delay_ms=99-r0": "listed in campaign.json, but its run directory is missing"}
    for run, words in expected.items():
        line = next((x for x in problems_md.splitlines() if f"`{run}`" in x), None)
        assert line is not None and words in line, (run, line)
        assert f"<code>{run}</code>" in problems_html
    assert "the emulator crashed" in problems_md
    # the cut-off run is still analysed (complete, one row skipped); the killed one is excluded
    assert "| cut-r0 | udp | complete |" in md
    assert "**Excluded from the tables and figures above**" in md and "`killed-r0` (running)" in md


def test_csv_tables_match_the_analysis(campaign):
    with open(campaign / "degradation.csv", newline="") as f:
        rows = {r["run_id"]: r for r in csv.DictReader(f)}
    assert len([r for r in rows if "delay_ms" in r]) == 8
    a = analyse_loop_run(load_loop_run(campaign / "runs" / "tcp__delay_ms=15-r1"))
    r = rows["tcp__delay_ms=15-r1"]
    assert float(r["IAE(y − baseline) per run [mV·s]"]) == pytest.approx(1e3 * a.deviation["IAE"])
    assert float(r["RTT mean [ms]"]) == pytest.approx(a.rtt["mean_ms"])
    assert r["setting"] == "delay_ms=15" and r["repetition"] == "1" and r["verdict"] == "settled"
    with open(campaign / "conditions.csv", newline="") as f:
        groups = {(g["setting"], g["transport"]): g for g in csv.DictReader(f)}
    g = groups[("delay_ms=15", "tcp")]
    vals = [float(rows[f"tcp__delay_ms=15-r{k}"]["IAE(y − baseline) per run [mV·s]"]) for k in (0, 1)]
    assert g["runs"] == "2" and float(g["IAE(y − baseline) per run [mV·s] mean"]) == pytest.approx(np.mean(vals))
    assert float(g["IAE(y − baseline) per run [mV·s] max"]) == pytest.approx(max(vals))
    with open(campaign / "prediction.csv", newline="") as f:
        pred = {p["run"]: p for p in csv.DictReader(f)}
    assert float(pred["tcp__delay_ms=15-r1"]["measured RMS [mV]"]) < 1e-6
    assert json.loads((campaign / "analysis.json").read_text())[0]["degradation"]["run_id"]


def test_summary_says_which_transport_kept_the_loop_closest_to_local(campaign):
    md = (campaign / "report.md").read_text()
    summary = md.split("## Summary", 1)[1].split("\n## ", 1)[0]
    # udp's messages are 3.6 ms faster each way: it stays closer to the local loop at both settings
    assert "With delay_ms=0: **udp** kept the loop closest to local" in summary
    assert "With delay_ms=15: **udp** kept the loop closest to local" in summary
    assert "less than the next, tcp" in summary
    assert "reproduces every run" in summary
    assert "run(s) have problems" in summary
    html = (campaign / "report.html").read_text()
    assert "<strong>udp</strong> kept the loop closest to local" in html


def test_report_prints_its_summary_for_a_terminal(campaign, tmp_path, capsys):
    assert main(["report", str(campaign)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == str(campaign / "report.html")          # the last line stays the report's path
    start = out.index("netloop: summary")
    printed = "\n".join(out[start + 1:-1])
    assert "  - With delay_ms=0: udp kept the loop closest to local" in printed and "**" not in printed
    assert all(len(line) <= 100 for line in out[start + 1:-1])
    paragraphs = summary_paragraphs(campaign / "report.md")
    assert len(paragraphs) == printed.count("\n  - ") + 1 and "run(s) have problems" in paragraphs[-1]
    assert summary_paragraphs(tmp_path / "report.md") == []   # no report there: nothing, no error


def test_report_of_a_single_broken_run_and_of_nothing(tmp_path, capsys):
    run = tmp_path / "lonely-r0"
    (run / "records").mkdir(parents=True)
    (run / "metadata.json").write_text("{")
    assert main(["report", str(run)]) == 0
    md = (run / "report.md").read_text()
    assert "metadata.json unreadable" in md and (run / "report.html").exists()
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_doc_renders_markdown_and_escapes_html(tmp_path):
    doc = Document("t <1>", base=tmp_path)
    doc.add(Section().p("a `x<y>` and **b & c**").table(["k", "v"], [["a|b", 1.23456], ["tiny", 1e-9],
                                                                    ["nan", float("nan")]])
            .fig(tmp_path / "missing.png", "gone"))
    md, html = doc.markdown(), doc.html()
    assert "| a\\|b | 1.235 |" in md and "| tiny | 1.0e-09 |" in md and "| nan | – |" in md
    assert "<code>x&lt;y&gt;</code>" in html and "<strong>b &amp; c</strong>" in html
    assert "figure missing.png missing" in html
    assert inline("**`a`**") == "<strong><code>a</code></strong>"


def test_cell_of_runs_without_a_sweep():
    run = RunAnalysis(run_id="udp-r0", transport="udp", status="complete", loop_type="rlc",
                      cell={"condition": "udp", "settings": {}})
    assert degradation.cell_of(run)[1] == degradation.NO_SWEEP
    assert degradation.cell_of(RunAnalysis(run_id="udp-r0", transport="udp", status="complete", loop_type="rlc"))[0] \
        == "udp"
