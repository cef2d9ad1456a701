"""Register-level fakes of the car's hardware, for tests and for running without a car.

:class:`FakePCA9685Bus` is an I2C bus with one NXP PCA9685 on it, modelled from the data
sheet as far as the driver can observe it:

* ``MODE1`` (0x00): power-up value 0x11 (SLEEP | ALLCALL). Bit 7 RESTART reads 1 when the chip
  was put to sleep while PWM outputs were running; writing 1 to it (with SLEEP clear) restarts
  them and clears it; writing 0 to it changes nothing. Bit 5 AI (auto-increment) and bit 4
  SLEEP are stored as written.
* ``PRE_SCALE`` (0xFE): power-up 0x1E (200 Hz). The chip only accepts a write while SLEEP is
  set; a write while awake is ignored (and recorded in :attr:`ignored_writes`). Values below
  3 are clamped to 3 by the chip.
* ``LEDn_ON_L/ON_H/OFF_L/OFF_H`` at ``0x06 + 4 n``: 12-bit ON/OFF tick counts, bit 4 of the
  ``_H`` registers is full-ON / full-OFF (full-OFF wins). Power-up: every output full-OFF.
* ``ALL_LED_ON_L .. ALL_LED_OFF_H`` (0xFA..0xFD): a write loads that register of all 16
  channels; they read back as 0.

Every write is logged in :attr:`writes` with the MODE1 value at the time, so a test can ask
"was PRE_SCALE written while SLEEP was set?". ``fail = True`` makes every access raise
``OSError(121, 'Remote I/O error')``, like a disconnected chip; ``fail_next = n`` only the next
``n`` accesses (a bus that glitches).

A real chip outlives the process that drives it; so do these fakes when given a file
(``FakePCA9685Bus(device_file=...)``, ``FakeGPIO(levels_file=...)``): their registers and pin
levels then live in it (memory-mapped, every access under a lock of the file), and another
process opening the same file sees the same chip: the fail-safe stop (:mod:`.failsafe`) stops a
fake car whose driver was killed as it stops a real one, and a test reads what it wrote. A
shared chip's ``fail`` is shared too (set by any process: the chip is disconnected for all).

Robot-side (Python 3.8, :mod:`netloop.robot_side`): numpy is imported only by
:class:`FakeCamera`, whose frames are numpy arrays as OpenCV's are.
"""
from __future__ import annotations

import fcntl
import mmap
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

from .hardware import GPIO, Camera, I2CBus

MODE1, MODE2, PRESCALE = 0x00, 0x01, 0xFE
LED0_ON_L, ALL_LED_ON_L = 0x06, 0xFA
RESTART, AI, SLEEP, ALLCALL = 0x80, 0x20, 0x10, 0x01
FULL = 0x10   # bit 4 of LEDn_ON_H / LEDn_OFF_H


@dataclass(frozen=True)
class Write:
    register: int
    value: int
    mode1_before: int      # MODE1 as stored when the write arrived

    @property
    def sleeping(self) -> bool:
        return bool(self.mode1_before & SLEEP)


class SharedBytes:
    """``size`` bytes in this process's memory, or in ``path`` (created holding ``initial``)
    shared by every process that opens it; indexing and slicing as a bytearray's. :meth:`locked`
    holds a lock of the file (and of this process) around a read-modify-write."""

    def __init__(self, size: int, initial: bytes, path: Optional[str] = None):
        self.path = path
        self._thread_lock = threading.RLock()
        if path is None:
            self._data = bytearray(initial)
            self._fd = None
            return
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            if os.fstat(self._fd).st_size != size:
                os.ftruncate(self._fd, 0)
                os.write(self._fd, bytes(initial))
            self._data = mmap.mmap(self._fd, size)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def __getitem__(self, index):
        return self._data[index]

    def __setitem__(self, index, value):
        self._data[index] = value

    @contextmanager
    def locked(self):
        with self._thread_lock:
            if self._fd is None:
                yield
                return
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            self._data.close()
            os.close(self._fd)
            self._fd = None


class SharedFlag:
    """A boolean attribute kept in one byte of the owner's :class:`SharedBytes` (named by
    ``store``), so that every process sharing the file sees it: 0 is false, 1 true."""

    def __init__(self, store: str, index: int):
        self.store, self.index = store, index

    def __get__(self, owner, cls=None):
        if owner is None:
            return self
        return bool(getattr(owner, self.store)[self.index])

    def __set__(self, owner, value) -> None:
        getattr(owner, self.store)[self.index] = 1 if value else 0


#: a shared chip's file: the 256 registers, then the RESTART-pending flag and the fail switch
_RESTART_PENDING, _FAIL, _DEVICE_SIZE = 256, 257, 258


def _power_up_registers() -> bytes:
    regs = bytearray(_DEVICE_SIZE)
    regs[MODE1] = SLEEP | ALLCALL
    regs[MODE2] = 0x04
    regs[PRESCALE] = 0x1E
    for n in range(16):
        regs[LED0_ON_L + 4 * n + 3] = FULL
    return bytes(regs)


class FakePCA9685Bus(I2CBus):
    """An I2C bus with a PCA9685 at ``address``; other addresses raise like a missing device.
    ``device_file``: the chip's registers live in that file (shared with other processes)."""

    fail = SharedFlag("regs", _FAIL)
    _restart_pending = SharedFlag("regs", _RESTART_PENDING)

    def __init__(self, address: int = 0x40, osc_hz: float = 25e6, device_file: Optional[str] = None):
        self.address, self.osc_hz = address, osc_hz
        self.regs = SharedBytes(_DEVICE_SIZE, _power_up_registers(), device_file)
        self.writes: list[Write] = []
        self.ignored_writes: list[Write] = []
        self.fail_next = 0
        self.closed = False
        self._lock = self.regs.locked

    # -- I2CBus ---------------------------------------------------------------------------
    def _check(self, address: int):
        if self.fail_next > 0:
            self.fail_next -= 1
            raise OSError(121, "Remote I/O error (fake PCA9685 glitching)")
        if self.fail:
            raise OSError(121, "Remote I/O error (fake PCA9685 set to fail)")
        if address != self.address:
            raise OSError(121, f"Remote I/O error: no device at 0x{address:02x} "
                               f"(the fake PCA9685 is at 0x{self.address:02x})")

    def write_byte_data(self, address, register, value):
        with self._lock():
            self._check(address)
            if not (0 <= register <= 0xFF and 0 <= value <= 0xFF):
                raise ValueError(f"register/value out of byte range: {register!r}, {value!r}")
            w = Write(register, value, self._mode1_read())
            self.writes.append(w)
            if register == MODE1:
                self._write_mode1(value)
            elif register == PRESCALE:
                if self.regs[MODE1] & SLEEP:
                    self.regs[PRESCALE] = max(3, value)
                else:
                    self.ignored_writes.append(w)
            elif ALL_LED_ON_L <= register <= ALL_LED_ON_L + 3:
                for n in range(16):
                    self.regs[LED0_ON_L + 4 * n + (register - ALL_LED_ON_L)] = value
            elif register == MODE2 or LED0_ON_L <= register < LED0_ON_L + 64 or 0x02 <= register <= 0x05:
                self.regs[register] = value
            else:
                raise ValueError(f"write to reserved PCA9685 register 0x{register:02x}")

    def read_byte_data(self, address, register):
        with self._lock():
            self._check(address)
            if register == MODE1:
                return self._mode1_read()
            if ALL_LED_ON_L <= register <= ALL_LED_ON_L + 3:
                return 0
            return self.regs[register]

    def close(self):
        self.closed = True

    # -- MODE1 semantics --------------------------------------------------------------------
    def _mode1_read(self) -> int:
        return (self.regs[MODE1] & 0x7F) | (RESTART if self._restart_pending else 0)

    def _write_mode1(self, value: int):
        was_asleep = bool(self.regs[MODE1] & SLEEP)
        going_to_sleep = bool(value & SLEEP) and not was_asleep
        if going_to_sleep and self._any_output_running():
            self._restart_pending = True
        if value & RESTART and not value & SLEEP and self._restart_pending:
            self._restart_pending = False
        self.regs[MODE1] = value & 0x7F

    def _any_output_running(self) -> bool:
        return any(self.duty(n) > 0 for n in range(16))

    # -- inspection helpers for tests -------------------------------------------------------
    @property
    def mode1(self) -> int:
        return self._mode1_read()

    @property
    def prescale(self) -> int:
        return self.regs[PRESCALE]

    @property
    def sleeping(self) -> bool:
        return bool(self.regs[MODE1] & SLEEP)

    @property
    def frequency(self) -> float:
        return self.osc_hz / (4096 * (self.prescale + 1))

    def channel(self, n: int) -> dict:
        base = LED0_ON_L + 4 * n
        on_l, on_h, off_l, off_h = self.regs[base:base + 4]
        return {"on": on_l | (on_h & 0x0F) << 8, "off": off_l | (off_h & 0x0F) << 8,
                "full_on": bool(on_h & FULL), "full_off": bool(off_h & FULL)}

    def off_ticks(self, n: int) -> int:
        return self.channel(n)["off"]

    def duty(self, n: int) -> float:
        """The programmed duty cycle of channel n (0..1), whether or not the chip sleeps."""
        c = self.channel(n)
        if c["full_off"]:
            return 0.0
        if c["full_on"]:
            return 1.0
        return ((c["off"] - c["on"]) % 4096) / 4096.0

    def output_duty(self, n: int) -> float:
        """What the pin actually does: nothing while the oscillator sleeps."""
        return 0.0 if self.sleeping else self.duty(n)

    def snapshot(self) -> dict:
        return {"mode1": self.mode1, "prescale": self.prescale, "sleeping": self.sleeping,
                "frequency": self.frequency, "writes": len(self.writes),
                "ignored_writes": len(self.ignored_writes),
                "channels": {str(n): dict(self.channel(n), duty=self.duty(n)) for n in range(16)}}


#: a shared GPIO file: one byte per BCM pin, its level (0, 1) or _UNSET; then the fail switch
_PINS, _UNSET = 64, 0xFF


class FakeGPIO(GPIO):
    """Output pins that remember their level and history; using a pin not set up is an error
    (as on the real libraries). ``fail = True`` makes writes raise ``OSError``. ``levels_file``:
    the levels live in that file (shared with other processes); the history is this process's."""

    fail = SharedFlag("_pins", _PINS)

    def __init__(self, levels_file: Optional[str] = None):
        self._pins = SharedBytes(_PINS + 1, bytes([_UNSET] * _PINS + [0]), levels_file)
        self.history: list[tuple[int, int]] = []
        self.closed = False

    @property
    def levels(self) -> dict[int, int]:
        """{pin: level} of every pin set up as an output."""
        return {pin: self._pins[pin] for pin in range(_PINS) if self._pins[pin] != _UNSET}

    def setup_output(self, pin, initial=0):
        if self.fail:
            raise OSError(5, "Input/output error (fake GPIO set to fail)")
        self._pins[pin] = 1 if initial else 0
        self.history.append((pin, self._pins[pin]))

    def write(self, pin, level):
        if self.fail:
            raise OSError(5, "Input/output error (fake GPIO set to fail)")
        if self._pins[pin] == _UNSET:
            raise RuntimeError(f"GPIO {pin} written before setup_output")
        self._pins[pin] = 1 if level else 0
        self.history.append((pin, self._pins[pin]))

    def close(self):
        self.closed = True

    def snapshot(self) -> dict:
        return {str(pin): level for pin, level in sorted(self.levels.items())}


class FakeCamera(Camera):
    """Synthetic BGR frames: a colour gradient with a bar that moves one step per frame,
    so consecutive frames differ (and compress to a realistic size)."""

    def __init__(self, width: int = 320, height: int = 240):
        self.width, self.height = width, height
        self.frames = 0
        self.closed = False
        import numpy as np  # noqa: PLC0415 - only the fake camera needs it (a robot may lack it)
        y, x = np.mgrid[0:height, 0:width]
        self._base = np.stack([(x * 255 // max(1, width - 1)),
                               (y * 255 // max(1, height - 1)),
                               np.full_like(x, 96)], axis=-1).astype(np.uint8)

    def read(self):
        frame = self._base.copy()
        col = (self.frames * 8) % self.width
        frame[:, col:col + 8] = (255, 255, 255)
        self.frames += 1
        return frame

    def close(self):
        self.closed = True


def bridge_mode(driver: str, inputs: list, pwm_duty: float) -> str:
    """What a motor bridge does with its motor, from its data sheet's truth table: the inputs'
    levels (IN1, IN2; one level where the board derives IN2 = not IN1, the PiCar-V's) and its
    PWM/enable input's duty. 'forward' / 'backward' (IN1 high / IN2 high, driving), 'coast'
    (outputs off: L298N's free running stop, TB6612's stop), 'brake' (outputs shorted: L298N's
    fast stop, TB6612's short brake)."""
    in1, in2 = (inputs[0], 1 - inputs[0]) if len(inputs) == 1 else inputs
    if driver == "l298n":       # Ven = L: free running stop; Ven = H: C = D fast stop, else drive
        if pwm_duty <= 0:
            return "coast"
        return "brake" if in1 == in2 else "forward" if in1 else "backward"
    if driver == "tb6612":      # L/L stop (off); H/H short brake; PWM L with IN1 != IN2 short brake
        if in1 == in2:
            return "coast" if in1 == 0 else "brake"
        return "brake" if pwm_duty <= 0 else "forward" if in1 else "backward"
    raise ValueError(f"unknown bridge {driver!r}")
