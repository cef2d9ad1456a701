"""The embedded simulator's parameters (``loop.teleop.sim`` of an experiment, the private
parameters of ``nodes/sim_node.py``), checked without numpy or pybullet so that
``netloop validate`` needs neither."""
from __future__ import annotations

from netloop.schema import Bool, Int, Map, Num, Str, validate

from .world import DEFAULT_URDF

SIM_SCHEMA = Map({
    "world": Str(default="arena", doc="arena | tunnel | path of an SDF .world file"),
    "urdf": Str(default=str(DEFAULT_URDF), doc="robot description (the Sunfounder car)"),
    "car": Str(default="smart_video_car", doc="car profile (config/cars): mapping and limits"),
    "physics_rate": Num(default=1000.0, ge=100, le=2000, doc="physics steps per second (1000 or 500)"),
    "x": Num(default=0.0, doc="start position of base_link in the world (m)"),
    "y": Num(default=0.0),
    "yaw": Num(default=0.0, doc="start heading (rad)"),
    "watchdog_timeout": Num(default=0.25, gt=0, doc="s without a command before the motors stop"),
    "camera": Bool(default=True, doc="render the camera"),
    "width": Int(default=None, ge=16, le=1920, doc="image width (default: the URDF's, 320)"),
    "height": Int(default=None, ge=16, le=1080, doc="image height (default: the URDF's, 240)"),
    "camera_rate": Num(default=None, gt=0, le=60, doc="frames per second (default: the URDF's, 15)"),
    "jpeg_quality": Int(default=75, ge=1, le=100),
    "scan": Bool(default=True, doc="cast the LIDAR"),
    "scan_rate": Num(default=None, gt=0, le=100, doc="scans per second (default: the URDF's, 10)"),
    "scan_intensities": Bool(default=False, doc="fill LaserScan.intensities (zeros, as Gazebo)"),
    "odom_rate": Num(default=50.0, gt=0, le=1000, doc="odometry + base TF per second"),
    "joint_state_rate": Num(default=50.0, gt=0, le=1000, doc="joint_states + joint TFs per second"),
    "clock_rate": Num(default=100.0, gt=0, le=1000, doc="/clock messages per second (use_sim_time)"),
    "max_lag": Num(default=0.1, gt=0, doc="s behind real time before the loop gives up catching up"),
    "rtf_warn": Num(default=0.95, gt=0, doc="warn when the real-time factor is below this"),
})


def load_sim_config(params: dict | None = None, source: str | None = None) -> dict:
    """Validate simulator parameters (unknown keys and bad values raise ConfigError)."""
    return validate(SIM_SCHEMA, dict(params or {}), source=source)
