"""The run directory: what one run leaves on disk, readable even if the run was killed.

    results/<campaign>/runs/<run-id>/
      metadata.json      format "netloop-run/1": config, cell, git revision, host (hostname,
                         CPU, kernel, netloop version), ROS,
                         transport, link, start/end times, status, node exit codes, and
                         "cpu": per testbed host the CPU seconds its processes used and
                         that as a share of one core over the run (sampled each second)
      records/*.csv      every loop message sent and received, one file per node
                         (format "netloop-events/1", see include/netloop/event_log.h)
      logs/*.log         stdout/stderr of every process; logs/ros/ holds ROS's own logs
    results/<campaign>/invalid/<run-id>.attemptN/
                         a run judged invalid (its link fell behind real time) and run
                         again (the experiment's rerun_invalid): kept, out of the tables
    results/<campaign>/aborted/<run-id>.attemptN/
                         a run left unfinished, set aside by ``netloop run --resume``

metadata.json is written when the run starts (status "running") and rewritten atomically
(write to a temporary file, then rename) whenever it changes, so it is always complete
JSON. A run that was killed keeps status "running" with no end time, which the analysis
reports as "incomplete".

:class:`RunDir` is the one place that knows this layout: every reader of a run's
metadata.json goes through :mod:`netloop.run_files` (the typed :class:`RunRecord`,
:func:`load_metadata`, :func:`save_metadata`), which refuses a file of another format with a
clear :class:`MetadataError`; every JSON file is written atomically
(:func:`netloop.jsonio.write_json_atomic`).
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from . import paths, rosenv
from .jsonio import write_json_atomic
from .run_files import EVENTS_FORMAT, METADATA, RUN_FORMAT, MetadataError, RunRecord, load_metadata, save_metadata

#: what other modules import from here (the typed records themselves: netloop.run_files)
__all__ = ["EVENTS_FORMAT", "RUN_FORMAT", "MetadataError", "RunDir", "RunMetadata", "RunRecord", "attempts",
           "create_run_dir", "cpu_steal_seconds", "git_revision", "host_info", "invalid_attempts", "now_iso",
           "ros_info", "set_aside", "sink_names", "write_json_atomic"]


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


class RunDir:
    """One run directory: metadata.json, records/ (one event record per node), logs/."""

    METADATA = METADATA

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def metadata_path(self) -> Path:
        return self.path / self.METADATA

    @property
    def records(self) -> Path:
        return self.path / "records"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    def record(self, name: str) -> Path:
        """The record file ``records/<name>.csv``."""
        return self.records / f"{name}.csv"

    def looks_like_a_run(self) -> bool:
        """Whether the directory holds a run (its metadata.json or its records/)."""
        return self.metadata_path.exists() or self.records.is_dir()

    def create(self) -> "RunDir":
        """Make the directory with records/ and logs/ros/."""
        for sub in ("records", "logs/ros"):
            (self.path / sub).mkdir(parents=True, exist_ok=True)
        return self

    def load_metadata(self) -> RunRecord:
        """metadata.json as a typed record (:func:`netloop.run_files.load_metadata`)."""
        return load_metadata(self.path)

    def save_metadata(self, record: RunRecord) -> None:
        """Write metadata.json atomically."""
        save_metadata(self.path, record)


def sink_names(flow: Any) -> list[tuple[str, str, str]]:
    """Every subscriber of a flow (a :class:`netloop.model.Flow`) as (node name, host, record
    file name): ``flow_<name>_sink`` and ``flow_<name>_rx.csv`` for a flow's only subscriber,
    numbered from 1 otherwise. The run (:mod:`netloop.flows`) starts them under these names and
    the analysis reads their records by them."""
    hosts = flow.subscriber_hosts
    if len(hosts) == 1:
        return [(f"flow_{flow.name}_sink", hosts[0], f"flow_{flow.name}_rx.csv")]
    return [(f"flow_{flow.name}_sink{k}", host, f"flow_{flow.name}_rx{k}.csv") for k, host in enumerate(hosts, 1)]


def create_run_dir(path: Path) -> Path:
    return RunDir(path).create().path


def attempts(folder: Path, run_id: str) -> list[Path]:
    """The attempts of a cell set aside in ``folder`` (``<run-id>.attemptN``), oldest first."""
    return sorted(Path(folder).glob(f"{run_id}.attempt*"), key=lambda p: int(p.name.rsplit("attempt", 1)[1]))


def invalid_attempts(campaign: Path, run_id: str) -> list[Path]:
    """The attempts of a campaign's cell that were judged invalid and run again, oldest first."""
    return attempts(Path(campaign) / "invalid", run_id)


def set_aside(run_dir: Path, folder: Path) -> Path:
    """Move a run directory to ``folder/<run-id>.attemptN`` (N counts up from 1); returns where."""
    folder.mkdir(exist_ok=True)
    target = folder / f"{run_dir.name}.attempt{1 + len(attempts(folder, run_dir.name))}"
    shutil.move(str(run_dir), str(target))
    return target


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
    """The machine a run ran on (hostname, CPU model and count, kernel, Python) and the netloop
    version it ran (``netloop``, the package's one version: :data:`netloop.__version__`)."""
    from . import __version__  # noqa: PLC0415
    cpu = ""
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                    if line.startswith("model name")), "")
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "kernel": platform.release(), "cpu": cpu,
            "cores": os.cpu_count(), "python": platform.python_version(), "netloop": __version__}


def cpu_steal_seconds() -> float | None:
    """CPU time the hypervisor has taken from this (virtual) machine since boot, summed over
    its CPUs (``steal`` in /proc/stat); None where the kernel does not report it."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK") if fields[0] == "cpu" and len(fields) > 8 else None
    except (OSError, ValueError):
        return None


def ros_info() -> dict[str, Any]:
    version = None
    try:
        import rospkg  # noqa: PLC0415 - only needed here
        version = rospkg.RosPack().get_manifest("roscpp").version
    except Exception:  # pragma: no cover - rospkg missing or roscpp not found
        pass
    return {"distro": os.environ.get("ROS_DISTRO") or rosenv.ros_distro(), "roscpp": version}


class RunMetadata:
    """metadata.json of one run, kept current on disk: ``record`` (a :class:`RunRecord`) saved
    atomically after every change."""

    def __init__(self, run_dir: Path, **fields: Any):
        self.run_dir = Path(run_dir)
        self.record = RunRecord(status="running", start_time=now_iso(), start_unix=time.time(),
                                git=git_revision(), host=host_info(), ros=ros_info())
        self.record.update(**fields)
        self.save()

    @property
    def data(self) -> dict[str, Any]:
        """The metadata.json document as it is now."""
        return self.record.to_json()

    def update(self, **fields: Any) -> None:
        self.record.update(**fields)
        self.save()

    def finish(self, status: str, **fields: Any) -> None:
        self.update(status=status, end_time=now_iso(), end_unix=time.time(), **fields)

    def save(self) -> None:
        save_metadata(self.run_dir, self.record)
