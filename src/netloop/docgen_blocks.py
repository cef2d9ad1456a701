"""The generated blocks of the documentation's pages (:mod:`netloop.docgen`): which page holds
which block, how a block is marked, and what every block's generator shares (its
:class:`Context`, Markdown table cells, importing a source that may be missing).

A hand-written page holds a generated block between two HTML comments::

    <!-- generated: NAME (by `make docs`) -->
    ... rewritten by make docs, never edited by hand ...
    <!-- end generated: NAME -->

A marker inside a fenced code block is an example, not a block.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

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
    "example-ros2": "docs/ros2.md",
    "example-fig21": "docs/studies/pound.md",
    **{f"study-{s}": f"docs/studies/{s}.md" for s in STUDY_MODULES},
    "bench-priority": "docs/priority.md",
    "bench-ros2": "docs/ros2.md",
}

BLOCK = re.compile(r"^(?P<start><!--\s*generated:\s*(?P<name>[\w-]+)(?:\s+\(by `make docs`\))?\s*-->)"
                    r"(?P<body>.*?)"
                    r"^(?P<end><!--\s*end generated:\s*(?P=name)\s*-->)", re.S | re.M)
OPENING = re.compile(r"^<!--\s*generated:\s*([\w-]+)", re.M)
FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.S | re.M)


def in_code(text: str) -> list[tuple[int, int]]:
    """Spans of the fenced code blocks of a page (where a marker is an example, not a block)."""
    return [m.span() for m in FENCE.finditer(text)]


def outside(spans: list[tuple[int, int]], at: int) -> bool:
    return not any(a <= at < b for a, b in spans)


class Unavailable(Exception):
    """A block's source cannot be read here (not written yet, or a package is missing)."""


@dataclass
class Context:
    root: Path      # where the pages are (README.md, docs/): the repository, or a copy of its pages
    results: Path   # where campaigns are looked for


def md_cell(text: object) -> str:
    """Text for one cell of a Markdown table: one line, pipes escaped, no stray HTML."""
    return " ".join(str(text).split()).replace("|", r"\|").replace("<", "&lt;")


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def need(module: str, what: str):
    """Import ``module`` or say what is missing for ``what``."""
    import importlib  # noqa: PLC0415
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name and (err.name == module or module.startswith(err.name + ".")):
            raise Unavailable(f"{what}: {module} does not exist yet") from None
        raise Unavailable(f"{what} needs the Python package {err.name!r} "
                          f"(run 'make build', then 'make docs' again)") from None



_GIT = re.compile(r";? git [0-9a-f]{7,40}(?: \(dirty\))?(?: to [0-9a-f]{7,40} \(\d+ revisions\))?(?: with local changes)?")
_CLOCK = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](?:between )?\d{1,2}:\d{2}(?::\d{2})?"
                    r"(?:(?:[–-]| and )\d{1,2}:\d{2}(?::\d{2})?)?(?: ?UTC)?")


def undiaried(text: str) -> str:
    """``text`` (a generated block's body, as an older netloop wrote it) without the diary the
    documentation leaves out: a git revision ("; git 6318db46c6 with local changes") and a time
    of day after a date ("2026-11-26 17:49 UTC" -> "2026-11-26"). The campaign a block names
    keeps both."""
    return _CLOCK.sub(r"\1", _GIT.sub("", text))


def block_body(page: Path, name: str) -> str | None:
    """What block ``name`` of ``page`` holds now (None: no such page or block)."""
    if not page.is_file():
        return None
    for m in BLOCK.finditer(page.read_text(encoding="utf-8")):
        if m.group("name") == name:
            return m.group("body").strip() or None
    return None
