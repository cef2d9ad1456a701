"""``netloop reproduce``: run a study's experiment files and set netloop's numbers against the
published ones.

    netloop reproduce --list                       the studies, their parts and what each reproduces
    netloop reproduce pound                        run every part of the Pound study, then compare
    netloop reproduce jordan --quick               the short variants (the shapes kept, minutes not hours)
    netloop reproduce pound --part tables          only that part (repeatable)
    netloop reproduce jordan --quick --dry-run     the parts' runs and how long they take, run nothing
    netloop reproduce pound --campaign tables=DIR  compare a campaign already run instead of running it
    netloop reproduce pound --transports tcp,udp   only these transports of every part run
    netloop reproduce jordan --shard 2/3           one share of every part's cells (docs/shards.md)
    netloop reproduce pound --link wifi6_calibrated   every part on another link profile
    netloop reproduce sanap --machines pi_laptop   the same files on real machines (a hosts file)

Each part's campaign goes to ``results/<experiment>-<stamp>/`` with its own report, as with
``netloop run``. The comparison is printed and written to
``results/reproduce_<study>[-quick]-<stamp>/`` (``reproduction.md``, ``reproduction.json``);
``make docs`` renders the newest full one of each study into ``docs/studies/<study>.md``.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from pathlib import Path

from .. import cli_options as opt
from .. import paths
from ..run_files import has_analysis, has_campaign
from ..schema import ConfigError
from ..shards import parse_shard
from . import STUDY_MODULES, UnknownStudy, available, load
from .core import StudyResult

OUTPUT_PREFIX = "reproduce_"


def list_studies() -> str:
    """The text of ``--list``: each study, its parts and what they reproduce."""
    lines = []
    for name, study in available().items():
        if isinstance(study, str):
            lines.append(f"{name:9s} ({study})")
            continue
        lines.append(f"{name:9s} {study.title}: {study.citation}")
        for part in study.parts:
            lines.append(f"    {part.name:16s} {part.reproduces:36s} experiments/{part.experiment}")
    return "\n".join(lines)


def part_experiment(study, part, quick: bool = False, link: str | None = None,
                    machines: str | None = None, transports: list[str] | None = None):
    """The experiment a part runs: its file, on ``link`` or ``machines`` when given, made short
    by :func:`netloop.experiment.quick_variant` and the part's own ``quick`` under --quick, with
    only ``transports`` (each one the part's file must list)."""
    from ..experiment import load_experiment, quick_variant, select_transports, validate_experiment
    from ..schema import to_dict
    exp = load_experiment(str(paths.EXPERIMENTS / part.experiment), machines)
    if link:
        data = to_dict(exp)
        data["link"] = link
        exp = validate_experiment(data, name=exp.name)
    if quick:
        exp = quick_variant(exp)
        if part.quick is not None:
            exp = part.quick(exp)
    try:
        return select_transports(exp, transports)
    except ConfigError as err:
        raise ConfigError(opt.TRANSPORTS, f"part {part.name}: {err.message}") from None


def estimated_minutes(exp) -> float:
    """How long an experiment runs, by ``netloop run --dry-run``'s estimate."""
    from ..experiment import estimated_run_seconds, expand, for_cell
    return sum(estimated_run_seconds(for_cell(exp, c).experiment) for c in expand(exp)) / 60


def plan_text(study, experiments: dict, shard=None) -> str:
    """What ``--dry-run`` prints: each part's file, runs (of the ``shard``) and estimated minutes,
    and the total."""
    from ..experiment import estimated_run_seconds, for_cell
    from ..shards import experiment_shard
    lines, total = [f"{study.name}: {len(experiments)} part(s)" + (f", shard {shard.label}" if shard else "")], 0.0
    for name, exp in experiments.items():
        cells = experiment_shard(exp, shard)[0]
        runs, minutes = len(cells), sum(estimated_run_seconds(for_cell(exp, c).experiment) for c in cells) / 60
        total += minutes
        lines.append(f"  {name:16s} {runs:4d} runs  ~{minutes:5.1f} min  {exp.name} "
                     f"(link {exp.link}{', machines ' + exp.machines if exp.machines else ''})")
    lines.append(f"about {total:.0f} min in all")
    return "\n".join(lines)


def run_part(exp, results_parent: Path | None, shard=None) -> Path:
    """Run one part's experiment (or its ``shard``) into a new campaign directory and write its report."""
    from .. import runner
    from ..analysis.report import write_report
    out = runner.campaign_dir_for(exp, results_parent, shard)
    print(f"netloop reproduce: running {exp.name}{f' shard {shard.label}' if shard else ''} into {out}", flush=True)
    if exp.machines:
        runner.check_machines(exp)
    runner.run_experiment(exp, out, shard=shard)
    write_report(out)
    return out


def _given_results(items: list[str], study) -> dict:
    """``["tables=DIR", ...]`` -> {part: Path}; ConfigError naming the bad item."""
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            raise ConfigError(opt.CAMPAIGN, f"{item!r} is not PART=DIR; the parts of {study.name}: "
                                            + ", ".join(p.name for p in study.parts))
        try:
            study.part(name)
        except KeyError as err:
            raise ConfigError(opt.CAMPAIGN, str(err.args[0])) from None
        if not has_analysis(path) and not has_campaign(path):
            raise ConfigError(opt.CAMPAIGN, f"{path} is not a campaign directory (no campaign.json)")
        out[name] = Path(path)
    return out


def write_reproduction(study, result: StudyResult, quick: bool, parent: Path | None) -> Path:
    """``reproduce_<study>[-quick]-<stamp>/`` with reproduction.json and reproduction.md."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(parent or paths.RESULTS) / f"{OUTPUT_PREFIX}{study.name}{'-quick' if quick else ''}-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    data = {"study": study.name, "title": study.title, "citation": study.citation, "quick": quick,
            "written": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "parts": {p.name: {"experiment": p.experiment, "reproduces": p.reproduces} for p in study.parts},
            **result.to_json()}
    data["campaigns"] = {k: os.path.relpath(v, out) for k, v in result.campaigns.items()}
    (out / "reproduction.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    head = (f"# {study.title}{' (quick variants)' if quick else ''}\n\n{study.citation}\n\n"
            + "".join(f"- {p.reproduces}: `experiments/{p.experiment}`"
                      + (f" → `{data['campaigns'][p.name]}`" if p.name in data["campaigns"] else " (not run)")
                      + "\n" for p in study.parts) + "\n")
    (out / "reproduction.md").write_text(head + result.markdown(), encoding="utf-8")
    return out


def main(args) -> int:
    if args.list or not args.study:
        if not args.list:
            print(f"netloop reproduce: name a study ({', '.join(STUDY_MODULES)}) or --list", file=sys.stderr)
            return 2
        print(list_studies())
        return 0
    try:
        study = load(args.study)
    except UnknownStudy as err:
        print(f"netloop reproduce: {err.args[0]}", file=sys.stderr)
        return 2
    unknown = [n for n in args.part if n not in {p.name for p in study.parts}]
    if unknown:
        raise ConfigError("--part", f"{', '.join(unknown)}: study {study.name} has the parts "
                                    + ", ".join(p.name for p in study.parts))
    campaigns = _given_results(args.campaign, study)
    wanted = [p for p in study.parts if (not args.part or p.name in args.part) and p.name not in campaigns]
    if args.campaign and not args.part:
        wanted = []          # --campaign alone: compare what was given, run nothing
    # every part's experiment is built (and refused) before the first one runs
    experiments = {p.name: part_experiment(study, p, args.quick, args.link, args.machines, args.transports)
                   for p in wanted}
    shard = parse_shard(args.shard)
    if args.dry_run:
        print(plan_text(study, experiments, shard))
        return 0
    if experiments and not args.machines and os.geteuid() != 0 and \
            any(e.link != "loopback" for e in experiments.values()):
        print("netloop reproduce: these experiments need root (they create network namespaces)",
              file=sys.stderr)
        return 2
    if experiments:
        from .. import runner
        print(f"netloop reproduce: {study.name}: {len(experiments)} part(s), about "
              f"{sum(estimated_minutes(e) for e in experiments.values()):.0f} min", flush=True)
        runner.install_signal_handlers()
    for i, (name, exp) in enumerate(experiments.items(), 1):
        print(f"netloop reproduce: part {i}/{len(experiments)} {name} ({study.part(name).reproduces})",
              flush=True)
        try:
            campaigns[name] = run_part(exp, args.out, shard)
        except Exception as err:  # noqa: BLE001 - an interrupt or a refused machine: say what is kept
            from .. import runner
            from ..machines import RealHostsError
            if not isinstance(err, (runner.Interrupted, RealHostsError)):
                raise
            done = ", ".join(f"{k}={v}" for k, v in campaigns.items())
            print(f"netloop reproduce: stopped in part {name} ({err}); campaigns kept: {done or 'none'}"
                  + (f"; compare them with: netloop reproduce {study.name} "
                     + " ".join(f"--campaign {k}={v}" for k, v in campaigns.items()) if campaigns else ""),
                  file=sys.stderr)
            return 130 if isinstance(err, runner.Interrupted) else 2
    if shard:   # one share of each part: compared once the shards are merged
        print(f"netloop reproduce: shard {shard.label} of {study.name} done: "
              + ", ".join(f"{k}={v}" for k, v in campaigns.items())
              + f"; merge each part's shards with 'netloop report SHARD...', then compare: netloop reproduce "
                f"{study.name}" + "".join(f" --campaign {k}=MERGED" for k in campaigns))
        return 0
    result = study.compare(campaigns)
    out = write_reproduction(study, result, args.quick, args.out)
    print(f"\n{study.title} — published vs netloop{' (quick variants)' if args.quick else ''}\n")
    print(result.markdown())
    print(f"netloop reproduce: written to {out}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="run a study's experiment files and print published vs netloop "
                                         "(pound, jordan, maruyama, sanap)",
                       description="Run the experiment files of a study netloop is built from and set "
                                   "every number netloop can measure against the published one, with "
                                   "a verdict against a stated tolerance, and the study's shapes "
                                   "(a knee, a collapse, a ranking) judged. docs/studies/ has the results.")
    p.add_argument("study", nargs="?", help=f"the study: {', '.join(STUDY_MODULES)}")
    p.add_argument("--list", action="store_true", help="list the studies, their parts and files, run nothing")
    p.add_argument("--quick", action="store_true",
                   help="the short variants (1 repetition, fewer messages and points; the shapes kept)")
    p.add_argument("--part", action="append", default=[], metavar="PART",
                   help="run only this part (repeatable; --list shows the parts)")
    opt.add_campaign(p, "compare this campaign for PART instead of running it (repeatable); with no --part "
                        "nothing else runs", action="append", default=[], metavar="PART=CAMPAIGN")
    p.add_argument("--dry-run", action="store_true",
                   help="print each part's runs and estimated duration, run nothing")
    p.add_argument("--link", default=None, help="run every part on this link profile instead of its own")
    p.add_argument("--machines", metavar="HOSTS", default=None,
                   help="run on real machines over SSH (a hosts file, as for 'netloop run')")
    opt.add_out(p, "where the parts' campaigns and the comparison go: new folders in DIR (default results/)")
    opt.add_transports(p, of="every part's")
    opt.add_shard(p)
    opt.renamed(p, "--results", opt.CAMPAIGN)
    opt.renamed(p, "--results-parent", opt.OUT)
    p.set_defaults(func=main)
