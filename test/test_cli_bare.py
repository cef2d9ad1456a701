"""`bin/netloop` on a fresh clone: no .venv, no .build, no ROS, only Python 3 and PyYAML.

The checkout is copied (the files git would commit) into a temporary directory without
.venv and .build, and bin/netloop runs there with a Python whose only package is PyYAML (a
venv without system site-packages, Debian's yaml package linked in through a .pth file; no
network needed). --help of every command, `validate` and `run --dry-run` must work; every
other command must say in one line what is missing.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netloop import paths
from netloop.cli import build_parser

SYSTEM_PYTHON = Path("/usr/bin/python3")
#: Modules building the parser must not import (numpy, scipy, control, matplotlib, ROS, the simulator).
HEAVY = {"numpy", "scipy", "control", "matplotlib", "rospy", "rosbag", "roslib", "genpy", "pybullet", "jinja2"}


def command_paths(parser=None, path=()) -> list[tuple[str, ...]]:
    """Every sub-command, nested ones included: ("run",), ("testbed", "up"), ..."""
    parser = parser or build_parser()
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((*path, name))
                found += command_paths(sub, (*path, name))
    return found


def _system_yaml_dir() -> Path | None:
    if not SYSTEM_PYTHON.exists():
        return None
    res = subprocess.run([str(SYSTEM_PYTHON), "-c", "import os, yaml; print(os.path.dirname(yaml.__file__))"],
                         capture_output=True, text=True)
    return Path(res.stdout.strip()) if res.returncode == 0 else None


def _bare_venv(where: Path, packages: Path | None) -> Path:
    """A venv of the system's Python without its site-packages; ``packages`` on its path if given."""
    res = subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(where)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot create a venv with {SYSTEM_PYTHON}: {res.stderr.strip()}")
    python = where / "bin" / "python"
    if packages is not None:
        site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        (Path(site) / "only_yaml.pth").write_text(f"{packages}\n")
    return python


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """(checkout copy without .venv/.build, a Python with PyYAML only, one without PyYAML)."""
    yaml_dir = _system_yaml_dir()
    if yaml_dir is None:
        pytest.skip(f"{SYSTEM_PYTHON} with PyYAML (python3-yaml) is needed to make the bare Python")
    base = tmp_path_factory.mktemp("bare")
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=paths.REPO, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout: cannot tell which files a fresh clone has")
    checkout = base / "netloop"
    for name in filter(None, files.stdout.split("\0")):
        src = paths.REPO / name
        if src.is_file():   # a tracked file being deleted by someone is simply absent
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, checkout / name)
    assert not (checkout / ".venv").exists() and not (checkout / ".build").exists()
    only = base / "only_yaml"
    only.mkdir()
    (only / "yaml").symlink_to(yaml_dir)
    python = _bare_venv(base / "venv", only)
    no_yaml = _bare_venv(base / "venv_no_yaml", None)
    for module in sorted(HEAVY):   # the Python really is bare
        assert subprocess.run([str(python), "-c", f"import {module}"], capture_output=True).returncode != 0, module
    return checkout, python, no_yaml


def netloop(bare, *args, python=None, cwd=None):
    checkout, bare_python, _ = bare
    env = {"PATH": "/usr/bin:/bin", "HOME": str(checkout.parent), "LANG": "C.UTF-8"}
    if python != "default":
        env["NETLOOP_PYTHON"] = str(python or bare_python)
    return subprocess.run([str(checkout / "bin" / "netloop"), *args], capture_output=True, text=True,
                          timeout=60, env=env, cwd=cwd or checkout)


def test_building_the_parser_imports_nothing_heavy():
    res = subprocess.run([sys.executable, "-c", "import sys; from netloop.cli import build_parser; build_parser(); "
                          "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert HEAVY.isdisjoint(res.stdout.split()), HEAVY & set(res.stdout.split())


def test_every_command_and_flag_has_a_help_string():
    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {choice.dest: choice.help for choice in action._choices_actions}
                for name, sub in action.choices.items():
                    yield (*path, name), None, helps.get(name)
                    yield from walk(sub, (*path, name))
            elif not isinstance(action, argparse._HelpAction):
                yield path, action.option_strings or action.dest, action.help
    missing = [(path, flag) for path, flag, text in walk(build_parser(), ()) if not text]
    assert missing == []


def test_help_names_every_command_and_the_reference(bare):
    res = netloop(bare, "--help")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    for (name,) in (p for p in command_paths() if len(p) == 1):
        assert f"\n    {name} " in res.stdout, name
    assert {"compare", "plot", "testbed", "bag", "calibrate"} <= {p[0] for p in command_paths()}
    assert "docs/cli.md" in res.stdout and "make build" in res.stdout


def test_help_of_every_command_works_bare(bare):
    for path in command_paths():
        res = netloop(bare, *path, "--help")
        assert res.returncode == 0 and res.stderr == "", (path, res.stderr)
        assert res.stdout.startswith(f"usage: netloop {' '.join(path)}"), (path, res.stdout[:200])


def test_validate_every_shipped_experiment_bare(bare):
    checkout = bare[0]
    files = sorted(str(p.relative_to(checkout)) for p in (checkout / "experiments").rglob("*.yaml"))
    assert len(files) > 10
    res = netloop(bare, "validate", *files)
    assert res.returncode == 0, res.stderr
    for name in files:
        assert f"{name}: ok (" in res.stdout, name
    assert "Traceback" not in res.stderr


def test_validate_keys_bare(bare):
    res = netloop(bare, "validate", "--keys")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("| key | allowed | default | meaning |") and "| `transport` |" in res.stdout


def test_validate_names_the_bad_key_bare(bare, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nlink: loopback\ntransport: [tcp]\nrepetitons: 2\n")
    res = netloop(bare, "validate", str(bad))
    assert res.returncode == 2 and res.stdout == ""
    assert "repetitons: unknown key (did you mean 'repetitions'?)" in res.stderr
    assert "Traceback" not in res.stderr


def test_run_dry_run_bare(bare):
    res = netloop(bare, "run", "--dry-run", "experiments/rlc_loopback.yaml")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("rlc_loopback: ") and "on link 'loopback'" in res.stdout
    assert "  tcp-r0" in res.stdout.splitlines()


@pytest.mark.parametrize("args, name", [
    ("run experiments/rlc_loopback.yaml", "run"), ("report results", "report"), ("bench", "bench"),
    ("compare a b", "compare"), ("plot somewhere", "plot"), ("bag synthetic --out x.bag", "bag synthetic"),
    ("testbed status", "testbed status"), ("calibrate wifi6", "calibrate"),
])
def test_commands_that_need_the_build_say_what_is_missing(bare, args, name):
    res = netloop(bare, *args.split())
    assert res.returncode == 2 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"netloop: '{name}' needs the built package: run 'make build' first "
                               "(missing: .venv, .build)"), lines[0]
    assert not (bare[0] / "x.bag").exists()


def test_no_pyyaml_is_said_in_one_line(bare):
    res = netloop(bare, "validate", "experiments/rlc_loopback.yaml", python=bare[2])
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        "netloop: needs PyYAML (missing: yaml); install it (Debian: apt-get install python3-yaml) "
        "or run 'make build'"]


def test_the_system_python_is_the_default(bare):
    """Without NETLOOP_PYTHON, bin/netloop uses /usr/bin/python3 (which has PyYAML here)."""
    res = netloop(bare, "validate", "experiments/rlc_loopback.yaml", python="default")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("experiments/rlc_loopback.yaml: ok (")


def test_a_missing_dependency_is_named_when_the_command_runs(tmp_path):
    """compare and plot are always registered; without matplotlib they say so, in one line."""
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from netloop.cli import main\n"
            f"sys.exit(main(['compare', '{tmp_path}/a', '{tmp_path}/b', '--out', '{tmp_path}']))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == ["netloop: 'compare' needs the Python module 'matplotlib', which is not "
                                       "installed (missing: matplotlib); 'make build' installs it"]
