"""Book-keeping of live testbeds in ``/run/netloop`` (tmpfs: gone after a reboot, as are
namespaces).

Each testbed has ``/run/netloop/<id>.json``, written *before* anything is created and
updated as processes start, recording its namespaces, processes (PID and start time, so a
reused PID is never killed) and its owner (the process that called ``up()``, or the keeper
process behind ``netloop testbed up``). A record whose owner is no longer running belongs
to a crashed run: :func:`cleanup_stale`, called by every ``up()``, removes what it lists.
A lock file serialises cleaning and id allocation between concurrent runs.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..jsonio import write_json_atomic
from . import util

if TYPE_CHECKING:
    from .profile_models import LinkProfile

log = logging.getLogger("netloop.testbed")

STATE_DIR = Path(os.environ.get("NETLOOP_STATE_DIR", "/run/netloop"))
#: every namespace of a testbed is called ``nl<id>-<role>``
PREFIX = "nl"


def ns_name(tb_id: str, role: str) -> str:
    return f"{PREFIX}{tb_id}-{role}"


@contextlib.contextmanager
def lock():
    """Exclusive lock over the state directory (blocks other testbeds' up/cleanup)."""
    STATE_DIR.mkdir(parents=True, exist_ok=True, mode=0o755)
    with open(STATE_DIR / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def path_of(tb_id: str) -> Path:
    return STATE_DIR / f"{tb_id}.json"


def save(record: dict) -> None:
    """Write a record atomically."""
    STATE_DIR.mkdir(parents=True, exist_ok=True, mode=0o755)
    write_json_atomic(path_of(record["id"]), record, indent=1)


def load(tb_id: str) -> dict | None:
    try:
        with open(path_of(tb_id), encoding="utf-8") as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def records() -> list[dict]:
    """All readable testbed records, oldest first."""
    out = []
    for p in sorted(STATE_DIR.glob("*.json")) if STATE_DIR.is_dir() else []:
        try:
            with open(p, encoding="utf-8") as f:
                rec = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(rec, dict) and rec.get("id") == p.stem:
            out.append(rec)
    return sorted(out, key=lambda r: r.get("created", 0))


def owner_alive(rec: dict) -> bool:
    return util.alive(rec.get("owner_pid"), rec.get("owner_start"))


def new_id() -> str:
    """A 4-hex-digit id not used by a record or an existing namespace."""
    taken = {r["id"] for r in records()}
    names = util.netns_list()
    for _ in range(1000):
        tb_id = secrets.token_hex(2)
        if tb_id not in taken and not any(n.startswith(ns_name(tb_id, "")) for n in names):
            return tb_id
    raise util.TestbedError("could not find a free testbed id")


def cleanup_record(rec: dict) -> list[str]:
    """Remove everything a record lists (processes, namespaces, work dir) and the record."""
    removed = []
    for p in rec.get("pids", []):
        if util.alive(p.get("pid"), p.get("start")):
            util.kill_pid(p["pid"], p.get("start"))
            removed.append(f"process {p['pid']} ({p.get('what', '?')})")
    for ns in rec.get("namespaces", []):
        if util.netns_exists(ns):
            util.netns_delete(ns)
            removed.append(f"namespace {ns}")
    work = rec.get("work_dir")
    if work and Path(work).is_dir() and Path(work).parent == STATE_DIR:
        shutil.rmtree(work, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        path_of(rec["id"]).unlink()
    return removed


def cleanup_stale() -> list[dict]:
    """Clean the records of testbeds whose owner died; returns them. Call under :func:`lock`."""
    cleaned = []
    for rec in records():
        if owner_alive(rec):
            continue
        removed = cleanup_record(rec)
        log.warning("removed leftover testbed %s (profile %s, owner pid %s gone): %s",
                    rec["id"], rec.get("profile"), rec.get("owner_pid"),
                    ", ".join(removed) or "nothing left")
        cleaned.append({**rec, "removed": removed})
    return cleaned


def new_record(tb_id: str, profile: LinkProfile, persistent: bool, namespaces: list[str],
               work_dir: str | None) -> dict:
    pid = os.getpid()
    return {"id": tb_id, "profile": profile.name, "type": profile.type,
            "owner_pid": pid, "owner_start": util.proc_start_time(pid),
            "persistent": persistent, "created": time.time(), "namespaces": namespaces,
            "pids": [], "work_dir": work_dir, "hosts": {}, "stats": None, "params": profile.to_dict()}
