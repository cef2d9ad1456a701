#!/usr/bin/env python3
"""The embedded simulator as a ROS node: the Sunfounder car in an SDF world, in pybullet.

    rosrun netloop sim_node.py _world:=tunnel _camera_rate:=10
    roslaunch netloop sim.launch world:=arena

Topics, parameters and stamps: see netloop.sim.node (src/netloop/sim/node.py).
"""
import sys

from netloop.sim.node import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
