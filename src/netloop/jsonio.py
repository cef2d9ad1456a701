"""Writing a JSON file atomically: the one implementation netloop uses everywhere.

Standard library only (no ROS, no numpy), so the car driver and the testbed book-keeping can
import it cheaply. The data go to a temporary file next to the target, are flushed to disk,
and the temporary file is renamed over the target: a reader sees the old file or the new
one, never a half-written one, even if the writer is killed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json_atomic(path: str | Path, data: Any, indent: int | None = 2) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (values JSON cannot hold are written as
    their ``str()``); returns the path."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")   # per process: concurrent writers never share it
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=indent, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
