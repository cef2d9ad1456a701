"""Commanded vs received motion of a teleoperated car, as rviz markers (``nodes/teleop_markers.py``).

The operator's side of a teleop loop sees two things: what it commands (``cmd_vel``: speed
``linear.x``, turn rate ``angular.z``) and what it receives back over the network (``odom``:
the car's pose, heading and speed, as old as the network made them). This node draws both at
the car's received pose, in the odometry's frame, on ``teleop_markers``
(visualization_msgs/MarkerArray, ``~rate`` per second, shown by ``config/teleop.rviz``):

  ``received``        green arrow along the received heading, length ~scale x received speed
  ``commanded``       orange arrow along the heading the command turns to within ~lookahead s
                      (received heading + angular.z x lookahead), length ~scale x commanded speed
  ``commanded_path``  orange line: where the command would take the car in ~horizon s (a
                      unicycle driven by (linear.x, angular.z) from the received pose)
  ``numbers``         text above the car: commanded v and turn rate, received v and heading,
                      and the age of the last odometry and of the last command (ms)

A command older than ~command_timeout s counts as zero (the car's watchdog stops it after
0.25 s). Negative speeds point the arrows backwards. Parameters must be positive numbers; a
bad one ends the node with exit status 2 and a message naming it.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass

#: parameter name -> default; every one must be a positive number
PARAMS = {"rate": 10.0, "scale": 2.0, "lookahead": 0.5, "horizon": 1.0, "command_timeout": 0.5}

RECEIVED_COLOR = (0.1, 0.8, 0.2, 1.0)
COMMANDED_COLOR = (1.0, 0.55, 0.0, 1.0)
TEXT_COLOR = (1.0, 1.0, 1.0, 1.0)
#: shortest arrow drawn (m), so a standing car still shows which way each one points
MIN_ARROW = 0.05


class ParamError(ValueError):
    pass


def check_params(values: dict) -> dict:
    """The node's parameters with defaults filled in; ParamError names a bad or unknown one."""
    unknown = sorted(set(values) - set(PARAMS))
    if unknown:
        raise ParamError(f"~{unknown[0]}: unknown parameter; allowed: {', '.join(sorted(PARAMS))}")
    out = dict(PARAMS)
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ParamError(f"~{key}: must be a positive number, got {value!r}")
        out[key] = float(value)
    return out


@dataclass
class Received:
    """The car's state as the operator received it."""
    x: float
    y: float
    heading: float      # rad
    speed: float        # m/s along the car's x axis
    frame: str
    stamp: float        # s, the odometry's header stamp
    arrived: float      # s, when it arrived here


@dataclass
class Command:
    speed: float        # linear.x, m/s
    turn: float         # angular.z, rad/s
    sent: float         # s, when it was seen here


def commanded_heading(rx: Received, cmd: Command, lookahead: float) -> float:
    """The heading the command turns the car to within ``lookahead`` s."""
    return rx.heading + cmd.turn * lookahead


def commanded_path(rx: Received, cmd: Command, horizon: float, steps: int = 20) -> list[tuple[float, float]]:
    """Points a unicycle driven by the command passes in ``horizon`` s from the received pose."""
    points = [(rx.x, rx.y)]
    x, y, psi, dt = rx.x, rx.y, rx.heading, horizon / steps
    for _ in range(steps):
        x += cmd.speed * math.cos(psi) * dt
        y += cmd.speed * math.sin(psi) * dt
        psi += cmd.turn * dt
        points.append((x, y))
    return points


def arrow_end(x: float, y: float, heading: float, speed: float, scale: float) -> tuple[float, float]:
    """End of an arrow from (x, y) along ``heading`` (backwards for a negative speed)."""
    length = max(abs(speed) * scale, MIN_ARROW) * (1.0 if speed >= 0 else -1.0)
    return x + length * math.cos(heading), y + length * math.sin(heading)


def describe(rx: Received, cmd: Command, now: float) -> str:
    """The text shown above the car."""
    return (f"cmd  v {cmd.speed:+.2f} m/s  turn {cmd.turn:+.2f} rad/s  ({(now - cmd.sent) * 1e3:.0f} ms ago)\n"
            f"odom v {rx.speed:+.2f} m/s  heading {math.degrees(rx.heading):+.1f} deg  "
            f"(age {(now - rx.stamp) * 1e3:.0f} ms)")


def current_command(cmd: Command | None, now: float, timeout: float) -> Command:
    """The command in force: the last one, or zero when there is none or it is older than ``timeout``."""
    if cmd is None or now - cmd.sent > timeout:
        return Command(0.0, 0.0, cmd.sent if cmd is not None else now)
    return cmd


def build_markers(rx: Received, cmd: Command, now: float, cfg: dict):
    """The MarkerArray for one update (imports visualization_msgs only here)."""
    from geometry_msgs.msg import Point  # noqa: PLC0415
    from visualization_msgs.msg import Marker, MarkerArray  # noqa: PLC0415

    z = 0.12  # above the car's deck

    def marker(ns: str, kind: int, color) -> Marker:
        m = Marker()
        m.header.frame_id = rx.frame
        m.ns, m.id, m.type, m.action = ns, 0, kind, Marker.ADD
        m.pose.orientation.w = 1.0
        m.color.r, m.color.g, m.color.b, m.color.a = color
        return m

    def arrow(ns: str, heading: float, speed: float, color) -> Marker:
        m = marker(ns, Marker.ARROW, color)
        end = arrow_end(rx.x, rx.y, heading, speed, cfg["scale"])
        m.points = [Point(rx.x, rx.y, z), Point(end[0], end[1], z)]
        m.scale.x, m.scale.y, m.scale.z = 0.02, 0.045, 0.06   # shaft and head diameter, head length
        return m

    path = marker("commanded_path", Marker.LINE_STRIP, COMMANDED_COLOR)
    path.points = [Point(px, py, 0.01) for px, py in commanded_path(rx, cmd, cfg["horizon"])]
    path.scale.x = 0.015
    text = marker("numbers", Marker.TEXT_VIEW_FACING, TEXT_COLOR)
    text.pose.position.x, text.pose.position.y, text.pose.position.z = rx.x, rx.y, 0.45
    text.scale.z = 0.06
    text.text = describe(rx, cmd, now)
    return MarkerArray([arrow("received", rx.heading, rx.speed, RECEIVED_COLOR),
                        arrow("commanded", commanded_heading(rx, cmd, cfg["lookahead"]), cmd.speed,
                              COMMANDED_COLOR),
                        path, text])


def main(argv=None) -> int:
    import rospy  # noqa: PLC0415
    from geometry_msgs.msg import Twist  # noqa: PLC0415
    from nav_msgs.msg import Odometry  # noqa: PLC0415
    from visualization_msgs.msg import MarkerArray  # noqa: PLC0415

    from netloop.sim.geometry import yaw_of  # noqa: PLC0415

    rospy.init_node("teleop_markers", argv=argv)
    try:
        cfg = check_params(rospy.get_param("~", {}))
    except ParamError as err:
        msg = f"teleop_markers: refused: {err}"
        rospy.logfatal(msg)
        print(msg, file=sys.stderr, flush=True)
        return 2
    state = {"rx": None, "cmd": None}

    def on_odom(m):
        q = m.pose.pose.orientation
        state["rx"] = Received(m.pose.pose.position.x, m.pose.pose.position.y, yaw_of((q.x, q.y, q.z, q.w)),
                               m.twist.twist.linear.x, m.header.frame_id or "odom", m.header.stamp.to_sec(),
                               rospy.get_time())

    def on_cmd(m):
        state["cmd"] = Command(m.linear.x, m.angular.z, rospy.get_time())

    pub = rospy.Publisher("teleop_markers", MarkerArray, queue_size=2)
    rospy.Subscriber("odom", Odometry, on_odom, queue_size=1, tcp_nodelay=True)
    rospy.Subscriber("cmd_vel", Twist, on_cmd, queue_size=1, tcp_nodelay=True)
    rate = rospy.Rate(cfg["rate"])
    while not rospy.is_shutdown():
        rx, now = state["rx"], rospy.get_time()
        if rx is not None:
            pub.publish(build_markers(rx, current_command(state["cmd"], now, cfg["command_timeout"]), now, cfg))
        try:
            rate.sleep()
        except rospy.ROSInterruptException:
            break
    return 0
