"""The run directory: what one run leaves on disk, readable even if the run was killed.

    results/<campaign>/runs/<run-id>/
      metadata.json      format "netloop-run/1": config, cell, git revision, host, ROS,
                         transport, link, start/end times, status, node exit codes
      records/*.csv      every loop message sent and received, one file per node
                         (format "netloop-events/1", see include/netloop/event_log.h)
      logs/*.log         stdout/stderr of every process; logs/ros/ holds ROS's own logs

metadata.json is written when the run starts (status "running") and rewritten atomically
(write to a temporary file, then rename) whenever it changes, so it is always complete
JSON. A run that was killed keeps status "running" with no end time, which the analysis
reports as "incomplete".
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from . import paths, rosenv

RUN_FORMAT = "netloop-run/1"
EVENTS_FORMAT = "netloop-events/1"


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def create_run_dir(path: Path) -> Path:
    path = Path(path)
    for sub in ("records", "logs/ros"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    return path


def write_json_atomic(path: Path, data: Any) -> None:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False, default=str)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_metadata(run_dir: Path) -> dict[str, Any]:
    with open(Path(run_dir) / "metadata.json", encoding="utf-8") as f:
        return json.load(f)


def git_revision() -> dict[str, Any]:
    """The repository's commit and whether the work tree had uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(paths.REPO), *args], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    try:
        return {"commit": git("rev-parse", "HEAD") or None,
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def host_info() -> dict[str, Any]:
    cpu = ""
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                    if line.startswith("model name")), "")
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "kernel": platform.release(), "cpu": cpu,
            "cores": os.cpu_count(), "python": platform.python_version()}


def ros_info() -> dict[str, Any]:
    version = None
    try:
        import rospkg  # noqa: PLC0415 - only needed here
        version = rospkg.RosPack().get_manifest("roscpp").version
    except Exception:  # pragma: no cover - rospkg missing or roscpp not found
        pass
    return {"distro": os.environ.get("ROS_DISTRO") or rosenv.ros_distro(), "roscpp": version}


class RunMetadata:
    """metadata.json of one run, kept current on disk."""

    def __init__(self, run_dir: Path, **fields: Any):
        self.path = Path(run_dir) / "metadata.json"
        self.data: dict[str, Any] = {
            "format": RUN_FORMAT, "records_format": EVENTS_FORMAT, "status": "running",
            "start_time": now_iso(), "start_unix": time.time(), "end_time": None,
            "git": git_revision(), "host": host_info(), "ros": ros_info(), **fields}
        self.save()

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def finish(self, status: str, **fields: Any) -> None:
        self.update(status=status, end_time=now_iso(), end_unix=time.time(), **fields)

    def save(self) -> None:
        write_json_atomic(self.path, self.data)
