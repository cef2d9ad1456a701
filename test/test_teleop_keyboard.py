"""Keyboard teleop on a pseudo-terminal: keys become Twists on cmd_vel at a fixed rate, the
command is printed, q stops the car and quits, and the terminal's mode is restored."""
from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import termios
import time

import pytest

from netloop import paths, rosenv
from netloop.master import wait_for

pytestmark = pytest.mark.integration


class Terminal:
    """The keyboard node on the slave side of a pty; the test types on the master side."""

    def __init__(self, argv, env):
        self.master, self.slave = pty.openpty()
        self.before = termios.tcgetattr(self.slave)
        self.proc = subprocess.Popen(argv, stdin=self.slave, stdout=self.slave, stderr=self.slave, env=env,
                                     start_new_session=True, close_fds=True)
        self.output = b""
        self.mark = 0

    def read(self, seconds: float = 0.2) -> str:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], max(0.0, end - time.monotonic()))
            if ready:
                try:
                    self.output += os.read(self.master, 4096)
                except OSError:
                    break
        return self.output.decode(errors="replace")

    def type(self, keys: bytes) -> None:
        self.read(0.0)
        self.mark = len(self.output)                 # wait_output looks at what comes after
        os.write(self.master, keys)

    def wait_output(self, text: str, timeout: float = 20.0) -> bool:
        return wait_for(lambda: text in (self.read(0.05), self.output[self.mark:].decode(errors="replace"))[1],
                        timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        os.close(self.master)
        os.close(self.slave)


def _twists(path) -> list[tuple[float, float]]:
    """(linear.x, angular.z) of the CSV lines `rostopic echo -p` wrote."""
    out = []
    for line in path.read_text().splitlines():
        fields = line.split(",")
        if len(fields) == 7 and not line.startswith("%"):
            out.append((float(fields[1]), float(fields[6])))
    return out


@pytest.mark.parametrize("how", ["node", "roslaunch"])
def test_keyboard_teleop_on_a_terminal(roscore, tmp_path, how):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    echo = roscore.group.start("echo", ["rostopic", "echo", "-p", "/cmd_vel"], env=env)
    argv = ([str(paths.node_binary("keyboard_teleop.py")), "_rate:=10"] if how == "node" else
            ["roslaunch", "netloop", "teleop.launch", "rate:=10"])
    term = Terminal(argv, env)
    try:
        assert term.wait_output("cmd_vel: linear.x +0.00"), term.read()
        assert wait_for(lambda: len(_twists(echo.log_path)) >= 3, 30), echo.log_path.read_text()
        # published at 10 Hz, keys or not: messages per second of the window as it really was
        # (a busy machine stretches the 1 s sleep, and the count with it)
        n0, t0 = len(_twists(echo.log_path)), time.monotonic()
        time.sleep(1.0)
        rate = (len(_twists(echo.log_path)) - n0) / (time.monotonic() - t0)
        assert 8 <= rate <= 12, rate
        term.type(b"ww\x1b[A")                                           # w, w, Up
        term.type(b"\x1b[D")                                             # Left
        assert term.wait_output("linear.x +0.15 m/s  angular.z +0.20 rad/s"), term.read()
        assert wait_for(lambda: (0.15, 0.2) in _twists(echo.log_path), 10)
        term.type(b"d\x1b[Cs")                                           # d, Right, s
        assert term.wait_output("linear.x +0.10 m/s  angular.z -0.20 rad/s"), term.read()
        term.type(b" ")                                                  # space: stop
        assert term.wait_output("linear.x +0.00 m/s  angular.z +0.00 rad/s"), term.read()
        term.type(b"wq")
        assert term.proc.wait(timeout=15) == 0, term.read()
        assert "stopped, bye" in term.read()
        assert termios.tcgetattr(term.slave) == term.before              # the terminal mode is back
        assert wait_for(lambda: _twists(echo.log_path)[-1] == (0.0, 0.0), 5), \
            _twists(echo.log_path)[-3:]                                   # the car was stopped
    finally:
        term.close()


def test_keyboard_teleop_needs_a_terminal(roscore, tmp_path):
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    out = subprocess.run([str(paths.node_binary("keyboard_teleop.py"))], env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "stdin is not a terminal" in out.stderr
