"""A command whose dependency is missing here is still listed, and run it says in one line
which dependency is missing and how to install it (nothing hidden, no traceback).

The missing module is simulated, not uninstalled: ``sys.modules[name] = None`` makes its import
fail as an absent package's does. Each case runs in its own Python process, so the modules
imported there never mix with this one's."""
from __future__ import annotations

import subprocess
import sys

import pytest

from netloop import cli

#: what each optional command imports when it runs and this test takes away
OPTIONAL = {"compare": "matplotlib", "plot": "matplotlib"}


def netloop_without(missing: tuple[str, ...], argv: list[str]) -> subprocess.CompletedProcess:
    """``netloop ARGV`` (cli.main) in a fresh process in which ``missing`` cannot be imported."""
    code = ("import sys\n"
            f"for m in {list(missing)!r}: sys.modules[m] = None\n"
            "from netloop.cli import main\n"
            f"sys.exit(main({argv!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def one_line(res: subprocess.CompletedProcess) -> str:
    """The single line a refused command writes (exit status 2, nothing on stdout)."""
    assert res.returncode == 2 and res.stdout == "", (res.returncode, res.stdout, res.stderr[-2000:])
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


def test_optional_commands_are_listed_without_their_dependencies():
    res = netloop_without(("matplotlib", "numpy", "scipy", "rospy", "rosgraph", "netloop.msg"), ["--help"])
    assert res.returncode == 0, res.stderr
    for command in OPTIONAL:
        assert f"\n    {command} " in res.stdout, res.stdout


@pytest.mark.parametrize("command", sorted(OPTIONAL))
def test_a_missing_dependency_is_named_with_how_to_install_it(command, tmp_path):
    argv = {"compare": ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path)],
            "plot": ["plot", str(tmp_path / "run"), "--save", str(tmp_path / "run.png")]}[command]
    module = OPTIONAL[command]
    assert one_line(netloop_without((module,), argv)) == (
        f"netloop: '{command}' needs the Python module '{module}', which is not installed "
        f"(missing: {module}); 'make build' installs it")
    assert list(tmp_path.iterdir()) == []


def test_plot_live_without_ros_python_names_it(tmp_path, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)   # off-screen: --seconds and --save
    argv = ["plot", "--live", "--seconds", "1", "--save", str(tmp_path / "live.png")]
    assert one_line(netloop_without(("rosgraph", "rospy"), argv)) == (
        "netloop: 'plot' needs the Python module 'rosgraph', which is not installed "
        "(missing: rosgraph); 'make build' installs it")
    assert one_line(netloop_without(("netloop.msg",), argv)) == (
        "netloop: 'plot' needs netloop's ROS message classes, which the build generates "
        "(missing: netloop.msg); 'make build' builds them")
    assert not (tmp_path / "live.png").exists()


def test_a_missing_module_of_netloop_itself_is_a_bug_not_a_dependency(tmp_path):
    """Only a dependency is reported as missing: a netloop module that cannot be imported
    shows its traceback."""
    res = netloop_without(("netloop.analysis.compare",), ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert res.returncode == 1 and "Traceback" in res.stderr and "netloop.analysis.compare" in res.stderr
    assert cli.missing_dependency("report", "netloop.analysis.report") is None
    assert cli.missing_dependency("bench", "numpy.linalg") == (
        "'bench' needs the Python module 'numpy', which is not installed (missing: numpy); "
        "'make build' installs it")
