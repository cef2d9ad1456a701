"""`netloop compare A B`: two (synthetic) campaigns side by side, matched per setting and
transport, with A, B and B − A for every number, overlays, and self-contained HTML."""
from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from netloop.analysis import degradation, synthetic
from netloop.analysis.compare import Campaign
from netloop.cli import main


def make(tmp_path, name, extra_ms, sweep=(0, 10)):
    def delays(cell, cfg, rng):
        n = cfg["loop"]["samples"]
        d = (cfg["link_params"]["delay_ms"] + extra_ms + (1.0 if cell.transport == "tcp" else 0.3)) / 1e3
        return [d + rng.uniform(0, 0.001, n) for _ in range(2)]
    return synthetic.write_campaign(tmp_path / name, {
        "name": name, "link": "shaped", "transport": ["tcp", "udp"], "repetitions": 2,
        "sweep": {"link_params.delay_ms": list(sweep)}, "loop": {"samples": 70}}, delays)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmp")
    return make(tmp, "wired", 0.0), make(tmp, "radio", 5.0), tmp


def test_compare_writes_side_by_side_tables(pair, monkeypatch, capsys):
    a, b, tmp = pair
    monkeypatch.chdir(tmp)                     # default --out: the current directory
    assert main(["compare", str(a), str(b)]) == 0
    printed = capsys.readouterr().out          # the Summary for the terminal, then the two files
    assert "netloop: summary\n  - " in printed and "  - delay_ms=10, udp: IAE(y − baseline)" in printed
    assert printed.splitlines()[-2:] == ["compare.html", "compare.md"]
    md = (tmp / "compare.md").read_text()
    html = (tmp / "compare.html").read_text()
    assert "matched per setting and transport" in md
    assert "## Per transport, delay_ms=10" in md
    A, B = Campaign(a), Campaign(b)
    ga = {(g["setting"], g["transport"]): g for g in degradation.group(A.points)}
    gb = {(g["setting"], g["transport"]): g for g in degradation.group(B.points)}
    with open(tmp / "compare.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for key in ga:
        for field, label in (("iae_dev_mVs", "IAE(y − baseline) per run [mV·s]"), ("rtt_mean_ms", "RTT mean [ms]")):
            row = next(r for r in rows if (r["setting"], r["transport"], r["quantity"]) == (*key, label))
            va, vb = ga[key]["stats"][field]["median"], gb[key]["stats"][field]["median"]
            assert float(row["A"]) == pytest.approx(va) and float(row["B"]) == pytest.approx(vb)
            assert float(row["Δ = B − A"]) == pytest.approx(vb - va)
            assert f"| {key[1]} | {label} | {va:.3f} | {vb:.3f} | {vb - va:.3f} |" in md
    # 5 ms more each way: about 10 ms more loop delay, and more degradation, for every condition
    for key in ga:
        assert gb[key]["stats"]["rtt_mean_ms"]["median"] - ga[key]["stats"]["rtt_mean_ms"]["median"] == \
            pytest.approx(10.0, abs=0.5)
        assert gb[key]["stats"]["iae_dev_mVs"]["median"] > ga[key]["stats"]["iae_dev_mVs"]["median"]
    assert "delay_ms=10, **udp**: IAE(y − baseline)" in md
    refs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']""", html)
    assert len(refs) == 2 and all(r.startswith("data:image/png;base64,") for r in refs)
    for setting in ("delay_ms=0", "delay_ms=10"):
        assert (tmp / "compare_figures" / f"overlay__{setting}.png").stat().st_size > 10_000


def test_campaigns_with_different_sweeps_are_compared_per_transport(pair, tmp_path):
    a, _, tmp = pair
    c = make(tmp, "other", 2.0, sweep=(20,))
    (c / "runs" / "udp__delay_ms=20-r1" / "records" / "plant.csv").unlink()      # a broken run in B
    out = tmp_path / "out"
    assert main(["compare", str(a), str(c), "--out", str(out), "--labels", "wired", "far"]) == 0
    md = (out / "compare.md").read_text()
    assert "matched per transport, each campaign's runs pooled" in md
    assert "**A** = `wired`" in md and "**B** = `far`" in md
    assert "| udp | runs | 4 | 1 |" in md
    assert "## Problems" in md and "B `udp__delay_ms=20-r1`" in md and "record file missing" in md


def test_compare_refuses_a_directory_that_is_no_campaign(tmp_path, capsys):
    assert main(["compare", str(tmp_path), str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "neither a run directory" in capsys.readouterr().err


def test_unit_synthetic_campaign_layout(pair):
    a, _, _ = pair
    assert sorted(p.name for p in (a / "runs").iterdir()) == sorted(
        f"{t}__delay_ms={d}-r{r}" for t in ("tcp", "udp") for d in (0, 10) for r in (0, 1))
    assert np.isfinite(Campaign(a).points[0]["iae_dev_mVs"])
