"""The command line's conventions (netloop.cli_options): one version, --transports, one name for
where results go (--out) and one for a campaign already run (--campaign), one flag for link
parameters (--link-param), the old spellings still accepted with a warning, `netloop` on the
PATH of the venv, and --help speaking of ROS 1 and ROS 2."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from netloop import __version__, cli, paths

NETLOOP = str(paths.REPO / "bin" / "netloop")


def netloop(*args, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROS_PACKAGE_PATH")}
    return subprocess.run([NETLOOP, *args], capture_output=True, text=True, timeout=60, env=env, **kw)


def test_one_version_from_package_xml():
    xml = re.search(r"<version>(.+?)</version>", (paths.REPO / "package.xml").read_text()).group(1)
    assert __version__ == xml
    res = netloop("--version")
    assert res.returncode == 0 and res.stdout == f"netloop {xml}\n", res.stderr


def test_netloop_is_on_the_path_of_the_venv(tmp_path):
    """make build links .venv/bin/netloop to bin/netloop; it runs from any folder."""
    link = paths.REPO / ".venv" / "bin" / "netloop"
    assert link.is_symlink() and link.resolve() == Path(NETLOOP).resolve()
    env = dict(os.environ, PATH=f"{link.parent}:/usr/bin:/bin")
    res = subprocess.run(["netloop", "--version"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == f"netloop {__version__}", res.stderr


def test_help_speaks_of_ros1_and_ros2():
    out = netloop("--help").stdout
    assert "ROS 1 and ROS 2" in out and "for ROS1" not in out and "--version" in out


def test_transports_runs_only_those_named():
    res = netloop("run", "--transports", "priority,tcp", "--dry-run", str(paths.EXPERIMENTS / "pound_fig21.yaml"))
    assert res.returncode == 0, res.stderr
    runs = [line.strip() for line in res.stdout.splitlines() if line.startswith("  ")]
    assert runs == ["tcp-r0", "priority-r0", "tcp-r1", "priority-r1"]       # the file's order, every repetition
    res = netloop("run", "--transports", "priority,tcpros", "--dry-run", str(paths.EXPERIMENTS / "pound_fig21.yaml"))
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("netloop: invalid configuration: --transports: tcpros: not a transport of "
                                 "pound_fig21; it has tcp, tcp_nodelay, udp,")


def test_reproduce_takes_transports_that_every_part_run_lists(capsys):
    assert cli.main(["reproduce", "pound", "--part", "tables", "--quick", "--dry-run", "--transports", "udp"]) == 0
    assert " 1 runs " in capsys.readouterr().out
    assert cli.main(["reproduce", "pound", "--quick", "--dry-run", "--transports", "udp"]) == 2
    assert "--transports: part fig1: udp: not a transport of pound_fig1-quick; it has tcp" in capsys.readouterr().err


@pytest.mark.parametrize("argv, dest, value", [
    (["run", "--results", "R", "f.yaml"], "out", Path("R")),
    (["calibrate", "wifi6", "--results", "C"], "campaign", "C"),
    (["calibrate", "wifi6", "--fig19-results", "C"], "fig19_campaign", "C"),
    (["calibrate", "wifi6", "--results-parent", "R"], "out", Path("R")),
    (["reproduce", "pound", "--results", "tables=C", "--results", "fig19=D"], "campaign", ["tables=C", "fig19=D"]),
    (["reproduce", "pound", "--results-parent", "R"], "out", Path("R")),
    (["testbed", "up", "--link", "wifi6", "--set", "distance_m=20", "--link-param", "qos=true"], "link_param",
     ["distance_m=20", "qos=true"]),
])
def test_old_spellings_still_work_with_a_warning(argv, dest, value, capsys):
    args = cli.build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    old = next(a for a in argv if a in ("--results", "--fig19-results", "--results-parent", "--set"))
    warning = capsys.readouterr().err
    assert f"netloop: warning: {old} is now --" in warning and f"the release after {__version__}" in warning


def test_an_old_spelling_runs_the_command_and_help_lists_the_renaming():
    res = netloop("testbed", "up", "--link", "loopback", "--set", "description=x")
    assert res.returncode == 0 and "needs no testbed" in res.stdout, res.stderr
    assert res.stderr.strip() == (f"netloop: warning: --set is now --link-param; the old spelling goes in the "
                                  f"release after {__version__}")
    help_text = netloop("calibrate", "--help").stdout
    assert re.search(r"--results\s+now --campaign", help_text) and re.search(r"--results-parent\s+now --out", help_text)
