"""What ``make build`` was meant to build on this machine, and whether it did.

``scripts/build.sh`` writes ``expected_middlewares.txt`` beside its workspace
(``.build/ws``): the ROS 2 middlewares it meant ``libnetloop_ros2`` to have, i.e. the DDS
middlewares whose packages ``make setup`` installs, ``zenoh`` when a cargo that can build the
Zenoh shim (Rust >= 1.75) was found, and ``rmw_fastrtps_cpp`` where a ROS 2 environment was
there to build its plug-in against (whether the environment must be there:
:mod:`netloop.ros2.distro`, asserted by test_ros2_environment). A middleware listed there but missing from the build is a
failed build step (a cargo error, a missing package), and the tests that need it fail instead of
skipping; one not listed (no Rust on this machine, a robot's build) is skipped with the reason.
"""
from __future__ import annotations

from pathlib import Path

from . import paths


def record_path() -> Path:
    return paths.WORKSPACE / "expected_middlewares.txt"


def expected_middlewares() -> tuple[str, ...]:
    """The middlewares the last ``scripts/build.sh`` meant to build (none before a build)."""
    try:
        lines = record_path().read_text().splitlines()
    except OSError:
        return ()
    return tuple(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))


def meant_to_have(middleware: str) -> bool:
    return middleware in expected_middlewares()


def missing(middleware: str) -> str | None:
    """Why this build has no ``middleware`` (None when it has it)."""
    from .transports.ros2 import missing_middleware  # noqa: PLC0415 (imports the transports)
    why = missing_middleware(middleware)
    if why and middleware == "zenoh" and meant_to_have("zenoh"):
        why += f"; the Zenoh shim's cargo log: {paths.REPO / '.build' / 'zenoh-build.log'}"
    return why


def unmet() -> list[str]:
    """One line per middleware the build was meant to have and lacks."""
    return [f"{m}: {missing(m)}" for m in expected_middlewares() if missing(m)]
