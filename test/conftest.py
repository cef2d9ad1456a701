"""Shared fixtures: the package's ROS environment and a real roscore on a free port."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from netloop import paths, rosenv
from netloop.master import RosMaster, wait_for
from netloop.processes import ProcessGroup, _descendants


def pytest_configure(config):
    missing = [n for n in ("rlc_plant", "loop_controller", "rlc_zoh")
               if not (paths.DEVEL / "lib" / "netloop" / n).exists()]
    if missing:
        raise pytest.UsageError(f"netloop is not built (missing {', '.join(missing)}): run 'make build' first")


#: Fixtures that start ROS processes: a test using one is an integration test.
_INTEGRATION_FIXTURES = {"roscore", "nothing_left_behind"}


def pytest_collection_modifyitems(config, items):
    """Marks every test that needs root (a ``skipif`` whose reason starts "needs root") as
    ``root``, and every test using a fixture that starts ROS processes as ``integration``,
    so that ``-m "not integration and not root"`` (``make test-fast``) selects the unit tests
    without each module repeating the marks."""
    for item in items:
        if any(m.kwargs.get("reason", "").startswith("needs root") for m in item.iter_markers("skipif")):
            item.add_marker(pytest.mark.root)
        if _INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_master(request, monkeypatch):
    """A test marked neither ``integration`` nor ``root`` is a unit test (``make test-fast``):
    starting a ROS master in it fails at once, naming the mark it needs."""
    if request.node.get_closest_marker("integration") or request.node.get_closest_marker("root"):
        return

    def refuse(self, *args, **kwargs):
        pytest.fail(f"{request.node.nodeid} starts a ROS master: mark it integration "
                    f"(make test-fast runs only tests without ROS processes)")
    monkeypatch.setattr(RosMaster, "start", refuse)


@pytest.fixture(scope="session")
def ros_env():
    if shutil.which("roscore", path=rosenv.base_env()["PATH"]) is None:
        pytest.fail("roscore not found: Debian's ros-core-dev (or ROS Noetic) must be installed")
    return rosenv.base_env()


@pytest.fixture
def roscore(tmp_path, ros_env):
    """A real roscore on a free port on loopback, stopped (by PID) after the test."""
    with ProcessGroup(tmp_path / "master-logs") as group:
        master = RosMaster(group, dict(ros_env, ROS_LOG_DIR=str(tmp_path / "ros"), ROS_HOME=str(tmp_path / "ros")))
        master.start()
        master.group = group
        yield master
        # the test's own nodes first, the last started first; then rosout and the master
        # together, not one after the other (the group finds them gone)
        core = [p for p in (master.rosout, master.process) if p is not None]
        for proc in reversed(group.processes):
            if proc not in core:
                group.stop(proc)
        for proc in core:
            try:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        for proc in core:
            try:
                proc.popen.wait(timeout=3.0)
            except subprocess.TimeoutExpired:
                pass   # stop_all goes on with SIGTERM and SIGKILL


@pytest.fixture(scope="module")
def nothing_left_behind():
    """After a module's tests: no process started by them and no testbed of theirs remains."""
    yield
    assert wait_for(lambda: not _descendants(os.getpid()), 10), f"processes left: {_descendants(os.getpid())}"
    records = [json.loads(p.read_text()) for p in Path("/run/netloop").glob("*.json")] \
        if Path("/run/netloop").is_dir() else []
    assert not [r for r in records if r.get("owner_pid") == os.getpid()], "a testbed of these tests is still up"
