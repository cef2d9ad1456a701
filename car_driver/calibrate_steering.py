"""Steering calibration helper (no ROS needed).

    python -m netloop.car_driver.calibrate_steering --car smart_video_car --offset 12
    python -m netloop.car_driver.calibrate_steering --car smart_video_car --offset 12 --sweep

Puts the steering servo at centre + offset (and with ``--sweep`` goes left, centre, right,
centre, one second each) so you can see whether the front wheels point straight ahead. Repeat
with other offsets until they do, then write the offset into the profile
(``steering.offset`` in ``config/cars/<car>.yaml``) or pass it to the node as
``_steering_offset:=N``. An offset the servo cannot follow is refused with the allowed range.
The motors are never switched on.
"""
from __future__ import annotations

import argparse
import sys
import time

from netloop.schema_nodes import ConfigError

from .actuators import CalibrationError, Steering
from .fakes import FakePCA9685Bus
from .hardware import HardwareError, SMBusI2C
from .pca9685 import PCA9685
from .profiles import load_profile


def run(car: str, offset: float, sweep: bool = False, hardware: str = "real", dwell: float = 1.0,
        bus=None) -> Steering:
    profile = load_profile(car)
    if bus is None:
        bus = FakePCA9685Bus(profile["pwm"]["address"]) if hardware == "fake" else SMBusI2C(profile["pwm"]["bus"])
    pca = PCA9685(bus, profile["pwm"]["address"])
    pca.init(profile["pwm"]["frequency"])
    steering = Steering(pca, dict(profile["steering"], offset=0.0), tuple(profile["servo_range_us"]))
    steering.calibrate(offset)
    positions = [0.0]
    if sweep:
        positions = [0.0, steering.max_angle, 0.0, -steering.max_angle, 0.0]
    for i, angle in enumerate(positions):
        ticks = steering.set_angle(angle)
        print(f"steering {angle:+.2f} rad -> {ticks} ticks ({pca.ticks_to_us(ticks):.0f} us)")
        if i < len(positions) - 1:
            time.sleep(dwell)
    return steering


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Centre the steering servo with a calibration offset.")
    parser.add_argument("--car", default="smart_video_car", help="profile name or YAML path")
    parser.add_argument("--offset", type=float, default=0.0, help="offset in the profile's unit")
    parser.add_argument("--sweep", action="store_true", help="also go to full left and right")
    parser.add_argument("--hardware", choices=("real", "fake"), default="real")
    args = parser.parse_args(argv)
    try:
        steering = run(args.car, args.offset, args.sweep, args.hardware)
    except (ConfigError, CalibrationError, HardwareError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"if the wheels point straight ahead, put 'offset: {steering.offset:g}' under "
          f"'steering:' in the profile")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
