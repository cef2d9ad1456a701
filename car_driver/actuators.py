"""What hangs off the PCA9685: steering servo, pan/tilt servos and the two drive motors.

Angles follow REP-103: steering and pan positive to the left, tilt positive looking down.
"""
from __future__ import annotations

import math

from .hardware import GPIO
from .pca9685 import PCA9685
from .profiles import to_ticks


class CalibrationError(ValueError):
    """A calibration value the servo cannot follow."""


def _clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


class Steering:
    """The steering servo. Positions (left / center / right, in the profile's unit) map the
    road-wheel angle +max_angle / 0 / -max_angle, linearly on each side; the calibration
    ``offset`` shifts all three and is refused if any would leave the servo's range."""

    def __init__(self, pca: PCA9685, config: dict, servo_range_us: tuple[float, float]):
        if pca.frequency is None:
            raise RuntimeError("initialise the PCA9685 before creating Steering")
        self.pca, self.channel = pca, config["channel"]
        self.unit = config["unit"]
        f = pca.frequency
        self._left = to_ticks(config["left"], self.unit, f)
        self._center = to_ticks(config["center"], self.unit, f)
        self._right = to_ticks(config["right"], self.unit, f)
        self.max_angle = config["max_angle"]
        self.range_ticks = (pca.us_to_ticks(servo_range_us[0]), pca.us_to_ticks(servo_range_us[1]))
        self.range_us = tuple(servo_range_us)
        self.offset_ticks = 0.0
        self.calibrate(config.get("offset", 0.0))
        self.angle: float | None = None
        self.ticks: int | None = None

    def _offset_to_ticks(self, offset: float) -> float:
        return offset if self.unit == "ticks" else offset * self.pca.frequency * 4096 / 1e6

    def allowed_offsets(self) -> tuple[float, float]:
        """The calibration offsets (in the profile's unit) that keep every position in range."""
        lo, hi = self.range_ticks
        ticks = (self._left, self._center, self._right)
        lo_t, hi_t = lo - min(ticks), hi - max(ticks)
        if self.unit == "ticks":
            return lo_t, hi_t
        scale = 1e6 / (self.pca.frequency * 4096)
        return lo_t * scale, hi_t * scale

    def calibrate(self, offset: float) -> None:
        """Set the calibration offset (profile unit). Raises CalibrationError if the servo
        could not reach the shifted left/centre/right positions."""
        if not isinstance(offset, (int, float)) or not math.isfinite(offset):
            raise CalibrationError(f"steering offset must be a finite number, got {offset!r}")
        shift = self._offset_to_ticks(offset)
        lo, hi = self.range_ticks
        for name, base in (("left", self._left), ("center", self._center), ("right", self._right)):
            t = base + shift
            if not lo <= t <= hi:
                a, b = self.allowed_offsets()
                raise CalibrationError(
                    f"steering calibration offset {offset:+g} {self.unit} would put the {name} "
                    f"position at {t:.0f} ticks, outside the servo's range {lo}..{hi} ticks "
                    f"({self.range_us[0]:.0f}..{self.range_us[1]:.0f} us); allowed offsets: "
                    f"{math.ceil(a):+d}..{math.floor(b):+d} {self.unit}")
        self.offset_ticks = shift
        self.offset = float(offset)

    def ticks_for(self, angle: float) -> int:
        a = _clamp(angle, -self.max_angle, self.max_angle) / self.max_angle
        end = self._left if a >= 0 else self._right
        return round(self._center + abs(a) * (end - self._center) + self.offset_ticks)

    def set_angle(self, angle: float) -> int:
        """Steer to ``angle`` rad (+ left), clamped to +-max_angle. Returns the ticks written."""
        ticks = self.ticks_for(angle)
        self.pca.set_off_ticks(self.channel, ticks)
        self.angle = _clamp(angle, -self.max_angle, self.max_angle)
        self.ticks = ticks
        return ticks

    def center(self) -> int:
        return self.set_angle(0.0)


class Servo:
    """A positional servo: position = center + angle * per_rad, clamped to [min, max]."""

    def __init__(self, pca: PCA9685, config: dict):
        f = pca.frequency
        if f is None:
            raise RuntimeError("initialise the PCA9685 before creating servos")
        self.pca, self.channel = pca, config["channel"]
        unit = config["unit"]
        self.center_ticks = to_ticks(config["center"], unit, f)
        self.min_ticks = to_ticks(config["min"], unit, f)
        self.max_ticks = to_ticks(config["max"], unit, f)
        self.ticks_per_rad = to_ticks(config["per_rad"], unit, f)
        lo = (self.min_ticks - self.center_ticks) / self.ticks_per_rad
        hi = (self.max_ticks - self.center_ticks) / self.ticks_per_rad
        self.angle_limits = (min(lo, hi), max(lo, hi))
        self.angle: float | None = None

    def set_angle(self, angle: float) -> int:
        if not math.isfinite(angle):
            raise ValueError(f"servo angle must be finite, got {angle!r}")
        angle = _clamp(angle, *self.angle_limits)
        ticks = round(_clamp(self.center_ticks + angle * self.ticks_per_rad,
                             self.min_ticks, self.max_ticks))
        self.pca.set_off_ticks(self.channel, ticks)
        self.angle = angle
        return ticks


class PanTilt:
    def __init__(self, pca: PCA9685, pan: dict, tilt: dict):
        self.pan, self.tilt = Servo(pca, pan), Servo(pca, tilt)

    def set(self, pan: float | None = None, tilt: float | None = None) -> None:
        if pan is not None:
            self.pan.set_angle(pan)
        if tilt is not None:
            self.tilt.set_angle(tilt)

    def center(self) -> None:
        self.set(0.0, 0.0)


class Motors:
    """The two drive motors, always commanded together (the car steers with its front wheels).

    L298N: the PCA9685 channel drives the bridge's ENA/ENB (speed), two GPIO pins IN1/IN2
    per motor the direction (1/0 forward, 0/1 backward, 0/0 stop). TB6612 (PiCar-V): the PWM
    channel drives PWMA/PWMB, one GPIO pin per motor the direction. ``reversed`` swaps the
    direction of one motor (a motor wired the other way round)."""

    def __init__(self, pca: PCA9685, gpio: GPIO, config: dict):
        self.pca, self.gpio = pca, gpio
        self.driver = config["driver"]
        self.motors = [config["a"], config["b"]]
        self.duty = 0.0            # signed: + forward

    @property
    def pins(self) -> list[int]:
        return [pin for m in self.motors for pin in m["pins"]]

    def setup(self) -> None:
        for pin in self.pins:
            self.gpio.setup_output(pin, 0)
        for m in self.motors:
            self.pca.set_duty(m["pwm_channel"], 0.0)
        self.duty = 0.0

    def _direction_levels(self, motor: dict, forward: bool) -> list[int]:
        fwd = forward != motor["reversed"]
        if self.driver == "l298n":
            return [1, 0] if fwd else [0, 1]
        return [1 if fwd else 0]

    def set(self, duty: float) -> None:
        """Signed duty -1..1 (+ forward). Changing direction passes through zero duty first."""
        if not math.isfinite(duty) or abs(duty) > 1.0:
            raise ValueError(f"motor duty must be within -1..1, got {duty!r}")
        if duty == 0.0:
            errors = self.stop()
            if errors:
                raise errors[0]
            return
        forward = duty > 0
        if self.duty != 0.0 and (self.duty > 0) != forward:
            for m in self.motors:
                self.pca.set_duty(m["pwm_channel"], 0.0)
        for m in self.motors:
            for pin, level in zip(m["pins"], self._direction_levels(m, forward)):
                self.gpio.write(pin, level)
        for m in self.motors:
            self.pca.set_duty(m["pwm_channel"], abs(duty))
        self.duty = duty

    def stop(self) -> list[Exception]:
        """Best-effort stop: each PWM channel to 0 and each direction pin low, every step tried
        even if another failed (either one alone stops an L298N). Returns the errors."""
        errors: list[Exception] = []
        for m in self.motors:
            try:
                self.pca.set_duty(m["pwm_channel"], 0.0)
            except Exception as err:  # noqa: BLE001 - keep going: the pins may still work
                errors.append(err)
        for pin in self.pins:
            try:
                self.gpio.write(pin, 0)
            except Exception as err:  # noqa: BLE001
                errors.append(err)
        self.duty = 0.0
        return errors
