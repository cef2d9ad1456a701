"""The ``make bench`` suite (``netloop bench``): speed is measured here, not in timed tests.
Its own parts (loop latency and echo rate per transport) are in this module; the others are
the benches of their components (``testbed.link_bench``, ``sim.sim_bench``,
``transports.relay_bench``, ``priority_bench``, ``ros2_bench``, ``calibrate_link``).

Measured on loopback with the real nodes and a real master, written to bench/bench.md and
bench/bench.json with the machine it ran on:

  - one-way latency of loop messages per transport at 50 Hz (median, p99, in ms);
  - the highest echo rate the plant/controller pair sustains per transport: the plant
    samples at f Hz, the controller answers every sample, and f counts as sustained when at
    least 99 % of the samples are answered and the achieved rate is within 1 % of f;
  - link emulation figures of the testbed (bring-up and tear-down time; ns-3 CPU and lag,
    also with the CPUs loaded), when the machine allows namespaces (root);
  - the ``priority`` relay's mechanisms added one at a time (``netloop.transports.priority_bench``):
    the Pound paper's two flows on ``wifi6`` and ``wifi6_2hop`` and the ``pound_fig21`` loop,
    beside ROS's transports, as ratios to the published numbers and against the goals;
  - ROS 2's middlewares (``netloop.transports.ros2_bench``): native Cyclone DDS, Fast DDS and
    Zenoh latency of a 4 KB message at 50 Hz on loopback and between two namespaces joined by
    ``ethernet``, and their sustained echo rate, beside ``tcp_nodelay`` as ratios from the same
    run, with Cyclone DDS's ``ddsperf`` ping/pong on the same links as the reference;
  - the calibration of ``wifi6`` against the Pound paper (``netloop calibrate wifi6``: Tables
    I-II and Fig. 19) with the count of runs left out because ns-3 lagged real time.

The machine is shared and noisy: every figure is a median, and ratios are given where
a comparison matters.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable


from .analysis.loop_run import analyse_loop_run, load_loop_run
from .analysis.records import read_events
from .experiment import expand, for_cell, validate_experiment
from .rundir import host_info, now_iso
from .runner import run_cell

LATENCY_TRANSPORTS = ("tcp", "tcp_nodelay", "udp")
ECHO_RATES_HZ = (1000, 2000, 5000, 10000, 20000)


def _run(work: Path, name: str, transport: str, samples: int, period: float) -> Path:
    exp = validate_experiment({"transport": transport, "loop": {"samples": samples, "plant": {"period": period}},
                               "run_timeout": 120}, name="bench")
    run_dir = work / name
    record = run_cell(for_cell(exp, expand(exp)[0]), run_dir, log=lambda _: None)
    if record.status != "complete":
        raise RuntimeError(f"bench run {name} {record.status}: {record.error}")
    return run_dir


def latency(work: Path, samples: int = 1000) -> list[dict[str, Any]]:
    rows = []
    for transport in LATENCY_TRANSPORTS:
        a = analyse_loop_run(load_loop_run(_run(work, f"latency-{transport}", transport, samples, 0.02)))
        rows.append({"transport": transport, "rate_hz": 50, "messages": a["sensor"]["delay"]["n"],
                     "y_median_ms": a["sensor"]["delay"]["p50_ms"], "y_p99_ms": a["sensor"]["delay"]["p99_ms"],
                     "u_median_ms": a["actuation"]["delay"]["p50_ms"], "u_p99_ms": a["actuation"]["delay"]["p99_ms"],
                     "rtt_median_ms": a["rtt"]["p50_ms"]})
    return rows


def echo_rate(work: Path, transport: str, seconds: float = 2.0) -> dict[str, Any]:
    """The highest rate in ECHO_RATES_HZ sustained with < 1 % loss, and every step tried."""
    steps, best = [], None
    for rate in ECHO_RATES_HZ:
        samples = int(rate * seconds)
        run_dir = _run(work, f"echo-{transport}-{rate}", transport, samples, 1.0 / rate)
        plant = read_events(run_dir / "records" / "plant.csv")
        y = plant.select("tx", "y")
        answered = len(set(plant.select("rx", "u").answer_seq.tolist()) |
                       set(plant.select("stale", "u").answer_seq.tolist()))
        achieved = (len(y) - 1) / ((y.stamp_ns[-1] - y.stamp_ns[0]) / 1e9)
        ok = bool(answered >= 0.99 * len(y) and achieved >= 0.99 * rate)
        steps.append({"rate_hz": rate, "achieved_hz": round(achieved, 1), "answered": answered / len(y), "ok": ok})
        shutil.rmtree(run_dir, ignore_errors=True)
        if not ok:
            break
        best = rate
    return {"transport": transport, "sustained_hz": best, "steps": steps}


def _optional(module: str, what: str, **kwargs: Any) -> dict[str, Any]:
    """``run_all(**kwargs)`` of a component's bench module; a failure is reported, not fatal."""
    import importlib  # noqa: PLC0415
    try:
        return importlib.import_module(module).run_all(**kwargs)
    except Exception as err:  # e.g. not root, or the component is missing here
        return {"skipped": f"{what}: {type(err).__name__}: {err}"}


def testbed_figures() -> dict[str, Any]:
    """The testbed's figures (:mod:`netloop.testbed.link_bench`); when they cannot be measured
    here (not root, a dependency missing) why, as for the other components."""
    return _optional("netloop.testbed.link_bench", "testbed")


def calibration(out: Path, profile: str = "wifi6") -> dict[str, Any]:
    """Both calibration campaigns on ``profile`` (into ``out/calibration``), judged."""
    if os.geteuid() != 0:
        return {"skipped": "the calibration needs root (network namespaces)"}
    from . import calibrate_link  # noqa: PLC0415
    campaigns = calibrate_link.run_campaigns(profile, ["tables", "fig19"], None, out / "calibration")
    report, text = calibrate_link.summarize(campaigns, profile)
    return dict(report, text=text)


def _calibration_md(cal: dict[str, Any]) -> list[str]:
    if "skipped" in cal or not cal:
        return [f"Skipped: {cal.get('skipped', 'not run')}", ""]
    return [f"`netloop calibrate {cal['profile']}`; runs left out because ns-3 lagged real time: "
            f"**{cal['invalid_runs']}**; attempts judged invalid and run again: "
            f"**{cal['invalid_attempts']}**", "", cal["text"], ""]


def _md(results: dict[str, Any]) -> str:
    h = results["host"]
    dates = results.get("dates") or {}
    lines = [f"# netloop benchmarks ({results['date']})", "",
             f"Machine: {h['cpu']}, {h['cores']} cores, kernel {h['kernel']} (shared; medians quoted)."
             + (" Parts run on other dates say so." if len(set(dates.values())) > 1 else ""), "",
             "## One-way latency of loop messages on loopback, 50 Hz", "", *_when(dates, "latency"),
             "| transport | messages | y median [ms] | y p99 [ms] | u median [ms] | u p99 [ms] | RTT median [ms] |",
             "|---|---|---|---|---|---|---|"]
    for r in results.get("latency", []):
        lines.append(f"| {r['transport']} | {r['messages']} | {r['y_median_ms']:.3f} | {r['y_p99_ms']:.3f} | "
                     f"{r['u_median_ms']:.3f} | {r['u_p99_ms']:.3f} | {r['rtt_median_ms']:.3f} |")
    lines += ["", "## Highest echo rate sustained (< 1 % unanswered, rate within 1 %)", "", *_when(dates, "echo"),
              "| transport | sustained [Hz] | steps (target → achieved, answered) |", "|---|---|---|"]
    for r in results.get("echo", []):
        steps = "; ".join(f"{s['rate_hz']} → {s['achieved_hz']:.0f} Hz, {100 * s['answered']:.1f} %"
                          for s in r["steps"])
        lines.append(f"| {r['transport']} | {r['sustained_hz'] or '< ' + str(ECHO_RATES_HZ[0])} | {steps} |")
    lines += ["", "## Testbed links", "", *_when(dates, "testbed")] + _testbed_md(results.get("testbed", {}))
    sim = results.get("simulator", {})
    lines += ["## Embedded simulator (pybullet)", "", *_when(dates, "simulator")]
    if "skipped" in sim:
        lines += [f"Skipped: {sim['skipped']}", ""]
    elif sim:
        lines += [f"World `{sim['world']}`, physics at {sim['physics_rate']:g} Hz, camera {sim['image']} at "
                  f"{sim['camera_rate']:g} fps, LIDAR 360 rays at {sim['scan_rate']:g} Hz:", "",
                  "| physics step [ms] | camera frame [ms] | JPEG encode [ms] | scan [ms] | real-time factor | "
                  "worst 1 s window | CPU [share of a core] |", "|---|---|---|---|---|---|---|",
                  f"| {sim['physics_step_ms']:.3f} | {sim['camera_frame_ms']:.2f} | {sim['jpeg_encode_ms']:.2f} | "
                  f"{sim['scan_ms']:.2f} | {sim['rtf']:.3f} | {sim['rtf_window_min']:.3f} | {sim['cpu_share']:.2f} |", ""]
    lines += ["## Relay transports", "", *_when(dates, "relays")] + _relays_md(results.get("relays", {}))
    lines += ["## The priority relay's mechanisms, one at a time", "", *_when(dates, "priority")] + _priority_md(results.get("priority", {}))
    lines += ["## ROS 2 middlewares", "", *_when(dates, "ros2")] + _ros2_md(results.get("ros2", {}))
    lines += ["## Calibration against the Pound paper", "", *_when(dates, "calibration")] + _calibration_md(results.get("calibration", {}))
    return "\n".join(lines)


def _ros2_md(r: dict[str, Any]) -> list[str]:
    if "skipped" in r or not r:
        return [f"Skipped: {r.get('skipped', 'not run')}", ""]
    from .transports.ros2_bench import markdown  # noqa: PLC0415
    return markdown(r)


def _when(dates: dict[str, str], part: str) -> list[str]:
    """A line naming the date of a part measured on another day than the rest (``--only``)."""
    if part in dates and len(set(dates.values())) > 1:
        return [f"Measured {dates[part]}.", ""]
    return []


def _priority_md(r: dict[str, Any]) -> list[str]:
    from .transports.priority_bench import markdown  # noqa: PLC0415
    return markdown(r)


def _relays_md(r: dict[str, Any]) -> list[str]:
    if "skipped" in r or not r:
        return [f"Skipped: {r.get('skipped', 'not run')}", ""]
    lines = ["Loopback, the loop's messages through each transport (added = over direct tcp_nodelay):", "",
             "| transport | one-way p50 [ms] | p99 [ms] | added p50 [ms] | added p99 [ms] | relay CPU per message [µs] |",
             "|---|---|---|---|---|---|"]
    for name, v in r.get("loopback", {}).items():
        lines.append(f"| {name} | {v.get('D_p50_ms', '–')} | {v.get('D_p99_ms', '–')} | {v.get('added_p50_ms', '–')} | "
                     f"{v.get('added_p99_ms', '–')} | {v.get('relay_cpu_us_per_message') or '–'} |")
    g = r.get("goodput_wifi", {})
    if g:
        lines += ["", f"One bulk topic over `priority` on wifi6: {g['priority_bulk']['bandwidth_mbit']} Mbit/s, "
                      f"{g['goodput_ratio']:.2f} of the raw UDP goodput ({g['udp_raw']['mbit_s']:.2f} Mbit/s)."]
    return lines + [""]


def _testbed_md(tb: dict[str, Any]) -> list[str]:
    if "skipped" in tb:
        return [f"Skipped: {tb['skipped']}", ""]
    lines = ["| link | TCP goodput [Mbit/s] | UDP RTT median [ms] | up [s] | down [s] | emulator lag max [ms] |",
             "|---|---|---|---|---|---|"]
    for name, updown in tb.get("up_down", {}).items():
        health = tb.get("health", {}).get(name, {})
        lines.append(f"| {name} | {tb.get('goodput_mbit_s', {}).get(name, '–')} | "
                     f"{tb.get('rtt_median_ms', {}).get(name, '–')} | {updown['up_s']} | {updown['down_s']} | "
                     f"{health.get('max_lag_ms') if health.get('max_lag_ms') is not None else '–'} |")
    sat = tb.get("ns3_wifi6")
    if sat:
        lines += ["", f"ns-3 at saturation (bulk TCP over {sat['profile']}): goodput {sat['goodput_mbit_s']} Mbit/s, "
                      f"ns-3 uses {100 * sat['ns3_cpu_fraction']:.0f} % of one core, real-time lag mean "
                      f"{sat['mean_lag_ms']} ms, max {sat['max_lag_ms']} ms, {100 * (sat['late_fraction'] or 0):.2f} % "
                      f"of samples over {sat['lag_bound_ms']} ms (valid: {sat['valid']})."]
    load = tb.get("lag_under_load")
    if load:
        lines += ["", f"ns-3 lag during bulk TCP over {load['profile']} with {load['hogs']} busy processes on "
                      f"{load['cpus']} CPUs:", "",
                  "| ns-3 scheduling | goodput [Mbit/s] | lag mean [ms] | lag max [ms] | samples late | valid |",
                  "|---|---|---|---|---|---|"]
        for case in ("normal", "rt_priority"):
            c = load[case]
            label = "normal (rt_priority 0)" if case == "normal" else f"SCHED_FIFO {c['rt_priority']}"
            lines.append(f"| {label} | {c['goodput_mbit_s']} | {c['mean_lag_ms']} | {c['max_lag_ms']} | "
                         f"{100 * (c['late_fraction'] or 0):.2f} % | {c['valid']} |")
    st = tb.get("stations")
    if st:
        lines += ["", f"Robot stations ns-3 keeps in real time ({st['profile']} with `robots: N`, every robot "
                      f"echoing 64 B with the operator every {st['interval_s'] * 1e3:g} ms for {st['seconds']:g} s): "
                      f"largest valid N = {st['largest_valid']}.", "",
                  "| N | echoes received / sent | RTT median [ms] | ns-3 CPU [% of a core] | lag max [ms] | "
                  "samples late | valid |", "|---|---|---|---|---|---|---|"]
        for n, v in st["stations"].items():
            lines.append(f"| {n} | {v['echoes_received']} / {v['echoes_sent']} | {v['rtt_median_ms']} | "
                         f"{100 * v['ns3_cpu_fraction']:.0f} | {v['max_lag_ms']} | "
                         f"{100 * (v['late_fraction'] or 0):.2f} % | {v['valid']} |")
    return lines + [""]


def _calibration_part(out: Path, work: Path) -> dict[str, Any]:
    try:
        return calibration(out)
    except Exception as err:  # reported in the table, the other figures are kept
        return {"skipped": f"{type(err).__name__}: {err}"}


#: the parts of ``netloop bench`` in order: name -> (what is printed, how it is measured)
PARTS: dict[str, tuple[str, Callable[[Path, Path], Any]]] = {
    "latency": ("latency per transport at 50 Hz", lambda out, work: latency(work)),
    "echo": ("echo rate over tcp_nodelay and udp",
             lambda out, work: [echo_rate(work, t) for t in ("tcp_nodelay", "udp")]),
    "testbed": ("testbed", lambda out, work: testbed_figures()),
    "simulator": ("simulator", lambda out, work: _optional("netloop.sim.sim_bench", "simulator")),
    "relays": ("relay transports", lambda out, work: _optional("netloop.transports.relay_bench", "relay transports")),
    "priority": ("the priority relay's mechanisms, one at a time (two flows; the loop)",
                 lambda out, work: _optional("netloop.transports.priority_bench", "priority relay mechanisms",
                                             out_dir=out / "priority")),   # its campaigns kept there
    "ros2": ("ROS 2 middlewares (and ddsperf)",
             lambda out, work: _optional("netloop.transports.ros2_bench", "ROS 2 middlewares")),
    "calibration": ("calibration of wifi6 (netloop calibrate wifi6)", _calibration_part),
}


def parse_only(text: str | None) -> list[str]:
    """``--only a,b`` -> the parts in bench order; ValueError naming an unknown part."""
    if not text:
        return list(PARTS)
    asked = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in asked if t not in PARTS]
    if unknown or not asked:
        raise ValueError(f"--only: unknown part {', '.join(unknown) or repr(text)}; one or more of "
                         f"{', '.join(PARTS)} (comma-separated)")
    return [p for p in PARTS if p in asked]


def main(out: Path, only: str | None = None) -> int:
    """Run the parts (every one, or ``only``'s) and write bench.md / bench.json in ``out``; with
    ``only``, the other parts' figures of an earlier bench.json there are kept, each part dated."""
    parts = parse_only(only)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    if only and (out / "bench.json").exists():
        try:
            results = json.loads((out / "bench.json").read_text())
        except ValueError:
            results = {}
    dates = results.get("dates") or {p: results["date"] for p in PARTS if p in results and "date" in results}
    work = Path(tempfile.mkdtemp(prefix="netloop-bench-"))
    started = time.monotonic()
    try:
        for part in parts:
            print(f"bench: {PARTS[part][0]} ...", flush=True)
            results[part] = PARTS[part][1](out, work)
            dates[part] = now_iso()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results.update(date=now_iso(), host=host_info(), dates=dates, seconds=round(time.monotonic() - started, 1))
    (out / "bench.json").write_text(json.dumps(results, indent=1, default=str))
    (out / "bench.md").write_text(_md(results))
    print((out / "bench.md").read_text())
    return 0
