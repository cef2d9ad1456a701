"""The default experiment of `make run` (experiments/pound_fig21.yaml), in its --quick variant,
end to end through bin/netloop over the ns-3 802.11a link (root only).

Eleven runs and a report (about 1.5 minutes): with the studies' quick reproductions, a whole
experiment file run as a user runs it, in `make test-studies` (NETLOOP_TEST_STUDIES=1), which
.ci/run runs after `make test`. `make test` covers its parts: the file validated and dry-run
(test_docs), every transport over the same link (test_echo_flow, test_transport_*), the report
on campaigns of its shape (test_report*, test_docs)."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from netloop import paths
from netloop.transports import transport_names

pytestmark = [pytest.mark.integration, pytest.mark.root,
              pytest.mark.studies,   # the default experiment's quick run: make test-studies
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")]


def test_quick_default_experiment_produces_the_report(tmp_path):
    res = subprocess.run([str(paths.REPO / "bin" / "netloop"), "run", "--quick",
                          str(paths.EXPERIMENTS / "pound_fig21.yaml"), "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    report = Path(re.search(r"report written to (\S+)", res.stdout).group(1))
    assert re.search(r"netloop: summary\n  - \S+ kept the loop closest to local", res.stdout), res.stdout[-3000:]
    assert report.name == "report.html" and report.is_file()
    report = report.with_name("report.md")
    camp = report.parent
    cells = json.loads((camp / "campaign.json").read_text())["cells"]
    assert [c["transport"] for c in cells] == transport_names()          # every transport, once
    assert all(c["status"] in ("complete", "invalid") for c in cells), cells
    text = report.read_text()
    assert "figures/step_response.png" in text and "## Flow `image`" in text
    assert (camp / "figures" / "step_response.png").stat().st_size > 10_000
    # the control engineer's answer: the loop's margins, every complete transport against them
    summary = text.split("## Summary\n", 1)[1].split("\n## ", 1)[0]
    assert "**delay margin 148 ms**" in summary and "**jitter margin 90.4 ms**" in summary
    measured = next(p for p in summary.split("\n\n") if p.startswith("Measured loop delay"))
    complete = [c for c in cells if c["status"] == "complete"]
    assert all(f"{c['transport']} " in measured for c in complete), measured
    # its exports: the tables and one MCAP file per complete run
    assert (camp / "steps.csv").is_file() and (camp / "margins.csv").is_file()
    assert sorted(p.stem for p in (camp / "mcap").glob("*.mcap")) == sorted(c["run_id"] for c in complete)
