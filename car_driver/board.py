"""The car's board as one thing a process holds: its lock, and what a pre-run check asks of it.

Only one process may drive the PCA9685 and the motor pins: two drivers (a ``car.launch``
started by hand and a run's) would fight over every register. The driver takes
:class:`BoardLock` before it opens the bus; a second driver is refused naming the holder. The
lock is an ``flock`` of a file named after the bus and address (``/run/lock`` when writable, the
temporary folder otherwise; a fake board's own folder), so it ends with the process that holds
it, whatever ends that process; the fail-safe stop (:mod:`.failsafe`) holds it too, until it
has stopped the motors.

``python3 -m netloop.car_driver.board probe --car NAME --hardware real|fake`` is what the
operator's pre-run check runs on the robot (over SSH, :mod:`netloop.car_checks`): ``key=value``
lines saying whether the PCA9685 answers at its address, whether the board is free, and with
``--camera`` whether the camera is there.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import sys
import tempfile
from typing import Optional

from .hardware import HardwareError

#: where a real board's lock lives (the first writable folder)
LOCK_DIRS = ("/run/lock", tempfile.gettempdir())
#: the PCA9685's MODE1 register: reading it asks the chip whether it is there
_MODE1 = 0x00


def lock_path(pwm: dict, fake_dir: Optional[str] = None) -> str:
    """The lock file of the board at ``pwm`` (a profile's ``pwm``: bus, address); a fake
    board's in its own folder."""
    if fake_dir:
        return os.path.join(fake_dir, "board.lock")
    name = f"netloop-car-i2c{pwm['bus']}-0x{pwm['address']:02x}.lock"
    folder = next((d for d in LOCK_DIRS if os.access(d, os.W_OK)), LOCK_DIRS[-1])
    return os.path.join(folder, name)


def describe(pwm: dict, fake_dir: Optional[str] = None) -> str:
    where = f"the fake board in {fake_dir}" if fake_dir else f"/dev/i2c-{pwm['bus']}"
    return f"the car's board (PCA9685 at 0x{pwm['address']:02x} on {where})"


class BoardLock:
    """An exclusive lock of the car's board, held until :meth:`release` or the end of every
    process holding its descriptor (:attr:`fd`, which the fail-safe stop inherits)."""

    def __init__(self, path: str, what: str):
        self.path, self.what = path, what
        self.fd: Optional[int] = None

    def acquire(self) -> "BoardLock":
        """Take the lock; HardwareError naming the process that holds it otherwise."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = holder_of(fd)
            os.close(fd)
            raise HardwareError(f"{self.what} is in use by another process ({holder}): stop it first "
                                f"(a car.launch started by hand, or an earlier run's driver)") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {_command_line(os.getpid())}\n".encode())
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def holder_of(fd: int) -> str:
    """Who holds a lock file, as its holder wrote it: 'pid N: command line'."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 4096).decode(errors="replace").strip()
    except OSError:
        text = ""
    pid, _, command = text.partition(" ")
    return f"pid {pid}: {command}" if pid.isdigit() else "a process that did not say which"


def is_free(path: str) -> tuple[bool, str]:
    """(free, holder) of the lock at ``path``, without keeping it."""
    if not os.path.exists(path):
        return True, ""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False, holder_of(fd)
    finally:
        os.close(fd)   # releases it, if it was taken here
    return True, ""


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:300]
    except OSError:
        return "?"


# --- the pre-run probe ------------------------------------------------------------------------
def probe_pca9685(profile: dict, hardware: str, fake_dir: Optional[str]) -> str:
    """'ok' when the PCA9685 answers a read of MODE1 at its address, else why not."""
    from .fakes import FakePCA9685Bus  # noqa: PLC0415
    from .hardware import SMBusI2C  # noqa: PLC0415
    pwm = profile["pwm"]
    try:
        if hardware == "fake":
            bus = FakePCA9685Bus(pwm["address"], device_file=fake_device_file(fake_dir) if fake_dir else None)
        else:
            bus = SMBusI2C(pwm["bus"])
    except HardwareError as err:
        return str(err)
    try:
        bus.read_byte_data(pwm["address"], _MODE1)
        return "ok"
    except OSError as err:
        return f"no answer at 0x{pwm['address']:02x} on I2C bus {pwm['bus']} ({err})"
    finally:
        bus.close()


def probe_camera(device, hardware: str) -> str:
    """'ok' when the car's camera is there for the driver (fake hardware: always), else why not."""
    if hardware == "fake":
        return "ok"
    path = device if isinstance(device, str) and device.startswith("/") else f"/dev/video{device}"
    if not os.path.exists(path):
        return f"no camera at {path}"
    if not os.access(path, os.R_OK | os.W_OK):
        return f"{path} is not readable by this user (add it to the group video)"
    import importlib.util  # noqa: PLC0415
    if importlib.util.find_spec("cv2") is None:
        return "OpenCV (cv2) is not installed"
    return "ok"


def fake_device_file(fake_dir: str) -> str:
    """The fake PCA9685's register file in a fake board's folder."""
    return os.path.join(fake_dir, "pca9685.regs")


def fake_levels_file(fake_dir: str) -> str:
    """The fake GPIO's levels file in a fake board's folder."""
    return os.path.join(fake_dir, "gpio.levels")


def main(argv=None) -> int:
    from .profiles import load_profile  # noqa: PLC0415
    parser = argparse.ArgumentParser(prog="python3 -m netloop.car_driver.board")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe", help="key=value lines: pca9685, board_lock, camera (with --camera)")
    p.add_argument("--car", default="smart_video_car", help="car profile name or file")
    p.add_argument("--hardware", choices=("real", "fake"), default="real")
    p.add_argument("--fake-device-dir", default="", help="fake hardware: the fake board's folder")
    p.add_argument("--camera", action="store_true", help="also check the camera")
    p.add_argument("--camera-device", default=None, help="camera index or path (default: the profile's)")
    args = parser.parse_args(argv)
    profile = load_profile(args.car)
    fake_dir = args.fake_device_dir or None
    print(f"pca9685={probe_pca9685(profile, args.hardware, fake_dir)}")
    if args.hardware == "real" or fake_dir:
        free, holder = is_free(lock_path(profile["pwm"], fake_dir if args.hardware == "fake" else None))
        print("board_lock=free" if free else f"board_lock={holder}")
    if args.camera:
        device = args.camera_device if args.camera_device is not None else profile["camera"]["device"]
        if isinstance(device, str) and device.isdigit():
            device = int(device)
        print(f"camera={probe_camera(device, args.hardware)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
