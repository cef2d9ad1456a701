"""Tables of the reports: one number formatter (:func:`fmt`) for Markdown, HTML and CSV, the
:class:`Table` a report section holds, and the CSV writer (``netloop report`` and
``netloop compare``).

Formatting rules (:func:`fmt`), the same in every output:

- missing (None or NaN): "–" in Markdown and HTML, an empty field in CSV;
- booleans: "yes" / "no";
- floats: ``digits`` decimals, and a value too small to show at that precision but not zero
  in scientific notation ("1.0e-09", not a misleading "0.000"); ``digits=None`` (CSV) keeps
  every digit (the shortest text that reads back as the same float);
- anything else: ``str(value)``;
- a column of delivery ratios ("MDR … [%]") in a :class:`Table`: :func:`percent_value_text`
  (100, 99.96: a loss is never rounded away); the decision table's numbers: :func:`sig`
  (about three significant digits).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable

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


def sig(value: Any, n: int = 3, max_decimals: int = 3, missing: str = MISSING) -> str:
    """``value`` with about ``n`` significant digits for the reader (decision table, prose):
    6.8512 -> "6.85", 46.858 -> "46.9", 148.2 -> "148", 23 -> "23.0"; never more than
    ``max_decimals`` decimals, and never scientific notation: a value that rounds to nothing
    at that precision (1e-13) is "0"."""
    if is_missing(value):
        return missing
    v = float(value)
    if not math.isfinite(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    decimals = min(max(0, n - 1 - math.floor(math.log10(abs(v)))), max_decimals)
    text = f"{v:.{decimals}f}"
    return "0" if float(text) == 0 else text


def percent_text(share: Any, missing: str = MISSING) -> str:
    """A delivered share (0..1) as a percentage that never rounds a loss away: 1.0 -> "100",
    0.99996 -> "99.996", 0.9876 -> "98.8", 0.5 -> "50"."""
    if is_missing(share):
        return missing
    return percent_value_text(100.0 * float(share))


def percent_value_text(pct: Any, missing: str = MISSING) -> str:
    """A percentage (0..100) as :func:`percent_text` writes it."""
    if is_missing(pct):
        return missing
    pct = float(pct)
    if pct >= 100.0:
        return "100"
    for decimals in range(1, 9):              # 99.996 must not read as 100, 0.001 not as 0
        text = f"{pct:.{decimals}f}"
        if 0 < float(text) < 100:
            break
    text = sig(pct, 3) if 1 <= pct < 99 else text
    return text.rstrip("0").rstrip(".") if "." in text else text


def is_mdr_column(name: str) -> bool:
    """A column of message delivery ratios in % ("MDR [%]", "MDR y [%]"): its numbers are
    written by :func:`percent_value_text` in every table (100, 99.96, never 100.000)."""
    return name.startswith("MDR") and name.endswith("[%]")


def is_numeric_text(text: str) -> bool:
    """Whether a formatted cell is a number (or missing, or numbers as "a / b" or
    "median (min–max)"): right-aligned in HTML."""
    if text == MISSING:
        return True
    tokens = text.replace("(", " ").replace(")", " ").replace(" / ", " ").replace("–", " ").split()
    try:
        for token in tokens or [text]:        # "6.27 / 23.4" and "11.1 (4.95–24.3)" are numbers too
            float(token)
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
    #: column name -> its own formatter (e.g. :func:`percent_text` for an MDR column)
    formats: dict[str, Callable[[Any], str]] = field(default_factory=dict)

    def cells(self) -> list[list[str]]:
        """Every row as the texts shown in Markdown and HTML."""
        own = [self.formats.get(name) or (percent_value_text if is_mdr_column(name) else None)
               for name in self.header]
        return [[own[i](v) if i < len(own) and own[i] and not isinstance(v, str) else fmt(v, self.digits)
                 for i, v in enumerate(row)] for row in self.rows]


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
