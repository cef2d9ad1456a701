"""``shaped``: taps joined by the userspace emulator :mod:`netloop.testbed.shaper` (rate, delay,
jitter, loss and queue limit per direction)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .tap_link import TapLink


class ShapedLink(TapLink):
    """Rate, delay, jitter, loss and queue limit per direction, emulated in userspace."""

    what = "shaper"

    def directions(self) -> dict:
        p = self.profile
        keys = ("rate_mbit", "delay_ms", "jitter_ms", "jitter_dist", "loss", "queue_packets")
        overrides = {"to_operator": p.to_operator, "to_robot": p.to_robot}
        return {d: {k: (over[k] if over.get(k) is not None else getattr(p, k)) for k in keys}
                for d, over in overrides.items()}

    def shaper(self, host: str | None = None) -> dict | None:
        """With ``qdisc_rate_fraction`` > 0: an htb on each host's net0 at that fraction of
        the rate of the direction it sends in (the robot: to_operator; the operator: to_robot),
        so the userspace FIFO holds a few packets and the rest waits in the kernel. The
        emulator counts Ethernet frame bytes, as htb does, so no overhead is added."""
        p = self.profile
        if not p.qdisc_rate_fraction or host is None:
            return None
        direction = self.directions()["to_operator" if host == "robot" else "to_robot"]
        return {"rate_kbit": int(round(p.qdisc_rate_fraction * direction["rate_mbit"] * 1000)),
                "overhead_bytes": 0, "limit_packets": p.qdisc_limit_packets}

    def env(self) -> dict:
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        return env

    def command(self) -> list[str]:
        p = self.profile
        cfg = {**self.directions(), "reorder": p.reorder, "seed": p.seed}
        rt = ["chrt", "-f", str(p.rt_priority)] if p.rt_priority else []
        return rt + [sys.executable, "-m", "netloop.testbed.shaper",
                "--tap", self.taps["robot"], "--tap", self.taps["operator"],
                "--config", json.dumps(cfg), "--stats", str(self.stats_path),
                "--lag-bound", str(p.lag_bound_ms)]

    def metadata(self) -> dict:
        out = super().metadata()
        out["directions"] = self.directions()
        out["kernel_shaper"] = {h: self.shaper(h) for h in self.hosts} if self.profile.qdisc_rate_fraction else None
        out.update(self.kernel_queue_metadata())
        out["reorder"] = self.profile.reorder
        out["model"] = ("Bernoulli loss, then a FIFO limited to queue_packets sending at "
                        "rate_mbit, then delay + jitter" + ("" if self.profile.reorder else
                                                           " without reordering"))
        return out
