"""Jordan 2017, "Evaluating the Scalability of ROS in Multi-Robot Systems": the frequency, CPU
clock, Wi-Fi, representative-data and vertical-scaling experiments (1, 3, 4, 5, 6, 7).

The study's sender publishes at a rate, an echoer on another host sends every message back and
the sender takes the round trip. netloop's echo flows (``kind: echo``) do the same. The study
ran rospy on Raspberry Pi 3s; netloop runs C++ nodes in network namespaces of a PC, so
absolute round trips that depend on the Pi's CPU are compared by ratio or by shape, never as
times. Two analyses of the study are defined here and tested on synthetic records
(test/test_study_jordan.py):

* **knee** (:func:`knee`): a series of points (one per rate, or per node count) is *degraded*
  at a point when the sender did not keep the rate (sent < 90 % of what the rate and the run's
  length call for), when echoes were lost (fewer than 99 % came back), or when the mean round
  trip exceeds 3 x the series' lowest mean. The knee is the lowest point from which every
  higher point is degraded (the study's "sustained degradation" at the top rates); a point
  that is degraded below a good one is noise, not the knee.
* **the clock's ratio** at 200 Hz (Exp 3): the mean round trip at 75 % and 50 % of the clock
  over the one at 100 %, within half the published excess over 1 (1.178 ± 0.089, 1.354 ± 0.177),
  so that a clock that changes nothing (×1.0) misses.
* **CSLV** (:func:`cslv`): the study's communication scaling limit volume, N x f x S with N
  the sending nodes on the host, f their rate and S the message size. From the vertical sweep
  (series 1: N echo pairs at 100/200/300 Hz) each rate's knee in N gives N x f x S where the
  host first degrades; the CSLV is the smallest of these (kB/s, S in kB of 1000 bytes). The
  largest N predicted at a rate f is the largest N with N x f x S below the CSLV.
"""
from __future__ import annotations

import math
from typing import Optional

from .core import Comparison, Part, ShapeCheck, Study, StudyResult, Tolerance, median, within
from .jordan_points import by, cost_note, mean_at, points, rate_series

KEPT_RATE = 0.9          # below this fraction of the messages the rate calls for: not kept
ECHOED = 0.99            # below this fraction of echoes back: lost
RTT_FACTOR = 3.0         # a mean round trip above this x the series' lowest: degraded
STUDY_RATES_EXP3 = [200 * k for k in range(1, 11)]       # Exp 3 and 5: 200 .. 2000 Hz
SENSOR_BYTES, VIDEO_BYTES = 4250, 308000
#: Exp 3's headline, "halving the clock doubles the round trip": the largest ratio over the rates
#: holds within this factor of 2 (x1.33-3); far above it (a slow-clock model's x17.8) fails
DOUBLING_FACTOR = 1.5
#: Exp 5: the sensor spread holds the "much less for video" shape only within this factor of the
#: published 54 %; video's 40 Hz round trips, "no correlation with the clock", within this
#: factor of each other
SENSOR_SPREAD_FACTOR = 3.0
VIDEO_CLOCK_FACTOR = 2.0


# --- the analyses -------------------------------------------------------------------------

def degraded(point: dict, baseline_ms: float) -> bool:
    """Whether one point (keys ``kept``, ``echoed``, ``mean_ms``) is degraded against the
    series' lowest mean round trip ``baseline_ms`` (see the module doc)."""
    if point.get("kept") is not None and point["kept"] < KEPT_RATE:
        return True
    if point.get("echoed") is not None and point["echoed"] < ECHOED:
        return True
    mean = point.get("mean_ms")
    return mean is None or (baseline_ms > 0 and mean > RTT_FACTOR * baseline_ms)


def knee(points: list, key: str = "rate") -> Optional[float]:
    """The lowest ``key`` value from which every higher point of the series is degraded; None
    when the highest point is not degraded (the series never breaks)."""
    pts = sorted(points, key=lambda p: p[key])
    means = [p["mean_ms"] for p in pts if p.get("mean_ms") is not None]
    if not pts or not means:
        return None
    base = min(means)
    found = None
    for p in reversed(pts):
        if not degraded(p, base):
            break
        found = p[key]
    return found


def sustained(points: list, key: str = "rate") -> Optional[float]:
    """The highest ``key`` value below the knee (the top one when there is no knee): the study's
    "maximum sustainable rate"; None when even the lowest point is degraded or there is none."""
    k = knee(points, key)
    below = [p[key] for p in points if k is None or p[key] < k]
    return max(below) if below else None


def degraded_count(knee_rate: Optional[float], rates=STUDY_RATES_EXP3) -> int:
    """How many of the study's rates lie at or above the knee (0 when there is none): the
    study's "rates with sustained degradation", also from a sweep of fewer rates."""
    return 0 if knee_rate is None else sum(1 for r in rates if r >= knee_rate - 1e-6)


def cslv(points: list, size_kb: float) -> tuple:
    """(CSLV in kB/s, {rate: N x f x S at that rate's knee}) from vertical-sweep points (keys
    ``rate``, ``n`` and the degradation keys); CSLV None when no rate degraded."""
    per_rate = {}
    for rate in sorted({p["rate"] for p in points}):
        n = knee([p for p in points if p["rate"] == rate], key="n")
        if n is not None:
            per_rate[rate] = n * rate * size_kb
    return (min(per_rate.values()) if per_rate else None), per_rate


def predicted_max_n(cslv_kbs: Optional[float], rate: float, size_kb: float) -> Optional[int]:
    """The largest N whose volume N x rate x size stays below the CSLV."""
    if cslv_kbs is None:
        return None
    return max(0, math.ceil(cslv_kbs / (rate * size_kb)) - 1)


def spread(means: list) -> Optional[float]:
    """(slowest - fastest) / fastest in %, over the CPU levels' mean round trips."""
    vals = [m for m in means if m is not None]
    if len(vals) < 2 or min(vals) <= 0:
        return None
    return 100.0 * (max(vals) - min(vals)) / min(vals)


def _hz(rate) -> str:
    return "none up to the top rate" if rate is None else f"{rate:g} Hz"


# --- the parts' comparisons ---------------------------------------------------------------

def compare_exp1(pts: list) -> tuple:
    comps, checks = [], []
    for transport in ("tcp_nodelay", "udp"):
        series = rate_series(pts, transport=transport)
        k = knee(series) if series else None
        top = max((p["rate"] for p in series), default=None)
        if transport == "tcp_nodelay":
            comps.append(Comparison("Exp 1: knee (first rate of sustained degradation), TCPROS", "Hz", 10000,
                                    k if series else None, Tolerance(factor=3), "shape",
                                    "rospy on a Raspberry Pi 3 vs roscpp here" if k else
                                    f"no degradation up to {top:g} Hz" if series else ""))
            below = [p["mean_ms"] for p in series if k is None or p["rate"] < k]
            flat = (max(below) / min(below)) if below and min(below) > 0 else None
            checks.append(ShapeCheck("Exp 1: round trip steady below the knee, erratic above",
                                     "about 1.5 ms at every rate below 10 kHz, erratic from 10 kHz",
                                     f"below {_hz(k)}: max/min of the mean RTT {flat:.2f}" if flat else "no points",
                                     None if flat is None else flat <= RTT_FACTOR and k is not None,
                                     "" if k is not None or not series else "never degraded in the sweep"))
        if series:
            comps.append(Comparison(f"Exp 1: highest rate sustained, {transport}", "Hz", None, sustained(series),
                                    None, "absolute", f"knee {_hz(k)}"))
    return comps, checks


def compare_exp3(pts: list) -> tuple:
    comps, checks = [], []
    base = mean_at(pts, cpu=1.0, rate=200.0)
    base50 = median(p.get("p50_ms") for p in by(pts, cpu=1.0, rate=200.0))
    for cpu, published in ((0.75, 1.399), (0.5, 1.609)):
        ours = mean_at(pts, cpu=cpu, rate=200.0)
        p50 = median(p.get("p50_ms") for p in by(pts, cpu=cpu, rate=200.0))
        comps.append(Comparison(f"Exp 3: RTT at 200 Hz, clock {cpu:.0%} / 100 %", "×", published / 1.188,
                                ours / base if ours and base else None,
                                Tolerance(absolute=round(0.5 * (published / 1.188 - 1), 3)), "ratio",
                                f"means {ours:.3f} / {base:.3f} ms, medians {p50:.3f} / {base50:.3f} ms"
                                if ours and base and p50 and base50 else ""))
    counts = {}
    for cpu, published in ((1.0, 3), (0.75, 5), (0.5, 7)):
        series = rate_series(pts, cpu=cpu)
        k = knee(series) if series else None
        counts[cpu] = degraded_count(k) if series else None
        comps.append(Comparison(f"Exp 3: degraded rates of 200-2000 Hz, clock {cpu:.0%}", "rates", published,
                                counts[cpu], Tolerance(absolute=2), "shape",
                                f"knee {_hz(k)}" if series else ""))
    have = [counts[c] for c in (1.0, 0.75, 0.5) if counts[c] is not None]
    grows = None if len(have) < 2 else (all(a <= b for a, b in zip(have, have[1:])) and have[-1] > have[0])
    checks.append(ShapeCheck("Exp 3: more rates degrade as the clock falls", "3, 5, 7 at 100, 75, 50 %",
                             ", ".join("-" if counts[c] is None else str(counts[c]) for c in (1.0, 0.75, 0.5))
                             + " at 100, 75, 50 %", grows))
    ratios = [(r, mean_at(pts, cpu=0.5, rate=r), mean_at(pts, cpu=1.0, rate=r))
              for r in sorted({p["rate"] for p in pts})]
    ratios = [(r, a / b) for r, a, b in ratios if a and b]
    worst = max(ratios, key=lambda x: x[1]) if ratios else None
    lo, hi = 2.0 / DOUBLING_FACTOR, 2.0 * DOUBLING_FACTOR
    checks.append(ShapeCheck("Exp 3: halving the clock doubles the round trip (at some rate)",
                             f"×2 (rate not given; ×1.35 at 200 Hz): the largest ratio within ×{lo:.2f}-{hi:g}",
                             f"largest ×{worst[1]:.2f} at {worst[0]:g} Hz" if worst else "not measured",
                             within(worst[1] if worst else None, lo, hi)))
    return comps, checks


def compare_exp5(sensor: list, video: list) -> tuple:
    comps, checks = [], []
    cpus = sorted({p["cpu"] for p in sensor + video}, reverse=True)
    s400 = spread([mean_at(sensor, cpu=c, rate=400.0) for c in cpus])
    v20 = spread([mean_at(video, cpu=c, rate=20.0) for c in cpus])
    comps.append(Comparison("Exp 5: sensor 4.25 kB at 400 Hz, spread over the clocks", "%", 54, s400,
                            Tolerance(factor=2), "ratio"))
    comps.append(Comparison("Exp 5: video 308 KB at 20 Hz, spread over the clocks", "%", 4.9, v20,
                            Tolerance(points=10), "ratio"))
    rates = sorted({p["rate"] for p in sensor})
    fastest = slowest = 0
    for r in rates:
        means = {c: mean_at(sensor, cpu=c, rate=r) for c in cpus}
        means = {c: m for c, m in means.items() if m is not None}
        if len(means) >= 2:
            fastest += min(means, key=means.get) == max(means)
            slowest += max(means, key=means.get) == min(means)
    n = len(rates)
    comps.append(Comparison("Exp 5: sensor, rates where the 100 % clock is fastest", "% of rates", 70,
                            100.0 * fastest / n if n and len(cpus) > 1 else None, Tolerance(points=30), "shape",
                            f"{fastest} of {n}" if n else ""))
    comps.append(Comparison("Exp 5: sensor, rates where the slowest clock is slowest", "% of rates", 90,
                            100.0 * slowest / n if n and len(cpus) > 1 else None, Tolerance(points=30), "shape",
                            f"{slowest} of {n}" if n else ""))
    checks.append(ShapeCheck("Exp 5: the clock matters much less for video than for sensor data",
                             f"spread 54 % (sensor, 400 Hz) vs 4.9 % (video, 20 Hz): sensor > 3 × video, "
                             f"and within ×{SENSOR_SPREAD_FACTOR:g} of 54 %",
                             f"{s400:.0f} % vs {v20:.1f} %" if s400 is not None and v20 is not None else "not measured",
                             None if s400 is None or v20 is None else
                             s400 > 3 * v20 and 54 / SENSOR_SPREAD_FACTOR <= s400 <= 54 * SENSOR_SPREAD_FACTOR))
    v20_mean = mean_at(video, cpu=1.0, rate=20.0)
    comps.append(Comparison("Exp 5: video 308 KB at 20 Hz, mean RTT (100 % clock)", "ms", 60, v20_mean,
                            Tolerance(factor=1.5), "absolute",
                            "the 100 Mbit/s port sets it, not the CPU"))
    falls, steady = [], []
    for c in cpus:
        lo, mid, hi = (mean_at(video, cpu=c, rate=r) for r in (20.0, 30.0, 40.0))
        if lo and hi:
            falls.append((c, hi / lo, hi))
        if lo and mid:
            steady.append(mid / lo < RTT_FACTOR)
    at40 = spread([h for _, _, h in falls])
    checks.append(ShapeCheck("Exp 5: video collapses above 30 Hz, at every clock, whatever the clock",
                             "about 60 ms at 20 Hz, about 4 s at 40 Hz (×67), no correlation with the clock",
                             "; ".join(f"{c:.0%}: ×{r:.1f} ({h:.0f} ms at 40 Hz)" for c, r, h in falls)
                             + (f"; spread at 40 Hz {at40:.0f} %" if at40 is not None else "") or "not measured",
                             None if not falls else all(r >= RTT_FACTOR for _, r, _ in falls) and all(steady)
                             and (at40 is None or at40 <= 100.0 * (VIDEO_CLOCK_FACTOR - 1)),
                             f"collapse: mean RTT at 40 Hz > {RTT_FACTOR:g} x at 20 Hz (the mean of a queue that "
                             f"grows for the whole run depends on the run's length); whatever the clock: the "
                             f"clocks' 40 Hz means within ×{VIDEO_CLOCK_FACTOR:g} of each other"))
    return comps, checks


def compare_links(pts: list, what: str, at_hz: float) -> tuple:
    """Wi-Fi against Ethernet (Exp 4, Exp 6; netloop only, the study's numbers are held back):
    per link the highest rate sustained, the echo rate at which the link saturates (its knee,
    with what a message cost there: frames, TCP segments, frames per transmission) and the
    mean round trip at ``at_hz``."""
    comps = []
    for link in sorted({p["link"] for p in pts}) or ["ethernet", "wifi_n_mcs7"]:
        series = rate_series(pts, link=link)
        k = knee(series) if series else None
        top = max((p["rate"] for p in series), default=None)
        comps.append(Comparison(f"{what} over {link}, highest rate sustained", "Hz", None,
                                sustained(series) if series else None, None, "absolute",
                                "" if not series else f"knee {_hz(k)}"))
        cost = cost_note(pts, link, k or top)
        comps.append(Comparison(f"{what} over {link}, echo rate at which it saturates", "Hz", None, k, None,
                                "absolute", "; ".join(n for n in (
                                    "" if not series else "the knee" if k else f"none up to {top:g} Hz, the top rate",
                                    cost) if n), never=bool(series) and k is None))
        comps.append(Comparison(f"{what} at {at_hz:g} Hz over {link}, mean RTT", "ms", None,
                                mean_at(pts, link=link, rate=at_hz), None, "absolute"))
    return comps, []


def compare_exp4(pts: list) -> tuple:
    return compare_links(pts, "Exp 4: 11 B", 1000.0)


def compare_exp6(pts: list) -> tuple:
    return compare_links(pts, "Exp 6: sensor 4.25 kB", 300.0)


def bound_by(messages: Optional[float], small_knee: Optional[float], small_top: Optional[float]) -> str:
    """Which limit bound the vertical sweep: the message rate when one small-message echo on the
    same link saturates near the same rate (within x2 of N·f at the knee), the byte volume when
    it went on well beyond it; "" when neither is known."""
    if messages is None:
        return ""
    if small_knee is not None:
        return ("the message rate: one 11-byte echo saturates the link at "
                f"{small_knee:g} Hz, within ×2 of it" if small_knee <= 2 * messages else
                f"the byte volume: one 11-byte echo goes on to {small_knee:g} Hz before it saturates")
    if small_top is not None and small_top > 2 * messages:
        return f"the byte volume: one 11-byte echo kept {small_top:g} Hz on the link without saturating"
    return ""


def compare_exp7(pts: list, small: Optional[list] = None) -> tuple:
    """Exp 7's volumes; ``small``: Exp 4's 11-byte echo points, whose saturation on the same
    link tells the message-rate limit from the byte-volume one."""
    comps, checks = [], []
    size_kb = (pts[0]["payload"] if pts else SENSOR_BYTES) / 1000.0
    value, per_rate = cslv(pts, size_kb)
    rates_at = {r: v / size_kb for r, v in per_rate.items()}   # N·f: messages a second at the knee
    link = pts[0].get("link") if pts else None
    small_series = rate_series(small or [], link=link) if link else []
    which = bound_by(min(rates_at.values()) if rates_at else None, knee(small_series) if small_series else None,
                     max((p["rate"] for p in small_series), default=None))
    for rate in sorted({p["rate"] for p in pts}) or [100.0, 200.0, 300.0]:
        series = by(pts, rate=rate)
        n = knee(series, key="n") if series else None
        top = max((p["n"] for p in series), default=None)
        comps.append(Comparison(f"Exp 7: largest N of echo pairs sustained at {rate:g} Hz", "pairs", None,
                                sustained(series, key="n") if series else None, None, "absolute",
                                "" if not series else f"first degraded N = {n}" if n else f"none degraded up to N = {top}"))
    comps.append(Comparison("Exp 7: CSLV = N·f·S at the first degraded point (smallest over the rates)", "kB/s",
                            None, value, None, "absolute",
                            "; ".join(n for n in (", ".join(f"{r:g} Hz: {v:.0f}" for r, v in per_rate.items())
                                                  or ("no rate degraded: the CSLV lies above every volume measured"
                                                      if pts else ""), f"bound by {which}" if which else "") if n)))
    comps.append(Comparison("Exp 7: message rate N·f at the first degraded point (smallest over the rates)", "msg/s",
                            None, min(rates_at.values()) if rates_at else None, None, "absolute",
                            "; ".join(n for n in (", ".join(f"{r:g} Hz: {v:.0f}" for r, v in rates_at.items()),
                                                  f"bound by {which}" if which else "") if n)))
    for rate in (1, 10, 20):
        comps.append(Comparison(f"Exp 7: largest N predicted by the CSLV at {rate} Hz", "pairs", None,
                                predicted_max_n(value, rate, size_kb), None, "absolute"))
    vals = list(per_rate.values())
    checks.append(ShapeCheck("Exp 7: the host's limit N·f·S is the same at every rate (the CSLV hypothesis)",
                             "one volume for 100, 200, 300 Hz",
                             ", ".join(f"{r:g} Hz: {v:.0f} kB/s" for r, v in per_rate.items()) or "no rate degraded",
                             None if len(vals) < 2 else max(vals) <= 2 * min(vals),
                             "within ×2 of each other"))
    return comps, checks


def compare(campaigns: dict) -> StudyResult:
    result = StudyResult("jordan", campaigns=dict(campaigns))
    read = {}
    for part in STUDY.parts:
        read[part.name], notes = points(campaigns.get(part.name))
        result.notes += notes
    for comps, checks in (compare_exp1(read["exp1"]), compare_exp3(read["exp3"]),
                          compare_exp4(read["exp4"]),
                          compare_exp5(read["exp5_sensor"], read["exp5_video"]),
                          compare_exp6(read["exp6"]), compare_exp7(read["exp7"], read["exp4"])):
        result.comparisons += comps
        result.checks += checks
    result.notes.append(f"degraded: sender kept < {KEPT_RATE:.0%} of the rate, < {ECHOED:.0%} echoed, or mean "
                        f"RTT > {RTT_FACTOR:g} x the series' lowest; knee: the lowest point from which all "
                        f"higher ones are degraded")
    return result


# --- quick variants -----------------------------------------------------------------------

def _quick(sweep: dict, transport=None):
    """A Part.quick that replaces sweep axes (and the transports) and validates again."""
    def apply(exp):
        from ..experiment import validate_experiment
        from ..schema import to_dict
        data = to_dict(exp)
        data["sweep"] = dict(data.get("sweep") or {}, **sweep)
        if transport:
            data["transport"] = transport
        return validate_experiment(data, name=exp.name)
    return apply


def _periods(*rates) -> list:
    return [1.0 / r for r in rates]


STUDY = Study(
    name="jordan",
    title="Jordan 2017",
    citation="S. Jordan, \"Evaluating the Scalability of ROS in Multi-Robot Systems\", 2017 (Experiments 1-7)",
    parts=[
        Part("exp1", "jordan_exp1_frequency.yaml", "Exp 1 (frequency, 11 B)",
             _quick({"flows[0].period": _periods(100, 1000, 5000, 10000, 20000, 50000)}, ["tcp_nodelay"])),
        Part("exp3", "jordan_exp3_cpu_clock.yaml", "Exp 3 (CPU clock, 11 B)",
             _quick({"flows[0].period": _periods(200, 1000, 2000)})),
        Part("exp4", "jordan_exp4_wifi_hello.yaml", "Exp 4 (Wi-Fi vs Ethernet, 11 B)",
             _quick({"flows[0].period": _periods(200, 1000, 2000, 5000, 10000)})),
        Part("exp5_sensor", "jordan_exp5_sensor.yaml", "Exp 5 (sensor 4.25 kB)",
             _quick({"flows[0].period": _periods(400, 2000), "hosts.robot.cpu": [1.0, 0.5]})),
        Part("exp5_video", "jordan_exp5_video.yaml", "Exp 5 (video 308 KB)",
             _quick({"flows[0].period": _periods(20, 40), "hosts.robot.cpu": [1.0, 0.5]})),
        Part("exp6", "jordan_exp6_wifi_sensor.yaml", "Exp 6 (Wi-Fi vs Ethernet)",
             _quick({"flows[0].period": _periods(300, 600)})),
        Part("exp7", "jordan_exp7_vertical.yaml", "Exp 7 (vertical, CSLV)",
             _quick({"flows[0].period": _periods(100, 300), "flows[0].replicas": [1, 4, 8]})),
    ],
    compare=compare,
    summary="Frequency, CPU clock, Wi-Fi, representative data and vertical scaling of a sender/echoer "
            "pair (Experiments 1, 3, 4, 5, 6, 7). The Raspberry Pi 3's absolute times are its hardware: "
            "compared by ratio and shape. Experiment 2 (rebooting between runs) has no counterpart: every "
            "netloop run starts its hosts' processes afresh. The CSLV and the Wi-Fi numbers are netloop's only.",
)
