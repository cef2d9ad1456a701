"""Where things are: the repository, the catkin build, the node binaries, the results."""
from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve()
#: True in a source checkout (and its devel space), False in an install space.
IN_CHECKOUT = (_HERE.parents[2] / "package.xml").is_file()
#: The package's files (config/, experiments/, worlds/, ...): the repository root in a
#: checkout; ``<prefix>/share/netloop`` when installed (``<prefix>/lib/python3/dist-packages/netloop``).
REPO = _HERE.parents[2] if IN_CHECKOUT else _HERE.parents[4] / "share" / "netloop"
#: Catkin workspace made by ``make build`` (``src/netloop`` links back to REPO).
WORKSPACE = Path(os.environ.get("NETLOOP_WORKSPACE", REPO / ".build" / "ws"))
DEVEL = WORKSPACE / "devel"
CONFIG = REPO / "config"
EXPERIMENTS = REPO / "experiments"
RESULTS = Path(os.environ.get("NETLOOP_RESULTS", REPO / "results" if IN_CHECKOUT else Path.cwd() / "results"))


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
