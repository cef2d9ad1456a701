"""``netloop calibrate PROFILE``: run the Pound paper's scenarios on a link profile and print
how close each transport's numbers come to the published ones: the two-flow scenario (Tables I
and II) and the single-flow bandwidth against message size (Fig. 19).

    netloop calibrate wifi6                      both: pound_tables_1_2.yaml and pound_fig19.yaml
    netloop calibrate wifi6 --part tables        only Tables I-II (--part fig19: only Fig. 19)
    netloop calibrate wifi6 --campaign DIR       only compare a campaign already run (no run);
                                                 --fig19-campaign DIR the same for Fig. 19
    netloop calibrate wifi6 --transports tcp,udp run only those transports
    netloop calibrate wifi6 --link-param background_pairs=1 --link-param background_mbit=0.5
                                                 the profile with these values (to calibrate them)

The published numbers, the tolerances and the shape rules live in
:mod:`netloop.studies.pound` (``netloop reproduce pound`` judges the same parts with the same
functions); this module is the link-fitting front: it runs the two parts on any profile, with
``--link-param`` overrides, and prints the tables in the layout of the paper's (D, std(J_d), MDR
per method and flow, std(D) beside; Fig. 19's delivered rate per size). netloop's numbers come
from the campaign's ``analysis.json`` (written by ``netloop report``); runs whose link lagged
real time (``link_health.valid`` false) are left out and counted, and the attempts run again for
it counted too. With several repetitions the median of the runs is used.

Verdicts (the study's): D and std(J_d) within a factor of 2 of the published value, or within
3 ms where the published value is below 6 ms; MDR within 2 points; the ranking of the methods
by laser D (Spearman's rho and the two orders); each Fig. 19 curve against the shape the paper
shows for it (:func:`netloop.studies.pound.fig19_verdict`).
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path


from . import cli_options as opt
from . import paths
from .run_files import has_analysis
from .studies import pound
from .studies.core import MATCH, MISS, NOT_MEASURED, Comparison, campaign_runs

#: the published numbers and the verdict rules: one code path with ``netloop reproduce pound``
PUBLISHED, METHODS = pound.PUBLISHED, pound.METHODS
PUBLISHED_LASER, PUBLISHED_IMAGE = pound.PUBLISHED_LASER, pound.PUBLISHED_IMAGE
FIG19_SHAPE, fig19_verdict, source_jitter_floor = pound.FIG19_SHAPE, pound.fig19_verdict, pound.source_jitter_floor
EXPERIMENT = pound.STUDY.part("tables").experiment      # in experiments/
FIG19_EXPERIMENT = pound.STUDY.part("fig19").experiment
#: each part's experiment file, and the option that judges a campaign of it already run
PART_EXPERIMENTS = {"tables": EXPERIMENT, "fig19": FIG19_EXPERIMENT}
JUDGE_OPTION = {"tables": "--campaign", "fig19": "--fig19-campaign"}
#: the study's verdict -> this table's word
WORD = {MATCH: "ok", MISS: "off", NOT_MEASURED: "missing"}


def verdict_ms(published: float, ours: float | None) -> str:
    """D or std(J_d) judged by the study's tolerance (:func:`netloop.studies.pound.ms_tolerance`)."""
    return WORD[Comparison("", "ms", published, ours, pound.ms_tolerance(published)).verdict]


def verdict_mdr(published: float, ours: float | None) -> str:
    return WORD[Comparison("", "%", published, ours, pound.MDR_TOLERANCE).verdict]


#: the runs of a campaign whose link kept real time, and the counts (one implementation for
#: calibrate and every study)
valid_runs = campaign_runs


def read_campaign(results: Path) -> tuple[dict, dict]:
    """{transport: {flow: {"D", "std_Jd", "MDR", "std_D", "std_source"}}} (median over the valid
    runs; ``std_source`` is the std of the source's own publish period) and counts."""
    runs, counts = valid_runs(results)
    return pound.flow_stats(runs), counts


def read_bandwidth(results: Path) -> tuple[dict, dict]:
    """{transport: {size_bytes: delivered Mbit/s}} of a Fig. 19 campaign (median over the valid
    runs of each cell; a run that delivered nothing counts as 0) and the counts."""
    runs, counts = valid_runs(results)
    return pound.bandwidth_curves(runs), counts


_size, _published_shape = pound._size, pound.published_shape


def _runs_line(counts: dict, results: Path, part: str) -> str:
    """How many runs a campaign of ``part`` had, which were left out because ns-3 lagged, and
    how to run those again."""
    line = (f"runs: {counts['runs']}, left out for ns-3 lag: {counts['invalid']}"
            + (f" ({', '.join(counts['invalid_runs'])})" if counts["invalid_runs"] else "")
            + f"; attempts judged invalid and run again: {counts['invalid_attempts']}"
            + (f" ({', '.join(counts['rerun_runs'])})" if counts["rerun_runs"] else ""))
    if counts["invalid"]:
        line += (f"\nrun the left-out cells again when the host is quieter: netloop run --resume "
                 f"{results} --rerun-invalid; then judge the campaign with {JUDGE_OPTION[part]} {results}")
    return line


def format_fig19(curves: dict, counts: dict, profile: str, results: Path) -> str:
    sizes = sorted({s for c in curves.values() for s in c})
    lines = [f"Fig. 19 on '{profile}': delivered Mbit/s of one saturated sender against the message size "
             f"({results})",
             _runs_line(counts, results, "fig19"), "",
             "| transport | the paper's curve | " + " | ".join(_size(s) for s in sizes) + " | verdict |",
             "|---|---|" + "---|" * len(sizes) + "---|"]
    ok = judged = 0
    for transport in sorted(curves, key=lambda t: (t not in FIG19_SHAPE, t)):
        curve = curves[transport]
        v = fig19_verdict(transport, curve)
        judged += v == "ok" or v.startswith("off")
        ok += v == "ok"
        cells = " | ".join("—" if curve.get(s) is None else f"{curve[s]:.2f}" for s in sizes)
        lines.append(f"| {transport} | {_published_shape(transport)} | {cells} | {v} |")
    lines += ["", f"shape as published: {ok} of {judged} transports"]
    return "\n".join(lines)


def source_bound(row: dict) -> bool:
    """True for a std(J_d) row judged off whose published value needs more source jitter than
    netloop's source had (:func:`source_jitter_floor`): the link alone cannot account for it."""
    floor, ours = row.get("published_source_floor"), row.get("netloop_source_std")
    return (row.get("metric") == "std_Jd" and row.get("verdict") == "off" and ours is not None
            and floor is not None and floor > ours and (row["netloop"] or 0.0) < row["published"])


def fidelity(ours: dict) -> dict:
    """Rows of the fidelity table and the ranking comparison, judged by the study's code
    (:func:`netloop.studies.pound.table_comparisons`). A std(J_d) row also carries the
    published and netloop std(D), netloop's source jitter (``netloop_source_std``) and the least
    source jitter the published numbers imply (``published_source_floor``,
    :func:`source_jitter_floor`): where that floor is above netloop's source jitter, part of
    the published std(J_d) is the paper's source's, not its link's."""
    comps = iter(pound.table_comparisons(ours))
    rows = []
    for flow, table in PUBLISHED.items():
        for method, pub in table.items():
            got = ours.get(METHODS[method], {}).get(flow, {})
            for metric in pound.METRICS:
                c = next(comps)
                row = {"flow": flow, "method": method, "transport": METHODS[method], "metric": metric,
                       "published": c.published, "netloop": c.ours,
                       "ratio": c.ratio if metric != "MDR" else None, "verdict": WORD[c.verdict]}
                if metric == "std_Jd":
                    row.update({"published_std_D": pub[3], "netloop_std_D": got.get("std_D"),
                                "netloop_source_std": got.get("std_source"),
                                "published_source_floor": source_jitter_floor(pub[1], pub[3])})
                rows.append(row)
    ok = sum(r["verdict"] == "ok" for r in rows)
    judged = sum(r["verdict"] in ("ok", "off") for r in rows)
    return {"rows": rows, "ranking": pound.ranking(ours), "ok": ok, "judged": judged}


def format_table(result: dict, counts: dict, profile: str, results: Path) -> str:
    lines = [f"Fidelity of '{profile}' against the Pound paper, Tables I (laser) and II (image), "
             f"2 nodes ({results})",
             _runs_line(counts, results, "tables"), "", "| flow | method (transport) | D: published → netloop (ratio) | "
             "std(J_d): published → netloop (ratio) | MDR %: published → netloop | verdict | "
             "std(D): published → netloop (not a target) |",
             "|---|---|---|---|---|---|---|"]
    groups: dict[tuple, dict] = {}
    for r in result["rows"]:
        groups.setdefault((r["flow"], r["method"], r["transport"]), {})[r["metric"]] = r

    def cell(r: dict) -> str:
        if r["netloop"] is None:
            return f"{r['published']:g} → —"
        ratio = "" if r["ratio"] is None else f" ({r['ratio']:.2f}×)"
        return f"{r['published']:g} → {r['netloop']:.1f}{ratio}"

    def std_d(r: dict) -> str:
        ours = r.get("netloop_std_D")
        return f"{r['published_std_D']:g} → " + ("—" if ours is None else f"{ours:.1f}")

    for (flow, method, transport), m in groups.items():
        verdicts = [m[k]["verdict"] for k in ("D", "std_Jd", "MDR")]
        off = [k.replace("std_Jd", "std(J_d)") for k in ("D", "std_Jd", "MDR")
               if m[k]["verdict"] == "off"]
        verdict = ("missing" if "missing" in verdicts else "ok" if not off
                   else "off: " + ", ".join(off))
        if source_bound(m["std_Jd"]):
            verdict += f" (≥ {m['std_Jd']['published_source_floor']:.1f} ms of it the paper's source's)"
        lines.append(f"| {flow} | {method} ({transport}) | {cell(m['D'])} | {cell(m['std_Jd'])} | "
                     f"{cell(m['MDR'])} | {verdict} | {std_d(m['std_Jd'])} |")
    lines.append("")
    lines.append(f"within target: {result['ok']} of {result['judged']} numbers judged")
    bound = [r for r in result["rows"] if source_bound(r)]
    if bound:
        lines.append(
            "source jitter: J_d = the source's period + the change of D, so std(J_d) <= std(source) "
            "+ 2 std(D); " + "; ".join(
                f"{r['method']}'s {r['flow']} std(J_d) {r['published']:g} ms with std(D) "
                f"{r['published_std_D']:g} ms needs a source that jittered by >= "
                f"{r['published_source_floor']:.1f} ms, netloop's jittered by "
                f"{r['netloop_source_std']:.2f} ms" for r in bound)
            + " (these std(J_d) judge the paper's source as much as its link)")
    rk = result["ranking"]
    if rk:
        lines.append(f"laser D ranking, published: {' < '.join(rk['published_order'])}")
        lines.append(f"laser D ranking, netloop:   {' < '.join(rk['netloop_order'])}"
                     f"  (Spearman rho {rk['spearman_rho']:.2f})")
    return "\n".join(lines)


def run_campaign(experiment: str, profile: str, transports: list[str] | None,
                 results_parent: Path | None, link_params: dict | None = None) -> Path:
    """Run ``experiments/<experiment>`` on ``profile`` (only ``transports`` when given; the
    profile's keys overridden by ``link_params``) and write its report; returns the campaign
    directory."""
    from . import runner
    from .analysis.report import write_report
    from .experiment import load_experiment, select_transports, validate_experiment
    from .schema import to_dict
    exp = load_experiment(str(paths.EXPERIMENTS / experiment))
    data = to_dict(copy.deepcopy(exp))
    data["link"] = profile
    data["link_params"] = dict(link_params or {})
    data["name"] = f"calibrate_{profile}_{Path(experiment).stem}"
    exp = select_transports(validate_experiment(data, name=data["name"]), transports)
    out = runner.campaign_dir_for(exp, results_parent)
    print(f"netloop calibrate: running {exp.name} ({len(exp.transport)} transports) into {out}",
          flush=True)
    runner.install_signal_handlers()
    try:
        runner.run_experiment(exp, out)
    except runner.Interrupted as sig:
        sig.campaign, sig.experiment = out, experiment   # main() says where the runs are, how to go on
        raise
    write_report(out)
    return out


def _ensure_report(results: Path) -> Path:
    results = Path(results)
    if not has_analysis(results):
        from .analysis.report import write_report
        write_report(results)
    return results


def summarize(campaigns: dict[str, Path], profile: str) -> tuple[dict, str]:
    """The fidelity report of the campaigns given ({"tables": dir, "fig19": dir}, either or
    both): a JSON-ready dict (with the runs left out for lag) and the text to print."""
    report: dict = {"profile": profile, "invalid_runs": 0, "invalid_attempts": 0}
    texts = []
    if "tables" in campaigns:
        results = _ensure_report(campaigns["tables"])
        ours, counts = read_campaign(results)
        result = fidelity(ours)
        report["tables"] = {"results": str(results), "counts": counts, **result}
        report["invalid_runs"] += counts["invalid"]
        report["invalid_attempts"] += counts["invalid_attempts"]
        texts.append(format_table(result, counts, profile, results))
    if "fig19" in campaigns:
        results = _ensure_report(campaigns["fig19"])
        curves, counts = read_bandwidth(results)
        report["fig19"] = {"results": str(results), "counts": counts,
                           "curves": {t: {str(s): r for s, r in c.items()} for t, c in curves.items()},
                           "verdicts": {t: fig19_verdict(t, c) for t, c in curves.items()}}
        report["invalid_runs"] += counts["invalid"]
        report["invalid_attempts"] += counts["invalid_attempts"]
        texts.append(format_fig19(curves, counts, profile, results))
    return report, "\n\n".join(texts)


def run_campaigns(profile: str, parts: list[str], transports: list[str] | None,
                  results_parent: Path | None, link_params: dict | None = None) -> dict[str, Path]:
    """Run the calibration campaigns of ``parts`` ("tables", "fig19") on ``profile``."""
    return {part: run_campaign(PART_EXPERIMENTS[part], profile, transports, results_parent, link_params)
            for part in parts}


def interrupted_message(sig, profile: str) -> str:
    """What a user whose calibration was interrupted needs: where its runs are, how to finish
    that campaign, how to judge it (``sig`` as :func:`run_campaign` re-raises it)."""
    out = sig.campaign
    part = next(p for p, experiment in PART_EXPERIMENTS.items() if experiment == sig.experiment)
    return (f"netloop calibrate: interrupted ({sig}); what was recorded is kept in {out}; "
            f"continue with: netloop run --resume {out}, then judge it with: "
            f"netloop calibrate {profile} --part {part} {JUDGE_OPTION[part]} {out}")


def air_qos_line(profile: str, link_params: dict | None = None) -> str:
    """One line on what the profile's ``qos`` key does on the air ("" for links without ns-3's
    Wi-Fi): with it each frame queues and contends in the 802.11e access category Linux's
    mac80211 gives its DSCP, so a loop marked EF skips the best-effort backlog (docs/links.md,
    "802.11e QoS")."""
    from .testbed.profiles import load_profile
    p = load_profile(profile, link_params or {})
    if p.type != "ns3_wifi":
        return ""
    if p.qos:
        return ("802.11e QoS on: each frame queues and contends in the access category of its DSCP, "
                "as Linux's mac80211 maps it (RFC 8325): EF, VA, CS6, CS7 -> VO (AIFSN 2, CW 3-7); "
                "CS3, AF3x, CS4, AF4x, CS5 -> VI (2, 7-15); CS1 -> BK (7, 15-1023); unmarked and "
                "the rest -> BE (3, 15-1023)")
    return ("802.11e QoS off: every frame in one queue with the same channel access, whatever "
            f"its DSCP{' (802.11n: QoS MACs, all best effort)' if p.standard == '802.11n' else ''}"
            " (qos: true, e.g. wifi6_qos, turns it on)")


def main(args) -> int:
    parts = ["tables", "fig19"] if args.part == "all" else [args.part]
    link_params = opt.parse_link_params(args.link_param)
    given = {"tables": args.campaign, "fig19": args.fig19_campaign}
    campaigns = {p: Path(given[p]) for p in parts if given[p]}
    if not campaigns:     # nothing given: run what was asked for
        from .runner import Interrupted
        try:
            campaigns = run_campaigns(args.profile, parts, args.transports, args.out, link_params)
        except Interrupted as sig:
            print(interrupted_message(sig, args.profile), file=sys.stderr)
            return 130
    report, text = summarize(campaigns, args.profile)
    qos = air_qos_line(args.profile, link_params)
    print(text + (f"\n\n{qos}" if qos else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="run the Pound paper's scenarios on a link profile and "
                                         "print published vs netloop (Tables I-II, Fig. 19)")
    p.add_argument("profile", help="link profile (e.g. wifi6)")
    p.add_argument("--part", choices=["all", "tables", "fig19"], default="all",
                   help="which comparison: the two-flow Tables I-II, the bandwidth sweep of "
                        "Fig. 19, or both (default)")
    opt.add_campaign(p, "compare this Tables I-II campaign instead of running one", metavar="CAMPAIGN")
    p.add_argument("--fig19-campaign", metavar="CAMPAIGN", help="compare this Fig. 19 campaign instead of running one")
    opt.add_out(p, "where the new campaigns go: new folders in DIR (default results/)")
    opt.add_transports(p, of="the scenarios'")
    opt.add_link_param(p, "set a key of the link profile for this calibration")
    p.add_argument("--json", help="also write the table as JSON to this file")
    opt.renamed(p, "--results", opt.CAMPAIGN)
    opt.renamed(p, "--fig19-results", "--fig19-campaign")
    opt.renamed(p, "--results-parent", opt.OUT)
    p.set_defaults(func=main)


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="netloop")
    register(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args()
    sys.exit(a.func(a))
