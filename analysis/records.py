"""Reading the per-node event records (format "netloop-events/1").

The files are CSV, written one row at a time by the nodes (include/netloop/event_log.h),
so a file from a killed run may end in a cut-off row: such a row is skipped and counted,
never an error. Any other malformed row raises :class:`RecordError` naming file and line.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

HEADER = ["kind", "topic", "seq", "value", "stamp_ns", "recv_ns", "answer_seq", "answer_stamp_ns", "bytes"]


class RecordError(ValueError):
    pass


@dataclass
class Events:
    """The rows of one record file, as columns."""

    kind: np.ndarray        # str: tx / rx / stale
    topic: np.ndarray       # str
    seq: np.ndarray         # int64
    value: np.ndarray       # float64
    stamp_ns: np.ndarray    # int64, sender's clock at publish
    recv_ns: np.ndarray     # int64, -1 for tx
    answer_seq: np.ndarray  # int64, -1 when none
    answer_stamp_ns: np.ndarray
    bytes: np.ndarray       # int64
    truncated_rows: int = 0

    def select(self, kind: str, topic: str) -> "Events":
        mask = (self.kind == kind) & (self.topic == topic)
        return Events(*(getattr(self, f)[mask] for f in HEADER), truncated_rows=0)

    def __len__(self) -> int:
        return len(self.seq)


def read_events(path: str | Path) -> Events:
    """Read one record file; a missing file is a RecordError, a cut-off last row is skipped."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except FileNotFoundError:
        raise RecordError(f"{path}: record file missing") from None
    if not lines or lines[0].strip() != ",".join(HEADER):
        raise RecordError(f"{path}: not a netloop-events/1 file (header {lines[0][:80]!r})")
    # Every complete row ends in a newline; text after the last newline is a row cut off
    # by a kill (possibly parseable but with a cut number), so it is skipped and counted.
    complete, tail = lines[1:-1], (lines[-1] if len(lines) > 1 else "")
    rows = []
    for number, line in enumerate(complete, start=2):
        fields = line.split(",")
        try:
            if len(fields) != len(HEADER):
                raise ValueError(f"{len(fields)} fields, expected {len(HEADER)}")
            rows.append((fields[0], fields[1], int(fields[2]), float(fields[3]), int(fields[4]), int(fields[5]),
                         int(fields[6]), int(fields[7]), int(fields[8])))
        except ValueError as err:
            raise RecordError(f"{path}:{number}: malformed row ({err}): {line[:80]!r}") from None
    truncated = 1 if tail else 0
    cols = list(zip(*rows)) if rows else [[] for _ in HEADER]
    types = [str, str, np.int64, np.float64, np.int64, np.int64, np.int64, np.int64, np.int64]
    arrays = [np.array(c, dtype=t) for c, t in zip(cols, types)]
    return Events(*arrays, truncated_rows=truncated)
