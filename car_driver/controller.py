"""``CarController``: velocity commands -> actuator settings, with limits and a watchdog.

No ROS here, so all of it is unit-tested against the register-level fakes.

Command mapping (``geometry_msgs/Twist`` semantics, REP-103):

* speed: ``linear.x`` (m/s) is clamped to +-``max_speed`` and becomes the signed motor duty
  ``v / speed_at_full_duty`` (a non-zero duty is raised to at least ``min_duty``, the motors'
  dead band).
* steering: the kinematic bicycle model about the rear axle, ``omega = v tan(delta) / L``,
  so ``delta = atan(L * omega / v)``, clamped to +-``max_angle``. This is also right when
  reversing (the sign of v flips delta). Near standstill (``|v| < v_min_steer``) the formula
  would blow up, so there ``delta = atan(L * omega / v_min_steer)``: the wheels still turn the
  way ``angular.z`` asks, proportionally for small values, and the mapping is continuous with
  forward driving at ``v = v_min_steer``.
* watchdog: if no command arrived for ``watchdog_timeout`` seconds, the motors stop (PWM 0,
  direction pins as the bridge stops, :data:`.actuators.BRIDGES`); the steering stays where it
  was. The next command restarts them.
* any exception while applying a command stops the motors (each output tried, each write
  retried) before it propagates. A stop whose PWM writes failed is not recorded as one:
  ``running`` stays true, ``stop_reason`` says it failed, and the watchdog tries again.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from .actuators import Motors, PanTilt, Steering, StopFailed, retried
from .hardware import GPIO, I2CBus
from .pca9685 import PCA9685


@dataclass
class Actuation:
    """What one command turned into."""
    speed: float          # m/s after clamping
    duty: float           # signed motor duty
    steer: float          # road-wheel angle (rad) after clamping
    steer_ticks: int


def steering_angle(v: float, omega: float, wheelbase: float, max_angle: float,
                   v_min: float) -> float:
    """Ackermann (bicycle model) steering angle for speed ``v`` and yaw rate ``omega``."""
    if abs(v) < v_min:
        v = v_min
    delta = math.atan(wheelbase * omega / v)
    return max(-max_angle, min(max_angle, delta))


def speed_to_duty(v: float, kinematics: dict) -> tuple[float, float]:
    """(clamped speed, signed duty) for a commanded speed ``v``."""
    vmax = kinematics["max_speed"]
    v = max(-vmax, min(vmax, v))
    duty = v / kinematics["speed_at_full_duty"]
    if duty != 0.0 and abs(duty) < kinematics["min_duty"]:
        duty = math.copysign(kinematics["min_duty"], duty)
    return v, max(-1.0, min(1.0, duty))


def ackermann_wheel_angles(delta: float, wheelbase: float, track: float) -> tuple[float, float]:
    """(left, right) road-wheel angles of an ideal Ackermann linkage whose virtual centre wheel
    is at ``delta`` (for simulating the URDF's two steering joints). ``track`` is the distance
    between the two steering pivots."""
    if abs(delta) < 1e-9:
        return 0.0, 0.0
    radius = wheelbase / math.tan(delta)          # signed turn radius of the rear-axle centre
    left = math.atan(wheelbase / (radius - track / 2))
    right = math.atan(wheelbase / (radius + track / 2))
    return left, right


class CarController:
    def __init__(self, profile: dict, bus: I2CBus, gpio: GPIO, watchdog_timeout: float = 0.25,
                 clock: Callable[[], float] = time.monotonic, steering_offset: Optional[float] = None,
                 on_change: Optional[Callable[[], None]] = None, sleep=time.sleep):
        if not watchdog_timeout > 0:
            raise ValueError(f"watchdog_timeout must be > 0 s, got {watchdog_timeout!r}")
        self.profile = profile
        self.bus, self.gpio = bus, gpio
        self.pca = PCA9685(bus, profile["pwm"]["address"], sleep=sleep)
        self.watchdog_timeout = watchdog_timeout
        self.clock = clock
        self._steering_offset = steering_offset
        self.on_change = on_change
        self.kin = profile["kinematics"]
        self.steering: Steering | None = None
        self.pan_tilt: PanTilt | None = None
        self.motors: Motors | None = None
        self.last_command_time: float | None = None
        self.last: Actuation | None = None
        self.running = False             # motors may be turning
        self.stop_reason = "not started"
        self.commands = 0
        self.started = False
        self.shut_down = False
        self._sleep = sleep
        #: every write of the stop path is tried this often, this many seconds apart
        self.stop_attempts, self.stop_pause = 3, 0.01
        self._lock = threading.RLock()

    # -- life cycle -----------------------------------------------------------------------
    def start(self) -> None:
        """Initialise the PCA9685 (60 Hz), set up the pins, centre steering and camera."""
        with self._lock:
            p = self.profile
            self.pca.init(p["pwm"]["frequency"])
            self.motors = Motors(self.pca, self.gpio, p["motors"], self.stop_attempts, self.stop_pause, self._sleep)
            self.motors.setup()
            self.steering = Steering(self.pca, p["steering"], tuple(p["servo_range_us"]))
            if self._steering_offset is not None:
                self.steering.calibrate(self._steering_offset)
            self.steering.center()
            self.pan_tilt = PanTilt(self.pca, p["pan"], p["tilt"])
            self.pan_tilt.center()
            self.started = True
            self.stop_reason = "no command yet"
        self._changed()

    def shutdown(self, reason: str = "shutdown") -> list[Exception]:
        """Motors off (duty 0, pins low), then every PWM output off; idempotent."""
        with self._lock:
            if self.shut_down:
                return []
            errors = self._stop(reason)
            try:
                retried(self.pca.all_off, self.stop_attempts, self.stop_pause, self._sleep)
            except StopFailed as err:
                errors.append(StopFailed(f"every PWM output off: {err}"))
            for closer in (self.gpio.close, self.bus.close):
                try:
                    closer()
                except Exception as err:  # noqa: BLE001
                    errors.append(err)
            self.shut_down = True
        self._changed()
        return errors

    # -- commands -------------------------------------------------------------------------
    def compute(self, v: float, omega: float) -> tuple[float, float, float]:
        """(speed, duty, steering angle) for a command, without touching the hardware."""
        if not (math.isfinite(v) and math.isfinite(omega)):
            raise ValueError(f"non-finite velocity command: linear.x={v!r}, angular.z={omega!r}")
        speed, duty = speed_to_duty(v, self.kin)
        delta = steering_angle(v, omega, self.kin["wheelbase"], self.profile["steering"]["max_angle"],
                               self.kin["v_min_steer"])
        return speed, duty, delta

    def command(self, v: float, omega: float, now: Optional[float] = None) -> Actuation:
        """Apply a velocity command. On any error the motors are stopped and it re-raises."""
        with self._lock:
            if not self.started or self.shut_down:
                raise RuntimeError("CarController is not running (start() it first)")
            try:
                speed, duty, delta = self.compute(v, omega)
                ticks = self.steering.set_angle(delta)
                self.motors.set(duty)
            except Exception as err:
                self._stop(f"error in command: {err}")
                self._changed()
                raise
            self.last_command_time = self.clock() if now is None else now
            self.last = Actuation(speed, duty, delta, ticks)
            self.commands += 1
            self.running = duty != 0.0
            self.stop_reason = "" if self.running else "zero speed commanded"
        self._changed()
        return self.last

    def set_pan_tilt(self, pan: Optional[float] = None, tilt: Optional[float] = None) -> None:
        with self._lock:
            if not self.started or self.shut_down:
                raise RuntimeError("CarController is not running")
            self.pan_tilt.set(pan, tilt)
        self._changed()

    def check_watchdog(self, now: Optional[float] = None) -> bool:
        """Stop the motors if the last command is older than the timeout. True if it stopped
        them just now."""
        with self._lock:
            if not self.running or self.shut_down:
                return False
            now = self.clock() if now is None else now
            age = now - (self.last_command_time or 0.0)
            if age <= self.watchdog_timeout:
                return False
            self._stop(f"watchdog: no command for {age:.3f} s (timeout {self.watchdog_timeout} s)")
        self._changed()
        return True

    def stop(self, reason: str = "stop requested") -> list[Exception]:
        with self._lock:
            errors = self._stop(reason)
        self._changed()
        return errors

    # -- internals ------------------------------------------------------------------------
    def _stop(self, reason: str) -> list[Exception]:
        """Stop the motors (every write retried). Recorded as stopped only when the PWM outputs
        are off: a failed I2C write keeps ``running`` (the watchdog tries again) and says so in
        ``stop_reason``; a failed pin write alone is reported too."""
        errors = self.motors.stop() if self.motors is not None else []
        self.running = self.motors is not None and self.motors.duty != 0.0
        self.stop_reason = reason if not errors else \
            f"{reason}; STOP FAILED: {'; '.join(map(str, errors))}"
        if self.last is not None and not self.running:
            self.last = Actuation(0.0, 0.0, self.last.steer, self.last.steer_ticks)
        return errors

    def _changed(self):
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # noqa: BLE001 - reporting must never break control
                pass

    def status(self) -> dict:
        last = self.last
        return {"running": self.running, "stop_reason": self.stop_reason, "commands": self.commands,
                "shut_down": self.shut_down,
                "last": None if last is None else {"speed": last.speed, "duty": last.duty,
                                                   "steer": last.steer, "steer_ticks": last.steer_ticks}}


def pan_tilt_from_joint_state(msg) -> tuple[float | None, float | None]:
    """(pan, tilt) [rad] from a sensor_msgs/JointState: by joint name (camera_pan_joint,
    camera_tilt_joint), or two unnamed positions in that order; None where not given."""
    if msg.name:
        pos = dict(zip(msg.name, msg.position))
    elif len(msg.position) == 2:
        pos = {"camera_pan_joint": msg.position[0], "camera_tilt_joint": msg.position[1]}
    else:
        pos = {}
    return pos.get("camera_pan_joint"), pos.get("camera_tilt_joint")
