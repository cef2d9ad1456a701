"""The car's simulators for the ``teleop`` loop, chosen by ``loop.teleop.simulator``.

Both load the same URDF (``models/sunfounder_car``) and SDF world (``worlds/``) and offer the
same interface on the car's host: ``cmd_vel`` in, ``odom`` (and camera, scan, joint states,
TF) out.

  - ``embedded``: the package's pybullet simulator (``nodes/sim_node.py``), always available.
  - ``gazebo``: Gazebo classic through gazebo_ros (``launch/sim.launch simulator:=gazebo``,
    with ``nodes/gazebo_bridge.py`` mapping cmd_vel and odom); only where gazebo_ros is
    installed (ROS Noetic), refused before anything starts elsewhere.
"""
from __future__ import annotations

from typing import Any

from .. import paths
from ..registry import Registry


class Simulator:
    """A simulator of the car: how to start it on a host, and which nodes carry its topics."""

    name = ""
    #: the nodes that publish odom and subscribe cmd_vel (for the connection check)
    odom_node = ""
    cmd_vel_node = ""

    def unavailable(self) -> str | None:
        """Why this simulator cannot run on this machine, or None when it can."""
        return None

    def start(self, hosts, host: str, world: str, params: dict[str, Any]) -> Any:
        raise NotImplementedError


class EmbeddedSimulator(Simulator):
    name = "embedded"
    odom_node = cmd_vel_node = "/sim"

    def start(self, hosts, host, world, params):
        return hosts.start("sim", host, [str(paths.node_binary("sim_node.py")), "__name:=sim"],
                           dict(params, world=world))


class GazeboSimulator(Simulator):
    name = "gazebo"
    odom_node = cmd_vel_node = "/gazebo_bridge"

    def unavailable(self):
        try:
            import rospkg  # noqa: PLC0415
            rospkg.RosPack().get_path("gazebo_ros")
        except Exception:  # rospkg missing, or the package not found
            return "gazebo_ros is not installed on this machine (it needs ROS Noetic); use simulator: embedded"
        return None

    #: simulator parameters that sim.launch takes as arguments for Gazebo
    LAUNCH_ARGS = ("camera_rate", "width", "height", "x", "y", "yaw", "watchdog_timeout", "use_sim_time")

    def start(self, hosts, host, world, params):
        args = [f"{k}:={v}" for k, v in params.items() if k in self.LAUNCH_ARGS]
        return hosts.start("sim_launch", host, ["roslaunch", "--wait", "netloop", "sim.launch",
                                                "simulator:=gazebo", f"world:={world}", *args])


_SIMULATORS: Registry[Simulator] = Registry("simulator", {s.name: s for s in (EmbeddedSimulator, GazeboSimulator)})


def simulator_names() -> list[str]:
    return _SIMULATORS.names()


def get_simulator(name: str) -> Simulator:
    return _SIMULATORS.get(name)
