"""Pound (Tardioli, Parasuraman, Ögren): the published numbers and shapes, and netloop's set
against them (``netloop reproduce pound``; ``netloop calibrate`` judges Tables I-II and Fig. 19
with the same functions).

Parts (each an experiment file of ``experiments/`` named after what it reproduces):

    tables        pound_tables_1_2.yaml    Tables I-II: laser 1 KB / 20 ms + image 64 KB / 150 ms, 2 nodes
    fig19         pound_fig19.yaml         Fig. 19: one saturated sender, 1 KB .. 256 KB
    fig21         pound_fig21.yaml         Fig. 21: the RLC loop beside 64 KB / 200 ms controller -> plant
    table5_2node  pound_table5_2node.yaml  Table V, 2 nodes: the sender's interface down for 5 s
    table5_3node  pound_table5_3node.yaml  Table V, 3 nodes: the relay's interface down for 5 s
    tables34      pound_tables_3_4.yaml    Tables III-IV (3-node chain): netloop's numbers only
    fig1          pound_fig1.yaml          Fig. 1: the period at the destination, wired and Wi-Fi
    fig3          pound_fig3.yaml          Fig. 3: Nagle, one 1 KB / 20 ms flow, TCP and TCP_NODELAY

Verdicts (stated once, here): D and std(J_d) within ×2 of the published value, or within ±3 ms
where it is below 6 ms; MDR within ±2 points; Table V's recovery times within ±0.5 s (the
emulated Wi-Fi's rejoin is not a real card's); the shapes as each check says.
"""
from __future__ import annotations

from pathlib import Path

from ..run_files import has_analysis
from .core import (Comparison, Part, ShapeCheck, Study, StudyResult, Tolerance, campaign_runs,
                   left_out_note, median)
from . import chain_trace
from . import pound_shapes as shapes

#: method -> (J_d, std J_d, D, std D, MDR %, BW Mbit/s), Table I (laser), 2 nodes
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
TABLE_NAME = {"laser": "Table I", "image": "Table II"}
#: Table V: method -> (2 nodes flow 1, flow 2, 3 nodes flow 1, flow 2), seconds until the flow resumes
PUBLISHED_RECOVERY = {
    "TCP": (1.73, 1.93, 2.19, 2.28), "NOD": (1.96, 1.96, 2.46, 2.32),
    "UDP": (1.29, 1.28, 1.47, 1.46), "UDP/NOD": (1.28, 1.92, 1.46, 2.32),
    "Nimbro": (1.31, 1.30, 1.46, 1.46), "Nimbro*": (1.32, 1.68, 1.64, 2.99),
    "Pound": (1.31, 1.30, 1.53, 1.52),
}
#: the paper's method -> netloop's transport (RT-WMP is a MAC protocol: not in netloop)
METHODS = {"TCP": "tcp", "NOD": "tcp_nodelay", "UDP": "udp", "UDP/NOD": "udp/tcp_nodelay",
           "Nimbro": "nimbro", "Nimbro*": "nimbro_mixed", "Pound": "priority"}
#: metric -> index in a PUBLISHED row
METRICS = {"D": 2, "std_Jd": 1, "MDR": 4}
METRIC_LABEL = {"D": "D", "std_Jd": "std(J_d)", "MDR": "MDR"}

MDR_TOLERANCE = Tolerance(points=2.0)
RECOVERY_TOLERANCE = Tolerance(absolute=0.5)
#: the ranking by laser D holds when Spearman's rho of the two orders is at least this
RANK_RHO = 0.5


def ms_tolerance(published: float) -> Tolerance:
    """D and std(J_d): within ±3 ms where the published value is below 6 ms, else within ×2."""
    return Tolerance(absolute=3.0) if published < 6.0 else Tolerance(factor=2.0)


def tolerance(metric: str, published: float) -> Tolerance:
    return MDR_TOLERANCE if metric == "MDR" else ms_tolerance(published)


# ---- reading a campaign's runs ------------------------------------------------------------

def flow_stats(runs: list) -> dict:
    """{transport: {flow: {"D", "std_Jd", "MDR", "std_D", "std_source"}}}, the median over
    ``runs`` (analysis.json records); ``std_source`` is the std of the source's own period."""
    per: dict = {}
    for run in runs:
        for f in run.flows:
            d = f.get("delay") or {}
            if not d.get("n"):
                continue
            slot = per.setdefault(run.transport, {}).setdefault(f["flow"], {
                "D": [], "std_Jd": [], "MDR": [], "std_D": [], "std_source": []})
            slot["D"].append(d.get("mean_ms"))
            slot["std_D"].append(d.get("std_ms"))
            slot["std_Jd"].append((f.get("period") or {}).get("std_ms"))
            slot["std_source"].append((f.get("source_period") or {}).get("std_ms"))
            slot["MDR"].append(100.0 * f["MDR"] if f.get("MDR") is not None else None)
    return {t: {flow: {k: median(v) for k, v in vals.items()} for flow, vals in flows.items()}
            for t, flows in per.items()}


def bandwidth_curves(runs: list) -> dict:
    """{transport: {size_bytes: delivered Mbit/s}} of a Fig. 19 campaign (median over the runs
    of each cell; a run that delivered nothing counts as 0)."""
    per: dict = {}
    for run in runs:
        for f in run.flows:
            if f.get("size_bytes") is None:
                continue
            bw = median([f.get("bandwidth_mbit")])
            per.setdefault(run.transport, {}).setdefault(int(f["size_bytes"]), []).append(bw or 0.0)
    return {t: {size: median(v) for size, v in sorted(sizes.items())} for t, sizes in per.items()}


# ---- Tables I-II ---------------------------------------------------------------------------

def source_jitter_floor(std_jd: float, std_d: float) -> float:
    """The least std of the source's own period that a std(J_d) and a std(D) measured together
    imply, ms. The destination's period is J_d = P + D_k - D_(k-1) (P: the source's period),
    so std(J_d) <= std(P) + 2 std(D) whatever the delays' correlation: a std(J_d) above
    2 std(D) needs a source that jittered by the excess at least. 0 when none is implied."""
    return max(0.0, std_jd - 2.0 * std_d)


def source_bound_note(comparison: Comparison, published_std_d: float, ours_source: float | None) -> str:
    """For a std(J_d) that misses below the published value: the share the paper's source must
    have had (:func:`source_jitter_floor`) when netloop's source jittered less; else ''."""
    floor = source_jitter_floor(comparison.published, published_std_d)
    if (comparison.verdict == "miss" and ours_source is not None and floor > ours_source
            and (comparison.ours or 0.0) < comparison.published):
        return f"≥ {floor:.1f} ms of it the paper's source's"
    return ""


def table_comparisons(ours: dict, published: dict = PUBLISHED, names: dict = TABLE_NAME) -> list:
    """One Comparison per flow x method x metric (D, std(J_d), MDR) of Tables I-II."""
    out = []
    for flow, table in published.items():
        for method, pub in table.items():
            got = ours.get(METHODS[method], {}).get(flow, {})
            for metric, idx in METRICS.items():
                c = Comparison(f"{names[flow]} {flow} {METRIC_LABEL[metric]}, {method} ({METHODS[method]})",
                               "%" if metric == "MDR" else "ms", pub[idx], got.get(metric),
                               tolerance(metric, pub[idx]))
                if metric == "std_Jd":
                    c.note = source_bound_note(c, pub[3], got.get("std_source"))
                out.append(c)
    return out


def _ranks(values: list) -> list:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    for r, i in enumerate(order):
        ranks[i] = float(r)
    return ranks


def ranking(ours: dict) -> dict | None:
    """The paper's methods ordered by laser D, published and netloop's, and Spearman's rho
    (None with fewer than 3 methods measured)."""
    have = [m for m in PUBLISHED_LASER if ours.get(METHODS[m], {}).get("laser", {}).get("D") is not None]
    if len(have) < 3:
        return None
    pub = _ranks([PUBLISHED_LASER[m][2] for m in have])
    net = _ranks([ours[METHODS[m]]["laser"]["D"] for m in have])
    n = len(have)
    rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(pub, net)) / (n * (n * n - 1))
    return {"methods": have, "spearman_rho": rho,
            "published_order": sorted(have, key=lambda m: PUBLISHED_LASER[m][2]),
            "netloop_order": sorted(have, key=lambda m: ours[METHODS[m]]["laser"]["D"])}


def ranking_check(ours: dict) -> ShapeCheck:
    rk = ranking(ours)
    expected = "laser D: " + " < ".join(sorted(PUBLISHED_LASER, key=lambda m: PUBLISHED_LASER[m][2]))
    if rk is None:
        return ShapeCheck("Table I: the methods ranked by laser D", expected, "", None)
    return ShapeCheck("Table I: the methods ranked by laser D", expected,
                      f"{' < '.join(rk['netloop_order'])} (Spearman ρ {rk['spearman_rho']:.2f})",
                      rk["spearman_rho"] >= RANK_RHO, f"holds when ρ ≥ {RANK_RHO:g}")


def low_delay_check(ours: dict) -> ShapeCheck:
    """The paper: NOD, UDP/NOD and Pound keep the laser delay below 10 ms (TCP, UDP, Nimbro do not)."""
    low = ["NOD", "UDP/NOD", "Pound"]
    got = {m: ours.get(METHODS[m], {}).get("laser", {}).get("D") for m in low}
    if any(v is None for v in got.values()):
        return ShapeCheck("Table I: laser D below 10 ms", "NOD, UDP/NOD, Pound < 10 ms", "", None)
    return ShapeCheck("Table I: laser D below 10 ms", "NOD, UDP/NOD, Pound < 10 ms",
                      ", ".join(f"{m} {v:.1f}" for m, v in got.items()), all(v < 10.0 for v in got.values()))


def only_rows(ours: dict, flows: tuple, label: str, metrics=("D", "std_Jd", "MDR")) -> list:
    """netloop-only Comparisons (no published column) for ``ours``' transports and ``flows``."""
    out = []
    for transport in sorted(ours):
        for flow in flows:
            got = ours[transport].get(flow)
            if got is None:
                continue
            for metric in metrics:
                out.append(Comparison(f"{label} {flow} {METRIC_LABEL[metric]}, {transport}",
                                      "%" if metric == "MDR" else "ms", None, got.get(metric)))
    return out


def compare_tables(runs: list) -> tuple:
    ours = flow_stats(runs)
    extra = {t: v for t, v in ours.items() if t not in METHODS.values()}
    comps = table_comparisons(ours) + only_rows(extra, ("laser", "image"), "Tables I-II", ("D",))
    return comps, [ranking_check(ours), low_delay_check(ours)]


# ---- Fig. 19 -------------------------------------------------------------------------------

#: transport -> (the paper's curve it is judged against, shape, level [Mbit/s]) for Fig. 19.
#: multimaster is not in the figure; it carries topics over TCPROS, so it is held to TCP's curve.
FIG19_SHAPE = {
    "tcp": ("TCP", "flat", 4.0), "tcp_nodelay": ("NOD", "flat", 4.0),
    "udp": ("UDP", "collapses", None), "nimbro": ("Nimbro/UDP", "above", 5.0),
    "nimbro_mixed": ("Nimbro/TCP", "flat", 4.0), "priority": ("Pound", "above", 5.0),
    "multimaster": ("(TCP's)", "flat", 4.0),
}
FLAT_BAND = 0.25          # a flat curve stays within +-25 % of its level
FLAT_RATIO = 1.25         # ... and its largest rate is at most 1.25x its smallest
COLLAPSE_FRACTION = 0.2   # a collapsed curve delivers at most 20 % of its 1 KB rate at >= 64 KB
COLLAPSE_FROM_BYTES = 65536
#: a curve "above" a level stays below the air's rate (802.11a at 6 Mbit/s: no transport
#: delivers more than the PHY sends)
AIR_MBIT = 6.0


def fig19_verdict(transport: str, curve: dict) -> str:
    """"ok" when the curve has the shape the paper shows for the transport, else "off: why";
    "missing" without a curve, "not in Fig. 19" for a transport the paper has no curve for."""
    if transport not in FIG19_SHAPE:
        return "not in Fig. 19"
    if not curve:
        return "missing"
    _, shape, level = FIG19_SHAPE[transport]
    rates = list(curve.values())
    lo, hi = min(rates), max(rates)
    if shape == "collapses":
        first = curve[min(curve)]
        large = [r for size, r in curve.items() if size >= COLLAPSE_FROM_BYTES]
        if not large:
            return "missing"
        worst = max(large)
        return ("ok" if first > 0 and worst <= COLLAPSE_FRACTION * first else
                f"off: no collapse ({worst:.2f} of {first:.2f} Mbit/s kept at >= 64 KB)")
    problems = []
    if lo <= 0 or hi / lo > FLAT_RATIO:
        problems.append(f"not flat ({lo:.2f}..{hi:.2f})")
    if shape == "flat" and not all(abs(r - level) <= FLAT_BAND * level for r in rates):
        problems.append(f"not near {level:g}")
    if shape == "above" and lo < level:
        problems.append(f"below {level:g} ({lo:.2f})")
    if shape == "above" and hi > AIR_MBIT:
        problems.append(f"above the air's {AIR_MBIT:g} ({hi:.2f})")
    return "ok" if not problems else "off: " + ", ".join(problems)


def published_shape(transport: str) -> str:
    if transport not in FIG19_SHAPE:
        return "—"
    name, shape, level = FIG19_SHAPE[transport]
    if shape == "collapses":
        return f"{name}: collapses with size"
    return f"{name}: flat ≈ {level:g}" if shape == "flat" else f"{name}: flat > {level:g} (≤ {AIR_MBIT:g})"


def _size(nbytes: int) -> str:
    return f"{nbytes // 1024} KB" if nbytes % 1024 == 0 else f"{nbytes} B"


def fig19_checks(curves: dict) -> list:
    """One ShapeCheck per transport of Fig. 19 (delivered Mbit/s against the message size)."""
    out = []
    for transport in FIG19_SHAPE:
        curve = curves.get(transport) or {}
        v = fig19_verdict(transport, curve)
        observed = ", ".join(f"{_size(s)} {r:.2f}" for s, r in curve.items())
        out.append(ShapeCheck(f"Fig. 19 {transport}", published_shape(transport) + " Mbit/s"
                              if FIG19_SHAPE[transport][1] != "collapses" else published_shape(transport),
                              observed, None if v == "missing" else v == "ok",
                              v[5:] if v.startswith("off: ") else ""))
    return out


# ---- the study -------------------------------------------------------------------------

def _quick_fig19(exp):
    """--quick keeps 1, 16, 64 and 256 KB: the flat levels and UDPROS's collapse at >= 64 KB."""
    keep = {1024, 16384, 65536, 262144}
    zipped = exp.sweep.get("zip") or {}
    sizes, periods = zipped.get("flows[0].size_bytes"), zipped.get("flows[0].period")
    if sizes and periods:
        pairs = [(s, p) for s, p in zip(sizes, periods) if s in keep]
        zipped["flows[0].size_bytes"], zipped["flows[0].period"] = [s for s, _ in pairs], [p for _, p in pairs]
    return exp


def _quick_fig21(exp):
    """--quick keeps the full file's loop (5 s after 2 s of the perturbing flow): one repetition
    of a 2 s loop is too short to tell the transports' deviations apart."""
    return shapes.keep_loop(exp, "pound_fig21.yaml")


def _quick_period(exp):
    """Figs. 1 and 3 under --quick: 500 messages (10 s) a run, enough for a period's spread."""
    return shapes.keep_messages(exp, 500)


def _quick_table5(original: str):
    """--quick keeps Table V's one 5 s interface-down outage and enough messages around it."""
    return lambda exp: shapes.keep_outage(exp, original)


PARTS = [
    Part("tables", "pound_tables_1_2.yaml", "Tables I-II"),
    Part("fig19", "pound_fig19.yaml", "Fig. 19", quick=_quick_fig19),
    Part("fig21", "pound_fig21.yaml", "Fig. 21", quick=_quick_fig21),
    Part("table5_2node", "pound_table5_2node.yaml", "Table V (2 nodes)",
         quick=_quick_table5("pound_table5_2node.yaml")),
    Part("table5_3node", "pound_table5_3node.yaml", "Table V (3 nodes)",
         quick=_quick_table5("pound_table5_3node.yaml")),
    Part("tables34", "pound_tables_3_4.yaml", "Tables III-IV (netloop only)"),
    Part("fig1", "pound_fig1.yaml", "Fig. 1", quick=_quick_period),
    Part("fig3", "pound_fig3.yaml", "Fig. 3", quick=_quick_period),
]


def _runs(campaigns: dict, part: str, notes: list) -> list | None:
    """The valid runs of a part's campaign (None when the part has none); a note for runs
    left out because the link lagged."""
    if part not in campaigns or not has_analysis(campaigns[part]):
        return None
    runs, counts = campaign_runs(campaigns[part])
    note = left_out_note(part, counts)
    if note:
        notes.append(note)
    return runs


def compare(campaigns: dict) -> StudyResult:
    """Every part's numbers and shapes against the paper; a part without a campaign gives
    'not measured' rows."""
    notes: list = []
    result = StudyResult("pound", campaigns={k: Path(v) for k, v in campaigns.items()}, notes=notes)
    tables = _runs(campaigns, "tables", notes)
    comps, checks = compare_tables(tables or [])
    result.comparisons += comps
    result.checks += checks
    result.checks += fig19_checks(bandwidth_curves(_runs(campaigns, "fig19", notes) or []))
    fig21 = _runs(campaigns, "fig21", notes)
    result.comparisons += shapes.fig21_rows(fig21 or [])
    result.checks += shapes.fig21_checks(fig21 or [], METHODS)
    t5 = {2: _runs(campaigns, "table5_2node", notes) or [], 3: _runs(campaigns, "table5_3node", notes) or []}
    rec = {n: shapes.recoveries(runs) for n, runs in t5.items()}
    never = {n: shapes.unresumed(runs) for n, runs in t5.items()}
    t5_rows = shapes.table5_rows(rec, PUBLISHED_RECOVERY, METHODS, RECOVERY_TOLERANCE, never)
    if t5[3]:   # the 3-node chain's mechanism beside each of its rows
        chain_trace.annotate(t5_rows, "Table V 3 nodes", chain_trace.traces(campaigns["table5_3node"], t5[3]))
    result.comparisons += t5_rows
    result.checks += shapes.table5_checks(rec, PUBLISHED_RECOVERY, METHODS)
    chain = _runs(campaigns, "tables34", notes)
    rows34 = only_rows(flow_stats(chain or []), ("laser", "image"), "Tables III-IV (3 nodes)")
    if chain:   # each transport's numbers with the emulator's and the hosts' counters behind them
        trace = chain_trace.traces(campaigns["tables34"], chain)
        chain_trace.annotate(rows34, "Tables III-IV", trace, only=" D, ")
        rows34 += chain_trace.rows("Tables III-IV (3 nodes)", trace)
    result.comparisons += rows34
    result.checks.append(shapes.fig1_check(_runs(campaigns, "fig1", notes)))
    result.checks.append(shapes.fig3_check(_runs(campaigns, "fig3", notes)))
    if any(c.note for c in result.comparisons if "std(J_d)" in c.item):
        notes.append("std(J_d) and the source: J_d = the source's period + the change of D, so "
                     "std(J_d) ≤ std(source) + 2 std(D); where a published std(J_d) needs more source "
                     "jitter than netloop's source had, the row says how much (docs/calibration.md)")
    return result


STUDY = Study(
    name="pound",
    title="Pound (Tardioli, Parasuraman, Ögren)",
    citation="D. Tardioli, R. Parasuraman, P. Ögren, \"Pound: A ROS node for Reducing Delay and Jitter "
             "in Wireless Multi-Robot Networks\"",
    parts=PARTS,
    compare=compare,
    summary="The two-flow Tables I-II, the bandwidth of Fig. 19, the RLC loop of Fig. 21 and the "
            "interface-down recovery of Table V on ns-3's 802.11a at 6 Mbit/s; Tables III-IV and "
            "Figs. 1 and 3 as netloop's numbers and shapes. RT-WMP (a MAC protocol) is not in netloop.",
)
