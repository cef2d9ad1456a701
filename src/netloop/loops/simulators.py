"""The car's simulators for the ``teleop`` loop, chosen by ``loop.teleop.simulator``.

Both load the same URDF (``models/sunfounder_car``) and SDF world (``worlds/``) and offer the
same interface on the car's host: ``cmd_vel`` in, ``odom`` (and camera, scan, joint states,
TF) out.

  - ``embedded``: the package's pybullet simulator (``nodes/sim_node.py``), always available.
  - ``gazebo``: Gazebo classic through gazebo_ros (``launch/sim.launch simulator:=gazebo``,
    with ``nodes/gazebo_bridge.py`` mapping cmd_vel and odom); only where gazebo_ros is
    installed (ROS Noetic), refused before anything starts elsewhere.
  - ``car``: no simulation: the real car's driver (``car_driver/car_node.py``) on the car's
    Raspberry Pi, its odometry dead-reckoned from the applied command (the kit has no
    encoders); ``hardware: fake`` drives the register-level fakes instead (no car needed).
    The world is not used.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import paths
from ..registry import Registry
from ..schema import Any_, Bool, ConfigError, Enum, Int, Map, Num, Str


class Simulator:
    """A simulator of the car: how to start it on a host, and which nodes carry its topics."""

    name = ""
    #: the nodes that publish odom and subscribe cmd_vel (for the connection check)
    odom_node = ""
    cmd_vel_node = ""

    def unavailable(self) -> str | None:
        """Why this simulator cannot run on this machine, or None when it can."""
        return None

    def check_params(self, params: dict[str, Any], world: str) -> None:
        """ConfigError (key relative to ``loop.teleop.sim``) for parameters it does not take."""
        from ..sim.config import load_sim_config  # noqa: PLC0415
        load_sim_config(dict(params, world=world))

    def start(self, hosts, host: str, world: str, params: dict[str, Any], run_dir: Path | None = None) -> Any:
        """Start it on ``host`` (what it writes of its own goes under ``run_dir``)."""
        raise NotImplementedError


class EmbeddedSimulator(Simulator):
    name = "embedded"
    odom_node = cmd_vel_node = "/sim"

    def start(self, hosts, host, world, params, run_dir=None):
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

    def start(self, hosts, host, world, params, run_dir=None):
        args = [f"{k}:={v}" for k, v in params.items() if k in self.LAUNCH_ARGS]
        return hosts.start("sim_launch", host, ["roslaunch", "--wait", "netloop", "sim.launch",
                                                "simulator:=gazebo", f"world:={world}", *args])


#: the fail-safe stop's record of a run (car_driver/failsafe.py), in the run's logs/remote_exec/
FAILSAFE_RECORD = "car_failsafe.json"


class RealCar(Simulator):
    name = "car"
    odom_node = cmd_vel_node = "/car_driver"
    #: the car node's parameters (car_driver/car_node.py)
    PARAMS = Map({
        "car": Str("smart_video_car", "car profile in config/cars"),
        "hardware": Enum(("real", "fake"), "real", "real: the PCA9685 and GPIO of the Pi; fake: register-level fakes"),
        "gpio_backend": Enum(("auto", "lgpio", "gpiozero"), "auto"),
        "watchdog_timeout": Num(0.25, "s without cmd_vel before the motors stop", gt=0, le=5),
        "steering_offset": Num(None, "steering calibration"),
        "camera": Bool(True, "publish the USB camera (camera/image/compressed)"),
        "camera_device": Any_(0, "camera index or device path"), "camera_width": Int(320, ge=16), "camera_height": Int(240, ge=16),
        "camera_rate": Num(10.0, gt=0, le=120), "jpeg_quality": Int(75, ge=1, le=100),
        "odom_rate": Num(50.0, "dead-reckoned odometry [Hz]", gt=0, le=1000),
        "fake_state_file": Str("", nonempty=False),
        "fake_device_dir": Str("", "fake hardware: the fake board's folder (its registers and pins, shared with "
                                   "the fail-safe stop); default a private one", nonempty=False),
        "failsafe_record": Str("", "where the fail-safe stop writes what it did (default: the run's "
                                   f"logs/remote_exec/{FAILSAFE_RECORD})", nonempty=False),
    }, {})

    def check_params(self, params, world):
        checked = self.PARAMS.check(params, "")
        from ..car_driver.profiles import load_profile  # noqa: PLC0415
        try:
            load_profile(checked["car"])
        except (ConfigError, FileNotFoundError) as err:
            raise ConfigError("car", str(err)) from None

    def start(self, hosts, host, world, params, run_dir=None):
        params = dict(params)
        if run_dir is not None and not params.get("failsafe_record"):   # comes home with the wrappers' records
            params["failsafe_record"] = str(Path(run_dir) / "logs" / "remote_exec" / FAILSAFE_RECORD)
        return hosts.start("car_driver", host, [str(paths.node_binary("car_node.py")), "__name:=car_driver"],
                           params)


_SIMULATORS: Registry[Simulator] = Registry("simulator", {s.name: s for s in (EmbeddedSimulator, GazeboSimulator,
                                                                              RealCar)})


def simulator_names() -> list[str]:
    return _SIMULATORS.names()


def get_simulator(name: str) -> Simulator:
    return _SIMULATORS.get(name)
