"""``netloop report``: report.html (self-contained), report.md, CSV tables and PNG figures
for a run or a whole campaign.

The report reads only what the runs left on disk, so it can be rewritten at any time; a
broken run (truncated file, missing metadata or records, a crash of its analysis) is listed
with its problems, never dropped and never a crash.

How it is built: :func:`analyse_run` gives one typed :class:`results.RunAnalysis` per run
directory (the analysis side of the run's loop kind, :class:`kinds.LoopAnalysis` found through
the one registry :func:`netloop.loops.loop_analysis`, analyses the loop; :mod:`flow_run` the
flows); the loop kinds and :mod:`flow_sections` turn them into :class:`rendering.Section`
s with tables (:mod:`tables`: one number formatter, one CSV writer); :mod:`rendering` writes
the Markdown and, through a Jinja2 template, the HTML.

The report answers first: after what was run and the Summary comes the decision table
(:mod:`decision`: per condition one row per transport, ranked, with its spread over the
repetitions and a verdict), then the figures and the detailed tables, and at the end the
glossary (:mod:`glossary`). Units are one per quantity: delays in ms, IAE in mV·s, MDR in %.

Files written into the results directory:

    report.html       everything below in one page, figures embedded (base64 PNG)
    report.md         the same text and tables, figures linked from figures/
    runs.csv and the loop kind's own tables (e.g. the rlc kind's steps.csv, margins.csv,
                      degradation.csv: netloop.loops.rlc.analysis)
    flow_<name>.csv   per flow, the Pound paper's table with the delay's percentiles
    analysis.json     every number (without the time series)
    mcap/<run>.mcap   each run's time series as ROS 2 messages (:mod:`mcap_export`)
    figures/*.png
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..loops import loop_analysis, loop_kind_names, loop_type_of
from ..run_files import RunFileError, RunRecord, has_campaign, load_campaign, save_analysis
from ..rundir import RunDir, invalid_attempts
from . import decision, exports, flow_sections, ros2_section, shard_section
from .flow_run import analyse_flow_receivers, recorded_flows
from .host_sections import cpu_section, machines_section, outages_section
from .kinds import LoopAnalysis, ReportContext
from .loop_run import read_run_metadata
from .rendering import Document, Section
from .results import RunAnalysis


class ReportError(RuntimeError):
    pass


def find_run_dirs(path: Path) -> list[Path]:
    """A run directory itself, or every run below an experiment's ``runs/``."""
    path = Path(path)
    if not path.is_dir():
        raise ReportError(f"{path}: no such directory")
    if RunDir(path).looks_like_a_run():
        return [path]
    runs = sorted(p for p in (path / "runs").glob("*") if p.is_dir()) if (path / "runs").is_dir() else []
    if not runs:
        raise ReportError(f"{path}: neither a run directory (metadata.json) nor an experiment (runs/)")
    return runs


def analyse_run(run_dir: Path) -> RunAnalysis:
    """Loop, prediction and flow analyses of one run directory (never raises: whatever goes
    wrong is one of the run's problems)."""
    run_dir = Path(run_dir)
    try:
        return _analyse_run(run_dir)
    except Exception as err:  # an analysis bug or a record nobody foresaw: report it, go on
        return RunAnalysis(run_id=run_dir.name, transport="?", status="unknown", loop_type="?",
                           problems=[f"analysis failed: {type(err).__name__}: {err}"])


def _analyse_run(run_dir: Path) -> RunAnalysis:
    meta, problems = read_run_metadata(run_dir)
    try:
        kind = loop_analysis(loop_type_of(meta))
    except KeyError as err:
        kind, problems = LoopAnalysis(), problems + [err.args[0]]
    a = kind.analyse_run(run_dir, meta)
    a.add_problems(problems)
    flows, flow_problems = recorded_flows(meta)
    a.add_problems(flow_problems)
    for recorded in flows:
        for f in analyse_flow_receivers(run_dir, recorded):
            a.flows.append(f)
            a.add_problems(f.problems, prefix=f"flow {f.label}: ")
    return a


def missing_cells(path: Path, analyses: list[RunAnalysis]) -> list[dict]:
    """Cells campaign.json lists whose run directory is not there (never run, or removed)."""
    try:
        cells = load_campaign(path).cells if has_campaign(path) else []
    except RunFileError:
        return []
    present = {a.run_id for a in analyses} | {p.name for p in (Path(path) / "runs").glob("*")}
    return [c.to_json() for c in cells if c.run_id not in present]


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


def _kinds_of(analyses: list[RunAnalysis]) -> list[tuple[LoopAnalysis, list[RunAnalysis]]]:
    """The loop kinds of the runs, each with its runs, in the registry's order (a run whose
    analysis failed belongs to none: its problems say why)."""
    by_kind: dict[str, list[RunAnalysis]] = {}
    for a in analyses:
        by_kind.setdefault(a.loop_type, []).append(a)
    return [(loop_analysis(name), by_kind[name]) for name in loop_kind_names() if name in by_kind]


def write_report(path: Path) -> Path:
    """Analyse every run under ``path`` and write report.html, report.md, CSV tables and
    figures/ there; returns the path of report.html."""
    return write_report_document(path).written[1]


def write_report_document(path: Path) -> Document:
    """:func:`write_report`, returning the report's document (its ``summary()`` is what the
    commands print; ``written`` the paths of report.md and report.html)."""
    path = Path(path)
    run_dirs = find_run_dirs(path)
    analyses = [analyse_run(d) for d in run_dirs]
    fig_dir = path / "figures"
    fig_dir.mkdir(exist_ok=True)
    campaign_exp = _campaign_experiment(path) or {}
    order = campaign_exp.get("transport")
    ctx = ReportContext(path=path, fig_dir=fig_dir, transport_order=order if isinstance(order, list) else None,
                        descriptions=decision.transport_descriptions(analyses))
    # Tables and figures use complete runs only; the others are listed under Problems, and
    # kept in the per-run table, so nothing disappears silently.
    usable = [a for a in analyses if a.status == "complete"]
    excluded = [a for a in analyses if a.status != "complete"]
    broken = [a for a in analyses if a.problems]
    absent = missing_cells(path, analyses)
    kinds = _kinds_of(analyses)

    points: dict[str, Any] = {}
    for kind, runs in kinds:
        kind.write_files(runs, ctx)
        points.update(kind.points(runs, ctx))
    save_analysis(path, [a.to_json(points.get(a.run_id)) for a in analyses])

    doc = Document(f"netloop report: {path.name}", base=path)
    meta = next((a.meta for a in analyses if not a.meta.empty), RunRecord())
    reruns = {d.name: n for d in run_dirs if (n := len(invalid_attempts(path, d.name)))}
    doc.add(opening(meta, campaign_exp or meta.experiment, analyses, absent, reruns))
    summary = [s for kind, runs in kinds for s in kind.summary(runs, ctx)]
    summary += [line for line in [shard_section.summary_line(path)] if line]
    if broken or absent:
        summary.append(f"{len(broken) + len(absent)} run(s) have problems (see Problems)"
                       + (f"; {len(excluded)} are excluded from the tables and figures." if excluded else "."))
    if summary:
        section = Section("Summary")
        for s in summary:
            section.p(s, "summary")
        doc.add(section)
    for kind, runs in kinds:
        try:
            doc.add(kind.decision(runs, ctx))
        except Exception as err:  # keep the rest of the report
            doc.add(Section("Decision table").p(f"The decision table failed: {type(err).__name__}: {err}", "problems"))
    for kind, runs in kinds:
        try:
            doc.add(*kind.sections(runs, ctx))
        except Exception as err:  # keep the rest of the report
            doc.add(Section(f"{kind.name} loop").p(f"This part of the analysis failed: {type(err).__name__}: {err}",
                                                    "problems"))
    doc.add(*flow_sections.sections(usable, path, fig_dir, _capacity(meta),
                                    order if isinstance(order, list) else None))
    doc.add(cpu_section(usable))
    doc.add(machines_section(analyses))
    doc.add(shard_section.section(path))
    doc.add(outages_section(usable))
    doc.add(ros2_section.section(usable))
    doc.add(closing([table for kind, runs in kinds if (table := kind.run_table(runs))], excluded, broken, absent,
                    [note for kind, _ in kinds if (note := kind.reading_note())]))
    doc.add(exports.write_and_link(path, analyses))
    doc.add(decision.glossary_section([kind.name for kind, _ in kinds]))
    doc.write(path / "report.md", path / "report.html")
    return doc


def _capacity(meta: RunRecord) -> float | None:
    """The link's nominal capacity [Mbit/s] as the run recorded it (metadata.json ->
    link.capacity_mbit); None when it has none (loopback, real machines) or the run directory
    is older than the record (:func:`_capacity_unknown`)."""
    value = meta.link.get("capacity_mbit")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _capacity_unknown(meta: RunRecord) -> bool:
    """An emulated link whose run directory does not record its capacity (written before
    link.capacity_mbit was); loopback and real machines have none to record."""
    link = meta.link
    return bool(link.get("params")) and "capacity_mbit" not in link and link.get("type") not in ("real", "loopback")


def opening(meta: RunRecord, exp: dict[str, Any], analyses: list[RunAnalysis], absent: list[dict],
            reruns: dict[str, int] | None = None) -> Section:
    """What was run: experiment, link, sweep, repetitions, revision and host, run count, and
    ``reruns`` (run id -> attempts judged invalid and run again)."""
    section = Section()
    if meta.empty:
        return section
    link = meta.link
    params = link.get("params") or {}
    sweep = exp.get("sweep") or {}
    git, host = meta.git, meta.host
    return section.ul([
        f"experiment: **{exp.get('name', '?')}** — {exp.get('description', '')}".rstrip(" —"),
        f"link: `{link.get('profile', exp.get('link', '?'))}`"
        f"{' — ' + params['description'] if params.get('description') else ''}"
        f"{'; overrides ' + str(exp['link_params']) if exp.get('link_params') else ''}"
        f"{'; nominal capacity unknown (not recorded in this run directory)' if _capacity_unknown(meta) else ''}",
        *(["sweep: " + "; ".join(f"`{k}` = {v}" for k, v in sweep.items())] if sweep else []),
        f"repetitions: {exp.get('repetitions', '?')}",
        f"git {(git.get('commit') or '?')[:10]}{' (dirty)' if git.get('dirty') else ''}; "
        f"host {host.get('cpu', '?')} ×{host.get('cores', '?')}" + _dates(analyses),
        f"runs: {len(analyses)} ({sum(1 for a in analyses if not a.problems)} without problems)"
        + (f"; {len(absent)} listed in campaign.json but missing" if absent else ""),
        *([rerun_line(reruns)] if reruns else [])])


def _dates(analyses: list[RunAnalysis]) -> str:
    """"; run on <first day>[ to <last day>]" from the runs' start times ("" when unknown)."""
    days = sorted({a.meta.start_time[:10] for a in analyses
                   if isinstance(a.meta.start_time, str) and len(a.meta.start_time) >= 10})
    if not days:
        return ""
    return f"; run on {days[0]}" + (f" to {days[-1]}" if days[-1] != days[0] else "")


def rerun_line(reruns: dict[str, int]) -> str:
    """Which runs were run again because an earlier attempt was judged invalid (kept in invalid/)."""
    return (f"attempts judged invalid (the link fell behind real time) and run again: {sum(reruns.values())} "
            "(kept in `invalid/`, out of the tables): "
            + ", ".join(f"`{run_id}` ×{n}" for run_id, n in sorted(reruns.items())))


def closing(run_tables: list[tuple[list[str], list[list[Any]]]], excluded: list[RunAnalysis],
            broken: list[RunAnalysis], absent: list[dict], notes: list[str] = ()) -> Section:
    """The runs left out, every loop run (``run_tables``: each loop kind's header and rows,
    :meth:`LoopAnalysis.run_table`), the problems, and what the columns mean (``notes``: the
    loop kinds' sentences on their own numbers, :meth:`LoopAnalysis.reading_note`)."""
    section = Section()
    if excluded:
        section.p("**Excluded from the tables and figures above** (see Problems): " +
                  ", ".join(f"`{a.run_id}` ({a.status})" for a in excluded))
    if run_tables:
        section.h(2, "Every loop run")
        for header, rows in run_tables:
            section.table(header, rows, digits=2)
    if broken or absent:
        section.h(2, "Problems")
        section.ul([f"`{a.run_id}` ({a.status}): " + "; ".join(a.problems) for a in broken] +
                   [f"`{c.get('run_id')}` ({c.get('status') or 'missing'}): listed in campaign.json, but its run "
                    f"directory is missing{': ' + str(c['error']) if c.get('error') else ''}" for c in absent],
                   "problems")
    return section.p(" ".join([
        "Every term and unit is in the Glossary below.", *notes,
        "Flow tables follow the Pound paper's layout; the "
        "source period is the sender's own (its publish times, or a bag replay's packets on the sending "
        "host's interface): J_d = source period + the change of D, so std J_d can exceed 2 × std D only by "
        "the source's jitter; a flow with several subscribers has one row per subscriber."]))
