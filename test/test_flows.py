"""Perturbing flows end to end on loopback: generic, camera (real JPEG) and LIDAR bag replay,
over single and mixed transports, with the Pound-layout measurements."""
from __future__ import annotations

import csv

import cv2
import numpy as np
import pytest
from campaign_helpers import recorded_flows
import rosbag

from netloop import bags
from netloop.analysis.flow_run import analyse_flow
from netloop.analysis.records import read_events
from netloop.analysis.report import write_report
from netloop.experiment import validate_experiment
from netloop.runner import campaign_dir_for, run_experiment
from netloop.schema import ConfigError

pytestmark = pytest.mark.integration

FLOWS = [
    {"name": "laser", "kind": "generic", "size_bytes": 1024, "period": 0.02, "count": 60},
    {"name": "image", "kind": "camera", "width": 320, "height": 240, "period": 0.1, "count": 12},
    {"name": "lidar", "kind": "lidar_bag", "period": 0.05, "count": 30},
    {"name": "wobbly", "kind": "generic", "size_bytes": 256, "period": 0.02, "send_jitter": 0.004, "count": 150},
]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    cfg = validate_experiment({"transport": ["tcp_nodelay", "udp/tcp_nodelay"], "loop": {"type": "none"},
                               "flows": FLOWS}, name="flows")
    out = campaign_dir_for(cfg, tmp_path_factory.mktemp("results"))
    run_experiment(cfg, out, log=lambda _: None)
    return cfg, out


def spread_ms(periods_ms) -> float:
    """How much periods vary, robustly: the interquartile range over 1.349 (the standard
    deviation of a normal distribution with those quartiles). Unlike the standard deviation
    it is not made by a few late wake-ups of a busy machine: at a load average of 9 the exact
    20 ms timer's periods had standard deviations of 4 and (another run) 30 ms, against the
    bound of 1 ms; this spread was 1.0 ms."""
    q1, q3 = np.percentile(np.asarray(periods_ms, float), [25, 75])
    return float((q3 - q1) / 1.349)


def source_periods_ms(run_dir, flow) -> np.ndarray:
    """The sender's own periods, from its publish times (a bag replay: its packets on the tap)."""
    tx = read_events(run_dir / "records" / f"flow_{flow.name}_tx.csv")
    sent = tx.recv_ns if flow.kind in ("lidar_bag", "topic") else tx.stamp_ns
    return np.diff(np.sort(np.asarray(sent, float))) / 1e6


def test_every_flow_delivered_and_measured(campaign):
    cfg, out = campaign
    for run in ("tcp_nodelay-r0", "udp+tcp_nodelay-r0"):
        flows = recorded_flows(out / "runs" / run)
        spread = {}
        for flow in flows:
            f = analyse_flow(out / "runs" / run, flow)
            assert f["ok"], f["problems"]
            expected = flow.count
            assert f["sent"] >= expected - 2 and f["MDR"] >= 0.95, (run, flow.name, f["sent"], f["MDR"])
            assert f["period"]["mean_ms"] == pytest.approx(flow.period * 1e3, rel=0.1)
            # the sender's own period
            assert f["source_period"]["mean_ms"] == pytest.approx(flow.period * 1e3, rel=0.1)
            spread[flow.name] = (spread_ms(source_periods_ms(out / "runs" / run, flow)), spread_ms(f["periods_ms"]))
            assert spread[flow.name][0] < 0.5 * flow.period * 1e3, (run, flow.name, spread[flow.name])
            assert 0 <= f["delay"]["p50_ms"] < 20 or flow.kind == "lidar_bag"
        laser = analyse_flow(out / "runs" / run, flows[0])
        assert laser["mean_bytes"] == 1024
        lidar = analyse_flow(out / "runs" / run, flows[2])
        assert lidar["mean_bytes"] == 4249
        # send_jitter: each send time off its grid by N(0, 4 ms), so the source's period varies by
        # ~sqrt(2) x 4 ms (the exact timer of the laser by far less), and the destination sees it;
        # the name's seed (crc32 of "wobbly") is above 2^31, beyond an XML-RPC int unless reduced
        # (spreads measured at load averages of 8-9: the wobbly's 5.1-6.1 ms, the laser's 0.3-1.0 ms,
        # so the laser's is bounded against the wobbly's rather than by 1 ms)
        assert 4.0 < spread["wobbly"][0] < 7.5, spread
        assert spread["laser"][0] < 0.35 * spread["wobbly"][0], spread
        assert spread["wobbly"][1] > 0.8 * spread["wobbly"][0], spread


def test_mixed_transport_puts_small_flows_on_udp_and_images_on_tcp(campaign):
    import json
    _, out = campaign
    neg = json.loads((out / "runs" / "udp+tcp_nodelay-r0" / "metadata.json").read_text())["negotiated_transport"]
    assert neg == {"/flows/laser": "UDPROS", "/flows/image": "TCPROS+NODELAY", "/flows/lidar": "UDPROS",
                   "/flows/wobbly": "UDPROS"}
    neg = json.loads((out / "runs" / "tcp_nodelay-r0" / "metadata.json").read_text())["negotiated_transport"]
    assert set(neg.values()) == {"TCPROS+NODELAY"}


def test_camera_flow_carries_real_jpeg(campaign):
    _, out = campaign
    frames = sorted((out / "runs" / "tcp_nodelay-r0" / "flows" / "image").glob("*.jpg"))
    assert len(frames) == 30
    img = cv2.imdecode(np.frombuffer(frames[0].read_bytes(), np.uint8), cv2.IMREAD_COLOR)
    assert img.shape == (240, 320, 3)
    with open(out / "runs" / "tcp_nodelay-r0" / "records" / "flow_image_rx.csv") as f:
        sizes = {int(r["bytes"]) for r in csv.DictReader(f)}
    assert min(sizes) > 5000  # CompressedImage with the JPEG bytes inside


def test_report_has_pound_tables_matching_csv(campaign):
    cfg, out = campaign
    text = write_report(out).with_name("report.md").read_text()
    for flow in ("laser", "image", "lidar"):
        assert f"## Flow `{flow}`" in text
        assert (out / "figures" / f"flow_{flow}_delay.png").stat().st_size > 5000
        assert (out / "figures" / f"flow_{flow}_period.png").stat().st_size > 5000
        with open(out / f"flow_{flow}.csv") as f:
            rows = {r["transport"]: r for r in csv.DictReader(f)}
        assert set(rows) == {"tcp_nodelay", "udp/tcp_nodelay"}
        spec = next(f for f in recorded_flows(out / "runs" / "tcp_nodelay-r0") if f.name == flow)
        a = analyse_flow(out / "runs" / "tcp_nodelay-r0", spec)
        assert float(rows["tcp_nodelay"]["mean D [ms]"]) == pytest.approx(a["delay"]["mean_ms"])
        assert float(rows["tcp_nodelay"]["MDR [%]"]) == pytest.approx(100 * a["MDR"])


def test_bag_without_the_topic_is_refused(tmp_path):
    path = bags.synthetic_lidar_bag(tmp_path / "l.bag", 3, topic="/base_scan")
    with pytest.raises(ConfigError, match=r"flows\[0\]\.bag_topic: '/scan' is not in .*the bag has: /base_scan"):
        validate_experiment({"flows": [{"name": "l", "kind": "lidar_bag", "bag": str(path)}]}, name="x")


def test_synthetic_lidar_bag(tmp_path):
    path = bags.synthetic_lidar_bag(tmp_path / "l.bag", 40)
    with rosbag.Bag(str(path)) as bag:
        info = bag.get_type_and_topic_info().topics["/scan"]
        assert info.msg_type == "sensor_msgs/LaserScan" and info.message_count == 40
        assert info.frequency == pytest.approx(20.0, rel=0.01)
        scans = [m for _, m, _ in bag.read_messages()]
    assert len(scans[0].ranges) == bags.BEAMS
    r = np.array(scans[10].ranges)
    assert np.isfinite(r).mean() > 0.9 and 0.5 < np.median(r[np.isfinite(r)]) < 10


@pytest.mark.parametrize("flows,extra,key,words", [
    ([{"name": "a", "from": "robot", "to": "robot"}], {}, "flows[0].to", "must cross the link"),
    ([{"name": "a", "to": "mars"}], {}, "flows[0].to", "unknown host 'mars'"),
    ([{"name": "a", "kind": "radio"}], {}, "flows[0].kind", "allowed: generic, camera, lidar_bag"),
    ([{"name": "a"}, {"name": "a"}], {}, "flows[1].name", "must be unique"),
    ([{"name": "a", "kind": "lidar_bag", "bag": "/nonexistent.bag"}], {}, "flows[0].bag", "not found"),
    ([{"name": "a", "count": 0}], {"loop": {"type": "none"}}, "duration", "required when loop.type is none"),
    ([{"name": "a", "transport": "pigeon"}], {}, "flows[0].transport", "allowed: same, tcp"),
    ([{"name": "a", "period": 0}], {}, "flows[0].period", "> 0"),
    ([{"name": "a", "kind": "lidar_bag", "send_jitter": 0.001}], {}, "flows[0].send_jitter", "is sent as its source"),
    ([{"name": "a", "period": 0.02, "send_jitter": 0.01}], {}, "flows[0].send_jitter", "more than a third"),
])
def test_bad_flows_refused(flows, extra, key, words):
    with pytest.raises(ConfigError) as err:
        validate_experiment({"flows": flows, **extra}, name="x")
    assert err.value.key == key and words in str(err.value)
