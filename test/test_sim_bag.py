"""`netloop bag lidar`: a real LaserScan bag from the simulator, without a ROS master."""
from __future__ import annotations

import math

import numpy as np
import pytest

rosbag = pytest.importorskip("rosbag")



def _parser():
    from netloop import cli
    return cli.build_parser()


def test_bag_lidar_is_a_netloop_command():
    from netloop import cli
    parser = cli.build_parser()
    args = parser.parse_args(["bag", "lidar", "--world", "arena", "--out", "x.bag"])
    assert args.func.__name__ == "_cmd_lidar" and args.rate == 20.0 and args.seconds == 30.0
    assert parser.parse_args(["bag", "synthetic", "--out", "y.bag"]).bag_command == "synthetic"


def test_bag_lidar_writes_laserscans_that_rosbag_reads_back(tmp_path, capsys):
    out = tmp_path / "sub" / "tunnel.bag"
    args = _parser().parse_args(["bag", "lidar", "--world", "tunnel", "--out", str(out), "--seconds", "6",
                                 "--start", "1700000000", "--with-odom"])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "120 scans (1497 bytes each) at 20 Hz" in printed and "0 wall contacts" in printed
    with rosbag.Bag(str(out)) as bag:
        info = bag.get_type_and_topic_info().topics
        assert info["/scan"].msg_type == "sensor_msgs/LaserScan" and info["/scan"].message_count == 120
        assert {"/odom", "/tf", "/tf_static"} <= set(info)
        scans = [(m, t) for _, m, t in bag.read_messages(topics=["/scan"])]
        odom = [m for _, m, _ in bag.read_messages(topics=["/odom"])]
        static = [m for _, m, _ in bag.read_messages(topics=["/tf_static"])]
    first, t_first = scans[0]
    assert len(first.ranges) == 360 and first.header.frame_id == "laser"
    assert first.angle_min == pytest.approx(-math.pi, abs=1e-5)
    assert first.angle_increment == pytest.approx(2 * math.pi / 360, abs=1e-6)
    assert first.range_min == pytest.approx(0.15) and first.range_max == pytest.approx(12.0)
    assert first.header.stamp.to_sec() == pytest.approx(1700000000.0) and t_first == first.header.stamp
    stamps = np.array([m.header.stamp.to_sec() for m, _ in scans])
    assert np.allclose(np.diff(stamps), 0.05, atol=1e-6)            # 20 Hz, simulated time
    assert all(len(m.ranges) == 360 for m, _ in scans)
    # at the start (origin of the tunnel, facing +x) the walls are 0.6 m to each side
    r = np.array(first.ranges)
    assert r[90] == pytest.approx(0.6, abs=0.01) and r[270] == pytest.approx(0.6, abs=0.01)
    assert odom[-1].pose.pose.position.x > 1.0                      # it drove down the tunnel
    assert {t.child_frame_id for t in static[0].transforms} == {"laser_mount", "laser"}


def test_bag_lidar_scan_only_by_default_and_bad_world(tmp_path, capsys):
    out = tmp_path / "arena.bag"
    args = _parser().parse_args(["bag", "lidar", "--world", "arena", "--out", str(out), "--seconds", "2",
                                 "--rate", "10"])
    assert args.func(args) == 0
    with rosbag.Bag(str(out)) as bag:
        assert set(bag.get_type_and_topic_info().topics) == {"/scan"}
        assert bag.get_message_count() == 20
    args = _parser().parse_args(["bag", "lidar", "--world", "nowhere", "--out", str(tmp_path / "x.bag")])
    assert args.func(args) == 2
    assert "unknown world 'nowhere'" in capsys.readouterr().err
    assert not (tmp_path / "x.bag").exists()
