"""``netloop compare A B``: two campaigns side by side.

Both campaigns are analysed as ``netloop report`` does (their directories are only read).
Conditions are matched per setting and transport when both campaigns swept the same
settings, else per transport (each campaign's runs pooled). For every matched condition the
tables give A's value, B's value and the difference B − A (medians over the repetitions);
the figure overlays the step responses (A solid, B dashed) over the local baseline.

Writes into ``out`` (default: the current directory): compare.html (self-contained),
compare.md, compare.csv and compare_figures/*.png.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from . import degradation, plots, step_report
from .loop_sections import slug
from .rendering import Document, Section
from .report import analyse_run, find_run_dirs
from .results import ConditionGroup
from .rlc_result import rlc_loop, rlc_result
from .tables import write_csv

DEGRADATION_KEYS = [("iae_dev_mVs", degradation.IAE_RUN), ("delta_overshoot_pp", "Δovershoot [pp]"),
                    ("settling_s", "settling [s]"), ("pred_rms_mV", "prediction RMS [mV]")]
NETWORK_KEYS = [("rtt_mean_ms", "RTT mean [ms]"), ("rtt_std_ms", "RTT std [ms]"), ("y_mean_ms", "y one-way mean [ms]"),
                ("u_mean_ms", "u one-way mean [ms]"), ("u_p99_ms", "u one-way p99 [ms]"), ("mdr_u", "MDR u [%]")]


class Campaign:
    def __init__(self, path: Path, label: str | None = None):
        self.path = Path(path)
        self.label = label or self.path.resolve().name
        self.analyses = [analyse_run(d) for d in find_run_dirs(self.path)]
        self.loop_runs = [a for a in self.analyses if rlc_result(a) is not None]   # the rlc runs analysed
        self.points = [degradation.run_point(r.loop, r.prediction) for r in map(rlc_result, self.loop_runs)]
        self.good = {a.run_id: rlc_loop(a) for a in self.loop_runs if a.ok and a.status == "complete"}

    def settings(self) -> set[str]:
        return {p.setting for p in self.points if p.ok}


def _groups(c: Campaign, pooled: bool) -> dict[tuple[str, str], ConditionGroup]:
    pts = [dataclasses.replace(p, setting="all runs", settings={}) if pooled else p for p in c.points]
    return {(g.setting, g.transport): g for g in degradation.group(pts)}


def _med(g: ConditionGroup | None, key: str) -> float:
    return g.stats[key]["median"] if g and g.stats[key]["n"] else math.nan


def _diff(a: float, b: float) -> float:
    return b - a if math.isfinite(a) and math.isfinite(b) else math.nan


def compare(a_dir: Path, b_dir: Path, out: Path = Path("."), labels: tuple[str, str] | None = None) -> Document:
    """Write compare.md, compare.html, compare.csv and compare_figures/ into ``out``; returns the
    document (``written``: the paths of compare.md and compare.html)."""
    A = Campaign(a_dir, labels[0] if labels else None)
    B = Campaign(b_dir, labels[1] if labels else None)
    if A.label == B.label:
        A.label, B.label = f"A: {A.label}", f"B: {B.label}"
    out = Path(out)
    fig_dir = out / "compare_figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    pooled = A.settings() != B.settings()
    ga, gb = _groups(A, pooled), _groups(B, pooled)
    keys = list(dict.fromkeys(list(ga) + list(gb)))
    both = [k for k in keys if k in ga and k in gb]

    doc = Document(f"netloop compare: {A.label} vs {B.label}", base=out)
    doc.add(Section().ul([f"**A** = `{A.label}` ({A.path}): {len(A.analyses)} runs, {len(A.good)} usable loop runs",
            f"**B** = `{B.label}` ({B.path}): {len(B.analyses)} runs, {len(B.good)} usable loop runs",
            "matched per " + ("transport, each campaign's runs pooled (the campaigns swept different settings: "
                              f"A {sorted(A.settings()) or '–'}, B {sorted(B.settings()) or '–'})" if pooled
                              else "setting and transport"),
            "values are medians over the repetitions; Δ = B − A"]))

    summary = []
    for k in both:
        x, y = ga[k], gb[k]
        where = "" if k[0] in (degradation.NO_SWEEP, "all runs") else f"{k[0]}, "
        ia, ib = _med(x, "iae_dev_mVs"), _med(y, "iae_dev_mVs")
        ra, rb = _med(x, "rtt_mean_ms"), _med(y, "rtt_mean_ms")
        rel = f", {100 * (ib - ia) / ia:+.0f} %" if ia else ""
        summary.append(f"{where}**{k[1]}**: IAE(y − baseline) per run {ia:.2f} → {ib:.2f} mV·s ({ib - ia:+.2f} mV·s{rel}) "
                       f"while the mean loop delay went {ra:.2f} → {rb:.2f} ms; Δovershoot "
                       f"{_med(x, 'delta_overshoot_pp'):.2f} → {_med(y, 'delta_overshoot_pp'):.2f} pp.")
    only = [f"{k[1]}{'' if k[0] in (degradation.NO_SWEEP, 'all runs') else ' ' + k[0]} only in "
            f"{'A' if k in ga else 'B'}" for k in keys if k not in both]
    if only:
        summary.append("Not in both campaigns: " + "; ".join(only) + ".")
    for c, name in ((A, "A"), (B, "B")):
        bad = [p for p in c.points if p.ok and p.status == "complete" and p.verdict != "settled"]
        if bad:
            summary.append(f"In {name}, runs that did not settle or were unstable: "
                           + ", ".join(f"`{p.run_id}` ({p.verdict})" for p in bad) + ".")
    if summary:
        section = Section("Summary")
        for s in summary:
            section.p(s, "summary")
        doc.add(section)

    header = ["transport", "quantity", "A", "B", "Δ = B − A", "Δ [%]"]
    csv_rows = []
    for setting in dict.fromkeys(k[0] for k in keys):
        rows = []
        for k in (k for k in keys if k[0] == setting):
            x, y = ga.get(k), gb.get(k)
            rows.append([k[1], "runs", x.n if x else 0, y.n if y else 0, None, None])
            for key, label in DEGRADATION_KEYS + NETWORK_KEYS:
                scale = degradation.CSV_SCALE.get(key, 1.0)          # MDR in %, ΔIAE in mV·s
                va, vb = scale * _med(x, key), scale * _med(y, key)
                d = _diff(va, vb)
                rel = f"{100 * d / abs(va):+.1f}" if math.isfinite(d) and va else None
                rows.append([k[1], label, va, vb, d, rel])
        doc.add(Section("Per transport" + ("" if setting in (degradation.NO_SWEEP, "all runs") else f", {setting}"))
                .table(header, rows, digits=3))
        csv_rows += [[setting] + r for r in rows]
    write_csv(out / "compare.csv", ["setting"] + header, csv_rows)

    doc.add(step_report.compare_section([a for a in A.loop_runs if a.ok and a.status == "complete"],
                                        [b for b in B.loop_runs if b.ok and b.status == "complete"], (A.label, B.label)))
    if both:
        overlays = Section("Step responses, A (solid) vs B (dashed)")
        by_setting: dict[str, list[tuple[str, str]]] = {}
        for k in both:
            by_setting.setdefault(k[0], []).append(k)
        for setting, ks in by_setting.items():
            pairs = [(f"{k[1]}" + ("" if setting in (degradation.NO_SWEEP, "all runs") else f", {setting}"),
                      [A.good[r] for r in ga[k].run_ids], [B.good[r] for r in gb[k].run_ids]) for k in ks]
            name = f"overlay__{slug(setting)}.png"
            plots.compare_overlay(pairs, (f"A {A.label}", f"B {B.label}"), fig_dir / name,
                                  title=f"Step response, A vs B{'' if setting in (degradation.NO_SWEEP, 'all runs') else ', ' + setting}")
            overlays.fig(fig_dir / name, f"One panel per transport: A `{A.label}` solid, B `{B.label}` dashed, "
                                    "local baseline grey.")

        doc.add(overlays)

    problems = [f"{name} `{a.run_id}` ({a.status}): " + "; ".join(a.problems)
                for c, name in ((A, "A"), (B, "B")) for a in c.analyses if a.problems]
    if problems:
        doc.add(Section("Problems").ul(problems, "problems"))
    doc.write(out / "compare.md", out / "compare.html")
    return doc
