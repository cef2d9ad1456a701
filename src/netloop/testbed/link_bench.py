"""Measurements of the testbed itself (for ``make bench`` and the tests).

* :func:`goodput` / :func:`rtt` — bulk TCP goodput and UDP echo RTT between two hosts of a
  live testbed, using :mod:`netloop.testbed.probe` run inside the hosts;
* :func:`ns3_saturation` — ns-3 CPU use and real-time lag while a bulk transfer saturates
  ``wifi6``;
* :func:`wifi_figures` — UDP RTT, TCP goodput, ns-3 CPU and lag of each Wi-Fi profile
  (ad-hoc and access point, 802.11a/g/n);
* :func:`lag_under_load` — the same with busy processes competing for the CPUs, with ns-3 at
  normal scheduling and at the profile's SCHED_FIFO priority (why profiles set ``rt_priority``);
* :func:`up_down_times` — median time to bring each profile up and down.

All return plain dicts (JSON-ready).
"""
from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .profiles import load_profile, profile_names
from .testbed import Testbed
from .util import TestbedError

_SRC = str(Path(__file__).resolve().parents[2])


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = _SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _probe_cmd(tb: Testbed, host: str, args: list[str]) -> list[str]:
    return tb.exec_prefix(host) + [sys.executable, "-m", "netloop.testbed.probe"] + args


def _port() -> int:
    return random.randint(20000, 59999)


def _json_out(text: str, what: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise TestbedError(f"{what} printed no result: {text.strip()[-300:]!r}")


def goodput(tb: Testbed, src: str = "robot", dst: str = "operator", seconds: float = 3.0,
            port: int | None = None) -> dict:
    """Bulk TCP from ``src`` to ``dst`` for ``seconds``: {'mbit_s', 'bytes', 'seconds'}."""
    port = port or _port()
    sink = subprocess.Popen(_probe_cmd(tb, dst, ["tcp-sink", "--port", str(port),
                                                 "--timeout", str(seconds + 20)]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env())
    try:
        send = subprocess.run(_probe_cmd(tb, src, ["tcp-send", "--host", tb.address(dst),
                                                   "--port", str(port), "--seconds", str(seconds)]),
                              capture_output=True, text=True, env=_env(), timeout=seconds + 40)
        out, err = sink.communicate(timeout=30)
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait()
    if send.returncode != 0:
        raise TestbedError(f"tcp-send failed: {send.stderr.strip()[-500:]}")
    return _json_out(out, f"tcp-sink ({err.strip()[-300:]})")


def rtt(tb: Testbed, src: str = "robot", dst: str = "operator", count: int = 20,
        interval: float = 0.05, size: int = 64, dontroute: bool = False,
        port: int | None = None, wait: float = 1.0) -> dict:
    """UDP echo from ``src`` to ``dst``: {'sent','received','loss','rtt_median_ms',...}."""
    port = port or _port()
    echo = subprocess.Popen(_probe_cmd(tb, dst, ["udp-echo", "--port", str(port),
                                                 "--timeout", "60"]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_env())
    try:
        time.sleep(0.3)  # let the echo server bind (python start-up)
        args = ["udp-ping", "--host", tb.address(dst), "--port", str(port), "--count",
                str(count), "--interval", str(interval), "--size", str(size), "--wait", str(wait)]
        if dontroute:
            args.append("--dontroute")
        ping = subprocess.run(_probe_cmd(tb, src, args), capture_output=True, text=True,
                              env=_env(), timeout=count * interval + wait + 30)
    finally:
        echo.kill()
        echo.wait()
    if ping.returncode != 0:
        raise TestbedError(f"udp-ping failed: {ping.stderr.strip()[-500:]}")
    return _json_out(ping.stdout, "udp-ping")


def _ms(value):
    return None if value is None else round(value, 3)


def ns3_saturation(profile: str = "wifi6", seconds: float = 8.0,
                   overrides: dict | None = None) -> dict:
    """ns-3 CPU use (fraction of one core) and real-time lag during bulk TCP over ``profile``."""
    prof = load_profile(profile, overrides)
    with Testbed(prof) as tb:
        time.sleep(1.0)  # past the lag warm-up
        t0 = time.time()
        c0 = _cpu_seconds(tb._link.proc.pid)
        g = goodput(tb, seconds=seconds)
        c1 = _cpu_seconds(tb._link.proc.pid)
        t1 = time.time()
        time.sleep(1.1)  # one more stats line covering the end of the transfer
        h = tb.health(since=t0)
    return {"profile": profile, "goodput_mbit_s": round(g["mbit_s"], 3),
            "ns3_cpu_fraction": round((c1 - c0) / (t1 - t0), 3),
            "max_lag_ms": _ms(h["max_lag_ms"]), "mean_lag_ms": _ms(h["mean_lag_ms"]),
            "late_fraction": h["late_fraction"], "lag_bound_ms": h["lag_bound_ms"],
            "valid": h["valid"]}


def _cpu_hogs(n: int) -> list[subprocess.Popen]:
    """``n`` processes that spin on a CPU until killed (the load of a busy 2-core machine)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def lag_under_load(profile: str = "wifi6", hogs: int = 2, seconds: float = 6.0) -> dict:
    """ns-3's real-time lag during bulk TCP over ``profile`` while ``hogs`` busy processes
    compete for the CPUs: with normal scheduling (rt_priority 0) and with the profile's
    SCHED_FIFO priority. {"hogs", "normal": {...}, "rt_priority": {...}}"""
    rt = load_profile(profile).rt_priority or 10
    out: dict = {"profile": profile, "hogs": hogs, "cpus": os.cpu_count()}
    for case, prio in (("normal", 0), ("rt_priority", rt)):
        procs = _cpu_hogs(hogs)
        try:
            out[case] = dict(ns3_saturation(profile, seconds, {"rt_priority": prio}), rt_priority=prio)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    return out


#: The Wi-Fi profiles measured side by side: ad-hoc against access point at the same rate.
WIFI_PROFILES = ("wifi6", "wifi6_ap", "wifi_g54", "wifi_n_mcs7", "wifi_n_mcs7_ap")


def wifi_figures(profile: str, seconds: float = 5.0, pings: int = 50) -> dict:
    """One ns-3 Wi-Fi profile measured: UDP echo RTT of 64-byte datagrams (idle link), bulk
    TCP goodput robot -> operator, and ns-3's CPU use and real-time lag during the transfer."""
    with Testbed(load_profile(profile)) as tb:
        time.sleep(1.0)  # past the lag warm-up
        r = rtt(tb, count=pings, interval=0.02)
        t0 = time.time()
        c0 = _cpu_seconds(tb._link.proc.pid)
        g = goodput(tb, seconds=seconds)
        c1 = _cpu_seconds(tb._link.proc.pid)
        t1 = time.time()
        time.sleep(1.1)  # one more stats line covering the end of the transfer
        h = tb.health(since=t0)
    return {"profile": profile, "rtt_median_ms": round(r["rtt_median_ms"], 3), "rtt_received": r["received"],
            "rtt_sent": r["sent"], "goodput_mbit_s": round(g["mbit_s"], 3),
            "ns3_cpu_fraction": round((c1 - c0) / (t1 - t0), 3), "max_lag_ms": h["max_lag_ms"],
            "mean_lag_ms": h["mean_lag_ms"], "late_fraction": h["late_fraction"], "valid": h["valid"]}


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def up_down_times(profiles: list[str] | None = None, repeats: int = 3) -> dict:
    """Median seconds to bring each profile up and down: {name: {'up_s', 'down_s'}}."""
    out = {}
    for name in profiles or profile_names():
        ups, downs = [], []
        for _ in range(repeats):
            tb = Testbed(load_profile(name))
            t0 = time.monotonic()
            tb.up()
            t1 = time.monotonic()
            tb.down()
            t2 = time.monotonic()
            ups.append(t1 - t0)
            downs.append(t2 - t1)
        out[name] = {"up_s": round(statistics.median(ups), 3),
                     "down_s": round(statistics.median(downs), 3), "repeats": repeats}
    return out


def stations_in_real_time(counts: tuple[int, ...] = (1, 2, 4, 8, 12, 16), profile: str = "wifi6",
                          seconds: float = 5.0, interval: float = 0.02) -> dict:
    """How many robot stations ns-3 keeps in real time on this machine: for each N, a
    ``profile`` link with ``robots: N``, every robot echoing 64-byte UDP datagrams with the
    operator every ``interval`` s at once (N x 50 Hz each way); per N the echoes received,
    the median round trip, ns-3's CPU share and lag. ``largest_valid``: the largest N whose
    lag stayed within the profile's bound."""
    out: dict[str, Any] = {"profile": profile, "interval_s": interval, "seconds": seconds, "stations": {}}
    count = int(seconds / interval)
    for n in counts:
        with Testbed(load_profile(profile, {"robots": n})) as tb:
            time.sleep(1.0)  # past the lag warm-up
            robots = [h for h in tb.hosts if h != "operator"]
            echoes, ports = [], []
            try:
                for _ in robots:
                    ports.append(_port())
                    echoes.append(subprocess.Popen(_probe_cmd(tb, "operator", ["udp-echo", "--port", str(ports[-1]),
                                                                               "--timeout", "60"]),
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env()))
                time.sleep(0.5)
                t0, c0 = time.time(), _cpu_seconds(tb._link.proc.pid)
                pings = [subprocess.Popen(_probe_cmd(tb, robot, ["udp-ping", "--host", tb.address("operator"), "--port",
                                                                str(port), "--count", str(count), "--interval",
                                                                str(interval), "--size", "64", "--wait", "1.0"]),
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
                         for robot, port in zip(robots, ports)]
                results = [_json_out(p.communicate(timeout=seconds + 60)[0], "udp-ping") for p in pings]
                cpu = (_cpu_seconds(tb._link.proc.pid) - c0) / (time.time() - t0)
            finally:
                for e in echoes:
                    e.kill()
                    e.wait()
            h = tb.health(since=t0)
        received = sum(r["received"] for r in results)
        out["stations"][str(n)] = {
            "echoes_sent": count * n, "echoes_received": received,
            "rtt_median_ms": _ms(statistics.median(r["rtt_median_ms"] for r in results if r["rtt_median_ms"])),
            "ns3_cpu_fraction": round(cpu, 3), "max_lag_ms": h["max_lag_ms"], "late_fraction": h["late_fraction"],
            "valid": h["valid"]}
    valid = [int(n) for n, v in out["stations"].items() if v["valid"]]
    out["largest_valid"] = max(valid) if valid else None
    return out


def run_all(repeats: int = 3) -> dict:
    """Everything above, for ``make bench`` (needs root; loopback-only without it)."""
    if os.geteuid() != 0:
        return {"skipped": "testbed benchmarks need root (network namespaces)"}
    res = {"up_down": up_down_times(repeats=repeats), "ns3_wifi6": ns3_saturation("wifi6"),
           "lag_under_load": lag_under_load("wifi6"), "stations": stations_in_real_time(),
           "wifi": {name: wifi_figures(name) for name in WIFI_PROFILES}}
    for name in ("ethernet", "wifi6", "wifi6_2hop", "shaped"):
        with Testbed(load_profile(name)) as tb:
            res.setdefault("goodput_mbit_s", {})[name] = round(goodput(tb, seconds=3)["mbit_s"], 2)
            r = rtt(tb, count=50, interval=0.02)
            res.setdefault("rtt_median_ms", {})[name] = round(r["rtt_median_ms"], 3)
            h = tb.health()
            res.setdefault("health", {})[name] = {k: h.get(k) for k in (
                "valid", "max_lag_ms", "mean_lag_ms", "late_fraction")}
    return res


if __name__ == "__main__":
    print(json.dumps(run_all(), indent=1))
