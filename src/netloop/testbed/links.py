"""Link implementations: one interface, several emulations chosen by a profile's ``type``.

A :class:`Link` joins the hosts' namespaces (created by the Testbed) and is brought up and
down by the Testbed. Every host gets one interface ``net0`` with an address in
``10.77.0.0/24`` (robot ``.1``, operator ``.2``, relay ``.3``); these addresses exist only
inside the testbed's namespaces.

* ``loopback`` — nothing: both hosts are the root namespace, 127.0.0.1.
* ``ethernet`` — a veth pair, each end rate-limited by an htb (or tbf) qdisc.
* ``ns3_wifi`` — taps bridged into a real-time ns-3 802.11a/g/n channel
  (``netloop_wifi_link``, ``src/ns3/wifi_link.cc``), ad-hoc or through an access point. With
  ``hops: 2`` the relay is a host of its own: robot and operator are out of each other's
  radio range, their routes to each other go through the relay's address, and the relay
  namespace forwards IPv4 (ICMP redirects off), so every robot-operator packet crosses the
  channel twice. With ``mode: ap`` the access point lives inside ns-3 (no host, no tap):
  robot and operator are its stations, one subnet, and its MAC forwards every frame between
  them, so again every packet crosses the channel twice.
* ``shaped`` — taps joined by the userspace emulator :mod:`netloop.testbed.shaper`.

The tap-based links run their emulator inside a private ``link`` namespace (so its taps never
appear in the root namespace), wait for its "ready" line and move each tap into its host.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from netloop import paths

from . import util
from .profiles import air_crossings, air_overhead_bytes, background_air_mbit, shaper_rate_kbit
from .util import TestbedError

SUBNET_PREFIX = "10.77.0."
PREFIX_LEN = 24
HOST_OCTET = {"robot": 1, "operator": 2, "relay": 3}
IFACE = "net0"
#: Multicast goes out of every host's net0: ROS 2's discovery (SPDP multicast, Zenoh scouting) and
#: multimaster's heartbeats send to groups without naming an interface, and a namespace has no
#: default route; harmless for every other transport.
MULTICAST_ROUTE = "224.0.0.0/4"
TAP_SUFFIX = {"robot": "r", "operator": "o", "relay": "x"}


#: DSCP code points the hosts' htb serves before everything else (strict priority): EF and
#: CS6 / CS7 (network control); a loop marked by a transport's ``dscp`` option, the priority
#: relay's urgent datagrams.
PRIORITY_DSCP = {"EF": 46, "CS6": 48, "CS7": 56}
#: the marked class's own rate, as a fraction of the htb's: within it a marked packet is sent
#: before any unmarked one; above it, it still goes first among the classes that borrow
MARKED_RATE_FRACTION = 0.2


def htb_classes(rate_kbit: int, limit_packets: int, extra: list[str] = ()) -> list[list[str]]:
    """``tc`` arguments of the classes under an htb root ``1:`` (``default 20``) at ``rate_kbit``:
    the link class 1:1, and under it two leaves that share its rate (each may borrow all of it,
    ``ceil``): 1:10 (``prio 0``, ``MARKED_RATE_FRACTION`` of the rate, pfifo 10:) takes the IPv4
    packets whose DSCP is in :data:`PRIORITY_DSCP` (a u32 filter on the DS field, ECN bits
    masked); 1:20 (``prio 1``, the rest of the rate, pfifo 20:) everything else, one FIFO of
    ``limit_packets`` as the single leaf was before. htb dequeues the lower ``prio`` first among
    leaves that may send, so a marked packet never waits behind an unmarked backlog (the
    kernel has no ``prio`` qdisc here: htb, tbf and u32 only). ``extra``: burst, overhead and
    quantum arguments given to every class."""
    marked = max(8, int(round(rate_kbit * MARKED_RATE_FRACTION)))
    cls = ["class", "add", "dev", IFACE, "parent"]
    cmds = [cls + ["1:", "classid", "1:1", "htb", "rate", f"{rate_kbit}kbit",
                   "ceil", f"{rate_kbit}kbit", *extra]]
    for minor, prio, rate in (("10", "0", marked), ("20", "1", rate_kbit - marked)):
        cmds += [cls + ["1:1", "classid", f"1:{minor}", "htb", "rate", f"{rate}kbit", "ceil", f"{rate_kbit}kbit",
                        "prio", prio, *extra],
                 ["qdisc", "add", "dev", IFACE, "parent", f"1:{minor}", "handle", f"{minor}:", "pfifo",
                  "limit", str(limit_packets)]]
    for dscp in PRIORITY_DSCP.values():
        cmds.append(["filter", "add", "dev", IFACE, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                     "match", "ip", "dsfield", hex(dscp << 2), "0xfc", "flowid", "1:10"])
    return cmds


def priority_band_metadata() -> dict:
    """What :func:`htb_classes` does, for a run's metadata (reports say it)."""
    return {"dscp": dict(PRIORITY_DSCP), "served": "first: htb leaf 1:10 at prio 0 (own rate "
            f"{MARKED_RATE_FRACTION:g} x the link's, may borrow all of it)",
            "others": "htb leaf 1:20 at prio 1: one FIFO with the queue's limit, may borrow the whole rate"}


@dataclass
class LinkContext:
    """What a link needs from the Testbed: names, files and a way to record processes."""
    tb_id: str
    netns: dict[str, str]                  # host -> namespace
    link_netns: str | None                 # private namespace for emulator processes
    work_dir: Path                         # logs and stats files
    record_pid: Callable[[int, str], None] = lambda pid, what: None
    die_with_parent: bool = True


def robot_names(robots: int) -> list[str]:
    """The robot hosts of a link with ``robots`` robots: robot, robot2, ..., robotN."""
    return ["robot"] + [f"robot{k}" for k in range(2, robots + 1)]


def robot_number(host: str) -> int | None:
    """1 for ``robot``, K for ``robotK`` (K >= 2, as :func:`robot_names` names them), else None."""
    if host == "robot":
        return 1
    k = host[5:]
    return int(k) if host.startswith("robot") and k.isdigit() and int(k) >= 2 else None


def host_address(host: str) -> str:
    """robot .1, operator .2, relay .3, robotK .(10 + K)."""
    k = robot_number(host)
    return SUBNET_PREFIX + str(10 + k if k and k > 1 else HOST_OCTET[host])


def tap_suffix(host: str) -> str:
    k = robot_number(host)
    return f"r{k}" if k and k > 1 else TAP_SUFFIX[host]


class Link:
    """Base class. Subclasses set ``hosts`` and ``uses_link_netns`` and implement up/down."""

    hosts: list[str] = ["robot", "operator"]
    uses_link_netns = False
    needs_root = True

    def __init__(self, profile: dict):
        self.profile = profile
        self.ctx: LinkContext | None = None

    def prerequisites(self) -> None:
        """Raise TestbedError if a tool or program this link needs is missing."""
        for tool in ("ip", "tc"):
            if shutil.which(tool) is None:
                raise TestbedError(f"'{tool}' not found (install iproute2)")
        if self.profile.get("rt_priority") and shutil.which("chrt") is None:
            raise TestbedError("rt_priority needs 'chrt' (util-linux); or set rt_priority: 0")

    def up(self, ctx: LinkContext) -> None:
        raise NotImplementedError

    def down(self) -> None:
        """Stop what up() started; namespaces (and the interfaces in them) are the Testbed's."""

    def metadata(self) -> dict:
        return {}

    def health(self, since: float | None = None, until: float | None = None) -> dict:
        return {"valid": True, "reason": "ok"}

    def shape(self, host: str) -> None:
        """Set up ``host``'s egress queueing on net0 (default: the kernel's own qdisc)."""

    def routes(self, host: str) -> list[str]:
        """The routes ``host`` gets beside its subnet's (``ip route add`` arguments)."""
        return []

    def set_transmitting(self, host: str, on: bool) -> None:
        """Stop (``on`` False) or restart ``host``'s transmissions: an outage. Stopped, its net0
        drops every packet at once (a pfifo of length 0: silently, as a radio that is off;
        TCP retransmits with back-off); restarted, its queueing is set up as up() did."""
        ns = self.ctx.netns[host]
        if not on:
            util.run(["tc", "-n", ns, "qdisc", "replace", "dev", IFACE, "root", "pfifo", "limit", "0"])
            return
        util.run(["tc", "-n", ns, "qdisc", "del", "dev", IFACE, "root"], check=False)
        self.shape(host)

    def set_loss(self, host: str | None, probability: float) -> None:
        """A loss burst: what ``host`` sends (None: every host) is lost with ``probability``
        until it is set back to 0. Only links whose emulator decides per packet have it."""
        raise TestbedError(f"a '{self.profile.get('type')}' link has no per-packet loss here (the kernel has "
                           "no netem): loss bursts need a 'shaped' or 'ns3_wifi' link")

    # helpers -----------------------------------------------------------------------------
    def configure_host(self, host: str, iface: str, mtu: int, routes: list[str] = ()) -> None:
        """Name the interface ``net0``, set MTU and address, bring it up, add routes."""
        ns = self.ctx.netns[host]
        lines = []
        if iface != IFACE:
            lines.append(f"link set dev {iface} name {IFACE}")
        lines += [f"link set dev {IFACE} mtu {mtu}",
                  f"addr add {host_address(host)}/{PREFIX_LEN} dev {IFACE}",
                  f"link set dev {IFACE} up",
                  f"route add {MULTICAST_ROUTE} dev {IFACE}"]
        lines += [f"route add {r}" for r in routes]
        util.ip_batch(lines, ns)


class LoopbackLink(Link):
    needs_root = False

    def prerequisites(self) -> None:
        pass

    def up(self, ctx: LinkContext) -> None:
        self.ctx = ctx

    def metadata(self) -> dict:
        return {"note": "all hosts are the root namespace; traffic stays on lo (127.0.0.1)"}


class EthernetLink(Link):
    """A veth pair, both ends shaped to ``rate_mbit`` by htb (default) or tbf. With ``robots``
    N > 1, a switch: the operator's net0 is a bridge, and each robot's net0 a veth whose peer
    (``rK`` in the operator's namespace) is a port of it; every robot's net0 and the operator's
    bridge are shaped (the operator's rate is shared by all it sends)."""

    def __init__(self, profile: dict):
        super().__init__(profile)
        self.hosts = robot_names(profile.get("robots", 1)) + ["operator"]

    def up(self, ctx: LinkContext) -> None:
        self.ctx = ctx
        p = self.profile
        o = ctx.netns["operator"]
        if len(self.hosts) == 2:
            util.run(["ip", "link", "add", IFACE, "netns", ctx.netns["robot"], "type", "veth",
                      "peer", "name", IFACE, "netns", o])
        else:
            util.ip_batch([f"link add {IFACE} type bridge", f"link set dev {IFACE} mtu {p['mtu']}"], o)
            for k, robot in enumerate(self.hosts[:-1], 1):
                port = f"p{k}"
                util.run(["ip", "link", "add", IFACE, "netns", ctx.netns[robot], "type", "veth",
                          "peer", "name", port, "netns", o])
                util.ip_batch([f"link set dev {port} mtu {p['mtu']}", f"link set dev {port} master {IFACE}",
                               f"link set dev {port} up"], o)
        for host in self.hosts:
            self.configure_host(host, IFACE, p["mtu"])
            if p["gso_max_segs"]:
                util.ip_batch([f"link set dev {IFACE} gso_max_segs {p['gso_max_segs']}"], ctx.netns[host])
            self.shape(host)

    def shape(self, host: str) -> None:
        """htb at ``rate_mbit`` with :func:`htb_classes` (marked packets first), or a tbf."""
        ns, p = self.ctx.netns[host], self.profile
        rate = f"{p['rate_mbit']:g}mbit"
        if p["qdisc"] == "htb":
            cmds = [["qdisc", "replace", "dev", IFACE, "root", "handle", "1:", "htb", "default", "20"],
                    *htb_classes(int(round(p["rate_mbit"] * 1000)), p["queue_packets"])]
        else:
            # burst: at least one GSO super-packet and ~1 ms at the rate
            burst = max(65536 + 1514, int(p["rate_mbit"] * 1e6 / 8 / 1000))
            limit = p["queue_packets"] * p["mtu"] + burst
            cmds = [["qdisc", "replace", "dev", IFACE, "root", "tbf", "rate", rate,
                     "burst", str(burst), "limit", str(limit)]]
        for c in cmds:
            util.run(["tc", "-n", ns] + c)

    def metadata(self) -> dict:
        out = {"interface": IFACE, "qdisc": self.profile["qdisc"],
               "priority_band": priority_band_metadata() if self.profile["qdisc"] == "htb" else None}
        if self.ctx:
            res = util.run(["tc", "-n", self.ctx.netns["robot"], "qdisc", "show", "dev", IFACE],
                           check=False)
            out["tc_robot"] = res.stdout.strip()
        return out


class StatsFile:
    """Reads the JSON lines an emulator appends (ready / stats / final), incrementally."""

    def __init__(self, path: Path):
        self.path, self.offset, self.lines = path, 0, []

    def poll(self) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return self.lines
        end = data.rfind(b"\n")
        if end >= 0:
            for raw in data[:end].split(b"\n"):
                try:
                    self.lines.append(json.loads(raw))
                except ValueError:
                    pass
            self.offset += end + 1
        return self.lines

    def ready(self) -> dict | None:
        return next((l for l in self.poll() if l.get("type") == "ready"), None)

    def stats(self) -> list[dict]:
        return [l for l in self.poll() if l.get("type") in ("stats", "final")]


class TapLink(Link):
    """A link whose emulator process owns one tap per host (runs in the link namespace)."""

    uses_link_netns = True
    what = "emulator"
    ready_timeout = 15.0

    def __init__(self, profile: dict):
        super().__init__(profile)
        self.proc = None
        self.stats: StatsFile | None = None
        self.taps: dict[str, str] = {}
        self.exit_code: int | None = None
        self.started_wall: float | None = None
        self.ready_info: dict | None = None
        self.stopping = False

    def command(self) -> list[str]:
        raise NotImplementedError

    def up(self, ctx: LinkContext) -> None:
        self.ctx = ctx
        self.stopping, self.exit_code = False, None
        self.taps = {h: f"nl{ctx.tb_id}{tap_suffix(h)}" for h in self.hosts}
        self.stats_path = ctx.work_dir / f"testbed_{self.what}_stats.jsonl"
        self.log_path = ctx.work_dir / f"testbed_{self.what}.log"
        if self.stats_path.exists():
            self.stats_path.unlink()
        self.stats = StatsFile(self.stats_path)
        cmd = ["ip", "netns", "exec", ctx.link_netns] + self.command()
        self.started_wall = time.time()
        # its standard input is the control input (loss bursts: set_loss)
        self.proc = util.spawn(cmd, self.log_path, env=self.env(), die_with_parent=ctx.die_with_parent,
                               stdin=subprocess.PIPE)
        ctx.record_pid(self.proc.pid, self.what)
        ready = util.wait_for(lambda: self.stats.ready() or self.proc.poll() is not None,
                              self.ready_timeout)
        if not isinstance(ready, dict):
            code = self.proc.poll()
            tail = self._log_tail()
            util.stop_process(self.proc)
            raise TestbedError(
                f"{self.what} did not become ready" + (f" (exit code {code})" if code is not None
                                                       else f" within {self.ready_timeout:g} s")
                + (f"; its log ({self.log_path}) ends with:\n{tail}" if tail else ""))
        self.ready_info = ready
        for host in self.hosts:
            util.run(["ip", "-n", ctx.link_netns, "link", "set", "dev", self.taps[host],
                      "netns", ctx.netns[host]])
            self.configure_host(host, self.taps[host], self.profile["mtu"], self.routes(host))

    # the kernel's queue in front of the tap: htb, TCP Small Queues (both link types) ---------
    def shaper(self, host: str | None = None) -> dict | None:
        """The htb on ``host``'s net0 ({"rate_kbit", "overhead_bytes", "limit_packets", ...}),
        or None (the kernel's default qdisc): a link type whose emulator keeps its own queue
        sets one so that the backlog waits in the kernel, where TCP Small Queues hold a bulk
        TCP flow back, and the emulator's queue stays a few packets long, as a NIC's ring."""
        return None

    def configure_host(self, host: str, iface: str, mtu: int, routes: list[str] = ()) -> None:
        super().configure_host(host, iface, mtu, routes)
        ns = self.ctx.netns[host]
        sysctls = {}
        if self.profile["tcp_congestion_control"] != "inherit":
            sysctls["net.ipv4.tcp_congestion_control"] = self.profile["tcp_congestion_control"]
        if self.profile["tcp_limit_output_bytes"]:
            sysctls["net.ipv4.tcp_limit_output_bytes"] = self.profile["tcp_limit_output_bytes"]
        if sysctls:
            try:
                util.sysctl(ns, sysctls)
            except TestbedError as err:
                if "tcp_congestion_control" not in str(err):
                    raise
                raise TestbedError(
                    f"tcp_congestion_control: {self.profile['tcp_congestion_control']} cannot be "
                    "set inside a namespace on this machine (only the algorithms in the root "
                    "namespace's net.ipv4.tcp_allowed_congestion_control can); use one of those, "
                    f"or inherit ({err})") from None
        if self.profile["gso_max_segs"]:
            util.ip_batch([f"link set dev {IFACE} gso_max_segs {self.profile['gso_max_segs']}"], ns)
        self.shape(host)

    def shape(self, host: str) -> None:
        """The htb of :meth:`shaper` on ``host``'s net0, when the profile has one, with the
        marked packets' class of :func:`htb_classes` served first."""
        sh, ns, mtu = self.shaper(host), self.ctx.netns[host], self.profile["mtu"]
        if sh is None:
            return
        burst = str(mtu + 14 + sh["overhead_bytes"])
        extra = ["burst", burst, "cburst", burst, "overhead", str(sh["overhead_bytes"]), "quantum", str(mtu + 14)]
        for c in (["qdisc", "replace", "dev", IFACE, "root", "handle", "1:", "htb", "default", "20"],
                  *htb_classes(sh["rate_kbit"], sh["limit_packets"], extra)):
            util.run(["tc", "-n", ns] + c)

    def kernel_queue_metadata(self) -> dict:
        """The kernel-side settings of the hosts (what :meth:`configure_host` applied)."""
        p = self.profile
        return {"tcp_congestion_control": p["tcp_congestion_control"],
                "gso_max_segs": p["gso_max_segs"] or None,
                "tcp_limit_output_bytes": p["tcp_limit_output_bytes"] or None,
                "priority_band": priority_band_metadata() if any(self.shaper(h) for h in self.hosts) else None}

    def env(self) -> dict:
        return dict(os.environ)

    def _log_tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").strip().splitlines()[-n:])
        except (OSError, AttributeError):
            return ""

    def set_loss(self, host: str | None, probability: float) -> None:
        """Tell the emulator (a line on its standard input, see :mod:`netloop.testbed.shaper`
        and ``src/ns3/wifi_link.cc``) that frames ``host`` sends (None: all) are lost with
        ``probability``; on Wi-Fi a lost frame is retried by the MAC, as in a real fade."""
        if self.proc is None or self.proc.poll() is not None:
            raise TestbedError(f"the {self.what} is not running: no loss burst can be set")
        target = "all" if host is None else str(self.hosts.index(host))
        self.proc.stdin.write(f"loss {target} {probability:.6g}\n".encode())
        self.proc.stdin.flush()

    def control(self, line: str, timeout: float = 10.0) -> None:
        """Write ``line`` on the emulator's control input and wait until it has applied it (its
        "control" echo in the stats file); TestbedError with the emulator's error text."""
        if self.proc is None or self.proc.poll() is not None:
            raise TestbedError(f"the {self.what} is not running: cannot apply '{line}'")
        seen = sum(1 for l in self.stats.poll() if l.get("type") == "control")
        self.proc.stdin.write(f"{line}\n".encode())
        self.proc.stdin.flush()

        def echoed():
            echoes = [l for l in self.stats.poll() if l.get("type") == "control"]
            return echoes[seen] if len(echoes) > seen else (self.proc.poll() is not None and {"exited": 1})
        echo = util.wait_for(echoed, timeout)
        if not echo or echo.get("exited"):
            raise TestbedError(f"the {self.what} did not apply '{line}' "
                               + ("(it exited)" if echo else f"within {timeout:g} s"))
        if echo.get("error"):
            raise TestbedError(f"the {self.what} refused '{line}': {echo['error']}")

    def down(self) -> None:
        if self.proc is not None:
            self.stopping = True
            try:
                self.proc.stdin.close()
            except (OSError, AttributeError):
                pass
            self.exit_code = util.stop_process(self.proc)
            if self.stats:
                self.stats.poll()

    def health(self, since: float | None = None, until: float | None = None) -> dict:
        """The emulator's real-time health over [since, until] (time.time() values; None:
        from its start, to now). Samples are counted per stats interval that overlaps the
        window; late samples are those of the stalls (runs of consecutive late samples, with
        the time each began) that overlap it, so a stall after ``until`` (say, while the
        run's processes exit after the last message was delivered) is listed but not
        counted."""
        p = self.profile
        bound, allowed = p["lag_bound_ms"], p["lag_late_fraction"]
        out = {"valid": True, "reason": "ok", "lag_bound_ms": bound, "max_lag_ms": None,
               "mean_lag_ms": None, "late_fraction": None, "late_fraction_allowed": allowed,
               "samples": 0, "late_samples": 0, "stalls": []}
        lines = self.stats.stats() if self.stats is not None else []
        interval = float(p.get("stats_interval_s") or 1.0)
        start, end = (since if since is not None else -math.inf), (until if until is not None else math.inf)
        # a line at wall time W covers (W - interval, W]; its counts are differences to the line before
        window = [(prev, l) for prev, l in zip([None] + lines[:-1], lines)
                  if l["wall"] > start and l["wall"] - interval < end]
        if window:
            if since is None and until is None:
                out["max_lag_ms"] = lines[-1]["lag_max_total_ms"]
                out["mean_lag_ms"] = lines[-1]["lag_mean_total_ms"]
            else:
                out["max_lag_ms"] = max(l["lag_max_ms"] for _, l in window)
                out["mean_lag_ms"] = sum(l["lag_mean_ms"] for _, l in window) / len(window)
            first_base = window[0][0]
            out["samples"] = window[-1][1]["probes"] - (first_base["probes"] if first_base else 0)
            if all("stalls" in l for l in lines):
                for l in lines:
                    for began, max_ms, probes in l["stalls"]:
                        counted = began < end and began + max_ms / 1e3 > start
                        out["stalls"].append({"began": began, "max_ms": max_ms, "late_samples": probes,
                                              "counted": counted})
                # a stall still under way is in the counters but not yet listed: counted
                unlisted = lines[-1]["late_probes"] - sum(st["late_samples"] for st in out["stalls"])
                out["late_samples"] = (sum(st["late_samples"] for st in out["stalls"] if st["counted"])
                                       + max(0, unlisted))
            else:   # an emulator without the stall list: late samples of the overlapping intervals
                out["late_samples"] = window[-1][1]["late_probes"] - (first_base["late_probes"] if first_base else 0)
            if out["samples"]:
                out["late_fraction"] = out["late_samples"] / out["samples"]
        late = out["late_fraction"] or 0.0
        if (allowed == 0 and out["late_samples"] > 0) or late > allowed:
            counted = [st for st in out["stalls"] if st["counted"]]
            worst = max((st["max_ms"] for st in counted), default=out["max_lag_ms"] or 0.0)
            out["valid"] = False
            out["reason"] = (f"{self.what} was more than {bound:g} ms behind real time in "
                             f"{late:.3%} of samples (allowed {allowed:.3%}; max "
                             f"{worst:.1f} ms"
                             + (f", {len(counted)} stall(s)" if counted else "")
                             + "): link timing not trustworthy")
        if self.proc is not None and not self.stopping and self.proc.poll() is not None:
            out["valid"] = False
            out["reason"] = (f"{self.what} exited unexpectedly (code {self.proc.returncode}); "
                             f"see {self.log_path}")
        return out

    def metadata(self) -> dict:
        out = {"emulator": self.what, "taps": self.taps, "stats_file": str(self.stats_path)
               if self.ctx else None}
        if self.stats:
            lines = self.stats.stats()
            if lines:
                last = lines[-1]
                out["final_stats"] = last
                elapsed = last["wall"] - (self.ready_info or {}).get("wall", self.started_wall)
                if elapsed > 0:
                    out["cpu_fraction"] = round(last["cpu_s"] / elapsed, 4)
        if self.exit_code is not None:
            out["exit_code"] = self.exit_code
        return out


def wifi_binary() -> Path:
    """The ns-3 program: $NETLOOP_WIFI_LINK or the catkin devel space (``make build``)."""
    env = os.environ.get("NETLOOP_WIFI_LINK")
    if env:
        return Path(env)
    try:
        return paths.node_binary("netloop_wifi_link")
    except FileNotFoundError as err:
        raise TestbedError(f"{err} (it is built only when ns-3 3.37 is installed: "
                           "apt-get install ns3 libns3-dev libgsl-dev)") from None


#: ``standard`` of a profile -> ns-3 standard name given to netloop_wifi_link --standard.
NS3_STANDARDS = {"802.11a": "80211a", "802.11g": "80211g", "802.11n": "80211n"}


class Ns3WifiLink(TapLink):
    """802.11a/g/n, ad-hoc or through an access point, emulated in real time by ns-3."""

    what = "ns3"

    def __init__(self, profile: dict):
        super().__init__(profile)
        self.hosts = (["robot", "relay", "operator"] if profile["hops"] == 2
                      else robot_names(profile["robots"]) + ["operator"])

    def prerequisites(self) -> None:
        super().prerequisites()
        binary = wifi_binary()
        if not os.access(binary, os.X_OK):
            raise TestbedError(f"ns-3 link program {binary} is not executable")

    def command(self) -> list[str]:
        p = self.profile
        order = self.hosts  # positions on the line follow this order
        cmd = [] if not p["rt_priority"] else ["chrt", "-f", str(p["rt_priority"])]
        return cmd + [
            str(wifi_binary()),
            "--taps=" + ",".join(self.taps[h] for h in order),
            f"--layout={'star' if p['robots'] > 1 else 'line'}",
            "--ips=" + ",".join(host_address(h) for h in order),
            "--netmask=255.255.255.0",
            f"--standard={NS3_STANDARDS[p['standard']]}", f"--mode={p['mode']}",
            f"--manager={p['rate_manager']}",
            f"--rate={p['phy_rate']}", f"--distance={p['distance_m']}",
            f"--range={p['max_range_m']}", f"--tx-power={p['tx_power_dbm']}",
            f"--rts-threshold={p['rts_threshold']}", f"--queue={p['queue_packets']}",
            f"--seed={p['seed']}", f"--stats={self.stats_path}",
            f"--stats-interval={p['stats_interval_s']}", f"--probe-ms={p['probe_interval_ms']}",
            f"--lag-bound={p['lag_bound_ms']}",
            f"--frame-error-rate={p['frame_error_rate']}", f"--error-burst={p['error_burst']}",
            f"--retry-limit={p['retry_limit']}", f"--qos={'true' if p['qos'] else 'false'}",
        ] + ([f"--background-pairs={p['background_pairs']}", f"--background-mbit={p['background_mbit']}",
              f"--background-bytes={p['background_bytes']}"] if p["background_pairs"] else [])

    def shaper(self, host: str | None = None) -> dict | None:
        """The htb shaper on every host's net0, the same for each (``qdisc_rate_fraction`` > 0), or None.

        802.11a at a fixed rate r Mbit/s: a data frame of L bytes (as the tap counts it:
        Ethernet header + IP) occupies the air for DIFS (34 us) + the mean backoff
        (CWmin 15: 7.5 slots of 9 us) + preamble and SIGNAL (20 us) + the MPDU (L + 22
        bytes: 24 MAC header + 8 LLC/SNAP + 4 FCS - 14 Ethernet) with 22 service/tail bits in
        4 us symbols of 4r bits + SIFS (16 us) + the ACK (44 us at 6 Mbit/s). That is
        (L + overhead) * 8 / r with overhead = 181.5 us * r / 8 + 22 + 22/8 bytes (161 at 6
        Mbit/s), so htb at ``fraction`` x r with that overhead keeps the device queue short
        whenever the air is not busier than one uncontended sender. With a frame error rate
        p a frame needs 1/(1-p) transmissions on average, so the rate is also scaled by 1-p.
        Background stations (known: each pair offers ``background_mbit`` of
        ``background_bytes``-byte frames) take their mean share of the air first, counted
        the same way, so the hosts' shaper is set below what is left of it rather than below
        the whole air (:func:`~netloop.testbed.profiles.shaper_rate_kbit`)."""
        p = self.profile
        if not p["qdisc_rate_fraction"]:
            return None
        return {"rate_kbit": shaper_rate_kbit(p), "overhead_bytes": air_overhead_bytes(p["phy_rate"]),
                "limit_packets": p["qdisc_limit_packets"], "air_crossings": air_crossings(p),
                "background_air_mbit": round(background_air_mbit(p), 4)}

    def positions(self) -> dict[str, float | list[float]]:
        """Metres along the line: neighbours ``distance_m`` apart; in ap mode the access point
        sits between robot and operator, ``distance_m`` from each. With several robots, [x, y]:
        the hub (the operator, or the access point) at the origin and the other stations on
        a circle of radius ``distance_m`` (as netloop_wifi_link --layout star places them)."""
        d = self.profile["distance_m"]
        if self.profile["robots"] > 1:
            ap = self.profile["mode"] == "ap"
            around = self.hosts if ap else self.hosts[:-1]
            out = {h: [round(d * math.cos(2 * math.pi * i / len(around)), 3),
                       round(d * math.sin(2 * math.pi * i / len(around)), 3)] for i, h in enumerate(around)}
            out["access_point" if ap else "operator"] = [0.0, 0.0]
            return out
        if self.profile["mode"] == "ap":
            return {"robot": 0.0, "access_point": d, "operator": 2 * d}
        return {h: i * d for i, h in enumerate(self.hosts)}

    @staticmethod
    def _binary_or_none() -> str | None:
        try:
            return str(wifi_binary())
        except TestbedError:
            return None

    def station(self, host: str, action: str) -> None:
        """``host``'s station in the emulator (``src/ns3/station_presence.h``): ``down`` takes it
        off the air (before its tap goes down), ``up`` brings it back (before the tap goes up),
        ``open`` lets what it receives reach the tap again (after); its "station" lines say
        when it rejoined."""
        self.control(f"{action} {self.hosts.index(host)}")

    def station_events(self) -> list[dict]:
        """The emulator's "station" lines, each with its ``host``: left, rejoining, joined (ad-hoc:
        at once), associated / disassociated (ap mode: StaWifiMac's association)."""
        lines = [l for l in self.stats.poll() if l.get("type") == "station"] if self.stats else []
        return [{**l, "host": self.hosts[l["node"]]} for l in lines if 0 <= l["node"] < len(self.hosts)]

    def routes(self, host: str) -> list[str]:
        if self.profile["hops"] != 2 or host == "relay":
            return []
        other = "operator" if host == "robot" else "robot"
        return [f"{host_address(other)}/32 via {host_address('relay')} dev {IFACE}"]

    def metadata(self) -> dict:
        p = self.profile
        out = super().metadata()
        out.update({
            "simulator": "ns-3 3.37 RealtimeSimulatorImpl (best effort), ChecksumEnabled",
            "standard": f"IEEE {p['standard']} "
                        + ("infrastructure (access point in ns-3)" if p["mode"] == "ap" else "ad-hoc")
                        + {"constant": ", ConstantRateWifiManager", "ideal": ", IdealWifiManager",
                           "minstrel": ", MinstrelWifiManager" if p["standard"] != "802.11n"
                           else ", MinstrelHtWifiManager"}[p["rate_manager"]],
            "mode": p["mode"], "phy_rate": p["phy_rate"] if p["rate_manager"] == "constant" else None,
            "channel": "YANS, LogDistance" + (f" + Range {p['max_range_m']:g} m"
                                              if p["max_range_m"] else ""),
            "positions_m": self.positions(),
            "routing": ("relay namespace forwards IPv4; static /32 routes via the relay"
                        if p["hops"] == 2 else "the access point's MAC forwards between its stations"
                        if p["mode"] == "ap" else "direct"),
            "binary": self._binary_or_none(),
            "kernel_shaper": self.shaper(),
            **self.kernel_queue_metadata(),
            "frame_error_rate": p["frame_error_rate"], "error_burst": p["error_burst"],
            "retry_limit": p["retry_limit"],
            "macs": dict(zip(self.hosts, (self.ready_info or {}).get("macs", []))),
        })
        return out


class ShapedLink(TapLink):
    """Rate, delay, jitter, loss and queue limit per direction, emulated in userspace."""

    what = "shaper"

    def directions(self) -> dict:
        p = self.profile
        keys = ("rate_mbit", "delay_ms", "jitter_ms", "jitter_dist", "loss", "queue_packets")
        return {d: {k: (p[d][k] if p[d].get(k) is not None else p[k]) for k in keys}
                for d in ("to_operator", "to_robot")}

    def shaper(self, host: str | None = None) -> dict | None:
        """With ``qdisc_rate_fraction`` > 0: an htb on each host's net0 at that fraction of
        the rate of the direction it sends in (the robot: to_operator; the operator: to_robot),
        so the userspace FIFO holds a few packets and the rest waits in the kernel. The
        emulator counts Ethernet frame bytes, as htb does, so no overhead is added."""
        p = self.profile
        if not p["qdisc_rate_fraction"] or host is None:
            return None
        direction = self.directions()["to_operator" if host == "robot" else "to_robot"]
        return {"rate_kbit": int(round(p["qdisc_rate_fraction"] * direction["rate_mbit"] * 1000)),
                "overhead_bytes": 0, "limit_packets": p["qdisc_limit_packets"]}

    def env(self) -> dict:
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        return env

    def command(self) -> list[str]:
        p = self.profile
        cfg = {**self.directions(), "reorder": p["reorder"], "seed": p["seed"]}
        rt = ["chrt", "-f", str(p["rt_priority"])] if p["rt_priority"] else []
        return rt + [sys.executable, "-m", "netloop.testbed.shaper",
                "--tap", self.taps["robot"], "--tap", self.taps["operator"],
                "--config", json.dumps(cfg), "--stats", str(self.stats_path),
                "--lag-bound", str(p["lag_bound_ms"])]

    def metadata(self) -> dict:
        out = super().metadata()
        out["directions"] = self.directions()
        out["kernel_shaper"] = {h: self.shaper(h) for h in self.hosts} if self.profile["qdisc_rate_fraction"] else None
        out.update(self.kernel_queue_metadata())
        out["reorder"] = self.profile["reorder"]
        out["model"] = ("Bernoulli loss, then a FIFO limited to queue_packets sending at "
                        "rate_mbit, then delay + jitter" + ("" if self.profile["reorder"] else
                                                           " without reordering"))
        return out


IMPLEMENTATIONS = {"loopback": LoopbackLink, "ethernet": EthernetLink, "ns3_wifi": Ns3WifiLink,
                   "shaped": ShapedLink}


def make_link(profile: dict) -> Link:
    return IMPLEMENTATIONS[profile["type"]](profile)
