"""The environment ROS processes of a run get: the package's devel space, the master, the host."""
from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from . import paths

NOETIC_SETUP = Path("/opt/ros/noetic/setup.sh")


def ros_distro() -> str:
    """ROS Noetic when /opt/ros/noetic is installed, else Debian's ROS packages."""
    return "noetic" if NOETIC_SETUP.is_file() else "debian"


@functools.lru_cache(maxsize=1)
def base_env() -> dict[str, str]:
    """os.environ plus what sourcing the ROS setup files (Noetic's, then the package's devel
    space) adds, with /usr/bin first on PATH (Debian's ROS tools use /usr/bin/python3)."""
    env = dict(os.environ)
    scripts = [str(s) for s in (NOETIC_SETUP, paths.DEVEL / "setup.sh") if s.is_file()]
    if scripts:
        cmd = "; ".join(f". '{s}'" for s in scripts) + "; env -0"
        out = subprocess.run(["/bin/sh", "-c", cmd], env=env, capture_output=True, check=True).stdout
        env = dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)
    env["PATH"] = "/usr/bin:" + env.get("PATH", "")
    pythonpath = [str(paths.REPO / "src")] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(pythonpath))
    env.pop("ROS_HOSTNAME", None)
    return env


def node_env(master_uri: str, ros_ip: str, log_dir: Path) -> dict[str, str]:
    """Environment of a ROS process on a host whose address is ``ros_ip``."""
    env = dict(base_env())
    env.update(ROS_MASTER_URI=master_uri, ROS_IP=ros_ip, ROS_LOG_DIR=str(log_dir), ROS_HOME=str(log_dir))
    return env
