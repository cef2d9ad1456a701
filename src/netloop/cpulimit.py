"""Slow robot computers: a host limited to a share of one CPU (experiment key ``hosts``).

    hosts:
      robot: {cpu: 0.25}                      # a quarter of one core, when it is busy
      robot: {cpu: 0.5, cpu_model: clock}     # one core at half its clock, always

Every process netloop starts on that host (its nodes, its ROS master, the relays) runs in a
cgroup of its own (cgroup v2 ``cpu.max``, or cgroup v1 ``cpu.cfs_quota_us`` /
``cpu.cfs_period_us`` where the cpu controller is mounted as v1, as on this machine).

Three models of a slow computer (``cpu_model``):

* ``share`` (default; period 10 ms): a bandwidth limit of ``cpu`` x ``cpu_period_ms`` in every
  period. A host that needs less than its share runs at full speed; a busy one is throttled,
  so its work queues up. This is how a slower CPU looks *under load* only.
* ``clock``: one core at ``cpu`` of its clock. Every process of the host has the slow-clock shim
  preloaded (``libnetloop_slow_clock.so``, ``src/tools/slow_clock.cpp``): before each output
  (a send or write) and before each wait (poll, select, epoll) a thread spends (1/``cpu`` - 1)
  x the CPU time it used since its last one, so every piece of work, however short, takes
  1/``cpu`` times as long, with no scheduler grain, and a busy thread saturates at ``cpu`` of
  the rate it would reach. No quota, no pinning: the host's threads may use every core (a
  Raspberry Pi 3 has four). Not stretched: the kernel's softirq work (a received packet is
  charged to whichever task the interrupt found) and sleeping. Measured against the Raspberry
  Pi 3 of Jordan's Exp 3 in docs/studies/jordan.md.
* ``quota``: the former clock model, kept for comparison: a ballast process in the host's
  cgroup (``SCHED_IDLE``: it runs only when none of the host's processes can) takes whatever of
  a ``cpu`` quota the host leaves, so every piece of work gets at most ``cpu`` of each period.
  Its grain is the period (default: the shortest the kernel allows, 1 ms of quota, i.e. 4 ms at
  ``cpu`` 0.25): a job shorter than that waits up to period - quota for its turn instead of
  being stretched evenly, so per-message latencies at low rates come out far *higher* than on
  a real slow clock (x2-18 for a halved clock, where a Pi 3 shows x1.2-1.4). The ballast burns
  ``cpu`` x one core while the run lasts.

The link emulator is not limited (it is not part of any host).

:class:`CpuLimits` creates the cgroups before anything starts, wraps each limited host's
command prefix so that a process joins its cgroup (and for ``clock`` gets the shim) before it
execs, records the kernel's throttling counters, and removes the cgroups when the run ends
(nothing is left behind).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import paths
from .hosts import Hosts
from .schema import ConfigError
from .testbed.util import killed_with_parent

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _v2_root() -> Path | None:
    """The cgroup v2 hierarchy whose cpu controller can be used, else None."""
    for root in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        controllers = root / "cgroup.controllers"
        try:
            if "cpu" in controllers.read_text().split():
                return root
        except OSError:
            continue
    return None


def _v1_root() -> Path | None:
    root = CGROUP_ROOT / "cpu"
    return root if (root / "cpu.cfs_quota_us").exists() else None


def cgroup_root() -> tuple[str, Path]:
    """("v2"|"v1", the hierarchy netloop's cgroups go under); ConfigError naming ``hosts``
    and why when CPU limits cannot be set here."""
    if os.geteuid() != 0:
        raise ConfigError("hosts", "a CPU limit (hosts.<host>.cpu) needs root: netloop creates a cgroup "
                                   "per limited host")
    v2 = _v2_root()
    if v2 is not None:
        return "v2", v2
    v1 = _v1_root()
    if v1 is not None:
        return "v1", v1
    raise ConfigError("hosts", f"a CPU limit needs the cgroup cpu controller (cgroup v2 cpu.max or v1 "
                               f"cpu.cfs_quota_us); neither is mounted under {CGROUP_ROOT}")


#: the kernel's smallest CFS quota
MIN_QUOTA_US = 1000

#: cpu_period_ms when the experiment gives none, per cpu_model (quota: as short as the kernel allows)
DEFAULT_PERIOD_MS = {"share": 10.0, "clock": 10.0, "quota": 1.0}
#: the models that pin the host to one CPU (one slow core)
ONE_CORE = ("quota",)
#: the slow-clock shim (``clock``): built with the package into devel/lib/netloop
SLOW_CLOCK_LIB = "libnetloop_slow_clock.so"

#: what the ballast of a ``clock`` host runs: nothing, as fast as it may
BALLAST = "while True:\n    pass\n"


def quota(share: float, period_ms: float) -> tuple[int, int]:
    """(period, quota) in microseconds for ``share`` of one CPU: ``period_ms``, lengthened
    where the share of it would be below the kernel's 1 ms minimum quota (so the share is
    kept exactly, not rounded up)."""
    period_us = int(round(period_ms * 1000))
    if share * period_us < MIN_QUOTA_US:
        period_us = int(-(-MIN_QUOTA_US // share))
    return period_us, max(MIN_QUOTA_US, int(round(share * period_us)))


class CpuLimits:
    """The cgroups of one run's CPU-limited hosts. ``limits``: {host: {"cpu": share of one
    CPU, "cpu_period_ms": period or None, "cpu_model": "share"|"clock"}}; ``tag`` names the
    cgroups (unique per run)."""

    def __init__(self, limits: dict[str, Any], tag: str):
        self.limits = {h: _resolved(v) for h, v in limits.items() if v.get("cpu") is not None}
        self.tag = "".join(c if c.isalnum() or c in "-_" else "_" for c in tag)[-60:]
        self.paths: dict[str, Path] = {}
        self.effective: dict[str, dict[str, int]] = {}
        self.ballasts: dict[str, subprocess.Popen] = {}
        #: the CPU the ``clock`` and ``quota`` hosts are pinned to
        self.clock_cpu = max(os.sched_getaffinity(0))
        #: the slow-clock shim's path (found when a ``clock`` host needs it)
        self.shim: str | None = None
        self.version = None

    def __enter__(self) -> "CpuLimits":
        if not self.limits:
            return self
        self.version, root = cgroup_root()
        remove_stale(root)
        if self.version == "v2":
            self._enable_cpu(root)
        try:
            for host, limit in self.limits.items():
                path = root / f"netloop-{os.getpid()}-{self.tag}-{host}"
                path.mkdir()
                self.paths[host] = path
                # share, quota: cpu of one core; clock: no quota (the shim slows the work itself,
                # and the host's threads may use every core, as a Raspberry Pi's four)
                period_us, quota_us = quota(limit["cpu"], limit["cpu_period_ms"])
                if limit["cpu_model"] == "clock":
                    quota_us = None
                self.effective[host] = {"quota_us": quota_us, "period_us": period_us}
                if self.version == "v2":
                    (path / "cpu.max").write_text(f"{quota_us or 'max'} {period_us}")
                else:
                    (path / "cpu.cfs_period_us").write_text(str(period_us))
                    (path / "cpu.cfs_quota_us").write_text(str(quota_us or -1))
                if limit["cpu_model"] == "quota" and limit["cpu"] < 1:   # a whole core's clock: no ballast
                    self.ballasts[host] = self._start_ballast(path)
                if limit["cpu_model"] == "clock":
                    self.shim = self.shim or slow_clock_library()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    @staticmethod
    def _enable_cpu(root: Path) -> None:
        control = root / "cgroup.subtree_control"
        if "cpu" not in control.read_text().split():
            control.write_text("+cpu")

    def _start_ballast(self, path: Path) -> subprocess.Popen:
        """The ``quota`` model's ballast: a busy loop in the cgroup, SCHED_IDLE, on the clock CPU;
        killed by the kernel if netloop dies without removing it."""
        cpu, dies_with_netloop = self.clock_cpu, killed_with_parent(os.getpid())

        def join() -> None:   # in the child, before it execs
            dies_with_netloop()
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            os.sched_setaffinity(0, {cpu})
            (path / "cgroup.procs").write_text(str(os.getpid()))
        return subprocess.Popen([sys.executable, "-c", BALLAST], preexec_fn=join, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)

    def wrapper(self, host: str) -> list[str]:
        """What to put before a command so that it runs in ``host``'s cgroup ([] when the
        host is not limited): a shell that moves itself into the cgroup (for a ``clock`` host
        with the slow-clock shim preloaded, before any other preload), then execs (for a
        ``clock`` or ``quota`` host pinned to its CPU)."""
        path = self.paths.get(host)
        if path is None:
            return []
        limit = self.limits[host]
        pin = ["taskset", "-c", str(self.clock_cpu)] if limit["cpu_model"] in ONE_CORE else []
        if limit["cpu_model"] == "clock" and limit["cpu"] < 1:
            return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && LD_PRELOAD="$1${LD_PRELOAD:+:$LD_PRELOAD}" '
                    'NETLOOP_CPU_CLOCK="$2" && export LD_PRELOAD NETLOOP_CPU_CLOCK && shift 2 && exec "$@"',
                    str(path), self.shim, repr(float(limit["cpu"]))] + pin
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(path)] + pin

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per limited host: the limit and the kernel's counters (periods, throttled periods,
        throttled time, CPU used)."""
        out = {}
        for host, path in self.paths.items():
            limit = self.limits[host]
            entry: dict[str, Any] = {"cpu": limit["cpu"], "cpu_period_ms": limit["cpu_period_ms"],
                                     "cpu_model": limit["cpu_model"], "cgroup": str(path),
                                     "cgroup_version": self.version, **self.effective[host]}
            if limit["cpu_model"] in ONE_CORE:
                entry["pinned_cpu"] = self.clock_cpu
            if limit["cpu_model"] == "clock" and limit["cpu"] < 1:
                entry["slow_clock_shim"] = self.shim
            ballast = self.ballasts.get(host)
            if ballast is not None:
                entry["ballast_cpu_s"] = _process_cpu_seconds(ballast.pid)
            try:
                fields = dict(line.split() for line in (path / "cpu.stat").read_text().splitlines() if line)
                entry.update(periods=int(fields.get("nr_periods", 0)), throttled_periods=int(fields.get("nr_throttled", 0)),
                             throttled_s=(int(fields["throttled_usec"]) / 1e6 if "throttled_usec" in fields
                                          else int(fields.get("throttled_time", 0)) / 1e9))
                if "usage_usec" in fields:   # v2 only; v1 keeps it in the cpuacct hierarchy
                    entry["cpu_s"] = int(fields["usage_usec"]) / 1e6
            except (OSError, ValueError):
                pass
            out[host] = entry
        return out

    def remove(self) -> None:
        """Remove the cgroups (their processes have ended by now; a straggler is moved to the
        parent first, so nothing is left behind)."""
        for host, ballast in list(self.ballasts.items()):
            ballast.kill()
            ballast.wait()
            self.ballasts.pop(host)
        for host, path in list(self.paths.items()):
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self._evict(path)
                    time.sleep(0.02)
            self.paths.pop(host, None)

    @staticmethod
    def _evict(path: Path) -> None:
        try:
            pids = (path / "cgroup.procs").read_text().split()
        except OSError:
            return
        for pid in pids:
            try:
                (path.parent / "cgroup.procs").write_text(pid)
            except OSError:
                pass


def remove_stale(root: Path) -> list[Path]:
    """Remove the cgroups a netloop killed with SIGKILL left behind (named netloop-<pid>-...,
    that pid gone; their processes died with it); returns those removed."""
    removed = []
    for path in root.glob("netloop-*"):
        pid = path.name.split("-")[1]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        CpuLimits._evict(path)
        try:
            path.rmdir()
            removed.append(path)
        except OSError:
            pass
    return removed


def slow_clock_library() -> str:
    """The slow-clock shim's path; ConfigError naming ``hosts`` when it is not built."""
    try:
        return str(paths.node_binary(SLOW_CLOCK_LIB))
    except FileNotFoundError as err:
        raise ConfigError("hosts", f"cpu_model clock preloads {SLOW_CLOCK_LIB} into the host's processes: "
                                   f"{err}") from None


def _resolved(limit: dict[str, Any]) -> dict[str, Any]:
    """A host's limit with its model and period filled in."""
    model = limit.get("cpu_model") or "share"
    period = limit.get("cpu_period_ms")
    return {**limit, "cpu_model": model, "cpu_period_ms": DEFAULT_PERIOD_MS[model] if period is None else period}


def _process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process (None when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, IndexError, ValueError):
        return None


class LimitedHosts(Hosts):
    """The run's hosts seen through the CPU limits: the same hosts and addresses, with every
    limited host's commands joining its cgroup. Every other method is the wrapped hosts'."""

    def __init__(self, hosts: Hosts, limits: CpuLimits):
        self._hosts, self._limits = hosts, limits

    def exec_prefix(self, host: str) -> list[str]:
        # the cgroup is joined first: inside `ip netns exec` /sys is a fresh sysfs without the
        # cgroup mounts, and membership carries over the execs that follow
        return self._limits.wrapper(host) + self._hosts.exec_prefix(host)

    def command(self, host: str, argv: list[str], env: dict[str, str] | None):
        argv, env, remote = self._hosts.command(host, argv, env)
        return self._limits.wrapper(host) + argv, env, remote

    @property
    def hosts(self) -> list[str]:
        return self._hosts.hosts

    @property
    def link_mbit(self) -> float | None:
        return self._hosts.link_mbit

    def address(self, host: str) -> str:
        return self._hosts.address(host)

    def netns(self, host: str) -> str | None:
        return self._hosts.netns(host)

    def translate(self, host: str, value: Any) -> Any:
        return self._hosts.translate(host, value)

    def is_remote(self, host: str) -> bool:
        return self._hosts.is_remote(host)

    def read_text(self, host: str, path: str) -> str | None:
        return self._hosts.read_text(host, path)

    def interfaces(self) -> tuple[dict[str, str], dict[str, int]]:
        return self._hosts.interfaces()

    def health(self, since: float | None = None, until: float | None = None) -> dict:
        return self._hosts.health(since, until)

    def metadata(self) -> dict:
        return self._hosts.metadata()

    def records_problems(self) -> list[str]:
        return self._hosts.records_problems()

    def up(self) -> "LimitedHosts":
        self._hosts.up()
        return self

    def down(self) -> None:
        self._hosts.down()
