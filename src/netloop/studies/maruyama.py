"""Maruyama, Kato, Azumi 2016, "Exploring the Performance of ROS2" (EMSOFT'16): one-way latency
of 256 B - 4 MB messages at 10 Hz, ROS 1 (TCPROS) and ROS 2 over DDS, on one computer (1-b, 2-b)
and across two over 100 Mbit/s Ethernet (1-a, 2-a); five subscribers (Figs 17-19); the initial
loss of Table 4; the ros_bridge (3-b).

The paper's latencies are in figures only (2016 Core i5 machines, Connext / OpenSplice /
FastRTPS 1.x): netloop checks their shapes (constant up to 4 KB, the remote jump from 16 KB,
the remote - local gap as the transfer time, subscriber 5 about twice subscriber 1 in ROS 1,
DDS fair, the link as the limit of large remote messages, ROS 1's initial loss), compares the
two numbers the text gives (the 2x of Fig 17 and the 12.5 MB/s link), and prints its own
latencies with the published column empty. netloop's ROS 2 rows are Cyclone DDS, Fast DDS and
(full files) Zenoh, "reliable" = reliable + transient_local.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from .core import Comparison, Part, ShapeCheck, Study, StudyResult, Tolerance
from .flow_points import med, ratio, read_points, select, size_label, sizes

ROS1 = "tcp_nodelay"
ROS2 = ("cyclonedds", "fastdds", "zenoh", "rmw_fastrtps_cpp")
NAMES = {ROS1: "ROS 1", "cyclonedds": "Cyclone DDS", "fastdds": "Fast DDS", "zenoh": "Zenoh",
         "rmw_fastrtps_cpp": "real ROS 2 (rmw_fastrtps_cpp)"}
KB, MB = 1 << 10, 1 << 20
LINK_MBIT = 100.0                   # the paper's 100 Mbit/s full-duplex Ethernet (12.5 MB/s)
DEADLINE_MS = 100.0                 # Table 3's DEADLINE (one period at 10 Hz)
QUICK_TRANSPORTS = [ROS1, "cyclonedds", "fastdds"]
QUICK_SIZES = [256, 4 * KB, 16 * KB, 64 * KB, MB, 4 * MB]
RELIABLE = {"reliability": "reliable", "durability": "transient_local"}
BASIS_NOTE = ("The paper's latencies are 2016 Core i5 machines' and appear in figures only: netloop "
              "judges their shapes, compares the two numbers its text gives (Fig 17's 2x, the 12.5 MB/s "
              "link), and prints its own medians with the published column empty.")


def _reshape(exp, transports=None, sweep=None, qos=None):
    from ..experiment import validate_experiment   # noqa: PLC0415 - the study module loads without the run
    from ..schema import to_dict                   # noqa: PLC0415
    data = to_dict(exp)
    if transports:
        data["transport"] = transports
    if sweep is not None:
        data["sweep"] = sweep
    if qos is not None:
        data["flows"][0]["qos"] = {**(data["flows"][0].get("qos") or {}), **qos}
    return validate_experiment(data, name=exp.name)


def _quick_sizes(exp):
    """6 sizes around the shapes (256 B and 4 KB flat, 16 KB the remote jump, 64 KB, 1 MB, 4 MB
    beyond the link), "reliable" only, ROS 1 and the two DDS."""
    return _reshape(exp, QUICK_TRANSPORTS, {"flows[0].size_bytes": QUICK_SIZES}, RELIABLE)


def _quick_subscribers(exp):
    return _reshape(exp, QUICK_TRANSPORTS, {"flows[0].size_bytes": [MB]})


def _quick_initial_loss(exp):
    return _reshape(exp, QUICK_TRANSPORTS, {"flows[0].size_bytes": [256, MB]}, {"durability": "transient_local"})


def _quick_bridge(exp):
    return _reshape(exp, [ROS1, "cyclonedds"], {"flows[0].size_bytes": [256, 64 * KB, MB]})


def _p50(pts, transport, size, **kw) -> Optional[float]:
    """The median one-way latency of ``transport`` at ``size``: ROS 2 "reliable" only."""
    qos = {} if transport == ROS1 else {"reliability": "reliable"}
    return med(select(pts, transport=transport, size=size, **qos, **kw), "p50_ms")


def _transports(pts) -> list:
    found = {p.transport for p in pts}
    return [t for t in (ROS1,) + ROS2 if t in found]


#: Figs 9-10: a bridge "well above" direct ROS 1, but not by more than this factor (more is a
#: bridge that queues, not one that converts)
BRIDGE_CEILING = 20.0


def _fmt(v, unit="ms"):
    return "not measured" if v is None else f"{v:.3g} {unit}"


def _flat_checks(part: str, pts: list) -> list:
    out = []
    for t in _transports(pts) or [ROS1]:
        a, b = _p50(pts, t, 256), _p50(pts, t, 4 * KB)
        holds = None if a is None or b is None else (a / 1.5 <= b <= 1.5 * a or abs(b - a) <= 0.3)
        out.append(ShapeCheck(f"Figs 7-8 {part} {NAMES[t]}: latency constant up to 4 KB",
                              "the same latency from 256 B to 4 KB", f"{_fmt(a)} at 256 B, {_fmt(b)} at 4 KB", holds))
    return out


def _remote_checks(local: list, remote: list) -> list:
    out = []
    for t in _transports(remote) or [ROS1]:
        r4, r16, l4, l16 = (_p50(remote, t, 4 * KB), _p50(remote, t, 16 * KB), _p50(local, t, 4 * KB),
                            _p50(local, t, 16 * KB))
        rr, lr = ratio(r16, r4), ratio(l16, l4)
        # sharply, but not beyond the message's size (x4) with half of it again
        holds = None if rr is None else 1.5 <= rr <= 6.0 and (lr is None or rr > lr)
        out.append(ShapeCheck(f"Figs 7-8 remote {NAMES[t]}: latency grows sharply from 16 KB",
                              "remote 16 KB well above 4 KB (15 KB packets), local not: ×1.5-6",
                              f"remote 16 KB / 4 KB = {_fmt(rr, '×')}, local {_fmt(lr, '×')}", holds))
    gaps, holds = [], None
    for size in (64 * KB, MB):
        r, loc = _p50(remote, ROS1, size), _p50(local, ROS1, size)
        wire = size * 8 / (LINK_MBIT * 1e3)
        if r is None or loc is None:
            continue
        ok = (r - loc) / wire
        gaps.append(f"{size_label(size)}: {r - loc:.3g} ms vs {wire:.3g} ms")
        holds = (holds is not False) and 1 / 1.5 <= ok <= 1.5
    out.append(ShapeCheck("Figs 7-8 ROS 1: remote - local latency is the transfer time at 100 Mbit/s",
                          "the gap matches an ftp/http transfer of the message", "; ".join(gaps) or "not measured",
                          holds))
    r1_remote, r1_local = _p50(remote, ROS1, MB), _p50(local, ROS1, MB)
    for t in [t for t in _transports(remote) if t != ROS1]:
        r2 = _p50(remote, t, MB)
        if None in (r1_remote, r1_local, r2):
            holds, obs = None, "not measured"
        else:
            holds = abs(r2 - r1_remote) < r1_remote - r1_local
            obs = f"|{NAMES[t]} - ROS 1| = {abs(r2 - r1_remote):.3g} ms, remote - local = {r1_remote - r1_local:.3g} ms"
        out.append(ShapeCheck(f"Figs 7-8 at 1 MB: ROS 1 vs {NAMES[t]} gap smaller than remote vs local",
                              "ROS 1 vs ROS 2 much smaller than remote vs local", obs, holds))
    return out


def _table4_checks(local: list, remote: list) -> list:
    out = []
    mdrs = {s: med(select(local, transport=ROS1, size=s), "mdr_pct") for s in sizes(select(local, transport=ROS1))}
    holds = None if not mdrs else all(v is not None and v >= 99 for v in mdrs.values())
    out.append(ShapeCheck("Table 4 (1-b) ROS 1 local: every size delivered", "✓ 256 B - 4 MB",
                          ", ".join(f"{size_label(s)} {v:.0f} %" for s, v in mdrs.items() if v is not None)
                          or "not measured", holds))
    lat = {s: _p50(remote, ROS1, s) for s in sizes(select(remote, transport=ROS1))}
    small = [v for s, v in lat.items() if s <= MB and v is not None]
    big = [v for s, v in lat.items() if s >= 2 * MB and v is not None]
    holds = None if not small or not big else max(small) < DEADLINE_MS < min(big)
    out.append(ShapeCheck("Table 4 (1-a) ROS 1 remote: within the 100 ms deadline up to 1 MB, missed from 2 MB",
                          "✓ up to 1 MB, △1 (deadline missed) at 2 and 4 MB",
                          ", ".join(f"{size_label(s)} {v:.3g} ms" for s, v in lat.items() if v is not None)
                          or "not measured", holds))
    return out


def _throughput(remote: list) -> tuple:
    comps, checks = [], []
    for t in _transports(remote) or [ROS1]:
        bw = med(select(remote, transport=t, size=4 * MB, **({} if t == ROS1 else {"reliability": "reliable"})),
                 "bw_mbit")
        comps.append(Comparison(f"Figs 20-21 remote {NAMES[t]}: throughput of 4 MB at 10 Hz (335 Mbit/s offered)",
                                "Mbit/s", LINK_MBIT, bw, Tolerance(factor=1.25), "absolute",
                                "the paper: the link's 12.5 MB/s, all of it used"))
        rows, holds = [], None
        for s in [s for s in sizes(select(remote, transport=t)) if s >= 64 * KB]:
            b = med(select(remote, transport=t, size=s, **({} if t == ROS1 else {"reliability": "reliable"})),
                    "bw_mbit")
            expect = min(s * 8 * 10 / 1e6, LINK_MBIT)
            if b is None:
                continue
            rows.append(f"{size_label(s)} {b:.3g}/{expect:.3g}")
            holds = (holds is not False) and 0.75 <= b / expect <= 1.1
        checks.append(ShapeCheck(f"Figs 20-21 remote {NAMES[t]}: large messages follow the link",
                                 "throughput = min(offered, 100 Mbit/s) from 64 KB",
                                 ("Mbit/s measured/expected: " + ", ".join(rows)) if rows else "not measured", holds))
    return comps, checks


def _subscribers(pts: list) -> tuple:
    ros1 = [v for v in (_p50(pts, ROS1, MB, subscriber=k) for k in range(1, 6)) if v is not None]
    comp = Comparison("Fig 17 (1-b) ROS 1 at 1 MB: latency of the slowest / the fastest of 5 subscribers", "×", 2.0,
                      max(ros1) / min(ros1) if ros1 and min(ros1) > 0 else None, Tolerance(factor=1.5), "ratio",
                      "the paper: subscriber 5 about twice subscriber 1; netloop's #k names a node, not the "
                      "order TCPROS writes in"
                      + (f"; medians {', '.join(f'{v:.3g}' for v in ros1)} ms" if ros1 else ""))
    checks = []
    for t in [t for t in _transports(pts) if t != ROS1] or ["cyclonedds"]:
        per = [v for v in (_p50(pts, t, MB, subscriber=k) for k in range(1, 6)) if v is not None]
        spread = max(per) / min(per) if per and min(per) > 0 else None
        checks.append(ShapeCheck(f"Fig 18 (2-b) {NAMES[t]} at 1 MB: subscribers fair",
                                 "small differences between the 5 subscribers",
                                 f"slowest / fastest = {_fmt(spread, '×')}"
                                 + (f" ({', '.join(f'{v:.3g}' for v in per)} ms)" if per else ""),
                                 None if spread is None else spread <= 1.5))
    return [comp], checks


def _initial_loss(pts: list) -> list:
    out = []
    for t in _transports(pts) or [ROS1]:
        for size in sizes(select(pts, transport=t)) or [256]:
            late = select(pts, transport=t, size=size, subscriber=2,
                          **({} if t == ROS1 else {"durability": "transient_local"}))
            got, sent = med(late, "received"), med(late, "sent")
            obs = "not measured" if got is None or sent is None else f"late subscriber got {got:.0f} of {sent:.0f}"
            if t == ROS1:
                out.append(ShapeCheck(f"Table 4 ROS 1 {size_label(size)}: initial messages lost",
                                      "ROS 1 loses initial messages (TCPROS, any size), and delivers the "
                                      "rest", obs, None if got is None or sent is None else 0 < got < sent))
            else:
                out.append(ShapeCheck(f"Table 4 {NAMES[t]} reliable + transient_local {size_label(size)}: none lost",
                                      "ROS 2 loses none, even at 4 MB", obs,
                                      None if got is None or sent is None else got >= sent))
    return out


def _bridge(pts: list) -> list:
    out = []
    for t in [t for t in _transports(pts) if t != ROS1] or ["cyclonedds"]:
        rows, holds = [], None
        for s in [s for s in sizes(pts) if s < 64 * KB]:
            b, d = med(select(pts, transport=t, size=s), "p50_ms"), _p50(pts, ROS1, s)
            if b is None or d is None:
                continue
            rows.append(f"{size_label(s)} {b:.3g} vs {d:.3g} ms")
            holds = (holds is not False) and 1.5 * d <= b <= BRIDGE_CEILING * d
        out.append(ShapeCheck(f"Figs 9-10 (3-b) ROS 1 over a {NAMES[t]} bridge: significant overhead below 64 KB",
                              f"the bridge well above direct ROS 1 (×1.5-{BRIDGE_CEILING:g})",
                              "; ".join(rows) or "not measured", holds))
    return out


def _overhead(local: list) -> list:
    out = []
    for t in [t for t in _transports(local) if t != ROS1]:
        extra = []
        for s in [s for s in sizes(local) if s <= 16 * KB]:
            a, d = _p50(local, t, s), _p50(local, ROS1, s)
            if a is not None and d is not None:
                extra.append((s, a - d))
        rows = [f"{size_label(s)} +{x:.3g} ms" for s, x in extra]
        added = [x for _, x in extra]
        # above ROS 1 at every size, by about the same amount (a constant: the largest within
        # x3 of the smallest, or within 0.1 ms of it)
        holds = None if not added else min(added) > 0 and (max(added) <= 3 * min(added)
                                                           or max(added) - min(added) <= 0.1)
        out.append(ShapeCheck(f"Figs 9-10 (2-b) {NAMES[t]}: ROS 2 adds an overhead over ROS 1 below 64 KB",
                              "ROS 2 above ROS 1 by a constant below 64 KB (the largest overhead within ×3 "
                              "of the smallest)", "; ".join(rows) or "not measured", holds))
    return out


def _medians(part: str, pts: list) -> list:
    return [Comparison(f"{part} {NAMES[t]}: median one-way latency, {size_label(s)}", "ms", None, _p50(pts, t, s),
                       None, "absolute")
            for t in _transports(pts) for s in (256, 64 * KB, MB) if _p50(pts, t, s) is not None]


def compare(campaigns: dict) -> StudyResult:
    pts, notes = {}, []
    for part in STUDY.parts:
        pts[part.name], note = read_points(campaigns.get(part.name), part.name)
        if note:
            notes.append(note)
        if part.name not in campaigns:
            notes.append(f"{part.name}: not run ({part.reproduces}); its checks are 'not measured'")
    local, remote = pts["local"], pts["remote"]
    sub_comps, sub_checks = _subscribers(pts["subscribers"])
    tp_comps, tp_checks = _throughput(remote)
    comps = sub_comps + tp_comps + _medians("(1-b)/(2-b) local", local) + _medians("(1-a)/(2-a) remote", remote)
    checks = (_flat_checks("local", local) + _flat_checks("remote", remote) + _remote_checks(local, remote)
              + _overhead(local) + _table4_checks(local, remote) + tp_checks + sub_checks
              + _initial_loss(pts["initial_loss"]) + _bridge(pts["bridge"]))
    notes.append(BASIS_NOTE)
    return StudyResult("maruyama", comps, checks, {k: Path(v) for k, v in campaigns.items()}, notes)


STUDY = Study(
    name="maruyama",
    title="Maruyama et al. 2016 (ROS 1 vs ROS 2, message sizes)",
    citation='Y. Maruyama, S. Kato, T. Azumi, "Exploring the Performance of ROS2", EMSOFT 2016',
    parts=[
        Part("local", "maruyama_figs7_10_local.yaml", "Figs 7-10, Table 4 (1-b, 2-b)", quick=_quick_sizes),
        Part("remote", "maruyama_figs7_8_20_21_remote.yaml", "Figs 7-8, 20-21, Table 4 (1-a, 2-a)",
             quick=_quick_sizes),
        Part("subscribers", "maruyama_figs17_19_subscribers.yaml", "Figs 17-19", quick=_quick_subscribers),
        Part("initial_loss", "maruyama_table4_initial_loss.yaml", "Table 4 initial loss", quick=_quick_initial_loss),
        Part("bridge", "maruyama_figs9_10_bridge.yaml", "Figs 9-10 (3-b)", quick=_quick_bridge),
    ],
    compare=compare,
    summary=("ROS 1 and ROS 2 (Cyclone DDS, Fast DDS, Zenoh) at 256 B - 4 MB and 10 Hz on one host and "
             "over a 100 Mbit/s Ethernet, five subscribers, a late subscriber, a bridge: the paper's shapes "
             "judged, its two numbers compared, its 2016 machines' latencies not."),
)
