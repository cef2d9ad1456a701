"""`netloop reproduce STUDY --quick` from end to end for two studies, as a user runs it: every
part's experiment runs for real (namespaces, emulated links, roscore, nodes), each campaign gets
its report, and the comparison is printed and written with a verdict on every row.

These runs take minutes (jordan ~5, sanap ~4 by --dry-run's estimate), so they are their own CI
step: `make test-studies` (NETLOOP_TEST_STUDIES=1), which .ci/run runs after `make test`. The
Pound study's quick reproduction (~14 min: 76 runs on the emulated Wi-Fi, every transport in
every part) is left to `netloop reproduce pound --quick`; its parts' mechanisms are tested in
`make test` (test_study_pound.py on synthetic records, the experiment files validated, the
interface-down outage, the Wi-Fi link).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from netloop import paths
from netloop.studies import core, load

pytestmark = [
    pytest.mark.studies,   # the studies' quick reproductions: make test-studies
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]

VERDICTS = {core.MATCH, core.MISS, core.ONLY, core.NOT_MEASURED, core.HOLDS, core.FAILS}


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("study", ["jordan", "sanap"])
def test_a_quick_reproduction_runs_every_part_and_judges_every_row(study, tmp_path):
    res = subprocess.run([str(paths.REPO / "bin" / "netloop"), "reproduce", study, "--quick",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=1450)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = [d for d in tmp_path.iterdir() if d.name.startswith(f"reproduce_{study}-quick-")]
    assert len(out) == 1, sorted(p.name for p in tmp_path.iterdir())
    data = json.loads((out[0] / "reproduction.json").read_text())
    parts = [p.name for p in load(study).parts]
    # every part ran into its own campaign, with its report
    assert sorted(data["campaigns"]) == sorted(parts)
    for part, rel in data["campaigns"].items():
        campaign = (out[0] / rel).resolve()
        assert (campaign / "analysis.json").is_file() and (campaign / "report.md").is_file(), part
    rows = data["comparisons"] + data["checks"]
    assert rows and {r["verdict"] for r in rows} <= VERDICTS
    # the table printed is the one written, and most rows were measured (a lagging link may
    # leave a few runs out; a whole study "not measured" is a broken run, not noise)
    assert data["study"] in res.stdout and "| item | unit | published | netloop |" in res.stdout
    measured = [r for r in rows if r["verdict"] != core.NOT_MEASURED]
    assert len(measured) >= 0.75 * len(rows), [r for r in rows if r["verdict"] == core.NOT_MEASURED]
    # every published number compared has both columns and the ratio of the two
    for r in data["comparisons"]:
        if r["verdict"] in (core.MATCH, core.MISS):
            assert r["published"] and r["netloop"] is not None and r["tolerance"], r
            assert r["ratio"] == pytest.approx(r["netloop"] / r["published"]), r
