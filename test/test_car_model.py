"""The Sunfounder car's URDF: parses (check_urdf, sdformat), has the links, joints, sensors and
controllers it promises, sane inertias, and behaves in pybullet (rests on its wheels, drives
forward for positive wheel speed, turns left for positive steering)."""
from __future__ import annotations

import math
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))

MODEL_DIR = REPO / "models" / "sunfounder_car"
URDF = MODEL_DIR / "urdf" / "sunfounder_car.urdf"
CONTROLLERS = REPO / "controllers" / "config" / "sunfounder_car_control.yaml"

REQUIRED_LINKS = {
    "base_link", "rear_left_wheel", "rear_right_wheel", "front_left_steering_link",
    "front_right_steering_link", "front_left_wheel", "front_right_wheel", "camera_pan_link",
    "camera_tilt_link", "camera_link", "camera_optical_frame", "laser",
}
REQUIRED_JOINTS = {   # name: (type, axis)
    "rear_left_wheel_joint": ("continuous", (0, 1, 0)),
    "rear_right_wheel_joint": ("continuous", (0, 1, 0)),
    "front_left_steering_joint": ("revolute", (0, 0, 1)),
    "front_right_steering_joint": ("revolute", (0, 0, 1)),
    "front_left_wheel_joint": ("continuous", (0, 1, 0)),
    "front_right_wheel_joint": ("continuous", (0, 1, 0)),
    "camera_pan_joint": ("revolute", (0, 0, 1)),
    "camera_tilt_joint": ("revolute", (0, 1, 0)),
    "camera_optical_joint": ("fixed", None),
}


@pytest.fixture(scope="module")
def robot():
    return ET.parse(URDF).getroot()


def floats(text: str) -> list[float]:
    return [float(v) for v in text.split()]


def rpy_matrix(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def test_urdf_is_generated_from_the_script():
    out = subprocess.run([sys.executable, str(MODEL_DIR / "generate_urdf.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_check_urdf_passes():
    tool = shutil.which("check_urdf", path="/usr/bin:" + __import__("os").environ.get("PATH", ""))
    assert tool, "check_urdf not found: install Debian's liburdfdom-tools"
    out = subprocess.run([tool, str(URDF)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Successfully Parsed XML" in out.stdout
    assert "root Link: base_link" in out.stdout


def test_sdformat_accepts_the_urdf():
    """Gazebo converts a URDF with sdformat; ign sdf -k runs the same conversion."""
    ign = shutil.which("ign")
    if ign is None:
        pytest.skip("ign (Debian ignition-tools + libsdformat-dev) not installed")
    out = subprocess.run([ign, "sdf", "-k", str(URDF)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Valid" in out.stdout, out.stdout + out.stderr


def test_links_and_joints(robot):
    links = {l.get("name") for l in robot.findall("link")}
    assert REQUIRED_LINKS <= links, REQUIRED_LINKS - links
    joints = {j.get("name"): j for j in robot.findall("joint")}
    for name, (kind, axis) in REQUIRED_JOINTS.items():
        assert name in joints, name
        assert joints[name].get("type") == kind, name
        if axis:
            assert tuple(floats(joints[name].find("axis").get("xyz"))) == axis, name
    for side in ("left", "right"):
        lim = joints[f"front_{side}_steering_joint"].find("limit")
        assert float(lim.get("lower")) == pytest.approx(-0.6)
        assert float(lim.get("upper")) == pytest.approx(0.6)
    # the wheels: two rear ones on base_link, front ones on the knuckles
    assert joints["rear_left_wheel_joint"].find("parent").get("link") == "base_link"
    assert joints["front_left_wheel_joint"].find("parent").get("link") == "front_left_steering_link"
    # left is +y (REP-103)
    assert floats(joints["rear_left_wheel_joint"].find("origin").get("xyz"))[1] > 0
    assert floats(joints["rear_right_wheel_joint"].find("origin").get("xyz"))[1] < 0


def test_optical_frame_follows_rep103(robot):
    j = next(j for j in robot.findall("joint") if j.get("name") == "camera_optical_joint")
    assert j.find("parent").get("link") == "camera_link"
    rot = rpy_matrix(*floats(j.find("origin").get("rpy")))
    # columns = optical axes in camera_link: x right (-y), y down (-z), z forward (+x)
    np.testing.assert_allclose(rot[:, 0], [0, -1, 0], atol=1e-6)
    np.testing.assert_allclose(rot[:, 1], [0, 0, -1], atol=1e-6)
    np.testing.assert_allclose(rot[:, 2], [1, 0, 0], atol=1e-6)


def test_inertias_are_physical(robot):
    total = 0.0
    for link in robot.findall("link"):
        inertial = link.find("inertial")
        assert inertial is not None, f"{link.get('name')} has no inertial (pybullet would use 1 kg)"
        m = float(inertial.find("mass").get("value"))
        assert m > 0, link.get("name")
        total += m
        i = inertial.find("inertia")
        tensor = np.array([[float(i.get("ixx")), float(i.get("ixy")), float(i.get("ixz"))],
                           [float(i.get("ixy")), float(i.get("iyy")), float(i.get("iyz"))],
                           [float(i.get("ixz")), float(i.get("iyz")), float(i.get("izz"))]])
        eig = np.linalg.eigvalsh(tensor)
        assert eig.min() > 0, f"{link.get('name')}: inertia not positive definite {eig}"
        a, b, c = sorted(eig)
        assert a + b >= c * (1 - 1e-9), f"{link.get('name')}: triangle inequality fails {eig}"
    assert 0.8 < total < 1.6, f"total mass {total} kg is implausible for this car"


def test_inertias_match_the_formulas():
    import importlib.util
    spec = importlib.util.spec_from_file_location("generate_urdf", MODEL_DIR / "generate_urdf.py")
    g = importlib.util.module_from_spec(spec)
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True   # no __pycache__ in models/
    try:
        spec.loader.exec_module(g)
    finally:
        sys.dont_write_bytecode = saved
    m, r, h = g.WHEEL_MASS, g.WHEEL_RADIUS, g.WHEEL_WIDTH
    ixx, iyy, izz = g.cylinder_inertia(m, r, h, "y")
    assert iyy == pytest.approx(m * r * r / 2) and ixx == izz == pytest.approx(m * (3 * r * r + h * h) / 12)
    bx = g.box_inertia(2.0, (1.0, 2.0, 3.0))
    assert bx == pytest.approx((2 * 13 / 12, 2 * 10 / 12, 2 * 5 / 12))


def test_gazebo_sensors_and_control(robot):
    sensors = {s.get("name"): (g.get("reference"), s) for g in robot.findall("gazebo")
               for s in g.findall("sensor")}
    ref, cam = sensors["camera"]
    assert ref == "camera_link" and cam.get("type") == "camera"
    plugin = cam.find("plugin")
    assert plugin.get("filename") == "libgazebo_ros_camera.so"
    assert plugin.findtext("frameName") == "camera_optical_frame"
    ref, laser = sensors["laser"]
    assert ref == "laser" and laser.get("type") == "ray"
    assert float(laser.findtext("update_rate")) == 10
    hor = laser.find("ray/scan/horizontal")
    n = int(hor.findtext("samples"))
    assert n == 360
    lo, hi = float(hor.findtext("min_angle")), float(hor.findtext("max_angle"))
    assert (hi - lo) / (n - 1) == pytest.approx(math.radians(1), rel=1e-4)
    assert laser.find("plugin").get("filename") == "libgazebo_ros_laser.so"
    assert laser.find("plugin").findtext("frameName") == "laser"
    plugins = [p.get("filename") for g in robot.findall("gazebo") for p in g.findall("plugin")]
    assert "libgazebo_ros_control.so" in plugins


def test_transmissions_and_controllers_agree(robot):
    joints = {j.get("name") for j in robot.findall("joint")}
    interfaces = {}
    for t in robot.findall("transmission"):
        j = t.find("joint")
        assert j.get("name") in joints
        interfaces[j.get("name")] = j.findtext("hardwareInterface").split("/")[-1]
    assert interfaces["rear_left_wheel_joint"] == "VelocityJointInterface"
    assert interfaces["front_right_steering_joint"] == "PositionJointInterface"
    ns = next(g.find("plugin").findtext("robotNamespace") for g in robot.findall("gazebo")
              if g.find("plugin") is not None)
    config = yaml.safe_load(CONTROLLERS.read_text())[ns.strip("/")]
    assert config["joint_state_controller"]["type"] == "joint_state_controller/JointStateController"
    kinds = {"velocity_controllers": "VelocityJointInterface",
             "position_controllers": "PositionJointInterface",
             "effort_controllers": "EffortJointInterface"}
    used = set()
    for name, c in config.items():
        if "joint" not in c:
            continue
        assert c["joint"] in interfaces, f"{name}: joint {c['joint']} has no transmission"
        assert interfaces[c["joint"]] == kinds[c["type"].split("/")[0]], name
        used.add(c["joint"])
    assert {"rear_left_wheel_joint", "rear_right_wheel_joint", "front_left_steering_joint",
            "front_right_steering_joint"} <= used
    for joint in config["gazebo_ros_control"]["pid_gains"]:
        assert joint in joints


def test_profiles_match_the_model(robot):
    from netloop.car_driver.profiles import available_profiles, load_profile
    joints = {j.get("name"): j for j in robot.findall("joint")}
    wheelbase = floats(joints["front_left_steering_joint"].find("origin").get("xyz"))[0]
    limit = float(joints["front_left_steering_joint"].find("limit").get("upper"))
    for name in available_profiles():
        p = load_profile(name)
        assert p["kinematics"]["wheelbase"] == pytest.approx(wheelbase), name
        assert p["steering"]["max_angle"] <= limit, name


# ------------------------------------------------------------------------------------------
# pybullet (the embedded simulator's engine)
# ------------------------------------------------------------------------------------------
@pytest.fixture
def bullet():
    pb = pytest.importorskip("pybullet")
    client = pb.connect(pb.DIRECT)
    yield pb, client
    pb.disconnect(client)


def _flat_ground(pb, client):
    shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[5, 5, 0.05], physicsClientId=client)
    return pb.createMultiBody(0, shape, basePosition=[0, 0, -0.05], physicsClientId=client)


def _joint_index(pb, body, client):
    return {pb.getJointInfo(body, j, physicsClientId=client)[1].decode(): j
            for j in range(pb.getNumJoints(body, physicsClientId=client))}


def _link_frame_z(pb, body, client):
    """pybullet reports the base's inertial frame; the link frame is offset by the COM."""
    pos, orn = pb.getBasePositionAndOrientation(body, physicsClientId=client)
    com = pb.getDynamicsInfo(body, -1, physicsClientId=client)[3]
    inv_pos, inv_orn = pb.invertTransform(com, [0, 0, 0, 1])
    frame, _ = pb.multiplyTransforms(pos, orn, inv_pos, inv_orn)
    return frame


def test_pybullet_loads_the_car_and_it_rests_on_its_wheels(bullet):
    pb, c = bullet
    pb.setGravity(0, 0, -9.81, physicsClientId=c)
    pb.setTimeStep(1 / 500, physicsClientId=c)
    _flat_ground(pb, c)
    car = pb.loadURDF(str(URDF), [0, 0, 0.06], physicsClientId=c)
    names = _joint_index(pb, car, c)
    assert set(REQUIRED_JOINTS) <= set(names)
    mass = sum(pb.getDynamicsInfo(car, j, physicsClientId=c)[0] for j in range(-1, len(names)))
    assert 0.8 < mass < 1.6
    for _ in range(1000):
        pb.stepSimulation(physicsClientId=c)
    x, y, z = _link_frame_z(pb, car, c)
    assert z == pytest.approx(0.033, abs=0.004), "base_link should settle at wheel-radius height"
    _, orn = pb.getBasePositionAndOrientation(car, physicsClientId=c)
    roll, pitch, _ = pb.getEulerFromQuaternion(orn)
    assert abs(roll) < 0.02 and abs(pitch) < 0.02


def test_pybullet_drives_forward_and_turns_left(bullet):
    pb, c = bullet
    pb.setGravity(0, 0, -9.81, physicsClientId=c)
    pb.setTimeStep(1 / 500, physicsClientId=c)
    _flat_ground(pb, c)
    car = pb.loadURDF(str(URDF), [0, 0, 0.035], physicsClientId=c)
    j = _joint_index(pb, car, c)
    for name in ("front_left_wheel_joint", "front_right_wheel_joint"):
        pb.setJointMotorControl2(car, j[name], pb.VELOCITY_CONTROL, targetVelocity=0, force=0,
                                 physicsClientId=c)
    for name in ("rear_left_wheel_joint", "rear_right_wheel_joint"):
        pb.setJointMotorControl2(car, j[name], pb.VELOCITY_CONTROL, targetVelocity=10.0,
                                 force=0.1, physicsClientId=c)
    for name in ("front_left_steering_joint", "front_right_steering_joint"):
        pb.setJointMotorControl2(car, j[name], pb.POSITION_CONTROL, targetPosition=0.3,
                                 force=0.2, physicsClientId=c)
    for _ in range(500):                       # 1 s
        pb.stepSimulation(physicsClientId=c)
    x, y, _ = _link_frame_z(pb, car, c)
    _, orn = pb.getBasePositionAndOrientation(car, physicsClientId=c)
    yaw = pb.getEulerFromQuaternion(orn)[2]
    assert x > 0.1, f"positive wheel speed should drive +x, got x={x:.3f}"
    assert yaw > 0.1 and y > 0, f"positive steering should turn left, got yaw={yaw:.3f} y={y:.3f}"
