"""A report as a list of blocks, written both as Markdown and as one self-contained HTML
page (figures embedded as base64 PNG, styles inline: no external file, no network).

Text may use two inline marks, as in Markdown: ``code`` and **bold**.
"""
from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CSS = """
body { font: 14px/1.45 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; color: #1b1b1b;
       max-width: 1180px; margin: 1.5em auto; padding: 0 1.2em; }
h1 { font-size: 1.6em; border-bottom: 2px solid #333; padding-bottom: .2em; }
h2 { font-size: 1.3em; margin-top: 1.8em; border-bottom: 1px solid #bbb; }
h3 { font-size: 1.1em; margin-top: 1.4em; }
code { background: #f1f1f1; padding: 0 .25em; border-radius: 3px; font-size: 92%; }
.tablewrap { overflow-x: auto; margin: .6em 0 1em; }
table { border-collapse: collapse; font-size: 12.5px; }
th, td { border: 1px solid #c8c8c8; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #eef1f5; position: sticky; top: 0; }
td:first-child, th:first-child { text-align: left; }
td.text { text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 12.5px; color: #444; margin-top: .2em; }
.problems { background: #fff4f4; border-left: 4px solid #c0392b; padding: .4em 1em; }
.summary { background: #f3f8ff; border-left: 4px solid #2a6fb0; padding: .4em 1em; }
.finding { color: #9b1c1c; }
.missing { color: #9b1c1c; font-style: italic; }
"""


def fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != 0 and abs(value) < 0.5 * 10 ** -digits:   # tiny, not zero: say how small
            return f"{value:.1e}"
        return f"{value:.{digits}f}"
    return str(value)


@dataclass
class Doc:
    """Blocks: ("h", level, text), ("p", text, css_class), ("ul", items, css_class),
    ("table", header, rows, digits), ("fig", path, caption)."""

    title: str
    base: Path            # figure paths are relative to this directory in the Markdown
    blocks: list[tuple] = field(default_factory=list)

    def h(self, level: int, text: str) -> "Doc":
        self.blocks.append(("h", level, text))
        return self

    def p(self, text: str, css: str = "") -> "Doc":
        self.blocks.append(("p", text, css))
        return self

    def ul(self, items: list[str], css: str = "") -> "Doc":
        if items:
            self.blocks.append(("ul", list(items), css))
        return self

    def table(self, header: list[str], rows: list[list[Any]], digits: int = 3) -> "Doc":
        self.blocks.append(("table", list(header), [list(r) for r in rows], digits))
        return self

    def fig(self, path: Path, caption: str = "") -> "Doc":
        self.blocks.append(("fig", Path(path), caption))
        return self

    # -- Markdown -----------------------------------------------------------------------
    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for block in self.blocks:
            kind = block[0]
            if kind == "h":
                out += ["#" * block[1] + " " + block[2], ""]
            elif kind == "p":
                out += [block[1], ""]
            elif kind == "ul":
                out += [f"- {item}" for item in block[1]] + [""]
            elif kind == "table":
                _, header, rows, digits = block
                out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                out += ["| " + " | ".join(fmt(v, digits).replace("|", "\\|") for v in row) + " |" for row in rows]
                out += [""]
            elif kind == "fig":
                _, path, caption = block
                rel = _relative(path, self.base)
                out += [f"![{path.stem}]({rel})", ""]
                if caption:
                    out += [f"*{caption}*", ""]
        return "\n".join(out)

    # -- HTML ---------------------------------------------------------------------------
    def html(self) -> str:
        body = [f"<h1>{inline(self.title)}</h1>"]
        for block in self.blocks:
            kind = block[0]
            if kind == "h":
                body.append(f"<h{block[1]}>{inline(block[2])}</h{block[1]}>")
            elif kind == "p":
                cls = f' class="{block[2]}"' if block[2] else ""
                body.append(f"<p{cls}>{inline(block[1])}</p>")
            elif kind == "ul":
                cls = f' class="{block[2]}"' if block[2] else ""
                body.append(f"<ul{cls}>" + "".join(f"<li>{inline(i)}</li>" for i in block[1]) + "</ul>")
            elif kind == "table":
                _, header, rows, digits = block
                head = "".join(f"<th>{inline(h)}</th>" for h in header)
                trs = []
                for row in rows:
                    cells = []
                    for v in row:
                        cls = ' class="text"' if isinstance(v, str) and not _numeric(v) else ""
                        cells.append(f"<td{cls}>{inline(fmt(v, digits))}</td>")
                    trs.append("<tr>" + "".join(cells) + "</tr>")
                body.append(f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>'
                            + "".join(trs) + "</tbody></table></div>")
            elif kind == "fig":
                _, path, caption = block
                body.append(figure_html(path, caption))
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(_plain(self.title))}</title>"
                f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{CSS}</style>"
                "</head><body>\n" + "\n".join(body) + "\n</body></html>\n")

    def write(self, md_path: Path, html_path: Path) -> tuple[Path, Path]:
        Path(md_path).write_text(self.markdown(), encoding="utf-8")
        Path(html_path).write_text(self.html(), encoding="utf-8")
        return Path(md_path), Path(html_path)


def figure_html(path: Path, caption: str = "") -> str:
    """A figure embedded as a base64 data URI; a missing figure is said so, not dropped."""
    cap = f"<figcaption>{inline(caption)}</figcaption>" if caption else ""
    try:
        data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    except OSError as err:
        return f'<figure><p class="missing">figure {html.escape(Path(path).name)} missing: ' \
               f'{html.escape(err.strerror or str(err))}</p>{cap}</figure>'
    alt = html.escape(_plain(caption) or Path(path).stem, quote=True)
    return f'<figure><img alt="{alt}" src="data:image/png;base64,{data}">{cap}</figure>'


_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def inline(text: str) -> str:
    """Escape, then turn `code` and **bold** into HTML (code spans are kept verbatim)."""
    codes: list[str] = []

    def stash(m):
        codes.append(m.group(1))
        return f"\x00{len(codes) - 1}\x00"
    out = _BOLD.sub(r"<strong>\1</strong>", html.escape(_CODE.sub(stash, str(text))))
    return re.sub("\x00(\\d+)\x00", lambda m: f"<code>{html.escape(codes[int(m.group(1))])}</code>", out)


def _plain(text: str) -> str:
    return str(text).replace("**", "").replace("`", "")


def _numeric(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return s == "–"


def _relative(path: Path, base: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(base).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()
