"""Reading a campaign's report.md for the documentation (:mod:`netloop.docgen`): its Summary and
its decision table, as docs/ quotes them (images dropped, links into the campaign kept as text)."""
from __future__ import annotations

import re

from .docgen_blocks import md_cell


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
