"""The interface every link implements, and the hosts' addressing on it.

A :class:`Link` joins the hosts' namespaces (created by the Testbed) and is brought up and
down by the Testbed. Every host gets one interface ``net0`` with an address in
``10.77.0.0/24`` (robot ``.1``, operator ``.2``, relay ``.3``, robotK ``.(10 + K)``); these
addresses exist only inside the testbed's namespaces. The hosts' htb (:func:`htb_classes`)
serves packets marked with a priority DSCP first. :class:`LoopbackLink`, the trivial link, is
here too; the others are in :mod:`netloop.testbed.links`' registry.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from . import util
from .profile_models import LinkProfile
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
    #: the emulator's stats lines carry each station's MAC queue statistics (their ``nodes``:
    #: ``small_arrivals``, ``small_ahead_mean``, ``mac_queue_max_total``, ``queue_drop``,
    #: ``retries``, ``data_mpdu_tx``); only ns-3's Wi-Fi has a MAC queue
    station_queue_stats = False

    def __init__(self, profile: LinkProfile):
        self.profile = profile
        self.ctx: LinkContext | None = None

    def prerequisites(self) -> None:
        """Raise TestbedError if a tool or program this link needs is missing."""
        for tool in ("ip", "tc"):
            if shutil.which(tool) is None:
                raise TestbedError(f"'{tool}' not found (install iproute2)")

    def up(self, ctx: LinkContext) -> None:
        raise NotImplementedError

    def down(self) -> None:
        """Stop what up() started; namespaces (and the interfaces in them) are the Testbed's."""

    def metadata(self) -> dict:
        return {}

    def health(self, since: float | None = None, until: float | None = None) -> dict:
        return {"valid": True, "reason": "ok"}

    def emulator_stats(self) -> list[dict]:
        """The emulator's statistics lines so far ("stats" and "final"); none without an
        emulator process."""
        return []

    def station_events(self) -> list[dict]:
        """Stations leaving and rejoining the network (emulated Wi-Fi only); none here."""
        return []

    def stats_file(self) -> Path | None:
        """The file the emulator writes its statistics lines to; None without an emulator."""
        return None

    def shape(self, host: str) -> None:
        """Set up ``host``'s egress queueing on net0 (default: the kernel's own qdisc)."""

    def routes(self, host: str) -> list[str]:
        """The routes ``host`` gets beside its subnet's (``ip route add`` arguments)."""
        return []

    def set_transmitting(self, hosts: Sequence[str], on: bool) -> None:
        """Stop (``on`` False) or restart the transmissions of ``hosts``: an outage. Stopped, a
        host's net0 drops every packet at once (a pfifo of length 0: silently, as a radio that
        is off; TCP retransmits with back-off); restarted, its queueing is set up as up() did.
        The hosts stop, and start again, together (one ``tc`` each, at the same time)."""
        namespaces = [self.ctx.netns[h] for h in hosts]
        if not on:
            util.run_together([["tc", "-n", ns, "qdisc", "replace", "dev", IFACE, "root", "pfifo", "limit", "0"]
                               for ns in namespaces])
            return
        util.run_together([["tc", "-n", ns, "qdisc", "del", "dev", IFACE, "root"] for ns in namespaces],
                          check=False)
        for host in hosts:
            self.shape(host)

    def set_loss(self, host: str | None, probability: float) -> None:
        """A loss burst: what ``host`` sends (None: every host) is lost with ``probability``
        until it is set back to 0. Only links whose emulator decides per packet have it."""
        raise TestbedError(f"a '{self.profile.type}' link has no per-packet loss here (the kernel has "
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


