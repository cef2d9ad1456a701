"""What hangs off the PCA9685: steering servo, pan/tilt servos and the two drive motors.

Angles follow REP-103: steering and pan positive to the left, tilt positive looking down.
"""
from __future__ import annotations

import math
import time
from typing import Callable

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


#: How each motor bridge is wired and stopped, from its data sheet's truth table. ``pins`` is
#: the number of GPIO direction pins per motor; ``forward``/``backward`` their levels while
#: driving; ``stop`` their levels when stopped (None: left where they are), with the PWM (enable)
#: input low; ``mode`` what the bridge then does to the motor.
#:
#: * L298N (ST's data sheet, its "Inverter/enable" table): IN1/IN2 = H/L forward, L/H backward;
#:   Ven = L is a *free running motor stop* whatever C and D are (coast); Ven = H with C = D is a
#:   fast (braking) stop. The stop: enable low and both inputs low (coast, and a second way to
#:   stop should the enable write fail).
#: * TB6612FNG with both inputs wired (Toshiba's data sheet, "H-SW control function"): IN1/IN2 =
#:   H/L CW, L/H CCW, H/H short brake, L/L *stop* (both outputs off: high impedance, the motor
#:   coasts); PWM = L with IN1 != IN2 is short brake. The stop: PWM low, then IN1 = IN2 = L (coast).
#: * TB6612FNG with one direction pin per motor (the PiCar-V: SunFounder's driver sets one GPIO
#:   per motor and the PWM, its board derives the second input): IN1 = IN2 = L cannot be set, so
#:   the only stop is PWM low, which the table gives as *short brake*. The direction pin is left
#:   where it is: a stop whose PWM write failed must not reverse a running motor.
BRIDGES = {
    ("l298n", 2): {"forward": [1, 0], "backward": [0, 1], "stop": [0, 0], "mode": "coast (free running stop)"},
    ("tb6612", 2): {"forward": [1, 0], "backward": [0, 1], "stop": [0, 0], "mode": "coast (stop: outputs off)"},
    ("tb6612", 1): {"forward": [1], "backward": [0], "stop": None, "mode": "short brake (PWM low)"},
}


def bridge(driver: str, pins: int) -> dict:
    """The truth table of ``driver`` wired with ``pins`` direction pins per motor (BRIDGES)."""
    try:
        return BRIDGES[(driver, pins)]
    except KeyError:
        allowed = ", ".join(f"{d} with {n}" for d, n in BRIDGES)
        raise ValueError(f"a {driver} bridge with {pins} direction pin(s) per motor is not supported; "
                         f"supported: {allowed}") from None


def safe_outputs(motors_config: dict) -> tuple[list[int], dict[int, int]]:
    """(PWM channels to turn off, {pin: level}) that stop both motors of a profile's ``motors``:
    what the fail-safe stop (:mod:`.failsafe`) writes after the driver is gone."""
    channels, levels = [], {}
    for motor in (motors_config["a"], motors_config["b"]):
        channels.append(motor["pwm_channel"])
        stop = bridge(motors_config["driver"], len(motor["pins"]))["stop"]
        if stop is not None:
            levels.update(zip(motor["pins"], stop))
    return channels, levels


def retried(action: Callable[[], None], attempts: int = 3, pause: float = 0.01,
            sleep: Callable[[float], None] = time.sleep) -> int:
    """Run ``action`` until it succeeds, at most ``attempts`` times ``pause`` seconds apart (a
    bus that glitched once usually answers the next time). Returns the attempts it took; the
    last error, when all failed, is raised with how many attempts were made."""
    for attempt in range(1, attempts + 1):
        try:
            action()
            return attempt
        except Exception as err:  # noqa: BLE001 - retried, then reported
            if attempt == attempts:
                raise StopFailed(f"{err} (after {attempts} attempts)") from err
            sleep(pause)
    return attempts


class StopFailed(OSError):
    """A write of the stop path failed every time it was tried."""


class Motors:
    """The two drive motors, always commanded together (the car steers with its front wheels).

    L298N: the PCA9685 channel drives the bridge's ENA/ENB (speed), two GPIO pins IN1/IN2
    per motor the direction. TB6612: the PWM channel drives PWMA/PWMB, one or two GPIO pins per
    motor (IN1, or IN1 and IN2) the direction. How each stops: :data:`BRIDGES`. ``reversed``
    swaps the direction of one motor (a motor wired the other way round). Every write of the
    stop path is retried (``attempts``, ``pause``)."""

    def __init__(self, pca: PCA9685, gpio: GPIO, config: dict, attempts: int = 3, pause: float = 0.01,
                 sleep: Callable[[float], None] = time.sleep):
        self.pca, self.gpio = pca, gpio
        self.driver = config["driver"]
        self.motors = [config["a"], config["b"]]
        self.bridges = [bridge(self.driver, len(m["pins"])) for m in self.motors]
        self.attempts, self.pause, self._sleep = attempts, pause, sleep
        self.duty = 0.0            # signed: + forward

    @property
    def pins(self) -> list[int]:
        return [pin for m in self.motors for pin in m["pins"]]

    @property
    def stop_mode(self) -> str:
        """What a stop does to the motors (coast or short brake), from the bridge's table."""
        return self.bridges[0]["mode"]

    def setup(self) -> None:
        for m, b in zip(self.motors, self.bridges):
            for pin, level in zip(m["pins"], b["stop"] or [0] * len(m["pins"])):
                self.gpio.setup_output(pin, level)
        for m in self.motors:
            self.pca.set_duty(m["pwm_channel"], 0.0)
        self.duty = 0.0

    def _direction_levels(self, motor: dict, bridge_table: dict, forward: bool) -> list[int]:
        fwd = forward != motor["reversed"]
        return bridge_table["forward"] if fwd else bridge_table["backward"]

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
        for m, b in zip(self.motors, self.bridges):
            for pin, level in zip(m["pins"], self._direction_levels(m, b, forward)):
                self.gpio.write(pin, level)
        for m in self.motors:
            self.pca.set_duty(m["pwm_channel"], abs(duty))
        self.duty = duty

    def stop(self) -> list[Exception]:
        """Stop both motors as their bridge stops (:data:`BRIDGES`): each PWM channel to 0, then
        the direction pins to the stop's levels, each write retried and every step tried even if
        another failed. Returns the errors (:class:`StopFailed`, each saying what it was writing);
        [] only when every write succeeded. ``duty`` becomes 0 once every PWM channel is off: PWM
        low alone stops either bridge (L298N: free running; TB6612: short brake), the pins are the
        second way; with a PWM write failed it keeps its value (the motors may still turn)."""
        pwm_errors: list[Exception] = []
        for m in self.motors:
            pwm_errors += self._try(f"PWM channel {m['pwm_channel']} off",
                                    lambda m=m: self.pca.set_duty(m["pwm_channel"], 0.0))
        pin_errors: list[Exception] = []
        for m, b in zip(self.motors, self.bridges):
            for pin, level in zip(m["pins"], b["stop"] or []):
                pin_errors += self._try(f"GPIO {pin} to {level}",
                                        lambda pin=pin, level=level: self.gpio.write(pin, level))
        if not pwm_errors:
            self.duty = 0.0
        return pwm_errors + pin_errors

    def _try(self, what: str, action: Callable[[], None]) -> list[Exception]:
        try:
            retried(action, self.attempts, self.pause, self._sleep)
            return []
        except StopFailed as err:
            return [StopFailed(f"{what}: {err}")]
