"""Shared fixtures: the package's ROS environment and a real roscore on a free port."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import xmlrpc.client
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
    without each module repeating the marks; skips every test marked ``studies`` unless
    NETLOOP_TEST_STUDIES=1 (``make test-studies`` runs ``-m studies``)."""
    studies = os.environ.get("NETLOOP_TEST_STUDIES") == "1"
    for item in items:
        if item.get_closest_marker("studies") and not studies:
            item.add_marker(pytest.mark.skip(reason="a whole campaign or a long end-to-end run: in 'make test-studies' "
                                                    "(NETLOOP_TEST_STUDIES=1)"))
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


@pytest.fixture(scope="module")
def _module_master(tmp_path_factory, ros_env):
    """One real roscore on a free port on loopback for a module's tests (starting one takes
    ~1 s, stopping ~0.5 s: a second or more per test); :func:`roscore` hands it to each test
    clean. Stopped (by PID) after the module's last test."""
    base = tmp_path_factory.mktemp("roscore")
    with ProcessGroup(base / "master-logs") as group:
        master = _start_master(group, ros_env, base)
        yield master
        _stop_master(master)


@pytest.fixture
def roscore(_module_master, tmp_path):
    """A real roscore on loopback, as a fresh one: the test's processes log to its own
    ``tmp_path/master-logs``, and after the test they are stopped (by PID, the last started
    first) and the parameters they set are deleted. A master that a test left with a node
    still registered (one killed before it could unregister) or that no longer answers is
    replaced by a new one, so no test sees another's nodes, topics or parameters."""
    master = _module_master
    if not _is_clean(master):
        _restart(master)
    master.group.log_dir = tmp_path / "master-logs"
    master.group.log_dir.mkdir(parents=True, exist_ok=True)
    yield master
    core = _core(master)
    for proc in reversed(master.group.processes):
        if proc not in core:
            master.group.stop(proc)
    master.group.processes[:] = core
    _delete_params_but(master, _MASTER_PARAMS)
    if not _is_clean(master):
        _restart(master)


#: The parameters a new master has (rosmaster's own, and run_id that RosMaster.start sets).
_MASTER_PARAMS = {"/run_id", "/rosdistro", "/rosversion"}
#: The registrations of rosout, the only node of a clean master.
_ROSOUT = "/rosout"


def _start_master(group: ProcessGroup, ros_env: dict, base: Path) -> RosMaster:
    master = RosMaster(group, dict(ros_env, ROS_LOG_DIR=str(base / "ros"), ROS_HOME=str(base / "ros")))
    master.start()
    master.group = group
    _SHARED_MASTER_PIDS.update(p.pid for p in _core(master))
    return master


#: PIDs of the live module masters' rosmaster and rosout (nothing_left_behind leaves them to
#: _module_master, which stops them).
_SHARED_MASTER_PIDS: set[int] = set()


def _core(master: RosMaster) -> list:
    return [p for p in (master.rosout, master.process) if p is not None]


def _stop_master(master: RosMaster) -> None:
    """rosout and the master together, not one after the other (the group finds them gone)."""
    core = _core(master)
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
            master.group.stop(proc)   # SIGTERM, then SIGKILL
    master.group.processes[:] = [p for p in master.group.processes if p not in core]
    _SHARED_MASTER_PIDS.difference_update(p.pid for p in core)


def _restart(master: RosMaster) -> None:
    """Replace the module's master by a new one on a new port (same object: tests hold it)."""
    _stop_master(master)
    base = master.group.log_dir.parent
    fresh = _start_master(master.group, master.env, base)
    master.__dict__.update(fresh.__dict__)


def _is_clean(master: RosMaster) -> bool:
    """The master answers, only rosout's processes run, and only rosout is registered."""
    if any(p.poll() is not None for p in _core(master)) or not master.ready():
        return False
    try:
        code, _, state = master.rpc(master.uri, "getSystemState")
        _, _, names = master.rpc(master.uri, "getParamNames")
    except (OSError, xmlrpc.client.Error):
        return False
    nodes = {node for kind in state for _, registered in kind for node in registered}
    return code == 1 and nodes <= {_ROSOUT} and set(names) <= _MASTER_PARAMS


def _delete_params_but(master: RosMaster, keep: set[str]) -> None:
    try:
        _, _, names = master.rpc(master.uri, "getParamNames")
        for name in sorted(set(names) - keep):
            master.rpc(master.uri, "deleteParam", name)
    except (OSError, xmlrpc.client.Error):
        pass   # _is_clean finds it so and the master is replaced


@pytest.fixture(scope="module")
def nothing_left_behind():
    """After a module's tests: no process started by them and no testbed of theirs remains
    (but the module's shared master, which its own fixture stops after this one when a test
    asked for this fixture after the first roscore test)."""
    yield

    def left():
        return [(pid, start) for pid, start in _descendants(os.getpid()) if pid not in _SHARED_MASTER_PIDS]
    assert wait_for(lambda: not left(), 10), f"processes left: {left()}"
    records = [json.loads(p.read_text()) for p in Path("/run/netloop").glob("*.json")] \
        if Path("/run/netloop").is_dir() else []
    assert not [r for r in records if r.get("owner_pid") == os.getpid()], "a testbed of these tests is still up"
