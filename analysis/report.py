"""``netloop report``: report.html (self-contained), report.md, CSV tables and PNG figures
for a run or a whole campaign.

The report reads only what the runs left on disk, so it can be rewritten at any time; a
broken run (truncated file, missing metadata or records, a crash of its analysis) is listed
with its problems, never dropped and never a crash.

How it is built: :func:`analyse_run` gives one typed :class:`results.RunAnalysis` per run
directory (the run's loop kind, :mod:`loop_kinds`, analyses the loop; :mod:`flow_run` the
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
    runs.csv          every loop run (the table "Every loop run"; MDR in %, IAE in mV·s)
    degradation.csv   one point per loop run: degradation, delay, jitter, MDR [%], prediction error
    conditions.csv    per condition (setting x transport): n, mean, std, min, max, median of each
    prediction.csv    per loop run: the prediction error of the three replays
    flow_<name>.csv   per flow, the Pound paper's table with the delay's percentiles
    analysis.json     every number (without the time series)
    figures/*.png
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..jsonio import write_json_atomic
from ..rundir import RunDir, invalid_attempts
from . import clocks, decision, degradation, flow_sections, outages, prediction, ros2_section, step_report
from .flow_run import analyse_flow_receivers, recorded_flows
from .loop_kinds import KINDS, ReportContext, analysis_for, loop_type_of
from .loop_run import read_run_metadata
from .loop_sections import LoopStudy, loop_study
from .rendering import Document, Section
from .results import RunAnalysis
from .tables import median_of, write_csv


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
        kind = analysis_for(loop_type_of(meta))
    except ValueError as err:
        kind, problems = KINDS["none"], problems + [str(err)]
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
        cells = json.loads((Path(path) / "campaign.json").read_text(encoding="utf-8")).get("cells") or []
    except (OSError, ValueError, AttributeError):
        return []
    present = {a.run_id for a in analyses} | {p.name for p in (Path(path) / "runs").glob("*")}
    return [c for c in cells if isinstance(c, dict) and c.get("run_id") not in present]


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


RUN_COLUMNS = [
    ("run", lambda r: r.run_id),
    ("transport", lambda r: r.transport),
    ("status", lambda r: r.status),
    ("negotiated", lambda r: negotiated_text(r.transport, r.negotiated_transport)),
    ("overshoot [%]", lambda r: r.step["Overshoot"]),
    ("settling [s]", lambda r: r.step["SettlingTime"]),
    ("rise [s]", lambda r: r.step["RiseTime"]),
    ("y final [V]", lambda r: r.step["SteadyStateValue"]),
    ("IAE [mV·s]", lambda r: 1e3 * r.tracking["IAE"]),
    ("ΔIAE [mV·s]", lambda r: 1e3 * r.delta_IAE),
    ("IAE(y − baseline) [mV·s]", lambda r: 1e3 * r.deviation["IAE"]),
    ("y delay mean [ms]", lambda r: r.sensor.delay["mean_ms"]),
    ("y delay p99 [ms]", lambda r: r.sensor.delay["p99_ms"]),
    ("u delay mean [ms]", lambda r: r.actuation.delay["mean_ms"]),
    ("u delay p99 [ms]", lambda r: r.actuation.delay["p99_ms"]),
    ("RTT median [ms]", lambda r: r.rtt["p50_ms"]),
    ("MDR y [%]", lambda r: 100 * r.sensor.MDR),
    ("MDR u [%]", lambda r: 100 * r.actuation.MDR),
    ("stale u", lambda r: r.stale_actuations),
]


#: transports whose nodes, though under one master per host, connect to each other directly
#: (the masters are synchronised): their connections cross the link as negotiated, no relay
DIRECT_ACROSS_MASTERS = {"multimaster"}


def negotiated_text(transport: str, negotiated: dict[str, str] | None) -> str | None:
    """What each topic's subscriber connection really was, topics with the same connection
    together ("y, u UDPROS; flows/image TCPROS+NODELAY"). Across masters the runner sees only
    the subscriber's local connection (marked "via relay"): for a relay transport that is the
    hop from the relay to the node, not what crosses the link, and is said so."""
    if not negotiated:
        return None
    by: dict[str, list[str]] = {}
    for topic, value in negotiated.items():
        if value.endswith(" via relay"):
            hop = value[:-len(" via relay")]
            value = (f"{hop} to the remote publisher (masters synchronised)" if transport in DIRECT_ACROSS_MASTERS
                     else f"{transport} relay across the link ({hop} between relay and node)")
        by.setdefault(value, []).append(topic.strip("/"))
    return "; ".join(f"{', '.join(topics)} {value}" for value, topics in by.items())


def _value(get, loop) -> Any:
    try:
        return get(loop)
    except (KeyError, TypeError, AttributeError):   # a run that could not be analysed
        return None


def run_rows(loop_runs: list[RunAnalysis]) -> tuple[list[str], list[list[Any]]]:
    """The table "Every loop run" (runs.csv)."""
    return [name for name, _ in RUN_COLUMNS], [[_value(get, a.loop) for _, get in RUN_COLUMNS] for a in loop_runs]


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
    loop_runs = [a for a in analyses if a.has_loop]
    study = loop_study(loop_runs, order if isinstance(order, list) else None)
    ctx = ReportContext(fig_dir=fig_dir, study=study, transport_order=order if isinstance(order, list) else None,
                        descriptions=decision.transport_descriptions(analyses))
    # Tables and figures use complete runs only; the others are listed under Problems, and
    # kept in the per-run table, so nothing disappears silently.
    usable = [a for a in analyses if a.status == "complete"]
    excluded = [a for a in analyses if a.status != "complete"]
    broken = [a for a in analyses if a.problems]
    absent = missing_cells(path, analyses)
    by_kind: dict[str, list[RunAnalysis]] = {}
    for a in analyses:
        by_kind.setdefault(a.loop_type, []).append(a)
    kinds = [KINDS[name] for name in KINDS if name in by_kind]

    write_tables(path, loop_runs, study)
    points = {p.run_id: p for p in study.points}
    write_json_atomic(path / "analysis.json", [a.to_json(points.get(a.run_id)) for a in analyses])
    stepped = [a for a in analyses if a.ok and a.status == "complete" and a.loop.steps]
    if stepped:   # a square wave: the campaign's verdict (each run's steps are in analysis.json)
        write_json_atomic(path / "repeated_steps.json", step_report.verdict_json(stepped))

    doc = Document(f"netloop report: {path.name}", base=path)
    meta = next((a.meta for a in analyses if a.meta), {})
    reruns = {d.name: n for d in run_dirs if (n := len(invalid_attempts(path, d.name)))}
    doc.add(opening(meta, campaign_exp or meta.get("experiment") or {}, analyses, absent, reruns))
    summary = [s for kind in kinds for s in kind.summary(by_kind[kind.name], ctx)]
    if broken or absent:
        summary.append(f"{len(broken) + len(absent)} run(s) have problems (see Problems)"
                       + (f"; {len(excluded)} are excluded from the tables and figures." if excluded else "."))
    if summary:
        section = Section("Summary")
        for s in summary:
            section.p(s, "summary")
        doc.add(section)
    for kind in kinds:
        try:
            doc.add(kind.decision(by_kind[kind.name], ctx))
        except Exception as err:  # keep the rest of the report
            doc.add(Section("Decision table").p(f"The decision table failed: {type(err).__name__}: {err}", "problems"))
    for kind in kinds:
        try:
            doc.add(*kind.section(by_kind[kind.name], ctx))
        except Exception as err:  # keep the rest of the report
            doc.add(Section(f"{kind.name} loop").p(f"This part of the analysis failed: {type(err).__name__}: {err}",
                                                    "problems"))
    doc.add(*flow_sections.sections(usable, path, fig_dir, _capacity(meta),
                                    order if isinstance(order, list) else None))
    doc.add(cpu_section(usable))
    doc.add(machines_section(analyses))
    doc.add(outages_section(usable))
    doc.add(ros2_section.section(usable))
    doc.add(closing(loop_runs, excluded, broken, absent))
    doc.add(decision.glossary_section())
    doc.write(path / "report.md", path / "report.html")
    return doc


def cpu_section(runs: list[RunAnalysis]) -> Section | None:
    """The CPU each host's processes used, per setting and transport (median over the
    repetitions), as a share of one core: where a host runs out of CPU before the link fills."""
    runs = [a for a in runs if a.meta.get("cpu")]
    if not runs:
        return None
    hosts = list(dict.fromkeys(h for a in runs for h in a.meta["cpu"]))
    swept = len({degradation.setting_of(a) for a in runs}) > 1
    groups: dict[tuple[str, str], list[RunAnalysis]] = {}
    for a in runs:
        groups.setdefault((degradation.setting_of(a), a.transport), []).append(a)
    rows = [([setting] if swept else []) + [transport, len(rs)] +
            [median_of(100 * (a.meta["cpu"].get(h) or {}).get("core_share", math.nan) for a in rs) for h in hosts]
            for (setting, transport), rs in groups.items()]
    if swept:
        rank = flow_sections.setting_rank(runs)
        rows.sort(key=lambda r: rank.index(r[0]) if r[0] in rank else len(rank))
    section = Section("CPU of the hosts")
    section.p("CPU time of every process started on a host (its nodes, relays and flows; not the emulator), "
              "as a share of one core over the run, sampled each second: a host near 100 % × its cores, or "
              "near its `cpu` limit, is the bottleneck rather than the link. Per process: `metadata.json` → `cpu`.")
    return section.table((["setting"] if swept else []) + ["transport", "runs"] +
                         [f"{h} [% of a core]" for h in hosts], rows, digits=1)


def _loop_directions(a: RunAnalysis):
    """(name, DirectionStats) of the loop's two directions, for a run whose loop was analysed."""
    if a.loop is not None and a.loop.ok:
        for name, d in (("y (plant → controller)", a.loop.sensor), ("u (controller → plant)", a.loop.actuation)):
            if d is not None:
                yield name, d


def _streams(a: RunAnalysis):
    """(name, outage entries) of every stream of a run that an outage touched."""
    for name, d in _loop_directions(a):
        if d.outages:
            yield name, d.outages
    for f in a.flows:
        if f.ok and f.outages:
            yield f"flow {f.label}", f.outages


def _fault_groups(runs: list[RunAnalysis]) -> dict[tuple[str, str, str], list[dict]]:
    """(fault kind, transport, stream) -> the entries of every fault of that kind that touched
    the stream, over the runs (kind: 'outage' or 'loss burst', analysis.outages.kind)."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for a in runs:
        for name, entries in _streams(a):
            for e in entries:
                groups.setdefault((outages.kind(e.get("loss")), a.transport, name), []).append(e)
    return groups


def _outage_row(transport: str, name: str, entries: list[dict]) -> list:
    rec = [e["recovery_ms"] for e in entries if e["recovery_ms"] is not None]
    rejoin = [e["rejoin_ms"] for e in entries if e.get("rejoin_ms") is not None]
    return [transport, name, len(entries), median_of(rec) if rec else None, max(rec) if rec else None,
            median_of([e["lost"] for e in entries]), median_of([e["late"] for e in entries]),
            sum(1 for e in entries if e["recovery_ms"] is None), median_of(rejoin) if rejoin else None]


def _burst_row(transport: str, name: str, entries: list[dict]) -> list:
    sent = sum(e.get("sent", 0) for e in entries)
    lost = sum(e["lost"] for e in entries)
    return [transport, name, len(entries), sent, lost, 100 * lost / sent if sent else None]


def outages_section(runs: list[RunAnalysis]) -> Section | None:
    """Runs with link outages or loss bursts (``faults:``): per transport and stream, how long
    after the link came back the first message arrived and what was lost (the Pound paper's
    Table V); for loss bursts, the share of the messages sent during them that was lost."""
    runs = [a for a in runs if a.meta.get("faults")]
    if not runs:
        return None
    groups = _fault_groups(runs)
    windows = runs[0].meta["faults"]
    bursts = [w for w in windows if w.get("loss") is not None]
    section = Section("Link outages: recovery" if not bursts else
                      "Link outages and loss bursts" if len(bursts) < len(windows) else "Loss bursts")

    def described(w: dict) -> str:
        what = (f"losing {w['loss']:.0%} of what they sent" if w.get("loss") is not None
                else "with their interface down" if w.get("kind") == "interface_down" else "silent")
        return (f"{', '.join(w['hosts'])} {what} {w['planned_end_s'] - w['planned_start_s']:g} s from "
                f"t = {w['planned_start_s']:g} s")
    section.p(f"Each run had {len(windows) - len(bursts)} outage(s) and {len(bursts)} loss burst(s) ("
              + ", ".join(described(w) for w in windows) + "; t from the nodes connecting).")
    if len(bursts) < len(windows):
        down = any(w.get("kind") == "interface_down" for w in windows)
        section.p(("In an interface outage the hosts' interface went down (the kernel dropped its routes, so "
                   "sockets got errors; on Wi-Fi the station left the network) and came back up (routes "
                   "restored; on Wi-Fi the station rejoined: 'station rejoin' is the emulator's time for it). "
                   if down else "")
                  + ("In a drop outage " if down else "In an outage ")
                  + "every packet the silent hosts sent was dropped at their interface. Recovery = "
                  "from the link's return to the first message delivered after it (median over outages and "
                  "repetitions; it includes the transport's back-off, e.g. TCP's retransmission timer); lost = "
                  "sent during an outage and never delivered; late = sent during it and delivered after it "
                  "(queued and retransmitted).")
        section.table(["transport", "stream", "outages", "recovery median [ms]", "recovery max [ms]",
                       "lost (median)", "late (median)", "never recovered", "station rejoin median [ms]"],
                      [_outage_row(t, n, e) for (kind, t, n), e in groups.items() if kind == "outage"], digits=1)
    if bursts:
        section.p("In a loss burst the link's emulator lost each packet the hosts sent with the given probability "
                  "(on Wi-Fi each frame on the air, which the MAC retries up to its retry limit, so a message is "
                  "lost far less often than a frame and arrives later instead). Lost share = messages sent "
                  "during the bursts and never delivered, over all sent during them. UDP loses a message with "
                  "each lost datagram; TCP loses nothing on the network but its retransmission back-off "
                  "delays messages by up to seconds and delivers them in bunches, which ROS's publisher and "
                  "subscriber queues then partly drop (the flow tables' queue drops).")
        section.table(["transport", "stream", "bursts", "sent during bursts", "lost", "lost share [%]"],
                      [_burst_row(t, n, e) for (kind, t, n), e in groups.items() if kind == "loss burst"], digits=1)
    return section


def _clock(m: dict | None) -> str | None:
    """offset ± bound, and the statistical uncertainty where the measurement has one."""
    if not m:
        return None
    stat = f" (stat. ± {m['stat_uncertainty_ms']:.3f})" if m.get("stat_uncertainty_ms") is not None else ""
    return f"{m['offset_ms']:+.3f} ± {m['uncertainty_ms']:.3f}{stat}"


def machines_section(runs: list[RunAnalysis]) -> Section | None:
    """Runs on real machines: what each machine was, its clock against this one before and
    after each run, whether its records came home, and how well each one-way delay is known."""
    runs = [a for a in runs if (a.meta.get("link") or {}).get("type") == "real"]
    if not runs:
        return None
    section = Section("Machines and clocks")
    link = runs[0].meta["link"]
    section.p("The hosts were real machines (" + (link.get("description") or "a hosts file") + "): nothing was "
              "emulated. One-way delays are corrected by each machine's clock offset against the operator's, "
              "measured NTP-style over the same network before and after every run and interpolated over it; "
              "± is the correction's uncertainty, a bound (half the round trip of the best exchanges: it holds "
              "whatever the path's asymmetry); stat. ± is the statistical uncertainty of the offset (the standard "
              "error from the spread of those exchanges): how repeatable it is, blind to a constant asymmetry.")
    described = []
    for host, h in link.get("hosts", {}).items():
        net = ", ".join(f"{k} {h[k]}" for k in ("interface", "mtu", "ssid", "tx_bitrate", "signal") if h.get(k))
        described.append(f"**{host}**: {h.get('address')} ({'this machine' if h.get('local') else h.get('ssh')}"
                         f"{', ' + h['hostname'] if h.get('hostname') else ''}{', ' + h['arch'] if h.get('arch') else ''})"
                         f"{'; ' + net if net else ''}"
                         + "".join(f"; {k} {h[k]}" for k in ("chrony_reference", "chrony_system_time") if h.get(k)))
    section.ul(described + [f"warning: {w}" for w in link.get("warnings", [])])
    rows = []
    for a in runs:
        mlink = a.meta["link"]
        for host, c in (mlink.get("clocks") or {}).items():
            home = (mlink.get("records_home") or {}).get(host)
            rows.append([a.run_id, host, _clock(c.get("before")), _clock(c.get("after")), c.get("drift_ppm"),
                         "this machine" if home is None else ("yes" if home.get("fetched") else "NO")])
    section.table(["run", "host", "offset before [ms]", "offset after [ms]", "drift [ppm]", "records home"], rows)
    rows = []
    for a in runs:
        for name, d, fallback in _one_way_delays(a):
            ok = clocks.trusted(a.meta, d[1], d[0])
            rows.append([a.run_id, name, d[0], d[1], "corrected D" if ok else fallback])
    if rows:
        fraction = runs[0].meta["link"].get("clock_max_uncertainty", 0.1)
        section.p(f"One-way delays (median) and their clock uncertainty. Where the uncertainty is more than "
                  f"{fraction:.0%} of the delay (`clock_max_uncertainty` of the hosts file), the corrected one-way "
                  f"delay is not to be trusted and the round trip, read on one clock, is the measurement: the "
                  f"loop's RTT / 2, or an `echo` flow.")
        section.table(["run", "one-way", "D median [ms]", "± clock [ms]", "use"], rows, digits=3)
    return section


def _one_way_delays(a: RunAnalysis):
    """(name, (median ms, ± ms), fallback) of every clock-corrected one-way delay of a run."""
    for name, d in _loop_directions(a):
        rtt = (a.loop.rtt or {}).get("p50_ms")
        fallback = f"RTT / 2 = {rtt / 2:.3g} ms" if rtt is not None and math.isfinite(rtt) else "the RTT"
        if d.clock_uncertainty_ms is not None and d.delay:
            yield name, (d.delay["p50_ms"], d.clock_uncertainty_ms), fallback
    for f in a.flows:
        if f.ok and f.clock_uncertainty_ms is not None and f.delay:
            yield f"flow {f.label}", (f.delay["p50_ms"], f.clock_uncertainty_ms), "an echo flow's round trip"


def _capacity(meta: dict[str, Any]) -> float | None:
    """The link's nominal capacity [Mbit/s] as the run recorded it (metadata.json ->
    link.capacity_mbit); None when it has none (loopback, real machines) or the run directory
    is older than the record (:func:`_capacity_unknown`)."""
    value = (meta.get("link") or {}).get("capacity_mbit")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _capacity_unknown(meta: dict[str, Any]) -> bool:
    """An emulated link whose run directory does not record its capacity (written before
    link.capacity_mbit was); loopback and real machines have none to record."""
    link = meta.get("link") or {}
    return bool(link.get("params")) and "capacity_mbit" not in link and link.get("type") not in ("real", "loopback")


def opening(meta: dict[str, Any], exp: dict[str, Any], analyses: list[RunAnalysis], absent: list[dict],
            reruns: dict[str, int] | None = None) -> Section:
    """What was run: experiment, link, sweep, repetitions, revision and host, run count, and
    ``reruns`` (run id -> attempts judged invalid and run again)."""
    section = Section()
    if not meta:
        return section
    link = meta.get("link") or {}
    params = link.get("params") or {}
    sweep = exp.get("sweep") or {}
    git, host = meta.get("git") or {}, meta.get("host") or {}
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
    days = sorted({str(a.meta.get("start_time"))[:10] for a in analyses
                   if isinstance(a.meta.get("start_time"), str) and len(a.meta["start_time"]) >= 10})
    if not days:
        return ""
    return f"; run on {days[0]}" + (f" to {days[-1]}" if days[-1] != days[0] else "")


def rerun_line(reruns: dict[str, int]) -> str:
    """Which runs were run again because an earlier attempt was judged invalid (kept in invalid/)."""
    return (f"attempts judged invalid (the link fell behind real time) and run again: {sum(reruns.values())} "
            "(kept in `invalid/`, out of the tables): "
            + ", ".join(f"`{run_id}` ×{n}" for run_id, n in sorted(reruns.items())))


def closing(loop_runs: list[RunAnalysis], excluded: list[RunAnalysis], broken: list[RunAnalysis],
            absent: list[dict]) -> Section:
    """The runs left out, every loop run, the problems, and what the columns mean."""
    section = Section()
    if excluded:
        section.p("**Excluded from the tables and figures above** (see Problems): " +
                  ", ".join(f"`{a.run_id}` ({a.status})" for a in excluded))
    if loop_runs:
        section.h(2, "Every loop run").table(*run_rows(loop_runs), digits=2)
    if broken or absent:
        section.h(2, "Problems")
        section.ul([f"`{a.run_id}` ({a.status}): " + "; ".join(a.problems) for a in broken] +
                   [f"`{c.get('run_id')}` ({c.get('status') or 'missing'}): listed in campaign.json, but its run "
                    f"directory is missing{': ' + str(c['error']) if c.get('error') else ''}" for c in absent],
                   "problems")
    return section.p(
        "Every term and unit is in the Glossary below. Loop delays are one-way, from the sender's publish to "
        "the receiver's callback (one shared clock on one machine, or corrected by the measured clock "
        "offsets); the RTT is read on the plant's clock. Flow tables follow the Pound paper's layout; the "
        "source period is the sender's own (its publish times, or a bag replay's packets on the sending "
        "host's interface): J_d = source period + the change of D, so std J_d can exceed 2 × std D only by "
        "the source's jitter; a flow with several subscribers has one row per subscriber.")


# -- CSV tables ----------------------------------------------------------------------------------

def _scaled(value: Any, factor: float | None) -> Any:
    """``value`` × ``factor`` (a share written in %), missing values and factor None unchanged."""
    if factor is None or value is None or isinstance(value, bool):
        return value
    try:
        return float(value) * factor
    except (TypeError, ValueError):
        return value


POINT_META = ["run_id", "transport", "setting", "condition", "repetition", "status", "verdict", "explained"]


def write_tables(path: Path, loop_runs: list[RunAnalysis], study: LoopStudy) -> None:
    """runs.csv, degradation.csv, conditions.csv and prediction.csv (when there are loop runs)."""
    if not loop_runs:
        return
    write_csv(path / "runs.csv", *run_rows(loop_runs))
    scale = degradation.CSV_SCALE
    write_csv(path / "degradation.csv", POINT_META + [label for _, label in degradation.POINT_FIELDS],
              [[getattr(p, k) for k in POINT_META] + [_scaled(getattr(p, k), scale.get(k)) for k, _ in degradation.POINT_FIELDS]
               for p in study.points])
    stats = ("n", "mean", "std", "min", "max", "median")
    groups = study.groups
    write_csv(path / "conditions.csv",
              ["setting", "transport", "runs", "settled", "did not settle", "unstable"] +
              [f"{label} {s}" for _, label in degradation.POINT_FIELDS for s in stats],
              [[g.setting, g.transport, g.n, g.verdicts["settled"], g.verdicts["did not settle"], g.verdicts["unstable"]]
               + [g.stats[k][s] if s == "n" else _scaled(g.stats[k][s], scale.get(k))
                  for k, _ in degradation.POINT_FIELDS for s in stats] for g in groups])
    rows = []
    for a in loop_runs:
        p = a.prediction
        if p is None or not p.ok:
            continue
        rows.append([a.run_id, a.transport, degradation.setting_of(a), p.samples, p.lost, p.stale, p.explained] +
                    [getattr(p.modes[m], k) for m in prediction.MODES for k in ("rms_mV", "max_mV", "delta_overshoot_pp")])
    write_csv(path / "prediction.csv",
              ["run", "transport", "setting", "samples", "lost u", "stale u", "explained"] +
              [f"{mode} {what}" for mode in prediction.MODES for what in ("RMS [mV]", "max [mV]", "Δovershoot [pp]")],
              rows)

