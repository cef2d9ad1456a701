"""What an experiment asks of the ROS 2 transports, checked before a run: nodes that cannot
speak the middleware natively, flows with a ROS 1 transport of their own, late subscribers,
multicast discovery over a link that does not carry it (problems, :func:`check_experiment`),
and messages Zenoh's congestion control would drop (warnings, :func:`zenoh_drop_warnings`)."""
from __future__ import annotations

from pathlib import Path

from ..schema import ConfigError
from .options import typed
from .ros2_options import MIDDLEWARES, Ros2Options, options_model


def _options(exp, name: str) -> Ros2Options | None:
    """The experiment's typed options of one middleware; None when they are bad (their
    problems are reported, every one, by the check of ``transport_options``)."""
    try:
        return typed(options_model(name), exp.transport_options.get(name))
    except ConfigError:
        return None


def check_experiment(exp) -> list[tuple[str, str]]:
    """(key, problem) for what an experiment asks of its ROS 2 transports that cannot be:
    native nodes that do not exist (the teleop trial and simulators speak roscpp only), a flow
    that names its own ROS transport under a native deployment, a late subscriber without an
    earlier one, multicast discovery over a link that does not carry multicast."""
    out: list[tuple[str, str]] = []
    for i, flow in enumerate(exp.flows):
        if flow.subscriber_delay > 0 and flow.subscribers * len(flow.to) < 2:
            out.append((f"flows[{i}].subscriber_delay", "the subscribers after the first join late: give the flow "
                                                        "at least two subscribers (subscribers: 2, or two hosts in to)"))
    for name in dict.fromkeys(exp.transport):
        if name not in MIDDLEWARES:
            continue
        options = _options(exp, name)
        if options is None:
            continue
        key = f"transport_options.{name}"
        profiles = getattr(options, "profiles_file", None)
        if profiles and not Path(profiles).expanduser().is_file():
            out.append((f"{key}.profiles_file", f"no such file: {profiles}"))
        if options.deployment == "native":
            if exp.loop.type == "teleop":
                out.append((f"{key}.deployment", "the teleop trial and the car's simulators speak roscpp only: "
                                                 "run them over ROS 2 with deployment: bridge"))
            for i, flow in enumerate(exp.flows):
                if flow.transport != "same":
                    out.append((f"flows[{i}].transport", f"{flow.transport!r} is a ROS 1 transport; with {name} "
                                                         f"deployed natively no ROS 1 connection crosses the link: "
                                                         f"use 'same' (or deployment: bridge)"))
        if options.discovery == "multicast" and not exp.machines:
            problem = multicast_problem(exp.link, exp.link_params)
            if problem:
                out.append((f"{key}.discovery", f"{problem}; use discovery: peers"))
    return out


def multicast_problem(link: str, link_params: dict) -> str | None:
    """Why multicast discovery cannot reach every host over ``link``, or None. Measured: SPDP
    multicast and Zenoh scouting cross ``ethernet`` (veth, bridge) and the ns-3 Wi-Fi links
    (TapBridge passes group frames; 802.11 sends them at the basic rate); on a two-hop chain the
    ends are out of each other's range and the relay host does not route multicast."""
    from ..testbed import load_profile  # noqa: PLC0415
    from ..testbed.links import make_link  # noqa: PLC0415
    try:
        profile = load_profile(link, link_params)
    except Exception:  # noqa: BLE001 - a bad profile is reported by its own check
        return None
    chain = make_link(profile).hosts   # a relay host: robot and operator out of each other's range
    if "relay" in chain:
        return (f"link '{link}' is a {len(chain) - 1}-hop chain: its ends are out of each other's range and "
                f"the relay host does not route multicast, so multicast discovery never reaches the far end")
    return None


#: seconds of the link's capacity a Zenoh message may take before rmw_zenoh's congestion control
#: "drop" (every KEEP_LAST publisher) discards it whole: measured 2026-11-26 with 3 messages each,
#: wifi6 (6 Mbit/s) 100 KB delivered, 250 KB dropped; ethernet (100 Mbit/s) 1 MB delivered, 4 MB
#: dropped; i.e. between 0.13 and 0.33 s of transmission
ZENOH_DROP_SECONDS = 0.2


def zenoh_drop_warnings(exp, capacity_mbit: float | None) -> list[str]:
    """Messages larger than Zenoh can push through a link of ``capacity_mbit`` before its
    congestion control drops them (rmw_zenoh publishes KEEP_LAST topics with CongestionControl::Drop:
    a message whose fragments wait too long in the TX queue is dropped whole, every time)."""
    if "zenoh" not in exp.transport or _options(exp, "zenoh") is None or not capacity_mbit:
        return []
    out = []
    from ..flows import message_bytes  # noqa: PLC0415
    limit = int(capacity_mbit * 1e6 / 8 * ZENOH_DROP_SECONDS)
    for i, flow in enumerate(exp.flows):
        size = message_bytes(flow)
        if size > limit:
            out.append(f"flows[{i}] ({flow.name}): {size}-byte messages over zenoh on a {capacity_mbit:g} Mbit/s link: "
                       f"rmw_zenoh's congestion control (drop, for KEEP_LAST) discards a message that takes more "
                       f"than ~{ZENOH_DROP_SECONDS:g} s to send, so messages above ~{limit} bytes are lost whole "
                       f"(measured: 250 KB on wifi6, 4 MB on ethernet)")
    return out
