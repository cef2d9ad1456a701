"""``netloop report``: report.md, CSV tables and PNG figures for a run or a whole experiment.

The report reads only what the runs left on disk, so it can be rewritten at any time; a
broken run is listed with its problems, never dropped and never a crash.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from statistics import median
from typing import Any

from . import plots
from .flow_run import analyse_flow
from .loop_run import analyse_loop_run, load_loop_run


class ReportError(RuntimeError):
    pass


def find_run_dirs(path: Path) -> list[Path]:
    """A run directory itself, or every run below an experiment's ``runs/``."""
    path = Path(path)
    if not path.is_dir():
        raise ReportError(f"{path}: no such directory")
    if (path / "metadata.json").exists() or (path / "records").is_dir():
        return [path]
    runs = sorted(p for p in (path / "runs").glob("*") if p.is_dir()) if (path / "runs").is_dir() else []
    if not runs:
        raise ReportError(f"{path}: neither a run directory (metadata.json) nor an experiment (runs/)")
    return runs


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


RUN_COLUMNS = [
    ("run", lambda a: a["run_id"]),
    ("transport", lambda a: a["transport"]),
    ("status", lambda a: a["status"]),
    ("negotiated", lambda a: ", ".join(f"{k.strip('/')} {v}" for k, v in a.get("negotiated_transport", {}).items())
     or "–"),
    ("overshoot [%]", lambda a: a["step"]["Overshoot"]),
    ("settling [s]", lambda a: a["step"]["SettlingTime"]),
    ("rise [s]", lambda a: a["step"]["RiseTime"]),
    ("y final [V]", lambda a: a["step"]["SteadyStateValue"]),
    ("IAE [V·s]", lambda a: a["tracking"]["IAE"]),
    ("ΔIAE [V·s]", lambda a: a["delta_IAE"]),
    ("IAE(y − baseline) [mV·s]", lambda a: 1e3 * a["deviation"]["IAE"]),
    ("y delay mean [ms]", lambda a: a["sensor"]["delay"]["mean_ms"]),
    ("y delay p99 [ms]", lambda a: a["sensor"]["delay"]["p99_ms"]),
    ("u delay mean [ms]", lambda a: a["actuation"]["delay"]["mean_ms"]),
    ("u delay p99 [ms]", lambda a: a["actuation"]["delay"]["p99_ms"]),
    ("RTT median [ms]", lambda a: a["rtt"]["p50_ms"]),
    ("MDR y", lambda a: a["sensor"]["MDR"]),
    ("MDR u", lambda a: a["actuation"]["MDR"]),
    ("stale u", lambda a: a["stale_actuations"]),
]


def _value(col, a):
    try:
        return col(a)
    except (KeyError, TypeError):
        return None


def _md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v, 3) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in rows:
            w.writerow(["" if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in row])


def analyse_run(run_dir: Path) -> dict[str, Any]:
    """Loop and flow analyses of one run directory (never raises for a broken one)."""
    run = load_loop_run(run_dir)
    exp = run.meta.get("experiment") or {}
    has_loop = (exp.get("loop") or {}).get("type", "rlc") != "none"
    if has_loop:
        a = analyse_loop_run(run)
    else:  # flows only: the loop's record files are not expected
        a = {"run_id": run.run_id, "transport": run.transport, "status": run.status, "ok": False,
             "problems": [p for p in run.problems if "record file missing" not in p]}
    a["has_loop"] = has_loop
    a["flows"] = [analyse_flow(run.run_dir, f) for f in exp.get("flows") or []]
    for f in a["flows"]:
        a["problems"] += [f"flow {f['flow']}: {p}" for p in f["problems"]]
    return a


FLOW_COLUMNS = ["transport", "runs", "mean J_d [ms]", "std J_d [ms]", "mean D [ms]", "std D [ms]", "MDR [%]",
                "BW [Mbit/s]"]


def _flow_rows(analyses: list[dict], name: str) -> list[list[Any]]:
    """One row per transport (median over its repetitions), the Pound paper's table layout."""
    by_transport: dict[str, list[dict]] = {}
    for a in analyses:
        for f in a["flows"]:
            if f["flow"] == name and f["ok"]:
                by_transport.setdefault(a["transport"], []).append(f)
    rows = []
    for transport, fl in by_transport.items():
        def med(get):
            vals = [v for v in (get(f) for f in fl) if v is not None and not math.isnan(v)]
            return median(vals) if vals else None
        rows.append([transport, len(fl), med(lambda f: f["period"]["mean_ms"]), med(lambda f: f["period"]["std_ms"]),
                     med(lambda f: f["delay"]["mean_ms"]), med(lambda f: f["delay"]["std_ms"]),
                     med(lambda f: 100 * f["MDR"]), med(lambda f: f["bandwidth_mbit"])])
    return rows


def write_report(path: Path) -> Path:
    """Analyse every run under ``path`` and write report.md, CSV tables and figures/ there."""
    path = Path(path)
    analyses = [analyse_run(d) for d in find_run_dirs(path)]
    fig_dir = path / "figures"
    fig_dir.mkdir(exist_ok=True)
    loop_runs = [a for a in analyses if a["has_loop"]]
    # Tables and figures use complete runs only; the others are listed under Problems, and
    # kept in the per-run table, so nothing disappears silently.
    usable = [a for a in analyses if a["status"] == "complete"]
    excluded = [a for a in analyses if a["status"] != "complete"]
    good = [a for a in usable if a["has_loop"] and a["ok"]]

    header = [name for name, _ in RUN_COLUMNS]
    rows = [[_value(col, a) for _, col in RUN_COLUMNS] for a in loop_runs]
    if loop_runs:
        _write_csv(path / "runs.csv", header, rows)
    (path / "analysis.json").write_text(json.dumps(
        [{k: v for k, v in a.items() if k not in ("t", "y", "baseline_y")} |
         {"flows": [{k: v for k, v in f.items() if k not in ("delays_ms", "periods_ms")} for f in a["flows"]]}
         for a in analyses], indent=1, default=str), encoding="utf-8")

    md = [f"# netloop report: {path.name}", ""]
    meta = _first_metadata(path, analyses)
    if meta:
        exp = meta.get("experiment", {})
        link = meta.get("link") or {}
        params = link.get("params") or {}
        md += [f"- experiment: **{exp.get('name', '?')}** — {exp.get('description', '')}".rstrip(" —"),
               f"- link: `{link.get('profile', exp.get('link', '?'))}`"
               f"{' — ' + params['description'] if params.get('description') else ''}"
               f"{'; overrides ' + str(exp['link_params']) if exp.get('link_params') else ''}",
               f"- git {((meta.get('git') or {}).get('commit') or '?')[:10]}"
               f"{' (dirty)' if (meta.get('git') or {}).get('dirty') else ''}; "
               f"host {(meta.get('host') or {}).get('cpu', '?')} ×{(meta.get('host') or {}).get('cores', '?')}",
               f"- runs: {len(analyses)} ({sum(1 for a in analyses if not a['problems'])} without problems)", ""]
    if good:
        plots.step_overlay(good, fig_dir / "step_response.png")
        b = good[0]
        md += ["## Step response against the local baseline", "",
               "![step response](figures/step_response.png)", "",
               f"Local baseline (python-control, ZOH at T = {b['period_s'] * 1e3:.0f} ms, zero delay): "
               f"overshoot {_fmt(b['baseline_step']['Overshoot'])} %, settling time "
               f"{_fmt(b['baseline_step']['SettlingTime'], 3)} s, rise time {_fmt(b['baseline_step']['RiseTime'], 3)} s, "
               f"final value {_fmt(b['baseline_step']['SteadyStateValue'], 3)} V, "
               f"IAE {_fmt(b['baseline_tracking']['IAE'], 4)} V·s.", ""]
        md += ["## Loop, per transport (median over repetitions)", "", _summary_table(good), ""]
        md += ["### Loop messages per direction", "", _direction_table(good), ""]
        for key, title in (("sensor", "y: plant → controller"), ("actuation", "u: controller → plant")):
            samples = {}
            for a in good:
                samples.setdefault(a["transport"], []).extend(a[key]["delays_ms"])
            name = f"delay_{key}.png"
            plots.delay_histograms(good, samples, fig_dir / name, title=f"One-way delay, {title}")
            md += [f"![delay {key}](figures/{name})", ""]

    flow_names = list(dict.fromkeys(f["flow"] for a in analyses for f in a["flows"]))
    for name in flow_names:
        spec = next(f for a in analyses for f in a["flows"] if f["flow"] == name)
        rows_f = _flow_rows(usable, name)
        _write_csv(path / f"flow_{name}.csv", FLOW_COLUMNS, rows_f)
        mean_bytes = [f["mean_bytes"] for a in usable for f in a["flows"] if f["flow"] == name and f["ok"]]
        md += [f"## Flow `{name}` ({spec['kind']}"
               f"{', %.0f bytes per message' % median(mean_bytes) if mean_bytes else ''})", "",
               _md_table(FLOW_COLUMNS, rows_f), ""]
        for what, key, label in (("delay", "delays_ms", "one-way delay D [ms]"),
                                 ("period", "periods_ms", "period at the destination J_d [ms]")):
            samples = {}
            for a in usable:
                for f in a["flows"]:
                    if f["flow"] == name and f["ok"]:
                        samples.setdefault(a["transport"], []).extend(f[key])
            fig = f"flow_{name}_{what}.png"
            plots.delay_histograms([], samples, fig_dir / fig, xlabel=label, title=f"Flow {name}: {label}")
            md += [f"![flow {name} {what}](figures/{fig})", ""]

    if excluded:
        md += ["**Excluded from the tables and figures above** (see Problems): " +
               ", ".join(f"`{a['run_id']}` ({a['status']})" for a in excluded), ""]
    if loop_runs:
        md += ["## Every loop run", "", _md_table(header, rows), ""]
    broken = [a for a in analyses if a["problems"]]
    if broken:
        md += ["## Problems", ""]
        md += [f"- `{a['run_id']}` ({a['status']}): " + "; ".join(a["problems"]) for a in broken]
        md += [""]
    md += ["Columns: overshoot, settling (2 % band) and rise time (10–90 %) from python-control's `step_info`; "
           "IAE = Σ|r − y|·T; ΔIAE = IAE − IAE of the baseline (small for a P loop, whose steady-state error "
           "dominates IAE); IAE(y − baseline) = Σ|y − y_baseline|·T, how far the response strays from the "
           "local one; delays are one-way, from the sender's "
           "publish to the receiver's callback (one shared clock on one machine); RTT is measured on the "
           "plant's clock from a sample to the actuation answering it; MDR = delivered / sent. Flow tables "
           "follow the Pound paper's layout: J_d is the period at the destination, D the one-way delay, "
           "BW the bandwidth used at the receiver.", ""]
    report = path / "report.md"
    report.write_text("\n".join(md), encoding="utf-8")
    return report


def _first_metadata(path: Path, analyses: list[dict]) -> dict:
    for d in find_run_dirs(path):
        try:
            return json.loads((d / "metadata.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return {}


DIRECTION_COLUMNS = ["run", "direction", "sent", "MDR", "delay mean [ms]", "std [ms]", "p50 [ms]", "p95 [ms]",
                     "p99 [ms]", "period at receiver mean [ms]", "period std [ms]"]


def _direction_table(good: list[dict]) -> str:
    """Every run's loop messages per direction: delay percentiles and the receiver's period."""
    rows = []
    for a in good:
        for key, label in (("sensor", "y plant→controller"), ("actuation", "u controller→plant")):
            d = a[key]
            rows.append([a["run_id"], label, d["sent"], d["MDR"], d["delay"]["mean_ms"], d["delay"]["std_ms"],
                         d["delay"]["p50_ms"], d["delay"]["p95_ms"], d["delay"]["p99_ms"], d["period"]["mean_ms"],
                         d["period"]["std_ms"]])
    return _md_table(DIRECTION_COLUMNS, rows)


def _summary_table(good: list[dict]) -> str:
    by_transport: dict[str, list[dict]] = {}
    for a in good:
        by_transport.setdefault(a["transport"], []).append(a)
    header = ["transport", "runs", "overshoot [%]", "Δovershoot [pp]", "settling [s]", "ΔIAE [V·s]",
              "IAE(y − baseline) [mV·s]",
              "y delay mean [ms]", "u delay mean [ms]", "RTT p50 [ms]", "RTT p99 [ms]", "MDR u"]
    rows = []
    for name, runs in by_transport.items():
        def med(f):
            vals = [v for v in (_value(f, a) for a in runs) if v is not None and not math.isnan(v)]
            return median(vals) if vals else None
        rows.append([name, len(runs), med(lambda a: a["step"]["Overshoot"]), med(lambda a: a["delta_overshoot_pp"]),
                     med(lambda a: a["step"]["SettlingTime"]), med(lambda a: a["delta_IAE"]),
                     med(lambda a: 1e3 * a["deviation"]["IAE"]),
                     med(lambda a: a["sensor"]["delay"]["mean_ms"]), med(lambda a: a["actuation"]["delay"]["mean_ms"]),
                     med(lambda a: a["rtt"]["p50_ms"]), med(lambda a: a["rtt"]["p99_ms"]),
                     med(lambda a: a["actuation"]["MDR"])])
    return _md_table(header, rows)
