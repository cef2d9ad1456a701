"""Where a 4 KB message's time goes on netloop's native Cyclone DDS path, for ``make bench``
(:mod:`netloop.transports.ros2_bench`):

* :func:`stage_breakdown`: the stages of every message of a ``cyclonedds`` flow run with
  ``NETLOOP_STAGE_TRACE`` set (include/netloop/ros2/stage_trace.h), joined by seq with the
  source's tx record and the sink's rx record: from the message's stamp, the median time at which
  it was handed to the endpoint (built and serialized for ROS 1), converted to CDR, delivered by
  Cyclone to the sink's listener, taken by the sink's own thread, converted back, and recorded;
  and the median duration of Cyclone's write call.
* :func:`pingpong`: Cyclone DDS's own round trip through netloop's participant without ROS
  (``ros2_pingpong``, src/tools/ros2_pingpong.cpp), at the flow's size and rate, with netloop's
  Cyclone configuration: its two legs timed apart (the hosts share one clock), the ping written
  after a 20 ms sleep as a flow's messages are, the pong written by the thread that has just
  received the ping. ddsperf reports half the round trip, the mean of the two legs; a flow's
  message always takes the first kind.
"""
from __future__ import annotations

import csv
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .. import paths

#: the cumulative points of a message's path, in order: (key, what happened by then)
POINTS = [("entered", "handed to the endpoint: built and serialized for ROS 1"),
          ("converted", "converted to CDR"),
          ("delivered", "delivered to the sink's listener by Cyclone (write, wire, receive)"),
          ("running", "taken by the sink's own thread (roscpp's callback queue)"),
          ("converted_back", "converted back to ROS 1"),
          ("recorded", "recorded by the sink (its rx row)")]


def _read_rows(path: Path) -> dict[int, dict[str, int]]:
    with open(path, newline="") as f:
        return {int(r["seq"]): {k[:-3]: int(v) for k, v in r.items() if k.endswith("_ns")} for r in csv.DictReader(f)}


def _events(path: Path, kind: str) -> dict[int, tuple[int, int]]:
    """seq -> (stamp_ns, recv_ns) of a record's rows of ``kind``."""
    from ..analysis.records import read_events  # noqa: PLC0415
    ev = read_events(path)
    keep = ev.kind == kind
    return dict(zip(ev.seq[keep].tolist(), zip(ev.stamp_ns[keep].tolist(), ev.recv_ns[keep].tolist())))


def _us(values: list[float]) -> float | None:
    return round(statistics.median(values) / 1e3, 1) if values else None


def stage_breakdown(trace_dir: Path, run_dir: Path, flow: str = "probe") -> dict[str, Any]:
    """Median time [µs] from the message's stamp to each point of :data:`POINTS`, the parts
    (each point's median minus the one before), and Cyclone's write call (median)."""
    pub = next(iter(trace_dir.glob(f"*flows_{flow}.pub.stages.csv")), None)
    sub = next(iter(trace_dir.glob(f"*flows_{flow}.sub.stages.csv")), None)
    if pub is None or sub is None:
        return {"error": f"no stage trace of flow {flow!r} in {trace_dir}"}
    sent, got = _read_rows(pub), _read_rows(sub)
    tx = _events(run_dir / "records" / f"flow_{flow}_tx.csv", "tx")
    rx = _events(run_dir / "records" / f"flow_{flow}_rx.csv", "rx")
    cum: dict[str, list[float]] = {key: [] for key, _ in POINTS}
    write: list[float] = []
    for seq in sorted(set(sent) & set(got) & set(tx) & set(rx)):
        stamp = tx[seq][0]
        s, g = sent[seq], got[seq]
        times = {"entered": s["entered"], "converted": s["converted"], "delivered": g["delivered"],
                 "running": g["running"], "converted_back": g["converted"], "recorded": rx[seq][1]}
        if not all(times.values()):
            continue
        for key, t in times.items():
            cum[key].append(t - stamp)
        write.append(s["written"] - s["converted"])
    medians = {key: _us(v) for key, v in cum.items()}
    if medians["recorded"] is None:
        return {"error": "no message traced end to end"}
    parts, before = {}, 0.0
    for key, _ in POINTS:
        parts[key] = round(medians[key] - before, 1)
        before = medians[key]
    return {"messages": len(cum["recorded"]), "from_stamp_us": medians, "parts_us": parts,
            "cyclone_write_call_us": _us(write)}


def pingpong(files: dict[str, Path], exec_prefix, count: int = 500, period_s: float = 0.02,
             size: int = 4096, domain: int = 77) -> dict[str, Any]:
    """``ros2_pingpong`` with the pong on the operator, the ping on the robot, each with its
    host's Cyclone configuration (``files``), ``exec_prefix(host)`` putting a command on a host."""
    tool = paths.DEVEL / "lib" / "netloop" / "ros2_pingpong"
    if not tool.exists():
        return {"skipped": f"{tool} is not built (a build without Cyclone DDS)"}
    seconds = count * period_s + 25
    pong = subprocess.Popen(exec_prefix("operator") + [str(tool), "pong", "cyclonedds", str(files["operator"]),
                                                       str(domain), str(seconds)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        ping = subprocess.run(exec_prefix("robot") + [str(tool), "ping", "cyclonedds", str(files["robot"]), str(domain),
                                                      str(count), str(period_s), str(size)],
                              capture_output=True, text=True, timeout=seconds)
    finally:
        pong.terminate()
        pong.communicate(timeout=10)
    if ping.returncode != 0:
        return {"error": f"ros2_pingpong ping exited {ping.returncode}: {ping.stderr.strip()[-300:]}"}
    res = json.loads(ping.stdout.strip().splitlines()[-1])
    rtt = (res.get("round_trip_us") or {}).get("p50")
    return {**res, "half_round_trip_us": round(rtt / 2, 1) if rtt else None}


def pingpong_on(link: str, count: int = 500) -> dict[str, Any]:
    """:func:`pingpong` on a testbed of ``link`` with the Cyclone configuration netloop
    generates for its nodes there."""
    from ..testbed import Testbed, load_profile  # noqa: PLC0415
    from .ros2_bench import cyclone_files  # noqa: PLC0415
    with tempfile.TemporaryDirectory() as tmp, Testbed(load_profile(link, {}), log_dir=tmp) as tb:
        return {"link": link, **pingpong(cyclone_files(Path(tmp), tb, link), tb.exec_prefix, count)}


def remaining_cost(r: dict[str, Any], link: str) -> str | None:
    """One sentence: the goal's verdict on ``link`` and its one-way time part by part, beside
    what Cyclone DDS and ddsperf give for the same parts."""
    goal, st = r.get("goal", {}).get(link), r.get("stages", {}).get(link, {})
    if not goal or "parts_us" not in st:
        return None
    p, total = st["parts_us"], st["from_stamp_us"]["recorded"]
    ddsperf = r.get("ddsperf", {}).get(link, {}).get("half_rtt_us")
    waitset = r.get("ddsperf_waitset", {}).get(link, {}).get("half_rtt_us")
    pp = r.get("pingpong", {}).get(link, {})
    ping = (pp.get("ping_one_way_us") or {}).get("p50")
    pong = (pp.get("pong_one_way_us") or {}).get("p50")
    verdict = "met" if goal["meets_goal"] else "missed"
    text = (f"**{link}**: {goal['ratio']}× ddsperf's half round trip ({verdict}; goal ≤ {goal['goal']}). Of the "
            f"traced messages' {total} µs: netloop's conversions and record "
            f"{round(p['entered'] + p['converted'] + p['converted_back'] + p['recorded'], 1)} µs, Cyclone's leg "
            f"{p['delivered']} µs, the hand-off to the sink's thread {p['running']} µs.")
    if ping and pong and ddsperf:
        text += (f" Cyclone alone, through netloop's participant: a message written after a sleep {ping} µs one "
                 f"way, one written by the thread that has just received {pong} µs; a half round trip is the "
                 f"mean of one leg of each kind ({pp.get('half_round_trip_us')} µs here, ddsperf's {ddsperf} µs).")
    if waitset and ddsperf:
        text += (f" ddsperf's own hand-off to an application thread (waitset mode) adds "
                 f"{round(waitset - ddsperf, 1)} µs to its half round trip.")
    return text


def markdown(r: dict[str, Any]) -> list[str]:
    """bench.md's lines on the path: the breakdown per link, and the ping-pong's legs."""
    lines: list[str] = []
    stages = {link: v for link, v in r.get("stages", {}).items() if "parts_us" in v}
    if stages:
        links = list(stages)
        lines += ["Where the native `cyclonedds` flow's one-way time goes (stage times of every message, "
                  "include/netloop/ros2/stage_trace.h; median from the message's stamp to each point, "
                  "and the part each step adds) [µs]:", "",
                  "| by then the message was | " + " | ".join(f"{link}: from stamp | part" for link in links) + " |",
                  "|---|" + "---:|---:|" * len(links)]
        for key, what in POINTS:
            lines.append(f"| {what} | " + " | ".join(
                f"{stages[link]['from_stamp_us'][key]} | {stages[link]['parts_us'][key]}" for link in links) + " |")
        lines += ["", "Cyclone's write call itself (median): " + ", ".join(
            f"{link} {stages[link]['cyclone_write_call_us']} µs" for link in links) + "."]
    pp = {link: v for link, v in r.get("pingpong", {}).items() if v.get("ping_one_way_us")}
    if pp:
        lines += ["", "Cyclone DDS's own legs through netloop's participant, no ROS (`ros2_pingpong`, the same "
                      "size, rate and configuration; one-way medians [µs]): the ping written after a 20 ms sleep "
                      "as a flow's message is, the pong written by the thread that has just received:", "",
                  "| link | ping one way | pong one way | half round trip | ddsperf's half round trip |",
                  "|---|---:|---:|---:|---:|"]
        for link, v in pp.items():
            d = r.get("ddsperf", {}).get(link, {})
            lines.append(f"| {link} | {v['ping_one_way_us']['p50']} | {v['pong_one_way_us']['p50']} | "
                         f"{v['half_round_trip_us']} | {d.get('half_rtt_us', '–')} |")
    costs = [c for c in (remaining_cost(r, link) for link in r.get("goal", {})) if c]
    if costs:
        lines += ["", "Where the goal stands, part by part:", ""] + [f"- {c}" for c in costs]
    return lines
