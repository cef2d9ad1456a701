"""The report answers first: the decision table after the Summary (ranks and verdicts on
synthetic records whose answer is known), the glossary from its single source, the
prediction said in one sentence when every run is explained, MDR in % in every table and
CSV file, labels that say what each transport is, and a step figure cropped to the
transient with one median line per transport."""
from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from netloop.analysis import decision, glossary, plots, synthetic
from netloop.analysis.decision import Candidate
from netloop.analysis.report import write_report
from netloop.analysis.results import FlowResult, RunAnalysis, StepResponse, TeleopRunResult
from netloop.analysis.tables import percent_text, sig
from netloop.loops.rlc.analysis import negotiated_text
from netloop.loops.teleop.analysis import decision_section as teleop_decision

#: constant one-way delays [ms] per transport; udp and tcp_nodelay see exactly the same
ONE_WAY_MS = {"udp": 1.0, "tcp_nodelay": 1.0, "tcp": 8.0}
LOST_U = {"udp": [40, 41, 90]}       # samples whose actuation udp loses (MDR u < 100 %)


def delays(cell, cfg, rng):
    n = cfg["loop"]["samples"]
    d = np.full(n, ONE_WAY_MS[cell.transport] / 1e3 + 1e-4 * cell.repetition)
    u = d.copy()
    u[LOST_U.get(cell.transport, [])] = np.nan
    return d, u


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("decision") / "camp"
    synthetic.write_campaign(out, {"name": "camp", "link": "shaped", "transport": ["tcp", "udp", "tcp_nodelay"],
                                   "repetitions": 3, "loop": {"samples": 150}}, delays)
    write_report(out)
    return out


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _rows(section: str) -> dict[str, list[str]]:
    """Rows of the first table of a section by their second cell (the transport)."""
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| ")]
    return {r[1].strip(): [c.strip() for c in r] for r in rows[1:]}


def test_the_decision_table_follows_the_summary(campaign):
    md = (campaign / "report.md").read_text()
    headings = re.findall(r"^## (.+)$", md, re.M)
    assert headings[:4] == ["Summary", "Decision table", "Stability margins", "Step response against the local baseline"]
    html = (campaign / "report.html").read_text()
    assert (html.index("<h2>Summary</h2>") < html.index("<h2>Decision table</h2>") < html.index("<h2>Stability margins")
            < html.index("<h2>Step response"))
    header = next(line for line in _section(md, "Decision table").splitlines() if line.startswith("| rank"))
    assert len(header.strip("|").split(" | ")) <= 8


def test_a_clear_difference_is_worse_by_and_equal_inputs_are_indistinguishable(campaign):
    rows = _rows(_section((campaign / "report.md").read_text(), "Decision table"))
    assert set(rows) == {"tcp", "udp", "tcp_nodelay"}
    # udp and tcp_nodelay: the same delays; udp loses three actuations, which changes its response a little
    best = next(r for r in rows.values() if r[-1] == "best")
    assert best[0] == "1" and best[1] in ("udp", "tcp_nodelay")
    assert rows["tcp"][0] == "3" and rows["tcp"][-1].startswith("worse by ") and "mV·s (" in rows["tcp"][-1]
    # 16 ms more loop delay: far outside the spread of three repetitions
    tcp_iae = float(rows["tcp"][2].split(" ")[0])
    best_iae = float(best[2].split(" ")[0])
    diff = float(re.search(r"worse by ([\d.]+) mV·s", rows["tcp"][-1]).group(1))
    assert diff == pytest.approx(tcp_iae - best_iae, rel=0.06)
    # no number in the table is a 3-decimal dump or in scientific notation
    table = _section((campaign / "report.md").read_text(), "Decision table")
    assert not re.search(r"\d\.\d{4}|e-\d", table)


def test_verdict_rules_on_candidates():
    best = Candidate("a", [10.0, 11.0, 12.0])
    same = Candidate("b", [11.5, 13.0, 14.0])          # overlaps the best's 10–12
    equal = Candidate("e", [10.0, 11.0, 12.0])          # identical inputs
    worse = Candidate("c", [20.0, 22.0, 21.0])
    broken = Candidate("d", [float("nan")])
    ranked = decision.rank([worse, same, best, broken, equal], "mV·s")
    by = {r.candidate.name: r for r in ranked}
    assert by["a"].rank == 1 and by["a"].verdict == "best"
    assert by["b"].verdict == by["e"].verdict == "indistinguishable from best"
    assert by["c"].rank == 4 and by["c"].verdict == "worse by 10 mV·s (91 %)"
    assert by["d"].rank is None and by["d"].verdict == "no usable run"
    assert decision.spread_text(best) == "11.0 (10.0–12.0)" and decision.spread_text(Candidate("x", [6.8512])) == "6.85"


def test_mdr_is_in_percent_in_every_table_and_csv(campaign):
    md = (campaign / "report.md").read_text()
    rows = _rows(_section(md, "Decision table"))
    assert rows["udp"][6] == "100 / 98" and rows["tcp"][6] == "100 / 100"      # 3 of 150 u lost
    assert "MDR y / u [%]" in md and "| MDR y [%] | MDR u [%] |" in md and "| MDR [%] |" in md
    tables = md.split("## Glossary", 1)[0]
    assert not re.search(r"\| MDR [yu]? ?\|", tables)                           # no MDR column without its unit
    with open(campaign / "runs.csv", newline="") as f:
        runs = {r["run"]: r for r in csv.DictReader(f)}
    assert float(runs["udp-r0"]["MDR u [%]"]) == pytest.approx(98.0) and float(runs["tcp-r0"]["MDR y [%]"]) == 100
    with open(campaign / "degradation.csv", newline="") as f:
        points = {r["run_id"]: r for r in csv.DictReader(f)}
    assert float(points["udp-r1"]["MDR u [%]"]) == pytest.approx(98.0)
    with open(campaign / "conditions.csv", newline="") as f:
        groups = {g["transport"]: g for g in csv.DictReader(f)}
    assert float(groups["udp"]["MDR u [%] median"]) == pytest.approx(98.0) and groups["udp"]["MDR u [%] n"] == "3"
    assert percent_text(1.0) == "100" and percent_text(0.99996) == "99.996" and percent_text(0.5) == "50"


def test_the_prediction_is_one_sentence_when_every_run_is_explained(campaign):
    section = _section((campaign / "report.md").read_text(), "Prediction from measured delays")
    paragraphs = [p for p in section.split("\n\n") if p.strip()]
    assert len(paragraphs) == 1 and "|" not in section and "![" not in section
    assert "reproduces every run exactly (9 runs; largest RMS error" in paragraphs[0]
    assert "The median delay alone" in paragraphs[0] and "`prediction.csv`" in paragraphs[0]
    with open(campaign / "prediction.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 9                                # the per-run numbers are kept


def test_glossary_single_source_in_the_report(campaign):
    text = glossary.glossary_markdown(kinds=["rlc"])
    lines = text.splitlines()
    assert lines[:2] == ["| term | unit | meaning |", "|---|---|---|"] and text == glossary.glossary_markdown(kinds=["rlc"])
    generic = [t.name for t in glossary.GLOSSARY]
    for needed in ("D", "J_d", "MDR", "BW", "RTT", "overshoot", "pp", "settling time", "rise time", "std",
                   "p50 / p95 / p99", "offered load", "condition", "repetition", "best", "indistinguishable from best",
                   "worse by X (Y %)"):
        assert needed in generic, needed
    rlc = [t.name for t in glossary.kind_terms("rlc")]
    for needed in ("y, u", "local baseline", "IAE", "IAE(y − baseline)", "ΔIAE", "Δovershoot", "stale u", "prediction"):
        assert needed in rlc and needed not in generic, needed
    assert {"IAE vs local", "command age"} <= {t.name for t in glossary.kind_terms("teleop")}
    assert glossary.kind_terms("none") == ()
    every = [t.name for t in glossary.terms()]
    assert len(every) == len(set(every)) == len(generic) + sum(len(glossary.kind_terms(k)) for k in ("rlc", "teleop"))
    assert len(lines) == 2 + len(generic) + len(rlc) and all(line.count(" | ") == 2 for line in lines[2:])   # pipes escaped
    assert glossary.glossary_markdown(["pp", "MDR"]).splitlines()[2:] == [
        "| MDR | % | " + glossary.term("MDR").meaning + " |", "| pp | – | " + glossary.term("pp").meaning + " |"]
    assert glossary.term("command age").unit == "ms"     # a kind's term is found by name too
    with pytest.raises(KeyError, match="no glossary term 'QoS'"):
        glossary.glossary_markdown(["QoS"])
    docs = glossary.glossary_by_kind_markdown()
    assert docs.startswith(glossary.glossary_markdown()) and "Of `loop.type: teleop`" in docs
    assert "| command age | ms |" in docs and "| IAE(y − baseline) | mV·s |" in docs
    md = (campaign / "report.md").read_text()
    section = _section(md, "Glossary")
    for line in lines[2:]:
        assert line in section
    assert "<h2>Glossary</h2>" in (campaign / "report.html").read_text()


def test_each_transport_is_said_what_it_is(campaign):
    section = _section((campaign / "report.md").read_text(), "Decision table")
    assert "- **tcp**: TCPROS with Nagle's algorithm on" in section
    assert "- **udp**: UDPROS" in section and "- **tcp_nodelay**: TCPROS with TCP_NODELAY" in section
    # across masters: what crossed the link is the relay, not the TCPROS hop the subscriber sees
    assert negotiated_text("nimbro", {"/y": "TCPROS via relay", "/u": "TCPROS via relay"}) == \
        "y, u nimbro relay across the link (TCPROS between relay and node)"
    assert "via relay" not in negotiated_text("multimaster", {"/y": "TCPROS+NODELAY via relay"})
    assert negotiated_text("udp/tcp_nodelay", {"/flows/image": "TCPROS+NODELAY", "/y": "UDPROS", "/u": "UDPROS"}) \
        == "flows/image TCPROS+NODELAY; y, u UDPROS"


def test_the_step_figure_is_cropped_and_drawn_per_transport(campaign):
    md = (campaign / "report.md").read_text()
    caption = next(line for line in _section(md, "Step response against the local baseline").splitlines()
                   if line.startswith("*"))
    assert "median of its runs (line) and their min–max (band)" in caption
    shown = float(re.search(r"the first ([\d.]+) s", caption).group(1))
    assert 1.5 <= shown < 2.5 < 150 * 0.02                                      # the transient, not the whole run
    assert (campaign / "figures" / "step_response.png").stat().st_size > 10_000
    t = list(np.arange(250) * 0.02)
    runs = [{"t": t, "step": {"SettlingTime": s}, "baseline_step": {"SettlingTime": 0.8}} for s in (0.9, 1.6)]
    assert plots.transient_end(runs) == pytest.approx(2.4)                      # 1.5 × the longest settling
    assert plots.transient_end(runs[:1]) == pytest.approx(1.5)                  # at least 1.5 s
    runs[0]["step"]["SettlingTime"] = float("nan")            # one did not settle: cropped to the others
    assert plots.transient_end(runs) == pytest.approx(2.4)
    runs[1]["step"]["SettlingTime"] = float("nan")            # none settled: all of it
    assert plots.transient_end(runs) == pytest.approx(t[-1])


def test_an_unstable_transport_does_not_flatten_the_others():
    """The panels are scaled to the runs that settled (and the baseline); the unstable one is cut
    at the frame, its legend entry saying it did not settle."""
    import matplotlib.pyplot as plt
    t = np.arange(100) * 0.02
    base = 0.5 * (1 - np.exp(-t / 0.1))
    calm = {"t": list(t), "y": list(base + 0.01), "baseline_y": list(base), "step": {"SettlingTime": 0.5},
            "baseline_step": {"SettlingTime": 0.5}}
    wild = dict(calm, y=list(base + 3 * np.sin(20 * t)), step={"SettlingTime": float("nan")})
    fig, (ax, dev) = plt.subplots(2, 1)
    plots._scale_to_settled([calm, wild], 1.5, ax, dev)
    assert ax.get_ylim()[1] < 1.0 and dev.get_ylim()[1] < 100        # not the ±3 V swing of the unstable run
    fig2, (ax2, dev2) = plt.subplots(2, 1)
    plots._scale_to_settled([calm], 1.5, ax2, dev2)                  # all settled: matplotlib's own limits
    assert ax2.get_ylim() == (0.0, 1.0)
    plt.close(fig)
    plt.close(fig2)


def test_sig_never_dumps_digits():
    assert [sig(v) for v in (6.8512, 46.858, 148.2, 1e-13, -4.2e-4, 0.5, 101.258)] == \
        ["6.85", "46.9", "148", "0", "0", "0.500", "101"]


def _flow(delay_ms: float, mdr: float = 1.0) -> FlowResult:
    return FlowResult(flow="image", kind="generic", entry="image", ok=True, MDR=mdr, bandwidth_mbit=2.6,
                      period={"mean_ms": 200.0, "std_ms": 1.0},
                      delay={"p50_ms": delay_ms, "p99_ms": delay_ms + 5, "mean_ms": delay_ms, "std_ms": 1.0})


def test_flows_only_decision_ranks_by_the_delay():
    runs = []
    for transport, ds in (("tcp", (120.0, 121.0, 119.0)), ("udp", (110.0, 110.5, 111.0)),
                          ("nimbro", (110.2, 112.0, 111.5))):
        for k, d in enumerate(ds):
            runs.append(RunAnalysis(run_id=f"{transport}-r{k}", transport=transport, status="complete",
                                    loop_type="none", cell={"condition": transport},
                                    flows=[_flow(d, 0.99 if transport == "nimbro" else 1.0)]))
    section = decision.flow_section(runs, ["tcp", "udp", "nimbro"], {"udp": "UDPROS"})
    table = next(b for b in section.blocks if b.kind == "table")
    assert table.header == ["rank", "transport", "D p50 [ms]", "D p99 [ms]", "std J_d [ms]", "MDR [%]", "BW [Mbit/s]",
                            "verdict"]
    rows = {r[1]: r for r in table.cells()}
    assert rows["udp"][0] == "1" and rows["udp"][-1] == "best" and rows["udp"][2] == "110 (110–111)"
    assert rows["nimbro"][-1] == "indistinguishable from best" and rows["nimbro"][5] == "99"
    assert rows["tcp"][-1] == "worse by 9.5 ms (9 %)"
    assert any(b.kind == "ul" and b.items == ["**udp**: UDPROS"] for b in section.blocks)


def _step(scale: float) -> StepResponse:
    t = np.arange(50) * 0.05
    return StepResponse(t=t.tolist(), y=(1 - np.exp(-t / (0.2 * scale))).tolist(), step=1.0, metrics={})


def test_teleop_decision_ranks_against_the_local_trial():
    def run(run_id, transport, scale, local=False):
        trial = TeleopRunResult(run_dir="", run_id=run_id, status="complete", transport=transport, local=local,
                                ok=True, speed=_step(scale), heading=_step(scale),
                                odom_delay={"p50_ms": 2.0 * scale, "p99_ms": 5.0 * scale},
                                command_age={"mean_ms": 3.0})
        return RunAnalysis(run_id=run_id, transport=transport, status="complete", loop_type="teleop",
                           cell={"condition": transport}, result=trial)
    runs = [run("local", "tcp", 1.0, local=True), run("udp-r0", "udp", 1.0), run("udp-r1", "udp", 1.01),
            run("tcp-r0", "tcp", 2.0), run("tcp-r1", "tcp", 2.1)]
    section = teleop_decision(runs, {})
    rows = {r[1]: r for r in next(b for b in section.blocks if b.kind == "table").cells()}
    assert rows["udp"][-1] == "best" and rows["tcp"][-1].startswith("worse by ") and rows["tcp"][-1].count(" s (")
