"""The SDF worlds: generated, valid SDF 1.6, pybullet-friendly (static 1, no model://), and
pybullet's ray casts agree with the documented geometry to well within 2 cm."""
from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORLDS = REPO / "worlds"
DOC = REPO / "docs" / "simulation.md"   # the worlds' tables and geometry, documented
URDF = REPO / "models" / "sunfounder_car" / "urdf" / "sunfounder_car.urdf"
NAMES = ("arena", "tunnel")
SCAN_Z = 0.195          # the car's LIDAR plane above the ground (URDF: 0.033 + 0.162)
MAX_RANGE = 12.0
PROBES = {              # (x, y) points in free space
    "arena": [(0.0, 0.0), (2.0, -3.0), (-4.0, 4.5), (4.8, 0.1)],
    "tunnel": [(0.0, 0.0), (3.5, 0.0), (5.5, -0.3), (7.5, -0.3), (9.5, 0.3), (12.5, -0.4)],
}


def models(name: str) -> list[dict]:
    """Each model's pose (x, y, z, yaw) and geometry, read from the .world file."""
    root = ET.parse(WORLDS / f"{name}.world").getroot()
    out = []
    for m in root.find("world").findall("model"):
        x, y, z, roll, pitch, yaw = (float(v) for v in m.findtext("pose").split())
        assert roll == 0 and pitch == 0
        geom = m.find("link/collision/geometry")
        if geom.find("box") is not None:
            sx, sy, sz = (float(v) for v in geom.findtext("box/size").split())
            out.append(dict(name=m.get("name"), kind="box", x=x, y=y, yaw=yaw, hx=sx / 2,
                            hy=sy / 2, z0=z - sz / 2, z1=z + sz / 2))
        else:
            r, h = float(geom.findtext("cylinder/radius")), float(geom.findtext("cylinder/length"))
            out.append(dict(name=m.get("name"), kind="cylinder", x=x, y=y, r=r, z0=z - h / 2,
                            z1=z + h / 2))
    return out


def ray_distance(obj: dict, ox: float, oy: float, angle: float) -> float:
    """Distance along a horizontal ray to a box (any yaw) or an upright cylinder; inf if none."""
    dx, dy = math.cos(angle), math.sin(angle)
    if obj["kind"] == "cylinder":
        px, py = ox - obj["x"], oy - obj["y"]
        b = px * dx + py * dy
        c = px * px + py * py - obj["r"] ** 2
        disc = b * b - c
        if disc < 0:
            return math.inf
        t = -b - math.sqrt(disc)
        return t if t >= 0 else math.inf
    cy, sy = math.cos(-obj["yaw"]), math.sin(-obj["yaw"])
    px, py = ox - obj["x"], oy - obj["y"]
    px, py = cy * px - sy * py, sy * px + cy * py
    dx, dy = cy * dx - sy * dy, sy * dx + cy * dy
    t0, t1 = -math.inf, math.inf
    for p, d, h in ((px, dx, obj["hx"]), (py, dy, obj["hy"])):
        if abs(d) < 1e-12:
            if abs(p) > h:
                return math.inf
            continue
        a, b = (-h - p) / d, (h - p) / d
        t0, t1 = max(t0, min(a, b)), min(t1, max(a, b))
    if t0 > t1 or t1 < 0:
        return math.inf
    return t0 if t0 >= 0 else math.inf


def expected_scan(name: str, ox: float, oy: float, n: int = 360) -> list[float]:
    cut = [o for o in models(name) if o["z0"] < SCAN_Z < o["z1"]]
    return [min((ray_distance(o, ox, oy, 2 * math.pi * k / n) for o in cut), default=math.inf)
            for k in range(n)]


@pytest.mark.parametrize("name", NAMES)
def test_world_is_generated_from_the_script(name):
    out = subprocess.run([sys.executable, str(WORLDS / "generate_worlds.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("name", NAMES)
def test_world_is_simple_static_sdf(name):
    text = (WORLDS / f"{name}.world").read_text()
    assert "model://" not in text and "<include" not in text
    root = ET.fromstring(text)
    assert root.tag == "sdf" and root.get("version") == "1.6"
    world = root.find("world")
    assert world.get("name") == name
    ms = world.findall("model")
    assert len(ms) >= 5
    for m in ms:
        assert m.findtext("static") == "1", f"{m.get('name')}: <static> must be 1 (pybullet)"
        for g in m.iter("geometry"):
            kinds = {child.tag for child in g}
            assert kinds <= {"box", "cylinder", "plane"}, kinds


@pytest.mark.parametrize("name", NAMES)
def test_world_is_valid_sdformat(name):
    ign = shutil.which("ign")
    if ign is None:
        pytest.skip("ign (Debian ignition-tools + libsdformat-dev) not installed")
    out = subprocess.run([ign, "sdf", "-k", str(WORLDS / f"{name}.world")], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "Valid" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("name", NAMES)
def test_documented_tables_match_the_worlds(name):
    table = subprocess.run([sys.executable, str(WORLDS / "generate_worlds.py"), "--table", name],
                           capture_output=True, text=True, check=True).stdout.strip()
    doc = DOC.read_text()
    assert table in doc, f"docs/simulation.md lacks the current table of {name}; " \
                         f"run 'worlds/generate_worlds.py --table {name}'"


def test_documented_arena_geometry():
    """The numbers docs/simulation.md states in prose (inner faces at +-5 m, +-0.6 m)."""
    assert expected_scan("arena", 0, 0, 4) == pytest.approx([5.0, 5.0, 5.0, 5.0])
    doc = DOC.read_text()
    assert re.search(r"x\s*=\s*±5", doc) and re.search(r"y\s*=\s*±0\.6", doc)


@pytest.fixture
def bullet():
    pb = pytest.importorskip("pybullet")
    client = pb.connect(pb.DIRECT)
    yield pb, client
    pb.disconnect(client)


@pytest.mark.parametrize("name", NAMES)
def test_pybullet_rays_match_geometry(bullet, name):
    pb, c = bullet
    ids = pb.loadSDF(str(WORLDS / f"{name}.world"), physicsClientId=c)
    assert len(ids) == len(models(name))
    for body in ids:
        assert pb.getDynamicsInfo(body, -1, physicsClientId=c)[0] == 0, "static models must be fixed"
    pb.performCollisionDetection(physicsClientId=c)   # needed before ray tests after loadSDF
    worst = 0.0
    for ox, oy in PROBES[name]:
        n = 360
        starts = [[ox, oy, SCAN_Z]] * n
        ends = [[ox + MAX_RANGE * math.cos(2 * math.pi * k / n),
                 oy + MAX_RANGE * math.sin(2 * math.pi * k / n), SCAN_Z] for k in range(n)]
        hits = pb.rayTestBatch(starts, ends, physicsClientId=c)
        for k, (hit, want) in enumerate(zip(hits, expected_scan(name, ox, oy, n))):
            got = hit[2] * MAX_RANGE if hit[0] >= 0 else math.inf
            if want > MAX_RANGE:
                assert got == math.inf, (ox, oy, k, got)
                continue
            worst = max(worst, abs(got - want))
            assert got == pytest.approx(want, abs=0.02), (name, ox, oy, k)
    assert worst < 0.01, f"worst ray error {worst:.4f} m"


@pytest.mark.parametrize("name", NAMES)
def test_car_stands_in_world(bullet, name):
    pb, c = bullet
    pb.setGravity(0, 0, -9.81, physicsClientId=c)
    pb.setTimeStep(1 / 500, physicsClientId=c)
    pb.loadSDF(str(WORLDS / f"{name}.world"), physicsClientId=c)
    car = pb.loadURDF(str(URDF), [0, 0, 0.04], physicsClientId=c)
    for _ in range(500):
        pb.stepSimulation(physicsClientId=c)
    pos, orn = pb.getBasePositionAndOrientation(car, physicsClientId=c)
    roll, pitch, _ = pb.getEulerFromQuaternion(orn)
    assert abs(roll) < 0.02 and abs(pitch) < 0.02
    assert abs(pos[0] - 0.07) < 0.01 and 0.03 < pos[2] < 0.06   # COM of a resting car
