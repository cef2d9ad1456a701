"""The blocks of the documentation generated from measurements (:mod:`netloop.docgen`): per
shipped experiment its newest campaign (docs/results.md), the README's headline from the
example report, each study's newest reproduction, the priority bench; and making a campaign's
report the example (docs/example_report). Runs are read through :mod:`netloop.run_files`."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

from . import paths
from .docgen_blocks import BLOCK, PAGES, Context, Unavailable, block_body, md_cell, need
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
    """CPU, cores and kernel of the machine(s) the campaign's runs ran on, and the git
    revision(s) of netloop they ran (first and last when a campaign spans several)."""
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
    ordered = sorted(metas, key=lambda m: str(m.start_time or ""))
    commits = list(dict.fromkeys(str(m.git.get("commit"))[:10] for m in ordered if m.git.get("commit")))
    dirty = any(m.git.get("dirty") for m in metas)
    text = " / ".join(machines) or "machine not recorded"
    if commits:
        text += "; git " + (commits[0] if len(commits) == 1 else
                            f"{commits[0]} to {commits[-1]} ({len(commits)} revisions)")
        text += " with local changes" if dirty else ""
    return text


def _valid(campaign: Path) -> str:
    try:
        cells = load_campaign(campaign).cells
    except RunFileError:
        return "runs not recorded"
    ok = sum(1 for c in cells if c.status == "complete")
    return f"{ok} of {len(cells)} runs valid"


def _sections(markdown: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) of each part of a report, the text before the first '## ' as heading ''."""
    out: list[tuple[str, list[str]]] = [("", [])]
    fence = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"##\s", line):
            out.append((line[2:].strip(), []))
        else:
            out[-1][1].append(line)
    return out


def _is_table_start(lines: list[str], i: int) -> bool:
    return (lines[i].lstrip().startswith("|") and i + 1 < len(lines)
            and re.fullmatch(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*", lines[i + 1]) is not None)


def _first_table(lines: list[str]) -> tuple[int, int] | None:
    """[start, end) of the first Markdown table in ``lines`` (outside code fences)."""
    fence = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fence = not fence
        if not fence and _is_table_start(lines, i):
            end = i + 2
            while end < len(lines) and lines[end].lstrip().startswith("|"):
                end += 1
            return i, end
    return None


def _merged_tables(lines: list[str]) -> str | None:
    """The tables of a report section that stand under '### ' headings (one per sweep setting or
    flow) as one table, the heading as a first 'setting' column; None unless there are several
    and they have the same columns."""
    parts: list[tuple[str, str, list[str]]] = []
    heading, i = None, 0
    while i < len(lines):
        if lines[i].startswith("### "):
            heading, i = lines[i][4:].strip(), i + 1
            continue
        if heading is not None and _is_table_start(lines, i):
            end = i + 2
            while end < len(lines) and lines[end].lstrip().startswith("|"):
                end += 1
            parts.append((heading, lines[i].strip(), [r.strip() for r in lines[i + 2:end]]))
            heading, i = None, end
            continue
        i += 1
    if len(parts) < 2 or len({header for _, header, _ in parts}) != 1:
        return None
    header = parts[0][1]
    columns = len(header.strip("|").split("|"))
    out = [f"| setting {header}", "|---" * (columns + 1) + "|"]
    out += [f"| {md_cell(setting)} {row}" for setting, _, rows in parts for row in rows]
    return "\n".join(out)


def _local_only(text: str) -> str:
    """Text of a report made to stand in docs/: images dropped, links kept as their text
    (a report's links point into its campaign directory, which is not in the repository)."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    return re.sub(r"(?<!!)\[([^\]]*)\]\([^)]*\)", r"\1", text)


def report_extract(report_md: str) -> tuple[str, str]:
    """(Summary, decision table) of a report.md: the text of its '## Summary' section without
    any table, and the first table from the Summary on (with a caption line right after it,
    if any) — or, when the decision table is one table per setting, those merged into one with a
    'setting' column; '' for a part not found."""
    sections = _sections(report_md)
    at = next((i for i, (h, _) in enumerate(sections) if h.lower().startswith("summary")), None)
    summary_lines = sections[at][1] if at is not None else []
    table = ""
    caption = re.compile(r"\*[^*].*\*$")
    for heading, lines in sections[at if at is not None else 0:]:
        merged = _merged_tables(lines) if heading.lower().startswith("decision") else None
        if merged:
            table = merged
            break
        span = _first_table(lines)
        if span:
            start, end = span
            block = lines[start:end]
            after = end + 1 if end < len(lines) and not lines[end].strip() else end
            if after < len(lines) and caption.match(lines[after].strip()):   # its caption
                block += ["", lines[after]]
                end = after + 1
            table = "\n".join(block)
            if lines is summary_lines:
                summary_lines = lines[:start] + lines[end:]
            break
    summary = "\n".join(line for line in summary_lines if not re.match(r"#{1,6}\s", line))
    summary = re.sub(r"\n{3,}", "\n\n", _local_only(summary)).strip()
    return summary, _local_only(table)


def _estimate_minutes(path: Path) -> float | None:
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


def results(ctx: Context) -> str:
    """Per shipped experiment, its newest campaign's date, machine, summary and decision table;
    an experiment without a campaign under ``ctx.results`` keeps the section the page already
    has (so a clone without results/ loses nothing), else gets the command that measures it."""
    out = []
    kept = _measured_sections(ctx.root / PAGES["results"])
    local_total = 0.0
    files = shipped_experiments(paths.REPO)
    for path in files:
        rel = path.relative_to(paths.REPO).as_posix()
        name = _experiment_name(path)
        real = path.parent.name == "real"
        campaign = newest_campaign(ctx.results, name) if ctx.results.is_dir() else None
        minutes = _estimate_minutes(path)
        if not real and minutes:
            local_total += minutes
        out += [f"### {name}", ""]
        if campaign is None:
            if name in kept:   # measured before, but not here: keep what the page says
                out += [kept[name], ""]
                continue
            when = f"{_minutes(minutes)}, from --dry-run's estimate" if minutes is not None else "no estimate"
            out += [f"not measured yet: `bin/netloop run {rel}` ({when})", ""]
            continue
        metas = run_metadata(campaign)
        report_md = (campaign / "report.md").read_text(encoding="utf-8")
        summary, table = report_extract(report_md)
        where = machine(metas)
        header = re.search(r"^- git (\S+)(?: \(dirty\))?; host (.+)$", report_md, re.M)
        if not metas and header:   # runs not kept: the report's own header names them
            where = f"{header.group(2)}; git {header.group(1)}"
        out += [f"`{rel}`, measured {campaign_date(campaign, metas)} on {where}; {_valid(campaign)} "
                f"(campaign `{campaign.name}`).", ""]
        if summary:
            out += [summary, ""]
        if table:
            out += [table, ""]
    local = [f for f in files if f.parent.name != "real"]
    head = (f"`sudo make results` measures the {len(local)} files of experiments/ one after the other (not "
            f"experiments/real/, which needs real machines), then rewrites this list: {_minutes(local_total)} "
            f"by the estimates of `bin/netloop run --dry-run`.")
    return "\n".join([head, ""] + out).strip()


def headline(ctx: Context) -> str:
    """The README's headline: the example report's first summary paragraph and decision table,
    with when and where it was measured."""
    report = ctx.root / "docs" / "example_report" / "report.md"
    if not report.is_file():
        raise Unavailable("docs/example_report/report.md does not exist")
    md = report.read_text(encoding="utf-8")
    summary, table = report_extract(md)
    host = re.search(r"^- git \S+(?: \(dirty\))?; host (.+?)(?:; run on (\S+))?$", md, re.M)
    when = f" on {host.group(2)}" if host and host.group(2) else ""
    where = f" ({host.group(1)})" if host else ""
    first = summary.split("\n\n")[0].strip()
    reps = re.search(r"^- repetitions: (\d+)", md, re.M)
    figure = ("![each step of every transport against the local loop](docs/example_report/figures/step_intervals.png)"
              if (report.parent / "figures" / "step_intervals.png").is_file() else
              "![step responses over wifi6](docs/example_report/figures/step_response.png)")
    shape = ", ".join(x for x in ("a square-wave reference" if "repeated steps" in first else "",
                                  f"{reps.group(1)} repetitions" if reps else "") if x)
    return "\n".join([
        f"The default experiment (`make run`: the RLC loop over emulated 802.11a at 6 Mbit/s beside a 64 KB "
        f"image every 200 ms, every transport{', ' + shape if shape else ''}), as measured{when}{where}; the whole report is "
        f"[docs/example_report](docs/example_report/report.md) (`make example-report` measures it again).", "",
        figure, "",
        first, "", table])


def study(name: str) -> Callable[[Context], str]:
    """The generator of block ``study-<name>`` (netloop.studies.docs)."""
    def generate(ctx: Context) -> str:
        docs = need("netloop.studies.docs", "the studies")
        block = f"study-{name}"
        return docs.block(name, ctx.results, block_body(ctx.root / PAGES[block], block),
                          run_metadata, campaign_date, machine)
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
            return current
        return part.docs_block(bench)
    return generate


#: the priority relay's mechanisms; ROS 2's middlewares and the native Cyclone DDS path
bench_priority = bench_part("bench-priority", "netloop.transports.priority_bench", "the priority bench")
bench_ros2 = bench_part("bench-ros2", "netloop.transports.ros2_bench", "the ROS 2 bench")


EXAMPLE = "docs/example_report"


def set_example(root: Path, campaign: Path) -> Path:
    """Make ``campaign``'s report the example of ``root``/docs/example_report: its report.md,
    report.html, CSV tables, analysis.json, campaign.json, experiment.yaml, figures and the runs'
    MCAP files (not the runs' records, which stay in results/). What the example held before is
    replaced."""
    import shutil  # noqa: PLC0415
    if not (campaign / "report.md").is_file():
        raise SystemExit(f"docgen: {campaign} holds no report.md (run 'bin/netloop report {campaign}' first)")
    dest = root / EXAMPLE
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "figures").mkdir(parents=True)
    for f in sorted(campaign.iterdir()):
        if f.is_file() and (f.suffix in (".md", ".html", ".csv", ".json") or f.name == "experiment.yaml"):
            shutil.copy2(f, dest / f.name)
    for f in sorted((campaign / "figures").glob("*.png")):
        shutil.copy2(f, dest / "figures" / f.name)
    if (campaign / "mcap").is_dir():   # the time series the report links
        (dest / "mcap").mkdir()
        for f in sorted((campaign / "mcap").glob("*.mcap")):
            shutil.copy2(f, dest / "mcap" / f.name)
    return dest
