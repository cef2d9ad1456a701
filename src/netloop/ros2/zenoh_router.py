"""A Zenoh router for ``transport_options.zenoh.mode: router`` (what ``zenohd`` is to rmw_zenoh):
a session opened in router mode with the run's generated configuration, by the PyPI
``eclipse-zenoh`` package (the release the nodes' shim is built on). The nodes connect to it
and find each other through it (gossip); data then goes peer to peer.

    python -m netloop.ros2.zenoh_router CONFIG.json5 [ROS arguments ignored]

Prints ``ready <zid>`` once the router listens; runs until SIGINT/SIGTERM. Exit 2 when the
configuration is refused, 3 when eclipse-zenoh is not installed.
"""
from __future__ import annotations

import signal
import sys
import threading


def main(argv: list[str]) -> int:
    args = [a for a in argv if ":=" not in a]
    if len(args) != 1:
        print("usage: python -m netloop.ros2.zenoh_router CONFIG.json5", file=sys.stderr)
        return 2
    try:
        import zenoh  # noqa: PLC0415
    except ModuleNotFoundError:
        print("zenoh_router: the Python package eclipse-zenoh is not installed (pip install -r requirements.txt)",
              file=sys.stderr)
        return 3
    try:
        config = zenoh.Config.from_file(args[0])
        session = zenoh.open(config)
    except Exception as err:  # noqa: BLE001 - zenoh's own error types
        print(f"zenoh_router: {args[0]}: {err}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"ready {session.zid()}", flush=True)
    while not stop.wait(0.2):
        pass
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
