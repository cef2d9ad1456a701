"""``ns3_wifi``: taps bridged into a real-time ns-3 802.11a/g/n channel (``netloop_wifi_link``,
``src/ns3/``), ad-hoc or through an access point, one or two hops, several robots.

With ``hops: 2`` the relay is a host of its own: robot and operator are out of each other's
radio range, their routes to each other go through the relay's address, and the relay
namespace forwards IPv4 (ICMP redirects off), so every robot-operator packet crosses the
channel twice. With ``mode: ap`` the access point lives inside ns-3 (no host, no tap): robot
and operator are its stations, one subnet, and its MAC forwards every frame between them.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from netloop import paths

from . import nic_flow, util
from .link_base import IFACE, host_address, robot_names
from .profiles import LinkProfile, air_crossings, air_overhead_bytes, background_air_mbit, shaper_rate_kbit
from .tap_link import TapLink
from .util import TestbedError


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
    station_queue_stats = True

    def __init__(self, profile: LinkProfile):
        super().__init__(profile)
        self.hosts = (["robot", "relay", "operator"] if profile.hops == 2
                      else robot_names(profile.robots) + ["operator"])

    @property
    def stats_interval_s(self) -> float:
        """The profile's ``stats_interval_s`` (netloop_wifi_link --stats-interval)."""
        return self.profile.stats_interval_s

    def prerequisites(self) -> None:
        super().prerequisites()
        binary = wifi_binary()
        if not os.access(binary, os.X_OK):
            raise TestbedError(f"ns-3 link program {binary} is not executable")
        if self.profile.nic_ring_frames:
            nic_flow.prerequisites()

    def command(self) -> list[str]:
        p = self.profile
        order = self.hosts  # positions on the line follow this order
        cmd = [] if not p.rt_priority else ["chrt", "-f", str(p.rt_priority)]
        return cmd + [
            str(wifi_binary()),
            "--taps=" + ",".join(self.taps[h] for h in order),
            f"--layout={'star' if p.robots > 1 else 'line'}",
            "--ips=" + ",".join(host_address(h) for h in order),
            "--netmask=255.255.255.0",
            f"--standard={NS3_STANDARDS[p.standard]}", f"--mode={p.mode}",
            f"--manager={p.rate_manager}",
            f"--rate={p.phy_rate}", f"--distance={p.distance_m}",
            f"--range={p.max_range_m}", f"--tx-power={p.tx_power_dbm}",
            f"--rts-threshold={p.rts_threshold}", f"--queue={p.queue_packets}",
            f"--seed={p.seed}", f"--stats={self.stats_path}",
            f"--stats-interval={p.stats_interval_s}", f"--probe-ms={p.probe_interval_ms}",
            f"--lag-bound={p.lag_bound_ms}",
            f"--frame-error-rate={p.frame_error_rate}", f"--error-burst={p.error_burst}",
            f"--retry-limit={p.retry_limit}", f"--qos={'true' if p.qos else 'false'}",
        ] + ([f"--background-pairs={p.background_pairs}", f"--background-mbit={p.background_mbit}",
              f"--background-bytes={p.background_bytes}"] if p.background_pairs else []) + (
            nic_flow.emulator_args([self.ctx.netns[h] for h in order], p.nic_ring_frames, p.qdisc_limit_packets,
                                   [p.nic_packet_us.get(h, 0.0) for h in order]) if p.nic_ring_frames else [])

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
        if not p.qdisc_rate_fraction:
            return None
        return {"rate_kbit": shaper_rate_kbit(p), "overhead_bytes": air_overhead_bytes(p.phy_rate),
                "limit_packets": p.qdisc_limit_packets, "air_crossings": air_crossings(p),
                "background_air_mbit": round(background_air_mbit(p), 4)}

    def configure_host(self, host: str, iface: str, mtu: int, routes: list[str] = ()) -> None:
        super().configure_host(host, iface, mtu, routes)
        if self.profile.nic_ring_frames:
            nic_flow.install(self.ctx.netns[host])

    def set_transmitting(self, hosts, on: bool) -> None:
        """As every link's, and with the NIC's flow control the hosts also drop what they send
        before it can wait in their queue for the link's return."""
        if self.profile.nic_ring_frames:
            util.run_together(nic_flow.hold_commands([self.ctx.netns[h] for h in hosts], not on),
                              check=not on)
        super().set_transmitting(hosts, on)

    def positions(self) -> dict[str, float | list[float]]:
        """Metres along the line: neighbours ``distance_m`` apart; in ap mode the access point
        sits between robot and operator, ``distance_m`` from each. With several robots, [x, y]:
        the hub (the operator, or the access point) at the origin and the other stations on
        a circle of radius ``distance_m`` (as netloop_wifi_link --layout star places them)."""
        d = self.profile.distance_m
        if self.profile.robots > 1:
            ap = self.profile.mode == "ap"
            around = self.hosts if ap else self.hosts[:-1]
            out = {h: [round(d * math.cos(2 * math.pi * i / len(around)), 3),
                       round(d * math.sin(2 * math.pi * i / len(around)), 3)] for i, h in enumerate(around)}
            out["access_point" if ap else "operator"] = [0.0, 0.0]
            return out
        if self.profile.mode == "ap":
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
        if self.profile.hops != 2 or host == "relay":
            return []
        other = "operator" if host == "robot" else "robot"
        return [f"{host_address(other)}/32 via {host_address('relay')} dev {IFACE}"]

    def metadata(self) -> dict:
        p = self.profile
        out = super().metadata()
        out.update({
            "simulator": "ns-3 3.37 RealtimeSimulatorImpl (best effort), ChecksumEnabled",
            "standard": f"IEEE {p.standard} "
                        + ("infrastructure (access point in ns-3)" if p.mode == "ap" else "ad-hoc")
                        + {"constant": ", ConstantRateWifiManager", "ideal": ", IdealWifiManager",
                           "minstrel": ", MinstrelWifiManager" if p.standard != "802.11n"
                           else ", MinstrelHtWifiManager"}[p.rate_manager],
            "mode": p.mode, "phy_rate": p.phy_rate if p.rate_manager == "constant" else None,
            "channel": "YANS, LogDistance" + (f" + Range {p.max_range_m:g} m"
                                              if p.max_range_m else ""),
            "positions_m": self.positions(),
            "routing": ("relay namespace forwards IPv4; static /32 routes via the relay"
                        if p.hops == 2 else "the access point's MAC forwards between its stations"
                        if p.mode == "ap" else "direct"),
            "binary": self._binary_or_none(),
            "kernel_shaper": self.shaper(),
            "nic_flow_control": (nic_flow.metadata(p.nic_ring_frames, p.qdisc_limit_packets, p.nic_packet_us)
                                 if p.nic_ring_frames else None),
            **self.kernel_queue_metadata(),
            "frame_error_rate": p.frame_error_rate, "error_burst": p.error_burst,
            "retry_limit": p.retry_limit,
            "macs": dict(zip(self.hosts, (self.ready_info or {}).get("macs", []))),
        })
        return out
