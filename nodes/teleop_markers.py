#!/usr/bin/env python3
"""Commanded (cmd_vel) vs received (odom) heading and speed of the teleoperated car, as rviz
markers on teleop_markers (config/teleop.rviz).

    rosrun netloop teleop_markers.py odom:=odom_net
    roslaunch netloop teleop.launch trial:=true rviz:=true

Markers, parameters: see netloop.teleop_markers (src/netloop/teleop_markers.py).
"""
import sys

from netloop.teleop_markers import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
