"""``cmd_vel`` -> joint targets of the car model, through the real driver's controller.

:class:`CarActuation` runs the car driver's :class:`CarController` (the same code the
Raspberry Pi runs) on its register-level fake hardware, so speed clamping, the Ackermann
steering law, the standstill rule and the watchdog are exactly the driver's; it then reads
what the driver set (motor duty, steering angle, pan/tilt angles) and turns it into targets for
the model's joints:

* rear wheels: ``duty * speed_at_full_duty / wheel_radius`` rad/s (a motor's speed follows
  its duty; the watchdog's stop is duty 0, i.e. wheel speed 0);
* steering knuckles: ``ackermann_wheel_angles(delta, wheelbase, kingpin_track)``;
* camera pan / tilt: the driver's servo angles.

Used by the embedded simulator and by the Gazebo command bridge. No ROS, no pybullet.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from netloop.car_driver.controller import CarController, ackermann_wheel_angles
from netloop.car_driver.fakes import FakeGPIO, FakePCA9685Bus


@dataclass(frozen=True)
class JointTargets:
    wheel_speed: float      # rad/s, both rear wheels
    steer: float            # the driver's single steering angle delta (rad)
    steer_left: float       # knuckle angles (rad)
    steer_right: float
    pan: float
    tilt: float


class CarActuation:
    def __init__(self, profile: dict, wheel_radius: float, wheelbase: float, kingpin_track: float,
                 watchdog_timeout: float = 0.25, clock: Callable[[], float] | None = None):
        self.profile, self.wheel_radius = profile, wheel_radius
        self.wheelbase, self.kingpin_track = wheelbase, kingpin_track
        kwargs = {"clock": clock} if clock is not None else {}
        self.controller = CarController(profile, FakePCA9685Bus(profile["pwm"]["address"]), FakeGPIO(),
                                        watchdog_timeout=watchdog_timeout, sleep=lambda s: None, **kwargs)
        self.controller.start()

    def command(self, v: float, omega: float, now: float | None = None):
        """Apply a cmd_vel; returns the driver's Actuation (raises ValueError on NaN, motors stopped)."""
        return self.controller.command(float(v), float(omega), now=now)

    def set_pan_tilt(self, pan: float | None = None, tilt: float | None = None) -> None:
        self.controller.set_pan_tilt(pan, tilt)

    def check_watchdog(self, now: float | None = None) -> str | None:
        """The stop reason if the watchdog stopped the motors just now, else None."""
        if self.controller.check_watchdog(now=now):
            return self.controller.stop_reason
        return None

    @property
    def running(self) -> bool:
        return self.controller.running

    def targets(self) -> JointTargets:
        ctl = self.controller
        speed = ctl.motors.duty * self.profile["kinematics"]["speed_at_full_duty"]
        delta = ctl.steering.angle
        left, right = ackermann_wheel_angles(delta, self.wheelbase, self.kingpin_track)
        return JointTargets(speed / self.wheel_radius, delta, left, right,
                            ctl.pan_tilt.pan.angle or 0.0, ctl.pan_tilt.tilt.angle or 0.0)

    def shutdown(self) -> None:
        self.controller.shutdown("simulation ends")
