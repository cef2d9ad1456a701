"""The real car's driver against register-level fakes: PCA9685 set-up, steering ticks, motor
pins and duty, watchdog, safe stop on shutdown and on errors, calibration and profiles."""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import importlib.util

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))

from netloop.car_driver import calibrate_steering as calibrate  # noqa: E402
from netloop.car_driver.actuators import CalibrationError, Steering  # noqa: E402
from netloop.car_driver.controller import (CarController, ackermann_wheel_angles,  # noqa: E402
                                           steering_angle)
from netloop.car_driver.fakes import FakeCamera, FakeGPIO, FakePCA9685Bus, bridge_mode  # noqa: E402
from netloop.car_driver.hardware import HardwareError, SMBusI2C, encode_jpeg  # noqa: E402
from netloop.car_driver.pca9685 import PCA9685, prescale_for  # noqa: E402
from netloop.car_driver.profiles import available_profiles, load_profile  # noqa: E402
from netloop.schema import ConfigError  # noqa: E402

pytestmark = pytest.mark.robot     # robot-side unit tests (pytest -m robot; netloop.robot_side)

MODE1, MODE2, PRESCALE = 0x00, 0x01, 0xFE
SLEEP, AI, RESTART = 0x10, 0x20, 0x80


def led(n: int) -> dict:
    base = 0x06 + 4 * n
    return {"ON_L": base, "ON_H": base + 1, "OFF_L": base + 2, "OFF_H": base + 3}


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


@pytest.fixture
def svc():
    return load_profile("smart_video_car")


@pytest.fixture
def picar():
    return load_profile("picar_v")


def make(profile, **kw):
    bus, gpio, clock = FakePCA9685Bus(profile["pwm"]["address"]), FakeGPIO(), Clock()
    car = CarController(profile, bus, gpio, clock=clock, sleep=lambda s: None, **kw)
    car.start()
    return car, bus, gpio, clock


# ------------------------------------------------------------------------------------------
# PCA9685
# ------------------------------------------------------------------------------------------
def test_prescale_formula():
    assert prescale_for(60) == 101
    assert prescale_for(50) == 121
    assert prescale_for(200) == 30
    for bad in (0, 10, 5000):
        with pytest.raises(ValueError):
            prescale_for(bad)


def test_fake_models_the_chip():
    bus = FakePCA9685Bus()
    assert bus.mode1 == 0x11 and bus.prescale == 0x1E and bus.sleeping
    assert all(bus.duty(n) == 0 for n in range(16))          # power-up: full OFF
    bus.write_byte_data(0x40, MODE1, 0x01)                    # wake
    bus.write_byte_data(0x40, PRESCALE, 101)                  # ignored while awake
    assert bus.prescale == 0x1E and len(bus.ignored_writes) == 1
    bus.write_byte_data(0x40, led(3)["OFF_L"], 0x00)
    bus.write_byte_data(0x40, led(3)["OFF_H"], 0x08)          # 2048 ticks: 50 %
    assert bus.duty(3) == 0.5
    bus.write_byte_data(0x40, MODE1, 0x01 | SLEEP)            # sleep while running
    assert bus.read_byte_data(0x40, MODE1) & RESTART
    assert bus.output_duty(3) == 0 and bus.duty(3) == 0.5
    bus.write_byte_data(0x40, MODE1, 0x01)
    bus.write_byte_data(0x40, MODE1, 0x01 | RESTART)          # restart clears the flag
    assert not bus.read_byte_data(0x40, MODE1) & RESTART
    bus.write_byte_data(0x40, 0xFD, 0x10)                     # ALL_LED_OFF_H: all full OFF
    assert bus.duty(3) == 0 and bus.read_byte_data(0x40, 0xFD) == 0
    with pytest.raises(OSError):
        bus.write_byte_data(0x41, MODE1, 0)                   # nobody at 0x41
    with pytest.raises(ValueError):
        bus.write_byte_data(0x40, 0x50, 0)                    # reserved register


def test_init_sets_mode1_and_prescale_while_sleeping(svc):
    car, bus, _, _ = make(svc)
    assert bus.prescale == 101
    assert bus.frequency == pytest.approx(59.84, abs=0.01)
    prescale_writes = [w for w in bus.writes if w.register == PRESCALE]
    assert [w.value for w in prescale_writes] == [101]
    assert prescale_writes[0].sleeping, "PRE_SCALE must be written while MODE1.SLEEP is set"
    assert not bus.ignored_writes
    # the write before PRE_SCALE put the chip to sleep, the ones after woke and restarted it
    i = bus.writes.index(prescale_writes[0])
    assert bus.writes[i - 1].register == MODE1 and bus.writes[i - 1].value & SLEEP
    assert bus.writes[i + 1].register == MODE1 and not bus.writes[i + 1].value & SLEEP
    assert bus.writes[i + 2].register == MODE1 and bus.writes[i + 2].value & RESTART
    assert not bus.sleeping and bus.mode1 & AI
    assert bus.read_byte_data(0x40, MODE2) == 0x04             # totem-pole outputs
    assert car.pca.frequency == pytest.approx(25e6 / (4096 * 102))


def test_set_duty_extremes_use_full_bits():
    bus = FakePCA9685Bus()
    pca = PCA9685(bus, sleep=lambda s: None)
    pca.init(60)
    pca.set_duty(7, 1.0)
    assert bus.channel(7)["full_on"] and not bus.channel(7)["full_off"] and bus.duty(7) == 1.0
    pca.set_duty(7, 0.0)
    assert bus.channel(7)["full_off"] and bus.duty(7) == 0.0
    pca.set_duty(7, 0.25)
    assert bus.channel(7) == {"on": 0, "off": 1024, "full_on": False, "full_off": False}
    with pytest.raises(ValueError):
        pca.set_duty(16, 0.5)
    with pytest.raises(ValueError):
        pca.set_pwm(0, 0, 4096)


# ------------------------------------------------------------------------------------------
# Steering, pan/tilt
# ------------------------------------------------------------------------------------------
def test_steering_command_writes_led0_off_ticks(svc):
    car, bus, _, _ = make(svc)
    assert bus.channel(0) == {"on": 0, "off": 450, "full_on": False, "full_off": False}
    n = len(bus.writes)
    car.command(0.2, 0.0)
    ch0 = [(w.register, w.value) for w in bus.writes[n:] if led(0)["ON_L"] <= w.register <= led(0)["OFF_H"]]
    assert ch0 == [(0x06, 0), (0x07, 0), (0x08, 450 & 0xFF), (0x09, 450 >> 8)]
    car.command(0.2, 10.0)                  # hard left: clamped to max_angle -> 400 ticks
    assert bus.off_ticks(0) == 400 and car.last.steer == pytest.approx(0.45)
    car.command(0.2, -10.0)                 # hard right -> 500
    assert bus.off_ticks(0) == 500
    car.command(0.2, 0.5)                   # delta = atan(0.14 * 0.5 / 0.2)
    delta = math.atan(0.14 * 0.5 / 0.2)
    assert car.last.steer == pytest.approx(delta)
    assert bus.off_ticks(0) == round(450 - 50 * delta / 0.45)


def test_steering_at_standstill_and_reversing(svc):
    car, bus, _, _ = make(svc)
    car.command(0.0, 0.1)                   # no speed: wheels still turn left, proportionally
    assert car.last.steer == pytest.approx(math.atan(0.14 * 0.1 / 0.05))
    assert car.last.duty == 0 and bus.duty(4) == 0
    car.command(-0.2, 0.5)                  # reversing while turning left: wheels to the right
    assert car.last.steer == pytest.approx(math.atan(0.14 * 0.5 / -0.2))
    assert steering_angle(0.2, 0.5, 0.14, 0.45, 0.05) == pytest.approx(math.atan(0.35))
    assert steering_angle(0.1, 5.0, 0.14, 0.45, 0.05) == 0.45          # clamped
    # continuous at v = v_min
    assert steering_angle(0.0499999, 0.3, 0.14, 0.45, 0.05) == pytest.approx(steering_angle(0.05, 0.3, 0.14, 0.45, 0.05))


def test_ackermann_wheel_angles():
    left, right = ackermann_wheel_angles(0.3, 0.14, 0.104)
    assert left > 0.3 > right > 0                      # inner (left) wheel turns more
    # both wheels' normals meet on the rear axle line at the same turn centre
    assert 0.14 / math.tan(left) + 0.052 == pytest.approx(0.14 / math.tan(right) - 0.052)
    assert ackermann_wheel_angles(-0.3, 0.14, 0.104) == pytest.approx((-right, -left))
    assert ackermann_wheel_angles(0.0, 0.14, 0.104) == (0.0, 0.0)


def test_pan_tilt(svc, picar):
    car, bus, _, _ = make(svc)
    f = car.pca.frequency
    ticks = lambda us: round(us * f * 4096 / 1e6)  # noqa: E731
    assert bus.off_ticks(14) == ticks(1500) and bus.off_ticks(15) == ticks(1500)
    car.set_pan_tilt(0.5, -0.3)
    assert bus.off_ticks(14) == ticks(1500 + 0.5 * 573)
    assert bus.off_ticks(15) == ticks(1500 - 0.3 * 573)
    car.set_pan_tilt(tilt=3.0)              # clamped to the profile's max (2150 us)
    assert bus.off_ticks(15) == ticks(2150)
    car2, bus2, _, _ = make(picar)
    car2.set_pan_tilt(-0.2, 0.1)
    assert bus2.off_ticks(1) == ticks(1500 - 0.2 * 573) and bus2.off_ticks(2) == ticks(1500 + 0.1 * 573)


# ------------------------------------------------------------------------------------------
# Motors
# ------------------------------------------------------------------------------------------
def test_forward_command_sets_direction_pins_and_duty(svc):
    car, bus, gpio, _ = make(svc)
    assert gpio.levels == {17: 0, 18: 0, 27: 0, 22: 0}
    car.command(0.3, 0.0)                   # 0.3 / 0.6 m/s at full duty = 50 %
    assert gpio.levels == {17: 1, 18: 0, 27: 1, 22: 0}
    for ch in (4, 5):
        assert bus.channel(ch) == {"on": 0, "off": 2048, "full_on": False, "full_off": False}
    assert bus.output_duty(4) == 0.5
    n = len(gpio.history)
    car.command(-0.3, 0.0)
    assert gpio.levels == {17: 0, 18: 1, 27: 0, 22: 1}
    assert bus.duty(4) == 0.5 and car.last.duty == -0.5
    assert len(gpio.history) > n
    car.command(5.0, 0.0)                   # clamped to max_speed 0.4 m/s
    assert car.last.speed == 0.4 and bus.duty(4) == pytest.approx(round(0.4 / 0.6 * 4096) / 4096)
    car.command(0.0, 0.0)
    assert bus.duty(4) == bus.duty(5) == 0 and set(gpio.levels.values()) == {0}


def test_reversing_passes_through_zero_duty(svc):
    car, bus, _, _ = make(svc)
    car.command(0.3, 0.0)
    n = len(bus.writes)
    car.command(-0.3, 0.0)
    off_h4 = [w.value for w in bus.writes[n:] if w.register == led(4)["OFF_H"]]
    assert off_h4[0] == 0x10, "the duty must go to full OFF before the direction flips"


def test_motor_polarity_flag(svc, tmp_path):
    data = yaml.safe_load((REPO / "config" / "cars" / "smart_video_car.yaml").read_text())
    data["motors"]["b"]["reversed"] = True
    path = tmp_path / "flipped.yaml"
    path.write_text(yaml.safe_dump(data))
    car, _, gpio, _ = make(load_profile(str(path)))
    car.command(0.3, 0.0)
    assert gpio.levels == {17: 1, 18: 0, 27: 0, 22: 1}


def test_picar_v_uses_tb6612_and_microseconds(picar):
    car, bus, gpio, _ = make(picar)
    f = car.pca.frequency
    assert bus.off_ticks(0) == round(1500 * f * 4096 / 1e6)     # steering centre 1500 us
    car.command(0.3, 0.0)
    assert gpio.levels == {17: 1, 27: 1}
    assert bus.duty(4) == bus.duty(5) == 0.5
    car.command(-0.3, 0.0)
    assert gpio.levels == {17: 0, 27: 0} and bus.duty(4) == 0.5
    car.command(0.2, 10.0)                  # full left: 1050 us
    assert bus.off_ticks(0) == round(1050 * f * 4096 / 1e6)


# ------------------------------------------------------------------------------------------
# Watchdog, shutdown, errors
# ------------------------------------------------------------------------------------------
def test_watchdog_zeroes_motor_duty_after_timeout(svc):
    car, bus, gpio, clock = make(svc, watchdog_timeout=0.25)
    car.command(0.3, 0.2)
    clock.t += 0.2
    assert not car.check_watchdog()
    assert bus.duty(4) == 0.5
    clock.t += 0.1                           # 0.3 s since the command
    assert car.check_watchdog()
    assert bus.duty(4) == bus.duty(5) == 0 and set(gpio.levels.values()) == {0}
    assert "watchdog" in car.stop_reason and not car.running
    assert bus.off_ticks(0) == car.last.steer_ticks   # steering left alone
    assert not car.check_watchdog()          # already stopped: nothing more to do
    car.command(0.3, 0.0)                    # a fresh command restarts the motors
    assert bus.duty(4) == 0.5 and car.running


def test_shutdown_leaves_motors_off(svc):
    car, bus, gpio, _ = make(svc)
    car.command(0.4, 0.3)
    errors = car.shutdown()
    assert errors == []
    assert bus.duty(4) == bus.duty(5) == 0
    assert all(bus.duty(n) == 0 for n in range(16)), "every PWM output off after shutdown"
    assert set(gpio.levels.values()) == {0}
    assert gpio.closed and bus.closed
    assert car.shutdown() == []              # idempotent
    with pytest.raises(RuntimeError):
        car.command(0.1, 0.0)


def test_gpio_error_in_command_path_stops_motors(svc):
    car, bus, gpio, _ = make(svc)
    car.command(0.3, 0.0)
    gpio.fail = True
    with pytest.raises(OSError):
        car.command(-0.3, 0.0)
    assert bus.duty(4) == bus.duty(5) == 0, "duty must be zeroed when the pins fail"
    assert not car.running and "error" in car.stop_reason


def test_i2c_error_in_command_path_drops_direction_pins(svc):
    car, bus, gpio, _ = make(svc)
    car.command(0.3, 0.0)
    bus.fail = True
    with pytest.raises(OSError):
        car.command(0.35, 0.1)
    assert set(gpio.levels.values()) == {0}, "pins low stop the L298N even if I2C is gone"
    # the PWM could not be written: not recorded as stopped, and the watchdog tries again
    assert car.running and "STOP FAILED" in car.stop_reason and "after 3 attempts" in car.stop_reason


def test_non_finite_command_stops_motors(svc):
    car, bus, gpio, _ = make(svc)
    car.command(0.3, 0.0)
    with pytest.raises(ValueError, match="non-finite"):
        car.command(float("nan"), 0.0)
    assert bus.duty(4) == 0 and set(gpio.levels.values()) == {0}


def test_on_change_errors_do_not_break_control(svc):
    def boom():
        raise RuntimeError("reporting broke")
    car, bus, _, _ = make(svc, on_change=boom)
    car.command(0.3, 0.0)
    assert bus.duty(4) == 0.5


# ------------------------------------------------------------------------------------------
# Stopping: each bridge's truth table, retried writes, the fail-safe stop, the board's lock
# ------------------------------------------------------------------------------------------
def _profile_with(base: str, tmp_path, **motors) -> dict:
    data = yaml.safe_load((REPO / "config" / "cars" / f"{base}.yaml").read_text())
    data["motors"].update(motors)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_profile(str(path))


def _modes(car, bus, gpio) -> list[str]:
    """What each motor's bridge does now, read from the fakes through the bridge's truth table."""
    motors = car.profile["motors"]
    return [bridge_mode(motors["driver"], [gpio.levels[p] for p in m["pins"]], bus.duty(m["pwm_channel"]))
            for m in (motors["a"], motors["b"])]


def test_an_l298n_stop_is_its_free_running_stop(svc):
    car, bus, gpio, _ = make(svc)
    car.command(0.3, 0.0)
    assert _modes(car, bus, gpio) == ["forward", "forward"]
    car.stop()
    assert _modes(car, bus, gpio) == ["coast", "coast"] and set(gpio.levels.values()) == {0}


def test_a_tb6612_stop_leaves_both_direction_pins_in_the_coast_state(tmp_path):
    """TB6612 with IN1 and IN2 wired: the stop is IN1 = IN2 = L, the data sheet's 'stop'
    (outputs off, the motor coasts), not a reverse direction; PWM low as well."""
    profile = _profile_with("picar_v", tmp_path, a={"pwm_channel": 4, "pins": [17, 18], "reversed": False},
                            b={"pwm_channel": 5, "pins": [27, 22], "reversed": False})
    car, bus, gpio, _ = make(profile)
    assert _modes(car, bus, gpio) == ["coast", "coast"]           # set up stopped
    car.command(-0.3, 0.0)
    assert gpio.levels == {17: 0, 18: 1, 27: 0, 22: 1} and _modes(car, bus, gpio) == ["backward", "backward"]
    car.stop()
    assert gpio.levels == {17: 0, 18: 0, 27: 0, 22: 0}, "both direction pins low: the TB6612's stop"
    assert bus.duty(4) == bus.duty(5) == 0 and _modes(car, bus, gpio) == ["coast", "coast"]
    assert car.motors.stop_mode.startswith("coast")


def test_a_one_pin_tb6612_stop_brakes_and_never_flips_the_direction(picar):
    """The PiCar-V's board derives IN2 from the one direction pin: coasting is impossible, the
    stop is PWM low (short brake) and the direction pin stays where it was; a stop whose PWM
    write fails leaves the motor going the same way (not reversed at speed)."""
    car, bus, gpio, _ = make(picar)
    car.command(0.3, 0.0)
    assert gpio.levels == {17: 1, 27: 1}
    car.stop()
    assert gpio.levels == {17: 1, 27: 1} and bus.duty(4) == bus.duty(5) == 0
    assert _modes(car, bus, gpio) == ["brake", "brake"] and car.motors.stop_mode.startswith("short brake")
    car.command(0.3, 0.0)
    bus.fail = True
    errors = car.stop()
    assert errors and gpio.levels == {17: 1, 27: 1}                # not flipped to reverse
    assert car.running and "STOP FAILED" in car.stop_reason


def test_a_glitching_i2c_write_in_the_stop_is_retried(svc):
    car, bus, gpio, _ = make(svc)
    car.command(0.3, 0.0)
    bus.fail_next = 2                       # the next two accesses fail, the third succeeds
    assert car.stop("test") == []
    assert not car.running and car.stop_reason == "test" and bus.duty(4) == bus.duty(5) == 0


def test_a_failing_i2c_write_is_retried_then_reported_never_recorded_as_stopped(svc):
    car, bus, gpio, clock = make(svc)
    car.command(0.3, 0.0)
    bus.fail = True
    n = len(bus.writes)
    errors = car.stop("test")
    assert [str(e).split(":")[0] for e in errors] == ["PWM channel 4 off", "PWM channel 5 off"]
    assert all("after 3 attempts" in str(e) for e in errors)
    assert len(bus.writes) == n                                    # nothing reached the chip
    assert car.running and "STOP FAILED" in car.stop_reason and car.status()["running"]
    clock.t += 1.0
    bus.fail = False                        # the chip answers again: the watchdog's next try stops it
    assert car.check_watchdog() and not car.running and bus.duty(4) == 0
    car.command(0.3, 0.0)
    bus.fail = True
    errors = car.shutdown("test")
    assert any("every PWM output off" in str(e) for e in errors), errors


def test_the_failsafe_stop_turns_every_output_off_retrying_and_reports_a_dead_chip(svc, tmp_path):
    from netloop.car_driver.board import fake_device_file, fake_levels_file
    from netloop.car_driver.failsafe import stop_board
    car = CarController(svc, FakePCA9685Bus(device_file=fake_device_file(str(tmp_path))),
                        FakeGPIO(levels_file=fake_levels_file(str(tmp_path))), sleep=lambda s: None)
    car.start()
    car.command(0.3, 0.2)
    car.set_pan_tilt(0.2, 0.1)
    # another process's view of the same board (what the fail-safe stop opens after the driver died)
    bus, gpio = FakePCA9685Bus(device_file=fake_device_file(str(tmp_path))), FakeGPIO(fake_levels_file(str(tmp_path)))
    assert bus.duty(4) == 0.5 and gpio.levels == {17: 1, 18: 0, 27: 1, 22: 0}
    bus.fail_next = 3
    assert stop_board(bus, FakeGPIO(fake_levels_file(str(tmp_path))), svc, sleep=lambda s: None) == []
    assert all(car.bus.duty(n) == 0 for n in range(16)) and set(car.gpio.levels.values()) == {0}
    bus.fail = True                         # disconnected (for every process: the flag is the chip's)
    assert car.bus.fail
    errors = stop_board(bus, gpio, svc, attempts=4, sleep=lambda s: None)
    assert errors[0].startswith("every PWM output off:") and "after 4 attempts" in errors[0], errors
    assert [e.split(":")[0] for e in errors] == ["every PWM output off", "PWM channel 4 off", "PWM channel 5 off"]


def test_a_second_driver_of_the_board_is_refused_naming_the_first(svc, tmp_path):
    from netloop.car_driver.board import BoardLock, describe, is_free, lock_path
    path = lock_path(svc["pwm"], str(tmp_path))
    assert is_free(path) == (True, "")
    first = BoardLock(path, describe(svc["pwm"], str(tmp_path))).acquire()
    free, holder = is_free(path)
    assert not free and holder.startswith(f"pid {os.getpid()}: ")
    with pytest.raises(HardwareError) as err:
        BoardLock(path, describe(svc["pwm"], str(tmp_path))).acquire()
    assert f"is in use by another process (pid {os.getpid()}: " in str(err.value)
    assert "PCA9685 at 0x40 on the fake board" in str(err.value)
    first.release()
    assert is_free(path)[0]
    assert lock_path(svc["pwm"]).endswith("netloop-car-i2c1-0x40.lock")


# ------------------------------------------------------------------------------------------
# Calibration and profiles
# ------------------------------------------------------------------------------------------
def test_bad_calibration_is_refused_with_the_allowed_range(svc):
    bus = FakePCA9685Bus()
    pca = PCA9685(bus, sleep=lambda s: None)
    pca.init(60)
    steering = Steering(pca, svc["steering"], tuple(svc["servo_range_us"]))
    steering.calibrate(20)
    steering.center()
    assert bus.off_ticks(0) == 470
    with pytest.raises(CalibrationError) as err:
        steering.calibrate(200)
    msg = str(err.value)
    assert "outside the servo's range 147..588 ticks" in msg and "allowed offsets: -253..+88" in msg
    assert steering.offset == 20                          # unchanged
    with pytest.raises(CalibrationError):
        steering.calibrate(float("nan"))
    with pytest.raises(CalibrationError):
        CarController(svc, FakePCA9685Bus(), FakeGPIO(), steering_offset=-400,
                      sleep=lambda s: None).start()


def test_profile_offset_outside_servo_range_is_a_config_error(tmp_path):
    data = yaml.safe_load((REPO / "config" / "cars" / "smart_video_car.yaml").read_text())
    data["steering"]["offset"] = 150
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"steering\.center: .*outside servo_range_us"):
        load_profile(str(path))


def test_unknown_profile_lists_the_available_ones():
    assert available_profiles() == ["picar_v", "smart_video_car"]
    with pytest.raises(ConfigError) as err:
        load_profile("smart_car")
    msg = str(err.value)
    assert "unknown car profile 'smart_car'" in msg and "picar_v, smart_video_car" in msg
    assert "did you mean 'smart_video_car'" in msg


@pytest.mark.parametrize("change, key", [
    (lambda d: d["motors"]["a"].update(pins=[17]), "motors.a.pins"),
    (lambda d: d["motors"].update(driver="drv8833"), "motors.driver"),
    (lambda d: d["steering"].update(chanel=0), "steering.chanel"),
    (lambda d: d["pwm"].update(frequency=5000), "pwm.frequency"),
    (lambda d: d["pan"].update(channel=4), "<top level>"),
    (lambda d: d["kinematics"].update(max_speed=2.0), "kinematics.max_speed"),
])
def test_profile_errors_name_the_key(tmp_path, change, key):
    data = yaml.safe_load((REPO / "config" / "cars" / "smart_video_car.yaml").read_text())
    change(data)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as err:
        load_profile(str(path))
    assert f": {key}: " in str(err.value), str(err.value)


def test_profiles_carry_the_kit_wiring(svc, picar):
    assert svc["pwm"] == {"bus": 1, "address": 0x40, "frequency": 60.0}
    assert (svc["steering"]["left"], svc["steering"]["center"], svc["steering"]["right"]) == (400, 450, 500)
    assert (svc["pan"]["channel"], svc["tilt"]["channel"]) == (14, 15)
    assert svc["motors"]["a"] == {"pwm_channel": 4, "pins": [17, 18], "reversed": False}
    assert svc["motors"]["b"] == {"pwm_channel": 5, "pins": [27, 22], "reversed": False}
    assert (picar["pan"]["channel"], picar["tilt"]["channel"]) == (1, 2)
    assert picar["servo_range_us"] == [600, 2400] and picar["motors"]["driver"] == "tb6612"
    assert picar["motors"]["a"]["pins"] == [17] and picar["motors"]["b"]["pins"] == [27]


def test_calibrate_cli_with_fake_hardware(capsys):
    assert calibrate.main(["--hardware", "fake", "--offset", "-10"]) == 0
    assert "offset: -10" in capsys.readouterr().out
    assert calibrate.main(["--hardware", "fake", "--offset", "500"]) == 2
    assert "allowed offsets" in capsys.readouterr().err
    assert calibrate.main(["--hardware", "fake", "--car", "nope"]) == 2
    assert "unknown car profile" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------
# Camera, optional libraries
# ------------------------------------------------------------------------------------------
def test_fake_camera_frames_encode_as_jpeg():
    cam = FakeCamera(320, 240)
    a, b = cam.read(), cam.read()
    assert a.shape == (240, 320, 3) and a.dtype.name == "uint8" and (a != b).any()
    jpeg = encode_jpeg(a, 75)
    assert jpeg[:2] == b"\xff\xd8" and jpeg[-2:] == b"\xff\xd9" and len(jpeg) < 320 * 240
    small = encode_jpeg(a, 75, size=(160, 120))
    assert len(small) < len(jpeg)


def test_real_i2c_without_smbus2_says_how_to_install():
    if importlib.util.find_spec("smbus2") is not None:
        pytest.skip("smbus2 is installed here")
    with pytest.raises(HardwareError, match="pip install smbus2"):
        SMBusI2C(1)


def test_node_hardware_choice_is_validated(svc, tmp_path):
    from netloop.car_driver.car_node import Hardware
    hw = Hardware("fake", svc, fake_dir=str(tmp_path))
    assert isinstance(hw.bus, FakePCA9685Bus) and isinstance(hw.gpio, FakeGPIO)
    with pytest.raises(ConfigError, match="allowed: real, fake"):
        Hardware("simulated", svc)


def test_dead_reckoning_drives_straight_and_on_the_bicycle_models_circle():
    import math
    from netloop.car_driver.odometry import DeadReckoning
    odom = DeadReckoning(wheelbase=0.14)
    for _ in range(100):                       # 2 s at 0.3 m/s, wheels straight: 0.6 m along x
        odom.step(0.3, 0.0, 0.02)
    assert odom.x == pytest.approx(0.6) and odom.y == pytest.approx(0.0) and odom.yaw == 0.0
    odom = DeadReckoning(wheelbase=0.14)
    delta = 0.3                                # radius L / tan(delta) about the rear axle
    radius = 0.14 / math.tan(delta)
    quarter = (math.pi / 2) * radius / 0.2     # time for a quarter circle at 0.2 m/s
    steps = 2000
    for _ in range(steps):
        odom.step(0.2, delta, quarter / steps)
    assert odom.yaw == pytest.approx(math.pi / 2, abs=1e-6)      # + = left (REP-103)
    assert (odom.x, odom.y) == (pytest.approx(radius, abs=1e-4), pytest.approx(radius, abs=1e-4))
    assert odom.omega == pytest.approx(0.2 * math.tan(delta) / 0.14)
    with pytest.raises(ValueError):
        DeadReckoning(wheelbase=0)
