"""``netloop calibrate PROFILE``: run the Pound paper's two-flow scenario on a link profile and
print how close each transport's numbers come to the published ones (Tables I and II).

    netloop calibrate wifi6                      run experiments/pound_flows_2node.yaml on wifi6
    netloop calibrate wifi6 --results DIR        only compare a campaign already run (no run)
    netloop calibrate wifi6 --transports tcp,udp run only those transports

The published numbers are Tardioli, Parasuraman, Ögren, "Pound: A ROS node for Reducing Delay
and Jitter in Wireless Multi-Robot Networks", Tables I (laser, 1 KB / 20 ms) and II (image,
64 KB / 150 ms), two computers on 802.11 ad-hoc at 6 Mbit/s (as quoted in the project's
shared REFERENCE_RESULTS.md). netloop's numbers come from the campaign's ``analysis.json``
(written by ``netloop report``); runs whose link lagged real time (``link_health.valid`` false)
are left out and counted. With several repetitions the median of the runs is used.

Verdict per number (the targets of issue 10): D and std(J_d) within a factor of 2 of the
published value, or within 3 ms where the published value is below 6 ms; MDR within 2
points. The ranking of the methods by laser D is compared too (Spearman's rho and the two
orders).
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
from pathlib import Path

from . import paths

#: method -> (J_d, std J_d, D, std D, MDR %, BW Mbit/s), Pound paper Table I (laser), 2 nodes
PUBLISHED_LASER = {
    "TCP": (20.1, 13.3, 18.6, 11.6, 99.3, 0.398),
    "NOD": (20.1, 4.2, 6.0, 6.5, 99.4, 0.398),
    "UDP": (20.0, 38.2, 42.5, 34.8, 99.9, 0.400),
    "UDP/NOD": (20.0, 3.2, 5.8, 4.0, 99.8, 0.399),
    "Nimbro": (20.0, 38.1, 55.8, 46.0, 99.8, 0.400),
    "Nimbro*": (20.1, 16.0, 22.2, 12.8, 99.3, 0.397),
    "Pound": (20.0, 2.0, 4.1, 4.0, 99.8, 0.400),
}
#: the same for Table II (image)
PUBLISHED_IMAGE = {
    "TCP": (150.1, 7.7, 132.3, 5.9, 99.9, 3.418),
    "NOD": (150.1, 7.7, 132.7, 5.6, 99.9, 3.418),
    "UDP": (150.4, 7.2, 106.3, 1.9, 99.7, 3.410),
    "UDP/NOD": (150.1, 7.4, 129.1, 5.2, 99.9, 3.417),
    "Nimbro": (149.9, 5.3, 100.3, 31.5, 100.0, 3.421),
    "Nimbro*": (150.2, 44.7, 194.9, 86.2, 99.9, 3.416),
    "Pound": (150.2, 2.9, 112.0, 1.9, 99.9, 3.417),
}
PUBLISHED = {"laser": PUBLISHED_LASER, "image": PUBLISHED_IMAGE}
#: the paper's method -> netloop's transport
METHODS = {"TCP": "tcp", "NOD": "tcp_nodelay", "UDP": "udp", "UDP/NOD": "udp/tcp_nodelay",
           "Nimbro": "nimbro", "Nimbro*": "nimbro_mixed", "Pound": "priority"}
EXPERIMENT = "pound_flows_2node.yaml"   # in experiments/


def verdict_ms(published: float, ours: float | None) -> str:
    if ours is None:
        return "missing"
    if published < 6.0:
        return "ok" if abs(ours - published) <= 3.0 else "off"
    ratio = ours / published
    return "ok" if 0.5 <= ratio <= 2.0 else "off"


def verdict_mdr(published: float, ours: float | None) -> str:
    if ours is None:
        return "missing"
    return "ok" if abs(ours - published) <= 2.0 else "off"


def read_campaign(results: Path) -> tuple[dict, dict]:
    """{transport: {flow: {"D", "std_Jd", "MDR"}}} (median over valid runs) and counts."""
    analysis = json.loads((Path(results) / "analysis.json").read_text())
    per: dict[str, dict[str, dict[str, list[float]]]] = {}
    counts = {"runs": 0, "invalid": 0, "invalid_runs": []}
    for run in analysis:
        counts["runs"] += 1
        meta_path = Path(results) / "runs" / run["run_id"] / "metadata.json"
        health = {}
        try:
            health = json.loads(meta_path.read_text()).get("link_health") or {}
        except (OSError, ValueError):
            pass
        if health.get("valid") is False:
            counts["invalid"] += 1
            counts["invalid_runs"].append(run["run_id"])
            continue
        for f in run.get("flows") or []:
            d = f.get("delay") or {}
            if not d.get("n"):
                continue
            slot = per.setdefault(run["transport"], {}).setdefault(f["flow"], {
                "D": [], "std_Jd": [], "MDR": []})
            slot["D"].append(d["mean_ms"])
            slot["std_Jd"].append((f.get("period") or {}).get("std_ms"))
            slot["MDR"].append(100.0 * f["MDR"] if f.get("MDR") is not None else None)
    out = {}
    for transport, flows in per.items():
        for flow, vals in flows.items():
            out.setdefault(transport, {})[flow] = {
                k: (statistics.median([x for x in v if x is not None])
                    if any(x is not None for x in v) else None) for k, v in vals.items()}
    return out, counts


def _ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    for r, i in enumerate(order):
        ranks[i] = float(r)
    return ranks


def fidelity(ours: dict) -> dict:
    """Rows of the fidelity table and the ranking comparison."""
    rows = []
    for flow, table in PUBLISHED.items():
        for method, pub in table.items():
            got = ours.get(METHODS[method], {}).get(flow, {})
            for metric, idx, judge in (("D", 2, verdict_ms), ("std_Jd", 1, verdict_ms),
                                       ("MDR", 4, verdict_mdr)):
                value = got.get(metric)
                rows.append({"flow": flow, "method": method, "transport": METHODS[method],
                             "metric": metric, "published": pub[idx], "netloop": value,
                             "ratio": (value / pub[idx]) if value is not None and metric != "MDR"
                             else None, "verdict": judge(pub[idx], value)})
    have = [m for m in PUBLISHED_LASER if ours.get(METHODS[m], {}).get("laser", {}).get("D")
            is not None]
    ranking = None
    if len(have) >= 3:
        pub = _ranks([PUBLISHED_LASER[m][2] for m in have])
        net = _ranks([ours[METHODS[m]]["laser"]["D"] for m in have])
        n = len(have)
        rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(pub, net)) / (n * (n * n - 1))
        ranking = {"methods": have, "spearman_rho": rho,
                   "published_order": sorted(have, key=lambda m: PUBLISHED_LASER[m][2]),
                   "netloop_order": sorted(have, key=lambda m: ours[METHODS[m]]["laser"]["D"])}
    ok = sum(r["verdict"] == "ok" for r in rows)
    judged = sum(r["verdict"] in ("ok", "off") for r in rows)
    return {"rows": rows, "ranking": ranking, "ok": ok, "judged": judged}


def format_table(result: dict, counts: dict, profile: str, results: Path) -> str:
    lines = [f"Fidelity of '{profile}' against the Pound paper, Tables I (laser) and II (image), "
             f"2 nodes ({results})",
             f"runs: {counts['runs']}, left out for ns-3 lag: {counts['invalid']}"
             + (f" ({', '.join(counts['invalid_runs'])})" if counts["invalid_runs"] else ""),
             "", "| flow | method (transport) | D: published → netloop (ratio) | "
             "std(J_d): published → netloop (ratio) | MDR %: published → netloop | verdict |",
             "|---|---|---|---|---|---|"]
    groups: dict[tuple, dict] = {}
    for r in result["rows"]:
        groups.setdefault((r["flow"], r["method"], r["transport"]), {})[r["metric"]] = r

    def cell(r: dict) -> str:
        if r["netloop"] is None:
            return f"{r['published']:g} → —"
        ratio = "" if r["ratio"] is None else f" ({r['ratio']:.2f}×)"
        return f"{r['published']:g} → {r['netloop']:.1f}{ratio}"

    for (flow, method, transport), m in groups.items():
        verdicts = [m[k]["verdict"] for k in ("D", "std_Jd", "MDR")]
        off = [k.replace("std_Jd", "std(J_d)") for k in ("D", "std_Jd", "MDR")
               if m[k]["verdict"] == "off"]
        verdict = ("missing" if "missing" in verdicts else "ok" if not off
                   else "off: " + ", ".join(off))
        lines.append(f"| {flow} | {method} ({transport}) | {cell(m['D'])} | {cell(m['std_Jd'])} | "
                     f"{cell(m['MDR'])} | {verdict} |")
    lines.append("")
    lines.append(f"within target: {result['ok']} of {result['judged']} numbers judged")
    rk = result["ranking"]
    if rk:
        lines.append(f"laser D ranking, published: {' < '.join(rk['published_order'])}")
        lines.append(f"laser D ranking, netloop:   {' < '.join(rk['netloop_order'])}"
                     f"  (Spearman rho {rk['spearman_rho']:.2f})")
    return "\n".join(lines)


def run_campaign(profile: str, transports: list[str] | None, results_parent: Path | None) -> Path:
    from . import runner
    from .analysis.report import write_report
    from .experiment import load_experiment, validate_experiment
    from .schema import to_dict
    exp = load_experiment(str(paths.EXPERIMENTS / EXPERIMENT))
    data = to_dict(copy.deepcopy(exp))
    data["link"] = profile
    data["name"] = f"calibrate_{profile}"
    if transports:
        data["transport"] = transports
    exp = validate_experiment(data, name=data["name"])
    out = runner.campaign_dir_for(exp, results_parent)
    print(f"netloop calibrate: running {exp.name} ({len(exp.transport)} transports) into {out}",
          flush=True)
    runner.install_signal_handlers()
    runner.run_experiment(exp, out)
    write_report(out)
    return out


def main(args) -> int:
    if args.results:
        results = Path(args.results)
    else:
        transports = args.transports.split(",") if args.transports else None
        results = run_campaign(args.profile, transports, args.results_parent)
    if not (results / "analysis.json").exists():
        from .analysis.report import write_report
        write_report(results)
    ours, counts = read_campaign(results)
    result = fidelity(ours)
    print(format_table(result, counts, args.profile, results))
    if args.json:
        Path(args.json).write_text(json.dumps({"profile": args.profile, "results": str(results),
                                               "counts": counts, **result}, indent=1))
    return 0


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="run the Pound paper's two-flow scenario on a link "
                                         "profile and print published vs netloop (Tables I-II)")
    p.add_argument("profile", help="link profile (e.g. wifi6)")
    p.add_argument("--results", help="compare this campaign directory instead of running one")
    p.add_argument("--results-parent", type=Path, default=None,
                   help="parent directory for the new campaign (default results/)")
    p.add_argument("--transports", help="comma-separated subset of the transports to run")
    p.add_argument("--json", help="also write the table as JSON to this file")
    p.set_defaults(func=main)


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="netloop")
    register(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args()
    sys.exit(a.func(a))
