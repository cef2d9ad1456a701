"""Odometry of the real car by dead reckoning of the command it is applying.

The Smart Video Car has no wheel encoders and no IMU: the best it can say about its motion is
what it was told to do, clamped by its limits and cut by its watchdog. :class:`DeadReckoning`
integrates that through the bicycle model about the rear axle (wheelbase ``L``)::

    x' = v cos(yaw),   y' = v sin(yaw),   yaw' = v tan(delta) / L

with ``v`` the applied speed (0 while the motors are stopped) and ``delta`` the applied
road-wheel angle. It is what the car node publishes on ``odom`` so that a teleoperation loop
(the scripted trial) can be closed over the network on the real car: the loop's timing —
commands out, odometry back, across the link — is real; the pose is a model of the car, not
a measurement of it (wheel slip, battery sag and a mis-set ``speed_at_full_duty`` are not
seen). Frames are REP-103/105: ``odom`` fixed, ``base_link`` x forward, y left, yaw
counter-clockwise.
"""
from __future__ import annotations

import math


class DeadReckoning:
    def __init__(self, wheelbase: float, x: float = 0.0, y: float = 0.0, yaw: float = 0.0):
        if not wheelbase > 0:
            raise ValueError(f"wheelbase must be > 0 m, got {wheelbase!r}")
        self.wheelbase = wheelbase
        self.x, self.y, self.yaw = x, y, yaw
        self.v = self.omega = 0.0

    def step(self, speed: float, steer: float, dt: float) -> None:
        """Advance ``dt`` seconds at ``speed`` [m/s] with road-wheel angle ``steer`` [rad]
        (midpoint rule on the heading: exact for a straight line, second order on a circle)."""
        if dt <= 0:
            return
        self.v = speed
        self.omega = speed * math.tan(steer) / self.wheelbase
        mid = self.yaw + 0.5 * self.omega * dt
        self.x += speed * math.cos(mid) * dt
        self.y += speed * math.sin(mid) * dt
        self.yaw = math.atan2(math.sin(self.yaw + self.omega * dt), math.cos(self.yaw + self.omega * dt))
