"""Where things are: the repository, the catkin build, the node binaries, the results."""
from __future__ import annotations

import os
from pathlib import Path

#: Repository root (the catkin package ``netloop``).
REPO = Path(__file__).resolve().parents[2]
#: Catkin workspace made by ``make build`` (``src/netloop`` links back to REPO).
WORKSPACE = Path(os.environ.get("NETLOOP_WORKSPACE", REPO / ".build" / "ws"))
DEVEL = WORKSPACE / "devel"
CONFIG = REPO / "config"
EXPERIMENTS = REPO / "experiments"
RESULTS = Path(os.environ.get("NETLOOP_RESULTS", REPO / "results"))


def node_binary(name: str) -> Path:
    """Path of a compiled node or tool of this package (``devel/lib/netloop/<name>``)."""
    candidates = [DEVEL / "lib" / "netloop" / name]
    for prefix in os.environ.get("CMAKE_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / "lib" / "netloop" / name)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(
        f"netloop binary '{name}' not found (looked in {candidates[0]}); run 'make build' first")
