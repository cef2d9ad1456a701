"""Waiting on observable state: the one polling helper of the package."""
from __future__ import annotations

import time
from typing import Any, Callable


def wait_for(predicate: Callable[[], Any], timeout: float, interval: float = 0.01) -> Any:
    """Call ``predicate()`` every ``interval`` seconds until it returns a true value or
    ``timeout`` seconds pass; returns its last value (false on a timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)
