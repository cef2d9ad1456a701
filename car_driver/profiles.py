"""Car profiles: one YAML file per car model in ``config/cars/<name>.yaml``.

A profile says where everything is wired (PCA9685 address and channels, GPIO pins, motor
bridge type and polarity) and the car's geometry and limits. ``load_profile`` validates it
with :mod:`netloop.schema_nodes`; errors name the key and what is allowed, and an unknown
profile name lists the profiles that exist.

Servo positions are given in ``unit: ticks`` (PCA9685 counts of 4096 per PWM period, as in
SunFounder's original code) or ``unit: us`` (pulse width in microseconds).
"""
from __future__ import annotations

from pathlib import Path

from netloop import paths
from netloop.schema_nodes import (Bool, ConfigError, Enum, Int, List, Map, Num, Str, load_yaml,
                                  validate)

from .pca9685 import TICKS, prescale_for

CARS_DIR = paths.CONFIG / "cars"


def available_profiles(directory: Path = CARS_DIR) -> list[str]:
    return sorted(p.stem for p in Path(directory).glob("*.yaml"))


def _pwm_frequency(profile: dict) -> float:
    """The frequency the PCA9685 really runs at (after prescale rounding)."""
    f = profile["pwm"]["frequency"]
    return 25e6 / (TICKS * (prescale_for(f) + 1))


def to_ticks(value: float, unit: str, frequency: float) -> float:
    return value if unit == "ticks" else value * frequency * TICKS / 1e6


def to_us(value: float, unit: str, frequency: float) -> float:
    return value if unit == "us" else value * 1e6 / (frequency * TICKS)


def _check_pwm(pwm: dict, key: str):
    try:
        prescale_for(pwm["frequency"])
    except ValueError as err:
        raise ConfigError(f"{key}.frequency" if key else "frequency", str(err)) from None


def _check_steering(s: dict, key: str):
    if not (min(s["left"], s["right"]) < s["center"] < max(s["left"], s["right"])):
        raise ConfigError(key, f"center ({s['center']}) must lie strictly between left "
                               f"({s['left']}) and right ({s['right']})")


def _check_servo(s: dict, key: str):
    if not s["min"] <= s["center"] <= s["max"]:
        raise ConfigError(key, f"need min <= center <= max, got {s['min']} / {s['center']} / "
                               f"{s['max']}")


def _check_profile(p: dict, key: str):
    f = _pwm_frequency(p)
    lo_us, hi_us = p["servo_range_us"]
    if lo_us >= hi_us:
        raise ConfigError("servo_range_us", f"need [min, max] with min < max, got {[lo_us, hi_us]}")
    s = p["steering"]
    for name in ("left", "center", "right"):
        us = to_us(s[name] + s["offset"], s["unit"], f)
        if not lo_us <= us <= hi_us:
            raise ConfigError(f"steering.{name}", f"{s[name]} {s['unit']} plus offset "
                              f"{s['offset']} is {us:.0f} us, outside servo_range_us "
                              f"{lo_us:.0f}..{hi_us:.0f}")
    for servo in ("pan", "tilt"):
        c = p[servo]
        for name in ("min", "max"):
            us = to_us(c[name], c["unit"], f)
            if not lo_us <= us <= hi_us:
                raise ConfigError(f"{servo}.{name}", f"{c[name]} {c['unit']} is {us:.0f} us, "
                                  f"outside servo_range_us {lo_us:.0f}..{hi_us:.0f}")
    m = p["motors"]
    from .actuators import BRIDGES  # noqa: PLC0415 - actuators imports this module
    want = [n for driver, n in BRIDGES if driver == m["driver"]]
    for motor in ("a", "b"):
        pins = m[motor]["pins"]
        if len(pins) not in want:
            raise ConfigError(f"motors.{motor}.pins",
                              f"the {m['driver']} bridge needs {' or '.join(map(str, want))} direction "
                              f"pin(s) per motor (BCM numbers), got {pins}")
    if len(m["a"]["pins"]) != len(m["b"]["pins"]):
        raise ConfigError("motors.b.pins", f"both motors need as many direction pins (the same bridge): "
                                           f"a has {m['a']['pins']}, b {m['b']['pins']}")
    all_pins = m["a"]["pins"] + m["b"]["pins"]
    if len(set(all_pins)) != len(all_pins):
        raise ConfigError("motors", f"a GPIO pin is used twice: {all_pins}")
    channels = [s["channel"], p["pan"]["channel"], p["tilt"]["channel"],
                m["a"]["pwm_channel"], m["b"]["pwm_channel"]]
    if len(set(channels)) != len(channels):
        raise ConfigError("", f"a PCA9685 channel is used twice (steering, pan, tilt, motor a, "
                              f"motor b): {channels}")
    k = p["kinematics"]
    if k["max_speed"] > k["speed_at_full_duty"]:
        raise ConfigError("kinematics.max_speed", f"{k['max_speed']} m/s is more than the car "
                          f"reaches at full duty (speed_at_full_duty = {k['speed_at_full_duty']})")


UNIT = Enum(["ticks", "us"], what="servo unit")
SERVO = Map({
    "channel": Int(ge=0, le=15, doc="PCA9685 channel"),
    "unit": UNIT,
    "center": Num(doc="position at angle 0"),
    "min": Num(doc="lowest position the mechanism allows"),
    "max": Num(doc="highest position the mechanism allows"),
    "per_rad": Num(doc="position change per radian (sign: direction of positive angle, "
                       "REP-103: pan + = left, tilt + = down)"),
}, check=_check_servo)
MOTOR = Map({
    "pwm_channel": Int(ge=0, le=15, doc="PCA9685 channel on the bridge's enable/PWM input"),
    "pins": List(Int(ge=0, le=27), min_len=1, max_len=2,
                 doc="BCM direction pins: L298N IN1, IN2; TB6612 IN1, IN2, or one pin where the board "
                     "derives IN2 (PiCar-V)"),
    "reversed": Bool(default=False, doc="swap forward and backward for this motor"),
})

PROFILE = Map({
    "name": Str(),
    "description": Str(default=""),
    "pwm": Map({
        "bus": Int(default=1, ge=0, doc="I2C bus number (/dev/i2c-N)"),
        "address": Int(default=0x40, ge=0x03, le=0x77),
        "frequency": Num(default=60.0, gt=0),
    }, check=_check_pwm),
    "servo_range_us": List(Num(gt=0), min_len=2, max_len=2,
                           doc="pulse widths the servos accept, [min, max] in microseconds"),
    "steering": Map({
        "channel": Int(ge=0, le=15),
        "unit": UNIT,
        "left": Num(doc="servo position at full left lock"),
        "center": Num(doc="servo position for straight ahead"),
        "right": Num(doc="servo position at full right lock"),
        "offset": Num(default=0.0, doc="calibration offset added to all three positions"),
        "max_angle": Num(gt=0, le=0.8, doc="road-wheel steering angle at full lock (rad)"),
    }, check=_check_steering),
    "pan": SERVO,
    "tilt": SERVO,
    "motors": Map({
        "driver": Enum(["l298n", "tb6612"], what="motor driver"),
        "a": MOTOR,
        "b": MOTOR,
    }),
    "kinematics": Map({
        "wheelbase": Num(gt=0, le=1.0, doc="rear axle to front axle (m)"),
        "speed_at_full_duty": Num(gt=0, doc="ground speed at 100 % motor duty (m/s)"),
        "max_speed": Num(gt=0, doc="commands are clamped to +- this speed (m/s)"),
        "min_duty": Num(default=0.0, ge=0, lt=1, doc="smallest non-zero duty (motor dead band)"),
        "v_min_steer": Num(default=0.05, gt=0, doc="below this speed angular.z maps to the "
                                                   "steering angle as if moving at it (m/s)"),
    }),
    "camera": Map({
        "device": Int(default=0, ge=0, doc="/dev/videoN"),
        "width": Int(default=320, ge=16, le=1920),
        "height": Int(default=240, ge=16, le=1080),
        "rate": Num(default=10.0, gt=0, le=60, doc="frames per second published"),
        "jpeg_quality": Int(default=75, ge=1, le=100),
    }, default={}),
}, check=_check_profile)


def load_profile(name_or_path: str | Path, directory: Path = CARS_DIR) -> dict:
    """Load and validate a car profile, by name (``smart_video_car``) or by file path."""
    text = str(name_or_path)
    if text.endswith((".yaml", ".yml")) or "/" in text:
        path = Path(text)
    else:
        Enum(lambda: available_profiles(directory), what="car profile").check(text, "car")
        path = Path(directory) / f"{text}.yaml"
    return validate(PROFILE, load_yaml(str(path)), source=str(path))
