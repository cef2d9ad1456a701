"""The blocks of the documentation generated from measurements (:mod:`netloop.docgen`): per
shipped experiment its newest campaign, or plainly that it was not measured (docs/results.md);
each study's newest reproduction; the priority bench. The default experiment's statements come
from the example report (:mod:`netloop.docgen_example`). Runs are read through
:mod:`netloop.run_files`; a report.md through :mod:`netloop.docgen_report`.

No block carries a git revision or a time of day: the campaign it names keeps both."""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Callable

from . import paths
from .docgen_blocks import BLOCK, PAGES, Context, Unavailable, block_body, md_table, need, undiaried
from .docgen_report import report_extract
from .run_files import MetadataError, RunFileError, RunRecord, has_metadata, load_campaign, load_metadata

# ---------------------------------------------------------------- results

_STAMP = re.compile(r"-(\d{8})-(\d{6})$")


def shipped_experiments(root: Path) -> list[Path]:
    """experiments/*.yaml, then experiments/real/*.yaml (real machines), each sorted."""
    return sorted((root / "experiments").glob("*.yaml")) + sorted((root / "experiments" / "real").glob("*.yaml"))


def newest_campaign(results: Path, name: str) -> Path | None:
    """The newest directory ``<name>-YYYYMMDD-HHMMSS`` under ``results`` that holds a report.md
    (a ``--quick`` campaign, ``<name>-quick-...``, is not one of them)."""
    pattern = re.compile(re.escape(name) + r"-\d{8}-\d{6}$")
    found = [d for d in results.glob(f"{name}-*") if pattern.fullmatch(d.name) and (d / "report.md").is_file()]
    return max(found, key=lambda d: d.name[-15:]) if found else None


def run_metadata(campaign: Path) -> list[RunRecord]:
    """The metadata of every run of a campaign that has a readable one."""
    out = []
    for run_dir in sorted(p for p in (campaign / "runs").glob("*") if has_metadata(p)):
        try:
            out.append(load_metadata(run_dir))
        except MetadataError:
            continue
    return out


def campaign_date(campaign: Path, metas: list[RunRecord]) -> str:
    """The day (or first to last day) the campaign's runs started, else its directory's stamp."""
    days = sorted({str(m.start_time)[:10] for m in metas if m.start_time})
    if days:
        return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    stamp = _STAMP.search(campaign.name)
    return f"{stamp.group(1)[:4]}-{stamp.group(1)[4:6]}-{stamp.group(1)[6:]}" if stamp else "date unknown"


def machine(metas: list[RunRecord]) -> str:
    """CPU, cores and kernel of the machine(s) the campaign's runs ran on (the git revisions
    they ran stay in the runs' metadata.json and the report's header)."""
    machines = []
    for m in metas:
        host = m.host
        parts = []
        if host.get("cpu"):
            parts.append(f"{host['cpu']}" + (f", {host['cores']} cores" if host.get("cores") else ""))
        if host.get("kernel"):
            parts.append(f"Linux {host['kernel']}")
        if parts and "; ".join(parts) not in machines:
            machines.append("; ".join(parts))
    return " / ".join(machines) or "machine not recorded"


def _valid(campaign: Path) -> str:
    try:
        cells = load_campaign(campaign).cells
    except RunFileError:
        return "runs not recorded"
    ok = sum(1 for c in cells if c.status == "complete")
    return f"{ok} of {len(cells)} runs valid"


@functools.lru_cache(maxsize=None)
def _estimate_minutes(path: Path) -> float | None:
    """--dry-run's estimate of a shipped file, in minutes (once per file and process: the large
    sweeps take a second or two to expand)."""
    try:
        from .experiment import estimated_run_seconds, expand, for_cell, load_experiment  # noqa: PLC0415
        exp = load_experiment(path)
        return sum(estimated_run_seconds(for_cell(exp, c).experiment) for c in expand(exp)) / 60
    except Exception:  # noqa: BLE001 - the estimate is a courtesy; the line stands without it
        return None


def _experiment_name(path: Path) -> str:
    """The experiment's name as its campaign directories carry it: its ``name`` key, else the file's stem."""
    import yaml  # noqa: PLC0415
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        doc = {}
    return str(doc.get("name") or path.stem) if isinstance(doc, dict) else path.stem


def _minutes(m: float) -> str:
    return f"about {m:.0f} min" if m < 90 else f"about {m / 60:.1f} h"


def _measured_sections(page: Path) -> dict[str, str]:
    """Per experiment, the measured section the results block of ``page`` holds now (a section
    that says "not measured yet" is not kept): a clone without results/ keeps the numbers."""
    if not page.is_file():
        return {}
    m = BLOCK.search(page.read_text(encoding="utf-8"))
    if not m:
        return {}
    parts = re.split(r"^### (\S+)[ \t]*\n", m.group(0), flags=re.M)
    kept = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        body = body.split("<!-- end generated:")[0].strip()
        if body and not body.startswith("not measured yet"):
            kept[name] = body
    return kept


def _studies_by_file() -> dict[str, tuple[str, str]]:
    """{experiment file name: (study, part)} of every study netloop reproduces."""
    from .studies import available  # noqa: PLC0415 - the study words and parts only
    out: dict[str, tuple[str, str]] = {}
    for name, study in available().items():
        for part in getattr(study, "parts", []):
            out.setdefault(part.experiment, (name, part.name))
    return out


def _not_measured(files: list[Path]) -> str:
    """The table of the files no campaign measured: the command, --dry-run's estimate, and the
    study that reproduces it (whose page has its quick variant's numbers)."""
    studies = _studies_by_file()
    rows = []
    for path in files:
        rel = path.relative_to(paths.REPO).as_posix()
        minutes = _estimate_minutes(path)
        study = studies.get(path.name)
        by = (f"[{study[0]}](studies/{study[0]}.md), `--part {study[1]}`" if study else "–")
        rows.append([f"`{rel}`", _minutes(minutes) if minutes is not None else "no estimate", by])
    return md_table(["file (`sudo bin/netloop run FILE` measures it)", "takes (estimate)",
                     "reproduced by the study"], rows)


def _default_section(ctx: Context, rel: str, name: str) -> list[str] | None:
    """The default experiment's section: the example report's campaign, stated in the README's
    headline and not restated here; None when ``name`` is not the example's experiment."""
    from .docgen_example import cite, read_example  # noqa: PLC0415 - it imports this module's helpers
    try:
        ex = read_example(ctx.root)
    except Unavailable:
        return None
    if re.sub(r"-\d{8}-\d{6}$", "", ex.campaign) != name:
        return None
    out = [f"`{rel}`, the default experiment: {cite(ex)}; runs: {ex.runs or 'not recorded'}. It is the "
           f"example report's campaign, stated in the [README's headline](../README.md#headline-result) (the "
           f"whole report: [docs/example_report](example_report/report.md)); `make example-report` measures "
           f"it again and rewrites every page's statement of it.", ""]
    newer = newest_campaign(ctx.results, name) if ctx.results.is_dir() else None
    if newer is not None and newer.name[-15:] > ex.campaign[-15:]:
        out += [f"A newer campaign of it, `{newer.name}`, is in results/: `python -m netloop.docgen --example "
                f"results/{newer.name}` makes it the example.", ""]
    return out


def results(ctx: Context) -> str:
    """What was measured and what was not. Per shipped experiment measured, its newest campaign's
    date, machine, summary and decision table (the default experiment: the example report's
    campaign, linked); an experiment without a campaign under ``ctx.results`` keeps the section
    the page already has (so a clone without results/ loses nothing); the others in one table,
    each with --dry-run's estimate."""
    out, missing = [], []
    kept = _measured_sections(ctx.root / PAGES["results"])
    local_total = 0.0
    files = shipped_experiments(paths.REPO)
    for path in files:
        rel = path.relative_to(paths.REPO).as_posix()
        name = _experiment_name(path)
        minutes = _estimate_minutes(path)
        if path.parent.name != "real" and minutes:
            local_total += minutes
        default = _default_section(ctx, rel, name)
        if default is not None:
            out += [f"### {name}", "", *default]
            continue
        campaign = newest_campaign(ctx.results, name) if ctx.results.is_dir() else None
        if campaign is None:
            if name in kept:   # measured before, but not here: keep what the page says
                out += [f"### {name}", "", undiaried(kept[name]), ""]
            else:
                missing.append(path)
            continue
        metas = run_metadata(campaign)
        report_md = (campaign / "report.md").read_text(encoding="utf-8")
        summary, table = report_extract(report_md)
        where = machine(metas)
        header = re.search(r"^- git \S+(?: \(dirty\))?; host (.+?)(?:; run on \S+)?$", report_md, re.M)
        if not metas and header:   # runs not kept: the report's own header names the machine
            where = header.group(1)
        out += [f"### {name}", "", f"`{rel}`, measured {campaign_date(campaign, metas)} on {where}; "
                f"{_valid(campaign)} (campaign `{campaign.name}`).", ""]
        if summary:
            out += [summary, ""]
        if table:
            out += [table, ""]
    local = [f for f in files if f.parent.name != "real"]
    head = [f"`sudo make results` measures the {len(local)} files of experiments/ one after the other (not "
            f"experiments/real/, which needs real machines), then rewrites this page: {_minutes(local_total)} "
            f"by the estimates of `bin/netloop run --dry-run`.", "",
            f"**Measured: {len(files) - len(missing)} of the {len(files)} shipped files**, one section each "
            f"below, with its campaign, date and machine. **Not measured: {len(missing)}**: no full campaign "
            f"of these is on record, so this page has no numbers of them. A study's file may have been "
            f"measured in its quick variant (`netloop reproduce STUDY --quick`), which the study's page "
            f"judges.", ""]
    if missing:
        head += [_not_measured(missing), ""]
    return "\n".join(head + out).strip()


def study(name: str) -> Callable[[Context], str]:
    """The generator of block ``study-<name>`` (netloop.studies.docs)."""
    def generate(ctx: Context) -> str:
        docs = need("netloop.studies.docs", "the studies")
        block = f"study-{name}"
        kept = block_body(ctx.root / PAGES[block], block)
        return docs.block(name, ctx.results, undiaried(kept) if kept else kept, run_metadata, campaign_date, machine)
    return generate


def bench_part(block: str, module: str, what: str) -> Callable[[Context], str]:
    """The generator of a block quoting one part of bench/bench.json (``make bench``; not in git)
    through ``module``'s ``measured`` and ``docs_block``; where this checkout has not measured
    that part, what the page says is kept."""
    def generate(ctx: Context) -> str:
        part = need(module, what)
        try:
            bench = json.loads((ctx.root / "bench" / "bench.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            bench = {}
        current = block_body(ctx.root / PAGES[block], block)
        if not part.measured(bench) and current:
            return undiaried(current)
        return part.docs_block(bench)
    return generate


#: the priority relay's mechanisms; ROS 2's middlewares and the native Cyclone DDS path
bench_priority = bench_part("bench-priority", "netloop.transports.priority_bench", "the priority bench")
bench_ros2 = bench_part("bench-ros2", "netloop.transports.ros2_bench", "the ROS 2 bench")
