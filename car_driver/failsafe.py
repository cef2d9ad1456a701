"""The fail-safe stop: a process of its own that stops the car's motors after ANY end of the driver.

The driver's own shutdown stops the motors on SIGINT, SIGTERM, an exception or a normal exit;
it cannot on SIGKILL, the OOM killer or a crash in C code, and the PCA9685 then keeps its last
duty cycle. So the driver starts this supervisor before it drives (:func:`start`): a separate
process in a session of its own (a signal to the driver's process group does not reach it, and
it does not die with the driver), whose standard input is a pipe that only the driver holds open.
However the driver ends, the kernel closes that pipe; the supervisor reads its end, and then

1. opens the bus and the pins itself (the real ones, or the same fake board's files),
2. writes every PWM output full-off (the ALL_LED registers) and each motor's channel off, and
   sets the motor pins to their bridge's stop levels (:data:`.actuators.BRIDGES`),
   every write retried (:func:`.actuators.retried`: a pin the dying driver still holds is free
   a moment later),
3. records what it did as JSON (``--record``; beside the remote wrappers' records in a run, in
   their form: 'command', 'kind' ``failsafe``, when the driver's end was seen, when the motors
   were off, 'stopped', each error), and exits 0 when stopped, 1 when a write failed every time
   — never recording a failed stop as a stop.

It also holds the board's lock (:class:`.board.BoardLock`, inherited), so no other driver can
take the board before the motors are stopped, and it stops the motors the same way on SIGTERM,
SIGINT or SIGHUP of its own. Needs the standard library and the car's libraries only
(robot-side, Python 3.8).
"""
from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from typing import List, Optional

from .actuators import StopFailed, retried, safe_outputs
from .hardware import HardwareError
from .pca9685 import PCA9685

#: each write of the stop is tried this often, this many seconds apart (0.3 s in all: a real
#: GPIO line the dead driver held is released as the kernel closes its files)
ATTEMPTS, PAUSE = 15, 0.02
#: how long the driver waits for the supervisor to say it is watching [s]
READY_TIMEOUT = 10.0


def stop_board(bus, gpio, profile: dict, attempts: int = ATTEMPTS, pause: float = PAUSE,
               sleep=time.sleep) -> List[str]:
    """Every PWM output of the PCA9685 off, then each motor's channel off, then the motor pins
    to their stop levels; every write retried. Returns the errors, one line each ([]: stopped)."""
    errors = []
    pca = PCA9685(bus, profile["pwm"]["address"], sleep=sleep)
    channels, levels = safe_outputs(profile["motors"])
    steps = [("every PWM output off", pca.all_off)]
    steps += [(f"PWM channel {ch} off", lambda ch=ch: pca.set_duty(ch, 0.0)) for ch in channels]
    for what, action in steps:
        try:
            retried(action, attempts, pause, sleep)
        except StopFailed as err:
            errors.append(f"{what}: {err}")
    for pin, level in sorted(levels.items()):
        try:
            retried(lambda pin=pin, level=level: gpio.setup_output(pin, level), attempts, pause, sleep)
        except StopFailed as err:
            errors.append(f"GPIO {pin} to {level}: {err}")
    return errors


def open_hardware(profile: dict, hardware: str, gpio_backend: str, fake_dir: Optional[str],
                  attempts: int = ATTEMPTS, pause: float = PAUSE):
    """(bus, gpio) of the car, real or the fake board in ``fake_dir``; opening is retried too.
    HardwareError when either cannot be opened."""
    from .board import fake_device_file, fake_levels_file  # noqa: PLC0415
    from .fakes import FakeGPIO, FakePCA9685Bus  # noqa: PLC0415
    from .hardware import SMBusI2C, open_gpio  # noqa: PLC0415
    if hardware == "fake":
        return (FakePCA9685Bus(profile["pwm"]["address"], device_file=fake_device_file(fake_dir)),
                FakeGPIO(levels_file=fake_levels_file(fake_dir)))
    opened = []
    try:
        retried(lambda: opened.append(SMBusI2C(profile["pwm"]["bus"])), attempts, pause)
        retried(lambda: opened.append(open_gpio(gpio_backend)), attempts, pause)
    except StopFailed as err:
        for device in opened:
            device.close()
        raise HardwareError(f"cannot open the car's hardware to stop it: {err}") from None
    return opened[0], opened[1]


def _wait_for_the_driver(stdin_fd: int, stop_signal: List[str]) -> str:
    """Block until the driver's pipe ends (EOF) or a signal asks to stop; why."""
    while not stop_signal:
        try:
            ready, _, _ = select.select([stdin_fd], [], [], 0.5)
        except InterruptedError:
            continue
        if ready:
            try:
                data = os.read(stdin_fd, 4096)
            except OSError:
                data = b""
            if not data:
                return "the driver ended (its pipe closed)"
    return f"got {stop_signal[0]}"


def _write_record(path: Optional[str], record: dict) -> None:
    if not path:
        return
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(record, f, indent=1)
        os.replace(path + ".tmp", path)
    except OSError as err:
        print(f"car failsafe: cannot write its record {path}: {err}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    from .profiles import load_profile  # noqa: PLC0415
    parser = argparse.ArgumentParser(prog="python3 -m netloop.car_driver.failsafe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--car", required=True, help="car profile name or file")
    parser.add_argument("--hardware", choices=("real", "fake"), default="real")
    parser.add_argument("--gpio-backend", default="auto")
    parser.add_argument("--fake-device-dir", default="", help="fake hardware: the fake board's folder")
    parser.add_argument("--driver-pid", type=int, default=None, help="the driver's pid (recorded)")
    parser.add_argument("--record", default="", help="write what was done here (JSON)")
    parser.add_argument("--remove-fake-dir", action="store_true",
                        help="remove the fake board's folder once stopped (the driver made it for itself)")
    args = parser.parse_args(argv)
    stop_signal: List[str] = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _f: stop_signal.append(signal.Signals(signum).name))
    profile = load_profile(args.car)
    print("watching", flush=True)
    why = _wait_for_the_driver(sys.stdin.fileno(), stop_signal)
    seen = time.time()
    errors: List[str] = []
    try:
        bus, gpio = open_hardware(profile, args.hardware, args.gpio_backend, args.fake_device_dir or None)
    except HardwareError as err:
        errors.append(str(err))
    else:
        errors = stop_board(bus, gpio, profile)
        for device in (gpio, bus):
            try:
                device.close()
            except Exception:  # noqa: BLE001 - closing after the stop: what matters is written
                pass
    done = time.time()
    stopped = not errors
    _write_record(args.record, {"command": ["car_failsafe"], "kind": "failsafe", "driver_pid": args.driver_pid,
                                "why": why, "seen": round(seen, 4),
                                "done": round(done, 4), "stopped": stopped, "errors": errors,
                                "hardware": args.hardware, "car": profile["name"]})
    if args.remove_fake_dir and args.fake_device_dir:
        shutil.rmtree(args.fake_device_dir, ignore_errors=True)
    line = (f"car failsafe: {why}; motors stopped in {done - seen:.3f} s" if stopped else
            f"car failsafe: {why}; STOP FAILED: " + "; ".join(errors))
    try:   # the driver's output may be gone with it
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass
    return 0 if stopped else 1


class Supervisor:
    """The running supervisor of one driver (:func:`start`)."""

    def __init__(self, process: subprocess.Popen, pipe_fd: int):
        self.process, self._pipe_fd = process, pipe_fd

    def release(self) -> None:
        """Close the driver's end of the pipe now (the supervisor stops the motors and exits);
        it is closed anyway when the driver's process ends."""
        if self._pipe_fd is not None:
            os.close(self._pipe_fd)
            self._pipe_fd = None


def start(car: str, hardware: str, gpio_backend: str = "auto", fake_dir: Optional[str] = None,
          record: Optional[str] = None, lock_fd: Optional[int] = None, remove_fake_dir: bool = False) -> Supervisor:
    """Start the supervisor for this process (the driver) and wait until it watches; it holds
    ``lock_fd`` (the board's lock) too. HardwareError when it does not start."""
    read_end, write_end = os.pipe()          # both not inherited by default: the child gets read_end as stdin
    argv = [sys.executable, "-m", "netloop.car_driver.failsafe", "--car", car, "--hardware", hardware,
            "--gpio-backend", gpio_backend, "--driver-pid", str(os.getpid())]
    if fake_dir:
        argv += ["--fake-device-dir", fake_dir]
    if record:
        argv += ["--record", record]
    if remove_fake_dir:
        argv.append("--remove-fake-dir")
    try:
        process = subprocess.Popen(argv, stdin=read_end, stdout=subprocess.PIPE, start_new_session=True,
                                   pass_fds=() if lock_fd is None else (lock_fd,), close_fds=True)
    except OSError as err:
        os.close(read_end)
        os.close(write_end)
        raise HardwareError(f"cannot start the car's fail-safe stop: {err}") from None
    os.close(read_end)
    ready, _, _ = select.select([process.stdout], [], [], READY_TIMEOUT)
    line = process.stdout.readline().decode(errors="replace").strip() if ready else ""
    process.stdout.close()
    if line != "watching":
        os.close(write_end)
        if process.poll() is None:
            process.kill()
        process.wait()
        raise HardwareError(f"the car's fail-safe stop did not start (exit status {process.returncode}); "
                            f"its errors are above in this log")
    return Supervisor(process, write_end)


if __name__ == "__main__":
    sys.exit(main())
