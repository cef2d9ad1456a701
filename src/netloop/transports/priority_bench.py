"""``make bench``: what each of the ``priority`` relay's mechanisms contributes, measured one at
a time beside ROS's own transports, as ratios to the Pound paper's numbers.

Two scenarios, each a small campaign of real runs (real nodes, namespaces, ns-3):

* **two flows** (the paper's Tables I-II): a laser-like flow (1 KB every 20 ms, 750 messages)
  beside an image-like flow (64 KB every 150 ms on ``wifi6``; every 300 ms on the two-hop chain
  ``wifi6_2hop``, where the channel carries half), robot -> operator. Per case: the laser's mean
  one-way delay D, the std of its period at the destination std(J_d), its MDR, the image's MDR
  and delivered bandwidth (and that bandwidth over ``udp``'s in the same scenario).
* **the loop** (``experiments/pound_fig21.yaml``): the RLC loop beside a 64 KB / 200 ms flow
  operator -> robot; per case the loop's round-trip time p50 / p99 and its excess over the same
  transport's unperturbed p99 in air times of a 1,500-byte frame.

The ``priority`` cases add one mechanism at a time (``CASES``): the relay as the paper built it
(a paced send queue), then the backlog held in the relay while the queues below are full
(``backpressure``), then DSCP EF on the urgent datagrams served first by the host's queue
(``dscp``), then the same on a Wi-Fi with 802.11e access categories (``wifi6_qos``).

Published: Table I's laser row of Pound (D 4.1 ms, std(J_d) 2.0 ms) and RT-WMP (4.7 / 2.8).
The goals (:data:`GOALS`) are the issue's: on ``wifi6`` laser D <= 3.0 ms, std(J_d) <= 1.5 ms,
image MDR >= 99.8 % and image bandwidth within 2 % of ``udp``'s; on ``wifi6_2hop`` image MDR
>= 99 %; in the loop, ``priority``'s RTT p99 within 2 air times of a 1,500-byte frame of its
unperturbed p99.

``make bench`` keeps the campaigns of this part in ``bench/priority/`` (each row names its own).
Run alone: ``python -m netloop.transports.priority_bench [--out DIR] [--quick]`` (root).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..studies.core import campaign_runs, median

#: Table I (laser) of the Pound paper: D and std(J_d) [ms]
PUBLISHED = {"Pound": {"D_ms": 4.1, "std_Jd_ms": 2.0}, "RT-WMP": {"D_ms": 4.7, "std_Jd_ms": 2.8}}
GOALS = {"D_ms": 3.0, "std_Jd_ms": 1.5, "image_MDR": 0.998, "image_bw_vs_udp": 0.02, "image_MDR_2hop": 0.99,
         "loop_p99_frames": 2.0}
#: air time of a 1,500-byte IP packet on 802.11a at 6 Mbit/s [ms]: DIFS + mean backoff + preamble
#: + (1500 + 14 + 161 overhead bytes) at 6 Mbit/s (netloop.testbed.profiles.air_overhead_bytes)
FRAME_AIR_MS = (1500 + 14 + 161) * 8 / 6e6 * 1e3


@dataclass(frozen=True)
class Case:
    """One row: a transport with its options on a link."""
    label: str
    transport: str
    link: str
    options: dict = field(default_factory=dict)   # transport_options[transport]
    laser_only: bool = False                      # two flows: the laser alone (its floor)


def _mechanisms(link: str, two_hop: bool) -> list[Case]:
    pound = {"backpressure": False, "dscp": False}
    cases = [Case("priority as Pound built it (paced queue)", "priority", link, pound),
             Case("+ backpressure (backlog held in the relay)", "priority", link, {"dscp": False}),
             Case("+ DSCP EF, served first by the host's queue", "priority", link, {})]
    if not two_hop:
        cases.append(Case("+ 802.11e access categories (wifi6_qos)", "priority", "wifi6_qos", {}))
    return cases


#: scenario -> (link, image period [s], cases)
CASES = {
    "wifi6": ("wifi6", 0.150, [Case(t, t, "wifi6") for t in ("tcp", "tcp_nodelay", "udp", "udp/tcp_nodelay")]
              + [Case("priority, the laser alone (no image)", "priority", "wifi6", laser_only=True)]
              + _mechanisms("wifi6", False)),
    "wifi6_2hop": ("wifi6_2hop", 0.300, [Case(t, t, "wifi6_2hop") for t in ("tcp_nodelay", "udp")]
                   + _mechanisms("wifi6_2hop", True)),
}
LOOP_CASES = [Case(t, t, "wifi6") for t in ("tcp_nodelay", "udp")] + _mechanisms("wifi6", False)


def _run_campaign(doc: dict, out: Path, name: str) -> Path:
    """Run one experiment document into ``out/name`` and write its report; the campaign dir."""
    from ..analysis.report import write_report  # noqa: PLC0415
    from ..experiment import validate_experiment  # noqa: PLC0415
    from ..runner import run_experiment  # noqa: PLC0415

    exp = validate_experiment(doc, name=name)
    camp = out / name
    run_experiment(exp, camp, log=lambda _: None)
    write_report(camp)
    return camp


def _flow_row(flow: dict) -> dict[str, Any]:
    d = flow.get("delay") or {}
    return {"D_ms": d.get("mean_ms"), "D_p99_ms": d.get("p99_ms"),
            "std_Jd_ms": (flow.get("period") or {}).get("std_ms"), "MDR": flow.get("MDR"),
            "bandwidth_mbit": flow.get("bandwidth_mbit")}


def _slug(case: Case) -> str:
    opts = "-".join(f"{k}{int(v) if isinstance(v, bool) else v}" for k, v in sorted(case.options.items()))
    return (f"{case.link}-{case.transport.replace('/', '+')}" + (f"-{opts}" if opts else "")
            + ("-laser_only" if case.laser_only else ""))


def two_flow_case(out: Path, case: Case, image_period: float, laser_count: int) -> dict[str, Any]:
    """The two flows over one case: the laser's and the image's figures, or why not."""
    doc = {"name": f"bench_two_flow_{_slug(case)}", "link": case.link, "transport": case.transport,
           "loop": {"type": "none"}, "run_timeout": 200,
           "flows": [{"name": "laser", "size_bytes": 1024, "period": 0.020, "count": laser_count}]
           + ([] if case.laser_only else [{"name": "image", "size_bytes": 65536, "period": image_period,
                                           "count": int(laser_count * 0.020 / image_period) + 1}]),
           "transport_options": {case.transport: case.options} if case.options else {}}
    if case.transport == "priority":
        doc["transport_options"].setdefault("priority", {})["rt_priority"] = 5
    camp = _run_campaign(doc, out, doc["name"])
    runs, counts = campaign_runs(camp)
    row: dict[str, Any] = {"label": case.label, "transport": case.transport, "link": case.link,
                           "options": case.options, "campaign": str(camp), "invalid_runs": counts["invalid"]}
    if not runs:
        return row | {"error": "no valid run (the link lagged real time, or the run failed)"}
    flows = {f["flow"]: f for f in runs[0].get("flows") or []}
    row["laser"] = _flow_row(flows.get("laser", {}))
    if "image" in flows:
        row["image"] = _flow_row(flows["image"])
    return row


def _ratios(row: dict) -> dict[str, Any]:
    laser = row.get("laser") or {}
    out = {}
    for who, pub in PUBLISHED.items():
        for k in ("D_ms", "std_Jd_ms"):
            if laser.get(k) is not None:
                out[f"{k}/{who}"] = round(laser[k] / pub[k], 2)
    return out


def goals_on(rows: list[dict], link: str) -> dict[str, Any]:
    """The issue's goals on ``wifi6`` judged for the ``priority`` case with every mechanism on
    ``link`` (its last row there with both flows); image bandwidth against ``udp``'s row."""
    udp = next((r for r in rows if r["transport"] == "udp" and "image" in r), None)
    best = [r for r in rows if r["transport"] == "priority" and r["link"] == link and "image" in r]
    if not best:
        return {}
    r = best[-1]
    laser, image = r["laser"], r["image"]
    bw_ratio = (image["bandwidth_mbit"] / udp["image"]["bandwidth_mbit"]
                if udp and image.get("bandwidth_mbit") and udp["image"].get("bandwidth_mbit") else None)
    return {"case": r["label"],
            "D_ms": [laser["D_ms"], GOALS["D_ms"], _le(laser["D_ms"], GOALS["D_ms"])],
            "std_Jd_ms": [laser["std_Jd_ms"], GOALS["std_Jd_ms"], _le(laser["std_Jd_ms"], GOALS["std_Jd_ms"])],
            "image_MDR": [image["MDR"], GOALS["image_MDR"], _le(GOALS["image_MDR"], image["MDR"])],
            "image_bw_vs_udp": [None if bw_ratio is None else round(bw_ratio, 4), GOALS["image_bw_vs_udp"],
                                None if bw_ratio is None else abs(bw_ratio - 1) <= GOALS["image_bw_vs_udp"]]}


def _le(a, b) -> bool | None:
    return None if a is None or b is None else bool(a <= b)


def two_flow(out: Path, laser_count: int = 750, scenarios=("wifi6", "wifi6_2hop"), log=print) -> dict[str, Any]:
    res: dict[str, Any] = {"laser_count": laser_count}
    for name in scenarios:
        link, image_period, cases = CASES[name]
        rows = []
        for case in cases:
            log(f"bench: two flows on {link}: {case.label} ...")
            try:
                row = two_flow_case(out, case, image_period, laser_count)
            except Exception as err:  # reported in the table; the other cases go on
                row = {"label": case.label, "transport": case.transport, "link": case.link,
                       "error": f"{type(err).__name__}: {err}"}
            row["ratios"] = _ratios(row)
            rows.append(row)
        res[name] = {"link": link, "image_period_s": image_period, "rows": rows}
    if "wifi6" in res:
        rows = res["wifi6"]["rows"]
        res["wifi6"]["goals"] = [g for g in (goals_on(rows, "wifi6"), goals_on(rows, "wifi6_qos")) if g]
    if "wifi6_2hop" in res:
        rows = [r for r in res["wifi6_2hop"]["rows"] if r["transport"] == "priority" and "image" in r]
        if rows:
            mdr = rows[-1]["image"]["MDR"]
            res["wifi6_2hop"]["goals"] = [{"case": rows[-1]["label"], "image_MDR": [
                mdr, GOALS["image_MDR_2hop"], _le(GOALS["image_MDR_2hop"], mdr)]}]
    return res


def loop_case(out: Path, case: Case) -> dict[str, Any]:
    """``pound_fig21`` over one case (its repetitions; the square wave's steps), and the same loop
    once without the perturbing flow: RTT p50 and p99 (median over the runs), the perturbed
    p99's excess in frame air times, and every step's metrics for the ranking."""
    from ..experiment import load_experiment  # noqa: PLC0415
    from .. import paths  # noqa: PLC0415
    from ..schema import to_dict  # noqa: PLC0415

    base = to_dict(load_experiment(str(paths.EXPERIMENTS / "pound_fig21.yaml")))
    base.update(link=case.link, transport=case.transport,
                transport_options={case.transport: case.options} if case.options else {})
    row: dict[str, Any] = {"label": case.label, "transport": case.transport, "link": case.link,
                           "options": case.options}
    for which, flows, reps in (("perturbed", base["flows"], base["repetitions"]), ("unperturbed", [], 1)):
        doc = dict(base, flows=flows, repetitions=reps, name=f"bench_loop_{which}_{_slug(case)}")
        camp = _run_campaign(doc, out, doc["name"])
        runs, counts = campaign_runs(camp)
        if not runs:
            row[which] = {"error": "no valid run", "campaign": str(camp)}
            continue
        rtt = [r.get("rtt") or {} for r in runs]
        row[which] = {"rtt_p50_ms": median([x.get("p50_ms") for x in rtt]),
                      "rtt_p99_ms": median([x.get("p99_ms") for x in rtt]),
                      "runs": len(runs), "invalid_runs": counts["invalid"], "campaign": str(camp)}
        if which == "perturbed":
            row["steps"] = [s for r in runs for s in (r.get("steps") or [])]
    p, u = row.get("perturbed", {}), row.get("unperturbed", {})
    if p.get("rtt_p99_ms") is not None and u.get("rtt_p99_ms") is not None:
        row["p99_excess_frames"] = round((p["rtt_p99_ms"] - u["rtt_p99_ms"]) / FRAME_AIR_MS, 2)
    return row


def rank_cases(rows: list[dict]) -> None:
    """Each row's steps ranked against the others' (the report's repeated-step verdict: median
    IAE(y - baseline) per step, 95 % bootstrap interval, clear only when intervals separate);
    written into the rows as ``step_rank``, ``step_iae_median``, ``step_iae_ci``, ``step_verdict``."""
    from ..analysis.repeated_steps import TransportSteps, rank_steps  # noqa: PLC0415

    groups = [TransportSteps(r["label"], "", list(r.get("steps") or []), (r.get("perturbed") or {}).get("runs", 0))
              for r in rows]
    for ranked in rank_steps(groups):
        row = next(r for r in rows if r["label"] == ranked.group.transport)
        row.update(step_rank=ranked.rank, step_count=len(ranked.group.steps), step_verdict=ranked.verdict,
                   step_iae_median=None if ranked.rank is None else round(ranked.group.median(), 3),
                   step_iae_ci=None if ranked.rank is None else [round(x, 3) for x in ranked.interval])


def loop(out: Path, log=print) -> dict[str, Any]:
    rows = []
    for case in LOOP_CASES:
        log(f"bench: the loop (pound_fig21) on {case.link}: {case.label} ...")
        try:
            rows.append(loop_case(out, case))
        except Exception as err:
            rows.append({"label": case.label, "transport": case.transport, "error": f"{type(err).__name__}: {err}"})
    rank_cases(rows)
    for r in rows:
        r.pop("steps", None)      # the campaigns keep them; the bench keeps the verdict
    goals = []
    for link in ("wifi6", "wifi6_qos"):       # priority with every mechanism on each link
        best = [r for r in rows if r["transport"] == "priority" and r.get("link") == link and "p99_excess_frames" in r]
        if best:
            x = best[-1]["p99_excess_frames"]
            goals.append({"case": best[-1]["label"], "p99_excess_frames": [x, GOALS["loop_p99_frames"],
                                                                           _le(x, GOALS["loop_p99_frames"])]})
    return {"frame_air_ms": round(FRAME_AIR_MS, 3), "rows": rows, "goals": goals}


def run_all(out_dir: Path | str | None = None, quick: bool = False, log=print) -> dict[str, Any]:
    if os.geteuid() != 0:
        return {"skipped": "needs root (network namespaces, ns-3)"}
    out = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="netloop-priority-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    return {"two_flow": two_flow(out, laser_count=250 if quick else 750, log=log),
            "loop": loop(out, log=log), "published": PUBLISHED, "goals": GOALS}


# ---- Markdown ---------------------------------------------------------------------------------

def _f(v, digits=2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.1f} %"


GOAL_NAMES = {"D_ms": "laser D [ms] ≤", "std_Jd_ms": "laser std(J_d) [ms] ≤", "image_MDR": "image MDR ≥",
              "image_bw_vs_udp": "image bandwidth / udp's, within ±", "RTT p99 excess [frames]": "RTT p99 excess "
              "[frames] ≤"}


def _goal_line(name: str, g: list) -> str:
    value, goal, ok = g
    verdict = {True: "met", False: "**not met**", None: "not measured"}[ok]
    shown = "–" if value is None else f"{value:.4g}"
    return f"- {GOAL_NAMES.get(name, name)} {goal:g}: {shown}, {verdict}"


def markdown(r: dict[str, Any]) -> list[str]:
    if "skipped" in r or not r:
        return [f"Skipped: {r.get('skipped', 'not run')}", ""]
    lines: list[str] = []
    tf = r.get("two_flow", {})
    for name in ("wifi6", "wifi6_2hop"):
        s = tf.get(name)
        if not s:
            continue
        lines += [f"Two flows on `{s['link']}`: laser 1 KB / 20 ms ({tf['laser_count']} messages) beside image "
                  f"64 KB / {s['image_period_s'] * 1e3:.0f} ms, robot → operator (published laser: Pound D 4.1, "
                  "std(J_d) 2.0 ms; RT-WMP 4.7 / 2.8):", "",
                  "| case | laser D [ms] | D p99 [ms] | std(J_d) [ms] | laser MDR | image MDR | image [Mbit/s] "
                  "| D / Pound | std(J_d) / Pound | D / RT-WMP |", "|---|---|---|---|---|---|---|---|---|---|"]
        for row in s["rows"]:
            if "error" in row:
                lines.append(f"| {row['label']} | {row['error']} |" + " |" * 8)
                continue
            lz, im, q = row["laser"], row.get("image") or {}, row["ratios"]
            lines.append(f"| {row['label']} | {_f(lz['D_ms'])} | {_f(lz['D_p99_ms'])} | {_f(lz['std_Jd_ms'])} | "
                         f"{_pct(lz['MDR'])} | {_pct(im.get('MDR'))} | {_f(im.get('bandwidth_mbit'), 3)} | "
                         f"{q.get('D_ms/Pound', '–')} | {q.get('std_Jd_ms/Pound', '–')} | {q.get('D_ms/RT-WMP', '–')} |")
        for g in s.get("goals") or []:
            lines += ["", f"Goals ({g['case']}):"] + [_goal_line(k, v) for k, v in g.items() if k != "case"]
        lines.append("")
    lp = r.get("loop", {})
    if lp.get("rows"):
        lines += ["The loop (`pound_fig21`: its square-wave reference and repetitions, beside the 64 KB / 200 ms "
                  "flow operator → robot; and once without it). Excess = (perturbed RTT p99 − unperturbed p99) in "
                  f"air times of a 1,500-byte frame ({lp['frame_air_ms']} ms); the steps ranked by median "
                  "IAE(y − baseline) per step with 95 % bootstrap intervals, a difference clear only when the "
                  "intervals separate:", "",
                  "| case | RTT p50 [ms] | RTT p99 [ms] | unperturbed p99 [ms] | excess [frames] | steps | "
                  "IAE per step [mV·s] [95 % CI] | verdict |", "|---|---|---|---|---|---|---|---|"]
        for row in sorted(lp["rows"], key=lambda r: (r.get("step_rank") is None, r.get("step_rank") or 0)):
            if "error" in row:
                lines.append(f"| {row['label']} | {row['error']} |" + " |" * 6)
                continue
            p, u = row.get("perturbed", {}), row.get("unperturbed", {})
            ci = row.get("step_iae_ci")
            iae = "–" if row.get("step_iae_median") is None else (
                f"{row['step_iae_median']:.3g} [{ci[0]:.3g}–{ci[1]:.3g}]")
            lines.append(f"| {row['label']} | {_f(p.get('rtt_p50_ms'))} | {_f(p.get('rtt_p99_ms'))} | "
                         f"{_f(u.get('rtt_p99_ms'))} | {_f(row.get('p99_excess_frames'))} | "
                         f"{row.get('step_count', '–')} | {iae} | {row.get('step_verdict', '–')} |")
        for g in lp.get("goals") or []:
            lines += ["", f"Goal ({g['case']}):", _goal_line("RTT p99 excess [frames]", g["p99_excess_frames"])]
        lines.append("")
    return lines


def measured(bench: dict[str, Any]) -> bool:
    """Whether ``bench`` (bench.json) holds this part's figures."""
    part = bench.get("priority")
    return bool(part) and "skipped" not in part


def docs_block(bench: dict[str, Any]) -> str:
    """The ``bench-priority`` block of docs/priority.md: this part of ``bench/bench.json`` with
    the date and the machine it was measured on, or the command that measures it."""
    part = bench.get("priority")
    if not part or "skipped" in part:
        why = f" ({part['skipped']})" if part else ""
        return f"Not measured yet{why}: `make bench BENCH_ARGS=\"--only priority\"` (root; about 12 minutes)."
    h = bench.get("host") or {}
    when = str((bench.get("dates") or {}).get("priority") or bench.get("date") or "?")
    when = when[:10]   # the day: the time of day stays in bench.json
    return "\n".join([f"Measured {when} on {h.get('cpu', '?')}, {h.get('cores', '?')} cores, kernel "
                      f"{h.get('kernel', '?')} (shared; one run per case), by `make bench` "
                      "(`BENCH_ARGS=\"--only priority\"` runs this part alone):", "", *markdown(part)]).rstrip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="where the campaigns go (default: a temp dir)")
    ap.add_argument("--quick", action="store_true", help="250 laser messages per run")
    ap.add_argument("--part", choices=["all", "two_flow", "loop"], default="all")
    a = ap.parse_args(argv)
    if a.part == "all":
        res = run_all(a.out, a.quick)
    else:
        out = a.out or Path(tempfile.mkdtemp(prefix="netloop-priority-bench-"))
        res = ({"two_flow": two_flow(out, 250 if a.quick else 750)} if a.part == "two_flow"
               else {"loop": loop(out)})
    print("\n".join(markdown(res)))
    print(json.dumps(res, indent=1, default=str), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
