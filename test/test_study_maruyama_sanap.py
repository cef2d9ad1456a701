"""The message-size (Maruyama et al. 2016) and Raspberry Pi (Sanap 2023) studies' verdicts on
synthetic analysis.json records: shapes that hold and fail, numbers that match and miss, parts
that were not run, runs left out for a lagging link; and their quick variants."""
from __future__ import annotations

import json

import pytest

from netloop.studies import core, load
from netloop.studies.cli import part_experiment
from netloop.studies.flow_points import select

KB, MB = 1 << 10, 1 << 20


def _flow(size, period=0.1, p50=1.0, mdr=1.0, bw=None, subscriber=None, sent=100, received=None,
          measures="one-way"):
    f = {"flow": "msg", "kind": "generic", "size_bytes": size, "period_s": period, "measures": measures,
         "ok": True, "sent": sent, "received": round(sent * mdr) if received is None else received,
         "MDR": mdr, "delay": {"n": sent, "p50_ms": p50},
         "bandwidth_mbit": size * 8 / period / 1e6 * mdr if bw is None else bw}
    if subscriber:
        f["subscriber"] = f"#{subscriber} on operator"
    return f


def _campaign(tmp_path, name, runs, lagged=()):
    """A campaign directory: analysis.json of ``runs`` [(transport, settings, [flows])], each run's
    metadata.json (its link lagged for the run ids in ``lagged``)."""
    d = tmp_path / name
    records = []
    for i, (transport, settings, flows) in enumerate(runs):
        run_id = f"{transport}-{i}"
        (d / "runs" / run_id).mkdir(parents=True)
        (d / "runs" / run_id / "metadata.json").write_text(json.dumps(
            {"link_health": {"valid": i not in lagged}}))
        records.append({"run_id": run_id, "transport": transport, "status": "complete", "ok": True,
                        "cell": {"settings": settings}, "flows": flows})
    (d / "analysis.json").write_text(json.dumps(records))
    return d


# --- Maruyama -------------------------------------------------------------------------------

SIZES = [256, 4 * KB, 16 * KB, 64 * KB, MB, 4 * MB]


def _remote_p50(size, base=0.3):
    """One-way latency over 100 Mbit/s: the base plus the transfer time (the paper's shape)."""
    return base + (size * 8 / 100e3 if size >= 16 * KB else 0)


def _maruyama_campaigns(tmp_path, sub5=2.0, dds_late=30, bw4=95.0):
    rel = {"flows[0].qos.reliability": "reliable"}
    local = [(t, {} if t == "tcp_nodelay" else rel,
              [_flow(s, p50=(0.3 if t == "tcp_nodelay" else 0.4) + s / 4e6)]) for t in ("tcp_nodelay", "cyclonedds")
             for s in SIZES]
    remote = []
    for t in ("tcp_nodelay", "cyclonedds"):
        for s in SIZES:
            p50 = _remote_p50(s) + s / 4e6 if s < 2 * MB else 1500.0
            remote.append((t, {} if t == "tcp_nodelay" else rel,
                           [_flow(s, p50=p50, bw=bw4 if s == 4 * MB else None)]))
    subs = [("tcp_nodelay", {}, [_flow(MB, p50=3.0 * (1 + (sub5 - 1) * (k - 1) / 4), subscriber=k)
                                 for k in range(1, 6)]),
            ("cyclonedds", {}, [_flow(MB, p50=4.0 + 0.1 * k, subscriber=k) for k in range(1, 6)])]
    late = [("tcp_nodelay", {}, [_flow(256, subscriber=1, sent=30), _flow(256, subscriber=2, sent=30, received=10)]),
            ("cyclonedds", {"flows[0].qos.durability": "transient_local"},
             [_flow(256, subscriber=1, sent=30), _flow(256, subscriber=2, sent=30, received=dds_late)])]
    bridge = [("tcp_nodelay", {}, [_flow(s, p50=0.25)]) for s in (256, 64 * KB)] + \
             [("cyclonedds", {}, [_flow(s, p50=0.5)]) for s in (256, 64 * KB)]
    return {"local": _campaign(tmp_path, "local", local), "remote": _campaign(tmp_path, "remote", remote),
            "subscribers": _campaign(tmp_path, "subs", subs), "initial_loss": _campaign(tmp_path, "late", late),
            "bridge": _campaign(tmp_path, "bridge", bridge)}


def _by_item(result):
    return {x.item: x.verdict for x in result.comparisons + result.checks}


def test_maruyama_shapes_hold_and_numbers_match(tmp_path):
    result = load("maruyama").compare(_maruyama_campaigns(tmp_path))
    v = _by_item(result)
    assert v["Fig 17 (1-b) ROS 1 at 1 MB: latency of the slowest / the fastest of 5 subscribers"] == core.MATCH
    assert v["Figs 20-21 remote ROS 1: throughput of 4 MB at 10 Hz (335 Mbit/s offered)"] == core.MATCH
    for item in ("Figs 7-8 local ROS 1: latency constant up to 4 KB", "Figs 7-8 remote Cyclone DDS: latency grows "
                 "sharply from 16 KB", "Figs 7-8 ROS 1: remote - local latency is the transfer time at 100 Mbit/s",
                 "Table 4 (1-a) ROS 1 remote: within the 100 ms deadline up to 1 MB, missed from 2 MB",
                 "Table 4 ROS 1 256 B: initial messages lost",
                 "Table 4 Cyclone DDS reliable + transient_local 256 B: none lost",
                 "Fig 18 (2-b) Cyclone DDS at 1 MB: subscribers fair",
                 "Figs 9-10 (3-b) ROS 1 over a Cyclone DDS bridge: significant overhead below 64 KB",
                 "Figs 9-10 (2-b) Cyclone DDS: ROS 2 adds an overhead over ROS 1 below 64 KB"):
        assert v[item] == core.HOLDS, item
    assert not [c for c in result.checks if c.verdict == core.FAILS]
    assert any(c.verdict == core.ONLY and c.unit == "ms" for c in result.comparisons)   # its own medians
    assert any("figures only" in n for n in result.notes)


def test_maruyama_misses_and_failed_shapes(tmp_path):
    result = load("maruyama").compare(_maruyama_campaigns(tmp_path, sub5=1.05, dds_late=20, bw4=40.0))
    v = _by_item(result)
    assert v["Fig 17 (1-b) ROS 1 at 1 MB: latency of the slowest / the fastest of 5 subscribers"] == core.MISS
    assert v["Figs 20-21 remote Cyclone DDS: throughput of 4 MB at 10 Hz (335 Mbit/s offered)"] == core.MISS
    assert v["Figs 20-21 remote Cyclone DDS: large messages follow the link"] == core.FAILS
    assert v["Table 4 Cyclone DDS reliable + transient_local 256 B: none lost"] == core.FAILS
    assert v["Table 4 ROS 1 256 B: initial messages lost"] == core.HOLDS


def test_maruyama_missing_parts_and_lagging_runs(tmp_path):
    study = load("maruyama")
    empty = study.compare({})
    assert set(empty.tally()) <= {core.NOT_MEASURED}
    assert sum("not run" in n for n in empty.notes) == len(study.parts)
    camps = _maruyama_campaigns(tmp_path)
    only_local = study.compare({"local": camps["local"]})
    v = _by_item(only_local)
    assert v["Figs 7-8 local ROS 1: latency constant up to 4 KB"] == core.HOLDS
    assert v["Figs 7-8 ROS 1: remote - local latency is the transfer time at 100 Mbit/s"] == core.NOT_MEASURED
    assert v["Fig 17 (1-b) ROS 1 at 1 MB: latency of the slowest / the fastest of 5 subscribers"] == core.NOT_MEASURED
    lagged = _campaign(tmp_path, "lag", [("tcp_nodelay", {}, [_flow(256)]), ("tcp_nodelay", {}, [_flow(4 * KB)])],
                       lagged=(1,))
    res = study.compare({"local": lagged})
    assert any("1 of 2 runs left out" in n for n in res.notes)
    assert _by_item(res)["Figs 7-8 local ROS 1: latency constant up to 4 KB"] == core.NOT_MEASURED


# --- Sanap ----------------------------------------------------------------------------------

RATES = [10, 20, 30, 50, 90]
#: link -> transport -> rate -> (one-way latency ms, throughput %): the thesis's shapes
PUBLISHED_LIKE = {
    "intra": {"tcp_nodelay": {10: (3.78, 100), 20: (5, 100), 30: (8, 100), 50: (20, 70), 90: (28.83, 44.67)},
              "fastdds": {r: (1.0, 95 - (r - 10) * 15.89 / 80) for r in RATES},
              "cyclonedds": {10: (1.77, 93.6), 20: (1.77, 90), 30: (1.77, 88), 50: (1.77, 85), 90: (2.97, 77.87)}},
    "inter": {"tcp_nodelay": {10: (5.48, 100), 20: (7, 100), 30: (11, 90), 50: (28, 60), 90: (41.8, 39.28)},
              "fastdds": {r: (1.86, 87.65 - (r - 10) * 15.21 / 80) for r in RATES},
              "cyclonedds": {10: (2.28, 86.37), 20: (2.28, 83), 30: (2.28, 80), 50: (2.28, 76), 90: (4.19, 71.45)}},
}


def _sanap_campaigns(tmp_path, table=PUBLISHED_LIKE, size=51200):
    def runs(link, transports, echo=False):
        out = []
        for t in transports:
            for r, (lat, pct) in table[link][t].items():
                f = _flow(size, period=round(1 / r, 6), p50=lat * (2 if echo else 1), mdr=pct / 100,
                          measures="round trip" if echo else "one-way")
                out.append((t, {}, [f]))
        return out
    return {"intra": _campaign(tmp_path, "intra", runs("intra", ("tcp_nodelay", "fastdds", "cyclonedds"))),
            "inter_ros1": _campaign(tmp_path, "ros1", runs("inter", ("tcp_nodelay",), echo=True)),
            "inter_ros2": _campaign(tmp_path, "ros2", runs("inter", ("fastdds", "cyclonedds")))}


def test_sanap_the_thesis_shapes_match(tmp_path):
    result = load("sanap").compare(_sanap_campaigns(tmp_path))
    v = _by_item(result)
    by = {c.item: c for c in result.comparisons}
    # ROS inter-board is half the round trip: 2 x 5.48 ms measured -> 5.48 one-way, / 3.78 intra
    assert by["Sec 4.1 ROS: latency inter / intra-board, 50 KB, median over 10-90 Hz"].ours == pytest.approx(
        sorted(PUBLISHED_LIKE["inter"]["tcp_nodelay"][r][0] / PUBLISHED_LIKE["intra"]["tcp_nodelay"][r][0]
               for r in RATES)[2])
    assert by["Sec 4.3 intra-board ROS: 100 % throughput held up to"].ours == 30
    assert by["Sec 4.3 inter-board ROS: 100 % throughput held up to"].ours == 20
    assert by["Sec 4.3 intra-board: latency ROS / Fast DDS at 90 Hz"].verdict == core.MATCH
    assert by["Sec 4.2 intra-board: latency Cyclone / Fast DDS at 90 Hz"].verdict == core.MATCH
    for item, c in by.items():
        if item.startswith("Sec 4.1/4.3"):
            assert c.verdict == core.MATCH, item
    assert v["Sec 4.3 intra-board: ROS throughput falls with rate"] == core.HOLDS
    assert v["Sec 4.3 inter-board: at 90 Hz ROS 2 delivers more than ROS"] == core.HOLDS
    assert v["Sec 4.2 inter-board Fast DDS: latency rises with rate"] == core.FAILS   # flat in this table
    assert all(c.basis in ("ratio", "shape") for c in result.comparisons)
    assert any("Raspberry Pi" in n for n in result.notes)


def test_sanap_a_fast_machine_misses_the_pi_numbers(tmp_path):
    flat = {link: {t: {r: (0.3, 100.0) for r in RATES} for t in ts} for link, ts in PUBLISHED_LIKE.items()}
    result = load("sanap").compare(_sanap_campaigns(tmp_path, flat))
    by = {c.item: c for c in result.comparisons}
    up_to = by["Sec 4.3 intra-board ROS: 100 % throughput held up to"]
    assert up_to.ours == 90 and up_to.verdict == core.MISS and "every rate" in up_to.note
    assert by["Sec 4.1/4.3 intra-board ROS: throughput at 90 Hz"].verdict == core.MISS
    assert by["Sec 4.3 intra-board: latency ROS / Fast DDS at 90 Hz"].verdict == core.MISS
    assert _by_item(result)["Sec 4.3 intra-board: ROS throughput falls with rate"] == core.FAILS


def test_sanap_missing_parts_and_other_sizes(tmp_path):
    study = load("sanap")
    assert set(study.compare({}).tally()) == {core.NOT_MEASURED}
    camps = _sanap_campaigns(tmp_path)
    res = study.compare({"intra": camps["intra"]})
    by = {c.item: c.verdict for c in res.comparisons}
    assert by["Sec 4.2 intra-board: latency Cyclone / Fast DDS at 90 Hz"] == core.MATCH
    assert by["Sec 4.1 ROS: latency inter / intra-board, 50 KB, median over 10-90 Hz"] == core.NOT_MEASURED
    assert sum("not run" in n for n in res.notes) == 2
    # a campaign at another size gives no 50 KB point
    other = _sanap_campaigns(tmp_path / "other", size=10240)
    assert set(study.compare(other).tally()) == {core.NOT_MEASURED}


def test_sanap_throughput_is_the_delivered_rate_where_it_falls_short(tmp_path):
    """Every message delivered, but at half the offered rate (a queue drained after the sending):
    the thesis's 30 s window would have counted half."""
    runs = [("tcp_nodelay", {}, [_flow(51200, period=round(1 / r, 6), bw=51200 * 8 * r / 1e6 / (2 if r == 90 else 1))])
            for r in RATES]
    result = load("sanap").compare({"intra": _campaign(tmp_path, "intra", runs)})
    by = {c.item: c for c in result.comparisons}
    assert by["Sec 4.1/4.3 intra-board ROS: throughput at 90 Hz"].ours == pytest.approx(50, rel=1e-3)
    assert by["Sec 4.1/4.3 intra-board ROS: throughput at 10 Hz"].ours == pytest.approx(100)
    assert by["Sec 4.3 intra-board ROS: 100 % throughput held up to"].ours == 50
    assert _by_item(result)["Sec 4.3 intra-board: ROS throughput falls with rate"] == core.HOLDS


def test_select_matches_swept_settings_by_their_last_word(tmp_path):
    d = _campaign(tmp_path, "c", [("cyclonedds", {"flows[0].qos.reliability": "reliable"}, [_flow(256)]),
                                  ("cyclonedds", {"flows[0].qos.reliability": "best_effort"}, [_flow(256, p50=9)])])
    from netloop.studies.flow_points import read_points
    pts, note = read_points(d, "x")
    assert note is None and [p.p50_ms for p in select(pts, reliability="reliable")] == [1.0]
    assert len(select(pts, transport="cyclonedds", size=256, rate=10)) == 2


@pytest.mark.parametrize("study,part,sizes,transports", [
    ("maruyama", "local", [256, 4 * KB, 16 * KB, 64 * KB, MB, 4 * MB], ["tcp_nodelay", "cyclonedds", "fastdds"]),
    ("maruyama", "remote", [256, 4 * KB, 16 * KB, 64 * KB, MB, 4 * MB], ["tcp_nodelay", "cyclonedds", "fastdds"]),
    ("maruyama", "subscribers", [MB], ["tcp_nodelay", "cyclonedds", "fastdds"]),
    ("maruyama", "initial_loss", [256, MB], ["tcp_nodelay", "cyclonedds", "fastdds"]),
    ("maruyama", "bridge", [256, 64 * KB, MB], ["tcp_nodelay", "cyclonedds"]),
    ("sanap", "intra", [51200], ["tcp_nodelay", "fastdds", "cyclonedds", "rmw_fastrtps_cpp"]),
    ("sanap", "inter_ros1", [51200], ["tcp_nodelay"]),
    ("sanap", "inter_ros2", [51200], ["fastdds", "cyclonedds", "rmw_fastrtps_cpp"]),
])
def test_quick_variants_keep_the_shapes(study, part, sizes, transports):
    s = load(study)
    full = part_experiment(s, s.part(part))
    quick = part_experiment(s, s.part(part), quick=True)
    assert quick.transport == transports and quick.sweep["flows[0].size_bytes"] == sizes
    assert quick.link == full.link
    if study == "sanap":
        zipped = quick.sweep["zip"]
        assert [round(1 / p) for p in zipped["flows[0].period"]] == RATES
        assert [round(c * p) for c, p in zip(zipped["flows[0].count"], zipped["flows[0].period"])] == [3] * 5
        assert full.flows[0].count == 1500 and len(full.sweep["flows[0].period"]) == 20
    else:
        assert full.flows[0].period == 0.1
        if part in ("local", "remote"):
            assert len(full.sweep["flows[0].size_bytes"]) == 15 and "zip" not in quick.sweep
            assert {k: quick.flows[0].qos[k] for k in ("reliability", "durability")} == \
                {"reliability": "reliable", "durability": "transient_local"}
