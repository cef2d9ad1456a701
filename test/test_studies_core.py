"""The verdict rules every study shares (netloop.studies.core), the reproduction files and the
docs block made from them, and `netloop reproduce --list` on the command line."""
from __future__ import annotations

import json
import subprocess

import pytest

from netloop import paths
from netloop.studies import core, docs as study_docs
from netloop.studies.cli import write_reproduction
from netloop.studies.core import Comparison, Part, ShapeCheck, Study, StudyResult, Tolerance


def test_tolerance_factor_absolute_and_points():
    assert Tolerance(factor=2).holds(10, 19.9) and Tolerance(factor=2).holds(10, 5.0)
    assert not Tolerance(factor=2).holds(10, 20.1) and not Tolerance(factor=2).holds(10, 4.9)
    assert Tolerance(factor=2, absolute=3).holds(4.1, 7.0)      # the absolute band saves it
    assert not Tolerance(factor=2, absolute=3).holds(4.1, 9.0)
    assert Tolerance(points=2).holds(99.8, 97.8) and not Tolerance(points=2).holds(99.8, 97.7)
    assert Tolerance(factor=2, absolute=3).describe() == "×2 or ±3"
    with pytest.raises(ValueError):
        Tolerance()
    with pytest.raises(ValueError):
        Tolerance(factor=0.5)


def test_comparison_verdicts_and_ratio():
    tol = Tolerance(factor=1.5)
    assert Comparison("a", "ms", 10, 12, tol).verdict == core.MATCH
    assert Comparison("a", "ms", 10, 16, tol).verdict == core.MISS
    assert Comparison("a", "ms", 10, 16, tol).ratio == pytest.approx(1.6)
    assert Comparison("a", "ms", None, 16, tol).verdict == core.ONLY        # published on purpose absent
    assert Comparison("a", "ms", 10, None, tol).verdict == core.NOT_MEASURED
    assert Comparison("a", "ms", 10, float("nan"), tol).verdict == core.NOT_MEASURED
    with pytest.raises(ValueError, match="basis"):
        Comparison("a", "ms", 1, 1, tol, basis="guess")
    assert ShapeCheck("knee", "x", "y", None).verdict == core.NOT_MEASURED
    assert ShapeCheck("knee", "x", "y", False).verdict == core.FAILS


def _result() -> StudyResult:
    return StudyResult("demo", [Comparison("Table I laser D, TCP", "ms", 18.6, 25.0, Tolerance(factor=2, absolute=3)),
                                Comparison("Table III D, TCP", "ms", None, 7.0),
                                Comparison("CPU ratio 50/100 %", "×", 1.35, 2.1, Tolerance(factor=1.25), "ratio")],
                       [ShapeCheck("UDPROS collapses", "falls to almost nothing at 64 KB", "0.1 Mbit/s at 64 KB", True)],
                       {}, ["1 of 7 runs left out"])


def test_result_markdown_and_tally():
    r = _result()
    assert r.tally() == {core.MATCH: 1, core.ONLY: 1, core.MISS: 1, core.HOLDS: 1}
    md = r.markdown()
    assert "| Table I laser D, TCP | ms | 18.6 | 25 | 1.34 | ×2 or ±3 | absolute | match |" in md
    assert "| Table III D, TCP | ms |  | 7 |  |  | absolute | netloop only |" in md
    assert "| CPU ratio 50/100 % | × | 1.35 | 2.1 | 1.56 | ×1.25 | ratio | miss |" in md
    assert "| UDPROS collapses |" in md and "holds" in md and "- 1 of 7 runs left out" in md
    assert r.summary_line() == "demo: 1 match, 1 miss, 1 holds, 1 netloop only"


def test_reproduction_written_and_rendered_into_the_docs_block(tmp_path):
    campaign = tmp_path / "demo_tables-20261126-101010"
    (campaign / "runs" / "r0").mkdir(parents=True)
    (campaign / "runs" / "r0" / "metadata.json").write_text(json.dumps(
        {"start_time": "2026-11-26T10:10:10", "host": {"cpu": "Test CPU", "cores": 2, "kernel": "6.1"}}))
    study = Study("demo", "Demo study", "A. Author, Demo, 2020", [Part("tables", "x.yaml", "Table I")],
                  compare=lambda campaigns: _result())
    result = _result()
    result.campaigns = {"tables": campaign}
    out = write_reproduction(study, result, quick=True, parent=tmp_path)
    data = json.loads((out / "reproduction.json").read_text())
    assert data["quick"] and data["tally"][core.MATCH] == 1 and data["campaigns"]["tables"] == f"../{campaign.name}"
    assert "Table I: `experiments/x.yaml`" in (out / "reproduction.md").read_text()
    # read back: the same verdicts by the same rules
    back = study_docs.result_from_json(data)
    assert [c.verdict for c in back.comparisons] == [c.verdict for c in result.comparisons]
    assert back.comparisons[0].tolerance == Tolerance(factor=2, absolute=3)
    assert study_docs.newest_reproduction(tmp_path, "demo") == out
    from netloop import docgen_results
    text = study_docs.block("demo", tmp_path, None, docgen_results.run_metadata, docgen_results.campaign_date,
                            docgen_results.machine)
    assert "quick variants" in text and "measured 2026-11-26 on Test CPU, 2 cores; Linux 6.1" in text
    assert "| Table I laser D, TCP |" in text
    # nothing reproduced: the command that measures it
    assert "netloop reproduce other" in study_docs.block("other", tmp_path, None, *[None] * 3)


def test_reproduce_list_and_bad_input_on_the_command_line():
    run = lambda *a: subprocess.run([str(paths.REPO / "bin" / "netloop"), "reproduce", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=60)
    listed = run("--list")
    assert listed.returncode == 0, listed.stderr
    for name in ("pound", "jordan", "maruyama", "sanap"):
        assert name in listed.stdout
    bad = run("nosuch")
    assert bad.returncode == 2 and "no study 'nosuch'" in bad.stderr and "pound" in bad.stderr
    none = run()
    assert none.returncode == 2 and "--list" in none.stderr
