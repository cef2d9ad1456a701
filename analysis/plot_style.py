"""The look shared by every figure of the reports: matplotlib without a display (Agg), one
colour per transport in every figure (:func:`transport_color`), and the style of a curve keyed
by its transport and the other swept keys (:class:`Curve`, :func:`curve_styles`)."""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["Curve", "LINESTYLES", "MARKERS", "TRANSPORT_COLORS", "curve_styles", "plt", "transport_color"]

#: Fixed colours of the transports, baseline in black: ROS 1's from the Okabe-Ito palette, ROS 2's
#: from Paul Tol's muted one (both colour-blind-safe; no two transports share a colour).
TRANSPORT_COLORS = {
    "baseline": "#000000",
    "tcp": "#E69F00",
    "tcp_nodelay": "#56B4E9",
    "udp": "#009E73",
    "udp/tcp_nodelay": "#0072B2",
    "nimbro": "#D55E00",
    "nimbro_mixed": "#CC79A7",
    "multimaster": "#999933",
    "priority": "#882255",
    "cyclonedds": "#332288",
    "fastdds": "#CC6677",
    "rmw_fastrtps_cpp": "#AA4499",
    "zenoh": "#DDCC77",
}
_FALLBACK = ["#117733", "#44AA99", "#88CCEE", "#F0E442", "#661100", "#6699CC"]


def transport_color(name: str) -> str:
    """The transport's colour: fixed for the known ones, else one of the fallbacks chosen by a
    hash of the name (the same in every figure and every report)."""
    return TRANSPORT_COLORS.get(name) or _FALLBACK[zlib.crc32(name.encode()) % len(_FALLBACK)]


@dataclass(frozen=True)
class Curve:
    """The key of one curve of a figure: its transport and the values of the other swept keys
    (``others``: (name, value) pairs), so that curves differing in any swept key stay apart."""

    transport: str
    others: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """E.g. 'tcp, link=wifi6, cpu=0.5' (the transport alone without other keys)."""
        return ", ".join([self.transport] + [f"{k}={v}" for k, v in self.others])

    def __str__(self) -> str:
        return self.label


LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">"]


def curve_styles(keys: Iterable["Curve | str"]) -> dict[Any, dict[str, Any]]:
    """Matplotlib style of each curve key: colour by transport (as in every figure), line
    style and marker by the values of the other swept keys (the same values, the same
    style), and the label."""
    keys = list(keys)
    others = list(dict.fromkeys(k.others for k in keys if isinstance(k, Curve)))
    out = {}
    for k in keys:
        transport = k.transport if isinstance(k, Curve) else str(k)
        n = others.index(k.others) if isinstance(k, Curve) else 0
        out[k] = {"color": transport_color(transport), "ls": LINESTYLES[n % len(LINESTYLES)],
                  "marker": MARKERS[n % len(MARKERS)], "label": str(k)}
    return out
