"""Benchmarks of the relay transports (nimbro, nimbro_mixed, multimaster, priority).
``run_all()`` returns a JSON-ready dict:

* ``goodput_wifi``: the link's UDP goodput (a saturating stream of 1472-byte datagrams
  between the hosts, no ROS) and what one bulk topic (64 KB every 50 ms, more than the link
  carries) gets through ``priority``. Target: >= 90 %.
* ``loopback``: per transport, one 1 KB flow every 10 ms on loopback (no link): one-way delay
  median and p99, the delay added over ``tcp_nodelay`` (no relay), the relays' CPU time per
  relayed message (sender + receiver, from their statistics, startup excluded) and their
  CPU use in % of one core (multimaster: the syncs, which carry no data).

The Pound paper's two flows over ``priority`` and its mechanisms are in
:mod:`netloop.transports.priority_bench`. The wifi part needs root (network namespaces, ns-3) and are reported as skipped without.
Run: ``python -m netloop.transports.relay_bench [--out DIR] [--quick]`` (prints the JSON).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..rundir import RunDir

TARGETS = {"goodput_ratio": 0.9}
RELAYS = ["nimbro", "nimbro_mixed", "multimaster", "priority"]


def _run(doc: dict, out: Path, name: str) -> tuple[Any, Path]:
    from ..experiment import validate_experiment  # noqa: PLC0415
    from ..runner import run_experiment  # noqa: PLC0415

    cfg = validate_experiment(doc, name=name)
    run_experiment(cfg, out / name, log=lambda _: None)
    return cfg, out / name


def _flow(run_dir: Path, flow) -> dict[str, Any]:
    from ..analysis.flow_run import analyse_flow  # noqa: PLC0415

    r = analyse_flow(run_dir, flow)
    if not r["ok"] or not r["received"]:
        return {"ok": False, "problems": r["problems"]}
    d = np.array(r["delays_ms"])
    return {"ok": True, "MDR": round(r["MDR"], 4), "D_mean_ms": round(float(d.mean()), 3),
            "D_p50_ms": round(float(np.median(d)), 3), "D_p99_ms": round(float(np.percentile(d, 99)), 3),
            "D_std_ms": round(float(d.std()), 3), "Jd_mean_ms": round(r["period"]["mean_ms"], 3),
            "std_Jd_ms": round(r["period"]["std_ms"], 3), "bandwidth_mbit": round(r["bandwidth_mbit"], 3)}


def _status(run_dir: Path) -> dict[str, Any]:
    record = RunDir(run_dir).load_metadata()
    return {"status": record.status, "error": record.error, "max_lag_ms": record.link_health.get("max_lag_ms")}


_UDP_SINK = """
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], int(sys.argv[2]))); s.settimeout(2.0)
n = b = 0; t0 = t1 = None
try:
    while True:
        d = s.recv(65536); now = time.monotonic(); t0 = t0 or now; t1 = now; n += 1; b += len(d)
except socket.timeout:
    pass
print(json.dumps({"datagrams": n, "bytes": b, "mbit_s": b * 8 / (t1 - t0) / 1e6 if n > 1 else 0.0}))
"""
_UDP_SEND = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); buf = bytes(1472)
gap = 1500 * 8 / (float(sys.argv[4]) * 1e6); t = time.monotonic(); end = t + float(sys.argv[3])
while t < end:
    now = time.monotonic()
    if now < t: time.sleep(t - now)
    s.sendto(buf, (sys.argv[1], int(sys.argv[2]))); t += gap
"""


def udp_goodput(link: str = "wifi6", seconds: float = 4.0, offered_mbit: float = 7.0) -> dict[str, Any]:
    """A saturating UDP stream robot -> operator (1472-byte datagrams, no ROS): what arrives."""
    from ..testbed import Testbed, load_profile  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp, Testbed(load_profile(link, {}), log_dir=tmp) as tb:
        port = 18555
        sink = subprocess.Popen(tb.exec_prefix("operator") + [sys.executable, "-c", _UDP_SINK, tb.address("operator"),
                                                              str(port)], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        subprocess.run(tb.exec_prefix("robot") + [sys.executable, "-c", _UDP_SEND, tb.address("operator"), str(port),
                                                  str(seconds), str(offered_mbit)], check=True, timeout=seconds + 30)
        out, _ = sink.communicate(timeout=30)
        res = json.loads(out.strip().splitlines()[-1])
        res["health"] = tb.health()
        return res


def goodput_wifi(out: Path) -> dict[str, Any]:
    raw = udp_goodput("wifi6")
    bulk = {"name": "bulk", "size_bytes": 65536, "period": 0.05, "count": 120}
    cfg, camp = _run({"link": "wifi6", "transport": "priority", "loop": {"type": "none"}, "flows": [bulk],
                      "transport_options": {"priority": {"rt_priority": 5}}, "run_timeout": 200}, out, "wifi_bulk")
    run_dir = camp / "runs" / "priority-r0"
    flow = _flow(run_dir, cfg.flows[0])
    raw_payload = raw["mbit_s"]
    ratio = flow.get("bandwidth_mbit", 0.0) / raw_payload if raw_payload else None
    return {"udp_raw": {k: raw[k] for k in ("datagrams", "mbit_s")}, "priority_bulk": flow, "run": _status(run_dir),
            "goodput_ratio": round(ratio, 3) if ratio is not None else None,
            "meets_target": ratio is not None and ratio >= TARGETS["goodput_ratio"]}


def _messages(stats: dict) -> int:
    """Messages a relay process handled so far (taken in, or published), from its report."""
    topics = stats.get("topics", {}).values()
    return sum(int(t.get("in_msgs", 0)) + int(t.get("published", 0)) for t in topics)


def _relay_cpu(run_dir: Path) -> dict[str, Any]:
    """CPU time of the relay processes while they carried the run's messages: per process,
    the CPU time between its first report with traffic and its last before shutdown, over
    the messages in between (startup and shutdown excluded); summed over the processes a
    message crosses."""
    per_message_us, cpu_per_s, files = 0.0, 0.0, 0
    for f in sorted((run_dir / "records").glob("relay_*_stats.jsonl")):
        reports = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        files += 1
        busy = [r for r in reports[:-1] if _messages(r) > 0]   # the last report is written at shutdown
        if len(busy) >= 2 and _messages(busy[-1]) > _messages(busy[0]):
            per_message_us += (busy[-1]["cpu_s"] - busy[0]["cpu_s"]) / (_messages(busy[-1]) - _messages(busy[0])) * 1e6
        if len(reports) >= 2:
            span = (reports[-1]["stamp_ns"] - reports[0]["stamp_ns"]) / 1e9
            if span > 0:
                cpu_per_s += (reports[-1]["cpu_s"] - reports[0]["cpu_s"]) / span
    return {"relay_processes": files, "relay_cpu_us_per_message": round(per_message_us, 1) if per_message_us else None,
            "relay_cpu_percent": round(cpu_per_s * 100, 2)}


def loopback(out: Path, count: int = 500) -> dict[str, Any]:
    flow = {"name": "probe", "size_bytes": 1024, "period": 0.01, "count": count}
    res: dict[str, Any] = {}
    for transport in ["tcp_nodelay"] + RELAYS:
        cfg, camp = _run({"link": "loopback", "transport": transport, "loop": {"type": "none"}, "flows": [flow]},
                         out, f"loopback_{transport}")
        run_dir = camp / "runs" / f"{transport}-r0"
        f = _flow(run_dir, cfg.flows[0])
        entry = {"run": _status(run_dir)["status"], **{k: f.get(k) for k in ("MDR", "D_p50_ms", "D_p99_ms")}}
        if transport != "tcp_nodelay":
            entry.update(_relay_cpu(run_dir))
        res[transport] = entry
    for q in ("p50", "p99"):
        base = res["tcp_nodelay"].get(f"D_{q}_ms")
        for t in RELAYS:
            if base is not None and res[t].get(f"D_{q}_ms") is not None:
                res[t][f"added_{q}_ms"] = round(res[t][f"D_{q}_ms"] - base, 3)
    return res


def run_all(out_dir: Path | str | None = None, quick: bool = False) -> dict[str, Any]:
    """Every benchmark; results of the runs are kept in ``out_dir`` (a temporary directory
    otherwise). ``quick`` shortens the runs (for tests)."""
    out = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="netloop-relay-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    res: dict[str, Any] = {"results_dir": str(out), "loopback": loopback(out, count=200 if quick else 500)}
    if os.geteuid() == 0:
        res["goodput_wifi"] = goodput_wifi(out)
    else:
        res["goodput_wifi"] = {"skipped": "needs root (network namespaces, ns-3)"}
    res["seconds"] = round(time.monotonic() - started, 1)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="relay transport benchmarks (JSON on stdout)")
    ap.add_argument("--out", help="keep the runs here")
    ap.add_argument("--quick", action="store_true", help="shorter runs")
    args = ap.parse_args(argv)
    print(json.dumps(run_all(args.out, args.quick), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
