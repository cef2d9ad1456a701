"""Link profiles: loading, overrides and refusal of bad input (no root needed)."""
from __future__ import annotations

import dataclasses
import json
import time

from pathlib import Path

import pytest

from netloop.cli_options import parse_link_params
from netloop.schema import ConfigError
from netloop.testbed import Testbed, TestbedError, load_profile, profile_names
from netloop.testbed.links import ShapedLink, StatsFile


def test_every_profile_file_is_valid():
    names = profile_names()
    assert {"loopback", "ethernet", "wifi6", "wifi6_2hop", "shaped"} <= set(names)
    for name in names:
        prof = load_profile(name)
        assert prof.name == name and prof.type
        assert Testbed(prof).hosts[0] == "robot"


def test_hosts_per_profile():
    assert Testbed(load_profile("loopback")).hosts == ["robot", "operator"]
    assert Testbed(load_profile("ethernet")).hosts == ["robot", "operator"]
    assert Testbed(load_profile("wifi6")).hosts == ["robot", "operator"]
    assert Testbed(load_profile("wifi6_2hop")).hosts == ["robot", "relay", "operator"]
    for name in ("wifi6_ap", "wifi_g54", "wifi_n_mcs7", "wifi_n_mcs7_ap"):  # an AP is no host
        assert Testbed(load_profile(name)).hosts == ["robot", "operator"]
    # only ns-3's Wi-Fi has a MAC queue whose per-station statistics holprobe reads
    assert [Testbed(load_profile(n)).station_queue_stats
            for n in ("loopback", "ethernet", "shaped", "wifi6", "wifi6_ap")] == [False, False, False, True, True]


def test_wifi_standard_mode_and_rate_reach_ns3():
    """What a profile says is what netloop_wifi_link is told (defaults: ad-hoc 802.11a; the
    NIC's flow control in the hosts' namespaces)."""
    from netloop.testbed.link_base import LinkContext
    from netloop.testbed.links import Ns3WifiLink

    def args(name, keys=("--standard", "--mode", "--manager", "--rate")):
        link = Ns3WifiLink(load_profile(name))
        link.taps, link.stats_path = {"robot": "r", "operator": "o"}, "s"
        link.ctx = LinkContext("x", {"robot": "nlx-robot", "operator": "nlx-operator"}, None, Path("."))
        return [a for a in link.command() if a.split("=")[0] in keys]

    assert args("wifi6") == ["--standard=80211a", "--mode=adhoc", "--manager=constant", "--rate=OfdmRate6Mbps"]
    assert args("wifi6_ap") == ["--standard=80211a", "--mode=ap", "--manager=constant", "--rate=OfdmRate6Mbps"]
    assert args("wifi_g54")[0] == "--standard=80211g" and args("wifi_g54")[-1] == "--rate=ErpOfdmRate54Mbps"
    assert args("wifi_n_mcs7_ap") == ["--standard=80211n", "--mode=ap", "--manager=constant", "--rate=HtMcs7"]
    assert args("wifi6", ("--nic-netns", "--nic-ring-frames", "--nic-limit")) == [
        "--nic-netns=/run/netns/nlx-robot,/run/netns/nlx-operator", "--nic-ring-frames=2", "--nic-limit=1000"]
    assert Ns3WifiLink(load_profile("wifi_n_mcs7_ap")).positions() == {
        "robot": 0, "access_point": 10, "operator": 20}


def test_unknown_profile_lists_allowed_ones():
    with pytest.raises(ConfigError) as err:
        load_profile("wifi7")
    msg = str(err.value)
    assert "wifi7" in msg and "did you mean 'wifi6'" in msg
    for name in profile_names():
        assert name in msg


@pytest.mark.parametrize("overrides, key, words", [
    ({"delay_ms": -5}, "delay_ms", [">= 0"]),
    ({"rate_mbit": 0}, "rate_mbit", ["> 0"]),
    ({"rate_mbit": "fast"}, "rate_mbit", ["expected a number"]),
    ({"loss": 5}, "loss", ["< 1"]),
    ({"jitter_dist": "pareto"}, "jitter_dist", ["uniform", "normal"]),
    ({"delay": 20}, "delay", ["did you mean 'delay_ms'", "allowed keys"]),
    ({"to_robot.delay_ms": -1}, "to_robot.delay_ms", [">= 0"]),
    ({"type": "ethernet"}, "type", ["cannot be overridden"]),
])
def test_bad_overrides_name_key_and_allowed_values(overrides, key, words):
    with pytest.raises(ConfigError) as err:
        load_profile("shaped", overrides)
    assert err.value.key == key
    for w in words:
        assert w in str(err.value)


def test_wifi_checks():
    with pytest.raises(ConfigError) as err:
        load_profile("wifi6_2hop", {"max_range_m": 50})
    assert err.value.key == "max_range_m" and "< 40" in str(err.value)
    with pytest.raises(ConfigError) as err:
        load_profile("wifi6", {"phy_rate": "OfdmRate7Mbps"})
    assert "OfdmRate6Mbps" in str(err.value)
    with pytest.raises(ConfigError):
        load_profile("wifi6", {"mtu": 9000})


def test_overrides_apply_and_directions_inherit():
    prof = load_profile("shaped", {"delay_ms": 20, "to_robot.delay_ms": 5, "to_operator.loss": 0.1})
    d = ShapedLink(prof).directions()
    assert d["to_operator"]["delay_ms"] == 20 and d["to_robot"]["delay_ms"] == 5
    assert d["to_operator"]["loss"] == 0.1 and d["to_robot"]["loss"] == 0.0
    assert parse_link_params(["delay_ms=20", "reorder=true", "jitter_dist=normal"]) == {
        "delay_ms": 20, "reorder": True, "jitter_dist": "normal"}
    with pytest.raises(ConfigError):
        parse_link_params(["delay_ms"])


def test_testbed_validates_dicts_and_hosts():
    with pytest.raises(ConfigError) as err:
        Testbed({"type": "shaped", "rate_mbit": 0})
    assert err.value.key == "rate_mbit"
    with pytest.raises(ConfigError) as err:
        Testbed({"type": "satellite"})
    assert "allowed: loopback, ethernet, ns3_wifi, shaped" in str(err.value)
    tb = Testbed(load_profile("ethernet"))
    with pytest.raises(ConfigError) as err:
        tb.address("relay")
    assert "allowed: robot, operator" in str(err.value)
    with pytest.raises(TestbedError, match="not up"):
        tb.exec_prefix("robot")


def test_loopback_needs_nothing():
    with Testbed(load_profile("loopback")) as tb:
        assert tb.hosts == ["robot", "operator"]
        assert tb.exec_prefix("robot") == [] and tb.exec_prefix("operator") == []
        assert tb.address("operator") == "127.0.0.1"
        assert tb.health()["valid"] is True
        meta = tb.metadata()
        assert meta["profile"] == "loopback" and meta["hosts"]["robot"]["address"] == "127.0.0.1"
    tb.down()  # twice is fine


def test_health_from_stats_lines(tmp_path):
    """Lag accounting without running an emulator: late fraction against the allowance."""
    link = ShapedLink(load_profile("shaped"))
    link.stats = StatsFile(tmp_path / "s.jsonl")
    now = time.time()

    def line(wall, lag_max, probes, late):
        return json.dumps({"type": "stats", "wall": wall, "lag_max_ms": lag_max, "lag_mean_ms": 0.1,
                           "lag_max_total_ms": lag_max, "lag_mean_total_ms": 0.1, "probes": probes,
                           "late_probes": late, "cpu_s": 0.1}) + "\n"

    (tmp_path / "s.jsonl").write_text(line(now - 2, 7.0, 10000, 1) + line(now - 1, 1.0, 20000, 1))
    h = link.health()
    assert h["valid"] and h["max_lag_ms"] == 1.0 and h["late_fraction"] == pytest.approx(5e-5)
    link.profile = dataclasses.replace(link.profile, lag_late_fraction=0.0)  # strict: any late sample
    h = link.health()
    assert not h["valid"] and "behind real time" in h["reason"]
    h = link.health(since=now - 1.5)  # only the last interval: no late sample in it
    assert h["valid"] and h["max_lag_ms"] == 1.0 and h["late_samples"] == 0
    with open(tmp_path / "s.jsonl", "a") as f:
        f.write(line(now, 40.0, 30000, 100))
    link.profile = dataclasses.replace(link.profile, lag_late_fraction=0.001)
    h = link.health()  # 100 of 30000 samples late > 0.1 %
    assert not h["valid"] and h["max_lag_ms"] == 40.0 and "0.333%" in h["reason"]


def test_health_window_counts_the_stalls_inside_it(tmp_path):
    """A stall (consecutive late samples, with the time it began) counts only when it overlaps
    the window asked about; one outside is listed, not counted; one still under way (late
    samples not yet listed as a stall) always counts."""
    link = ShapedLink(load_profile("shaped"))
    link.stats = StatsFile(tmp_path / "s.jsonl")
    t = time.time() - 10

    def line(wall, probes, late, stalls):
        return json.dumps({"type": "stats", "wall": wall, "lag_max_ms": 30.0, "lag_mean_ms": 0.1,
                           "lag_max_total_ms": 30.0, "lag_mean_total_ms": 0.1, "probes": probes,
                           "late_probes": late, "cpu_s": 0.1, "stalls": stalls}) + "\n"

    # 1000 samples a second; a 30 ms stall (25 late samples) beginning at t + 2.5
    (tmp_path / "s.jsonl").write_text(line(t + 1, 1000, 0, []) + line(t + 2, 2000, 0, [])
                                      + line(t + 3, 3000, 25, [[t + 2.5, 30.0, 25]]))
    whole = link.health()
    assert not whole["valid"] and whole["late_samples"] == 25 and "1 stall(s)" in whole["reason"]
    assert whole["stalls"] == [{"began": t + 2.5, "max_ms": 30.0, "late_samples": 25, "counted": True}]
    before = link.health(since=t, until=t + 2.4)   # the run's messages were all delivered by t + 2.4
    assert before["valid"], before
    assert before["late_samples"] == 0 and before["stalls"][0]["counted"] is False
    assert before["samples"] == 3000               # the three intervals that overlap the window
    during = link.health(since=t + 2.0, until=t + 2.51)
    assert not during["valid"] and during["late_samples"] == 25
    after = link.health(since=t + 2.52, until=t + 3)  # began before, still late then: overlaps
    assert not after["valid"]
    assert link.health(since=t + 2.54, until=t + 3)["valid"]   # over by then
    # a stall under way: its samples are in the counter but in no list yet
    with open(tmp_path / "s.jsonl", "a") as f:
        f.write(line(t + 4, 4000, 40, []))
    h = link.health(since=t, until=t + 2.4)
    assert not h["valid"] and h["late_samples"] == 15


def test_a_profile_extends_another_with_its_own_keys_on_top():
    base, shared = load_profile("wifi6"), load_profile("wifi6_shared")
    assert shared.name == "wifi6_shared" and "background pair" in shared.description
    assert (shared.background_pairs, shared.background_mbit) == (1, 0.5)
    base, shared = base.to_dict(), shared.to_dict()
    differ = {k for k in base if base[k] != shared[k]}
    assert differ == {"name", "description", "background_pairs", "background_mbit"}


@pytest.mark.parametrize("files, key, words", [
    ({"a": "extends: nowhere\n"}, "extends", ["nowhere", "allowed"]),
    ({"a": "extends: b\n", "b": "extends: a\n"}, "extends", ["cycle", "a -> b -> a"]),
    ({"a": "extends: wifi6\ntype: ethernet\n"}, "type", ["cannot change its type"]),
    ({"a": "extends: wifi6\nbackground_pairs: 1\n"}, "background_mbit", ["> 0 Mbit/s"]),
])
def test_bad_extends_is_refused_naming_the_key(tmp_path, monkeypatch, files, key, words):
    from netloop.testbed import profiles
    (tmp_path / "wifi6.yaml").write_text((profiles.LINKS_DIR / "wifi6.yaml").read_text())
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(text)
    monkeypatch.setattr(profiles, "LINKS_DIR", tmp_path)
    with pytest.raises(ConfigError) as err:
        load_profile("a")
    assert err.value.key == key
    for w in words:
        assert w in str(err.value), str(err.value)


def test_the_background_share_comes_off_the_shaper_and_the_capacity():
    """One pair offering 0.5 Mbit/s of 1000-byte frames holds the air as 0.5 x (1000 + 14 +
    161) / 1000 = 0.5875 Mbit/s of the hosts' frames would: a fixed hosts' htb (the model before
    the NIC's flow control, still a profile's choice) gets 0.9 x what is left, the priority
    relay paces below what is left; too much background for such a shaper is refused."""
    from netloop.testbed.profiles import background_air_mbit, link_capacity_mbit, shaper_rate_kbit
    fixed = {"qdisc_rate_fraction": 0.9, "nic_ring_frames": 0}
    idle, shared = load_profile("wifi6", fixed), load_profile("wifi6_shared", fixed)
    assert background_air_mbit(idle) == 0 and shaper_rate_kbit(idle) == 5400 and link_capacity_mbit(idle) == 6.0
    assert background_air_mbit(shared) == pytest.approx(0.5875)
    assert shaper_rate_kbit(shared) == round(0.9 * (6 - 0.5875) * 1000)
    assert link_capacity_mbit(shared) == pytest.approx(6 - 0.5875)
    lossy = load_profile("wifi6", {"frame_error_rate": 0.1, **fixed})
    assert shaper_rate_kbit(lossy) == 4860 and link_capacity_mbit(lossy) == pytest.approx(5.4)
    with pytest.raises(ConfigError) as err:
        load_profile("wifi6", {"background_pairs": 4, "background_mbit": 2, **fixed})
    assert "background_mbit" in str(err.value) and "nothing is left" in str(err.value)
