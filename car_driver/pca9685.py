"""Driver for the NXP PCA9685 16-channel, 12-bit PWM controller (the car's servo/motor board).

Each channel's output goes high at tick ``on`` and low at tick ``off`` of a 4096-tick period.
The period comes from the 25 MHz internal oscillator and the prescaler:
``prescale = round(25e6 / (4096 * f)) - 1`` (101 for the car's 60 Hz), which the chip accepts
only while asleep (MODE1.SLEEP). After waking, the oscillator needs 500 us before RESTART.
"""
from __future__ import annotations

import time
from typing import Callable

from .hardware import I2CBus

MODE1, MODE2, PRESCALE = 0x00, 0x01, 0xFE
LED0_ON_L, ALL_LED_ON_L = 0x06, 0xFA
RESTART, AI, SLEEP, ALLCALL = 0x80, 0x20, 0x10, 0x01
OUTDRV = 0x04          # MODE2: totem-pole outputs
FULL = 0x10            # bit 4 of LEDn_ON_H / LEDn_OFF_H
TICKS = 4096
OSC_HZ = 25_000_000.0


def prescale_for(frequency: float, osc_hz: float = OSC_HZ) -> int:
    """The PRE_SCALE value for ``frequency`` Hz; the chip supports 3..255 (~24..1526 Hz)."""
    if not frequency > 0:
        raise ValueError(f"PWM frequency must be > 0 Hz, got {frequency!r}")
    value = round(osc_hz / (TICKS * frequency)) - 1
    if not 3 <= value <= 255:
        lo, hi = osc_hz / (TICKS * 256), osc_hz / (TICKS * 4)
        raise ValueError(f"PWM frequency {frequency} Hz is outside the PCA9685's range "
                         f"{lo:.0f}..{hi:.0f} Hz")
    return value


class PCA9685:
    def __init__(self, bus: I2CBus, address: int = 0x40, osc_hz: float = OSC_HZ,
                 sleep: Callable[[float], None] = time.sleep):
        self.bus, self.address, self.osc_hz = bus, address, osc_hz
        self._sleep = sleep
        self.prescale: int | None = None
        self.frequency: float | None = None   # the actual frequency after rounding

    # -- registers ------------------------------------------------------------------------
    def _write(self, register: int, value: int):
        self.bus.write_byte_data(self.address, register, value & 0xFF)

    def _read(self, register: int) -> int:
        return self.bus.read_byte_data(self.address, register)

    # -- set-up ---------------------------------------------------------------------------
    def init(self, frequency: float) -> None:
        """Put every output off, select totem-pole outputs, set the PWM frequency and wake up."""
        self.all_off()
        self._write(MODE2, OUTDRV)
        self.set_frequency(frequency)

    def set_frequency(self, frequency: float) -> None:
        prescale = prescale_for(frequency, self.osc_hz)
        old = self._read(MODE1) & ~RESTART & 0xFF
        self._write(MODE1, old | SLEEP)                  # PRE_SCALE is writable only asleep
        self._write(PRESCALE, prescale)
        awake = (old & ~SLEEP & 0xFF) | AI
        self._write(MODE1, awake)
        self._sleep(0.0005)                              # oscillator start-up
        self._write(MODE1, awake | RESTART)              # resume any PWM stopped by the sleep
        self.prescale = prescale
        self.frequency = self.osc_hz / (TICKS * (prescale + 1))

    def sleep(self) -> None:
        """Stop the oscillator (all outputs stop); ``set_frequency`` wakes it again."""
        self._write(MODE1, (self._read(MODE1) & ~RESTART & 0xFF) | SLEEP)

    # -- outputs --------------------------------------------------------------------------
    @staticmethod
    def _check_channel(channel: int):
        if not (isinstance(channel, int) and 0 <= channel <= 15):
            raise ValueError(f"PCA9685 channel must be 0..15, got {channel!r}")

    def set_pwm(self, channel: int, on: int, off: int) -> None:
        """Raw ON/OFF tick counts (0..4095) of one channel."""
        self._check_channel(channel)
        for name, t in (("on", on), ("off", off)):
            if not (isinstance(t, int) and 0 <= t < TICKS):
                raise ValueError(f"PWM {name} tick must be an integer 0..4095, got {t!r}")
        base = LED0_ON_L + 4 * channel
        self._write(base, on & 0xFF)
        self._write(base + 1, on >> 8)
        self._write(base + 2, off & 0xFF)
        self._write(base + 3, off >> 8)

    def set_off_ticks(self, channel: int, ticks: int) -> None:
        """Pulse from tick 0 to ``ticks`` (how servo positions are given)."""
        self.set_pwm(channel, 0, int(ticks))

    def set_duty(self, channel: int, duty: float) -> None:
        """Duty cycle 0..1; exactly 0 and 1 use the full-OFF / full-ON bits (no glitches)."""
        self._check_channel(channel)
        if not 0.0 <= duty <= 1.0:
            raise ValueError(f"duty cycle must be within 0..1, got {duty!r}")
        base = LED0_ON_L + 4 * channel
        if duty <= 0.0:
            self._write(base + 3, FULL)        # full OFF first: it overrides everything
            self._write(base, 0)
            self._write(base + 1, 0)
            self._write(base + 2, 0)
        elif duty >= 1.0:
            self._write(base, 0)
            self._write(base + 1, FULL)
            self._write(base + 2, 0)
            self._write(base + 3, 0)
        else:
            self.set_pwm(channel, 0, min(TICKS - 1, max(1, round(duty * TICKS))))

    def all_off(self) -> None:
        """Every channel full OFF, through the ALL_LED registers."""
        self._write(ALL_LED_ON_L + 3, FULL)
        self._write(ALL_LED_ON_L, 0)
        self._write(ALL_LED_ON_L + 1, 0)
        self._write(ALL_LED_ON_L + 2, 0)

    # -- conversions ----------------------------------------------------------------------
    def us_to_ticks(self, microseconds: float) -> int:
        if self.frequency is None:
            raise RuntimeError("PCA9685 frequency not set: call init() first")
        return round(microseconds * self.frequency * TICKS / 1e6)

    def ticks_to_us(self, ticks: float) -> float:
        if self.frequency is None:
            raise RuntimeError("PCA9685 frequency not set: call init() first")
        return ticks * 1e6 / (self.frequency * TICKS)
