"""The Jordan study's analyses on synthetic records: the knee, the CSLV, the verdicts (no run, no root)."""
import json

import pytest

from netloop.studies import jordan
from netloop.studies.core import FAILS, HOLDS, MATCH, MISS, NOT_MEASURED, ONLY


def pt(rate, mean_ms, kept=1.0, echoed=1.0, **kw):
    return dict(rate=rate, mean_ms=mean_ms, kept=kept, echoed=echoed, **kw)


def test_knee_is_where_the_top_rates_degrade():
    series = [pt(200, 0.2), pt(400, 0.21), pt(800, 0.19), pt(1600, 0.9), pt(2000, 3.0)]
    assert jordan.knee(series) == 1600
    assert jordan.sustained(series) == 800        # the study's "maximum sustainable rate"
    assert jordan.degraded_count(1600) == 3       # 1600, 1800, 2000 of the study's 200..2000 Hz


def test_knee_none_when_the_top_holds_and_noise_below_is_not_a_knee():
    series = [pt(200, 0.2), pt(400, 0.9), pt(800, 0.2), pt(1600, 0.21)]   # a spike at 400 Hz only
    assert jordan.knee(series) is None
    assert jordan.sustained(series) == 1600       # no knee: the top rate is sustained
    assert jordan.degraded_count(None) == 0


def test_knee_from_lost_echoes_or_a_rate_not_kept():
    assert jordan.knee([pt(1e3, 0.1), pt(1e4, 0.1, kept=0.3), pt(1e5, 0.05, kept=0.1)]) == 1e4
    assert jordan.knee([pt(1e3, 0.1), pt(1e4, 0.1), pt(1e5, 0.1, echoed=0.5)]) == 1e5


def test_knee_over_node_counts():
    series = [dict(n=n, mean_ms=m, kept=1.0, echoed=1.0) for n, m in ((1, 2.0), (2, 2.1), (4, 2.5), (8, 40.0))]
    assert jordan.knee(series, key="n") == 8


def test_cslv_is_n_f_s_at_the_first_degraded_point_smallest_over_rates():
    pts = []
    for rate, bad_from in ((100, 8), (200, 4), (300, 3)):
        for n in (1, 2, 3, 4, 6, 8):
            pts.append(pt(rate, 50.0 if n >= bad_from else 2.0, n=n))
    value, per_rate = jordan.cslv(pts, 4.25)
    assert per_rate == {100: pytest.approx(8 * 100 * 4.25), 200: pytest.approx(4 * 200 * 4.25),
                        300: pytest.approx(3 * 300 * 4.25)}
    assert value == pytest.approx(3400)                       # 8 x 100 Hz x 4.25 kB = 4 x 200 x 4.25
    assert jordan.predicted_max_n(value, 20, 4.25) == 39      # 40 x 20 x 4.25 = 3400 is the limit itself
    assert jordan.predicted_max_n(value, 1, 4.25) == 799
    assert jordan.cslv([pt(100, 2.0, n=1), pt(100, 2.0, n=2)], 4.25) == (None, {})
    assert jordan.predicted_max_n(None, 10, 4.25) is None


def test_spread():
    assert jordan.spread([1.0, 1.54, 1.2]) == pytest.approx(54)
    assert jordan.spread([1.0]) is None


def test_exp3_verdicts_by_ratio_and_count():
    pts = []
    for cpu, scale, knee_rate in ((1.0, 1.0, 1600), (0.75, 1.18, 1200), (0.5, 1.36, 800)):
        for rate in jordan.STUDY_RATES_EXP3:
            pts.append(pt(float(rate), (0.2 if rate < knee_rate else 5.0) * scale, cpu=cpu))
    comps, checks = jordan.compare_exp3(pts)
    by = {c.item: c for c in comps}
    assert by["Exp 3: RTT at 200 Hz, clock 75% / 100 %"].verdict == MATCH
    assert by["Exp 3: RTT at 200 Hz, clock 50% / 100 %"].ours == pytest.approx(1.36)
    assert [by[f"Exp 3: degraded rates of 200-2000 Hz, clock {c}"].ours for c in ("100%", "75%", "50%")] == [3, 5, 7]
    assert checks[0].verdict == HOLDS
    # x34 (5.0 x 1.36 / 0.2 at 800 Hz) is no doubling: the rule has an upper bound
    assert checks[1].verdict == FAILS and "×34.00" in checks[1].observed
    doubled = [pt(float(r), 0.2 * (1 + (c < 1) * min(1.0, r / 2000)), cpu=c)
               for c in (1.0, 0.5) for r in jordan.STUDY_RATES_EXP3]
    assert jordan.compare_exp3(doubled)[1][1].verdict == HOLDS     # x2.0 at 2000 Hz


def test_exp3_misses_when_the_clock_changes_nothing():
    pts = [pt(float(r), 0.2, cpu=c) for c in (1.0, 0.75, 0.5) for r in jordan.STUDY_RATES_EXP3]
    comps, checks = jordan.compare_exp3(pts)
    assert {c.verdict for c in comps if "200 Hz" in c.item} == {MISS}
    assert checks[0].verdict == FAILS and checks[1].verdict == FAILS
    empty_comps, empty_checks = jordan.compare_exp3([])
    assert {c.verdict for c in empty_comps} == {NOT_MEASURED}
    assert {c.verdict for c in empty_checks} == {NOT_MEASURED}


def test_exp5_shapes():
    sensor = [pt(float(r), 1.0 * (1 + (1 - c)), cpu=c) for c in (1.0, 0.5) for r in (400, 2000)]
    video = [pt(20.0, 55.0 * (1 + 0.02 * (1 - c)), cpu=c) for c in (1.0, 0.5)] + \
            [pt(40.0, 4000.0, cpu=c) for c in (1.0, 0.5)]
    comps, checks = jordan.compare_exp5(sensor, video)
    by = {c.item.split(",")[0] + c.item.split(",")[-1]: c for c in comps}
    spreads = [c for c in comps if "spread" in c.item]
    assert spreads[0].ours == pytest.approx(50) and spreads[0].verdict == MATCH
    assert spreads[1].ours == pytest.approx(1.0) and spreads[1].verdict == MATCH
    assert [c.verdict for c in checks] == [HOLDS, HOLDS]
    assert any(c.unit == "ms" and c.ours == pytest.approx(55) and c.verdict == MATCH for c in comps)
    assert by


def test_exp4_prints_the_echo_rate_at_which_each_link_saturates_and_what_a_message_cost():
    cost = {"frames_per_message": 1.0, "segments_per_message": 0.25, "frames_per_transmission": 2.0}
    pts = [pt(float(r), 0.5 if r < 5000 else 9.0, link="wifi_n_pi3", cost=cost) for r in (1000, 2000, 5000, 10000)]
    pts += [pt(float(r), 0.2, link="ethernet") for r in (1000, 2000, 5000, 10000)]
    comps, _ = jordan.compare_exp4(pts)
    by = {c.item: c for c in comps}
    wifi = by["Exp 4: 11 B over wifi_n_pi3, echo rate at which it saturates"]
    assert wifi.ours == 5000 and wifi.verdict == ONLY
    assert "at 5000 Hz: 1.00 data frames per message, 0.25 TCP segments per message" in wifi.note
    eth = by["Exp 4: 11 B over ethernet, echo rate at which it saturates"]
    assert eth.ours is None and eth.verdict == ONLY and "none up to 10000 Hz" in eth.note


def test_exp7_says_whether_the_message_rate_or_the_volume_bound():
    pts = [pt(float(r), 50.0 if n * r >= 800 else 2.0, n=n, payload=4250, link="w")
           for r in (100, 200, 300) for n in (1, 2, 4, 8)]
    saturates = [pt(float(r), 9.0 if r >= 1500 else 0.5, link="w") for r in (500, 1000, 1500, 2000)]
    comps, _ = jordan.compare_exp7(pts, saturates)
    rate = next(c for c in comps if c.item.startswith("Exp 7: message rate"))
    assert rate.ours == pytest.approx(800) and "bound by the message rate" in rate.note   # 1500 <= 2 x 800
    comps, _ = jordan.compare_exp7(pts, [pt(float(r), 0.5, link="w") for r in (500, 5000)])
    assert "bound by the byte volume" in next(c for c in comps if c.item.startswith("Exp 7: CSLV")).note


def test_exp7_rows_are_netloop_only():
    pts = [pt(float(r), 50.0 if n * r >= 800 else 2.0, n=n, payload=4250) for r in (100, 200, 300) for n in (1, 2, 4, 8)]
    comps, checks = jordan.compare_exp7(pts)
    assert {c.verdict for c in comps} == {ONLY}
    cslv_row = next(c for c in comps if c.item.startswith("Exp 7: CSLV"))
    assert cslv_row.ours == pytest.approx(min(8 * 100, 4 * 200, 4 * 300) * 4.25)
    assert checks[0].verdict == HOLDS


def test_compare_reads_a_campaign(tmp_path):
    """points() reads analysis.json and metadata.json as a campaign writes them; a lagging run is left out."""
    camp = tmp_path / "c"
    runs = []
    for i, (period, sent, mean, valid) in enumerate(((0.01, 400, 0.2, True), (0.001, 4000, 0.21, True),
                                                     (0.0001, 4000, 0.1, True), (0.00005, 100, 9.0, False))):
        rid = f"tcp_nodelay__period={period}-r0"
        (camp / "runs" / rid).mkdir(parents=True)
        (camp / "runs" / rid / "metadata.json").write_text(json.dumps(
            {"experiment": {"duration": 5, "flows": [{"start_delay": 1.0}]},
             "link_health": {"valid": valid}}))
        runs.append({"run_id": rid, "transport": "tcp_nodelay",
                     "cell": {"settings": {"flows[0].period": period}},
                     "flows": [{"flow": "echo", "entry": "echo", "period_s": period, "payload_bytes": 11,
                                "sent": sent, "received": sent, "delay": {"n": sent, "mean_ms": mean, "p50_ms": mean}}]})
    (camp / "analysis.json").write_text(json.dumps(runs))
    pts, notes = jordan.points(camp)
    assert len(pts) == 3 and notes and "1 of 4 runs left out" in notes[0]
    result = jordan.compare({"exp1": camp})
    knee_row = next(c for c in result.comparisons if c.item.startswith("Exp 1: knee"))
    assert knee_row.ours == 10000 and knee_row.verdict == MATCH    # 4000 of 40000 sent at 10 kHz: not kept
    assert {c.verdict for c in result.comparisons if c.item.startswith("Exp 7")} == {NOT_MEASURED}
    assert "Exp 1" in result.markdown()
