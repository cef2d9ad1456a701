"""A machine that runs netloop from a user's catkin workspace (hosts file ``workspace:``,
netloop.machine_check): what the check finds in workspaces of every state, one line per problem,
and how the run's commands point into the workspace. The workspaces here are on this machine
(the local machine's check runs the same script as over SSH); test_robot_install.py checks a
real one, built with catkin_make in a clean Debian root, over SSH."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from netloop import machine_check, paths
from netloop.machines import RealHosts, RealHostsError, load_machines
from netloop.schema import ConfigError


def _workspace(tmp: Path, nodes=machine_check.NODES, space: str = "devel", revision: str | None = "abc123",
               sources: bool = True) -> Path:
    """A catkin workspace as a user's catkin_make leaves it (compiled nodes are stand-ins):
    netloop's sources in src/netloop (this checkout), setup.sh and the nodes in ``space``."""
    ws = tmp / "catkin_ws"
    (ws / "src").mkdir(parents=True)
    if sources:
        (ws / "src" / "netloop").symlink_to(paths.REPO)
    if space:
        (ws / space / "lib" / "netloop").mkdir(parents=True)
        (ws / space / "setup.sh").write_text("# catkin's setup.sh\n")
        for n in nodes:
            exe = ws / space / "lib" / "netloop" / n
            exe.write_text("#!/bin/sh\n")
            exe.chmod(0o755)
        if revision is not None:
            (ws / space / "share" / "netloop").mkdir(parents=True)
            (ws / space / machine_check.BUILD_INFO).write_text(f"revision={revision}\ndirty=0\nrobot_only=1\n")
    return ws


def _hosts(tmp: Path, ws: Path | str, **robot) -> RealHosts:
    doc = {"hosts": {"operator": {"address": "127.0.0.1", "local": True, "workspace": str(ws),
                                  "run_root": str(tmp / "runs"), **robot}}}
    path = tmp / "hosts.yaml"
    path.write_text(yaml.safe_dump(doc))
    logged: list[str] = []
    hosts = RealHosts(load_machines(str(path)), tmp / "c" / "runs" / "r0", log=logged.append)
    hosts.logged = logged
    return hosts


def _problems(hosts: RealHosts) -> list[str]:
    try:
        hosts.check()
    except RealHostsError as err:
        return err.problems
    return []


def test_a_built_workspace_passes_and_its_nodes_run_from_it(tmp_path):
    ws = _workspace(tmp_path)
    hosts = _hosts(tmp_path, ws)
    assert _problems(hosts) == []
    found = hosts.checks["operator"]
    assert found["workspace_space"] == "devel" and found["revision"] == "abc123"
    assert hosts.root("operator") == f"{ws}/src/netloop"
    flow_sink = str(paths.DEVEL / "lib" / "netloop" / "flow_sink")
    assert machine_check.translate(hosts.machine("operator"), flow_sink, found) == f"{ws}/devel/lib/netloop/flow_sink"
    assert machine_check.wrapper(hosts.machine("operator"), "/r") == ["env", f"NETLOOP_WORKSPACE={ws}",
                                                                      "/r/bin/netloop-remote-exec"]


def test_an_install_space_is_used_when_it_alone_has_the_nodes(tmp_path):
    ws = _workspace(tmp_path, space="install")
    hosts = _hosts(tmp_path, ws)
    assert _problems(hosts) == []
    assert hosts.checks["operator"]["workspace_space"] == "install"


@pytest.mark.parametrize("state, words", [
    ("missing", "no catkin workspace at"),
    ("unbuilt", "is not built (no devel/setup.sh or install/setup.sh): run catkin_make there"),
    ("no_nodes", "has no netloop nodes flow_sink, priority_relay (lib/netloop/)"),
    ("no_sources", "no netloop sources at"),
])
def test_what_a_workspace_lacks_is_said_in_one_line(tmp_path, state, words):
    if state == "missing":
        ws = tmp_path / "nowhere"
    elif state == "unbuilt":
        ws = _workspace(tmp_path, space="")
    elif state == "no_nodes":
        ws = _workspace(tmp_path, nodes=[n for n in machine_check.NODES if n not in ("flow_sink", "priority_relay")])
    else:
        ws = _workspace(tmp_path, sources=False)
    (problem,) = _problems(_hosts(tmp_path, ws))
    assert problem.startswith("operator (127.0.0.1): ") and words in problem, problem


def test_a_workspace_built_without_git_or_before_build_info_is_warned_about(tmp_path):
    hosts = _hosts(tmp_path, _workspace(tmp_path, revision="unknown"))
    assert _problems(hosts) == []
    assert any("-DNETLOOP_REVISION=" in w for w in hosts.warnings), hosts.warnings
    assert any("-DNETLOOP_REVISION=" in line for line in hosts.logged)
    other = tmp_path / "other"
    other.mkdir()
    hosts = _hosts(other, _workspace(other, revision=None))
    assert _problems(hosts) == [] and any("build_info.txt" in w for w in hosts.warnings), hosts.warnings


def test_without_ros_the_workspace_is_refused(tmp_path):
    ws = _workspace(tmp_path)
    # a setup.sh that hides ROS (PATH without rosmaster, as on a machine where ROS is not installed)
    (ws / "devel" / "setup.sh").write_text("PATH=/nonexistent\n")
    env_sh = (paths.REPO / "scripts" / "env.sh").read_text()
    if "NETLOOP_WORKSPACE" not in env_sh:
        pytest.fail("scripts/env.sh does not source NETLOOP_WORKSPACE")
    # env.sh puts /usr/bin first again: only a machine without rosmaster in /usr/bin fails here
    if os.path.exists("/usr/bin/rosmaster"):
        found: dict[str, str] = {"ws_workspace": "ok", "ws_space_devel": "ok", "ws_lacking_devel": "",
                                 "ws_root": "ok", "ws_wrapper": "ok"}
        machine = _hosts(tmp_path, ws).machine("operator")
        problems, _ = machine_check.problems_of("robot (x)", machine, "/r", found)
        assert problems == ["robot (x): ROS not found (no rosmaster after sourcing "
                            f"{ws}/devel/setup.sh through /r/scripts/env.sh)"]


def test_env_sh_sources_the_workspace(tmp_path):
    ws = _workspace(tmp_path)
    (ws / "devel" / "setup.sh").write_text("export NETLOOP_TEST_SOURCED=devel\n")
    out = subprocess.run(["sh", "-c", f". {paths.REPO}/scripts/env.sh; echo $NETLOOP_TEST_SOURCED"],
                         env=dict(os.environ, NETLOOP_WORKSPACE=str(ws)), capture_output=True, text=True).stdout
    assert out.strip() == "devel"


def test_the_workspace_key_is_validated(tmp_path):
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump({"hosts": {"operator": {"address": "a", "local": True, "workspace": ""}}}))
    with pytest.raises(ConfigError) as err:
        load_machines(str(path))
    assert err.value.key == "hosts.operator.workspace"
