"""Link outages (experiment key ``faults``; the Pound paper's Table V): validation, the
testbed's outage switch on real namespaces and links, and a real run with a 2 s outage on
``ethernet`` whose recovery is measured per transport."""
from __future__ import annotations

import os
import subprocess

import pytest
from campaign_helpers import campaign_runs

from netloop.analysis.report import analyse_run, write_report
from netloop.experiment import load_experiment, validate_experiment
from netloop import paths
from netloop.rundir import read_metadata
from netloop.schema import ConfigError
from netloop.testbed import Testbed, load_profile
from netloop.testbed import bench

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: outages are made on namespaces' interfaces")

RLC = {"type": "rlc", "plant": {"R": 1.0, "L": 0.1, "C": 0.1, "period": 0.02}, "samples": 300, "warmup": 0.5,
       "placement": {"plant": "robot", "controller": "operator"}}
LASER = {"name": "laser", "kind": "generic", "from": "robot", "to": "operator", "size_bytes": 1000,
         "period": 0.02, "count": 0}


@pytest.mark.parametrize("faults, link, key, words", [
    ([{"at": 1, "duration": 10}], "ethernet", "faults[0]", "after the run (about 6.5 s)"),
    ([{"at": 1, "duration": 1, "repeat": 3}], "ethernet", "faults[0].every", "longer than the duration"),
    ([{"at": 1, "duration": 1, "repeat": 2, "every": 0.5}], "ethernet", "faults[0].every", "longer than"),
    ([{"at": 1, "duration": 1, "hosts": ["moon"]}], "ethernet", "faults[0].hosts", "allowed: robot, operator"),
    ([{"at": 1, "duration": 0}], "ethernet", "faults[0].duration", "> 0"),
    ([{"at": -1, "duration": 1}], "ethernet", "faults[0].at", ">= 0"),
    ([{"at": 1, "duration": 1}], "loopback", "faults", "not on link loopback"),
    ([{"at": 1, "duration": 1, "lenght": 2}], "ethernet", "faults[0].lenght", "allowed keys"),
])
def test_bad_faults_are_refused_naming_the_key(faults, link, key, words):
    with pytest.raises(ConfigError) as err:
        validate_experiment({"link": link, "loop": RLC, "faults": faults}, name="x")
    assert err.value.key == key and words in str(err.value), str(err.value)


def test_the_shipped_outage_experiment_validates_and_its_outages_fit():
    exp = load_experiment(paths.EXPERIMENTS / "pound_outage.yaml")
    assert [w for f in exp.faults for w in f.windows()] == [(1.1, 3.1), (6.0, 8.0)]


def _qdisc(tb: Testbed, host: str) -> str:
    out = subprocess.run(["tc", "-n", tb.netns(host), "qdisc", "show", "dev", "net0"], capture_output=True,
                         text=True, check=True).stdout
    return " ".join(w for w in out.split() if not w.endswith(":"))   # without the kernel's handles


@needs_root
@pytest.mark.timeout(120)
@pytest.mark.parametrize("profile", ["ethernet", "wifi6"])
def test_an_outage_silences_a_host_and_its_end_restores_the_link_as_it_was(tmp_path, profile):
    with Testbed(load_profile(profile), log_dir=tmp_path) as tb:
        before = {h: _qdisc(tb, h) for h in tb.hosts}
        assert bench.rtt(tb, count=5, interval=0.02)["received"] == 5
        tb.set_transmitting("robot", False)
        assert "pfifo" in _qdisc(tb, "robot") and "limit 0p" in _qdisc(tb, "robot")
        assert bench.rtt(tb, count=5, interval=0.02, wait=0.5)["received"] == 0
        tb.set_transmitting("robot", True)
        assert {h: _qdisc(tb, h) for h in tb.hosts} == before
        assert bench.rtt(tb, count=5, interval=0.02)["received"] == 5


@needs_root
@pytest.mark.timeout(300)
def test_a_two_second_outage_is_measured_per_transport(tmp_path):
    doc = {"name": "outage", "link": "ethernet", "transport": ["tcp_nodelay", "udp"], "loop": RLC,
           "flows": [LASER], "faults": [{"at": 2.0, "duration": 2.0}]}
    runs = campaign_runs(tmp_path, doc, "outage")
    for transport in ("tcp_nodelay", "udp"):
        meta = read_metadata(runs[f"{transport}-r0"])
        assert meta["status"] == "complete", meta.get("error")
        (window,) = meta["faults"]
        assert window["hosts"] == ["robot", "operator"] and 1.9 < window["end"] - window["start"] < 2.3
        a = analyse_run(runs[f"{transport}-r0"])
        (laser,) = a.flows
        (o,) = laser.outages
        assert o["recovery_ms"] is not None and o["duration_s"] == pytest.approx(2.0, abs=0.3)
        (y,) = a.loop.sensor.outages
        # ~100 laser messages and ~100 samples were sent while the link was silent
        assert 80 <= o["lost"] + o["late"] <= 115 and 80 <= y["lost"] + y["late"] <= 115, (o, y)
        if transport == "udp":   # nothing is kept: lost, and the next datagram gets through at once
            assert o["late"] <= 2 and o["recovery_ms"] < 100, o
            assert laser.MDR < 0.8
        else:                    # TCP delivers what it could queue, after its retransmission back-off
            assert o["recovery_ms"] < 3000, o
    campaign = next(iter(runs.values())).parent.parent
    text = write_report(campaign).with_suffix(".md").read_text()
    assert "## Link outages: recovery" in text and "| udp | flow laser | 1 |" in text
