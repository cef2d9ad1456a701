"""Whether the real machines can run an experiment, asked before anything starts: one shell
script per machine (over SSH, or here for the local one) answers in ``key=value`` lines (the
checkout there and built, ROS, the git revision, a writable run directory, the interface, the
ROS 2 middlewares of its build, time sync, netloop processes of an earlier run still running);
:func:`check` turns them into one line per problem (:class:`~netloop.ssh.RealHostsError`).
:func:`clean_stale` stops what an earlier run left running (``netloop run --clean-stale``)."""
from __future__ import annotations

import shlex
import subprocess
import time
from typing import TYPE_CHECKING

from . import machine_check
from .rundir import git_revision
from .ssh import SSH_LOST, RealHostsError, ssh_problem

if TYPE_CHECKING:  # pragma: no cover - types only
    from .machines import RealHosts

#: a compiled node that a built checkout has
BUILT_MARK = ".build/ws/devel/lib/netloop/flow_sink"
#: how long a run waits for processes of the previous run still stopping on a machine [s]
STALE_WAIT_S = 15.0

#: :func:`netloop_processes`)
_PROCESS_LIST = """ps -ww -u "$(id -u)" -o pid=,args= 2>/dev/null | sed 's/^ */proc=/'"""

# Run on every machine (over SSH, or here for the local one) before a run: key=value lines.
_CHECK_SCRIPT = machine_check.ROS2_LINKED_SH + r"""
root=$1; run_root=$2; iface=$3
case $run_root in "~") run_root=$HOME;; "~/"*) run_root="$HOME/${run_root#??}";; esac
echo "home=$HOME"
echo "hostname=$(hostname)"
echo "arch=$(uname -m)"
# this user's processes (the operator picks the netloop wrappers writing under run_root)
PROCESS_LIST
if [ ! -d "$root" ]; then echo "root=missing"; exit 0; fi
echo "root=ok"
[ -x "$root/bin/netloop-remote-exec" ] && echo "wrapper=ok"
[ -x "$root/BUILT_MARK" ] && echo "built=ok"
echo "revision=$(git -C "$root" rev-parse HEAD 2>/dev/null)"
echo "dirty=$(git --no-optional-locks -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -c 1 | wc -c)"
( NETLOOP_ROOT=$root; . "$root/scripts/env.sh" >/dev/null 2>&1; command -v rosmaster >/dev/null 2>&1 && echo "ros=ok" )
mkdir -p "$run_root" 2>/dev/null && [ -w "$run_root" ] && echo "run_root=ok"
if [ -n "$iface" ]; then
  if [ -r "/sys/class/net/$iface/mtu" ]; then echo "mtu=$(cat /sys/class/net/$iface/mtu)"; else echo "interface=missing"; fi
  if command -v iw >/dev/null 2>&1; then
    iw dev "$iface" link 2>/dev/null | sed -n 's/^[[:space:]]*SSID: \(.*\)/ssid=\1/p; s/^[[:space:]]*tx bitrate: \(.*\)/tx_bitrate=\1/p; s/^[[:space:]]*signal: \(.*\)/signal=\1/p'
    iw dev "$iface" get power_save 2>/dev/null | sed -n 's/^Power save: *\(on\|off\).*/power_save=\1/p'
  fi
fi
lib="$root/.build/ws/devel/lib/libnetloop_ros2.so"; info="$root/.build/ws/devel/lib/netloop/netloop_ros2_info"
if [ -x "$info" ]; then
  echo "ros2=$("$info" 2>/dev/null | grep -oE 'cyclonedds|fastdds|zenoh' | sort -u | tr '\n' ' ')"
elif [ -r "$lib" ]; then
  echo "ros2=$(ros2_linked "$lib")"
else
  echo "ros2="
fi
if command -v chronyc >/dev/null 2>&1; then
  chronyc -n tracking 2>/dev/null | sed -n 's/^Reference ID *: \(.*\)/chrony_reference=\1/p; s/^System time *: \(.*\)/chrony_system_time=\1/p; s/^Leap status *: \(.*\)/chrony_leap=\1/p'
elif command -v timedatectl >/dev/null 2>&1; then
  echo "ntp_synchronized=$(timedatectl show -p NTPSynchronized --value 2>/dev/null)"
fi
""".replace("BUILT_MARK", BUILT_MARK).replace("PROCESS_LIST", _PROCESS_LIST)


def _parse_lines(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep and k != "proc":
            out[k.strip()] = v.strip()
    return out



def netloop_processes(check_output: str, run_root: str) -> list[tuple[int, str | None, str]]:
    """(pid, run, command line) of the netloop wrappers (:mod:`netloop.remote_exec`) in a
    machine's process list (its check's ``proc=`` lines) that write under ``run_root``."""
    out = []
    marker = f"--record={run_root.rstrip('/')}/"
    for line in check_output.splitlines():
        if not line.startswith("proc="):
            continue
        pid, _, args = line[5:].strip().partition(" ")
        if "remote_exec" not in args or marker not in args or not pid.isdigit():
            continue
        run = args.split("--run=", 1)[1].split(" ", 1)[0] if "--run=" in args else None
        out.append((int(pid), run, args))
    return out


def check(hosts: "RealHosts", wait_stale: float) -> None:
    """Every machine of ``hosts`` checked; RealHostsError with one line per problem."""
    problems: list[str] = []
    here = git_revision().get("commit")
    for host, machine in hosts.machines.hosts.items():
        args = [hosts.root(host), machine.run_root, machine.interface or ""]
        if machine.local:
            r = subprocess.run(["sh", "-c", _CHECK_SCRIPT, "check", *args], capture_output=True, text=True,
                               timeout=30)
        else:
            r = hosts._ssh_run(host, "sh -c " + shlex.quote(_CHECK_SCRIPT) + " check " + shlex.join(args))
            if r.returncode == SSH_LOST:
                problems.append(ssh_problem(host, machine, r.stderr))
                continue
        found = hosts.checks[host] = _parse_lines(r.stdout)
        if machine.workspace:   # a user's catkin workspace: netloop.machine_check checks it (instead of .build)
            problems += machine_check.check_workspace(hosts, host, found)
        name = f"{host} ({machine.address})"
        if found.get("root") != "ok":
            problems.append(f"{name}: no netloop checkout at {hosts.root(host)} (clone it there and run "
                            f"'make build', or set root: in the hosts file)")
            continue
        if found.get("wrapper") != "ok" or found.get("built") != "ok":
            problems.append(f"{name}: the netloop checkout at {hosts.root(host)} is not built "
                            f"(run 'make build' there)")
        if found.get("ros") != "ok":
            problems.append(f"{name}: ROS not found (no rosmaster after sourcing {hosts.root(host)}/scripts/env.sh)")
        if found.get("run_root") != "ok":
            problems.append(f"{name}: cannot write run_root {machine.run_root}")
        if found.get("interface") == "missing":
            problems.append(f"{name}: no network interface {machine.interface!r}")
        has = found.get("ros2", "").split()
        lacking = [m for m in hosts.middlewares if m not in has]
        if lacking:
            problems.append(f"{name}: its build of netloop has no {', '.join(lacking)} (libnetloop_ros2 there has: "
                            f"{', '.join(has) or 'none'}); install the libraries (scripts/setup.sh) and run "
                            f"'make build' there")
        if found.get("power_save") == "on":
            line = (f"{name}: Wi-Fi power save is on for {machine.interface}: frames wait for the radio's "
                    f"wake-ups (up to ~100 ms); switch it off there: iw dev {machine.interface} set power_save off")
            hosts.warnings.append(line)
            hosts.log(f"warning: {line}")
        stale = [] if machine.local else netloop_processes(r.stdout, hosts.run_root(host))
        stale = wait_stale_gone(hosts, host, stale, wait_stale)   # a run just stopped: they may be ending
        if stale:
            problems.append(f"{name}: {len(stale)} netloop process(es) of an earlier run still running under "
                            f"{hosts.run_root(host)} (" + "; ".join(f"pid {pid}: run {run}" for pid, run, _ in stale)
                            + "): stop them with 'netloop run --clean-stale', or kill them there")
        there = found.get("revision") or None
        if not machine.local and there != here:
            line = (f"{name}: netloop at revision {(there or 'unknown')[:12]}, this machine at "
                    f"{(here or 'unknown')[:12]}: results may not be comparable")
            if hosts.machines.revision_mismatch == "refuse":
                problems.append(line + " (revision_mismatch: refuse)")
            else:
                hosts.warnings.append(line)
                hosts.log(f"warning: {line}")
    if problems:
        raise RealHostsError(problems)


def stale_processes(hosts: "RealHosts", host: str) -> list[tuple[int, str | None, str]]:
    """(pid, run, command line) of the netloop wrappers running on ``host`` under its run_root."""
    r = hosts._ssh_run(host, _PROCESS_LIST)
    return netloop_processes(r.stdout, hosts.run_root(host))


def wait_run_ended(hosts: "RealHosts", host: str, remote_dir: str, seconds: float = STALE_WAIT_S) -> list:
    """Wait up to ``seconds`` for the netloop processes of the run whose folder on ``host`` is
    ``remote_dir`` to end (a run whose operator died: its wrappers are stopping its nodes);
    what is still running then."""
    root, label = remote_dir.rstrip("/").rsplit("/", 1)
    deadline = time.monotonic() + seconds
    while True:
        r = hosts._ssh_run(host, _PROCESS_LIST)
        running = [p for p in netloop_processes(r.stdout, root) if p[1] == label]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.5)


def wait_stale_gone(hosts: "RealHosts", host: str, stale: list, seconds: float) -> list[tuple[int, str | None, str]]:
    """``stale`` (processes of ``host`` from an earlier run) looked up again every 0.5 s until
    none is left or ``seconds`` have passed; what is still running then."""
    deadline = time.monotonic() + seconds
    while stale and time.monotonic() < deadline:
        time.sleep(0.5)
        stale = stale_processes(hosts, host)
    return stale


def clean_stale(hosts: "RealHosts") -> list[str]:
    """Stop the netloop processes of earlier runs on every remote machine (SIGTERM to their
    wrappers, which stop their nodes as on a lost heartbeat; SIGKILL to what is left after
    STALE_WAIT_S). One line per machine where something was stopped."""
    lines = []
    for host in hosts.hosts:
        if not hosts.is_remote(host):
            continue
        r = hosts._ssh_run(host, "echo home=$HOME")
        if r.returncode == SSH_LOST:
            raise RealHostsError([ssh_problem(host, hosts.machine(host), r.stderr)])
        hosts.checks.setdefault(host, {})["home"] = _parse_lines(r.stdout).get("home", "")
        stale = stale_processes(hosts, host)
        if not stale:
            continue
        first = stale
        pids = " ".join(str(pid) for pid, _, _ in stale)
        hosts._ssh_run(host, f"kill -TERM {pids} 2>/dev/null")
        stale = wait_stale_gone(hosts, host, stale, STALE_WAIT_S)
        if stale:
            hosts._ssh_run(host, "kill -KILL " + " ".join(str(pid) for pid, _, _ in stale) + " 2>/dev/null")
        runs = ", ".join(sorted({run or "?" for _, run, _ in first}))
        lines.append(f"{host} ({hosts.address(host)}): stopped {len(first)} netloop process(es) of an earlier "
                     f"run (run {runs}; pids {pids})")
    return lines
