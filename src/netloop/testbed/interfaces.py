"""Interface outages: a host's ``net0`` brought down and up again (faults of kind
``interface_down``, the Pound paper's Table V).

Down, the kernel sees it: the interface's routes go (the subnet's, the multicast route, a
2-hop chain's routes via the relay), so a socket that sends gets ``ENETUNREACH`` (UDP at once;
TCP's retransmissions fail and back off; a new connection is refused), the qdisc's backlog is
dropped, and on a veth the peer loses its carrier. Up, the kernel puts the subnet's route back
and netloop restores the rest (:meth:`netloop.testbed.links.Link.routes`); the qdisc netloop
set up stays through down and up.

On the emulated Wi-Fi (``ns3_wifi``) the host's station also leaves the network: it is taken
off the air in the emulator, and its tap closed, before the tap goes down (the emulator must
never write to a tap that is down), and put back on the air before the tap comes up (so the
host's first frames are sent), its tap opened after: in access-point mode it must then find
the access point and associate again (ns-3's StaWifiMac), in ad-hoc mode ns-3's MAC has no
join procedure and it is back at once. :func:`rejoins` reads how long that took from the
emulator's "station" lines.
"""
from __future__ import annotations

from typing import Any

from . import util
from .link_base import IFACE, MULTICAST_ROUTE, Link

#: link types whose hosts' interfaces can be brought down (not loopback: no interface of its own)
INTERFACE_LINKS = ("ethernet", "ns3_wifi", "shaped")


def bring_down(link: Link, host: str) -> None:
    """``host``'s net0 down (on Wi-Fi its station off the air first, its tap closed)."""
    station = getattr(link, "station", None)
    if station is not None:
        station(host, "down")
    util.ip_batch([f"link set dev {IFACE} down"], link.ctx.netns[host])


def bring_up(link: Link, host: str) -> None:
    """``host``'s net0 up with its routes as :meth:`Link.configure_host` set them. On Wi-Fi its
    station is back on the air first, so that the host's first frames find it there (a frame
    lost then, an ARP request, would cost the kernel's 1 s ARP retry), and its tap is opened
    after (the emulator also opens it on the first frame the host sends)."""
    station = getattr(link, "station", None)
    if station is not None:
        station(host, "up")
    util.ip_batch([f"link set dev {IFACE} up", f"route replace {MULTICAST_ROUTE} dev {IFACE}"]
                  + [f"route replace {r}" for r in link.routes(host)], link.ctx.netns[host])
    if station is not None:
        station(host, "open")


def is_up(link: Link, host: str) -> bool:
    """Whether ``host``'s net0 is administratively up."""
    out = util.run(["ip", "-n", link.ctx.netns[host], "-o", "link", "show", "dev", IFACE]).stdout
    flags = out.split("<", 1)[1].split(">", 1)[0].split(",") if "<" in out else []
    return "UP" in flags


def rejoins(events: list[dict[str, Any]], host: str, after_wall: float) -> dict[str, Any] | None:
    """How ``host``'s station came back after ``after_wall`` (time.time() of the ``up``): the
    first "rejoining" line after it and the first "joined" (ad-hoc) or "associated" (access
    point) line after that: {"event", "wall", "rejoin_ms"} (the emulator's simulated time
    between the two), or None when the emulator reported no rejoin (no Wi-Fi, or not yet)."""
    mine = [e for e in events if e.get("host") == host and e["wall"] >= after_wall - 0.05]
    start = next((e for e in mine if e["event"] == "rejoining"), None)
    if start is None:
        return None
    done = next((e for e in mine if e["event"] in ("joined", "associated") and e["sim_s"] >= start["sim_s"]), None)
    if done is None:
        return {"event": None, "wall": None, "rejoin_ms": None}
    return {"event": done["event"], "wall": round(done["wall"], 6),
            "rejoin_ms": round((done["sim_s"] - start["sim_s"]) * 1e3, 3)}


def wait_for_rejoin(testbed, host: str, after_wall: float, timeout: float) -> dict[str, Any] | None:
    """:func:`rejoins` of ``host`` once its station has rejoined (or None after ``timeout`` s)."""
    def done():
        r = rejoins(testbed.station_events(), host, after_wall)
        return r if r and r["event"] else None
    return util.wait_for(done, timeout)
