#!/usr/bin/env python3
"""cmd_vel -> the car's ros_control controllers in Gazebo, /gazebo/model_states -> odom.

Started by `roslaunch netloop sim.launch simulator:=gazebo`; see netloop.sim.gazebo_bridge.
"""
import sys

from netloop.sim.gazebo_bridge import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
