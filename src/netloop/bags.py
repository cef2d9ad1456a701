"""LaserScan bags for the LIDAR flow, written with the real rosbag API.

:func:`synthetic_lidar_bag` writes a bag like the MIT Stata Center data used in the Pound
paper's experiments: 20 Hz ``sensor_msgs/LaserScan`` of 1048 beams over 270° with ranges
only, about 4.25 KB per message serialized. The scans are ray-cast from a robot driving
down a corridor with doorways and clutter, with range noise, so sizes and contents are
realistic; no binary file needs to be committed, and bags are cached by their parameters.
The simulator can record real scans instead (``netloop bag lidar``, :mod:`netloop.sim.bag_tool`).

Both ``netloop bag`` commands are registered from here; numpy, rosbag and the simulator are
imported only when a bag is written, so that the CLI's parser builds with Python and PyYAML alone.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import paths

if TYPE_CHECKING:
    import numpy as np

BEAMS = 1048          # 1048 float32 ranges + header and fields = 4249 bytes serialized
FOV = math.radians(270.0)
RANGE_MAX = 30.0


def _corridor_ranges(x: float, y: float, yaw: float, angles: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Ranges from (x, y, yaw) in a 2.4 m wide corridor along +x with side doorways every 6 m
    and a few boxes; vectorised ray-segment intersection."""
    import numpy as np  # noqa: PLC0415 - numpy only when a bag is written
    segments = []
    for side in (-1.2, 1.2):
        for start in np.arange(-50.0, 200.0, 6.0):
            segments.append((start, side, start + 5.0, side))           # wall between doorways
            segments.append((start + 5.0, side, start + 5.0, side * 3.0))  # doorway jamb
    for bx in (7.0, 19.0, 31.0):
        segments += [(bx, -0.3, bx + 0.4, -0.3), (bx, -0.3, bx, 0.1), (bx + 0.4, -0.3, bx + 0.4, 0.1)]
    seg = np.array(segments)
    dx, dy = np.cos(angles + yaw), np.sin(angles + yaw)
    x1, y1, x2, y2 = (seg[:, i][None, :] for i in range(4))
    ex, ey = x2 - x1, y2 - y1
    denom = dx[:, None] * ey - dy[:, None] * ex
    with np.errstate(divide="ignore", invalid="ignore"):
        t = ((x1 - x) * ey - (y1 - y) * ex) / denom
        u = ((x1 - x) * dy[:, None] - (y1 - y) * dx[:, None]) / denom
    hit = (np.abs(denom) > 1e-12) & (t > 0) & (u >= 0) & (u <= 1)
    r = np.where(hit, t, np.inf).min(axis=1)
    r = r + rng.normal(0.0, 0.01, r.shape)
    return np.where(np.isfinite(r) & (r < RANGE_MAX), r, np.inf).astype(np.float32)


def synthetic_lidar_bag(path: Path, messages: int, rate_hz: float = 20.0, topic: str = "/scan",
                        seed: int = 1) -> Path:
    """Write ``messages`` LaserScans at ``rate_hz`` to ``path`` (rosbag API); returns path."""
    import genpy  # noqa: PLC0415 - Debian's ROS Python packages
    import numpy as np  # noqa: PLC0415
    import rosbag
    from sensor_msgs.msg import LaserScan

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    angles = np.linspace(-FOV / 2, FOV / 2, BEAMS, dtype=np.float64)
    t0 = 1_700_000_000.0
    tmp = path.with_suffix(".bag.tmp")
    with rosbag.Bag(str(tmp), "w") as bag:
        for k in range(messages):
            t = k / rate_hz
            scan = LaserScan()
            scan.header.seq = k
            scan.header.stamp = genpy.Time.from_sec(t0 + t)
            scan.header.frame_id = "laser"
            scan.angle_min, scan.angle_max = -FOV / 2, FOV / 2
            scan.angle_increment = FOV / (BEAMS - 1)
            scan.time_increment = (1.0 / 40.0) / BEAMS
            scan.scan_time = 1.0 / rate_hz
            scan.range_min, scan.range_max = 0.1, RANGE_MAX
            x, y, yaw = 0.6 * t, 0.3 * math.sin(0.4 * t), 0.15 * math.sin(0.3 * t)
            scan.ranges = _corridor_ranges(x, y, yaw, angles, rng).tolist()
            bag.write(topic, scan, scan.header.stamp)
    tmp.replace(path)
    return path


def cached_lidar_bag(messages: int, rate_hz: float = 20.0) -> Path:
    """The synthetic bag for these parameters, generated once into .build/bags/."""
    path = paths.REPO / ".build" / "bags" / f"synthetic_lidar_{messages}_{rate_hz:g}hz.bag"
    if not path.exists():
        synthetic_lidar_bag(path, messages, rate_hz)
    return path


def message_type_of(bag_path: Path, topic: str) -> tuple[str, str, str]:
    """(datatype, md5sum, full definition) of ``topic`` in a bag; ValueError if absent."""
    import rosbag  # noqa: PLC0415

    with rosbag.Bag(str(bag_path)) as bag:
        for conn in bag._get_connections(topics=[topic]):
            return conn.datatype, conn.md5sum, conn.msg_def
    raise ValueError(f"{bag_path}: no topic {topic!r} in the bag")


def bag_topics(bag_path: Path) -> list[str]:
    """Topics of a bag; ValueError for a file that is not a readable bag."""
    import rosbag  # noqa: PLC0415

    try:
        with rosbag.Bag(str(bag_path)) as bag:
            return sorted(bag.get_type_and_topic_info().topics)
    except rosbag.ROSBagException as err:
        raise ValueError(f"{bag_path}: not a readable bag ({err})") from None


def add_synthetic_command(bag_subparsers) -> None:
    """``netloop bag synthetic --out FILE [--messages N] [--rate HZ] [--topic T]``."""
    p = bag_subparsers.add_parser("synthetic", help="write a synthetic 20 Hz LaserScan bag (rosbag API)")
    p.add_argument("--out", required=True, help="bag file to write")
    p.add_argument("--messages", type=int, default=1200, help="scans to write (default 1200 = 60 s at 20 Hz)")
    p.add_argument("--rate", type=float, default=20.0, help="scans per second (default 20)")
    p.add_argument("--topic", default="/scan", help="topic in the bag (default /scan)")

    def run(args) -> int:
        if args.messages < 1 or args.rate <= 0:
            print("netloop bag synthetic: --messages must be >= 1 and --rate > 0", file=sys.stderr)
            return 2
        path = synthetic_lidar_bag(Path(args.out), args.messages, args.rate, args.topic)
        print(f"{path}: {args.messages} sensor_msgs/LaserScan on {args.topic} at {args.rate:g} Hz, "
              f"{BEAMS} beams")
        return 0
    p.set_defaults(func=run)


def _cmd_lidar(args) -> int:
    from .schema import ConfigError  # noqa: PLC0415
    from .sim.bag_tool import record_lidar_bag  # noqa: PLC0415 - numpy, pybullet and rosbag
    from .sim.world import WorldError  # noqa: PLC0415
    try:
        s = record_lidar_bag(args.world, args.out, seconds=args.seconds, rate=args.rate, start=args.start,
                             x=args.x, y=args.y, yaw=args.yaw, scan_only=not args.with_odom,
                             intensities=args.intensities)
    except (WorldError, ConfigError, ValueError) as err:
        print(f"netloop bag lidar: {err}", file=sys.stderr)
        return 2
    print(f"netloop bag lidar: wrote {s['bag']}: {s['scans']} scans ({s['scan_bytes']} bytes each) at "
          f"{s['rate']:g} Hz over {s['seconds']:g} s in '{s['world']}', drove {s['distance_m']} m, "
          f"{s['wall_contacts']} wall contacts, topics {' '.join(s['topics'])} ({s['wall_time_s']} s)")
    return 0


def add_lidar_command(bag_subparsers) -> None:
    """``netloop bag lidar --world W --out F.bag [--seconds N] [--rate HZ] ...`` (:mod:`netloop.sim.bag_tool`)."""
    p = bag_subparsers.add_parser("lidar", help="drive the simulated car around a world and record its LaserScans",
                                  description="The simulated car (pybullet, no ROS master) drives itself around "
                                              "the world avoiding walls; its scans are written with the rosbag API.")
    p.add_argument("--world", required=True, help="arena | tunnel | path of an SDF .world file")
    p.add_argument("--out", required=True, help="bag file to write")
    p.add_argument("--seconds", type=float, default=30.0, help="simulated seconds to record (default 30)")
    p.add_argument("--rate", type=float, default=20.0, help="scans per second (default 20)")
    p.add_argument("--start", type=float, default=None, help="stamp of the first scan, Unix seconds (default now)")
    p.add_argument("--x", type=float, default=0.0, help="start position of the car, x (m, default 0)")
    p.add_argument("--y", type=float, default=0.0, help="start position of the car, y (m, default 0)")
    p.add_argument("--yaw", type=float, default=0.0, help="start heading (rad, default 0)")
    p.add_argument("--with-odom", action="store_true", help="also /odom, /tf and /tf_static (default: /scan only)")
    p.add_argument("--intensities", action="store_true", help="fill intensities (zeros), as Gazebo does")
    p.set_defaults(func=_cmd_lidar)


def register(sub) -> None:
    """``netloop bag synthetic|lidar`` on the main CLI's sub-parser collection."""
    bag = sub.add_parser("bag", help="make LaserScan bags for the LIDAR flow",
                         description="LaserScan bags for the lidar_bag flow: a synthetic corridor (synthetic) "
                                     "or scans recorded from the simulated car (lidar).")
    bag_sub = bag.add_subparsers(dest="bag_command", required=True)
    add_synthetic_command(bag_sub)
    add_lidar_command(bag_sub)
