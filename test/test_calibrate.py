"""netloop calibrate: the fidelity table from a campaign's analysis.json (no run, no root)."""
from __future__ import annotations

import json

from netloop import calibrate, cli


def _flow(name, d, std_jd, mdr=1.0):
    return {"flow": name, "MDR": mdr, "period": {"mean_ms": 20.0, "std_ms": std_jd},
            "delay": {"n": 100, "mean_ms": d, "std_ms": 1.0}}


def _campaign(tmp_path, runs):
    """runs: (run_id, transport, valid, laser (D, std J_d), image (D, std J_d))"""
    analysis = []
    for run_id, transport, valid, laser, image in runs:
        d = tmp_path / "runs" / run_id
        d.mkdir(parents=True)
        (d / "metadata.json").write_text(json.dumps({"link_health": {"valid": valid}}))
        analysis.append({"run_id": run_id, "transport": transport,
                         "flows": [_flow("laser", *laser), _flow("image", *image)]})
    (tmp_path / "analysis.json").write_text(json.dumps(analysis))
    return tmp_path


def test_verdicts_follow_the_issue_targets():
    assert calibrate.verdict_ms(18.6, 37.2) == "ok"          # 2.0x
    assert calibrate.verdict_ms(18.6, 37.3) == "off"
    assert calibrate.verdict_ms(18.6, 9.3) == "ok"           # 0.5x
    assert calibrate.verdict_ms(4.1, 7.1) == "ok"            # below 6 ms: within 3 ms
    assert calibrate.verdict_ms(4.1, 7.2) == "off"
    assert calibrate.verdict_mdr(99.3, 100.0) == "ok"
    assert calibrate.verdict_mdr(99.3, 97.2) == "off"
    assert calibrate.verdict_ms(6.0, None) == "missing"


def test_table_uses_valid_runs_only_takes_the_median_and_ranks_the_methods(tmp_path, capsys):
    res = _campaign(tmp_path, [
        ("tcp-r0", "tcp", True, (20.0, 14.0), (130.0, 7.0)),
        ("tcp-r1", "tcp", True, (30.0, 16.0), (134.0, 8.0)),
        ("tcp-r2", "tcp", True, (22.0, 15.0), (132.0, 7.5)),
        ("tcp_nodelay-r0", "tcp_nodelay", True, (50.0, 40.0), (130.0, 7.0)),   # 8x: off
        ("udp-r0", "udp", True, (40.0, 35.0), (105.0, 2.0)),
        ("udp-r1", "udp", False, (400.0, 350.0), (999.0, 99.0)),   # lagged: left out
    ])
    ours, counts = calibrate.read_campaign(res)
    assert counts["runs"] == 6 and counts["invalid"] == 1 and counts["invalid_runs"] == ["udp-r1"]
    assert ours["tcp"]["laser"]["D"] == 22.0 and ours["tcp"]["image"]["std_Jd"] == 7.5
    assert ours["udp"]["laser"]["D"] == 40.0
    result = calibrate.fidelity(ours)
    by = {(r["flow"], r["method"], r["metric"]): r for r in result["rows"]}
    assert by[("laser", "TCP", "D")]["verdict"] == "ok"
    assert abs(by[("laser", "TCP", "D")]["ratio"] - 22.0 / 18.6) < 1e-9
    assert by[("laser", "NOD", "D")]["verdict"] == "off"
    assert by[("laser", "Pound", "D")]["verdict"] == "missing"
    rk = result["ranking"]
    assert rk["published_order"] == ["NOD", "TCP", "UDP"]
    assert rk["netloop_order"] == ["TCP", "UDP", "NOD"]
    # printed by the command, without running anything when --results is given
    assert cli.main(["calibrate", "wifi6", "--results", str(res)]) == 0
    out = capsys.readouterr().out
    assert "left out for ns-3 lag: 1 (udp-r1)" in out
    assert "| laser | NOD (tcp_nodelay) | 6 → 50.0 (8.33×) |" in out and "off: D, std(J_d)" in out
