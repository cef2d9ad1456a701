"""Analysis commands of the ``netloop`` CLI, always registered by netloop.cli (numpy and
matplotlib are imported only when one of them runs):

    netloop compare A B [--out DIR] [--labels NAME_A NAME_B]   two campaigns side by side
    netloop plot --live [--seconds N] [--save FILE.png]        the running loop, live
    netloop plot RUN_DIR [--save FILE.png]                      the same panels from a recorded run
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_compare(args) -> int:
    from .compare import compare  # noqa: PLC0415 - matplotlib only when needed
    from .rendering import print_summary  # noqa: PLC0415
    from .report import ReportError  # noqa: PLC0415
    try:
        doc = compare(Path(args.a), Path(args.b), Path(args.out), tuple(args.labels) if args.labels else None)
    except ReportError as err:
        print(f"netloop compare: {err}", file=sys.stderr)
        return 2
    md, html = doc.written
    print_summary(doc.summary())
    print(html)
    print(md)
    return 0


def _cmd_plot(args) -> int:
    if args.live:
        if args.run_dir:
            print("netloop plot: --live reads the running loop's topics; give no RUN_DIR", file=sys.stderr)
            return 2
        from .live import run_live  # noqa: PLC0415
        return run_live(seconds=args.seconds, save=args.save, y_topic=args.y_topic, u_topic=args.u_topic,
                        window_s=args.window)
    if not args.run_dir:
        print("netloop plot: give --live (the running loop) or a RUN_DIR (a recorded run)", file=sys.stderr)
        return 2
    from .live import plot_recorded  # noqa: PLC0415
    from .records import RecordError  # noqa: PLC0415
    try:
        print(plot_recorded(Path(args.run_dir), args.save))
    except (RecordError, ValueError) as err:
        print(f"netloop plot: {err}", file=sys.stderr)
        return 2
    return 0


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def register(sub) -> None:
    p = sub.add_parser("compare", help="two campaigns side by side (compare.html, compare.md)")
    p.add_argument("a", help="campaign (results directory) A")
    p.add_argument("b", help="campaign (results directory) B")
    p.add_argument("--out", default=".", help="directory for compare.html, compare.md, compare.csv and "
                                              "compare_figures/ (default: the current directory)")
    p.add_argument("--labels", nargs=2, metavar=("NAME_A", "NAME_B"), help="names of A and B in the tables")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("plot", help="live view of the running loop (--live), or the signals of a recorded run",
                       epilog="rqt users (ROS Noetic with rqt_plot) can plot /y/value and /u/value with "
                              "'rqt --perspective-file config/netloop.perspective'; rqt is not installable on "
                              "Debian 12, so netloop's own live view is the way here.")
    p.add_argument("run_dir", nargs="?", help="a recorded run directory (without --live)")
    p.add_argument("--live", action="store_true", help="subscribe to the running loop's /y and /u")
    p.add_argument("--seconds", type=_positive, default=None, help="stop after N seconds (default: until closed)")
    p.add_argument("--save", type=Path, default=None, help="write the (last) view to this PNG file")
    p.add_argument("--window", type=_positive, default=10.0, help="seconds shown in the live view (default 10)")
    p.add_argument("--y-topic", default="/y", help="sensor topic (default /y)")
    p.add_argument("--u-topic", default="/u", help="actuation topic (default /u)")
    p.set_defaults(func=_cmd_plot)
