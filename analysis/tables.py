"""Tables of the reports: one number formatter (:func:`fmt`) for Markdown, HTML and CSV, the
:class:`Table` a report section holds, and the CSV writer (``netloop report`` and
``netloop compare``).

Formatting rules (:func:`fmt`), the same in every output:

- missing (None or NaN): "–" in Markdown and HTML, an empty field in CSV;
- booleans: "yes" / "no";
- floats: ``digits`` decimals, and a value too small to show at that precision but not zero
  in scientific notation ("1.0e-09", not a misleading "0.000"); ``digits=None`` (CSV) keeps
  every digit (the shortest text that reads back as the same float);
- anything else: ``str(value)``.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable

MISSING = "–"


def is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt(value: Any, digits: int | None = 3, missing: str = MISSING) -> str:
    """The text of one table cell or number in prose (rules in the module docstring)."""
    if is_missing(value):
        return missing
    if isinstance(value, bool) or type(value).__name__ == "bool_":   # numpy's bool too
        return "yes" if value else "no"
    if isinstance(value, float):
        if digits is None:
            return repr(float(value))
        if value != 0 and abs(value) < 0.5 * 10 ** -digits:
            return f"{value:.1e}"
        return f"{value:.{digits}f}"
    return str(value)


def is_numeric_text(text: str) -> bool:
    """Whether a formatted cell is a number (or missing): right-aligned in HTML."""
    if text == MISSING:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass
class Table:
    """A table of a report: column names and rows of values (formatted when rendered, with
    ``digits`` decimals)."""

    kind: ClassVar[str] = "table"
    header: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    digits: int = 3

    def cells(self) -> list[list[str]]:
        """Every row as the texts shown in Markdown and HTML."""
        return [[fmt(v, self.digits) for v in row] for row in self.rows]


def write_csv(path: Path, header: list[str], rows: Iterable[Iterable[Any]]) -> Path:
    """A CSV file with a header line; values at full precision, missing ones empty."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in rows:
            w.writerow([fmt(v, None, missing="") for v in row])
    return Path(path)


def median_of(values: Iterable[Any]) -> float | None:
    """The median of the values that are not missing (None when there are none)."""
    vals = sorted(float(v) for v in values if not is_missing(v))
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2
