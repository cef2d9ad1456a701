"""Waiting on observable state instead of sleeping a fixed time (imported as `waiting`)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from netloop.analysis.records import RecordError, read_events
from netloop.master import wait_for


def wait_until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Returns as soon as ``predicate()`` is true; fails the test naming ``what`` when it is
    still false after ``timeout`` seconds."""
    assert wait_for(predicate, timeout, interval=0.02), f"timed out after {timeout:g} s waiting for {what}"


def recorded(path: Path, kind: str, topic: str) -> int:
    """How many events of ``kind`` ("tx"/"rx") on ``topic`` a record file being written holds
    so far (0 while it does not exist or has no complete header yet)."""
    try:
        return len(read_events(path).select(kind, topic))
    except RecordError:
        return 0
