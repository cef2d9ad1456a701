"""``make bench``'s comparison of the priority relay's mechanisms: the goals are judged from the
rows the runs give (the last priority case on wifi6 against udp's image bandwidth), and the
Markdown carries every case, the ratios to the published numbers and each goal's verdict."""
from __future__ import annotations

from netloop.transports import priority_bench as pb


def _row(label, transport, link, d, jd, laser_mdr, image_mdr, image_bw):
    row = {"label": label, "transport": transport, "link": link, "options": {},
           "laser": {"D_ms": d, "D_p99_ms": 2 * d, "std_Jd_ms": jd, "MDR": laser_mdr, "bandwidth_mbit": 0.4},
           "image": {"D_ms": 100.0, "D_p99_ms": 150.0, "std_Jd_ms": 5.0, "MDR": image_mdr,
                     "bandwidth_mbit": image_bw}}
    row["ratios"] = pb._ratios(row)
    return row


def test_goals_judge_the_case_with_every_mechanism_against_udps_image():
    rows = [_row("udp", "udp", "wifi6", 40.0, 30.0, 1.0, 0.999, 3.40),
            _row("priority as Pound built it", "priority", "wifi6", 5.0, 2.5, 1.0, 0.999, 3.40),
            _row("+ DSCP", "priority", "wifi6", 2.9, 1.2, 1.0, 0.9985, 3.36),
            _row("+ qos", "priority", "wifi6_qos", 2.0, 1.0, 1.0, 0.999, 3.40)]
    g = pb.goals_on(rows, "wifi6")
    assert g["case"] == "+ DSCP"                       # the last priority row on wifi6 itself
    assert pb.goals_on(rows, "wifi6_qos")["case"] == "+ qos" and pb.goals_on(rows, "wifi6_2hop") == {}
    assert g["D_ms"] == [2.9, 3.0, True] and g["std_Jd_ms"] == [1.2, 1.5, True]
    assert g["image_MDR"] == [0.9985, 0.998, True]
    assert g["image_bw_vs_udp"][0] == round(3.36 / 3.40, 4) and g["image_bw_vs_udp"][2] is True
    rows[2]["laser"]["D_ms"] = 3.4
    rows[2]["image"]["bandwidth_mbit"] = 3.0             # 12 % below udp's
    g = pb.goals_on(rows, "wifi6")
    assert g["D_ms"][2] is False and g["image_bw_vs_udp"][2] is False


def test_ratios_are_to_pound_and_rt_wmp():
    r = _row("x", "priority", "wifi6", 8.2, 1.0, 1.0, 1.0, 3.4)["ratios"]
    assert r["D_ms/Pound"] == 2.0 and r["std_Jd_ms/Pound"] == 0.5 and r["D_ms/RT-WMP"] == round(8.2 / 4.7, 2)


def test_markdown_has_every_case_and_the_goal_verdicts():
    rows = [_row("udp", "udp", "wifi6", 40.0, 30.0, 1.0, 0.999, 3.40),
            _row("+ DSCP", "priority", "wifi6", 3.4, 1.2, 1.0, 0.999, 3.40),
            {"label": "+ qos", "transport": "priority", "link": "wifi6_qos", "error": "no valid run", "ratios": {}}]
    res = {"two_flow": {"laser_count": 750,
                        "wifi6": {"link": "wifi6", "image_period_s": 0.15, "rows": rows, "goals": [pb.goals_on(rows, "wifi6")]}},
           "loop": {"frame_air_ms": 2.23, "rows": [
               {"label": "udp", "transport": "udp", "link": "wifi6",
                "perturbed": {"rtt_p50_ms": 5.0, "rtt_p99_ms": 20.0, "runs": 2},
                "unperturbed": {"rtt_p50_ms": 4.0, "rtt_p99_ms": 6.0}, "p99_excess_frames": 6.28,
                "step_rank": 1, "step_count": 16, "step_iae_median": 5.93, "step_iae_ci": [4.74, 7.52],
                "step_verdict": "best"}],
               "goals": [{"case": "udp", "p99_excess_frames": [6.28, 2.0, False]}]}}
    text = "\n".join(pb.markdown(res))
    assert "| udp | 40.00 |" in text and "| + DSCP | 3.40 |" in text and "| + qos | no valid run |" in text
    assert "- laser D [ms] ≤ 3: 3.4, **not met**" in text and "- laser std(J_d) [ms] ≤ 1.5: 1.2, met" in text
    assert "- RTT p99 excess [frames] ≤ 2: 6.28, **not met**" in text
    assert "| udp | 5.00 | 20.00 | 6.00 | 6.28 | 16 | 5.93 [4.74–7.52] | best |" in text
    assert pb.markdown({"skipped": "needs root"}) == ["Skipped: needs root", ""]


def test_every_case_names_a_known_transport_and_link():
    from netloop.testbed.profiles import profile_names
    from netloop.transports.catalog import transport_names
    cases = [c for _, _, cs in pb.CASES.values() for c in cs] + pb.LOOP_CASES
    assert {c.transport for c in cases} <= set(transport_names())
    assert {c.link for c in cases} - {"wifi6_qos"} <= set(profile_names())


def test_the_loop_cases_are_ranked_by_their_steps_with_intervals():
    import numpy as np
    rng = np.random.default_rng(1)

    def steps(mean):
        return [{"iae_mVs": float(v), "overshoot_pct": 10.0, "settling_s": 0.5} for v in rng.normal(mean, 0.5, 16)]

    rows = [{"label": "slow", "transport": "udp", "steps": steps(20.0), "perturbed": {"runs": 2}},
            {"label": "fast", "transport": "priority", "steps": steps(5.0), "perturbed": {"runs": 2}},
            {"label": "fast too", "transport": "priority", "steps": steps(5.0), "perturbed": {"runs": 2}},
            {"label": "broken", "transport": "tcp", "error": "no valid run"}]
    pb.rank_cases(rows)
    by = {r["label"]: r for r in rows}
    assert {by["fast"]["step_rank"], by["fast too"]["step_rank"]} == {1, 2} and by["slow"]["step_rank"] == 3
    assert by["slow"]["step_verdict"].startswith("clearly worse")
    second = by["fast"] if by["fast"]["step_rank"] == 2 else by["fast too"]
    assert second["step_verdict"] == "not a clear difference"
    assert by["broken"]["step_rank"] is None and by["broken"]["step_iae_median"] is None


def test_a_laser_alone_row_has_no_image_and_is_not_judged():
    rows = [_row("udp", "udp", "wifi6", 40.0, 30.0, 1.0, 0.999, 3.40),
            {**_row("alone", "priority", "wifi6", 2.5, 0.5, 1.0, 1.0, 0.0)}, _row("all", "priority", "wifi6", 3.1, 1.1,
                                                                                   1.0, 1.0, 3.4)]
    del rows[1]["image"]
    assert pb.goals_on(rows, "wifi6")["case"] == "all"
    text = "\n".join(pb.markdown({"two_flow": {"laser_count": 10, "wifi6": {
        "link": "wifi6", "image_period_s": 0.15, "rows": rows, "goals": []}}}))
    assert "| alone | 2.50 | 5.00 | 0.50 | 100.0 % | – | – |" in text
