"""``ethernet``: a veth pair (or a switch of veths for several robots), shaped by htb or tbf."""
from __future__ import annotations

from . import util
from .link_base import IFACE, Link, LinkContext, htb_classes, priority_band_metadata, robot_names
from .profile_models import LinkProfile


class EthernetLink(Link):
    """A veth pair, both ends shaped to ``rate_mbit`` by htb (default) or tbf. With ``robots``
    N > 1, a switch: the operator's net0 is a bridge, and each robot's net0 a veth whose peer
    (``rK`` in the operator's namespace) is a port of it; every robot's net0 and the operator's
    bridge are shaped (the operator's rate is shared by all it sends)."""

    def __init__(self, profile: LinkProfile):
        super().__init__(profile)
        self.hosts = robot_names(profile.robots) + ["operator"]

    def up(self, ctx: LinkContext) -> None:
        self.ctx = ctx
        p = self.profile
        o = ctx.netns["operator"]
        if len(self.hosts) == 2:
            util.run(["ip", "link", "add", IFACE, "netns", ctx.netns["robot"], "type", "veth",
                      "peer", "name", IFACE, "netns", o])
        else:
            util.ip_batch([f"link add {IFACE} type bridge", f"link set dev {IFACE} mtu {p.mtu}"], o)
            for k, robot in enumerate(self.hosts[:-1], 1):
                port = f"p{k}"
                util.run(["ip", "link", "add", IFACE, "netns", ctx.netns[robot], "type", "veth",
                          "peer", "name", port, "netns", o])
                util.ip_batch([f"link set dev {port} mtu {p.mtu}", f"link set dev {port} master {IFACE}",
                               f"link set dev {port} up"], o)
        for host in self.hosts:
            self.configure_host(host, IFACE, p.mtu)
            if p.gso_max_segs:
                util.ip_batch([f"link set dev {IFACE} gso_max_segs {p.gso_max_segs}"], ctx.netns[host])
            self.shape(host)

    def shape(self, host: str) -> None:
        """htb at ``rate_mbit`` with :func:`htb_classes` (marked packets first), or a tbf."""
        ns, p = self.ctx.netns[host], self.profile
        rate = f"{p.rate_mbit:g}mbit"
        if p.qdisc == "htb":
            cmds = [["qdisc", "replace", "dev", IFACE, "root", "handle", "1:", "htb", "default", "20"],
                    *htb_classes(int(round(p.rate_mbit * 1000)), p.queue_packets)]
        else:
            # burst: at least one GSO super-packet and ~1 ms at the rate
            burst = max(65536 + 1514, int(p.rate_mbit * 1e6 / 8 / 1000))
            limit = p.queue_packets * p.mtu + burst
            cmds = [["qdisc", "replace", "dev", IFACE, "root", "tbf", "rate", rate,
                     "burst", str(burst), "limit", str(limit)]]
        for c in cmds:
            util.run(["tc", "-n", ns] + c)

    def metadata(self) -> dict:
        out = {"interface": IFACE, "qdisc": self.profile.qdisc,
               "priority_band": priority_band_metadata() if self.profile.qdisc == "htb" else None}
        if self.ctx:
            res = util.run(["tc", "-n", self.ctx.netns["robot"], "qdisc", "show", "dev", IFACE],
                           check=False)
            out["tc_robot"] = res.stdout.strip()
        return out
