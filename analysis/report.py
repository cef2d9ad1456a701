"""``netloop report``: report.html (self-contained), report.md, CSV tables and PNG figures
for a run or a whole campaign.

The report reads only what the runs left on disk, so it can be rewritten at any time; a
broken run (truncated file, missing metadata or records, a crash of its analysis) is listed
with its problems, never dropped and never a crash.

Files written into the results directory:

    report.html       everything below in one page, figures embedded (base64 PNG)
    report.md         the same text and tables, figures linked from figures/
    runs.csv          every loop run (the table "Every loop run")
    degradation.csv   one point per loop run: degradation, delay, jitter, MDR, prediction error
    conditions.csv    per condition (setting x transport): n, mean, std, min, max, median of each
    prediction.csv    per loop run: the prediction error of the three replays
    flow_<name>.csv   per flow, the Pound paper's table
    analysis.json     every number (without the time series)
    figures/*.png
"""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from . import baseline, degradation, metrics, plots, prediction
from .flow_run import analyse_flow
from .html import Doc
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
    """A Markdown table (also used by teleop_run)."""
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
    """Loop, prediction and flow analyses of one run directory (never raises: whatever goes
    wrong is one of the run's problems)."""
    run_dir = Path(run_dir)
    try:
        return _analyse_run(run_dir)
    except Exception as err:  # an analysis bug or a record nobody foresaw: report it, go on
        return {"run_id": run_dir.name, "transport": "?", "status": "unknown", "ok": False, "has_loop": False,
                "loop_type": "?", "flows": [], "prediction": None,
                "problems": [f"analysis failed: {type(err).__name__}: {err}"]}


def _analyse_run(run_dir: Path) -> dict[str, Any]:
    run = load_loop_run(run_dir)
    exp = run.meta.get("experiment") or {}
    loop_type = (exp.get("loop") or {}).get("type", "rlc")
    has_loop = loop_type == "rlc"
    if has_loop:
        a = analyse_loop_run(run)
        a["prediction"] = prediction.analyse_prediction(run) if a["ok"] else None
    else:  # flows only or teleop: the RLC loop's record files are not expected
        a = {"run_id": run.run_id, "transport": run.transport, "status": run.status, "ok": False,
             "cell": exp.get("cell"), "prediction": None,
             "problems": [p for p in run.problems if "record file missing" not in p]}
    a["has_loop"], a["loop_type"] = has_loop, loop_type
    if loop_type == "teleop":  # its own analysis (teleop_run) finds what is wrong with it
        from .teleop_run import analyse_teleop_run  # noqa: PLC0415
        a["problems"] += [p for p in analyse_teleop_run(run_dir)["problems"] if p not in a["problems"]]
    if has_loop and run.meta and not exp:
        a["problems"].append("metadata.json has no experiment configuration")
    a["flows"] = [analyse_flow(run.run_dir, f) for f in exp.get("flows") or []]
    for f in a["flows"]:
        a["problems"] += [f"flow {f['flow']}: {p}" for p in f["problems"]]
    if a.get("prediction"):
        a["problems"] += a["prediction"]["problems"]
    return a


FLOW_COLUMNS = ["transport", "runs", "mean J_d [ms]", "std J_d [ms]", "mean D [ms]", "std D [ms]", "MDR [%]",
                "BW [Mbit/s]"]


def _flow_rows(analyses: list[dict], name: str, by_setting: bool = False) -> list[list[Any]]:
    """One row per transport (median over its repetitions), the Pound paper's table layout;
    with ``by_setting``, one row per sweep setting and transport, the setting first."""
    by_key: dict[tuple[str, str], list[dict]] = {}
    for a in analyses:
        for f in a["flows"]:
            if f["flow"] == name and f["ok"]:
                setting = degradation.cell_of(a)[1] if by_setting else ""
                by_key.setdefault((setting, a["transport"]), []).append(f)
    rows = []
    for (setting, transport), fl in by_key.items():
        def med(get):
            vals = [v for v in (get(f) for f in fl) if v is not None and not math.isnan(v)]
            return median(vals) if vals else None
        rows.append(([setting] if by_setting else []) + [
            transport, len(fl), med(lambda f: f["period"]["mean_ms"]), med(lambda f: f["period"]["std_ms"]),
            med(lambda f: f["delay"]["mean_ms"]), med(lambda f: f["delay"]["std_ms"]),
            med(lambda f: 100 * f["MDR"]), med(lambda f: f["bandwidth_mbit"])])
    return rows


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text).strip("_") or "all"


def missing_cells(path: Path, analyses: list[dict]) -> list[dict]:
    """Cells campaign.json lists whose run directory is not there (never run, or removed)."""
    try:
        cells = json.loads((Path(path) / "campaign.json").read_text(encoding="utf-8")).get("cells") or []
    except (OSError, ValueError, AttributeError):
        return []
    present = {a["run_id"] for a in analyses} | {p.name for p in (Path(path) / "runs").glob("*")}
    return [c for c in cells if isinstance(c, dict) and c.get("run_id") not in present]


def delay_model(loop: dict, samples: int, x_max_ms: float, points: int = 25) -> dict:
    """Degradation of the loop under a constant loop delay d (exact replay, no jitter, no
    loss): the reference line of the degradation-vs-delay figure."""
    base = baseline.local_baseline(loop, samples)
    base_os = metrics.step_metrics(base.t, base.y)["Overshoot"]
    T = loop["plant"]["period"]
    xs = np.linspace(0.0, max(x_max_ms, 1.0), points)
    iae, dov, stable = [], [], []
    r = loop["controller"]["reference"]
    for d in xs:
        y = baseline.simulate_loop(loop, np.full(samples, d / 1e3)).y
        step = metrics.step_metrics(base.t, y)
        iae.append(1e3 * metrics.integral_errors(y - base.y, T)["IAE"])
        dov.append(step["Overshoot"] - base_os)
        stable.append(degradation.verdict(base.t, y, step, r) == "settled")
    return {"x": xs.tolist(), "iae_dev_mVs": iae, "delta_overshoot_pp": dov, "settled": stable,
            "label": "model: constant loop delay (exact replay)"}


def _same_loop(good: list[dict], metas: dict[str, dict]) -> dict | None:
    """The loop configuration shared by every good run (plant and controller), else None."""
    loops = [(metas.get(a["run_id"]) or {}).get("experiment", {}).get("loop") for a in good]
    if not loops or any(lp is None for lp in loops):
        return None
    key = [json.dumps([lp["plant"], lp["controller"]], sort_keys=True) for lp in loops]
    return loops[0] if len(set(key)) == 1 else None


def _pm(s: dict, digits: int = 2) -> str:
    """'mean ± std (min–max)' of a spread, or the value alone for one run."""
    if not s["n"]:
        return "–"
    if s["n"] == 1:
        return f"{s['mean']:.{digits}f}"
    return f"{s['mean']:.{digits}f} ± {s['std']:.{digits}f} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def _campaign_experiment(path: Path) -> dict | None:
    """The campaign's experiment as started (experiment.yaml), before any sweep setting."""
    try:
        import yaml  # noqa: PLC0415
        doc = yaml.safe_load((Path(path) / "experiment.yaml").read_text(encoding="utf-8"))
    except (OSError, ValueError, ImportError):
        return None
    except Exception:  # yaml.YAMLError: a damaged file is not the report's concern here
        return None
    return doc if isinstance(doc, dict) else None


def _read_meta(run_dir: Path) -> dict:
    try:
        return json.loads((Path(run_dir) / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def write_report(path: Path) -> Path:
    """Analyse every run under ``path`` and write report.html, report.md, CSV tables and
    figures/ there; returns the path of report.md."""
    path = Path(path)
    run_dirs = find_run_dirs(path)
    analyses = [analyse_run(d) for d in run_dirs]
    metas = {a["run_id"]: _read_meta(d) for a, d in zip(analyses, run_dirs)}
    fig_dir = path / "figures"
    fig_dir.mkdir(exist_ok=True)
    loop_runs = [a for a in analyses if a["has_loop"]]
    # Tables and figures use complete runs only; the others are listed under Problems, and
    # kept in the per-run table, so nothing disappears silently.
    usable = [a for a in analyses if a["status"] == "complete"]
    excluded = [a for a in analyses if a["status"] != "complete"]
    good = [a for a in usable if a["has_loop"] and a["ok"]]
    points = [degradation.run_point(a, a.get("prediction")) for a in loop_runs]
    campaign_exp = _campaign_experiment(path) or {}
    order = campaign_exp.get("transport")
    groups = degradation.group(points, order if isinstance(order, list) else None)
    settings = degradation.settings_in_order(groups)
    swept = settings != [degradation.NO_SWEEP]
    transports = list(dict.fromkeys(g["transport"] for g in groups))
    good.sort(key=lambda a: (settings.index(degradation.cell_of(a)[1]) if degradation.cell_of(a)[1] in settings
                             else len(settings), transports.index(a["transport"]) if a["transport"] in transports
                             else len(transports), a["run_id"]))
    absent = missing_cells(path, analyses)

    header = [name for name, _ in RUN_COLUMNS]
    rows = [[_value(col, a) for _, col in RUN_COLUMNS] for a in loop_runs]
    if loop_runs:
        _write_csv(path / "runs.csv", header, rows)
        _write_points_csv(path / "degradation.csv", points)
        _write_groups_csv(path / "conditions.csv", groups)
        _write_prediction_csv(path / "prediction.csv", loop_runs)
    _write_analysis_json(path / "analysis.json", analyses, points)

    doc = Doc(f"netloop report: {path.name}", base=path)
    meta = next((m for m in metas.values() if m), {})
    exp = campaign_exp or meta.get("experiment") or {}
    if meta:
        link = meta.get("link") or {}
        params = link.get("params") or {}
        sweep = exp.get("sweep") or {}
        doc.ul([f"experiment: **{exp.get('name', '?')}** — {exp.get('description', '')}".rstrip(" —"),
                f"link: `{link.get('profile', exp.get('link', '?'))}`"
                f"{' — ' + params['description'] if params.get('description') else ''}"
                f"{'; overrides ' + str(exp['link_params']) if exp.get('link_params') else ''}",
                *(["sweep: " + "; ".join(f"`{k}` = {v}" for k, v in sweep.items())] if sweep else []),
                f"repetitions: {exp.get('repetitions', '?')}",
                f"git {((meta.get('git') or {}).get('commit') or '?')[:10]}"
                f"{' (dirty)' if (meta.get('git') or {}).get('dirty') else ''}; "
                f"host {(meta.get('host') or {}).get('cpu', '?')} ×{(meta.get('host') or {}).get('cores', '?')}",
                f"runs: {len(analyses)} ({sum(1 for a in analyses if not a['problems'])} without problems)"
                + (f"; {len(absent)} listed in campaign.json but missing" if absent else "")])

    broken = [a for a in analyses if a["problems"]]
    # -- summary ---------------------------------------------------------------------------
    summary = degradation.summary_sentences(groups, points) if good else []
    preds = [a["prediction"] for a in good if a.get("prediction") and a["prediction"]["ok"]]
    findings = [s for s in (prediction.finding(p) for p in preds) if s]
    if preds:
        worst = max(preds, key=lambda p: p["rms_mV"])
        if findings:
            summary.append(f"Prediction from measured delays: {len(findings)} of {len(preds)} runs are **not** "
                           f"explained by their delay and loss (RMS error above {prediction.RMS_THRESHOLD_MV:g} mV); "
                           "see the findings under Prediction.")
        else:
            mean_only = max(p["modes"]["mean_delay"]["rms_mV"] for p in preds)
            jittery = sum(p["modes"]["mean_delay"]["rms_mV"] > prediction.RMS_THRESHOLD_MV for p in preds)
            summary.append(f"Prediction from measured delays: replaying each run's measured delays reproduces every "
                           f"run (largest RMS error {worst['rms_mV']:.2g} mV, threshold "
                           f"{prediction.RMS_THRESHOLD_MV:g} mV): delay and loss explain the degradation. The median "
                           f"delay alone, without its jitter, leaves up to {mean_only:.2f} mV RMS"
                           + (f", above the threshold in {jittery} of {len(preds)} runs: there the jitter of the "
                              "delay, not only its mean, shaped the response." if jittery else
                              ": the mean delay alone explains these runs."))
    if broken or absent:
        summary.append(f"{len(broken) + len(absent)} run(s) have problems (see Problems)"
                       + (f"; {len(excluded)} are excluded from the tables and figures." if excluded else "."))
    if summary:
        doc.h(2, "Summary")
        for s in summary:
            doc.p(s, "summary")

    # -- loop ------------------------------------------------------------------------------
    if good:
        doc.h(2, "Step response against the local baseline")
        for setting in settings:
            runs = [a for a in good if degradation.cell_of(a)[1] == setting]
            if not runs:
                continue
            name = "step_response.png" if not swept else f"step_response__{slug(setting)}.png"
            title = "RLC loop step response" + ("" if not swept else f", {setting}")
            plots.step_overlay(runs, fig_dir / name, title=title)
            b = runs[0]
            if swept:
                doc.h(3, setting)
            doc.fig(fig_dir / name, f"y(t) of every run over the local baseline (grey){', ' + setting if swept else ''}; "
                                    "lower panel: y − baseline [mV].")
            doc.p(f"Local baseline (python-control, ZOH at T = {b['period_s'] * 1e3:.0f} ms, zero delay): "
                  f"overshoot {_fmt(b['baseline_step']['Overshoot'])} %, settling time "
                  f"{_fmt(b['baseline_step']['SettlingTime'], 3)} s, rise time "
                  f"{_fmt(b['baseline_step']['RiseTime'], 3)} s, final value "
                  f"{_fmt(b['baseline_step']['SteadyStateValue'], 3)} V, "
                  f"IAE {_fmt(b['baseline_tracking']['IAE'], 4)} V·s.")
        doc.h(2, "Loop, per condition (median over repetitions)" if swept else
              "Loop, per transport (median over repetitions)")
        doc.table(*_summary_table(good, swept))
        _degradation_section(doc, groups, good, metas, fig_dir, swept)
        _prediction_section(doc, good, settings, fig_dir, swept, findings)
        doc.h(3, "Loop messages per direction")
        doc.table(DIRECTION_COLUMNS, _direction_rows(good))
        for key, title in (("sensor", "y: plant → controller"), ("actuation", "u: controller → plant")):
            samples: dict[str, dict[str, list[float]]] = {}
            for a in good:
                samples.setdefault(degradation.cell_of(a)[1], {}).setdefault(a["transport"], []).extend(
                    a[key]["delays_ms"])
            name = f"delay_{key}.png"
            plots.delay_histograms_by_setting(samples, fig_dir / name, title=f"One-way delay, {title}")
            doc.fig(fig_dir / name, f"Histogram of the one-way delay of every loop message, {title}"
                                    f"{', one panel per setting' if swept else ''}.")

    _teleop_section(doc, run_dirs, fig_dir, analyses)

    # -- flows -----------------------------------------------------------------------------
    flow_names = list(dict.fromkeys(f["flow"] for a in analyses for f in a["flows"]))
    flows_swept = len({degradation.cell_of(a)[1] for a in usable if a["flows"]}) > 1
    flow_columns = (["setting"] if flows_swept else []) + FLOW_COLUMNS
    for name in flow_names:
        spec = next(f for a in analyses for f in a["flows"] if f["flow"] == name)
        rows_f = _flow_rows(usable, name, flows_swept)
        if flows_swept:   # in sweep order (numbers as numbers)
            labels = {degradation.cell_of(a)[1]: degradation.cell_of(a)[2] for a in usable}
            rank = sorted(labels, key=lambda k: (degradation.setting_sort_key(labels[k]), k))
            rows_f.sort(key=lambda r: rank.index(r[0]) if r[0] in rank else len(rank))
        _write_csv(path / f"flow_{name}.csv", flow_columns, rows_f)
        mean_bytes = [f["mean_bytes"] for a in usable for f in a["flows"] if f["flow"] == name and f["ok"]]
        doc.h(2, f"Flow `{name}` ({spec['kind']}"
                 f"{', %.0f bytes per message' % median(mean_bytes) if mean_bytes else ''})")
        doc.table(flow_columns, rows_f)
        for what, key, label in (("delay", "delays_ms", "one-way delay D [ms]"),
                                 ("period", "periods_ms", "period at the destination J_d [ms]")):
            samples_f: dict[str, dict[str, list[float]]] = {}
            for a in usable:
                for f in a["flows"]:
                    if f["flow"] == name and f["ok"]:
                        setting = degradation.cell_of(a)[1] if flows_swept else degradation.NO_SWEEP
                        samples_f.setdefault(setting, {}).setdefault(a["transport"], []).extend(f[key])
            fig = f"flow_{name}_{what}.png"
            if flows_swept:
                plots.delay_histograms_by_setting(dict(sorted(samples_f.items(), key=lambda kv: rank.index(kv[0])
                                                              if kv[0] in rank else len(rank))),
                                                  fig_dir / fig, xlabel=label, title=f"Flow {name}: {label}")
            else:
                plots.delay_histograms([], samples_f.get(degradation.NO_SWEEP, {}), fig_dir / fig, xlabel=label,
                                       title=f"Flow {name}: {label}")
            doc.fig(fig_dir / fig, f"Flow {name}: histogram of the {label} per transport"
                                   f"{', one panel per setting' if flows_swept else ''}.")

    if excluded:
        doc.p("**Excluded from the tables and figures above** (see Problems): " +
              ", ".join(f"`{a['run_id']}` ({a['status']})" for a in excluded))
    if loop_runs:
        doc.h(2, "Every loop run")
        doc.table(header, rows)
    if broken or absent:
        doc.h(2, "Problems")
        doc.ul([f"`{a['run_id']}` ({a['status']}): " + "; ".join(a["problems"]) for a in broken] +
               [f"`{c.get('run_id')}` ({c.get('status') or 'missing'}): listed in campaign.json, but its run "
                f"directory is missing{': ' + str(c['error']) if c.get('error') else ''}" for c in absent],
               "problems")
    doc.p("Columns: overshoot, settling (2 % band) and rise time (10–90 %) from python-control's `step_info`; "
          "IAE = Σ|r − y|·T; ΔIAE = IAE − IAE of the baseline (small for a P loop, whose steady-state error "
          "dominates IAE); IAE(y − baseline) = Σ|y − y_baseline|·T, how far the response strays from the "
          "local one; delays are one-way, from the sender's "
          "publish to the receiver's callback (one shared clock on one machine); RTT is measured on the "
          "plant's clock from a sample to the actuation answering it (the loop delay; its std is the loop's "
          "jitter); MDR = delivered / sent. Flow tables "
          "follow the Pound paper's layout: J_d is the period at the destination, D the one-way delay, "
          "BW the bandwidth used at the receiver.")
    report = path / "report.md"
    doc.write(report, path / "report.html")
    return report


def _degradation_section(doc: Doc, groups: list[dict], good: list[dict], metas: dict, fig_dir: Path,
                         swept: bool) -> None:
    doc.h(2, "Degradation against delay and jitter")
    loop = _same_loop(good, metas)
    model = None
    if loop is not None:
        xmax = max((g["stats"]["rtt_mean_ms"]["max"] for g in groups if g["stats"]["rtt_mean_ms"]["n"]),
                   default=1.0)
        model = delay_model(loop, min(a["samples"] for a in good), 1.25 * xmax + 0.2)
    plots.degradation_scatter(groups, "rtt_mean_ms", "loop delay: RTT mean (sample → its actuation) [ms]",
                              fig_dir / "degradation_vs_delay.png", "Degradation against the loop delay",
                              model=model)
    plots.degradation_scatter(groups, "rtt_std_ms", "loop jitter: RTT std [ms]",
                              fig_dir / "degradation_vs_jitter.png", "Degradation against the loop jitter")
    doc.fig(fig_dir / "degradation_vs_delay.png",
            "One point per condition at the mean over its repetitions, bars min–max over the repetitions, "
            "small dots the single runs; colour = transport, marker = setting. The dashed line is the loop "
            "under a constant delay (exact model): points on it are explained by their mean delay alone.")
    doc.fig(fig_dir / "degradation_vs_jitter.png",
            "The same degradation against the jitter of the loop delay (standard deviation of the RTT).")
    header = (["setting"] if swept else []) + [
        "transport", "runs", "IAE(y − baseline) [mV·s]", "Δovershoot [pp]", "settling [s]", "RTT mean [ms]",
        "RTT std [ms]", "y one-way mean/std/p95/p99 [ms]", "u one-way mean/std/p95/p99 [ms]", "MDR y / u",
        "settled / not / unstable"]
    rows = []
    for g in groups:
        s = g["stats"]

        def four(d):
            return " / ".join(_fmt(s[f"{d}_{k}_ms"]["mean"]) for k in ("mean", "std", "p95", "p99"))
        rows.append(([g["setting"]] if swept else []) + [
            g["transport"], g["n"], _pm(s["iae_dev_mVs"]), _pm(s["delta_overshoot_pp"]), _pm(s["settling_s"], 3),
            _pm(s["rtt_mean_ms"]), _pm(s["rtt_std_ms"]), four("y"), four("u"),
            f"{_fmt(s['mdr_y']['mean'], 3)} / {_fmt(s['mdr_u']['mean'], 3)}",
            " / ".join(str(g["verdicts"][v]) for v in ("settled", "did not settle", "unstable"))])
    doc.p("Per condition: mean ± std (min–max) over the repetitions (a single value for one run); "
          "one-way columns are means over the repetitions. All numbers per run: `degradation.csv`; "
          "n, mean, std, min, max, median per condition: `conditions.csv`.")
    doc.table(header, rows, digits=2)


def _prediction_section(doc: Doc, good: list[dict], settings: list[str], fig_dir: Path, swept: bool,
                        findings: list[str]) -> None:
    doc.h(2, "Prediction from measured delays")
    doc.p("Each run's own actuation trace (sample k's stamp → arrival at the plant of the u answering k, from "
          "`records/plant.csv`; a lost or stale u updates nothing) replayed through the exact loop model "
          "(`baseline.simulate_loop`) at the real sample times gives ŷ, the response delay and loss alone would "
          "produce. Error = ŷ − y; a run is explained when its RMS error is at most "
          f"{prediction.RMS_THRESHOLD_MV:g} mV (1 % of the 0.5 V steady state). Two coarser replays show what "
          "matters: the measured delays at nominal sample times k·T (no sampling jitter), and the median "
          "delay alone (no jitter at all).")
    header = (["setting"] if swept else []) + [
        "run", "transport", "lost u", "stale u", "RMS [mV]", "max [mV]", "Δovershoot [pp]",
        "RMS, nominal times [mV]", "RMS, median delay only [mV]", "Δovershoot, median delay only [pp]", "verdict"]
    rows = []
    for a in good:
        p = a.get("prediction")
        setting = degradation.cell_of(a)[1]
        if not p or not p["ok"]:
            rows.append(([setting] if swept else []) + [a["run_id"], a["transport"]] + [None] * 8 +
                        ["no prediction: " + "; ".join((p or {}).get("problems", []))])
            continue
        m = p["modes"]
        rows.append(([setting] if swept else []) + [
            a["run_id"], a["transport"], p["lost"], p["stale"], p["rms_mV"], p["max_mV"], p["delta_overshoot_pp"],
            m["delays"]["rms_mV"], m["mean_delay"]["rms_mV"], m["mean_delay"]["delta_overshoot_pp"],
            "explained" if p["explained"] else "NOT explained"])
    doc.table(header, rows, digits=4)
    if findings:
        doc.h(3, "Findings")
        doc.ul(findings, "finding")
    for setting in settings:
        preds = [a["prediction"] for a in good if degradation.cell_of(a)[1] == setting
                 and a.get("prediction") and a["prediction"]["ok"]]
        if not preds:
            continue
        name = "prediction.png" if not swept else f"prediction__{slug(setting)}.png"
        plots.prediction_overlay(preds, fig_dir / name, title="Predicted from measured delays vs measured"
                                 + (f", {setting}" if swept else ""))
        doc.fig(fig_dir / name, "Measured y (colour) and ŷ predicted from the run's measured delays (black dashed)"
                                f"{', ' + setting if swept else ''}; lower panel: ŷ − y in mV for the prediction "
                                "(solid) and for the median delay alone (dashed).")


def _teleop_section(doc: Doc, run_dirs: list[Path], fig_dir: Path, analyses: list[dict]) -> None:
    """The teleoperation part (analysis.teleop_run), when the campaign has teleop runs."""
    if not any(a.get("loop_type") == "teleop" for a in analyses):
        return
    try:
        from .teleop_run import teleop_section  # noqa: PLC0415
        lines = teleop_section(run_dirs, fig_dir)
    except Exception as err:  # keep the rest of the report
        doc.h(2, "Teleoperation trial")
        doc.p(f"The teleoperation analysis failed: {type(err).__name__}: {err}", "problems")
        return
    doc_from_markdown(doc, lines, fig_dir.parent)


def doc_from_markdown(doc: Doc, lines: list[str], base: Path) -> None:
    """Add Markdown lines (headings, images, pipe tables, paragraphs) to ``doc``."""
    lines = [line for chunk in lines for line in chunk.split("\n")]  # a chunk may hold several lines
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if not line:
            i += 1
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            doc.h(level, line[level:].strip())
            i += 1
        elif m := re.fullmatch(r"!\[([^\]]*)\]\(([^)]+)\)", line):
            doc.fig(base / m.group(2), m.group(1))
            i += 1
        elif line.startswith("|"):
            table = []
            while i < len(lines) and lines[i].startswith("|"):
                table.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            body = [r for r in table[1:] if not all(set(c) <= set("-:") for c in r)]
            doc.table(table[0], body)
        else:
            doc.p(line)
            i += 1


DIRECTION_COLUMNS = ["run", "direction", "sent", "MDR", "delay mean [ms]", "std [ms]", "p50 [ms]", "p95 [ms]",
                     "p99 [ms]", "period at receiver mean [ms]", "period std [ms]"]


def _direction_rows(good: list[dict]) -> list[list[Any]]:
    """Every run's loop messages per direction: delay percentiles and the receiver's period."""
    rows = []
    for a in good:
        for key, label in (("sensor", "y plant→controller"), ("actuation", "u controller→plant")):
            d = a[key]
            rows.append([a["run_id"], label, d["sent"], d["MDR"], d["delay"]["mean_ms"], d["delay"]["std_ms"],
                         d["delay"]["p50_ms"], d["delay"]["p95_ms"], d["delay"]["p99_ms"], d["period"]["mean_ms"],
                         d["period"]["std_ms"]])
    return rows


def _direction_table(good: list[dict]) -> str:
    return _md_table(DIRECTION_COLUMNS, _direction_rows(good))


def _summary_table(good: list[dict], swept: bool = False) -> tuple[list[str], list[list[Any]]]:
    """Per transport (per setting and transport with a sweep): medians over the repetitions."""
    by_cond: dict[tuple[str, str], list[dict]] = {}
    for a in good:
        by_cond.setdefault((degradation.cell_of(a)[1], a["transport"]), []).append(a)
    header = (["setting"] if swept else []) + [
        "transport", "runs", "overshoot [%]", "Δovershoot [pp]", "settling [s]", "ΔIAE [V·s]",
        "IAE(y − baseline) [mV·s]", "y delay mean [ms]", "u delay mean [ms]", "RTT p50 [ms]", "RTT p99 [ms]",
        "MDR u"]
    rows = []
    for (setting, name), runs in by_cond.items():
        def med(f):
            vals = [v for v in (_value(f, a) for a in runs) if v is not None and not math.isnan(v)]
            return median(vals) if vals else None
        rows.append(([setting] if swept else []) + [
            name, len(runs), med(lambda a: a["step"]["Overshoot"]), med(lambda a: a["delta_overshoot_pp"]),
            med(lambda a: a["step"]["SettlingTime"]), med(lambda a: a["delta_IAE"]),
            med(lambda a: 1e3 * a["deviation"]["IAE"]),
            med(lambda a: a["sensor"]["delay"]["mean_ms"]), med(lambda a: a["actuation"]["delay"]["mean_ms"]),
            med(lambda a: a["rtt"]["p50_ms"]), med(lambda a: a["rtt"]["p99_ms"]),
            med(lambda a: a["actuation"]["MDR"])])
    return header, rows


POINT_META = ["run_id", "transport", "setting", "condition", "repetition", "status", "verdict", "explained"]


def _write_points_csv(path: Path, points: list[dict]) -> None:
    header = POINT_META + [label for _, label in degradation.POINT_FIELDS]
    _write_csv(path, header, [[p.get(k) for k in POINT_META] + [p.get(k) for k, _ in degradation.POINT_FIELDS]
                              for p in points])


def _write_groups_csv(path: Path, groups: list[dict]) -> None:
    stats = ("n", "mean", "std", "min", "max", "median")
    header = ["setting", "transport", "runs", "settled", "did not settle", "unstable"] + [
        f"{label} {s}" for _, label in degradation.POINT_FIELDS for s in stats]
    rows = []
    for g in groups:
        rows.append([g["setting"], g["transport"], g["n"], g["verdicts"]["settled"], g["verdicts"]["did not settle"],
                     g["verdicts"]["unstable"]] + [g["stats"][k][s] for k, _ in degradation.POINT_FIELDS for s in stats])
    _write_csv(path, header, rows)


def _write_prediction_csv(path: Path, loop_runs: list[dict]) -> None:
    header = ["run", "transport", "setting", "samples", "lost u", "stale u", "explained"] + [
        f"{mode} {what}" for mode in prediction.MODES for what in ("RMS [mV]", "max [mV]", "Δovershoot [pp]")]
    rows = []
    for a in loop_runs:
        p = a.get("prediction")
        if not p or not p.get("ok"):
            continue
        rows.append([a["run_id"], a["transport"], degradation.cell_of(a)[1], p["samples"], p["lost"], p["stale"],
                     p["explained"]] + [p["modes"][m][k] for m in prediction.MODES
                                        for k in ("rms_mV", "max_mV", "delta_overshoot_pp")])
    _write_csv(path, header, rows)


def _write_analysis_json(path: Path, analyses: list[dict], points: list[dict]) -> None:
    def strip_prediction(p):
        if not p:
            return p
        return {k: v for k, v in p.items() if k not in ("t", "y", "modes")} | {
            "modes": {m: {k: v for k, v in d.items() if k != "y_hat"} for m, d in (p.get("modes") or {}).items()}}
    by_run = {p["run_id"]: p for p in points}
    out = []
    for a in analyses:
        d = {k: v for k, v in a.items() if k not in ("t", "y", "baseline_y", "prediction", "flows")}
        d["degradation"] = by_run.get(a["run_id"])
        for key in ("sensor", "actuation"):
            if key in d:
                d[key] = {k: v for k, v in d[key].items() if k != "delays_ms"}
        d["prediction"] = strip_prediction(a.get("prediction"))
        d["flows"] = [{k: v for k, v in f.items() if k not in ("delays_ms", "periods_ms")} for f in a["flows"]]
        out.append(d)
    path.write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
