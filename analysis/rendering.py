"""A report as data, written as Markdown and as one self-contained HTML page.

A :class:`Document` is a title and :class:`Section` s; a section is a heading and blocks
(:class:`Heading`, :class:`Paragraph`, :class:`Bullets`, :class:`tables.Table`,
:class:`Figure`). The analysis builds sections; this module only renders them: Markdown
directly, HTML through the Jinja2 template of :mod:`page_template` (autoescaped). Text may
use two inline marks, as in Markdown: ``code`` and **bold**.
"""
from __future__ import annotations

import base64
import html
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Union

from .tables import Table, is_numeric_text


@dataclass
class Heading:
    kind: ClassVar[str] = "h"
    level: int
    text: str


@dataclass
class Paragraph:
    kind: ClassVar[str] = "p"
    text: str
    css: str = ""


@dataclass
class Bullets:
    kind: ClassVar[str] = "ul"
    items: list[str]
    css: str = ""


@dataclass
class Figure:
    kind: ClassVar[str] = "fig"
    path: Path
    caption: str = ""


Block = Union[Heading, Paragraph, Bullets, Table, Figure]


@dataclass
class Section:
    """One part of a report: its heading (none for the opening part) and its blocks, added
    with the builder methods (each returns the section)."""

    title: str = ""
    level: int = 2
    blocks: list[Block] = field(default_factory=list)

    def h(self, level: int, text: str) -> "Section":
        self.blocks.append(Heading(level, text))
        return self

    def p(self, text: str, css: str = "") -> "Section":
        self.blocks.append(Paragraph(text, css))
        return self

    def ul(self, items: list[str], css: str = "") -> "Section":
        if items:
            self.blocks.append(Bullets(list(items), css))
        return self

    def table(self, header: list[str], rows: list[list[Any]], digits: int = 3,
              formats: dict[str, Any] | None = None) -> "Section":
        """A table; ``formats``: column name -> formatter of that column's numbers."""
        self.blocks.append(Table(list(header), [list(r) for r in rows], digits, dict(formats or {})))
        return self

    def fig(self, path: Path, caption: str = "") -> "Section":
        self.blocks.append(Figure(Path(path), caption))
        return self


@dataclass
class Document:
    """A report: title, sections, and the directory its Markdown's figure links are relative to."""

    title: str
    base: Path
    sections: list[Section] = field(default_factory=list)
    #: (report.md, report.html) once :meth:`write` wrote them
    written: tuple[Path, Path] | None = field(default=None, repr=False)

    def add(self, *sections: Section | None) -> "Document":
        self.sections += [s for s in sections if s is not None and (s.title or s.blocks)]
        return self

    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for section in self.sections:
            if section.title:
                out += ["#" * section.level + " " + section.title, ""]
            for block in section.blocks:
                out += _markdown_block(block, self.base)
        return "\n".join(out)

    def html(self) -> str:
        return _page_template().render(doc=self)

    def write(self, md_path: Path, html_path: Path) -> tuple[Path, Path]:
        Path(md_path).write_text(self.markdown(), encoding="utf-8")
        Path(html_path).write_text(self.html(), encoding="utf-8")
        self.written = (Path(md_path), Path(html_path))
        return self.written

    def summary(self) -> list[str]:
        """The paragraphs of the ``Summary`` section as plain text (:func:`summary_text`):
        what ``netloop run``, ``report`` and ``compare`` print (:func:`print_summary`)."""
        return [summary_text(block.text) for section in self.sections if section.title == "Summary"
                for block in section.blocks if isinstance(block, Paragraph)]


def _markdown_block(block: Block, base: Path) -> list[str]:
    if isinstance(block, Heading):
        return ["#" * block.level + " " + block.text, ""]
    if isinstance(block, Paragraph):
        return [block.text, ""]
    if isinstance(block, Bullets):
        return [f"- {item}" for item in block.items] + [""]
    if isinstance(block, Table):
        lines = ["| " + " | ".join(block.header) + " |", "|" + "---|" * len(block.header)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in block.cells()]
        return lines + [""]
    if isinstance(block, Figure):
        lines = [f"![{block.path.stem}]({_relative(block.path, base)})", ""]
        return lines + ([f"*{block.caption}*", ""] if block.caption else [])
    raise TypeError(f"not a report block: {block!r}")


_TEMPLATE = None


def _page_template():
    """The page template (Jinja2 is imported on first use: the package imports without it)."""
    global _TEMPLATE
    if _TEMPLATE is None:
        import jinja2  # noqa: PLC0415
        from markupsafe import Markup  # noqa: PLC0415 - installed with Jinja2

        from .page_template import PAGE  # noqa: PLC0415
        env = jinja2.Environment(loader=jinja2.DictLoader({"page.html": PAGE}), autoescape=True,
                                 trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
        env.filters.update(inline=lambda text: Markup(inline(text)), plain=plain,
                           numeric=is_numeric_text, embedded_png=embedded_png)
        _TEMPLATE = env.get_template("page.html")
    return _TEMPLATE


def embedded_png(path: Path) -> dict[str, str]:
    """{"data": base64 of the file} or {"error": why it could not be read} (a missing figure
    is said so in the page, not dropped)."""
    try:
        return {"data": base64.b64encode(Path(path).read_bytes()).decode("ascii"), "error": ""}
    except OSError as err:
        return {"data": "", "error": err.strerror or str(err)}


_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_LINK = re.compile(r"\[([^\]]+)\]\(([^()\s]+)\)")


def inline(text: str) -> str:
    """Escape, then turn `code`, **bold** and [text](link) into HTML (code spans are kept
    verbatim; a link's target is a relative file name of the report's folder)."""
    codes: list[str] = []

    def stash(m):
        codes.append(m.group(1))
        return f"\x00{len(codes) - 1}\x00"
    out = _BOLD.sub(r"<strong>\1</strong>", html.escape(_CODE.sub(stash, str(text))))
    out = _LINK.sub(lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>', out)
    return re.sub("\x00(\\d+)\x00", lambda m: f"<code>{html.escape(codes[int(m.group(1))])}</code>", out)


def plain(text: str) -> str:
    """The text without its inline marks (for the page title and image alt texts)."""
    return _LINK.sub(r"\1", str(text)).replace("**", "").replace("`", "")


def _relative(path: Path, base: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(base).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def summary_text(text: str) -> str:
    """A summary paragraph for a terminal: ``**`` emphasis dropped, on one line."""
    return " ".join(_BOLD.sub(r"\1", text).split())


def summary_paragraphs(md_path: Path) -> list[str]:
    """The paragraphs of the ``## Summary`` section of a Markdown file a :class:`Document`
    wrote (report.md, compare.md) as :func:`summary_text`; ``[]`` when the file is missing or
    has no Summary. (The commands print :meth:`Document.summary` of the document they built.)"""
    try:
        text = Path(md_path).read_text(encoding="utf-8")
    except OSError:
        return []
    found = re.search(r"^## Summary\n(.*?)(?=^#{1,2} |\Z)", text, re.S | re.M)
    if not found:
        return []
    return [summary_text(para) for para in found.group(1).split("\n\n") if para.strip()]


def print_summary(paragraphs: list[str], width: int = 100) -> None:
    """Print a document's summary (:meth:`Document.summary`) for a terminal: a ``netloop:
    summary`` line, then one bullet per paragraph wrapped to ``width`` columns; nothing when
    there is none. What ``netloop run``, ``netloop report`` and ``netloop compare`` print
    before their files' paths."""
    if paragraphs:
        print("netloop: summary")
        for para in paragraphs:
            print(textwrap.fill(para, width=width, initial_indent="  - ", subsequent_indent="    "))
