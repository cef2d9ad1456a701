"""The Pound study's parts beyond Tables I-II and Fig. 19: Fig. 21 (the RLC loop beside a
64 KB flow), Table V (recovery after the interface went down, 2 and 3 nodes), Figs. 1 and 3
(the period at the destination: wired against Wi-Fi; Nagle). The published numbers live in
:mod:`netloop.studies.pound` and are passed in; this module reads analysis.json records and
judges them.

Fig. 21: "close to the local response" = a median IAE of (y − the local loop's y) at most
CLOSE_FACTOR × the lowest median among the paper's methods. Table V: per flow, the first
outage's ``recovery_ms`` (analysis/outages.py: from the interface's return to the flow's first
message after it); the UDP-TCP gap and the 2-to-3-node step are held to the published ones
within ×2 (their sign must agree).
"""
from __future__ import annotations

import math
import statistics

from ..run_files import AnalysisEntry
from .core import Comparison, ShapeCheck, Tolerance, median

CLOSE_FACTOR = 2.0
GAP_TOLERANCE = Tolerance(factor=2.0)
#: the paper's methods whose flows all go over UDP, and over TCP (Table V's groups)
UDP_METHODS = ("UDP", "Nimbro", "Pound")
TCP_METHODS = ("TCP", "NOD")
#: Fig. 3: TCP's period at the destination spreads at least this much more than TCP_NODELAY's
NAGLE_FACTOR = 2.0
#: Fig. 1: the Wi-Fi period spreads at least this much more than the wired one
WIFI_FACTOR = 2.0
#: Figs. 1 and 3: the flows' period [ms]; its spread at the destination stays below it (a message
#: Nagle holds waits for the next or for the delayed ACK, so it arrives at 0, P or 2P: std <= P;
#: over Wi-Fi a spread beyond P would mean messages delayed by more than a period, not jitter)
FLOW_PERIOD_MS = 20.0


# ---- Fig. 21 -----------------------------------------------------------------------------

def loop_deviation(runs: list) -> dict:
    """{transport: median IAE of (y − local y) over its runs, mV·s}."""
    per: dict = {}
    for run in runs:
        iae = (run.get("deviation") or {}).get("IAE")
        if iae is not None:
            per.setdefault(run.transport, []).append(1e3 * iae)
    return {t: median(v) for t, v in sorted(per.items())}


def fig21_rows(runs: list) -> list:
    return [Comparison(f"Fig. 21 IAE(y − local), {t}", "mV·s", None, v)
            for t, v in loop_deviation(runs).items()]


def fig21_checks(runs: list, methods: dict) -> list:
    """Only Pound (priority) close to the local response; Pound the closest."""
    dev = {m: v for m, v in ((m, loop_deviation(runs).get(t)) for m, t in methods.items()) if v is not None}
    expected = "only Pound (and RT-WMP) close to the local response"
    if "Pound" not in dev or len(dev) < 2:
        return [ShapeCheck("Fig. 21: only Pound stays close to local", expected, "", None),
                ShapeCheck("Fig. 21: Pound the closest to local", "Pound", "", None)]
    limit = CLOSE_FACTOR * min(dev.values())
    close = sorted((m for m, v in dev.items() if v <= limit), key=dev.get)
    observed = (f"close (≤ {limit:.1f} mV·s): {', '.join(close)}; "
                + ", ".join(f"{m} {v:.1f}" for m, v in sorted(dev.items(), key=lambda kv: kv[1])))
    best = min(dev, key=dev.get)
    return [ShapeCheck("Fig. 21: only Pound stays close to local", expected, observed, close == ["Pound"],
                       f"close: within ×{CLOSE_FACTOR:g} of the lowest IAE"),
            ShapeCheck("Fig. 21: Pound the closest to local", "Pound", f"{best} ({dev[best]:.1f} mV·s)",
                       best == "Pound")]


# ---- Table V -----------------------------------------------------------------------------

def flow_recovery_s(flow: dict) -> float | None:
    """Seconds from the first outage's end to the flow's first message after it; math.inf when
    no message came after it (the flow never recovered); None: the flow had no outage."""
    for outage in flow.get("outages") or []:
        if outage.get("loss") is None:
            ms = outage.get("recovery_ms")
            return math.inf if ms is None else ms / 1e3
    return None


def _recovery_median(values: list) -> float | None:
    """The median over the runs, a run in which the flow never recovered counting as infinitely
    slow (so most runs without a recovery make it math.inf); None without an outage."""
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def recoveries(runs: list) -> dict:
    """{transport: [flow 1 s, flow 2 s, ...]} (flows in the run's order), the median over the
    runs: math.inf when the flow did not recover in most of them."""
    per: dict = {}
    for run in runs:
        for i, flow in enumerate(run.flows):
            slots = per.setdefault(run.transport, [])
            while len(slots) <= i:
                slots.append([])
            slots[i].append(flow_recovery_s(flow))
    return {t: [_recovery_median(v) for v in slots] for t, slots in per.items()}


def unresumed(runs: list) -> dict:
    """{transport: [(runs in which the flow never resumed after the outage, runs), per flow]}."""
    per: dict = {}
    for run in runs:
        for i, flow in enumerate(run.flows):
            slots = per.setdefault(run.transport, [])
            while len(slots) <= i:
                slots.append([0, 0])
            got = flow_recovery_s(flow)
            if got is not None:
                slots[i][1] += 1
                slots[i][0] += got == math.inf
    return {t: [tuple(s) for s in slots] for t, slots in per.items()}


def _get(rec: dict, transport: str, flow: int) -> float | None:
    """A flow's recovery [s]; None when it had none, or never recovered (math.inf)."""
    values = rec.get(transport) or []
    value = values[flow] if flow < len(values) else None
    return None if value is None or math.isinf(value) else value


def table5_rows(rec: dict, published: dict, methods: dict, tol: Tolerance, never: dict | None = None) -> list:
    """One Comparison per chain (2, 3 nodes) x method x flow, seconds. A flow that did not
    recover in most runs is a miss (``never``), not "not measured"; ``never`` ({nodes:
    :func:`unresumed`}) notes the runs in which a flow did not resume at all."""
    out = []
    for nodes, col in ((2, 0), (3, 2)):
        for method, pub in published.items():
            for flow in (0, 1):
                values = rec[nodes].get(methods[method]) or []
                value = values[flow] if flow < len(values) else None
                c = Comparison(f"Table V {nodes} nodes flow {flow + 1}, {method} ({methods[method]})",
                               "s", pub[col + flow], _get(rec[nodes], methods[method], flow), tol,
                               never=value is not None and math.isinf(value))
                counts = ((never or {}).get(nodes) or {}).get(methods[method]) or []
                if flow < len(counts) and counts[flow][0]:
                    c.note = (f"did not resume in {counts[flow][0]} of {counts[flow][1]} runs: "
                              "no message arrived after the outage")
                out.append(c)
    return out


def _group(values: dict, names) -> float | None:
    """The median over the methods' flows, a flow that never recovered counting as math.inf."""
    return _recovery_median([v for m in names for v in values.get(m, [])])


def _gap_check(item: str, expected: str, pub: float | None, ours: float | None, unit_note: str) -> ShapeCheck:
    if pub is None or ours is None:
        return ShapeCheck(item, expected, "", None)
    if not math.isfinite(ours):   # one side never recovered: no gap of the published size
        return ShapeCheck(item, f"{expected} (published {pub:.2f} s)",
                          "a group of methods never recovered in most runs", False, unit_note)
    return ShapeCheck(item, f"{expected} (published {pub:.2f} s)", f"{ours:.2f} s",
                      ours > 0 and GAP_TOLERANCE.holds(pub, ours), unit_note)


def table5_checks(rec: dict, published: dict, methods: dict) -> list:
    """UDP-based methods ~0.5 s faster than TCP (each chain); the 3-node chain ~0.3 s slower."""
    out = []
    for nodes, col in ((2, 0), (3, 2)):
        pub = {m: list(published[m][col:col + 2]) for m in published}
        ours = {m: [v for v in rec[nodes].get(methods[m]) or [] if v is not None] for m in published}
        # a flow that never recovered counts as infinitely slow: its group cannot show the gap
        have = lambda names: [m for m in names if ours[m]]   # noqa: E731
        gap_pub = _group(pub, TCP_METHODS) - _group(pub, UDP_METHODS)
        gap = None
        if have(TCP_METHODS) and have(UDP_METHODS):
            gap = _group(ours, have(TCP_METHODS)) - _group(ours, have(UDP_METHODS))
        out.append(_gap_check(f"Table V {nodes} nodes: UDP-based recover faster than TCP",
                              "TCP, NOD minus UDP, Nimbro, Pound (median)", gap_pub, gap,
                              "within ×2 of the published gap"))
    steps_pub, steps = [], []
    for method, pub in published.items():
        for flow in (0, 1):
            a, b = _get(rec[2], methods[method], flow), _get(rec[3], methods[method], flow)
            if a is not None and b is not None:
                steps.append(b - a)
                steps_pub.append(pub[2 + flow] - pub[flow])
    out.append(_gap_check("Table V: 3 nodes slower than 2", "3 nodes minus 2 nodes, median over methods and flows",
                          median(steps_pub), median(steps), "within ×2 of the published step"))
    return out


# ---- Figs. 1 and 3 -----------------------------------------------------------------------

def _period_std(runs: list, key, period: str = "period") -> dict:
    """{key(run): median std of the first flow's period at the destination (``period``) or at
    its source (``source_period``), ms}."""
    per: dict = {}
    for run in runs:
        flows = run.flows
        std = ((flows[0].get(period) or {}).get("std_ms")) if flows else None
        if std is not None:
            per.setdefault(key(run), []).append(std)
    return {k: median(v) for k, v in per.items()}


def _sources(runs: list, key, names: dict) -> str:
    """'; the sources' own period std: a x ms, b y ms' (a busy host shows there first)."""
    src = _period_std(runs, key, "source_period")
    got = [f"{label} {src[k]:.2f} ms" for k, label in names.items() if src.get(k) is not None]
    return f"; the source's own period std: {', '.join(got)}" if got else ""


def _link(run: AnalysisEntry) -> str | None:
    return run.settings.get("link") or run.get("link")


def fig1_check(runs: list | None) -> ShapeCheck:
    item, expected = "Fig. 1: the period at the destination, wired against Wi-Fi", \
        f"spreads over Wi-Fi, not on a wire (std(J_d) Wi-Fi ≥ ×{WIFI_FACTOR:g} wired, and ≤ the period, " \
        f"{FLOW_PERIOD_MS:g} ms)"
    std = _period_std(runs or [], _link)
    wired, wifi = std.get("ethernet"), next((v for k, v in std.items() if k and k.startswith("wifi")), None)
    if wired is None or wifi is None:
        return ShapeCheck(item, expected, "", None)
    wifi_key = next(k for k in std if k and k.startswith("wifi"))
    return ShapeCheck(item, expected, f"std(J_d) ethernet {wired:.2f} ms, Wi-Fi {wifi:.2f} ms"
                      + _sources(runs, _link, {"ethernet": "ethernet", wifi_key: "Wi-Fi"}),
                      WIFI_FACTOR * wired <= wifi <= FLOW_PERIOD_MS)


def fig3_check(runs: list | None) -> ShapeCheck:
    item = "Fig. 3: Nagle, one 1 KB / 20 ms flow"
    expected = (f"TCP's period at the destination at the period and twice it; TCP_NODELAY's at the "
                f"period (std(J_d) TCP ≥ ×{NAGLE_FACTOR:g} TCP_NODELAY, and ≤ the period, "
                f"{FLOW_PERIOD_MS:g} ms)")
    std = _period_std(runs or [], lambda r: r.transport)
    tcp, nod = std.get("tcp"), std.get("tcp_nodelay")
    if tcp is None or nod is None:
        return ShapeCheck(item, expected, "", None)
    return ShapeCheck(item, expected, f"std(J_d) tcp {tcp:.2f} ms, tcp_nodelay {nod:.2f} ms"
                      + _sources(runs, lambda r: r.transport, {"tcp": "tcp", "tcp_nodelay": "tcp_nodelay"}),
                      NAGLE_FACTOR * nod <= tcp <= FLOW_PERIOD_MS)


# ---- --quick -----------------------------------------------------------------------------

def keep_loop(exp, original: str):
    """--quick with the original file's loop length (samples, warmup) kept."""
    from .. import paths
    from ..experiment import load_experiment, validate_experiment
    from ..schema import to_dict
    full = load_experiment(str(paths.EXPERIMENTS / original))
    exp.loop.samples, exp.loop.warmup = full.loop.samples, full.loop.warmup
    return validate_experiment(to_dict(exp), name=exp.name)


def keep_messages(exp, count: int):
    """--quick with every counted flow sending ``count`` messages at least."""
    from ..experiment import validate_experiment
    from ..schema import to_dict
    for flow in exp.flows:
        if flow.count:
            flow.count = max(flow.count, count)
    return validate_experiment(to_dict(exp), name=exp.name)


def keep_outage(exp, original: str):
    """Table V's --quick: the outage of the original file (5 s, its kind and hosts) instead of
    quick_variant's 1 s one, from 2 s at the latest, and every counted flow long enough to run
    4 s past it."""
    from .. import paths
    from ..experiment import load_experiment, validate_experiment
    from ..schema import to_dict
    full = load_experiment(str(paths.EXPERIMENTS / original))
    exp.faults = list(full.faults[:1])
    if exp.faults:
        exp.faults[0].at = min(exp.faults[0].at, 2.0)
        end = exp.faults[0].at + exp.faults[0].duration + 4.0
        for flow in exp.flows:
            if flow.count:
                flow.count = max(flow.count, int(end / flow.period) + 1)
    return validate_experiment(to_dict(exp), name=exp.name)
