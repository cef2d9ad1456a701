"""Interface outages (``faults[].kind: interface_down``, the Pound paper's Table V as the paper made
it): validation; on real namespaces the host's interface goes down so that the kernel sees it (a
TCP socket's new connection and a UDP send get ENETUNREACH, the established TCP connection
survives and delivers after the outage), comes back with its routes, and on the emulated Wi-Fi
the station leaves and rejoins (ad-hoc: at once; access point: a new association); every exit
path leaves the interface up; a real run reports the recovery per transport and flow."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from campaign_helpers import campaign_runs

from netloop import paths
from netloop.analysis.report import analyse_run
from netloop.experiment import load_experiment, quick_variant, validate_experiment
from netloop.faults import FaultSchedule
from netloop.model import Fault
from netloop.run_files import load_metadata
from netloop.schema import ConfigError
from netloop.testbed import Testbed, load_profile
from netloop.testbed import interfaces
from netloop.testbed import link_bench as bench

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: interfaces of namespaces go down")

# the flow sends from 0.5 s after its subscriber connected: well before the outage (1 s after every
# subscriber connected), even for a source whose subscriber came last (with the default 1 s
# delay a source could begin as the interface went down, and send too little during the outage)
FLOW = {"kind": "generic", "from": "robot", "to": "operator", "size_bytes": 1024, "period": 0.02, "count": 150,
        "start_delay": 0.5}
DOWN = {"kind": "interface_down", "hosts": ["robot"], "at": 1.0, "duration": 1.0}


@pytest.mark.parametrize("faults, key, words", [
    ([{**DOWN, "kind": "unplug"}], "faults[0].kind", "allowed: drop, interface_down"),
    ([{**DOWN, "loss": 0.5}], "faults[0].kind", "kind drop (the default) with loss"),
    ([DOWN, {**DOWN, "at": 1.5}], "faults[1]", "overlaps faults[0]'s on robot"),
    ([DOWN, {**DOWN, "at": 1.5, "hosts": []}], "faults[1]", "overlaps faults[0]'s on robot"),
    ([{**DOWN, "hosts": ["relay"]}], "faults[0].hosts", "allowed: robot, operator"),
])
def test_bad_interface_outages_are_refused_naming_the_key(faults, key, words):
    doc = {"link": "wifi6", "loop": {"type": "none"}, "flows": [{"name": "f", **FLOW}], "faults": faults}
    with pytest.raises(ConfigError) as err:
        validate_experiment(doc, name="x")
    assert err.value.key == key and words in str(err.value), str(err.value)


def test_an_outage_is_a_drop_unless_it_says_otherwise_and_one_after_another_is_fine():
    doc = {"link": "wifi6", "loop": {"type": "none"}, "flows": [{"name": "f", **FLOW}],
           "faults": [{"at": 0.5, "duration": 0.5}, DOWN, {**DOWN, "at": 2.1, "duration": 0.5}]}
    assert [f.kind for f in validate_experiment(doc, name="x").faults] == ["drop", "interface_down", "interface_down"]


@pytest.mark.parametrize("name, link, host", [("pound_table5_2node", "wifi6", "robot"),
                                              ("pound_table5_3node", "wifi6_2hop", "relay")])
def test_the_table5_files_take_the_papers_set_up(name, link, host):
    exp = load_experiment(paths.EXPERIMENTS / f"{name}.yaml")
    assert exp.link == link and [(f.size_bytes, f.period, f.from_, f.to) for f in exp.flows] == \
        [(1024, 0.02, "robot", ["operator"])] * 2
    (fault,) = exp.faults
    assert (fault.kind, fault.hosts, fault.duration) == ("interface_down", [host], 5.0)
    assert quick_variant(exp).faults[0].kind == "interface_down"


# --- real namespaces -----------------------------------------------------------------------

#: Runs in the robot's namespace: a TCP connection to the operator sending 1 KB every 20 ms, and
#: every 50 ms a UDP datagram and a new TCP connection to a closed port; prints one JSON line.
CLIENT = r"""
import errno, json, socket, sys, time
host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
tcp = socket.create_connection((host, port), timeout=2)
tcp.setblocking(False)   # a full send buffer (TCP backing off) is counted, not waited for
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
out = {"tcp_send_errors": [], "udp_errors": [], "connect_errors": [], "sent": 0, "tcp_buffer_full": 0}
end = time.time() + seconds
while time.time() < end:
    try:
        out["sent"] += tcp.send(bytes(1024))
    except BlockingIOError:
        out["tcp_buffer_full"] += 1
    except OSError as e:
        out["tcp_send_errors"].append([time.time(), e.errno])
    try:
        udp.sendto(b"x", (host, 9))
    except OSError as e:
        out["udp_errors"].append([time.time(), e.errno])
    began = time.time()
    try:
        socket.create_connection((host, port + 1), timeout=0.2).close()
    except OSError as e:   # when the attempt began: one begun before the outage may time out in it
        out["connect_errors"].append([began, e.errno])
    time.sleep(0.05)
tcp.settimeout(10)
tcp.shutdown(socket.SHUT_WR)
tcp.recv(1)
print(json.dumps(out))
"""

#: Runs in the operator's namespace: receives one connection until it ends; prints the bytes and
#: the arrival time of every chunk.
SERVER = r"""
import json, socket, sys, time
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", int(sys.argv[1]))); srv.listen(1)
print("listening", flush=True)
conn, _ = srv.accept()
got, arrivals = 0, []
while True:
    data = conn.recv(65536)
    if not data:
        break
    got += len(data); arrivals.append(time.time())
conn.close()
print(json.dumps({"bytes": got, "arrivals": arrivals}), flush=True)
"""

PORT = 47010


def _in_ns(tb: Testbed, host: str, script: str, *args) -> subprocess.Popen:
    return subprocess.Popen(tb.exec_prefix(host) + [sys.executable, "-c", script, *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _outage_seen_by_sockets(tb: Testbed, host: str, outage_s: float) -> tuple[dict, dict, float, float]:
    """The client's and server's reports around one interface outage of ``host`` (robot or
    operator), and its (down, up) wall times."""
    server = _in_ns(tb, "operator", SERVER, PORT)
    client = None
    try:
        assert server.stdout.readline().strip() == "listening"
        client = _in_ns(tb, "robot", CLIENT, tb.address("operator"), PORT, 1.0 + outage_s + 1.5)
        time.sleep(1.0)
        down = time.time()
        tb.set_interface(host, False)
        assert not tb.interface_is_up(host)
        time.sleep(outage_s)
        up = time.time()
        tb.set_interface(host, True)
        sent_out, sent_err = client.communicate(timeout=60)
        got_out, got_err = server.communicate(timeout=30)
    finally:
        for p in (client, server):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert client.returncode == 0 and server.returncode == 0, (sent_err, got_err)
    return json.loads(sent_out), json.loads(got_out.splitlines()[-1]), down, up


def _routes(tb: Testbed, host: str) -> str:
    return subprocess.run(["ip", "-n", tb.netns(host), "route"], capture_output=True, text=True, check=True).stdout


ENETUNREACH = 101


@needs_root
@pytest.mark.timeout(120)
@pytest.mark.parametrize("profile", ["ethernet", "wifi6"])
def test_the_kernel_sees_the_interface_go_down_and_tcp_delivers_after_it_comes_back(tmp_path, profile):
    with Testbed(load_profile(profile), log_dir=tmp_path) as tb:
        routes = _routes(tb, "robot")
        sent, got, down, up = _outage_seen_by_sockets(tb, "robot", 1.5)
        assert _routes(tb, "robot") == routes and tb.interface_is_up("robot")
        # during the outage a new connection and a datagram have no route; outside it they do
        for errors in (sent["connect_errors"], sent["udp_errors"]):
            during = [e for t, e in errors if down + 0.1 < t < up - 0.1]
            assert during and set(during) == {ENETUNREACH}, errors
            assert not [t for t, e in errors if e == ENETUNREACH and (t < down - 0.1 or t > up + 0.5)], errors
        # the established connection lived through it: TCP delivered every byte, some after the return
        assert got["bytes"] == sent["sent"] and not sent["tcp_send_errors"]
        assert not [t for t in got["arrivals"] if down + 0.1 < t < up], "nothing arrives while it is down"
        assert [t for t in got["arrivals"] if t > up]
        if profile == "wifi6":   # the station left and came back (ns-3's ad-hoc MAC: no join, at once)
            events = [(e["host"], e["event"]) for e in tb.station_events()]
            assert events == [("robot", "left"), ("robot", "rejoining"), ("robot", "joined"), ("robot", "open")]
            assert interfaces.rejoins(tb.station_events(), "robot", up)["rejoin_ms"] == 0
        assert bench.rtt(tb, count=5, interval=0.02)["received"] == 5


@needs_root
@pytest.mark.timeout(120)
def test_a_station_of_an_access_point_associates_again_and_the_time_is_measured(tmp_path):
    with Testbed(load_profile("wifi6_ap"), log_dir=tmp_path) as tb:
        assert bench.rtt(tb, count=5, interval=0.02)["received"] == 5
        tb.set_interface("operator", False)
        time.sleep(0.5)
        assert bench.rtt(tb, count=5, interval=0.02, wait=0.3)["received"] == 0
        up = time.time()
        tb.set_interface("operator", True)
        rejoin = interfaces.wait_for_rejoin(tb, "operator", up, timeout=10)
        # passive scanning: the next beacon (every 102.4 ms), then association request and response
        assert rejoin["event"] == "associated" and 0 < rejoin["rejoin_ms"] < 2000, rejoin
        events = [e["event"] for e in tb.station_events() if e["host"] == "operator"]
        assert events[:3] == ["associated", "disassociated", "left"], events   # at the start, then the outage
        back = events[events.index("rejoining"):]
        assert sorted(back) == ["associated", "open", "rejoining"], events     # open: the tap (any order)
        assert bench.rtt(tb, count=5, interval=0.02)["received"] == 5
        assert tb.health()["reason"] != "ns3 exited unexpectedly"


@needs_root
@pytest.mark.timeout(120)
def test_every_exit_path_brings_the_interface_back(tmp_path):
    """end_all (the runner's every exit path) restores an interface still down, with its station
    and routes, and records when."""
    with Testbed(load_profile("wifi6_2hop"), log_dir=tmp_path) as tb:
        routes = _routes(tb, "robot")
        schedule = FaultSchedule([Fault(kind="interface_down", hosts=["relay", "robot"], at=0.0, duration=60.0)],
                                 tb, log=lambda _: None)
        schedule.start()
        schedule.poll()
        assert not tb.interface_is_up("relay") and not tb.interface_is_up("robot")
        assert bench.rtt(tb, count=3, interval=0.02, wait=0.3)["received"] == 0
        schedule.end_all()
        assert tb.interface_is_up("relay") and tb.interface_is_up("robot")
        assert _routes(tb, "robot") == routes    # the route to the operator via the relay is back
        (rec,) = schedule.metadata()
        assert rec["kind"] == "interface_down" and rec["end"] is not None and "end_error" not in rec
        assert {h: r["event"] for h, r in rec["rejoin"].items()} == {"relay": "joined", "robot": "joined"}
        assert bench.rtt(tb, count=5, interval=0.02)["received"] == 5


@pytest.mark.studies   # a long end-to-end run: make test-studies
@needs_root
@pytest.mark.timeout(300)
def test_recovery_is_reported_per_transport_and_flow(tmp_path):
    doc = {"name": "ifdown", "link": "wifi6", "transport": ["tcp_nodelay", "udp"], "loop": {"type": "none"},
           "flows": [{"name": "flow1", **FLOW}, {"name": "flow2", **FLOW}], "faults": [DOWN]}
    runs = campaign_runs(tmp_path, doc, "ifdown")
    for transport in ("tcp_nodelay", "udp"):
        meta = load_metadata(runs[f"{transport}-r0"]).to_json()
        assert meta["status"] == "complete", meta.get("error")
        (window,) = meta["faults"]
        assert window["kind"] == "interface_down" and window["rejoin"]["robot"]["event"] == "joined"
        flows = {f.flow: f for f in analyse_run(runs[f"{transport}-r0"]).flows}
        assert set(flows) == {"flow1", "flow2"}
        for flow in flows.values():
            (o,) = flow.outages
            assert o["kind"] == "interface_down" and o["rejoin_ms"] == 0 and o["sent"] >= 30, o
            if transport == "tcp_nodelay":   # TCP's retransmission back-off, then what it queued
                assert o["recovery_ms"] is not None and o["recovery_ms"] < 3000 and o["late"] > 0, o
            else:   # roscpp closes a UDPROS link on its send error (ENETUNREACH) and never reopens it
                # (late: a message sent as the outage began, before the station had left)
                assert o["recovery_ms"] is None and o["late"] <= 2, o
