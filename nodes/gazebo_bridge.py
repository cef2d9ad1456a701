#!/usr/bin/env python3
"""cmd_vel -> the car's ros_control controllers in Gazebo, /gazebo/model_states -> odom.

Started by `roslaunch netloop sim.launch simulator:=gazebo`; see netloop.sim.gazebo_bridge.
"""
import sys
from pathlib import Path

_src = Path(__file__).resolve().parent.parent / "src"
if (_src / "netloop").is_dir() and str(_src) not in sys.path:   # run from the repository
    sys.path.insert(0, str(_src))

from netloop.sim.gazebo_bridge import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv))
