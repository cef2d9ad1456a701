#!/usr/bin/env python3
"""The embedded simulator as a ROS node: the Sunfounder car in an SDF world, in pybullet.

    rosrun netloop sim_node.py _world:=tunnel _camera_rate:=10
    roslaunch netloop sim.launch world:=arena

Topics, parameters and stamps: see netloop.sim.node (src/netloop/sim/node.py).
"""
import sys
from pathlib import Path

_src = Path(__file__).resolve().parent.parent / "src"
if (_src / "netloop").is_dir() and str(_src) not in sys.path:   # run from the repository
    sys.path.insert(0, str(_src))

from netloop.sim.node import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv))
