"""The hosts' side of the emulated Wi-Fi NIC's flow control (``nic_ring_frames`` of an ``ns3_wifi``
profile; the emulator's side is ``src/ns3/host_nic.h``).

A real driver stops its queue when its ring is full and wakes it as the card completes frames,
so the backlog waits in the host (qdisc, and sockets through TCP Small Queues) and drains at the
pace the air allows. A tap never stops its queue, so every IPv4 packet a host sends out of net0
goes to the host's netfilter queue 0 first (an ``NFQUEUE`` rule in its ``mangle`` table's
POSTROUTING chain), where the kernel holds it, socket references and all, until the emulator
lets it go: when the station's device has room. What the kernel holds there still counts for
TCP Small Queues and for a UDP socket's send buffer; the queue's length is the qdisc's
(``qdisc_limit_packets``), and the kernel drops beyond it as a full qdisc does.
"""
from __future__ import annotations

import shutil

from . import util
from .link_base import IFACE, PRIORITY_DSCP
from .util import TestbedError

#: the netfilter queue the hosts' packets wait in (one per namespace)
QUEUE_NUM = 0
_RULE = ["POSTROUTING", "-o", IFACE]


def prerequisites() -> None:
    """The hosts' rule needs ``iptables`` (with the kernel's NFQUEUE target)."""
    if shutil.which("iptables") is None:
        raise TestbedError("'iptables' not found: the emulated Wi-Fi NIC's flow control holds each "
                           "host's packets in a netfilter queue (apt-get install iptables; `make build` does)")


def _iptables(ns: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", ns, "iptables", "-w", "-t", "mangle", *args]


def install(ns: str) -> None:
    """Every IPv4 packet leaving ``ns`` by net0 waits in its netfilter queue until released."""
    util.run(_iptables(ns, "-A", *_RULE, "-j", "NFQUEUE", "--queue-num", str(QUEUE_NUM)))


def hold_commands(namespaces: list[str], on: bool) -> list[list[str]]:
    """The commands that make the hosts drop what they send before it reaches the queue (``on``:
    an outage starts; its packets must not wait in the queue for the link's return), or stop."""
    verb = ["-I", _RULE[0], "1"] if on else ["-D", _RULE[0]]
    return [_iptables(ns, *verb, *_RULE[1:], "-j", "DROP") for ns in namespaces]


def emulator_args(namespaces: list[str], ring_frames: int, limit_packets: int,
                  packet_us: list[float] = ()) -> list[str]:
    """netloop_wifi_link's options: the hosts' namespaces (as ``ip netns`` names them, in --taps
    order), the device's ring, the queue's length, the DSCPs it releases first and, when any
    host's NIC spends time on each packet, each one's (in --taps order)."""
    return [f"--nic-netns={','.join('/run/netns/' + ns for ns in namespaces)}",
            f"--nic-ring-frames={ring_frames}", f"--nic-limit={limit_packets}",
            f"--nic-priority-dscp={','.join(str(d) for d in PRIORITY_DSCP.values())}"] + (
        [f"--nic-packet-us={','.join(f'{us:g}' for us in packet_us)}"] if any(packet_us) else [])


def metadata(ring_frames: int, limit_packets: int, packet_us: dict | None = None) -> dict:
    """What a run's metadata says of it."""
    return {"ring_frames": ring_frames, "host_queue_packets": limit_packets, "packet_us": packet_us or {},
            "host_queue": f"netfilter queue {QUEUE_NUM} of each host (iptables NFQUEUE, mangle POSTROUTING "
                          f"on {IFACE}), released by the emulator when the station's device holds fewer "
                          f"than {ring_frames} frames",
            "served_first": {"dscp": dict(PRIORITY_DSCP)}}
