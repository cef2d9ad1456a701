"""The ``roscore`` fixture (test/conftest.py) hands every test a clean master although one
master serves a whole module: what a test leaves on it (a parameter, a node still running, a
node killed before it could unregister) is gone for the next test. The two tests run in this
order (pytest keeps a module's order); the second alone passes too. The third asks for
``nothing_left_behind`` after the master is up: that fixture then ends before the master's,
and still finds nothing of these tests left but the master that is stopped after it."""
from __future__ import annotations

import os
import signal


from netloop import rosenv
from netloop.master import wait_for

#: what the first test leaves behind, and the master it used
_LEFT: dict = {}


def _nodes(master) -> set[str]:
    """Every node the master has registered (publisher, subscriber or service)."""
    code, msg, state = master.rpc(master.uri, "getSystemState")
    assert code == 1, msg
    return {node for kind in state for _, nodes in kind for node in nodes}


def test_a_test_leaves_a_parameter_a_running_node_and_a_killed_one(roscore, tmp_path):
    roscore.set_params({"left": {"behind": 1}}, "/")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    pub = ["rostopic", "pub", "-r", "10"]
    roscore.group.start("running", pub + ["/left_running", "std_msgs/Empty", "__name:=running"], env=env)
    killed = roscore.group.start("killed", pub + ["/left_killed", "std_msgs/Empty", "__name:=killed"], env=env)
    assert wait_for(lambda: {"/running", "/killed"} <= _nodes(roscore), 20), _nodes(roscore)
    os.killpg(killed.pid, signal.SIGKILL)          # it cannot unregister: the master keeps it
    killed.popen.wait(timeout=5)
    _LEFT.update(uri=roscore.uri, log_dir=roscore.group.log_dir)


def test_the_next_test_finds_the_master_clean(roscore):
    _, _, names = roscore.rpc(roscore.uri, "getParamNames")
    assert "/left/behind" not in names, names
    assert _nodes(roscore) <= {"/rosout"}, _nodes(roscore)   # rosout registers once it is up
    assert [p.name for p in roscore.group.processes] == ["master", "master-rosout"]
    assert all(p.poll() is None for p in roscore.group.processes)
    if _LEFT:   # after the first test: its processes logged to its own folder, not this test's
        assert roscore.group.log_dir != _LEFT["log_dir"]


def test_nothing_left_behind_asked_for_later_leaves_the_shared_master_to_its_fixture(nothing_left_behind):
    pass   # the check is nothing_left_behind's, after this module's last test
