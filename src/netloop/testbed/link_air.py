"""What a link profile's numbers mean on the air and on the wire: the Wi-Fi standards' rates,
the air time of a frame, the background stations' share, the hosts' shaper rate, and a link's
nominal capacity. Functions of a profile's keys, read by attribute (a typed profile, or its
keys in a namespace while it is being validated)."""
from __future__ import annotations

import re
from typing import Any

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


def phy_mbit(phy_rate: str) -> float | None:
    """The data rate of an ns-3 rate name in Mbit/s: OfdmRate6Mbps -> 6, DsssRate5_5Mbps -> 5.5;
    None for a name without one (HtMcs7: it depends on the channel width and guard interval)."""
    rate = re.search(r"Rate(\d+)(?:_(\d+))?Mbps$", str(phy_rate))
    return float(f"{rate.group(1)}.{rate.group(2) or 0}") if rate else None


def air_crossings(cfg: Any) -> int:
    """How often a frame between robot and operator crosses the air: twice through a relay
    (2 hops) or an access point, once otherwise."""
    return 2 if (cfg.hops == 2 or cfg.mode == "ap") else 1


def air_overhead_bytes(phy_rate: str) -> int:
    """802.11a/g at a fixed rate r: what a data frame costs on the air beyond its bytes as the
    tap counts them (Ethernet header + IP), in bytes at r: DIFS, mean backoff, preamble,
    SIGNAL, SIFS and ACK (181.5 us), MAC header + LLC/SNAP + FCS - Ethernet header (22 bytes)
    and the service/tail bits (see :meth:`~netloop.testbed.links.Ns3WifiLink.shaper`)."""
    return int(round(181.5 * phy_mbit(phy_rate) / 8 + 22 + 22 / 8))


def background_air_mbit(cfg: Any) -> float:
    """The mean share of the air the background stations take, as Mbit/s at the phy rate
    (each pair's offered ``background_mbit`` of ``background_bytes``-byte frames, counted with
    the same per-frame overhead as the hosts' frames); 0 without background stations."""
    if not cfg.background_pairs:
        return 0.0
    b = cfg.background_bytes
    return cfg.background_pairs * cfg.background_mbit * (b + 14 + air_overhead_bytes(cfg.phy_rate)) / b


def air_left_mbit(cfg: Any) -> float:
    """What one sender gets of the air [Mbit/s at the phy rate]: the phy rate, less the frame
    errors' retransmissions, less the background's share (802.11a/g names only)."""
    return phy_mbit(cfg.phy_rate) * (1 - cfg.frame_error_rate) - background_air_mbit(cfg)


def shaper_rate_kbit(cfg: Any) -> int:
    """The hosts' htb rate: ``qdisc_rate_fraction`` x :func:`air_left_mbit`, halved when every
    frame crosses the air twice (:func:`air_crossings`)."""
    return int(round(cfg.qdisc_rate_fraction * air_left_mbit(cfg) * 1000 / air_crossings(cfg)))


def link_capacity_mbit(profile: Any) -> float | None:
    """Nominal capacity of a link profile [Mbit/s], or None when it has no limit (loopback):
    the profile's :meth:`~netloop.testbed.profile_models.LinkProfile.capacity_mbit`. Ethernet
    and shaped links their ``rate_mbit``; for Wi-Fi what the hosts have of the air, shared by
    both directions: the PHY rate (an ns-3 rate name such as OfdmRate6Mbps or
    ErpOfdmRate54Mbps), less the retransmissions of ``frame_error_rate`` and the background
    stations' mean share (as a user would measure it on a shared channel, e.g. with iperf3)."""
    return profile.capacity_mbit()
