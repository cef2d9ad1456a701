"""The link profiles' typed models: one class per link ``type``, each the one definition of its
keys (type, default, range, help text), validated with every problem of a file at once.

:class:`LinkProfile` is the base (``name``, ``type``, ``description``); :class:`TapProfile`
adds what every emulator that owns taps has (the hosts' kernel queue, real-time health,
scheduling); :data:`MODELS` maps each ``type`` to its class. A profile is read by attribute
(``profile.delay_ms``) only; :meth:`LinkProfile.to_dict` gives its keys as plain data, which is
what a run's ``metadata.json`` records as the link's ``params``. A key one type has and another
lacks is not probed for: the link (:mod:`netloop.testbed.link_base`) or the profile's own
methods (:meth:`LinkProfile.capacity_mbit`) answer for their type.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from netloop.schema import Bool, Collector, Enum, Int, Map, Node, Num, Str, key, section, to_dict

from .link_air import WIFI_RATES, air_left_mbit, background_air_mbit, phy_mbit


_MTU = Int(default=1500, ge=576, le=9000, doc="MTU of the hosts' interfaces, bytes")
_LAG = Num(default=5.0, gt=0, le=1000,
           doc="real-time lag (ms) of the emulator process that counts as late")
_LATE = Num(default=0.001, ge=0, le=1,
            doc="fraction of lag samples allowed above lag_bound_ms before a run is invalid "
                "(0 = strict: any sample above the bound invalidates the run)")
_RT = Int(default=10, ge=0, le=99,
          doc="SCHED_FIFO priority of the emulator process (0 = normal scheduling)")


@section("the keys every link profile has")
class LinkProfile:
    """A validated link profile. Subclasses add their type's keys."""

    name: str = key(Str(default="custom", doc="the profile's name (its file's stem)"))
    type: str = key(Enum(lambda: list(MODELS), doc="link implementation", what="link type"))
    description: str = key(Str(default="", nonempty=False, doc="one line for humans"))

    def to_dict(self) -> dict[str, Any]:
        """Every key with its value, in the schema's order, as plain data (metadata.json's
        ``params``, the testbed's state file)."""
        return to_dict(self)

    def capacity_mbit(self) -> float | None:
        """The link's nominal capacity [Mbit/s] (:func:`~netloop.testbed.link_air.link_capacity_mbit`);
        None: no limit (loopback)."""
        return None


@section("loopback: robot and operator in the root namespace, traffic on lo")
class LoopbackProfile(LinkProfile):
    """No keys of its own."""


@section("ethernet: a veth pair, or a switch of them, shaped by htb or tbf")
class EthernetProfile(LinkProfile):
    rate_mbit: float = key(Num(default=100.0, gt=0, le=100000, doc="rate of each direction, Mbit/s"))
    qdisc: str = key(Enum(["htb", "tbf"], default="htb", doc="rate-limiting qdisc on both veth ends"))
    queue_packets: int = key(Int(default=1000, ge=1, le=100000, doc="queue limit of each end, packets"))
    mtu: int = key(_MTU)
    robots: int = key(Int(default=1, ge=1, le=16, doc="robot hosts (robot, robot2, ..., robotN); with more than "
        "one, each robot's veth ends on a bridge, the operator's net0"))
    gso_max_segs: int = key(Int(default=1, ge=0, le=65535,
        doc="the most TCP segments one packet (GSO skb) on a host's net0 may carry. "
        "1: every packet the shaper releases is one frame, so a message takes "
        "its time on the wire (16 KB at 100 Mbit/s: ~1.3 ms); 0: the kernel's "
        "(a veth passes up to 64 KB as one packet, which the shaper charges "
        "but releases at once: a 16 KB message then arrives in ~0.1 ms, faster "
        "than any wire)"))

    def capacity_mbit(self) -> float | None:
        return self.rate_mbit


@section("what every link whose emulator owns taps has: the hosts' kernel queue in front of the "
         "taps, the emulator's real-time health, its scheduling")
class TapProfile(LinkProfile):
    qdisc_limit_packets: int = key(Int(default=1000, ge=1, le=100000,
        doc="packets the shaper's FIFO holds (like txqueuelen) before "
        "tail drop"))
    tcp_congestion_control: str = key(Enum(["inherit", "cubic", "reno", "bbr"], default="inherit",
        doc="TCP congestion control of the hosts' namespaces "
        "(net.ipv4.tcp_congestion_control); inherit: the "
        "machine's. Linux's default, and the Pound paper's, is "
        "cubic; BBR paces at its bandwidth estimate, which "
        "changes how much TCP Small Queues let into the qdisc",
        what="TCP congestion control"))
    gso_max_segs: int = key(Int(default=0, ge=0, le=65535,
        doc="0: the kernel's; otherwise the most TCP segments one packet (GSO "
        "skb) on the hosts' net0 may carry. 1 makes every packet in the qdisc "
        "one frame on the link, so TCP Small Queues (two packets per socket) "
        "hold a bulk TCP flow to two frames below the socket, as on a Wi-Fi "
        "NIC (no TSO)"))
    tcp_limit_output_bytes: int = key(Int(default=0, ge=0, le=2**31 - 1,
        doc="0: the kernel's; otherwise TCP Small Queues' cap on the "
        "bytes one TCP socket may have queued below it on the "
        "hosts (net.ipv4.tcp_limit_output_bytes of their "
        "namespaces). A NIC's TSQ counts a packet until the driver "
        "has sent it, so its two packets include the one on the "
        "air; a tap frees each packet as it enters, so TSQ's two "
        "would both wait in the qdisc on top of what the emulator holds. "
        "Below one packet (e.g. 1000) one stays in the qdisc: with "
        "the frame in ns-3, two below the socket, as on a NIC"))
    lag_bound_ms: float = key(_LAG)
    lag_late_fraction: float = key(_LATE)
    rt_priority: int = key(_RT)


def _wifi_check(cfg: dict, key: str) -> None:
    """The keys of an ns3_wifi profile that must agree; every disagreement reported at once."""
    found = Collector()
    air = SimpleNamespace(**cfg)   # the air functions read a profile's keys by attribute
    d, r = cfg["distance_m"], cfg["max_range_m"]
    allowed = WIFI_RATES[cfg["standard"]]
    if cfg["phy_rate"] not in allowed:
        found.add("phy_rate", f"{cfg['phy_rate']!r} is not a rate of {cfg['standard']}; "
                          f"allowed: {', '.join(allowed)}")
    if cfg["mode"] == "ap":
        if cfg["hops"] != 1:
            found.add("mode", "ap puts robot and operator on one access point (one hop "
                              "each way, two over the air); it takes hops: 1, not "
                              f"{cfg['hops']} (the 2-hop chain is ad-hoc)")
        if r and r <= d:
            found.add("max_range_m", f"{r:g} m is not above distance_m={d:g}: the "
                              "stations could not hear the access point (0 = unlimited)")
    elif cfg["hops"] == 2:
        if not (d < r < 2 * d):
            found.add("max_range_m", f"{r:g} m does not make a 2-hop chain: with "
                              f"distance_m={d:g} it must be > {d:g} and < {2 * d:g} so that robot "
                              "and operator hear only the relay")
    elif r and r <= d:
        found.add("max_range_m", f"{r:g} m is not above distance_m={d:g}: robot and "
                          "operator could not hear each other (0 = unlimited)")
    if cfg["qdisc_rate_fraction"] and (cfg["standard"] != "802.11a"
                                       or cfg["rate_manager"] != "constant"):
        found.add("qdisc_rate_fraction", "the air-time shaper is calibrated only for "
                          "standard 802.11a with rate_manager constant (its per-frame air time "
                          f"is known); set it to 0 for {cfg['standard']} / {cfg['rate_manager']}")
    if cfg["qdisc_rate_fraction"] and cfg["nic_ring_frames"]:
        found.add("qdisc_rate_fraction", "the hosts' queue drains either at the pace the emulated "
                          "NIC allows (nic_ring_frames) or at a fixed shaper rate (qdisc_rate_fraction), "
                          "not both: set one of them to 0")
    if cfg["nic_packet_us"]:
        hosts = (["robot", "relay", "operator"] if cfg["hops"] == 2
                 else ["robot"] + [f"robot{k}" for k in range(2, cfg["robots"] + 1)] + ["operator"])
        unknown = sorted(set(cfg["nic_packet_us"]) - set(hosts))
        if unknown:
            found.add("nic_packet_us", f"unknown host(s) {', '.join(unknown)}; allowed: {', '.join(hosts)}")
        if not cfg["nic_ring_frames"]:
            found.add("nic_packet_us", "a NIC's time per packet needs its flow control (nic_ring_frames > 0)")
    if cfg["robots"] > 1 and cfg["hops"] != 1:
        found.add("robots", f"{cfg['robots']} robots share one channel around the operator (or the "
                                    f"access point); that takes hops: 1, not {cfg['hops']}")
    if cfg["background_pairs"]:
        if cfg["mode"] != "adhoc":
            found.add("background_pairs", "background stations are ad-hoc stations; "
                              f"mode {cfg['mode']!r} takes background_pairs: 0")
        if not cfg["background_mbit"]:
            found.add("background_mbit", f"background_pairs: {cfg['background_pairs']} "
                              "needs the rate each pair offers (> 0 Mbit/s)")
        if cfg["qdisc_rate_fraction"] and cfg["phy_rate"] in allowed and air_left_mbit(air) <= 0:
            whole = air_left_mbit(air) + background_air_mbit(air)
            found.add("background_mbit", f"{cfg['background_pairs']} pair(s) at "
                              f"{cfg['background_mbit']:g} Mbit/s take {background_air_mbit(air):.2f} Mbit/s "
                              f"of the air's {whole:.2f}: nothing is left for the hosts' shaper; offer less")
    found.raise_if_any()


@section("ns3_wifi: taps bridged into a real-time ns-3 802.11a/g/n channel", check=_wifi_check)
class Ns3WifiProfile(TapProfile):
    hops: int = key(Int(default=1, ge=1, le=2,
        doc="1: robot-operator; 2: robot-relay-operator chain, ends out of range"))
    robots: int = key(Int(default=1, ge=1, le=16,
        doc="robot stations (robot, robot2, ..., robotN) on one channel: with more than one, the "
        "operator (ap mode: the access point) in the middle and the robots on a circle of "
        "radius distance_m around it (hops 1)"))
    standard: str = key(Enum(list(WIFI_RATES), default="802.11a",
        doc="802.11a (5 GHz OFDM), 802.11g (2.4 GHz ERP-OFDM), 802.11n (2.4 GHz HT, "
        "20 MHz, one stream)", what="Wi-Fi standard"))
    mode: str = key(Enum(["adhoc", "ap"], default="adhoc",
        doc="adhoc: robot and operator talk directly; ap: both are stations of an access "
        "point in the middle, which forwards every frame (it crosses the air twice)",
        what="Wi-Fi mode"))
    rate_manager: str = key(Enum(["constant", "ideal", "minstrel"], default="constant",
        doc="constant: every data frame at phy_rate; ideal: ns-3's IdealWifiManager "
        "picks the best rate for the signal-to-noise ratio; minstrel: ns-3's "
        "Minstrel (MinstrelHt for 802.11n) learns it from frame losses",
        what="rate manager"))
    phy_rate: str = key(Enum(sorted(set().union(*WIFI_RATES.values())), default="OfdmRate6Mbps",
        doc="fixed data rate (rate_manager constant), one of the standard's: "
        + "; ".join(f"{k}: {v[0]} .. {v[-1]}" for k, v in WIFI_RATES.items()),
        what="Wi-Fi rate"))
    distance_m: float = key(Num(default=10.0, gt=0, le=10000,
        doc="metres between neighbouring nodes (ap mode: each station to the access "
        "point)"))
    max_range_m: float = key(Num(default=0.0, ge=0, le=100000,
        doc="radio range cut-off in metres (0 = unlimited)"))
    tx_power_dbm: float = key(Num(default=16.0206, ge=-20, le=40, doc="transmit power, dBm"))
    rts_threshold: int = key(Int(default=65535, ge=0, le=65535,
        doc="RTS/CTS for frames above this many bytes (65535 = off)"))
    queue_packets: int = key(Int(default=500, ge=1, le=100000,
        doc="Wi-Fi MAC (device) queue size inside ns-3, packets; tail drop"))
    nic_ring_frames: int = key(Int(default=2, ge=0, le=4096,
        doc="flow control of the emulated NIC: a host's packets wait in the host (its netfilter "
        "queue, where TCP Small Queues count them, up to qdisc_limit_packets) until its "
        "station's device holds fewer than this many frames (the one on the air, retries "
        "included), as a driver stops its queue while its ring is full; so collisions, retries, "
        "other stations and a second hop slow the host at the air's own pace. 2: one frame "
        "on the air and one ready; 0: none (the host sends straight into ns-3's MAC queue, or "
        "at qdisc_rate_fraction)"))
    nic_packet_us: dict = key(Map({}, {}, doc="per host, the time [us] its Wi-Fi NIC spends on each "
        "packet it sends (its bus and firmware: a Raspberry Pi 3's is in docs/links.md), so the NIC lets "
        "packets through no faster than one per that time whatever the air allows; an experiment's "
        "hosts.<host>.nic_packet_us sets it (needs nic_ring_frames)", extra=Num(default=0.0, ge=0, le=100000)))
    qdisc_rate_fraction: float = key(Num(default=0.0, ge=0, le=1.5,
        doc="0: none; otherwise (with nic_ring_frames 0) an htb qdisc on every host's net0 sends at "
        "this fraction of the air's one-sender capacity (per-frame "
        "air time counted through htb's overhead), so the backlog "
        "waits in the kernel (TCP Small Queues apply) and ns-3's MAC "
        "queue holds a few frames, as on a Linux Wi-Fi NIC; halved "
        "per sender on 2-hop and ap links (every frame crosses the "
        "air twice)"))
    frame_error_rate: float = key(Num(default=0.0, ge=0, lt=1,
        doc="probability that a data frame is lost on the air (each loss "
        "costs a MAC retry); ACKs and other control frames are not"))
    error_burst: float = key(Num(default=1.0, ge=1, le=1000,
        doc="mean length, in data frames, of a run of lost frames (1: each frame "
        "lost independently; above 1: a two-state Gilbert-Elliott channel "
        "with the same long-run frame_error_rate, whose bursts can outlast "
        "the retries)"))
    background_pairs: int = key(Int(default=0, ge=0, le=16,
        doc="pairs of other stations on the channel (ad-hoc only): in range "
        "of the hosts, each pair sends a Poisson stream of unicast "
        "frames, the contention and collisions of a shared channel"))
    background_mbit: float = key(Num(default=0.0, ge=0, le=100,
        doc="offered rate of each background pair, Mbit/s of frame payload"))
    background_bytes: int = key(Int(default=1000, ge=1, le=2304,
        doc="payload bytes of a background frame"))
    qos: bool = key(Bool(default=False,
        doc="802.11e QoS: every station's MAC has the four EDCA access categories (ns-3's "
        "default parameters for the standard: for 802.11a VO AIFSN 2 / CW 3-7, VI 2 / "
        "7-15, BE 3 / 15-1023, BK 7 / 15-1023) and each frame from a host goes to the "
        "one Linux's mac80211 picks from its DSCP (RFC 8325: EF, VA -> UP 6 -> VO; "
        "CS6, CS7 -> VO; unmarked -> BE); false: one DCF queue (AIFSN 2, i.e. DIFS), "
        "except on 802.11n, whose MACs are QoS in ns-3 anyway and then send every "
        "frame as best effort"))
    retry_limit: int = key(Int(default=7, ge=1, le=255,
        doc="802.11 retry limit: transmissions of a data frame before the MAC "
        "drops it (ns-3 MaxSsrc/MaxSlrc)"))
    seed: int = key(Int(default=1, ge=1, doc="ns-3 random seed"))
    probe_interval_ms: float = key(Num(default=1.0, gt=0, le=100, doc="ms between real-time lag probes"))
    stats_interval_s: float = key(Num(default=1.0, gt=0, le=60, doc="seconds between stats lines"))
    mtu: int = key(Int(default=1500, ge=576, le=1500, doc="MTU of the hosts' interfaces, bytes"))

    def capacity_mbit(self) -> float | None:
        """What the hosts have of the air, shared by both directions (802.11a/g rate names;
        None for an HT MCS, whose rate depends on the channel)."""
        return round(air_left_mbit(self), 4) if phy_mbit(self.phy_rate) else None


class _Inherit(Node):
    """A value that may be null (= take the top-level value); otherwise checked by ``node``."""

    def __init__(self, node: Node):
        super().__init__(None, node.doc)
        self.node = node

    def describe(self) -> str:
        return self.node.describe() + " or null (inherit)"

    def check(self, value, key):
        return None if value is None else self.node.check(value, key)


def _inheriting(keys: dict[str, Node]) -> dict[str, Node]:
    """Per-direction overrides of ``keys``: each defaults to None (take the top-level value)."""
    return {k: _Inherit(v) for k, v in keys.items()}


#: the shaping keys of one direction (top level: both; under to_operator / to_robot: one)
_DIRECTION = {
    "rate_mbit": Num(default=10.0, gt=0, le=1000, doc="rate, Mbit/s"),
    "delay_ms": Num(default=10.0, ge=0, le=10000, doc="base one-way delay, ms"),
    "jitter_ms": Num(default=0.0, ge=0, le=10000,
                     doc="jitter: half-width (uniform) or standard deviation (normal), ms"),
    "jitter_dist": Enum(["uniform", "normal"], default="uniform",
                        doc="jitter distribution", what="jitter distribution"),
    "loss": Num(default=0.0, ge=0, lt=1, doc="packet loss probability (0..1)"),
    "queue_packets": Int(default=100, ge=1, le=100000,
                         doc="packets waiting for the link before tail drop"),
}


@section("shaped: taps joined by the userspace emulator (netloop.testbed.shaper)")
class ShapedProfile(TapProfile):
    rate_mbit: float = key(_DIRECTION['rate_mbit'])
    delay_ms: float = key(_DIRECTION['delay_ms'])
    jitter_ms: float = key(_DIRECTION['jitter_ms'])
    jitter_dist: str = key(_DIRECTION['jitter_dist'])
    loss: float = key(_DIRECTION['loss'])
    queue_packets: int = key(_DIRECTION['queue_packets'])
    to_operator: dict = key(Map(_inheriting(_DIRECTION), default={},
        doc="overrides for the robot->operator direction"))
    to_robot: dict = key(Map(_inheriting(_DIRECTION), default={},
        doc="overrides for the operator->robot direction"))
    reorder: bool = key(Bool(default=False,
        doc="let jitter reorder packets (false: a packet never overtakes another)"))
    qdisc_rate_fraction: float = key(Num(default=0.0, ge=0, le=1.0,
        doc="0: none; otherwise an htb qdisc on each host's net0 sends at "
        "this fraction of the rate_mbit of the direction it sends in, "
        "so the backlog waits in the kernel (TCP Small Queues apply) "
        "and the emulator's FIFO holds a few packets, as a NIC's ring"))
    seed: int = key(Int(default=1, ge=0, doc="random seed of loss and jitter"))
    mtu: int = key(_MTU)

    def capacity_mbit(self) -> float | None:
        """The top-level ``rate_mbit`` (a direction may override it)."""
        return self.rate_mbit


#: a profile's ``type`` -> its model: the one list of link types (a type's emulator is
#: ``links.IMPLEMENTATIONS[type]``; a test holds the two lists equal)
MODELS: dict[str, type[LinkProfile]] = {"loopback": LoopbackProfile, "ethernet": EthernetProfile,
                                        "ns3_wifi": Ns3WifiProfile, "shaped": ShapedProfile}
TYPES = list(MODELS)
