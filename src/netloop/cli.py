"""The ``netloop`` command.

    netloop --version                                          the version (package.xml's)
    netloop run EXPERIMENT.yaml [--out DIR] [--dry-run]        run an experiment, then report
    netloop run --shard K/N [--transports A,B] EXPERIMENT.yaml one share of its cells, some transports
    netloop report CAMPAIGN [CAMPAIGN ...]                     (re)write a report; several shards: merge
    netloop validate EXPERIMENT.yaml ...                       check experiment files only
    netloop compare A B [--out DIR]                            two campaigns side by side
    netloop plot --live | RUN_DIR                              the loop's signals, live or recorded
    netloop testbed up|down|status                             emulated hosts and links
    netloop bag synthetic --out F.bag                          a LaserScan bag for the LIDAR flow
    netloop bag lidar --world W --out F.bag                    record one from the simulated car
    netloop bench [--out DIR] [--only PARTS]                   latency and throughput benchmarks
    netloop calibrate PROFILE [--part all|tables|fig19]        published vs netloop (Pound Tables I-II, Fig. 19)
    netloop reproduce STUDY [--quick] | --list                 a study's files run, published vs netloop
    netloop fetch RUN_DIR [--machines HOSTS]                   records a real-machine run left on its machines

Building the parser imports Python's standard library and PyYAML only: every module a
``register`` function comes from keeps numpy, scipy, control, matplotlib, rospy and the
simulator inside the functions that run a command. So ``--help`` of every command,
``validate`` and ``run --dry-run`` work on a fresh clone; ``bin/netloop`` runs them with the
system's Python when the package is not built yet (no ``.venv``) and sets ``NETLOOP_MISSING``,
and every other command then stops with one line saying what is missing. In a built checkout
too, every command is listed whatever is installed: one whose dependency is missing (matplotlib
for ``compare`` and ``plot``, rospy for ``plot --live``, the generated ``netloop.msg``) stops
with one line naming it and how to install it (:func:`missing_dependency`).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from . import cli_options as opt
from .schema import ConfigError


def _warn(cfg) -> None:
    from .experiment import experiment_warnings
    for w in experiment_warnings(cfg):
        print(f"netloop: warning: {w}", file=sys.stderr)
    if any(f.kind == "topic" and f.datatype for f in cfg.flows) and importlib.util.find_spec("roslib") is None:
        print("netloop: warning: the flows' message types (datatype) are not checked: no ROS Python here "
              "(missing: roslib); 'run' checks them", file=sys.stderr)


def experiment_keys_markdown() -> str:
    """The reference table of experiment-file keys, generated from the typed model."""
    from .model import Experiment
    from .schema import describe
    lines = ["| key | allowed | default | meaning |", "|---|---|---|---|"]
    for key, allowed, default, doc in describe(Experiment.schema):
        lines.append(f"| `{key}` | {allowed} | {default} | {doc} |".replace("||", "| |"))
    return "\n".join(lines)


def _cmd_validate(args) -> int:
    from .experiment import expand, load_experiment
    if args.keys:
        print(experiment_keys_markdown())
        return 0
    if not args.experiments:
        print("netloop validate: name experiment files (or --keys for the reference)", file=sys.stderr)
        return 2
    for path in args.experiments:
        exp = load_experiment(path, args.machines)
        _warn(exp)
        print(f"{path}: ok ({len(expand(exp))} runs: transports {', '.join(exp.transport)}, "
              f"{exp.repetitions} repetition(s), "
              + (f"real machines of {exp.machines})" if exp.machines else f"link {exp.link})"))
    return 0


def _cmd_run(args) -> int:
    from . import runner
    from .machines import RealHostsError
    from .experiment import estimated_run_seconds, expand, for_cell, load_experiment, quick_variant, select_transports
    from .shards import UNPAIRED, describe, experiment_shard, parse_shard, resumed_shard

    if args.resume:
        out = Path(args.resume)
        cfg = runner.load_campaign_config(out)
        if args.transports:
            raise ConfigError("--transports", f"--resume runs the transports {out} was started with "
                                              f"({', '.join(cfg.transport)})")
        shard = resumed_shard(out, parse_shard(args.shard))
    elif args.rerun_invalid:
        raise ConfigError("--rerun-invalid", "runs again the invalid cells of a campaign: give it "
                                             "with --resume CAMPAIGN")
    elif args.experiment:
        cfg = load_experiment(args.experiment, args.machines)   # refused here, before anything starts
        if args.quick:
            cfg = quick_variant(cfg)
        cfg = select_transports(cfg, args.transports)
        shard, out = parse_shard(args.shard), None
    else:
        print("netloop run: name an experiment file, or --resume CAMPAIGN", file=sys.stderr)
        return 2
    _warn(cfg)
    cells, split = experiment_shard(cfg, shard)
    if shard:
        print(f"netloop: {describe(shard, split, cells)}")
        if not split.paired:
            print(f"netloop: warning: {UNPAIRED}", file=sys.stderr)
    if args.dry_run:
        total = sum(estimated_run_seconds(for_cell(cfg, c).experiment) for c in cells)
        print(f"{cfg.name}: {len(cells)} runs ({len(expand(cfg)) // cfg.repetitions} cells x "
              f"{cfg.repetitions} repetitions{f', shard {shard.label}' if shard else ''}) on link "
              f"'{cfg.link}', about {total / 60:.1f} min")
        for c in cells:
            print(f"  {c.run_id}")
        return 0
    if cfg.machines is None and cfg.link != "loopback" and os.geteuid() != 0:
        print(f"netloop: link '{cfg.link}' needs root (it creates network namespaces); "
              f"run as root, or use 'link: loopback'", file=sys.stderr)
        return 2
    out = out or runner.campaign_dir_for(cfg, args.out, shard)
    print(f"netloop: running {cfg.name} ({len(cells)} runs) into {out}"
          + (f" on the machines of {cfg.machines}" if cfg.machines else ""))
    runner.install_signal_handlers()
    try:
        if cfg.machines:   # every machine checked before anything starts: one line per problem
            if args.clean_stale:
                from .machines import clean_stale_machines  # noqa: PLC0415
                clean_stale_machines(cfg.machines)
            runner.check_machines(cfg, skip=args.skip_check)
        runner.run_experiment(cfg, out, resume=bool(args.resume), shard=shard,
                              rerun_invalid=bool(args.resume and args.rerun_invalid))
    except RealHostsError as err:
        print(f"netloop: {err}", file=sys.stderr)
        return 2
    except runner.Interrupted as sig:
        print(f"netloop: interrupted ({sig}); what was recorded is kept in {out}; "
              f"continue with: netloop run --resume {out}", file=sys.stderr)
        return 130
    from .analysis.rendering import print_summary  # noqa: PLC0415
    from .analysis.report import write_report_document  # matplotlib: only once there is something to plot
    doc = write_report_document(out)
    print(f"netloop: {runner.campaign_summary(out)}")
    hint = runner.rerun_hint(out)
    if hint:
        print(f"netloop: {hint}")
    print_summary(doc.summary())
    print(f"netloop: report written to {doc.written[1]}")
    return 0


def _cmd_report(args) -> int:
    from .analysis.rendering import print_summary  # noqa: PLC0415
    from .analysis.report import ReportError, write_report_document
    from .merge import MergeError, merge_campaigns
    try:
        path = Path(args.campaigns[0])
        if len(args.campaigns) > 1:   # shards of one campaign: merged into a new one first
            path = merge_campaigns([Path(c) for c in args.campaigns], args.out)
            print(f"netloop report: merged {len(args.campaigns)} shards into {path}")
        doc = write_report_document(path)
    except (ReportError, MergeError) as err:
        print(f"netloop report: {err}", file=sys.stderr)
        return 2
    print_summary(doc.summary())
    print(doc.written[1])
    return 0


def _cmd_bench(args) -> int:
    from . import bench_suite
    try:
        bench_suite.parse_only(args.only)
    except ValueError as err:
        print(f"netloop bench: {err}", file=sys.stderr)
        return 2
    return bench_suite.main(Path(args.out), args.only)


#: Set by bin/netloop when it runs without the built package: what is missing (".venv, .build").
MISSING_ENV = "NETLOOP_MISSING"

_DESCRIPTION = """\
Control-over-network experiments for ROS 1 and ROS 2: a control loop (and perturbing flows) run
over an emulated or real network once per transport (TCPROS, UDPROS and netloop's relays; Cyclone
DDS, Fast DDS and Zenoh under ROS 2's names and QoS), then a report of how much each transport
degrades the loop."""

_EPILOG = """\
common commands:
  netloop validate experiments/rlc_loopback.yaml       check an experiment file, run nothing
  netloop run --dry-run experiments/rlc_loopback.yaml  list its runs and their duration
  netloop run experiments/rlc_loopback.yaml            run it (loopback: no root), write the report
  netloop run --transports tcp,udp FILE                only some of the file's transports
  netloop report results/<campaign>                    write a campaign's report again
  netloop run --shard 2/3 FILE                         one of 3 shares of its runs (docs/shards.md)
  netloop report SHARD SHARD SHARD                     the shares merged into one campaign
  netloop validate --keys                              every key an experiment file may hold
  netloop COMMAND --help                               the flags of one command

Every command and flag: docs/cli.md. --help, validate and run --dry-run need only Python 3
and PyYAML; the other commands need the built package ('make build')."""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every sub-command, with help strings (docs/cli.md is generated
    from it). Imports no heavy module (see the module docstring)."""
    from . import __version__
    parser = argparse.ArgumentParser(
        prog="netloop", description=_DESCRIPTION, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"netloop {__version__}",
                        help="print netloop's version (package.xml's; every run records it) and exit")
    sub = parser.add_subparsers(dest="command", required=True, title="commands")

    p = sub.add_parser("run", help="run an experiment file and write its report",
                       description="Run every cell of an experiment (transports x sweep x repetitions) "
                                   "into a new campaign directory, then write its report.")
    p.add_argument("experiment", nargs="?", help="experiment YAML file (see experiments/)")
    opt.add_out(p, "where the campaign goes: a new folder DIR/<name>-<date>-<time>/ (default results/)")
    p.add_argument("--dry-run", action="store_true", help="print the runs and the expected duration, run nothing")
    p.add_argument("--resume", metavar="CAMPAIGN",
                   help="run only the cells a campaign (or a shard's campaign) is missing")
    p.add_argument("--rerun-invalid", action="store_true",
                   help="with --resume: also run again the cells whose link fell behind real time "
                        "in every attempt (a starved host), each earlier attempt kept in invalid/")
    opt.add_transports(p)
    opt.add_shard(p)
    p.add_argument("--quick", action="store_true",
                   help="a short variant: 1 repetition, ~2 s of loop, flows cut to ~3 s (for tests)")
    p.add_argument("--machines", metavar="HOSTS", default=None,
                   help="run on real machines over SSH: a hosts file (name in config/hosts, or a path); "
                        "overrides the experiment's 'machines'")
    p.add_argument("--clean-stale", action="store_true",
                   help="real machines: first stop netloop processes an earlier run left running on them "
                        "(without it such processes refuse the run)")
    from .prerun_checks import add_flag as add_skip_check   # --skip-check NAME: the pre-run checks
    add_skip_check(p)
    opt.renamed(p, "--results", opt.OUT)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("report", help="write report.html, report.md, CSV tables and figures for a campaign; "
                                      "several shards of one campaign: merge them into one, then report it")
    p.add_argument("campaigns", nargs="+", metavar="CAMPAIGN",
                   help="a campaign (or one run directory); several: the shards of one campaign "
                        "('run --shard'), merged first (refused with the reason when they do not fit)")
    opt.add_out(p, "with several shards: where the merged campaign goes, a new folder DIR/<name>-<date>-<time>/ "
                   "(default results/)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("validate", help="check experiment files without running anything")
    p.add_argument("experiments", nargs="*", help="experiment YAML files to check")
    p.add_argument("--keys", action="store_true", help="print every key an experiment file may hold")
    p.add_argument("--machines", metavar="HOSTS", default=None, help="validate for these real machines (hosts file)")
    p.set_defaults(func=_cmd_validate)

    p = sub.add_parser("bench", help="benchmarks (latency per transport, sustained echo rate, ...)")
    p.add_argument("--out", default="bench", help="directory for bench.md and bench.json (default bench/)")
    p.add_argument("--only", metavar="PARTS", default=None,
                   help="comma-separated parts to run (latency, echo, testbed, simulator, relays, priority, "
                        "ros2, calibration); the others' figures in OUT/bench.json are kept")
    p.set_defaults(func=_cmd_bench)

    from .testbed.command import register as register_testbed
    register_testbed(sub)

    from .calibrate_link import register as register_calibrate
    register_calibrate(sub)

    from .studies.cli import register as register_reproduce  # netloop reproduce STUDY
    register_reproduce(sub)

    from .bags import register as register_bag  # netloop bag synthetic|lidar
    register_bag(sub)

    from .analysis.commands import register as register_analysis  # netloop compare, netloop plot
    register_analysis(sub)

    from .records_home import register as register_fetch  # netloop fetch RUN_DIR
    register_fetch(sub)
    return parser


def _command_name(args) -> str:
    """``run``, ``bag lidar``, ``testbed up``: the command as typed, for messages."""
    words = (args.command, getattr(args, "bag_command", None), getattr(args, "testbed_cmd", None))
    return " ".join(w for w in words if w)


def _runs_without_build(args) -> bool:
    """Commands that need Python and PyYAML only (as does every --help)."""
    return args.command == "validate" or (args.command == "run" and args.dry_run) or \
        (args.command == "reproduce" and (args.list or args.dry_run))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    name = _command_name(args)
    missing = os.environ.get(MISSING_ENV)
    if missing and not _runs_without_build(args):
        hint = "; 'run --dry-run' works without it" if args.command == "run" else ""
        print(f"netloop: '{name}' needs the built package: run 'make build' first (missing: {missing}){hint}",
              file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except ConfigError as err:
        print(f"netloop: invalid configuration: {err}", file=sys.stderr)
        return 2
    except FileNotFoundError as err:
        print(f"netloop: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:   # a dependency of this command (numpy, matplotlib, rospy, ...)
        problem = missing_dependency(name, err.name or "")
        if problem is None:
            raise
        print(f"netloop: {problem}", file=sys.stderr)
        return 2


#: netloop's modules that the build generates (catkin's message classes), not the checkout
GENERATED = ("netloop.msg",)


def missing_dependency(command: str, module: str) -> str | None:
    """What to tell the user when ``command`` stopped because ``module`` could not be imported:
    which dependency is missing and how to install it; None for a module of netloop's own
    sources (a bug, not a missing dependency: its traceback is shown)."""
    top = module.partition(".")[0]
    generated = next((g for g in GENERATED if module == g or module.startswith(g + ".")), None)
    if generated:
        return (f"'{command}' needs netloop's ROS message classes, which the build generates "
                f"(missing: {generated}); 'make build' builds them")
    if not top or top == "netloop":
        return None
    return (f"'{command}' needs the Python module '{top}', which is not installed "
            f"(missing: {top}); 'make build' installs it")


if __name__ == "__main__":
    sys.exit(main())
