"""Benchmarks of ROS 2's middlewares (cyclonedds, fastdds, zenoh, and real ROS 2's
rmw_fastrtps_cpp: rcl nodes) beside ``tcp_nodelay``, all measured in the same call so that the
ratios compare like with like. ``run_all()`` returns a
JSON-ready dict:

* ``latency``: per link (``loopback``; ``ethernet``, two namespaces joined by a veth pair, needs
  root) and per transport, the one-way delay of a 4 KB message sent every 20 ms (50 Hz) robot ->
  operator by native nodes with ROS 2's default QoS (reliable, volatile, keep last 10): median,
  p99, MDR, and the median's ratio to ``tcp_nodelay``'s on the same link;
* ``stages``: per link, where the ``cyclonedds`` run's one-way time goes, stage by stage (its
  nodes traced: :func:`netloop.transports.ros2_bench_path.stage_breakdown`);
* ``echo``: per transport the highest rate the RLC plant/controller pair sustains on loopback
  (:func:`netloop.bench_suite.echo_rate`: >= 99 % answered, rate within 1 %);
* ``ddsperf``: Cyclone DDS's own ``ddsperf ping 50Hz size 4k`` / ``pong`` (Debian's
  ``cyclonedds-tools``) on the same links, with the same Cyclone configuration netloop
  generates for its nodes (``netloop.ros2.config.cyclonedds_xml``): ddsperf's per-second median,
  which is half the round trip (ddsperf divides it: Cyclone DDS 0.10's
  src/tools/ddsperf/ddsperf.c, process_pong), and the median over the seconds;
* ``ddsperf_waitset``: the same in ddsperf's waitset mode (one thread hop each way, as a
  netloop node's hand-over to its event loop);
* ``pingpong``: the same exchange through netloop's participant without ROS, each leg timed
  (:func:`netloop.transports.ros2_bench_path.pingpong`);
* ``goal``: netloop's native Cyclone DDS one-way median over ddsperf's half round trip, per
  link (the goal: at most 1.5).

Run: ``python -m netloop.transports.ros2_bench [--out DIR] [--quick]`` (prints the JSON).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import ros2_bench_path
from .relay_bench import _flow, _run, _status

TRANSPORTS = ["tcp_nodelay", "cyclonedds", "fastdds", "zenoh", "rmw_fastrtps_cpp"]
GOAL_RATIO = 1.5
MESSAGE_BYTES = 4096
PERIOD_S = 0.02
#: ddsperf's per-second line: "... size 4096 mean 135.033us min 62.077us 50% 101.989us ... cnt 49"
_DDSPERF_LINE = re.compile(r"size (\d+) mean ([\d.]+)us min ([\d.]+)us 50% ([\d.]+)us 90% ([\d.]+)us "
                           r"99% ([\d.]+)us max ([\d.]+)us cnt (\d+)")


def _links() -> list[str]:
    return ["loopback", "ethernet"] if os.geteuid() == 0 else ["loopback"]


#: the transport whose nodes are traced stage by stage
TRACED = "cyclonedds"


@contextlib.contextmanager
def _stage_trace(folder: Path | None):
    """NETLOOP_STAGE_TRACE=``folder`` for the nodes started meanwhile (nothing when None). The
    nodes' environment is this process's, read once (rosenv.base_env): read again either side."""
    from .. import rosenv  # noqa: PLC0415
    if folder is None:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["NETLOOP_STAGE_TRACE"] = str(folder)
    rosenv.base_env.cache_clear()
    try:
        yield
    finally:
        del os.environ["NETLOOP_STAGE_TRACE"]
        rosenv.base_env.cache_clear()


def latency(out: Path, link: str, count: int = 500) -> dict[str, Any]:
    """One 4 KB / 20 ms flow robot -> operator per transport on ``link``; the ``cyclonedds``
    run's nodes traced (its ``stages``)."""
    flow = {"name": "probe", "size_bytes": MESSAGE_BYTES, "period": PERIOD_S, "count": count}
    res: dict[str, Any] = {}
    for transport in sorted(TRANSPORTS, key=lambda t: t != TRACED):   # the traced one first: beside ddsperf
        traces = out / f"stages_{link}" if transport == TRACED else None
        try:
            with _stage_trace(traces):
                cfg, camp = _run({"link": link, "transport": transport, "loop": {"type": "none"}, "flows": [flow],
                                  "run_timeout": 120}, out, f"latency_{link}_{transport}")
            run_dir = camp / "runs" / f"{transport}-r0"
            f = _flow(run_dir, cfg.flows[0])
            res[transport] = {"run": _status(run_dir)["status"],
                              **{k: f.get(k) for k in ("MDR", "D_p50_ms", "D_p99_ms", "D_mean_ms")}}
            if traces:
                res[transport]["stages"] = ros2_bench_path.stage_breakdown(traces, run_dir)
        except Exception as err:   # a middleware missing from the build: say so, keep the others
            res[transport] = {"run": f"failed: {type(err).__name__}: {err}"}
    res = {t: res[t] for t in TRANSPORTS}
    base = res.get("tcp_nodelay", {}).get("D_p50_ms")
    for transport, v in res.items():
        if base and v.get("D_p50_ms") is not None:
            v["ratio_to_tcp_nodelay"] = round(v["D_p50_ms"] / base, 2)
    return res


def echo(work: Path) -> list[dict[str, Any]]:
    from ..bench_suite import echo_rate  # noqa: PLC0415
    rows = []
    for transport in TRANSPORTS:
        try:
            rows.append(echo_rate(work, transport))
        except Exception as err:
            rows.append({"transport": transport, "sustained_hz": None, "steps": [],
                         "error": f"{type(err).__name__}: {err}"})
    return rows


def cyclone_files(tmp: Path, tb, link: str) -> dict[str, Path]:
    """The Cyclone DDS configuration netloop generates for each host of ``tb``."""
    from ..ros2 import config as ros2config  # noqa: PLC0415
    shared = link == "loopback"
    iface, mtu = tb.interfaces()   # lo and 65536 on loopback, else net0 and the profile's MTU
    hosts = [ros2config.HostNet(h, tb.address(h), iface[h], mtu[h]) for h in ("robot", "operator")]
    plan = ros2config.NetPlan(hosts, "multicast", shared)
    files = {}
    for h in ("robot", "operator"):
        files[h] = tmp / f"{h}.xml"
        files[h].write_text(ros2config.cyclonedds_xml(plan, h))
    return files


def parse_ddsperf(text: str) -> list[dict[str, float]]:
    """ddsperf ping's per-second lines, in µs: half round trips (ddsperf halves them)."""
    rows = []
    for m in _DDSPERF_LINE.finditer(text):
        size, mean, lo, p50, p90, p99, hi, cnt = m.groups()
        rows.append({"size": int(size), "mean_us": float(mean), "min_us": float(lo), "p50_us": float(p50),
                     "p90_us": float(p90), "p99_us": float(p99), "max_us": float(hi), "count": int(cnt)})
    return rows


def ddsperf(link: str, seconds: int = 10, mode: str = "listener") -> dict[str, Any]:
    """``ddsperf ping 50Hz size 4k`` on the robot, ``pong`` on the operator, over ``link``;
    ``mode`` ``listener`` (ddsperf's default: answered in Cyclone's receive thread) or
    ``waitset`` (handed to the application's own thread, one thread hop each way, as a netloop
    node hands samples to its event loop)."""
    if shutil.which("ddsperf") is None:
        return {"skipped": "ddsperf not installed (Debian's cyclonedds-tools)"}
    from ..testbed import Testbed, load_profile  # noqa: PLC0415
    with tempfile.TemporaryDirectory() as tmp_name, Testbed(load_profile(link, {}), log_dir=tmp_name) as tb:
        tmp = Path(tmp_name)
        files = cyclone_files(tmp, tb, link)

        def cmd(host: str, duration: int, *args: str) -> list[str]:
            env = ["env", f"CYCLONEDDS_URI=file://{files[host]}"]
            return tb.exec_prefix(host) + env + ["ddsperf", f"-D{duration}", *args]

        pong = subprocess.Popen(cmd("operator", seconds + 5, "pong", mode), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(0.5)
            ping = subprocess.run(cmd("robot", seconds, "ping", "50Hz", "size", "4k", mode),
                                  capture_output=True, text=True, timeout=seconds + 30)
        finally:
            pong.terminate()
            pong.communicate(timeout=10)
        seconds_rows = [r for r in parse_ddsperf(ping.stdout) if r["count"] > 0]
        health = tb.health()
    if not seconds_rows:
        return {"error": f"ddsperf ping printed no round trips (exit {ping.returncode}): {ping.stdout[-400:]}"}
    p50 = statistics.median(r["p50_us"] for r in seconds_rows)   # already halves of round trips
    mean = statistics.median(r["mean_us"] for r in seconds_rows)
    return {"link": link, "mode": mode, "seconds": len(seconds_rows), "round_trips": sum(r["count"] for r in seconds_rows),
            "half_rtt_us": round(p50, 1), "half_rtt_mean_us": round(mean, 1),
            "half_rtt_mean_us_range": [min(r["mean_us"] for r in seconds_rows), max(r["mean_us"] for r in seconds_rows)],
            "half_rtt_ms": round(p50 / 1e3, 4), "link_valid": health.get("valid"), "per_second": seconds_rows}


def run_all(out_dir: Path | str | None = None, quick: bool = False) -> dict[str, Any]:
    """Every part; the runs are kept in ``out_dir`` (a temporary directory otherwise)."""
    out = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="netloop-ros2-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    res: dict[str, Any] = {"results_dir": str(out), "message_bytes": MESSAGE_BYTES, "rate_hz": 1 / PERIOD_S,
                           "latency": {}, "stages": {}, "ddsperf": {}, "ddsperf_waitset": {}, "pingpong": {}, "goal": {}}
    for link in _links():   # ddsperf, the ping-pong and the traced run one after the other (the same minute)
        res["ddsperf"][link] = ddsperf(link, seconds=4 if quick else 10)
        res["pingpong"][link] = ros2_bench_path.pingpong_on(link, count=150 if quick else 500)
        res["latency"][link] = latency(out, link, count=150 if quick else 500)
        res["stages"][link] = res["latency"][link].get(TRACED, {}).pop("stages", {"error": f"no {TRACED} run"})
        res["ddsperf_waitset"][link] = ddsperf(link, seconds=4 if quick else 10, mode="waitset")
        ours = res["latency"][link].get("cyclonedds", {}).get("D_p50_ms")
        ref = res["ddsperf"][link].get("half_rtt_ms")
        if ours and ref:
            ratio = ours / ref
            res["goal"][link] = {"netloop_cyclonedds_one_way_p50_ms": ours, "ddsperf_half_rtt_ms": ref,
                                 "ratio": round(ratio, 2), "goal": GOAL_RATIO, "meets_goal": ratio <= GOAL_RATIO}
    if not quick:
        work = out / "echo"
        work.mkdir(exist_ok=True)
        res["echo"] = echo(work)
    res["seconds"] = round(time.monotonic() - started, 1)
    res["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]   # 1-minute, before and after
    return res


def measured(bench: dict[str, Any]) -> bool:
    """Whether ``bench`` (bench.json) holds this part's figures."""
    part = bench.get("ros2")
    return bool(part) and "skipped" not in part and bool(part.get("latency"))


def docs_block(bench: dict[str, Any]) -> str:
    """The ``bench-ros2`` block of docs/ros2.md: this part of ``bench/bench.json`` with the date,
    the machine and its load, or the command that measures it."""
    part = bench.get("ros2")
    if not measured(bench):
        why = f" ({part['skipped']})" if part and "skipped" in part else ""
        return f"Not measured yet{why}: `make bench BENCH_ARGS=\"--only ros2\"` (root for `ethernet`)."
    h = bench.get("host") or {}
    when = str((bench.get("dates") or {}).get("ros2") or part.get("date") or bench.get("date") or "?")
    when = when[:10]   # the day: the time of day stays in bench.json
    load = part.get("load_average")
    shared = f"shared: 1-minute load average {load[0]} before, {load[1]} after" if load else "shared"
    return "\n".join([f"Measured {when} on {h.get('cpu', '?')}, {h.get('cores', '?')} cores, kernel "
                      f"{h.get('kernel', '?')} ({shared}; one run per case), by `make bench` "
                      "(`BENCH_ARGS=\"--only ros2\"` runs this part alone):", "", *markdown(part)]).rstrip()


def markdown(r: dict[str, Any]) -> list[str]:
    """bench.md's section."""
    if "skipped" in r or not r:
        return [f"Skipped: {r.get('skipped', 'not run')}", ""]
    lines = [f"Native nodes, ROS 2's default QoS (reliable, volatile, keep last 10), a "
             f"{r['message_bytes'] // 1024} KB message at {r['rate_hz']:g} Hz robot -> operator; ratio = median over "
             f"`tcp_nodelay`'s median on the same link, same run:", "",
             "| link | transport | run | one-way p50 [ms] | p99 [ms] | MDR | ratio to tcp_nodelay |",
             "|---|---|---|---|---|---|---|"]
    for link, per in r.get("latency", {}).items():
        for t, v in per.items():
            lines.append(f"| {link} | {t} | {v.get('run')} | {v.get('D_p50_ms', '–')} | {v.get('D_p99_ms', '–')} | "
                         f"{v.get('MDR', '–')} | {v.get('ratio_to_tcp_nodelay', '–')} |")
    lines += ["", "Cyclone DDS's own `ddsperf ping 50Hz size 4k` / `pong` with netloop's Cyclone configuration "
                  "(ddsperf prints half the round trip; median over the seconds of its per-second median):", "",
              "| link | seconds | round trips | half RTT p50 [µs] | its mean per second [µs] | "
              "netloop cyclonedds one-way p50 [ms] | ratio (goal ≤ 1.5) |", "|---|---|---|---|---|---|---|"]
    for link, d in r.get("ddsperf", {}).items():
        g = r.get("goal", {}).get(link, {})
        if "half_rtt_us" not in d:
            lines.append(f"| {link} | {d.get('skipped') or d.get('error')} | | | | | |")
            continue
        lo, hi = d["half_rtt_mean_us_range"]
        lines.append(f"| {link} | {d['seconds']} | {d['round_trips']} | {d['half_rtt_us']} | {lo:.0f}–{hi:.0f} | "
                     f"{g.get('netloop_cyclonedds_one_way_p50_ms', '–')} | "
                     f"{g.get('ratio', '–')}{' (met)' if g.get('meets_goal') else ' (missed)' if g else ''} |")
    ws = {link: d for link, d in r.get("ddsperf_waitset", {}).items() if "half_rtt_us" in d}
    if ws:
        lines += ["", "The same in ddsperf's waitset mode (each sample handed from Cyclone's receive thread to the "
                      "application's thread, as a netloop node hands it to its event loop): half RTT p50 " +
                  ", ".join(f"{link} {d['half_rtt_us']} µs" for link, d in ws.items()) + "."]
    path = ros2_bench_path.markdown(r)
    if path:
        lines += [""] + path
    if r.get("echo"):
        lines += ["", "Highest echo rate of the RLC plant/controller pair on loopback (< 1 % unanswered, rate "
                      "within 1 %):", "", "| transport | sustained [Hz] | steps (target → achieved, answered) |",
                  "|---|---|---|"]
        for e in r["echo"]:
            steps = "; ".join(f"{s['rate_hz']} → {s['achieved_hz']:.0f} Hz, {100 * s['answered']:.1f} %"
                              for s in e.get("steps", []))
            lines.append(f"| {e['transport']} | {e.get('sustained_hz') or ('< 1000' if not e.get('error') else '–')} | "
                         f"{steps or e.get('error', '')} |")
    return lines + [""]


def write_bench(bench_dir: Path, ros2: dict[str, Any]) -> None:
    """Put ``ros2`` into ``bench_dir``/bench.json (kept: the other parts of an earlier ``make
    bench``) and rewrite bench.md from it."""
    from .. import bench_suite  # noqa: PLC0415
    from ..rundir import host_info, now_iso  # noqa: PLC0415
    bench_dir.mkdir(parents=True, exist_ok=True)
    path = bench_dir / "bench.json"
    results = json.loads(path.read_text()) if path.exists() else {"date": now_iso(), "host": host_info()}
    results["ros2"] = dict(ros2, date=now_iso())
    path.write_text(json.dumps(results, indent=1, default=str))
    if "latency" in results and "echo" in results and "testbed" in results:
        text = bench_suite._md(results)
    else:   # only this part measured here
        h = results["host"]
        text = "\n".join([f"# netloop benchmarks ({results['ros2']['date']})", "",
                          f"Machine: {h['cpu']}, {h['cores']} cores, kernel {h['kernel']} (shared; medians quoted).",
                          "", "## ROS 2 middlewares", ""] + markdown(ros2))
    (bench_dir / "bench.md").write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="keep the runs here")
    ap.add_argument("--quick", action="store_true", help="short runs, no echo rates")
    ap.add_argument("--bench-dir", help="also write the result into this directory's bench.json and bench.md "
                                        "(make bench's: bench)")
    args = ap.parse_args(argv)
    res = run_all(args.out, args.quick)
    if args.bench_dir:
        write_bench(Path(args.bench_dir), res)
    print(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
