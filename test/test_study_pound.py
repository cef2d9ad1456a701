"""The Pound study's verdicts (netloop.studies.pound) on synthetic analysis.json records: a match,
a miss, parts not measured, netloop-only rows, the ranking and the shapes (no run, no root)."""
from __future__ import annotations

import json

import pytest

from netloop import calibrate_link, paths
from netloop.studies import core, pound, pound_shapes


def _flow(name, d, std_jd, mdr=1.0, std_d=1.0, std_source=0.1, outages=None, size=1024, bw=None):
    f = {"flow": name, "MDR": mdr, "size_bytes": size, "period": {"mean_ms": 20.0, "std_ms": std_jd},
         "source_period": {"mean_ms": 20.0, "std_ms": std_source},
         "delay": {"n": 100, "mean_ms": d, "std_ms": std_d}}
    if outages is not None:
        f["outages"] = outages
    if bw is not None:
        f["bandwidth_mbit"] = bw
    return f


def _campaign(path, runs, lagged=()):
    """runs: [(run_id, transport, flows, extra)]; runs in ``lagged`` lagged real time."""
    path.mkdir(parents=True)
    analysis = []
    for run_id, transport, flows, extra in runs:
        d = path / "runs" / run_id
        d.mkdir(parents=True)
        (d / "metadata.json").write_text(json.dumps({"link_health": {"valid": run_id not in lagged}}))
        analysis.append({"run_id": run_id, "transport": transport, "flows": flows, **extra})
    (path / "analysis.json").write_text(json.dumps(analysis))
    return path


def _by_item(result):
    return {c.item: c for c in result.comparisons + result.checks}


def _tables(tmp_path, lagged=()):
    laser_d = {"tcp": 20.0, "tcp_nodelay": 50.0, "udp": 40.0, "udp/tcp_nodelay": 6.0, "nimbro": 60.0,
               "nimbro_mixed": 25.0, "priority": 4.0, "zenoh": 7.0}
    runs = [(f"{t.replace('/', '+')}-r0", t, [_flow("laser", d, 3.0), _flow("image", 120.0, 3.0)], {})
            for t, d in laser_d.items()]
    runs.append(("udp-r1", "udp", [_flow("laser", 400.0, 300.0), _flow("image", 900.0, 90.0)], {}))
    return _campaign(tmp_path / "tables", runs, lagged=lagged or {"udp-r1"})


def test_tables_match_miss_netloop_only_and_not_measured_parts(tmp_path):
    result = pound.compare({"tables": _tables(tmp_path)})
    by = _by_item(result)
    tcp_d = by["Table I laser D, TCP (tcp)"]
    assert tcp_d.verdict == core.MATCH and tcp_d.ratio == pytest.approx(20.0 / 18.6)
    assert by["Table I laser D, NOD (tcp_nodelay)"].verdict == core.MISS          # 50 against 6.0: off ×2
    assert by["Table I laser D, UDP (udp)"].ours == 40.0                          # the lagged run left out
    assert by["Table I laser std(J_d), Pound (priority)"].tolerance.describe() == "±3"   # below 6 ms
    assert by["Table I laser MDR, TCP (tcp)"].verdict == core.MATCH
    assert by["Tables I-II laser D, zenoh"].verdict == core.ONLY                  # no published row
    assert any("1 of 9 runs left out" in n for n in result.notes)
    # parts without a campaign: every one of their rows and checks is "not measured"
    for item in ("Table V 2 nodes flow 1, TCP (tcp)", "Fig. 19 udp", "Fig. 21: only Pound stays close to local",
                 "Fig. 1: the period at the destination, wired against Wi-Fi", "Fig. 3: Nagle, one 1 KB / 20 ms flow"):
        assert by[item].verdict == core.NOT_MEASURED, item
    assert not [c for c in result.comparisons if c.item.startswith("Tables III-IV")]
    md = result.markdown()
    assert "| Table I laser D, TCP (tcp) | ms | 18.6 | 20 | 1.08 | ×2 | absolute | match |" in md


def test_the_ranking_and_the_low_delay_methods(tmp_path):
    by = _by_item(pound.compare({"tables": _tables(tmp_path)}))
    rank = by["Table I: the methods ranked by laser D"]
    # netloop: Pound < UDP/NOD < TCP < Nimbro* < UDP < NOD < Nimbro; NOD out of place only
    assert rank.observed.startswith("Pound < UDP/NOD < TCP < Nimbro* < UDP < NOD < Nimbro")
    assert rank.verdict == core.HOLDS
    low = by["Table I: laser D below 10 ms"]
    assert low.verdict == core.FAILS and "NOD 50.0" in low.observed
    assert pound.ranking({"tcp": {"laser": {"D": 1.0}}}) is None                  # fewer than 3 methods


def test_std_jd_miss_the_papers_source_explains_is_said_so():
    ours = {"udp": {"image": {"D": 105.0, "std_Jd": 1.5, "MDR": 100.0, "std_D": 1.0, "std_source": 0.1}}}
    by = {c.item: c for c in pound.table_comparisons(ours)}
    c = by["Table II image std(J_d), UDP (udp)"]
    assert c.verdict == core.MISS and c.note == "≥ 3.4 ms of it the paper's source's"
    assert by["Table II image D, UDP (udp)"].verdict == core.MATCH and not by["Table II image D, UDP (udp)"].note


def test_calibrate_judges_with_the_studys_tolerances():
    for pub, ours in ((18.6, 37.2), (18.6, 37.3), (4.1, 7.1), (4.1, 7.2), (6.0, 12.0), (6.0, 12.1)):
        assert (calibrate_link.verdict_ms(pub, ours) == "ok") == pound.ms_tolerance(pub).holds(pub, ours)
    assert calibrate_link.EXPERIMENT == "pound_tables_1_2.yaml"
    assert calibrate_link.FIG19_EXPERIMENT == "pound_fig19.yaml"


SIZES = (1024, 16384, 65536, 262144)


def test_fig19_shapes(tmp_path):
    curves = {"tcp": (4.1, 4.0, 3.9, 4.0), "udp": (4.5, 4.4, 4.4, 4.3), "priority": (5.3, 5.4, 5.4, 5.5)}
    runs = [(f"{t}__size_bytes={s}-r0", t, [_flow("bulk", 1.0, 1.0, size=s, bw=r)], {})
            for t, rates in curves.items() for s, r in zip(SIZES, rates)]
    by = _by_item(pound.compare({"fig19": _campaign(tmp_path / "fig19", runs)}))
    assert by["Fig. 19 tcp"].verdict == core.HOLDS and "1 KB 4.10" in by["Fig. 19 tcp"].observed
    assert by["Fig. 19 priority"].verdict == core.HOLDS
    assert by["Fig. 19 udp"].verdict == core.FAILS and by["Fig. 19 udp"].note.startswith("no collapse")
    assert by["Fig. 19 nimbro"].verdict == core.NOT_MEASURED


def _loop_runs(iae_mvs):
    return [(f"{t.replace('/', '+')}-r0", t, [], {"deviation": {"IAE": v / 1e3}}) for t, v in iae_mvs.items()]


def test_fig21_only_pound_close_to_local(tmp_path):
    only = {"priority": 9.0, "tcp": 40.0, "tcp_nodelay": 35.0, "udp": 60.0, "zenoh": 5.0}
    by = _by_item(pound.compare({"fig21": _campaign(tmp_path / "a", _loop_runs(only))}))
    assert by["Fig. 21: only Pound stays close to local"].verdict == core.HOLDS
    assert by["Fig. 21: Pound the closest to local"].verdict == core.HOLDS       # zenoh is no paper method
    assert by["Fig. 21 IAE(y − local), zenoh"].verdict == core.ONLY
    many = {"priority": 9.0, "tcp": 12.8, "tcp_nodelay": 10.1, "udp": 31.2}      # as measured on wifi6
    by = _by_item(pound.compare({"fig21": _campaign(tmp_path / "b", _loop_runs(many))}))
    check = by["Fig. 21: only Pound stays close to local"]
    assert check.verdict == core.FAILS and "close (≤ 18.0 mV·s): Pound, NOD, TCP" in check.observed


def _outage(recovery_s):
    return [{"recovery_ms": None if recovery_s is None else 1e3 * recovery_s, "lost": 10, "late": 0,
             "sent": 10, "loss": None, "duration_s": 5.0}]


def _table5(path, recovery):
    runs = [(f"{t.replace('/', '+')}-r0", t, [_flow(f"flow{i + 1}", 5.0, 1.0, outages=_outage(r))
                                              for i, r in enumerate(rs)], {})
            for t, rs in recovery.items()]
    return _campaign(path, runs)


def test_table5_recovery_per_flow_and_its_shapes(tmp_path):
    two = {"tcp": (1.8, 1.9), "tcp_nodelay": (1.9, 2.0), "udp": (1.3, 1.3), "nimbro": (1.2, 1.3),
           "priority": (0.3, None)}
    three = {t: tuple(None if v is None else v + 0.3 for v in rs) for t, rs in two.items()}
    by = _by_item(pound.compare({"table5_2node": _table5(tmp_path / "two", two),
                                 "table5_3node": _table5(tmp_path / "three", three)}))
    assert by["Table V 2 nodes flow 1, TCP (tcp)"].verdict == core.MATCH
    assert by["Table V 2 nodes flow 1, TCP (tcp)"].tolerance.describe() == "±0.5"
    assert by["Table V 2 nodes flow 1, Pound (priority)"].verdict == core.MISS       # 0.3 against 1.31
    unresumed = by["Table V 2 nodes flow 2, Pound (priority)"]
    # a flow that never recovered is a miss, not "not measured"
    assert unresumed.verdict == core.MISS and unresumed.never and unresumed.ours is None
    assert unresumed.note.startswith("did not resume in 1 of 1 runs")
    assert by["Table V 3 nodes flow 2, NOD (tcp_nodelay)"].ours == pytest.approx(2.3)
    gap = by["Table V 2 nodes: UDP-based recover faster than TCP"]
    assert gap.verdict == core.HOLDS and "published 0.64 s" in gap.expected
    assert by["Table V: 3 nodes slower than 2"].verdict == core.HOLDS
    # UDP no faster than TCP: the shape fails
    flat = {t: (1.3, 1.3) for t in ("tcp", "tcp_nodelay", "udp", "nimbro", "priority")}
    by = _by_item(pound.compare({"table5_2node": _table5(tmp_path / "flat", flat)}))
    assert by["Table V 2 nodes: UDP-based recover faster than TCP"].verdict == core.FAILS
    assert by["Table V: 3 nodes slower than 2"].verdict == core.NOT_MEASURED


def test_fig1_and_fig3_shapes(tmp_path):
    fig1 = _campaign(tmp_path / "fig1", [
        ("tcp__link=ethernet-r0", "tcp", [_flow("laser", 0.2, 0.1)], {"cell": {"settings": {"link": "ethernet"}}}),
        ("tcp__link=wifi6-r0", "tcp", [_flow("laser", 2.0, 0.9)], {"cell": {"settings": {"link": "wifi6"}}})])
    fig3 = _campaign(tmp_path / "fig3", [("tcp-r0", "tcp", [_flow("laser", 20.0, 12.0)], {}),
                                         ("tcp_nodelay-r0", "tcp_nodelay", [_flow("laser", 2.0, 8.0)], {})])
    by = _by_item(pound.compare({"fig1": fig1, "fig3": fig3}))
    f1 = by["Fig. 1: the period at the destination, wired against Wi-Fi"]
    assert f1.verdict == core.HOLDS and "ethernet 0.10 ms, Wi-Fi 0.90 ms" in f1.observed
    f3 = by["Fig. 3: Nagle, one 1 KB / 20 ms flow"]
    assert f3.verdict == core.FAILS and "tcp 12.00 ms, tcp_nodelay 8.00 ms" in f3.observed


def test_every_part_is_a_shipped_file_and_quick_keeps_the_shapes():
    from netloop.experiment import load_experiment, quick_variant
    for part in pound.STUDY.parts:
        assert (paths.EXPERIMENTS / part.experiment).is_file(), part.experiment
    fig19 = pound.STUDY.part("fig19")
    exp = fig19.quick(quick_variant(load_experiment(str(paths.EXPERIMENTS / fig19.experiment))))
    assert exp.sweep["zip"]["flows[0].size_bytes"] == [1024, 16384, 65536, 262144]
    assert len(exp.sweep["zip"]["flows[0].period"]) == 4
    for name in ("table5_2node", "table5_3node"):
        part = pound.STUDY.part(name)
        full = load_experiment(str(paths.EXPERIMENTS / part.experiment))
        quick = part.quick(quick_variant(full))
        assert quick.faults[0].duration == full.faults[0].duration          # the 5 s outage kept
        f = quick.faults[0]
        assert all(fl.count == 0 or fl.count * fl.period >= f.at + f.duration for fl in quick.flows)


def test_shape_helpers_handle_missing_numbers():
    assert pound_shapes.flow_recovery_s({"outages": [{"loss": 0.8, "recovery_ms": 5.0}]}) is None
    assert pound_shapes.recoveries([]) == {}
    assert pound_shapes.fig1_check(None).verdict == core.NOT_MEASURED


def test_quick_keeps_the_loop_and_enough_messages():
    from netloop.experiment import load_experiment, quick_variant
    fig21 = pound.STUDY.part("fig21")
    full = load_experiment(str(paths.EXPERIMENTS / fig21.experiment))
    quick = fig21.quick(quick_variant(full))
    assert quick.repetitions == 1 and (quick.loop.samples, quick.loop.warmup) == (full.loop.samples, full.loop.warmup)
    for name in ("fig1", "fig3"):
        part = pound.STUDY.part(name)
        quick = part.quick(quick_variant(load_experiment(str(paths.EXPERIMENTS / part.experiment))))
        assert all(f.count >= 500 for f in quick.flows)


def _chain_run(camp, run_id, retries, given_up, queue_max, tcp):
    """A 3-node run's metadata.json and emulator stats: robot, relay, operator."""
    d = camp / "runs" / run_id
    (d / "logs").mkdir(parents=True)
    (d / "metadata.json").write_text(json.dumps({
        "format": "netloop-run/1", "records_format": "netloop-events/1", "status": "complete",
        "start_time": "2026-01-01T00:00:00+00:00", "start_unix": 1000.0, "end_time": "2026-01-01T00:00:30+00:00",
        "link": {"link": {"taps": {"robot": "t0", "relay": "t1", "operator": "t2"}}},
        "phases": {"nodes_started": 1.0, "senders_stopped": 20.0}, "host_tcp": tcp}))

    def line(wall, scale, peak):
        return {"type": "stats", "wall": wall, "nodes": [
            {"data_mpdu_tx": 400 * scale, "retries": retries * scale, "final_fail": given_up * scale,
             "queue_drop": 0, "nic": {"backlog_max": peak}} for _ in range(3)]}
    lines = [line(1000.5, 0, 0), line(1010.0, 1, queue_max), line(1021.0, 2, 1)]
    (d / "logs" / "testbed_ns3_stats.jsonl").write_text("\n".join(json.dumps(l) for l in lines) + "\n")


def test_the_chain_rows_carry_the_emulators_and_the_hosts_counters(tmp_path):
    camp = _campaign(tmp_path / "tables34", [("tcp-r0", "tcp", [_flow("laser", 40.0, 9.0)], {})])
    _chain_run(camp, "tcp-r0", retries=100, given_up=3, queue_max=40,
               tcp={"robot": {"retrans_segs": 7, "timeouts": 2}, "operator": {"retrans_segs": 1, "timeouts": 0}})
    by = _by_item(pound.compare({"tables34": camp}))
    laser = by["Tables III-IV (3 nodes) laser D, tcp"]
    assert laser.ours == 40.0 and "air: 25 % of data frames retried" in laser.note, laser.note
    assert "18 given up after the retry limit" in laser.note and "host queue up to 40 packets" in laser.note
    assert "TCP: 8 segments retransmitted, 2 RTOs" in laser.note
    assert by["Tables III-IV (3 nodes) data frames retried (no ACK), tcp"].ours == pytest.approx(25.0)
    assert by["Tables III-IV (3 nodes) TCP retransmission timeouts, all hosts, tcp"].verdict == core.ONLY
