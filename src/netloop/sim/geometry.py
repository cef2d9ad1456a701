"""Small rigid-body helpers (quaternions as (x, y, z, w), like ROS and pybullet)."""
from __future__ import annotations

import math

import numpy as np


def quat_from_rpy(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """URDF/ROS fixed-axis roll-pitch-yaw (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def quat_from_axis_angle(axis, angle: float) -> tuple[float, float, float, float]:
    ax = np.asarray(axis, dtype=float)
    n = float(np.linalg.norm(ax))
    if n == 0.0 or angle == 0.0:
        return (0.0, 0.0, 0.0, 1.0)
    s = math.sin(angle / 2) / n
    return (ax[0] * s, ax[1] * s, ax[2] * s, math.cos(angle / 2))


def quat_mul(a, b) -> tuple[float, float, float, float]:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def quat_to_matrix(q) -> np.ndarray:
    x, y, z, w = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def yaw_of(q) -> float:
    """Heading (rotation about z) of a quaternion, in (-pi, pi]."""
    x, y, z, w = q
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
