"""Checking a machine that runs netloop's nodes from a user's own catkin workspace.

A hosts file's machine may name a catkin workspace (``workspace: /home/pi/catkin_ws``) instead
of relying on a netloop checkout built by ``make build`` / ``make robot``: netloop's sources
sit in its ``src/`` (``root`` defaults to ``<workspace>/src/netloop``) and the user built it
with ``catkin_make`` (devel space) or ``catkin_make install`` / ``catkin build`` (install
space). :func:`check_workspace` is what :meth:`netloop.machines.RealHosts.check` adds for such
a machine to its usual check (run_root, interface, Wi-Fi power save, stale processes): one
more script over SSH (or here, for the local machine) and one line per problem:

* the workspace there, built (``devel/setup.sh`` or ``install/setup.sh``), with netloop's
  nodes in that space (``lib/netloop/<node>``);
* netloop's sources at ``root``, with the remote wrapper ``bin/netloop-remote-exec``;
* ROS found (``rosmaster``) after sourcing the workspace;
* the build's netloop revision, read from ``share/netloop/build_info.txt`` (written by every
  build, see CMakeLists.txt: a workspace may be a copy without ``.git``), which the usual check
  compares with this checkout's (a warning, or a problem with ``revision_mismatch: refuse``).

The other hooks make the rest of a run use the workspace: :func:`default_root`,
:func:`wrapper` (the node wrapper runs with ``NETLOOP_WORKSPACE`` set, so that
``scripts/env.sh`` sources the workspace), :func:`translate` (this checkout's compiled nodes ->
the workspace's).
"""
from __future__ import annotations

import shlex
import subprocess
from typing import Any

from . import paths
from .hosts_file import Machine
from .ssh import SSH_LOST, ssh_problem

#: the compiled nodes a workspace's build must have (the loop, the flows, the relays)
NODES = ("rlc_plant", "loop_controller", "flow_source", "flow_sink", "nimbro_udp_sender", "nimbro_tcp_sender",
         "nimbro_udp_receiver", "nimbro_tcp_receiver", "priority_relay")
BUILD_INFO = "share/netloop/build_info.txt"

# Run on the machine: key=value lines, every key prefixed with ws_ (they join the lines of the
# machine's usual check, netloop.machine_readiness._CHECK_SCRIPT, which checks run_root, the interface,
# Wi-Fi power save and stale processes as for any machine).
#: a shell function for the scripts run on a machine: the ROS 2 middlewares a built
#: libnetloop_ros2.so links (``ros2_linked LIB`` prints e.g. " cyclonedds fastdds")
ROS2_LINKED_SH = r"""
ros2_linked() {
  m=""
  readelf -d "$1" 2>/dev/null | grep -q 'libddsc\.so' && m="$m cyclonedds"
  readelf -d "$1" 2>/dev/null | grep -q 'libfastrtps\.so' && m="$m fastdds"
  nm -D --defined-only "$1" 2>/dev/null | grep -qE ' (z_|nlz_)|zenoh_shim|ZenohParticipant' && m="$m zenoh"
  echo "$m"
}
"""

_SCRIPT = ROS2_LINKED_SH + r"""
ws=$1; root=$2; nodes=$3; run_root=$4
case $run_root in "~") run_root=$HOME;; "~/"*) run_root="$HOME/${run_root#??}";; esac
mkdir -p "$run_root" 2>/dev/null && [ -w "$run_root" ] && echo "ws_run_root=ok"
if [ -d "$ws" ]; then echo "ws_workspace=ok"; else echo "ws_workspace=missing"; fi
[ -d "$ws/src" ] && echo "ws_src=ok"
for space in devel install; do
  [ -f "$ws/$space/setup.sh" ] || continue
  echo "ws_space_$space=ok"
  lacking=""
  for n in $nodes; do [ -x "$ws/$space/lib/netloop/$n" ] || lacking="$lacking $n"; done
  echo "ws_lacking_$space=$lacking"
  if [ -r "$ws/$space/BUILD_INFO" ]; then sed -n "s/^\([a-z_]*\)=\(.*\)/ws_info_${space}_\1=\2/p" "$ws/$space/BUILD_INFO"; fi
  [ -r "$ws/$space/lib/libnetloop_ros2.so" ] && echo "ws_ros2_$space=$(ros2_linked "$ws/$space/lib/libnetloop_ros2.so")"
done
[ -d "$root" ] && echo "ws_root=ok"
[ -x "$root/bin/netloop-remote-exec" ] && [ -r "$root/scripts/env.sh" ] && echo "ws_wrapper=ok"
echo "ws_source_revision=$(git -C "$root" rev-parse HEAD 2>/dev/null)"
( NETLOOP_ROOT=$root; NETLOOP_WORKSPACE=$ws; export NETLOOP_WORKSPACE
  . "$root/scripts/env.sh" >/dev/null 2>&1; command -v rosmaster >/dev/null 2>&1 && echo "ws_ros=ok" )
""".replace("BUILD_INFO", BUILD_INFO)


def default_root(machine: Machine) -> str | None:
    """The netloop sources of a workspace machine without ``root``: ``<workspace>/src/netloop``."""
    if machine.workspace:
        return f"{machine.workspace.rstrip('/')}/src/netloop"
    return None


def wrapper(machine: Machine, root: str) -> list[str]:
    """The first words of a node's command on ``machine``: the remote wrapper, told the
    workspace to source when the machine has one."""
    words = [f"{root}/bin/netloop-remote-exec"]
    if machine.workspace:
        words = ["env", f"NETLOOP_WORKSPACE={machine.workspace}"] + words
    return words


def space(found: dict[str, str]) -> str:
    """The space of a checked workspace the nodes run from: devel when it has netloop's nodes,
    else install when that has them, else whichever exists."""
    for name in ("devel", "install"):
        if found.get(f"ws_space_{name}") == "ok" and not found.get(f"ws_lacking_{name}", "").split():
            return name
    return "install" if found.get("ws_space_install") == "ok" and found.get("ws_space_devel") != "ok" else "devel"


def translate(machine: Machine, value: str, found: dict[str, str]) -> str:
    """``value`` with this checkout's catkin spaces replaced by the machine's workspace space
    (the compiled nodes: ``.build/ws/devel/lib/netloop/...`` -> ``<workspace>/devel/lib/netloop/...``)."""
    if not machine.workspace:
        return value
    target = f"{machine.workspace.rstrip('/')}/{space(found)}"
    for mine in (str(paths.DEVEL), str(paths.REPO / ".build" / "ws" / "devel")):
        value = value.replace(mine, target)
    return value


def problems_of(name: str, machine: Any, root: str, found: dict[str, str]) -> tuple[list[str], list[str]]:
    """(problems, warnings) of a workspace machine from what the script found: one line each,
    saying what is missing and what to do."""
    ws = machine.workspace
    problems: list[str] = []
    warnings: list[str] = []
    if found.get("ws_workspace") != "ok":
        return [f"{name}: no catkin workspace at {ws} (hosts file: workspace); create it there with netloop in "
                f"its src/ and build it (catkin_make)"], []
    spaces = [s for s in ("devel", "install") if found.get(f"ws_space_{s}") == "ok"]
    chosen = space(found)
    lacking = found.get(f"ws_lacking_{chosen}", "").split()
    if not spaces:
        problems.append(f"{name}: the workspace {ws} is not built (no devel/setup.sh or install/setup.sh): run "
                        f"catkin_make there" + ("" if found.get("ws_src") == "ok" else
                                                 f" (it has no src/ folder: is {ws} a catkin workspace?)"))
    elif lacking:
        problems.append(f"{name}: the workspace's {chosen} space ({ws}/{chosen}) has no netloop nodes "
                        f"{', '.join(lacking)} (lib/netloop/): is netloop in {ws}/src, and built with catkin_make?")
    if found.get("ws_root") != "ok":
        problems.append(f"{name}: no netloop sources at {root} (its bin/netloop-remote-exec starts the nodes): "
                        f"put netloop in {ws}/src/netloop or set root: to where it is")
    elif found.get("ws_wrapper") != "ok":
        problems.append(f"{name}: {root} has no executable bin/netloop-remote-exec and scripts/env.sh: is it "
                        f"netloop's source folder?")
    elif spaces and found.get("ws_ros") != "ok":
        problems.append(f"{name}: ROS not found (no rosmaster after sourcing {ws}/{chosen}/setup.sh through "
                        f"{root}/scripts/env.sh)")
    if spaces and not lacking:
        built = found.get(f"ws_info_{chosen}_revision")
        if built is None:
            warnings.append(f"{name}: the workspace's build has no {BUILD_INFO}, so its netloop revision is not "
                            f"known (built from an older netloop): rebuild it with catkin_make")
        elif built == "unknown":
            warnings.append(f"{name}: the workspace's netloop was built from sources without .git: to record its "
                            f"revision, rebuild with catkin_make -DNETLOOP_REVISION=<the commit, git rev-parse HEAD>")
        source = found.get("ws_source_revision")
        if source and built not in (None, "unknown", source):
            warnings.append(f"{name}: the sources at {root} are at revision {source[:12]} but the workspace was "
                            f"built at {built[:12]}: rebuild it (catkin_make)")
    return problems, warnings


def check_workspace(hosts: Any, host: str, found: dict[str, str]) -> list[str]:
    """Checks ``host`` of ``hosts`` (a :class:`netloop.machines.RealHosts`) whose machine names a
    workspace, after its usual check found ``found`` (that dict is updated: the workspace's
    lines join it, and the keys the usual check judges — root, wrapper, built, ros, ros2,
    revision — are set from the workspace, so that it does not judge the missing .build
    again); warnings go to ``hosts.warnings`` (and are logged). Returns the problems, one line each."""
    machine = hosts.machine(host)
    root = hosts.root(host)
    args = [machine.workspace, root, " ".join(NODES), machine.run_root]
    if machine.local:
        r = subprocess.run(["sh", "-c", _SCRIPT, "check", *args], capture_output=True, text=True, timeout=30)
    else:
        r = hosts._ssh_run(host, "sh -c " + shlex.quote(_SCRIPT) + " check " + shlex.join(args))
        if r.returncode == SSH_LOST:
            return [ssh_problem(host, machine, r.stderr)]
    for line in r.stdout.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            found[k.strip()] = v.strip()
    chosen = space(found)
    problems, warnings = problems_of(f"{host} ({machine.address})", machine, root, found)
    built = found.get(f"ws_info_{chosen}_revision")
    if found.get("root") == "missing":   # the usual check stopped early (no <workspace>/src/netloop)
        found["run_root"] = found.get("ws_run_root", "")
    found.update(root="ok", wrapper="ok", built="ok", ros="ok", workspace_space=chosen,
                 ros2=found.get(f"ws_ros2_{chosen}", ""),
                 revision=built if built not in (None, "unknown") else "",
                 dirty="1" if found.get(f"ws_info_{chosen}_dirty") == "1" else "0")
    for line in warnings:
        hosts.warnings.append(line)
        hosts.log(f"warning: {line}")
    return problems
