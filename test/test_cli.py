"""The `bin/netloop` command as a user types it."""
from __future__ import annotations

import os
import subprocess

import rosbag

from netloop import paths

NETLOOP = str(paths.REPO / "bin" / "netloop")


def cli(*args, timeout=60):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROS_PACKAGE_PATH")}
    return subprocess.run([NETLOOP, *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_help_lists_every_command():
    res = cli("--help")
    assert res.returncode == 0, res.stderr
    for cmd in ("run", "report", "validate", "bench", "testbed", "bag"):
        assert cmd in res.stdout
    assert res.stderr == ""  # nothing from the environment setup leaks out


def test_validate_shipped_experiments():
    res = cli("validate", *sorted(str(p) for p in paths.EXPERIMENTS.glob("*.yaml")))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count(": ok (") == len(list(paths.EXPERIMENTS.glob("*.yaml")))


def test_experiments_readme_lists_every_shipped_file():
    listing = (paths.EXPERIMENTS / "README.md").read_text()
    shipped = sorted(p.relative_to(paths.EXPERIMENTS).as_posix() for p in paths.EXPERIMENTS.rglob("*.yaml"))
    assert shipped and [name for name in shipped if f"`{name}`" not in listing] == []


def test_bag_synthetic_writes_a_real_bag(tmp_path):
    res = cli("bag", "synthetic", "--out", str(tmp_path / "s.bag"), "--messages", "10")
    assert res.returncode == 0, res.stderr
    with rosbag.Bag(str(tmp_path / "s.bag")) as bag:
        assert bag.get_message_count("/scan") == 10


def test_report_on_a_missing_directory_is_a_clear_error(tmp_path):
    res = cli("report", str(tmp_path / "nothing"))
    assert res.returncode == 2 and "no such directory" in res.stderr


def test_non_root_user_is_told_in_one_line_and_nothing_starts(tmp_path):
    """As an unprivileged user, a namespace link is refused up front with the way out."""
    env = dict(os.environ, HOME=str(tmp_path))
    results = tmp_path / "results"
    res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          str(paths.REPO / ".venv/bin/python"), "-m", "netloop", "run",
                          str(paths.EXPERIMENTS / "pound_fig21.yaml"), "--out", str(results)],
                         capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs root" in lines[0] and "link: loopback" in lines[0]
    assert not results.exists()
