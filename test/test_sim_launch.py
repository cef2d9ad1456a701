"""sim.launch and teleop.launch parse with roslaunch's own XML loader, for every simulator and
mode, pass their arguments through, and name only files that exist. Gazebo (gazebo_ros,
controller_manager) cannot be installed here, so a stub gazebo_ros package stands in for its
empty_world.launch; it records the world it was given."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from netloop import paths, rosenv

roslaunch_config = pytest.importorskip("roslaunch.config")

REPO = Path(__file__).resolve().parents[1]
SIM = REPO / "launch" / "sim.launch"
TELEOP = REPO / "launch" / "teleop.launch"
URDF = REPO / "models" / "sunfounder_car" / "urdf" / "sunfounder_car.urdf"


@pytest.fixture
def launch_env(tmp_path, monkeypatch):
    stub = tmp_path / "stub" / "gazebo_ros"
    (stub / "launch").mkdir(parents=True)
    (stub / "package.xml").write_text(
        '<?xml version="1.0"?><package format="2"><name>gazebo_ros</name><version>0.0.0</version>'
        '<description>stub</description><maintainer email="x@example.org">x</maintainer>'
        '<license>BSD</license></package>')
    (stub / "launch" / "empty_world.launch").write_text(
        '<launch><arg name="world_name" default=""/><arg name="use_sim_time" default="true"/>'
        '<arg name="gui" default="true"/><arg name="headless" default="false"/><arg name="paused" default="false"/>'
        '<param name="stub_world_name" value="$(arg world_name)"/>'
        '<param name="stub_headless" value="$(arg headless)"/></launch>')
    env = rosenv.base_env()
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path / 'stub'}:{env.get('ROS_PACKAGE_PATH', '')}")
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros"))
    return tmp_path


def load(launch: Path, *args: str):
    return roslaunch_config.load_config_default([(str(launch), list(args))], None, verbose=False)


def params(cfg) -> dict:
    return {k: p.value for k, p in cfg.params.items()}


def nodes(cfg) -> dict:
    return {(n.namespace.rstrip("/") + "/" + n.name): n for n in cfg.nodes}


def package_files(launch: Path) -> list[Path]:
    """Every $(find netloop)/... path named in a launch file."""
    return [REPO / rel for rel in re.findall(r"\$\(find netloop\)/([^\"'\s)]+)", launch.read_text())]


def test_launch_files_name_only_existing_files():
    for launch in (SIM, TELEOP):
        files = package_files(launch)
        assert files, launch
        for f in files:
            assert f.exists(), f"{launch.name} names {f}, which does not exist"
    for node in ("sim_node.py", "gazebo_bridge.py", "keyboard_teleop.py", "teleop_trial"):
        assert paths.node_binary(node).exists()


def test_sim_launch_embedded(launch_env):
    cfg = load(SIM)
    ns = nodes(cfg)
    assert set(ns) == {"/sim"}
    assert (ns["/sim"].package, ns["/sim"].type) == ("netloop", "sim_node.py")
    p = params(cfg)
    assert Path(p["/sim/world"]).resolve() == (REPO / "worlds" / "arena.world").resolve()
    assert Path(p["/sim/urdf"]).resolve() == URDF.resolve()
    assert (p["/sim/camera_rate"], p["/sim/width"], p["/sim/height"], p["/use_sim_time"]) == (15, 320, 240, False)
    cfg = load(SIM, "world:=tunnel", "camera_rate:=10", "width:=640", "height:=480", "use_sim_time:=true")
    p = params(cfg)
    assert Path(p["/sim/world"]).resolve() == (REPO / "worlds" / "tunnel.world").resolve()
    assert (p["/sim/camera_rate"], p["/sim/width"], p["/sim/height"], p["/use_sim_time"]) == (10, 640, 480, True)
    own = launch_env / "my.world"
    own.write_text((REPO / "worlds" / "arena.world").read_text())
    assert params(load(SIM, f"world:={own}"))["/sim/world"] == str(own)
    for f in (p["/sim/world"], p["/sim/urdf"]):
        assert Path(f).is_file()


def test_sim_launch_gazebo(launch_env):
    cfg = load(SIM, "simulator:=gazebo", "world:=tunnel", "use_sim_time:=true")
    p, ns = params(cfg), nodes(cfg)
    assert Path(p["stub_world_name"] if "stub_world_name" in p else p["/stub_world_name"]).resolve() == \
        (REPO / "worlds" / "tunnel.world").resolve()
    assert p["/stub_headless"] is True and p["/use_sim_time"] is True
    assert p["/robot_description"] == URDF.read_text()
    assert "/sim" not in ns
    spawn = ns["/spawn_sunfounder_car"]
    assert (spawn.package, spawn.type) == ("gazebo_ros", "spawn_model")
    assert "-urdf -param robot_description -model sunfounder_car" in spawn.args
    spawner = ns["/sunfounder_car/controller_spawner"]
    assert (spawner.package, spawner.type) == ("controller_manager", "spawner")
    control = yaml.safe_load((REPO / "controllers/config/sunfounder_car_control.yaml").read_text())["sunfounder_car"]
    wanted = spawner.args.split()
    assert "joint_state_controller" in wanted and set(wanted) <= set(control)
    for name in wanted:    # the controller config was loaded into the parameter server
        assert p[f"/sunfounder_car/{name}/type"] == control[name]["type"]
    bridge = ns["/gazebo_bridge"]
    assert (bridge.package, bridge.type) == ("netloop", "gazebo_bridge.py")
    assert Path(p["/gazebo_bridge/urdf"]).resolve() == URDF.resolve()


def test_sim_launch_parses_from_the_command_line(launch_env):
    """The same with `roslaunch --nodes` (what a user would try first)."""
    import os
    import subprocess
    env = dict(rosenv.base_env(), ROS_PACKAGE_PATH=os.environ["ROS_PACKAGE_PATH"], ROS_HOME=str(launch_env))
    for args, want in ((["simulator:=embedded"], {"/sim"}),
                       (["simulator:=gazebo"], {"/spawn_sunfounder_car", "/sunfounder_car/controller_spawner",
                                                "/gazebo_bridge"})):
        out = subprocess.run(["roslaunch", "--nodes", str(SIM), *args], env=env, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        assert set(out.stdout.split()) == want


def test_teleop_launch(launch_env):
    cfg = load(TELEOP)
    ns = nodes(cfg)
    assert set(ns) == {"/keyboard_teleop"} and ns["/keyboard_teleop"].type == "keyboard_teleop.py"
    cfg = load(TELEOP, "trial:=true", "transport:=udp", "odom:=odom_net", "record_dir:=/tmp/rec", "duration:=7")
    ns, p = nodes(cfg), params(cfg)
    trial = ns["/teleop_trial"]
    assert (trial.package, trial.type) == ("netloop", "teleop_trial")
    assert ["odom", "odom_net"] in [list(r) for r in trial.remap_args]
    assert p["/teleop_trial/transport"] == "udp" and p["/teleop_trial/record_path"] == "/tmp/rec/teleop_trial.csv"
    assert p["/teleop_trial/duration"] == 7 and p["/teleop_trial/rate"] == 20.0
    trial_yaml = yaml.safe_load((REPO / "controllers/config/teleop_trial.yaml").read_text())
    assert {f"/teleop_trial/{k}" for k in trial_yaml} <= set(p)
