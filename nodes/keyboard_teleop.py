#!/usr/bin/env python3
"""Keyboard teleoperation of the car (or the simulator) from a terminal.

    rosrun netloop keyboard_teleop.py                  (or roslaunch netloop teleop.launch)

Publishes geometry_msgs/Twist on ``cmd_vel`` at ``~rate`` (10 Hz) - continuously, so the
driver's 0.25 s watchdog stays fed while a key is not pressed - and prints the current command.
Keys: w/s or Up/Down speed (+-~speed_step, 0.05 m/s), a/d or Left/Right turn (+-~turn_step,
0.2 rad/s), space stop, q (or Ctrl-C) quit. Limits ~max_speed (0.4 m/s), ~max_turn (2 rad/s).
The terminal is put in cbreak mode (keys without Enter, no echo) and restored on every exit;
on quitting, a few zero Twists stop the car. Exit status 2 when stdin is not a terminal.
"""
import os
import select
import signal
import sys
import termios
import time
import tty

from netloop.sim.keyboard import HELP, KeyDecoder, TeleopCommand


def main(argv) -> int:
    import rospy  # noqa: PLC0415
    from geometry_msgs.msg import Twist  # noqa: PLC0415

    fd = sys.stdin.fileno()
    if not os.isatty(fd):
        print("keyboard_teleop: stdin is not a terminal; run it in one (rosrun, or roslaunch "
              "with launch-prefix=\"xterm -e\")", file=sys.stderr)
        return 2
    rospy.init_node("keyboard_teleop", argv=argv, disable_signals=True)
    rate = float(rospy.get_param("~rate", 10.0))
    cmd = TeleopCommand(speed_step=float(rospy.get_param("~speed_step", 0.05)),
                        turn_step=float(rospy.get_param("~turn_step", 0.2)),
                        max_speed=float(rospy.get_param("~max_speed", 0.4)),
                        max_turn=float(rospy.get_param("~max_turn", 2.0)))
    if not rate > 0:
        print("keyboard_teleop: ~rate must be > 0", file=sys.stderr)
        return 2
    pub = rospy.Publisher("cmd_vel", Twist, queue_size=1)
    decoder = KeyDecoder()
    saved = termios.tcgetattr(fd)

    def on_signal(signum, _frame):
        cmd.apply("quit")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    def twist() -> Twist:
        t = Twist()
        t.linear.x, t.angular.z = cmd.speed, cmd.turn
        return t

    out = sys.stdout
    try:
        tty.setcbreak(fd)
        out.write(f"keyboard_teleop: {HELP}\r\n")
        out.write(f"publishing on {pub.resolved_name} at {rate:g} Hz\r\n{cmd.status()}")
        out.flush()
        period = 1.0 / rate
        next_t = time.monotonic()
        shown = cmd.status()
        while not cmd.quit and not rospy.is_shutdown():
            timeout = max(0.0, next_t - time.monotonic())
            try:
                ready, _, _ = select.select([fd], [], [], timeout)
            except InterruptedError:
                ready = []
            if ready:
                data = os.read(fd, 64)
                if not data:                      # terminal closed
                    cmd.apply("quit")
                for action in decoder.feed(data):
                    cmd.apply(action)
                if cmd.status() != shown:
                    shown = cmd.status()
                    out.write("\r\x1b[K" + shown)
                    out.flush()
            if time.monotonic() >= next_t:
                pub.publish(twist())
                next_t += period
                if next_t < time.monotonic():
                    next_t = time.monotonic() + period
        for _ in range(3):                        # stop the car
            pub.publish(Twist())
            time.sleep(0.05)
        out.write("\r\x1b[K" + cmd.status() + "\r\nkeyboard_teleop: stopped, bye\r\n")
        out.flush()
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        rospy.signal_shutdown("quit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
