"""What the relay transports (nimbro, nimbro_mixed, priority, multimaster) share: message
type look-up, finding optional ROS packages (nimbro_network, multimaster_fkie), ports per
host, the statistics files, and the base class that records what was started."""
from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from .. import rosenv
from ..jsonio import write_json_atomic
from ..schema import validate
from .base import CrossingTopic, Transport, TransportContext

#: Topic where every relay reports its statistics (netloop/RelayStats; the same report is
#: one line of records/relay_<process>_stats.jsonl).
STATS_TOPIC = "/netloop_relay/stats"
#: Message type of the relays' reports on STATS_TOPIC.
STATS_TYPE = "netloop/RelayStats"
#: Messages up to this size go over UDP in the mixed settings (as `udp/tcp_nodelay`).
SMALL_MESSAGE_BYTES = 16384
#: ROS Noetic's install prefix (where nimbro_network / multimaster_fkie would be).
NOETIC = Path("/opt/ros/noetic")


class TransportError(RuntimeError):
    """A relay transport cannot start as configured (e.g. the real package is missing)."""


@functools.lru_cache(maxsize=None)
def message_type(datatype: str) -> dict[str, str] | None:
    """{'type', 'md5', 'definition'} of a ROS message type, or None when unknown. Looked up
    in this process (genpy's generated classes), else in a process with the package's ROS
    environment (which has the devel space on its path)."""
    try:
        import roslib.message  # noqa: PLC0415
        cls = roslib.message.get_message_class(datatype)
        if cls is not None:
            return {"type": cls._type, "md5": cls._md5sum, "definition": cls._full_text}
    except Exception:  # noqa: BLE001 - any import/lookup problem: try the other way
        pass
    code = ("import json, sys, roslib.message as m; c = m.get_message_class(sys.argv[1]); "
            "print(json.dumps(c and {'type': c._type, 'md5': c._md5sum, 'definition': c._full_text}))")
    try:
        out = subprocess.run(["/usr/bin/python3", "-c", code, datatype], env=rosenv.base_env(),
                             capture_output=True, text=True, timeout=30, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


@functools.lru_cache(maxsize=None)
def find_ros_package(name: str) -> Path | None:
    """Share directory of an installed ROS package (Noetic's prefix, or rospack), or None."""
    share = NOETIC / "share" / name
    if share.is_dir():
        return share
    try:
        out = subprocess.run(["rospack", "find", name], env=rosenv.base_env(), capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None
    return path if path and path.is_dir() else None


def ros_executable(package: str, name: str) -> Path | None:
    """An installed ROS package's node executable (lib/<package>/<name>), or None."""
    share = find_ros_package(package)
    candidates = [NOETIC / "lib" / package / name]
    if share is not None:
        candidates += [share.parents[1] / "lib" / package / name, share / "nodes" / name, share / "scripts" / name]
    return next((p for p in candidates if p.is_file() and os.access(p, os.X_OK)), None)


def free_port(address: str = "127.0.0.1", kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def host_ports(ctx: TransportContext, base: int, per_host: int = 1) -> dict[str, int]:
    """First of `per_host` consecutive ports for each host. Hosts that are namespaces have
    the whole port space to themselves (base + k*per_host); hosts sharing one address
    (loopback) get ports free now."""
    hosts = list(ctx.address)
    if len(set(ctx.address.values())) == len(hosts):
        return {h: base + i * per_host for i, h in enumerate(hosts)}
    out: dict[str, int] = {}
    used: set[int] = set()
    for h in hosts:
        while True:  # per_host consecutive ports free now (TCP and UDP), not given to another host
            p = free_port(ctx.address[h])
            block = set(range(p, p + per_host))
            if p + per_host < 65536 and not block & used and all(_free(ctx.address[h], q) for q in block):
                out[h] = p
                used |= block
                break
    return out


def _free(address: str, port: int) -> bool:
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind((address, port))
            except OSError:
                return False
    return True


def default_priorities(topics: list[CrossingTopic]) -> dict[str, int]:
    """Pound's default order: the control loops' topics first (250; ``CrossingTopic.control``),
    then the others by message size, smallest first (200, 190, ...; at least 1). Higher = more urgent."""
    out = {t.topic: 250 for t in topics if t.control}
    others = sorted({t.topic: t for t in topics if not t.control}.values(),
                    key=lambda t: (t.message_bytes, t.topic))
    for rank, t in enumerate(others):
        out[t.topic] = max(1, 200 - 10 * rank)
    return out


class RelayTransport(Transport):
    """Base of the transports that run one ROS master per host and carry the crossing topics
    between them with processes of their own. Subscribers connect to their local relay (or,
    for multimaster, directly to the remote publisher) with TCP_NODELAY.

    One instance serves one run (``get_transport`` makes a new one each time): it keeps what
    it started, so its metadata stays right after ``stop``."""

    multi_master = True
    relays = True
    #: file-name prefix of the relay processes ("nimbro", "priority_relay", "mm_sync")
    process_prefix = "relay"
    #: message type of this transport's reports on STATS_TOPIC
    stats_type = STATS_TYPE

    def __init__(self) -> None:
        self.ctx: TransportContext | None = None
        self.options: dict[str, Any] = {}
        self.implementation: str | None = None
        self.processes: list[dict[str, Any]] = []   # name, host, argv, params (what was started)
        self.handles: dict[str, Any] = {}          # name -> process handle from ctx.start

    def subscriber_transport(self, topic, message_bytes=None):
        return "tcp_nodelay"

    # --- helpers for subclasses ----------------------------------------------------------
    def _begin(self, ctx: TransportContext) -> dict[str, Any]:
        """Validated options (defaults filled in: the runner passes {} when none are given)."""
        if self.ctx is not None:
            raise RuntimeError(f"transport {self.name!r} already started: get_transport() gives one instance per run")
        self.ctx = ctx
        self.options = validate(self.options_schema, ctx.options or {}) if self.options_schema else {}
        (Path(ctx.run_dir) / "records").mkdir(parents=True, exist_ok=True)
        return self.options

    def stats_path(self, node: str) -> Path:
        assert self.ctx is not None
        return Path(self.ctx.run_dir) / "records" / f"relay_{node}_stats.jsonl"

    def _launch(self, spec: dict[str, Any]) -> None:
        """Start one process described as {name, host, argv, params} through ctx.start."""
        assert self.ctx is not None and self.ctx.start is not None, "transport started without ctx.start"
        self.processes.append(spec)
        self.handles[spec["name"]] = self.ctx.start(spec["name"], spec["host"], spec["argv"], spec["params"])

    def _write_record(self) -> None:
        """The transport's own record next to the run's metadata (runs/<id>/transport.json):
        what ran, with which parameters (type definitions shortened), and how to reach each
        host's master (``masters``, and ``exec_prefix``: the command prefix that runs a process
        on the host), so that a running relay can be reconfigured from outside the runner."""
        if self.ctx is None:
            return
        record = self.metadata() | {"processes": [
            {"name": p["name"], "host": p["host"], "argv": p["argv"], "params": _shorten(p["params"])}
            for p in self.processes], "masters": dict(self.ctx.masters),
            "exec_prefix": {h: list(prefix) for h, prefix in self.ctx.exec_prefix.items()}}
        write_json_atomic(Path(self.ctx.run_dir) / "transport.json", record, indent=1)

    def stop(self) -> None:
        """Writes the final record (the processes are stopped with the run's process group)."""
        if self.ctx is not None:
            self._write_record()

    def metadata(self) -> dict[str, Any]:
        out = super().metadata() | {"multi_master": True, "stats_topic": STATS_TOPIC, "stats_type": self.stats_type,
                                    "stats_files": "records/relay_*_stats.jsonl",
                                    "implementation": self.implementation or self.detect_implementation()}
        if self.ctx is not None:
            out["relay_processes"] = {p["name"]: p["host"] for p in self.processes}
            out["stats_files"] = sorted(str(Path("records") / f"relay_{p['name']}_stats.jsonl")
                                        for p in self.processes if p.get("own", True))
            out["options"] = self.options
        return out

    def detect_implementation(self) -> str:  # overridden
        return "own"


def _shorten(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v[:60] + "..." if k == "definition" and isinstance(v, str) and len(v) > 60 else _shorten(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    return value


def python_module_argv(module: str, name: str) -> list[str]:
    """argv running one of netloop's Python modules as a ROS node called `name`."""
    return [sys.executable, "-m", module, f"__name:={name}"]
