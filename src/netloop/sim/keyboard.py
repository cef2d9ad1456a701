"""Keyboard teleoperation without ROS: key decoding and the command it builds.

Keys (``nodes/keyboard_teleop.py``)::

    w / Up      faster (+speed_step; backwards when negative)
    s / Down    slower / reverse (-speed_step)
    a / Left    turn left  (+turn_step of angular.z)
    d / Right   turn right (-turn_step)
    space / x   stop (speed and turn 0)
    q / Ctrl-C  stop and quit
"""
from __future__ import annotations

from dataclasses import dataclass

ARROWS = {b"A": "up", b"B": "down", b"C": "right", b"D": "left"}
KEYS = {"w": "up", "s": "down", "a": "left", "d": "right", " ": "stop", "x": "stop", "q": "quit",
        "\x03": "quit", "\x04": "quit"}

HELP = ("w/s or Up/Down: speed   a/d or Left/Right: turn   space: stop   q: quit")


class KeyDecoder:
    """Turns terminal bytes into actions; arrow keys arrive as ESC [ A..D (or ESC O A..D)."""

    def __init__(self):
        self._pending = b""

    def feed(self, data: bytes) -> list[str]:
        buf = self._pending + data
        self._pending = b""
        out = []
        i = 0
        while i < len(buf):
            c = buf[i:i + 1]
            if c == b"\x1b":
                if i + 1 >= len(buf) or (buf[i + 1:i + 2] in (b"[", b"O") and i + 2 >= len(buf)):
                    self._pending = buf[i:]          # incomplete sequence: wait for the rest
                    break
                if buf[i + 1:i + 2] in (b"[", b"O"):
                    action = ARROWS.get(buf[i + 2:i + 3])
                    if action:
                        out.append(action)
                    i += 3
                    continue
                i += 1                                # a lone ESC: ignored
                continue
            action = KEYS.get(c.decode("latin-1").lower())
            if action:
                out.append(action)
            i += 1
        return out


@dataclass
class TeleopCommand:
    speed_step: float = 0.05
    turn_step: float = 0.2
    max_speed: float = 0.4
    max_turn: float = 2.0
    speed: float = 0.0
    turn: float = 0.0
    quit: bool = False

    def apply(self, action: str) -> None:
        if action == "up":
            self.speed = self._clamp(self.speed + self.speed_step, self.max_speed)
        elif action == "down":
            self.speed = self._clamp(self.speed - self.speed_step, self.max_speed)
        elif action == "left":
            self.turn = self._clamp(self.turn + self.turn_step, self.max_turn)
        elif action == "right":
            self.turn = self._clamp(self.turn - self.turn_step, self.max_turn)
        elif action == "stop":
            self.speed = self.turn = 0.0
        elif action == "quit":
            self.speed = self.turn = 0.0
            self.quit = True

    @staticmethod
    def _clamp(value: float, limit: float) -> float:
        value = round(value, 6)     # keep 0.05 steps from drifting (0.15000000000000002)
        return max(-limit, min(limit, value))

    def status(self) -> str:
        return f"cmd_vel: linear.x {self.speed:+.2f} m/s  angular.z {self.turn:+.2f} rad/s"
