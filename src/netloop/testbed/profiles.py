"""Link profiles: the YAML files in ``config/links/`` and their validation.

A profile file holds a ``type`` (which :class:`~netloop.testbed.links.Link` implementation
emulates it), an optional ``description`` and that type's parameters, all at the top level::

    type: shaped
    description: 10 Mbit/s, 20 ms each way
    rate_mbit: 10
    delay_ms: 20

:func:`load_profile` returns the validated profile with every default filled in, plus
``name`` (the file's stem). Overrides use the same keys (dotted for nested ones, e.g.
``to_robot.delay_ms``) and are validated together with the file, so a bad value is refused
with its key and the allowed values before anything is created.
"""
from __future__ import annotations

import re
from typing import Any

from netloop.paths import CONFIG
from netloop.schema import (Bool, ConfigError, Enum, Int, Map, Node, Num, Str, load_config_file,
                            validate)

LINKS_DIR = CONFIG / "links"

TYPES = ["loopback", "ethernet", "ns3_wifi", "shaped"]

_OFDM_MBPS = (6, 9, 12, 18, 24, 36, 48, 54)
#: 802.11a OFDM data rates ns-3 knows (ConstantRateWifiManager DataMode).
OFDM_RATES = [f"OfdmRate{r}Mbps" for r in _OFDM_MBPS]

#: The fixed data rates of each Wi-Fi standard (ns-3 mode names): 802.11a OFDM at 5 GHz,
#: 802.11g ERP-OFDM at 2.4 GHz, 802.11n HT MCS 0-7 (one spatial stream, 20 MHz, 800 ns
#: guard interval: 6.5 to 65 Mbit/s) at 2.4 GHz.
WIFI_RATES = {
    "802.11a": OFDM_RATES,
    "802.11g": [f"ErpOfdmRate{r}Mbps" for r in _OFDM_MBPS],
    "802.11n": [f"HtMcs{k}" for k in range(8)],
}

_COMMON = {
    "type": Enum(TYPES, doc="link implementation", what="link type"),
    "description": Str(default="", nonempty=False, doc="one line for humans"),
}

_MTU = Int(default=1500, ge=576, le=9000, doc="MTU of the hosts' interfaces, bytes")
_LAG = Num(default=5.0, gt=0, le=1000,
           doc="real-time lag (ms) of the emulator process that counts as late")
_LATE = Num(default=0.001, ge=0, le=1,
            doc="fraction of lag samples allowed above lag_bound_ms before a run is invalid "
                "(0 = strict: any sample above the bound invalidates the run)")
_RT = Int(default=10, ge=0, le=99,
          doc="SCHED_FIFO priority of the emulator process (0 = normal scheduling)")


SCHEMAS: dict[str, Map] = {
    "loopback": Map(dict(_COMMON)),
    "ethernet": Map({
        **_COMMON,
        "rate_mbit": Num(default=100.0, gt=0, le=100000, doc="rate of each direction, Mbit/s"),
        "qdisc": Enum(["htb", "tbf"], default="htb", doc="rate-limiting qdisc on both veth ends"),
        "queue_packets": Int(default=1000, ge=1, le=100000, doc="queue limit of each end, packets"),
        "mtu": _MTU,
        "robots": Int(default=1, ge=1, le=16, doc="robot hosts (robot, robot2, ..., robotN); with more than "
                                                  "one, each robot's veth ends on a bridge, the operator's net0"),
        "gso_max_segs": Int(default=1, ge=0, le=65535,
                            doc="the most TCP segments one packet (GSO skb) on a host's net0 may carry. "
                                "1: every packet the shaper releases is one frame, so a message takes "
                                "its time on the wire (16 KB at 100 Mbit/s: ~1.3 ms); 0: the kernel's "
                                "(a veth passes up to 64 KB as one packet, which the shaper charges "
                                "but releases at once: a 16 KB message then arrives in ~0.1 ms, faster "
                                "than any wire)"),
    }),
}


def _wifi_check(cfg: dict, key: str) -> None:
    d, r = cfg["distance_m"], cfg["max_range_m"]
    allowed = WIFI_RATES[cfg["standard"]]
    if cfg["phy_rate"] not in allowed:
        raise ConfigError("phy_rate", f"{cfg['phy_rate']!r} is not a rate of {cfg['standard']}; "
                          f"allowed: {', '.join(allowed)}")
    if cfg["mode"] == "ap":
        if cfg["hops"] != 1:
            raise ConfigError("mode", "ap puts robot and operator on one access point (one hop "
                              "each way, two over the air); it takes hops: 1, not "
                              f"{cfg['hops']} (the 2-hop chain is ad-hoc)")
        if r and r <= d:
            raise ConfigError("max_range_m", f"{r:g} m is not above distance_m={d:g}: the "
                              "stations could not hear the access point (0 = unlimited)")
    elif cfg["hops"] == 2:
        if not (d < r < 2 * d):
            raise ConfigError("max_range_m", f"{r:g} m does not make a 2-hop chain: with "
                              f"distance_m={d:g} it must be > {d:g} and < {2 * d:g} so that robot "
                              "and operator hear only the relay")
    elif r and r <= d:
        raise ConfigError("max_range_m", f"{r:g} m is not above distance_m={d:g}: robot and "
                          "operator could not hear each other (0 = unlimited)")
    if cfg["qdisc_rate_fraction"] and (cfg["standard"] != "802.11a"
                                       or cfg["rate_manager"] != "constant"):
        raise ConfigError("qdisc_rate_fraction", "the air-time shaper is calibrated only for "
                          "standard 802.11a with rate_manager constant (its per-frame air time "
                          f"is known); set it to 0 for {cfg['standard']} / {cfg['rate_manager']}")
    if cfg["robots"] > 1 and cfg["hops"] != 1:
        raise ConfigError("robots", f"{cfg['robots']} robots share one channel around the operator (or the "
                                    f"access point); that takes hops: 1, not {cfg['hops']}")
    if cfg["background_pairs"]:
        if cfg["mode"] != "adhoc":
            raise ConfigError("background_pairs", "background stations are ad-hoc stations; "
                              f"mode {cfg['mode']!r} takes background_pairs: 0")
        if not cfg["background_mbit"]:
            raise ConfigError("background_mbit", f"background_pairs: {cfg['background_pairs']} "
                              "needs the rate each pair offers (> 0 Mbit/s)")
        if cfg["qdisc_rate_fraction"] and air_left_mbit(cfg) <= 0:
            air = air_left_mbit(cfg) + background_air_mbit(cfg)
            raise ConfigError("background_mbit", f"{cfg['background_pairs']} pair(s) at "
                              f"{cfg['background_mbit']:g} Mbit/s take {background_air_mbit(cfg):.2f} Mbit/s "
                              f"of the air's {air:.2f}: nothing is left for the hosts' shaper; offer less")



def phy_mbit(phy_rate: str) -> float | None:
    """The data rate of an ns-3 rate name in Mbit/s: OfdmRate6Mbps -> 6, DsssRate5_5Mbps -> 5.5;
    None for a name without one (HtMcs7: it depends on the channel width and guard interval)."""
    rate = re.search(r"Rate(\d+)(?:_(\d+))?Mbps$", str(phy_rate))
    return float(f"{rate.group(1)}.{rate.group(2) or 0}") if rate else None


def air_crossings(cfg: dict[str, Any]) -> int:
    """How often a frame between robot and operator crosses the air: twice through a relay
    (2 hops) or an access point, once otherwise."""
    return 2 if (cfg["hops"] == 2 or cfg["mode"] == "ap") else 1


def air_overhead_bytes(phy_rate: str) -> int:
    """802.11a/g at a fixed rate r: what a data frame costs on the air beyond its bytes as the
    tap counts them (Ethernet header + IP), in bytes at r: DIFS, mean backoff, preamble,
    SIGNAL, SIFS and ACK (181.5 us), MAC header + LLC/SNAP + FCS - Ethernet header (22 bytes)
    and the service/tail bits (see :meth:`~netloop.testbed.links.Ns3WifiLink.shaper`)."""
    return int(round(181.5 * phy_mbit(phy_rate) / 8 + 22 + 22 / 8))


def background_air_mbit(cfg: dict[str, Any]) -> float:
    """The mean share of the air the background stations take, as Mbit/s at the phy rate
    (each pair's offered ``background_mbit`` of ``background_bytes``-byte frames, counted with
    the same per-frame overhead as the hosts' frames); 0 without background stations."""
    if not cfg.get("background_pairs"):
        return 0.0
    b = cfg["background_bytes"]
    return cfg["background_pairs"] * cfg["background_mbit"] * (b + 14 + air_overhead_bytes(cfg["phy_rate"])) / b


def air_left_mbit(cfg: dict[str, Any]) -> float:
    """What one sender gets of the air [Mbit/s at the phy rate]: the phy rate, less the frame
    errors' retransmissions, less the background's share (802.11a/g names only)."""
    return phy_mbit(cfg["phy_rate"]) * (1 - cfg["frame_error_rate"]) - background_air_mbit(cfg)


def shaper_rate_kbit(cfg: dict[str, Any]) -> int:
    """The hosts' htb rate: ``qdisc_rate_fraction`` x :func:`air_left_mbit`, halved when every
    frame crosses the air twice (:func:`air_crossings`)."""
    return int(round(cfg["qdisc_rate_fraction"] * air_left_mbit(cfg) * 1000 / air_crossings(cfg)))


#: the hosts' kernel side of a link whose emulator reads taps (ns3_wifi, shaped): the htb's
#: FIFO, and the TCP settings of the hosts' namespaces (TCP Small Queues, congestion control)
_KERNEL_QUEUE = {
    "qdisc_limit_packets": Int(default=1000, ge=1, le=100000,
                               doc="packets the shaper's FIFO holds (like txqueuelen) before "
                                   "tail drop"),
    "tcp_congestion_control": Enum(["inherit", "cubic", "reno", "bbr"], default="inherit",
                                   doc="TCP congestion control of the hosts' namespaces "
                                       "(net.ipv4.tcp_congestion_control); inherit: the "
                                       "machine's. Linux's default, and the Pound paper's, is "
                                       "cubic; BBR paces at its bandwidth estimate, which "
                                       "changes how much TCP Small Queues let into the qdisc",
                                   what="TCP congestion control"),
    "gso_max_segs": Int(default=0, ge=0, le=65535,
                        doc="0: the kernel's; otherwise the most TCP segments one packet (GSO "
                            "skb) on the hosts' net0 may carry. 1 makes every packet in the qdisc "
                            "one frame on the link, so TCP Small Queues (two packets per socket) "
                            "hold a bulk TCP flow to two frames below the socket, as on a Wi-Fi "
                            "NIC (no TSO)"),
    "tcp_limit_output_bytes": Int(default=0, ge=0, le=2**31 - 1,
                                  doc="0: the kernel's; otherwise TCP Small Queues' cap on the "
                                      "bytes one TCP socket may have queued below it on the "
                                      "hosts (net.ipv4.tcp_limit_output_bytes of their "
                                      "namespaces). A NIC's TSQ counts a packet until the driver "
                                      "has sent it, so its two packets include the one on the "
                                      "air; a tap frees each packet as it enters, so TSQ's two "
                                      "would both wait in the qdisc on top of what the emulator holds. "
                                      "Below one packet (e.g. 1000) one stays in the qdisc: with "
                                      "the frame in ns-3, two below the socket, as on a NIC"),
}

SCHEMAS["ns3_wifi"] = Map({
    **_COMMON,
    "hops": Int(default=1, ge=1, le=2,
                doc="1: robot-operator; 2: robot-relay-operator chain, ends out of range"),
    "robots": Int(default=1, ge=1, le=16,
                  doc="robot stations (robot, robot2, ..., robotN) on one channel: with more than one, the "
                      "operator (ap mode: the access point) in the middle and the robots on a circle of "
                      "radius distance_m around it (hops 1)"),
    "standard": Enum(list(WIFI_RATES), default="802.11a",
                     doc="802.11a (5 GHz OFDM), 802.11g (2.4 GHz ERP-OFDM), 802.11n (2.4 GHz HT, "
                         "20 MHz, one stream)", what="Wi-Fi standard"),
    "mode": Enum(["adhoc", "ap"], default="adhoc",
                 doc="adhoc: robot and operator talk directly; ap: both are stations of an access "
                     "point in the middle, which forwards every frame (it crosses the air twice)",
                 what="Wi-Fi mode"),
    "rate_manager": Enum(["constant", "ideal", "minstrel"], default="constant",
                         doc="constant: every data frame at phy_rate; ideal: ns-3's IdealWifiManager "
                             "picks the best rate for the signal-to-noise ratio; minstrel: ns-3's "
                             "Minstrel (MinstrelHt for 802.11n) learns it from frame losses",
                         what="rate manager"),
    "phy_rate": Enum(sorted(set().union(*WIFI_RATES.values())), default="OfdmRate6Mbps",
                     doc="fixed data rate (rate_manager constant), one of the standard's: "
                         + "; ".join(f"{k}: {v[0]} .. {v[-1]}" for k, v in WIFI_RATES.items()),
                     what="Wi-Fi rate"),
    "distance_m": Num(default=10.0, gt=0, le=10000,
                      doc="metres between neighbouring nodes (ap mode: each station to the access "
                          "point)"),
    "max_range_m": Num(default=0.0, ge=0, le=100000,
                       doc="radio range cut-off in metres (0 = unlimited)"),
    "tx_power_dbm": Num(default=16.0206, ge=-20, le=40, doc="transmit power, dBm"),
    "rts_threshold": Int(default=65535, ge=0, le=65535,
                         doc="RTS/CTS for frames above this many bytes (65535 = off)"),
    "queue_packets": Int(default=500, ge=1, le=100000,
                         doc="Wi-Fi MAC (device) queue size inside ns-3, packets; tail drop"),
    "qdisc_rate_fraction": Num(default=0.0, ge=0, le=1.5,
                               doc="0: none; otherwise an htb qdisc on every host's net0 sends at "
                                   "this fraction of the air's one-sender capacity (per-frame "
                                   "air time counted through htb's overhead), so the backlog "
                                   "waits in the kernel (TCP Small Queues apply) and ns-3's MAC "
                                   "queue holds a few frames, as on a Linux Wi-Fi NIC; halved "
                                   "per sender on 2-hop and ap links (every frame crosses the "
                                   "air twice)"),
    **_KERNEL_QUEUE,
    "frame_error_rate": Num(default=0.0, ge=0, lt=1,
                            doc="probability that a data frame is lost on the air (each loss "
                                "costs a MAC retry); ACKs and other control frames are not"),
    "error_burst": Num(default=1.0, ge=1, le=1000,
                       doc="mean length, in data frames, of a run of lost frames (1: each frame "
                           "lost independently; above 1: a two-state Gilbert-Elliott channel "
                           "with the same long-run frame_error_rate, whose bursts can outlast "
                           "the retries)"),
    "background_pairs": Int(default=0, ge=0, le=16,
                            doc="pairs of other stations on the channel (ad-hoc only): in range "
                                "of the hosts, each pair sends a Poisson stream of unicast "
                                "frames, the contention and collisions of a shared channel"),
    "background_mbit": Num(default=0.0, ge=0, le=100,
                           doc="offered rate of each background pair, Mbit/s of frame payload"),
    "background_bytes": Int(default=1000, ge=1, le=2304,
                            doc="payload bytes of a background frame"),
    "qos": Bool(default=False,
                doc="802.11e QoS: every station's MAC has the four EDCA access categories (ns-3's "
                    "default parameters for the standard: for 802.11a VO AIFSN 2 / CW 3-7, VI 2 / "
                    "7-15, BE 3 / 15-1023, BK 7 / 15-1023) and each frame from a host goes to the "
                    "one Linux's mac80211 picks from its DSCP (RFC 8325: EF, VA -> UP 6 -> VO; "
                    "CS6, CS7 -> VO; unmarked -> BE); false: one DCF queue (AIFSN 2, i.e. DIFS), "
                    "except on 802.11n, whose MACs are QoS in ns-3 anyway and then send every "
                    "frame as best effort"),
    "retry_limit": Int(default=7, ge=1, le=255,
                       doc="802.11 retry limit: transmissions of a data frame before the MAC "
                           "drops it (ns-3 MaxSsrc/MaxSlrc)"),
    "seed": Int(default=1, ge=1, doc="ns-3 random seed"),
    "lag_bound_ms": _LAG,
    "lag_late_fraction": _LATE,
    "probe_interval_ms": Num(default=1.0, gt=0, le=100, doc="ms between real-time lag probes"),
    "stats_interval_s": Num(default=1.0, gt=0, le=60, doc="seconds between stats lines"),
    "rt_priority": _RT,
    "mtu": Int(default=1500, ge=576, le=1500, doc="MTU of the hosts' interfaces, bytes"),
}, check=_wifi_check)


class _Inherit(Node):
    """A value that may be null (= take the top-level value); otherwise checked by ``node``."""

    def __init__(self, node: Node):
        super().__init__(None, node.doc)
        self.node = node

    def describe(self) -> str:
        return self.node.describe() + " or null (inherit)"

    def check(self, value, key):
        return None if value is None else self.node.check(value, key)


def _direction(inherit: bool) -> dict[str, Any]:
    """Per-direction shaping keys; in the per-direction maps they default to None (inherit)."""
    keys = {
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
    return {k: _Inherit(v) for k, v in keys.items()} if inherit else keys


SCHEMAS["shaped"] = Map({
    **_COMMON,
    **_direction(False),
    "to_operator": Map(_direction(True), default={},
                       doc="overrides for the robot->operator direction"),
    "to_robot": Map(_direction(True), default={},
                    doc="overrides for the operator->robot direction"),
    "reorder": Bool(default=False,
                    doc="let jitter reorder packets (false: a packet never overtakes another)"),
    "qdisc_rate_fraction": Num(default=0.0, ge=0, le=1.0,
                               doc="0: none; otherwise an htb qdisc on each host's net0 sends at "
                                   "this fraction of the rate_mbit of the direction it sends in, "
                                   "so the backlog waits in the kernel (TCP Small Queues apply) "
                                   "and the emulator's FIFO holds a few packets, as a NIC's ring"),
    **_KERNEL_QUEUE,
    "seed": Int(default=1, ge=0, doc="random seed of loss and jitter"),
    "lag_bound_ms": _LAG,
    "lag_late_fraction": _LATE,
    "rt_priority": _RT,
    "mtu": _MTU,
})


def profile_names() -> list[str]:
    """Names of the link profiles in ``config/links/*.yaml``, sorted."""
    return sorted(p.stem for p in LINKS_DIR.glob("*.yaml"))


def _set_dotted(doc: dict, key: str, value: Any) -> None:
    parts = str(key).split(".")
    node = doc
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(".".join(parts[:i + 1]), "is not a mapping; cannot set "
                              f"'{key}' inside it")
        node = child
    node[parts[-1]] = value


def validate_profile(data: Any, source: str | None = None, name: str | None = None) -> dict:
    """Validate a profile mapping (from a file or built in code); returns it with defaults."""
    if not isinstance(data, dict):
        raise ConfigError("", f"a link profile must be a mapping, got {type(data).__name__}",
                          source)
    data = dict(data)
    name = data.pop("name", None) or name or "custom"
    if "type" not in data:
        raise ConfigError("type", f"missing required key (one of {', '.join(TYPES)})", source)
    kind = validate(Map({"type": _COMMON["type"]}), {"type": data["type"]}, source)["type"]
    out = validate(SCHEMAS[kind], data, source)
    return {"name": name, **out}


def _raw_profile(name: str, names: list[str], seen: tuple[str, ...] = ()) -> dict:
    """``config/links/<name>.yaml`` as written; a profile with ``extends: <other>`` is the other
    profile's keys with its own on top (one level of keys; chains allowed, cycles refused)."""
    path = LINKS_DIR / f"{name}.yaml"
    raw = load_config_file(str(path))
    base = raw.pop("extends", None)
    if base is None:
        return raw
    if base not in names:
        raise ConfigError("extends", f"unknown link profile {base!r}; allowed: {', '.join(names)}", str(path))
    if base in seen + (name,):
        raise ConfigError("extends", f"profiles extend each other in a cycle: {' -> '.join(seen + (name, base))}",
                          str(path))
    merged = _raw_profile(base, names, seen + (name,))
    if "type" in raw and raw["type"] != merged.get("type"):
        raise ConfigError("type", f"{name} extends {base} ({merged.get('type')}) and cannot change its type",
                          str(path))
    return {**merged, **raw}


def load_profile(name: str, overrides: dict | None = None) -> dict:
    """Load ``config/links/<name>.yaml``, apply ``overrides`` and validate.

    Raises ConfigError for an unknown profile (listing the known ones), an unknown key
    (listing the allowed ones) or a value out of range (naming the key and the bounds)."""
    names = profile_names()
    if name not in names:
        from netloop.schema import _suggest
        raise ConfigError("link", f"unknown link profile {name!r}{_suggest(name, names)}; "
                                  f"allowed: {', '.join(names)}")
    path = LINKS_DIR / f"{name}.yaml"
    raw = _raw_profile(name, names)
    source = str(path)
    if overrides:
        source += " with overrides " + ", ".join(f"{k}={v!r}" for k, v in overrides.items())
        for key, value in overrides.items():
            if key in ("type", "name"):
                raise ConfigError(key, "cannot be overridden; choose another profile instead")
            _set_dotted(raw, key, value)
    return validate_profile(raw, source=source, name=name)


def parse_set(items: list[str] | None) -> dict:
    """Turn CLI ``--set key=value`` items into an overrides dict (values parsed as YAML)."""
    import yaml
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(str(item), "expected key=value (e.g. delay_ms=20)")
        key, _, text = item.partition("=")
        try:
            out[key.strip()] = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = text
    return out


def link_capacity_mbit(profile: dict) -> float | None:
    """Nominal capacity of a link profile [Mbit/s], or None when it has no limit (loopback).
    For Wi-Fi what the hosts have of the air, shared by both directions: the PHY rate, less
    the retransmissions of ``frame_error_rate`` and the background stations' mean share (as a
    user would measure it on a shared channel, e.g. with iperf3)."""
    if profile.get("capacity_mbit") is not None:
        return float(profile["capacity_mbit"])
    if profile["type"] == "ns3_wifi":   # an ns-3 rate name such as OfdmRate6Mbps or ErpOfdmRate54Mbps
        return round(air_left_mbit(profile), 4) if phy_mbit(profile["phy_rate"]) else None
    return profile.get("rate_mbit")
