"""The install space: ``scripts/build.sh --install`` (``catkin_make install``) into a temporary
prefix, then the package used with only that prefix's ``setup.sh`` sourced, nothing of the
repository on any path: the Python package imports from the prefix and an installed node runs
against a real ROS master.

The build is a fresh workspace in a temporary folder of ``.build/``, made once for the module
and deleted afterwards; ccache gives it the objects of ``make build`` (compiled afresh, the C++
nodes take ~2.5 min on 2 cores).
"""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from netloop import paths
from netloop.master import RosMaster, wait_for
from netloop.processes import ProcessGroup, log_tail

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200), pytest.mark.usefixtures("nothing_left_behind")]

REPO = paths.REPO
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
#: Where setup.py takes each part of the package from: source folder -> package folder.
PACKAGE_SOURCES = {REPO / "src" / "netloop": Path("netloop"),
                   REPO / "analysis": Path("netloop/analysis"),
                   REPO / "car_driver": Path("netloop/car_driver")}
#: Every Python node the package has (all must be installed by catkin_install_python).
PYTHON_NODES = sorted(REPO.glob("nodes/*.py")) + [REPO / "car_driver" / "car_node.py"]
#: An environment with nothing of this repository or of the calling shell's ROS setup in it.
CLEAN_ENV = {"HOME": "/root", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


class InstallSpace:
    """A prefix made by ``catkin_make install`` and the environment its setup.sh gives."""

    def __init__(self, prefix: Path):
        self.prefix = prefix
        self.python_dir = prefix / "lib" / "python3" / "dist-packages"
        self.env = sourced_env(prefix / "setup.sh")

    def python(self, interpreter: str, code: str, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run([interpreter, "-c", code], env=self.env, cwd=cwd, capture_output=True,
                              text=True, timeout=120)


def sourced_env(setup_script: Path) -> dict[str, str]:
    """CLEAN_ENV plus what sourcing ``setup_script`` adds."""
    out = subprocess.run(["/bin/sh", "-c", f". '{setup_script}' && env -0"], env=CLEAN_ENV,
                         capture_output=True, check=True).stdout
    return dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)


@pytest.fixture(scope="module")
def install_space():
    # the workspace in .build/, as deep as the checkout's own (.build/ws), so that ccache's objects
    # of that build serve this one (scripts/build.sh: the compiler's paths are relative to its
    # folder; one level deeper and every object is compiled again, ~2.5 min on 2 cores)
    (REPO / ".build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="netloop-install-") as tmp, \
            tempfile.TemporaryDirectory(prefix="install-test-ws-", dir=REPO / ".build") as ws:
        tmp = Path(tmp)
        build = subprocess.run([str(REPO / "scripts" / "build.sh"), "--install", str(tmp / "install"),
                                "--workspace", ws, "--log", str(tmp / "build.log")],
                               env=CLEAN_ENV, capture_output=True, text=True, timeout=1100)
        assert build.returncode == 0, build.stdout + build.stderr
        yield InstallSpace(tmp / "install")


def test_setup_sh_of_the_install_space_names_nothing_of_the_repository(install_space):
    for var in ("PYTHONPATH", "ROS_PACKAGE_PATH", "CMAKE_PREFIX_PATH", "LD_LIBRARY_PATH", "PATH"):
        assert str(REPO) not in install_space.env.get(var, ""), (var, install_space.env.get(var))
    assert str(install_space.python_dir) in install_space.env["PYTHONPATH"].split(":")


def test_every_python_source_file_is_installed(install_space):
    for source, package in PACKAGE_SOURCES.items():
        modules = [p.relative_to(source) for p in source.rglob("*.py") if "__pycache__" not in p.parts]
        assert modules, source
        missing = [str(m) for m in modules if not (install_space.python_dir / package / m).is_file()]
        assert not missing, f"not installed from {source}: {missing}"


@pytest.mark.parametrize("interpreter, modules", [
    # the installed nodes' interpreter (`env python3` with the install space's PATH): the
    # subpackages and the modules that need only Debian's Python packages
    ("python3", "netloop.analysis netloop.car_driver netloop.transports netloop.sim netloop.testbed "
                "netloop.loops netloop.msg netloop.car_driver.controller netloop.car_driver.profiles"),
    # the package's virtual environment (PyPI-only dependencies such as python-control)
    (str(VENV_PYTHON), "netloop.analysis.report netloop.cli netloop.car_driver.car_node"),
])
def test_package_imports_from_the_install_prefix(install_space, tmp_path, interpreter, modules):
    code = (f"import importlib, json; names = {modules.split()!r}; "
            "print(json.dumps({n: importlib.import_module(n).__file__ for n in names}))")
    out = install_space.python(interpreter, code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    files = json.loads(out.stdout)
    outside = {name: f for name, f in files.items()
               if not Path(f).resolve().is_relative_to(install_space.python_dir / "netloop")}
    assert not outside, f"imported from outside {install_space.python_dir}: {outside}"


@pytest.mark.parametrize("space", ["devel", "checkout"])
def test_package_imports_from_the_source_tree(space, tmp_path):
    """The devel space of ``make build`` (its setup.sh alone) and the checkout (PYTHONPATH=src, no
    ROS setup): ``netloop.analysis`` and ``netloop.car_driver`` are the top-level folders."""
    if space == "devel":
        env = sourced_env(paths.DEVEL / "setup.sh")
        assert str(REPO / "src") not in env.get("PYTHONPATH", "")
    else:
        env = dict(CLEAN_ENV, PYTHONPATH=str(REPO / "src"))
    names = ["netloop.analysis.report", "netloop.car_driver.controller", "netloop.sim", "netloop.transports"]
    code = (f"import importlib, json; names = {names!r}; "
            "print(json.dumps({n: importlib.import_module(n).__file__ for n in names}))")
    out = subprocess.run([str(VENV_PYTHON), "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    files = {name: Path(f).resolve() for name, f in json.loads(out.stdout).items()}
    assert files["netloop.analysis.report"] == REPO / "analysis" / "report.py"
    assert files["netloop.car_driver.controller"] == REPO / "car_driver" / "controller.py"
    assert files["netloop.sim"] == REPO / "src" / "netloop" / "sim" / "__init__.py"


def test_every_python_node_is_installed_executable(install_space):
    for node in PYTHON_NODES:
        installed = install_space.prefix / "lib" / "netloop" / node.name
        assert installed.is_file(), f"{node.relative_to(REPO)} is not installed (catkin_install_python)"
        assert installed.stat().st_mode & 0o111, installed
        assert installed.read_text().startswith("#!/usr/bin/env python3"), installed


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


@pytest.fixture
def installed_ros(install_space, tmp_path):
    """A real ROS master (rosmaster and rosout, as roscore starts them) on a free port, run in the
    install space's environment; yields its process group, the master and the nodes' environment."""
    with ProcessGroup(tmp_path / "logs") as group:
        env = dict(install_space.env, ROS_HOME=str(tmp_path / "ros"), ROS_LOG_DIR=str(tmp_path / "ros"))
        master = RosMaster(group, env).start()
        env.update(ROS_MASTER_URI=master.uri, ROS_IP="127.0.0.1")
        yield group, master, env


def start_installed_car_node(group: ProcessGroup, env: dict[str, str], state_file: Path, *params: str):
    """``rosrun netloop car_node.py`` on its register-level fake hardware."""
    return group.start("car_node", ["rosrun", "netloop", "car_node.py", "__name:=car_driver", "_hardware:=fake",
                                    f"_fake_state_file:={state_file}", "_camera_rate:=10", *params], env=env)


def test_installed_car_node_runs_with_a_real_master(install_space, installed_ros, tmp_path):
    profile = install_space.prefix / "share" / "netloop" / "config" / "cars" / "smart_video_car.yaml"
    state_file = tmp_path / "car_state.json"
    group, master, env = installed_ros
    node = start_installed_car_node(group, env, state_file, f"_profile_file:={profile}")
    started = wait_for(lambda: (read_json(state_file) or {}).get("pca9685", {}).get("prescale") == 101, 30)
    assert started, log_tail(node.log_path, 30)
    argv = Path(f"/proc/{node.pid}/cmdline").read_bytes().split(b"\0")
    assert str(install_space.prefix / "lib" / "netloop" / "car_node.py").encode() in argv, argv

    def registered():
        _, _, (publishers, subscribers, _) = master.rpc(master.uri, "getSystemState")
        return ("/car_driver" in dict(publishers).get("/camera/image/compressed", [])
                and "/car_driver" in dict(subscribers).get("/cmd_vel", []))
    assert wait_for(registered, 20), master.rpc(master.uri, "getSystemState")

    group.start("cmd_vel", ["rostopic", "pub", "-r", "20", "/cmd_vel", "geometry_msgs/Twist",
                            "{linear: {x: 0.3}}"], env=env)
    running = wait_for(lambda: (read_json(state_file) or {}).get("controller", {}).get("running"), 20)
    assert running, log_tail(node.log_path, 30)
    echo = subprocess.run(["rostopic", "echo", "-n", "1", "/camera/image/compressed/format"], env=env,
                          capture_output=True, text=True, timeout=30)
    assert "jpeg" in echo.stdout, echo.stdout + echo.stderr

    assert group.stop(node) == 0, log_tail(node.log_path, 30)
    assert read_json(state_file)["controller"]["shut_down"]


def test_installed_car_node_finds_its_default_profile(installed_ros, tmp_path):
    state_file = tmp_path / "car_state.json"
    group, _, env = installed_ros
    node = start_installed_car_node(group, env, state_file, "_camera:=false")
    wait_for(lambda: state_file.exists() or node.poll() is not None, 30)
    assert state_file.exists(), log_tail(node.log_path, 30)
