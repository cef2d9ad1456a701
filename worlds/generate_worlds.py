#!/usr/bin/env python3
"""Write ``arena.world`` and ``tunnel.world`` (SDF 1.6) from the geometry listed below.

The worlds are deliberately simple so that Gazebo, pybullet and a hand calculation agree:
one static model per object, one link, one box or cylinder collision with the same visual,
the pose on the model only, yaw only, ``<static>1</static>`` (pybullet reads ``true`` as 0),
no ``model://`` includes. The geometry tables in ``README.md`` are printed by ``--table``.

Run ``python worlds/generate_worlds.py`` after editing; ``test/test_car_worlds.py`` fails
when a .world file on disk differs from what this script writes.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Obj:
    """A static box (size = x, y, z) or cylinder (size = radius, length) standing on z=0
    unless ``z`` (the centre height) is given; ``yaw`` turns it about z."""
    name: str
    kind: str                  # "box" | "cylinder"
    x: float
    y: float
    size: tuple
    yaw: float = 0.0
    z: float | None = None
    color: str = "0.6 0.6 0.6 1"

    @property
    def height(self) -> float:
        return self.size[2] if self.kind == "box" else self.size[1]

    @property
    def zc(self) -> float:
        return self.height / 2 if self.z is None else self.z


WALL = "0.75 0.72 0.65 1"
ROCK = "0.45 0.38 0.32 1"
GROUND = "0.5 0.5 0.5 1"
T = 0.10                       # wall thickness

# ---- arena: 10 x 10 m inside, walls 0.5 m high ------------------------------------------
ARENA_HALF = 5.0
ARENA_WALL_H = 0.5
ARENA = [
    Obj("ground", "box", 0.0, 0.0, (12.0, 12.0, 0.1), z=-0.05, color=GROUND),
    Obj("wall_north", "box", 0.0, ARENA_HALF + T / 2, (2 * ARENA_HALF + 2 * T, T, ARENA_WALL_H), color=WALL),
    Obj("wall_south", "box", 0.0, -ARENA_HALF - T / 2, (2 * ARENA_HALF + 2 * T, T, ARENA_WALL_H), color=WALL),
    Obj("wall_east", "box", ARENA_HALF + T / 2, 0.0, (T, 2 * ARENA_HALF, ARENA_WALL_H), color=WALL),
    Obj("wall_west", "box", -ARENA_HALF - T / 2, 0.0, (T, 2 * ARENA_HALF, ARENA_WALL_H), color=WALL),
]

# ---- tunnel: 14 m long, 1.2 m wide, 0.6 m high, along +x ----------------------------------
TUN_X0, TUN_X1 = -1.0, 13.0    # inner faces of the closing walls
TUN_HALF_W = 0.6               # inner faces of the side walls at y = +-0.6
TUN_H = 0.6
TUNNEL = [
    Obj("ground", "box", 6.0, 0.0, (16.0, 6.0, 0.1), z=-0.05, color=GROUND),
    Obj("wall_left", "box", (TUN_X0 + TUN_X1) / 2, TUN_HALF_W + T / 2,
        (TUN_X1 - TUN_X0, T, TUN_H), color=WALL),
    Obj("wall_right", "box", (TUN_X0 + TUN_X1) / 2, -TUN_HALF_W - T / 2,
        (TUN_X1 - TUN_X0, T, TUN_H), color=WALL),
    Obj("wall_start", "box", TUN_X0 - T / 2, 0.0, (T, 2 * TUN_HALF_W + 2 * T, TUN_H), color=WALL),
    Obj("wall_end", "box", TUN_X1 + T / 2, 0.0, (T, 2 * TUN_HALF_W + 2 * T, TUN_H), color=WALL),
    # roofed stretch (the walls carry it); above the LIDAR plane and the car
    Obj("roof", "box", 6.0, 0.0, (4.0, 2 * TUN_HALF_W + 2 * T, 0.05), z=TUN_H + 0.025, color=WALL),
    # debris, all 0.4 m high so the LIDAR plane (0.195 m) cuts every one
    Obj("debris_box_1", "box", 2.5, 0.40, (0.30, 0.40, 0.40), color=ROCK),
    Obj("debris_cyl_1", "cylinder", 4.5, -0.35, (0.15, 0.40), color=ROCK),
    Obj("fallen_beam", "box", 6.5, 0.25, (0.60, 0.10, 0.40), yaw=0.5, color=ROCK),
    Obj("debris_box_2", "box", 8.5, -0.35, (0.40, 0.50, 0.40), color=ROCK),
    Obj("debris_cyl_2", "cylinder", 10.5, 0.0, (0.10, 0.40), color=ROCK),
]

WORLDS = {"arena": ARENA, "tunnel": TUNNEL}


def n(v: float) -> str:
    v = round(v, 6)
    return ("%.6f" % v).rstrip("0").rstrip(".") if v != int(v) else str(int(v))


def geometry(o: Obj) -> str:
    if o.kind == "box":
        return f"<box><size>{' '.join(n(s) for s in o.size)}</size></box>"
    return f"<cylinder><radius>{n(o.size[0])}</radius><length>{n(o.size[1])}</length></cylinder>"


DENSITY = 500.0                # kg/m^3, nominal (static models never move; the inertial
                               # block only keeps pybullet from warning about missing data)


def inertial(o: Obj) -> str:
    if o.kind == "box":
        x, y, z = o.size
        m = DENSITY * x * y * z
        i = (m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12)
    else:
        r, h = o.size
        m = DENSITY * math.pi * r * r * h
        i = (m * (3 * r * r + h * h) / 12, m * (3 * r * r + h * h) / 12, m * r * r / 2)
    return (f"<inertial><mass>{m:.6g}</mass><inertia><ixx>{i[0]:.6g}</ixx><ixy>0</ixy><ixz>0</ixz>"
            f"<iyy>{i[1]:.6g}</iyy><iyz>0</iyz><izz>{i[2]:.6g}</izz></inertia></inertial>")


def model(o: Obj) -> str:
    g = geometry(o)
    return f"""    <model name="{o.name}">
      <static>1</static>
      <pose>{n(o.x)} {n(o.y)} {n(o.zc)} 0 0 {n(o.yaw)}</pose>
      <link name="link">
        {inertial(o)}
        <collision name="collision">
          <geometry>{g}</geometry>
          <surface><friction><ode><mu>1.0</mu><mu2>1.0</mu2></ode></friction></surface>
        </collision>
        <visual name="visual">
          <geometry>{g}</geometry>
          <material><ambient>{o.color}</ambient><diffuse>{o.color}</diffuse></material>
        </visual>
      </link>
    </model>
"""


def world(name: str, objs: list[Obj], comment: str) -> str:
    models = "".join(model(o) for o in objs)
    return f"""<?xml version="1.0"?>
<!-- GENERATED by worlds/generate_worlds.py: edit that script, not this file.
     {comment}
     Geometry table: worlds/README.md. Static models are marked <static>1</static> because
     pybullet reads "true" as 0; only boxes and cylinders, no included models. -->
<sdf version="1.6">
  <world name="{name}">
    <gravity>0 0 -9.81</gravity>
    <physics name="default_physics" default="1" type="ode">
      <max_step_size>0.001</max_step_size>
      <real_time_factor>1</real_time_factor>
      <real_time_update_rate>1000</real_time_update_rate>
    </physics>
    <scene>
      <ambient>0.5 0.5 0.5 1</ambient>
      <background>0.7 0.75 0.8 1</background>
      <shadows>0</shadows>
    </scene>
    <light type="directional" name="sun">
      <cast_shadows>0</cast_shadows>
      <pose>0 0 10 0 0 0</pose>
      <diffuse>0.8 0.8 0.8 1</diffuse>
      <specular>0.2 0.2 0.2 1</specular>
      <direction>-0.4 0.2 -0.9</direction>
    </light>
{models}  </world>
</sdf>
"""


COMMENTS = {
    "arena": "Empty arena: 10 x 10 m floor enclosed by four 0.5 m walls (inner faces at x, y = +-5 m).",
    "tunnel": "Search-and-rescue tunnel: 14 m x 1.2 m corridor along +x with debris (inner faces y = +-0.6 m).",
}


def table(name: str) -> str:
    rows = ["| model | shape | centre x, y, z (m) | yaw (rad) | size (m) | x range | y range |",
            "|---|---|---|---|---|---|---|"]
    for o in WORLDS[name]:
        if o.kind == "box":
            size = f"{n(o.size[0])} x {n(o.size[1])} x {n(o.size[2])}"
            c, s = abs(math.cos(o.yaw)), abs(math.sin(o.yaw))
            hx = c * o.size[0] / 2 + s * o.size[1] / 2
            hy = s * o.size[0] / 2 + c * o.size[1] / 2
        else:
            size = f"r {n(o.size[0])}, h {n(o.size[1])}"
            hx = hy = o.size[0]
        rows.append(f"| {o.name} | {o.kind} | {n(o.x)}, {n(o.y)}, {n(o.zc)} | {n(o.yaw)} | {size} | "
                    f"{n(o.x - hx)} .. {n(o.x + hx)} | {n(o.y - hy)} .. {n(o.y + hy)} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a .world file is out of date")
    parser.add_argument("--table", choices=sorted(WORLDS), help="print the README table of a world")
    args = parser.parse_args(argv)
    if args.table:
        print(table(args.table))
        return 0
    stale = []
    for name, objs in WORLDS.items():
        path = HERE / f"{name}.world"
        text = world(name, objs, COMMENTS[name])
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    for path in stale:
        print(f"{path} is out of date: run {Path(__file__).name}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
