"""The generated parts of the documentation: ``make docs`` (``python -m netloop.docgen``).

A hand-written page holds a generated block between two HTML comments::

    <!-- generated: NAME (by `make docs`) -->
    ... rewritten by this module, never edited by hand ...
    <!-- end generated: NAME -->

Each NAME has one source in the code, so the page cannot drift from it:

    experiment-keys  docs/experiments.md  every experiment-file key (the typed model; ``validate --keys``)
    cli              docs/cli.md          every subcommand and option (the argparse parser of ``netloop``)
    glossary         docs/concepts.md     the report's words and numbers (analysis/glossary.py)
    link-profiles    docs/links.md        one row per config/links/*.yaml
    transports       docs/transports.md   one row per transport word (the transport registry)
    results          docs/results.md      per shipped experiment its newest campaign under results/
    study-STUDY      docs/studies/STUDY.md  the newest `netloop reproduce STUDY` under results/
    bench-priority   docs/priority.md     the priority relay's part of bench/bench.json (`make bench`)

Usage::

    python -m netloop.docgen                 rewrite every block of README.md and docs/*.md
    python -m netloop.docgen --check         rewrite nothing; exit 1 listing the stale blocks
    python -m netloop.docgen --results DIR   campaigns from DIR instead of results/
    python -m netloop.docgen --skip results  leave a block alone (--only NAME: just that one)

A block whose page does not exist yet is skipped with a note; a block whose source cannot be
imported here (a module not written yet, a package missing) is left as it is with a note
saying what is missing. A block may also appear in another page than its usual one.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import paths
from .studies import STUDY_MODULES   # the study words only (no study module is imported)

#: NAME -> the page that holds its block.
PAGES = {
    "experiment-keys": "docs/experiments.md",
    "cli": "docs/cli.md",
    "glossary": "docs/concepts.md",
    "link-profiles": "docs/links.md",
    "transports": "docs/transports.md",
    "results": "docs/results.md",
    "headline": "README.md",
    **{f"study-{s}": f"docs/studies/{s}.md" for s in STUDY_MODULES},
    "bench-priority": "docs/priority.md",
}

_BLOCK = re.compile(r"^(?P<start><!--\s*generated:\s*(?P<name>[\w-]+)(?:\s+\(by `make docs`\))?\s*-->)"
                    r"(?P<body>.*?)"
                    r"^(?P<end><!--\s*end generated:\s*(?P=name)\s*-->)", re.S | re.M)
_OPENING = re.compile(r"^<!--\s*generated:\s*([\w-]+)", re.M)
_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.S | re.M)


def _in_code(text: str) -> list[tuple[int, int]]:
    """Spans of the fenced code blocks of a page (where a marker is an example, not a block)."""
    return [m.span() for m in _FENCE.finditer(text)]


def _outside(spans: list[tuple[int, int]], at: int) -> bool:
    return not any(a <= at < b for a, b in spans)


class Unavailable(Exception):
    """A block's source cannot be read here (not written yet, or a package is missing)."""


@dataclass
class Context:
    root: Path      # where the pages are (README.md, docs/): the repository, or a copy of its pages
    results: Path   # where campaigns are looked for


def _cell(text: object) -> str:
    """Text for one cell of a Markdown table: one line, pipes escaped, no stray HTML."""
    return " ".join(str(text).split()).replace("|", r"\|").replace("<", "&lt;")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _need(module: str, what: str):
    """Import ``module`` or say what is missing for ``what``."""
    import importlib  # noqa: PLC0415
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name and (err.name == module or module.startswith(err.name + ".")):
            raise Unavailable(f"{what}: {module} does not exist yet") from None
        raise Unavailable(f"{what} needs the Python package {err.name!r} "
                          f"(run 'make build', then 'make docs' again)") from None


# ---------------------------------------------------------------- experiment-keys, glossary

def experiment_keys(ctx: Context) -> str:
    cli = _need("netloop.cli", "the experiment key reference")
    return cli.experiment_keys_markdown()


def glossary(ctx: Context) -> str:
    return _need("netloop.analysis.glossary", "the glossary").glossary_markdown()


# ---------------------------------------------------------------- cli

def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    # one usage line whatever the terminal: the width is fixed, not taken from $COLUMNS
    return argparse.HelpFormatter(parser.prog, width=10_000, max_help_position=10_000)


def _usage(parser: argparse.ArgumentParser) -> str:
    fmt = _formatter(parser)
    fmt.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return " ".join(fmt.format_help().split())


def _subcommands(parser: argparse.ArgumentParser):
    """(name, help, subparser) of each subcommand of ``parser``, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:   # an alias
                    continue
                seen.add(id(sub))
                yield name, helps.get(name), sub


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading (lower case, spaces to '-', punctuation but '-' and '_' dropped)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _text(text: str | None) -> str:
    return " ".join((text or "").split())


def _prose(text: str | None) -> list[str]:
    """A parser's description or epilog as Markdown lines: paragraphs, or a text block when
    it is laid out by hand (indented lines, as in a list of examples)."""
    text = (text or "").strip("\n")
    if not text.strip():
        return []
    if re.search(r"^[ \t]+\S", text, re.M):
        return ["```text", text, "```", ""]
    return ["\n\n".join(_cell(p) for p in re.split(r"\n\s*\n", text)), ""]


def _describe_parser(parser: argparse.ArgumentParser, summary: str | None, level: int, out: list[str]) -> None:
    out.append(f"{'#' * level} {parser.prog}")
    out.append("")
    out += _prose(parser.description or summary)
    out += ["```text", _usage(parser), "```", ""]
    fmt = _formatter(parser)
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        invocation = fmt._format_action_invocation(action)
        help_text = fmt._expand_help(action) if action.help else ""
        rows.append([f"`{invocation}`", _cell(help_text)])
    subs = list(_subcommands(parser))
    if rows:
        out += [_table(["argument", "meaning"], rows), ""]
    if subs:
        out += [_table(["command", "what it does"],
                       [[f"[`{name}`](#{_slug(sub.prog)})", _cell(_text(sub.description or helptext))]
                        for name, helptext, sub in subs]), ""]
    out += _prose(parser.epilog)
    for name, helptext, sub in subs:
        _describe_parser(sub, helptext, min(level + 1, 4), out)


def cli_reference(ctx: Context) -> str:
    cli = _need("netloop.cli", "the command-line reference")
    try:
        parser = cli.build_parser()
    except ModuleNotFoundError as err:
        raise Unavailable(f"the command-line reference: building the parser needs the Python package "
                          f"{err.name!r} (run 'make build', then 'make docs' again)") from None
    out: list[str] = []
    _describe_parser(parser, None, 2, out)
    return "\n".join(out).strip()


# ---------------------------------------------------------------- link-profiles

#: Data rates of 802.11n HT MCS 0-7, one spatial stream, 20 MHz, 800 ns guard interval [Mbit/s].
_HT_MBIT = (6.5, 13, 19.5, 26, 39, 52, 58.5, 65)


def _leading_comment(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(lines)
    first = re.match(r"(.+?\.)(\s|$)", text)
    return first.group(1) if first else text


def _mbit(value: float) -> str:
    return f"{value:g} Mbit/s"


def _emulator(p: dict) -> str:
    kind = p["type"]
    if kind == "loopback":
        return "none: one host, traffic on `lo`"
    if kind == "ethernet":
        return f"veth pair, {p['qdisc']} qdisc (kernel)" + (f", {p['robots']} robots on a bridge" if p.get("robots", 1) > 1 else "")
    if kind == "shaped":
        return "userspace shaper between two taps"
    if kind == "ns3_wifi":
        text = f"ns-3 in real time: {p['standard']} {'ad-hoc' if p['mode'] == 'adhoc' else 'access point'}"
        if p.get("hops", 1) > 1:
            text += f", {p['hops']} hops"
        if p.get("robots", 1) > 1:
            text += f", {p['robots']} robots"
        if p.get("background_pairs"):
            text += f", {p['background_pairs']} background pair(s)"
        return text
    return kind


def _rate(p: dict) -> str:
    kind = p["type"]
    if kind == "loopback":
        return "not limited"
    if kind == "ethernet":
        return f"{_mbit(p['rate_mbit'])} each way"
    if kind == "shaped":
        up = (p.get("to_operator") or {}).get("rate_mbit") or p["rate_mbit"]
        down = (p.get("to_robot") or {}).get("rate_mbit") or p["rate_mbit"]
        return f"{_mbit(up)} each way" if up == down else f"{_mbit(down)} to the robot, {_mbit(up)} to the operator"
    if kind == "ns3_wifi":
        if p.get("rate_manager", "constant") != "constant":
            return f"adaptive ({p['rate_manager']})"
        name = str(p["phy_rate"])
        ht = re.fullmatch(r"HtMcs(\d)", name)
        from .testbed.profiles import phy_mbit  # noqa: PLC0415
        mbit = _HT_MBIT[int(ht.group(1))] if ht else phy_mbit(name)
        return f"{_mbit(mbit)} on the air (`{name}`)" if mbit else f"`{name}`"
    return ""


def link_profiles(ctx: Context) -> str:
    profiles = _need("netloop.testbed.profiles", "the link profiles")
    rows = []
    for path in sorted(profiles.LINKS_DIR.glob("*.yaml")):
        p = profiles.load_profile(path.stem)
        what = p.get("description") or _leading_comment(path)
        rows.append([f"`{path.stem}`", _cell(what), _cell(_emulator(p)), _cell(_rate(p))])
    return _table(["profile", "what it is", "emulator", "rate"], rows)


# ---------------------------------------------------------------- transports

def transports(ctx: Context) -> str:
    registry = _need("netloop.transports", "the transport table")
    rows = []
    for name in registry.transport_names():
        describe = getattr(registry, "transport_description", None)
        text = describe(name) if describe else getattr(registry.get_transport(name), "description", "")
        rows.append([f"`{name}`", _cell(text)])
    return _table(["transport", "what it is"], rows)


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


def _run_metadata(campaign: Path) -> list[dict]:
    out = []
    for meta in sorted((campaign / "runs").glob("*/metadata.json")):
        try:
            out.append(json.loads(meta.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out


def _date(campaign: Path, metas: list[dict]) -> str:
    days = sorted({str(m["start_time"])[:10] for m in metas if m.get("start_time")})
    if days:
        return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    stamp = _STAMP.search(campaign.name)
    return f"{stamp.group(1)[:4]}-{stamp.group(1)[4:6]}-{stamp.group(1)[6:]}" if stamp else "date unknown"


def _machine(metas: list[dict]) -> str:
    """CPU, cores and kernel of the machine(s) the campaign's runs ran on, and the git
    revision(s) of netloop they ran (first and last when a campaign spans several)."""
    machines = []
    for m in metas:
        host = m.get("host") or {}
        parts = []
        if host.get("cpu"):
            parts.append(f"{host['cpu']}" + (f", {host['cores']} cores" if host.get("cores") else ""))
        if host.get("kernel"):
            parts.append(f"Linux {host['kernel']}")
        if parts and "; ".join(parts) not in machines:
            machines.append("; ".join(parts))
    ordered = sorted(metas, key=lambda m: str(m.get("start_time") or ""))
    commits = list(dict.fromkeys(str((m.get("git") or {}).get("commit"))[:10] for m in ordered
                                 if (m.get("git") or {}).get("commit")))
    dirty = any((m.get("git") or {}).get("dirty") for m in metas)
    text = " / ".join(machines) or "machine not recorded"
    if commits:
        text += "; git " + (commits[0] if len(commits) == 1 else
                            f"{commits[0]} to {commits[-1]} ({len(commits)} revisions)")
        text += " with local changes" if dirty else ""
    return text


def _valid(campaign: Path) -> str:
    try:
        cells = json.loads((campaign / "campaign.json").read_text(encoding="utf-8")).get("cells") or []
    except (OSError, ValueError):
        return "runs not recorded"
    ok = sum(1 for c in cells if c.get("status") == "complete")
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
    out += [f"| {_cell(setting)} {row}" for setting, _, rows in parts for row in rows]
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
    m = _BLOCK.search(page.read_text(encoding="utf-8"))
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
        metas = _run_metadata(campaign)
        report_md = (campaign / "report.md").read_text(encoding="utf-8")
        summary, table = report_extract(report_md)
        machine = _machine(metas)
        header = re.search(r"^- git (\S+)(?: \(dirty\))?; host (.+)$", report_md, re.M)
        if not metas and header:   # runs not kept: the report's own header names them
            machine = f"{header.group(2)}; git {header.group(1)}"
        out += [f"`{rel}`, measured {_date(campaign, metas)} on {machine}; {_valid(campaign)} "
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


def _block_body(page: Path, name: str) -> str | None:
    """What block ``name`` of ``page`` holds now (None: no such page or block)."""
    if not page.is_file():
        return None
    for m in _BLOCK.finditer(page.read_text(encoding="utf-8")):
        if m.group("name") == name:
            return m.group("body").strip() or None
    return None


def study(name: str) -> Callable[[Context], str]:
    """The generator of block ``study-<name>`` (netloop.studies.docs)."""
    def generate(ctx: Context) -> str:
        docs = _need("netloop.studies.docs", "the studies")
        block = f"study-{name}"
        return docs.block(name, ctx.results, _block_body(ctx.root / PAGES[block], block),
                          _run_metadata, _date, _machine)
    return generate


def bench_priority(ctx: Context) -> str:
    """The priority relay's mechanisms as ``make bench`` last measured them (bench/bench.json, not
    in git); where this checkout has not measured them, what the page says is kept."""
    pb = _need("netloop.transports.priority_bench", "the priority bench")
    try:
        bench = json.loads((ctx.root / "bench" / "bench.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        bench = {}
    current = _block_body(ctx.root / PAGES["bench-priority"], "bench-priority")
    if not pb.measured(bench) and current:
        return current
    return pb.docs_block(bench)


# ---------------------------------------------------------------- the pages

GENERATORS: dict[str, Callable[[Context], str]] = {
    "experiment-keys": experiment_keys,
    "cli": cli_reference,
    "glossary": glossary,
    "link-profiles": link_profiles,
    "transports": transports,
    "results": results,
    "headline": headline,
    **{f"study-{s}": study(s) for s in STUDY_MODULES},
    "bench-priority": bench_priority,
}


def pages(root: Path) -> list[Path]:
    """The pages that may hold generated blocks: README.md, docs/*.md and docs/studies/*.md."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md")),
                        *sorted((root / "docs" / "studies").glob("*.md"))] if p.is_file()]


def _rewrite(text: str, content: dict[str, str | None]) -> tuple[str, list[str]]:
    """``text`` with every block whose content is known rewritten; the names that changed."""
    changed: list[str] = []

    code = _in_code(text)

    def repl(m: re.Match) -> str:
        body = content.get(m.group("name"))
        if body is None or not _outside(code, m.start()):
            return m.group(0)
        new = f"{m.group('start')}\n\n{body.strip()}\n\n{m.group('end')}"
        if new != m.group(0):
            changed.append(m.group("name"))
        return new
    return _BLOCK.sub(repl, text), changed


def run(root: Path, results_dir: Path, check: bool = False, only: list[str] | None = None,
        skip: list[str] | None = None, out=sys.stdout, err=sys.stderr) -> int:
    """Rewrite (or with ``check`` only compare) the generated blocks of the pages under ``root``.
    Returns 0, 1 when ``check`` found stale blocks, 2 for a malformed page."""
    ctx = Context(Path(root), Path(results_dir))
    wanted = [n for n in (only or GENERATORS) if n not in (skip or [])]
    unknown = [n for n in wanted if n not in GENERATORS]
    if unknown:
        print(f"docgen: unknown block {', '.join(unknown)}; known: {', '.join(GENERATORS)}", file=err)
        return 2
    texts = {page: page.read_text(encoding="utf-8") for page in pages(ctx.root)}
    problems, found = [], {}
    for page, text in texts.items():
        rel = page.relative_to(ctx.root).as_posix()
        code = _in_code(text)
        closed = [m.group("name") for m in _BLOCK.finditer(text) if _outside(code, m.start())]
        for name in [m.group(1) for m in _OPENING.finditer(text) if _outside(code, m.start())]:
            if name not in GENERATORS:
                problems.append(f"{rel}: unknown generated block {name!r} (known: {', '.join(GENERATORS)})")
            elif name not in closed:
                problems.append(f"{rel}: block {name!r} has no '<!-- end generated: {name} -->'")
        for name in closed:
            found.setdefault(name, []).append(rel)
    if problems:
        for p in problems:
            print(f"docgen: {p}", file=err)
        return 2
    content: dict[str, str | None] = {}
    for name in wanted:
        page = PAGES[name]
        if name not in found:
            why = "does not exist yet" if not (ctx.root / page).is_file() else f"has no block '{name}'"
            print(f"docgen: skipped {name}: {page} {why}", file=err)
            continue
        try:
            content[name] = GENERATORS[name](ctx)
        except Unavailable as why:
            print(f"docgen: left {name} as it is: {why}", file=err)
    stale = []
    for page, text in texts.items():
        new, changed = _rewrite(text, content)
        rel = page.relative_to(ctx.root).as_posix()
        for name in changed:
            stale.append(f"{rel}: {name}")
        if changed and not check:
            page.write_text(new, encoding="utf-8")
    if check:
        if stale:
            print("docgen: stale generated blocks (run 'make docs'):", file=err)
            for s in stale:
                print(f"  {s}", file=err)
            return 1
        print(f"docgen: {len(content)} block(s) current", file=out)
        return 0
    for s in stale:
        print(f"docgen: rewrote {s}", file=out)
    if not stale:
        print(f"docgen: {len(content)} block(s) already current", file=out)
    return 0


EXAMPLE = "docs/example_report"


def set_example(root: Path, campaign: Path) -> Path:
    """Make ``campaign``'s report the example of ``root``/docs/example_report: its report.md,
    report.html, CSV tables, campaign.json, experiment.yaml and figures (not the runs' records,
    which stay in results/). What the example held before is replaced."""
    import shutil  # noqa: PLC0415
    if not (campaign / "report.md").is_file():
        raise SystemExit(f"docgen: {campaign} holds no report.md (run 'bin/netloop report {campaign}' first)")
    dest = root / EXAMPLE
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "figures").mkdir(parents=True)
    for f in sorted(campaign.iterdir()):
        if f.is_file() and (f.suffix in (".md", ".html", ".csv") or f.name in ("campaign.json", "experiment.yaml")):
            shutil.copy2(f, dest / f.name)
    for f in sorted((campaign / "figures").glob("*.png")):
        shutil.copy2(f, dest / "figures" / f.name)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m netloop.docgen",
                                 description="rewrite the generated blocks of README.md and docs/*.md")
    ap.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 listing the stale blocks")
    ap.add_argument("--results", type=Path, default=None,
                    help="where the campaigns of the results block are (default results/)")
    ap.add_argument("--root", type=Path, default=paths.REPO,
                    help="where the pages are (README.md, docs/); default the repository (a copy, for tests)")
    ap.add_argument("--only", action="append", metavar="NAME", help="only this block (repeatable)")
    ap.add_argument("--skip", action="append", metavar="NAME", help="leave this block alone (repeatable)")
    ap.add_argument("--example", type=Path, metavar="CAMPAIGN",
                    help=f"first make this campaign's report the example ({EXAMPLE}), then rewrite the blocks")
    args = ap.parse_args(argv)
    if args.example:
        print(f"docgen: {set_example(args.root, args.example)} now holds the report of {args.example}")
    results_dir = args.results or (paths.RESULTS if args.root == paths.REPO else args.root / "results")
    return run(args.root, results_dir, args.check, args.only, args.skip)


if __name__ == "__main__":
    sys.exit(main())
