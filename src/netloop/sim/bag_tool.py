"""``netloop bag lidar``: a LIDAR bag recorded from the embedded simulator, no ROS master needed.

    netloop bag lidar --world tunnel --out tunnel.bag [--seconds 60] [--rate 20] [--with-odom]

The simulated car drives itself around the world with a simple reactive wall-avoider on its
own scan (:class:`WallAvoider`: head for the most open bearing ahead, slow down near
obstacles, back off turning when something in its path is closer than 0.4 m). The physics runs as
fast as it can (not paced to the wall clock); every message is stamped
``--start`` (default: now) + simulated time, and written with the rosbag Python API at that
time.

Topics: ``/scan`` only by default (sensor_msgs/LaserScan, frame ``laser``, 360 rays one
degree apart from -pi, range_min 0.15 m, range_max 12 m, +inf = no return; at ``--rate``,
20 Hz), so that ``rosbag play`` of it (the runner's lidar_bag flow) sends nothing else. With
``--with-odom`` also ``/odom`` (nav_msgs/Odometry at the scan rate), ``/tf`` (odom ->
base_link at the scan rate) and ``/tf_static`` (base_link -> laser_mount -> laser, once),
for mapping or inspection.

Message size: a LaserScan of 360 ranges without intensities is 1497 bytes serialized
(header 21 = seq 4 + stamp 8 + "laser" 4+5; seven float32 28; ranges 4 + 360 x 4; empty
intensities 4), i.e. 30 kB/s = 240 kbit/s at 20 Hz; with ``--intensities`` 2937 bytes.
1497 bytes is more than one UDPROS datagram of 1400 bytes, so over udp each scan is two.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np


class WallAvoider:
    """cmd_vel from a scan: drive towards open space, never into a wall.

    Headings are in the laser frame (aligned with base_link), -60..60 degrees in 5 degree
    steps; for each, the free distance is how far the strip the car would sweep
    (+-``half_width``: the car is 0.16 m wide) reaches before a return. The car steers to
    the heading with the best ``min(free, 2.5 m) - 0.3 |heading|``, slows down as the free
    distance straight ahead shrinks, and backs off (1.2 s, turning towards the more open side)
    when it is below ``stop_dist``."""

    HEADINGS = np.radians(np.arange(-60, 61, 5))

    def __init__(self, angle_min: float, angle_increment: float, cruise: float = 0.3, stop_dist: float = 0.4,
                 reverse_time: float = 1.2, half_width: float = 0.14):
        self.angle_min, self.inc, self.half_width = angle_min, angle_increment, half_width
        self.cruise, self.stop_dist, self.reverse_time = cruise, stop_dist, reverse_time
        self.reverse_until = -1.0
        self.reverse_turn = 0.0

    def free_distance(self, ranges: np.ndarray, headings: np.ndarray) -> np.ndarray:
        """For each heading (rad, laser frame): how far the car could drive straight that way
        before its +-half_width strip meets a return."""
        r = np.where(np.isfinite(ranges), ranges, 12.0).astype(float)
        ang = self.angle_min + self.inc * np.arange(len(r))
        px, py = r * np.cos(ang), r * np.sin(ang)
        c, s = np.cos(headings)[:, None], np.sin(headings)[:, None]
        fwd, lat = px * c + py * s, -px * s + py * c
        return np.where((fwd > 0) & (np.abs(lat) < self.half_width), fwd, 12.0).min(axis=1)

    def command(self, ranges: np.ndarray, now: float) -> tuple[float, float]:
        if now < self.reverse_until:
            return -0.15, self.reverse_turn
        free = self.free_distance(ranges, self.HEADINGS)
        front = float(free[len(free) // 2])
        if front < self.stop_dist:
            left, right = float(free[-1]), float(free[0])
            self.reverse_until = now + self.reverse_time
            self.reverse_turn = 0.8 if left >= right else -0.8   # back off, nose towards the open side
            return -0.15, self.reverse_turn
        score = np.minimum(free, 2.5) - 0.3 * np.abs(self.HEADINGS)
        target = float(self.HEADINGS[int(np.argmax(score))])
        speed = self.cruise * min(1.0, max(0.35, (front - self.stop_dist) / 0.8))
        return speed, max(-1.2, min(1.2, 2.0 * target))


def record_lidar_bag(world: str, out: str | Path, seconds: float = 30.0, rate: float = 20.0,
                     start: float | None = None, x: float = 0.0, y: float = 0.0, yaw: float = 0.0,
                     scan_only: bool = True, intensities: bool = False, physics_rate: float = 1000.0) -> dict:
    """Drive the simulated car in ``world`` for ``seconds`` and write the bag; returns a summary."""
    import rosbag  # noqa: PLC0415
    import rospy  # noqa: PLC0415  (rospy.Time only; no node, no master)
    from geometry_msgs.msg import TransformStamped  # noqa: PLC0415
    from nav_msgs.msg import Odometry  # noqa: PLC0415
    from sensor_msgs.msg import LaserScan  # noqa: PLC0415
    from tf2_msgs.msg import TFMessage  # noqa: PLC0415

    from .simulation import Simulation  # noqa: PLC0415
    from .world import joint_transform  # noqa: PLC0415

    if not (seconds > 0 and rate > 0):
        raise ValueError(f"--seconds and --rate must be > 0 (got {seconds}, {rate})")
    out = Path(out)
    sim = Simulation({"world": world, "camera": False, "scan_rate": rate, "x": x, "y": y, "yaw": yaw,
                      "physics_rate": physics_rate, "watchdog_timeout": 0.25})
    t_start = time.time() if start is None else float(start)
    laser = sim.laser_cfg
    base = sim.urdf.root_link
    avoider = WallAvoider(laser.min_angle, sim.scan_increment)
    ground = _ground_body(sim)
    obstacles = [b for b in sim.world_bodies if b != ground]
    contacts = 0
    scans = 0
    size = None
    steps_per_scan = max(1, int(round(1.0 / (rate * sim.dt))))
    distance = 0.0
    last_pos = None
    wall0 = time.monotonic()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with rosbag.Bag(str(out), "w") as bag:
            def tf(parent, child, xyz, rot, stamp):
                m = TransformStamped()
                m.header.stamp, m.header.frame_id, m.child_frame_id = stamp, parent, child
                m.transform.translation.x, m.transform.translation.y, m.transform.translation.z = xyz
                (m.transform.rotation.x, m.transform.rotation.y, m.transform.rotation.z,
                 m.transform.rotation.w) = rot
                return m

            if not scan_only:
                stamp = rospy.Time.from_sec(t_start)
                chain = _chain_to(sim.urdf, laser.link)
                bag.write("/tf_static", TFMessage([tf(j.parent, j.child, *joint_transform(j, 0.0), stamp) for j in chain]),
                          stamp)
            sim.step(200)                        # settle on the ground (before the first stamp)
            t_offset = sim.time
            while sim.time - t_offset < seconds - 1e-9:
                ranges = sim.scan()
                stamp = rospy.Time.from_sec(t_start + sim.time - t_offset)
                msg = LaserScan()
                msg.header.stamp, msg.header.frame_id = stamp, laser.frame
                msg.angle_min, msg.angle_max, msg.angle_increment = laser.min_angle, laser.max_angle, sim.scan_increment
                msg.time_increment, msg.scan_time = 0.0, 1.0 / rate
                msg.range_min, msg.range_max = laser.range_min, laser.range_max
                msg.ranges = ranges.tolist()
                if intensities:
                    msg.intensities = [0.0] * len(ranges)
                bag.write("/scan", msg, stamp)
                scans += 1
                if size is None:
                    size = _serialized_size(msg)
                pos, orn = sim.base_pose()
                if not scan_only:
                    lin, ang = sim.base_twist()
                    o = Odometry()
                    o.header.stamp, o.header.frame_id, o.child_frame_id = stamp, "odom", base
                    o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z = pos
                    (o.pose.pose.orientation.x, o.pose.pose.orientation.y, o.pose.pose.orientation.z,
                     o.pose.pose.orientation.w) = orn
                    o.twist.twist.linear.x, o.twist.twist.linear.y, o.twist.twist.linear.z = (float(v) for v in lin)
                    o.twist.twist.angular.x, o.twist.twist.angular.y, o.twist.twist.angular.z = (float(v) for v in ang)
                    bag.write("/odom", o, stamp)
                    bag.write("/tf", TFMessage([tf("odom", base, pos, orn, stamp)]), stamp)
                if last_pos is not None:
                    distance += math.dist(pos[:2], last_pos[:2])
                last_pos = pos
                v, w = avoider.command(ranges, sim.time)
                sim.command(v, w)
                sim.step(steps_per_scan)
                if any(sim.p.getContactPoints(sim.car, b, physicsClientId=sim.cid) for b in obstacles):
                    contacts += 1
    finally:
        sim.close()
    return {"bag": str(out), "world": sim.world.name, "seconds": seconds, "rate": rate, "scans": scans,
            "scan_bytes": size, "distance_m": round(distance, 2), "wall_contacts": contacts,
            "wall_time_s": round(time.monotonic() - wall0, 2), "start": t_start,
            "topics": ["/scan"] + ([] if scan_only else ["/odom", "/tf", "/tf_static"])}


def _ground_body(sim) -> int | None:
    """The world body under the car at the start (the floor)."""
    sim.step(50)
    for b in sim.world_bodies:
        if sim.p.getContactPoints(sim.car, b, physicsClientId=sim.cid):
            return b
    return None


def _chain_to(urdf, link: str) -> list:
    """Joints from the root link down to ``link``."""
    by_child = {j.child: j for j in urdf.joints}
    chain = []
    while link in by_child:
        chain.append(by_child[link])
        link = by_child[link].parent
    return list(reversed(chain))


def _serialized_size(msg) -> int:
    from io import BytesIO  # noqa: PLC0415
    buf = BytesIO()
    msg.serialize(buf)
    return len(buf.getvalue())
