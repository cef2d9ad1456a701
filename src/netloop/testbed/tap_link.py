"""Links whose emulator process owns one tap per host (``ns3_wifi``, ``shaped``): starting it
in the link namespace, its JSON-lines stats file, its control input (loss bursts, stations),
the kernel queue in front of each tap, and the verdict whether it kept real time
(:meth:`TapLink.health`)."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
from pathlib import Path

from . import util
from .link_base import IFACE, Link, LinkContext, htb_classes, priority_band_metadata, tap_suffix
from .profile_models import LinkProfile
from .util import TestbedError


class StatsFile:
    """Reads the JSON lines an emulator appends (ready / stats / final), incrementally."""

    def __init__(self, path: Path):
        self.path, self.offset, self.lines = path, 0, []

    def poll(self) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return self.lines
        end = data.rfind(b"\n")
        if end >= 0:
            for raw in data[:end].split(b"\n"):
                try:
                    self.lines.append(json.loads(raw))
                except ValueError:
                    pass
            self.offset += end + 1
        return self.lines

    def ready(self) -> dict | None:
        return next((l for l in self.poll() if l.get("type") == "ready"), None)

    def stats(self) -> list[dict]:
        return [l for l in self.poll() if l.get("type") in ("stats", "final")]


class TapLink(Link):
    """A link whose emulator process owns one tap per host (runs in the link namespace)."""

    uses_link_netns = True
    what = "emulator"
    ready_timeout = 15.0
    #: seconds between the emulator's stats lines (the shaper's: it is given no interval)
    stats_interval_s = 1.0

    def __init__(self, profile: LinkProfile):
        super().__init__(profile)
        self.proc = None
        self.stats: StatsFile | None = None
        self.taps: dict[str, str] = {}
        self.exit_code: int | None = None
        self.started_wall: float | None = None
        self.ready_info: dict | None = None
        self.stopping = False

    def command(self) -> list[str]:
        raise NotImplementedError

    def prerequisites(self) -> None:
        super().prerequisites()
        if self.profile.rt_priority and shutil.which("chrt") is None:
            raise TestbedError("rt_priority needs 'chrt' (util-linux); or set rt_priority: 0")

    def up(self, ctx: LinkContext) -> None:
        self.ctx = ctx
        self.stopping, self.exit_code = False, None
        self.taps = {h: f"nl{ctx.tb_id}{tap_suffix(h)}" for h in self.hosts}
        self.stats_path = ctx.work_dir / f"testbed_{self.what}_stats.jsonl"
        self.log_path = ctx.work_dir / f"testbed_{self.what}.log"
        if self.stats_path.exists():
            self.stats_path.unlink()
        self.stats = StatsFile(self.stats_path)
        cmd = ["ip", "netns", "exec", ctx.link_netns] + self.command()
        self.started_wall = time.time()
        # its standard input is the control input (loss bursts: set_loss)
        self.proc = util.spawn(cmd, self.log_path, env=self.env(), die_with_parent=ctx.die_with_parent,
                               stdin=subprocess.PIPE)
        ctx.record_pid(self.proc.pid, self.what)
        ready = util.wait_for(lambda: self.stats.ready() or self.proc.poll() is not None,
                              self.ready_timeout)
        if not isinstance(ready, dict):
            code = self.proc.poll()
            tail = self._log_tail()
            util.stop_process(self.proc)
            raise TestbedError(
                f"{self.what} did not become ready" + (f" (exit code {code})" if code is not None
                                                       else f" within {self.ready_timeout:g} s")
                + (f"; its log ({self.log_path}) ends with:\n{tail}" if tail else ""))
        self.ready_info = ready
        for host in self.hosts:
            util.run(["ip", "-n", ctx.link_netns, "link", "set", "dev", self.taps[host],
                      "netns", ctx.netns[host]])
            self.configure_host(host, self.taps[host], self.profile.mtu, self.routes(host))

    # the kernel's queue in front of the tap: htb, TCP Small Queues (both link types) ---------
    def shaper(self, host: str | None = None) -> dict | None:
        """The htb on ``host``'s net0 ({"rate_kbit", "overhead_bytes", "limit_packets", ...}),
        or None (the kernel's default qdisc): a link type whose emulator keeps its own queue
        sets one so that the backlog waits in the kernel, where TCP Small Queues hold a bulk
        TCP flow back, and the emulator's queue stays a few packets long, as a NIC's ring."""
        return None

    def configure_host(self, host: str, iface: str, mtu: int, routes: list[str] = ()) -> None:
        super().configure_host(host, iface, mtu, routes)
        ns = self.ctx.netns[host]
        sysctls = {}
        if self.profile.tcp_congestion_control != "inherit":
            sysctls["net.ipv4.tcp_congestion_control"] = self.profile.tcp_congestion_control
        if self.profile.tcp_limit_output_bytes:
            sysctls["net.ipv4.tcp_limit_output_bytes"] = self.profile.tcp_limit_output_bytes
        if sysctls:
            try:
                util.sysctl(ns, sysctls)
            except TestbedError as err:
                if "tcp_congestion_control" not in str(err):
                    raise
                raise TestbedError(
                    f"tcp_congestion_control: {self.profile.tcp_congestion_control} cannot be "
                    "set inside a namespace on this machine (only the algorithms in the root "
                    "namespace's net.ipv4.tcp_allowed_congestion_control can); use one of those, "
                    f"or inherit ({err})") from None
        if self.profile.gso_max_segs:
            util.ip_batch([f"link set dev {IFACE} gso_max_segs {self.profile.gso_max_segs}"], ns)
        self.shape(host)

    def shape(self, host: str) -> None:
        """The htb of :meth:`shaper` on ``host``'s net0, when the profile has one, with the
        marked packets' class of :func:`htb_classes` served first."""
        sh, ns, mtu = self.shaper(host), self.ctx.netns[host], self.profile.mtu
        if sh is None:
            return
        burst = str(mtu + 14 + sh["overhead_bytes"])
        extra = ["burst", burst, "cburst", burst, "overhead", str(sh["overhead_bytes"]), "quantum", str(mtu + 14)]
        for c in (["qdisc", "replace", "dev", IFACE, "root", "handle", "1:", "htb", "default", "20"],
                  *htb_classes(sh["rate_kbit"], sh["limit_packets"], extra)):
            util.run(["tc", "-n", ns] + c)

    def kernel_queue_metadata(self) -> dict:
        """The kernel-side settings of the hosts (what :meth:`configure_host` applied)."""
        p = self.profile
        return {"tcp_congestion_control": p.tcp_congestion_control,
                "gso_max_segs": p.gso_max_segs or None,
                "tcp_limit_output_bytes": p.tcp_limit_output_bytes or None,
                "priority_band": priority_band_metadata() if any(self.shaper(h) for h in self.hosts) else None}

    def emulator_stats(self) -> list[dict]:
        return self.stats.stats() if self.stats is not None else []

    def stats_file(self) -> Path | None:
        return self.stats_path

    def env(self) -> dict:
        return dict(os.environ)

    def _log_tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").strip().splitlines()[-n:])
        except (OSError, AttributeError):
            return ""

    def set_loss(self, host: str | None, probability: float) -> None:
        """Tell the emulator (a line on its standard input, see :mod:`netloop.testbed.shaper`
        and ``src/ns3/wifi_link.cc``) that frames ``host`` sends (None: all) are lost with
        ``probability``; on Wi-Fi a lost frame is retried by the MAC, as in a real fade."""
        if self.proc is None or self.proc.poll() is not None:
            raise TestbedError(f"the {self.what} is not running: no loss burst can be set")
        target = "all" if host is None else str(self.hosts.index(host))
        self.proc.stdin.write(f"loss {target} {probability:.6g}\n".encode())
        self.proc.stdin.flush()

    def control(self, line: str, timeout: float = 10.0) -> None:
        """Write ``line`` on the emulator's control input and wait until it has applied it (its
        "control" echo in the stats file); TestbedError with the emulator's error text."""
        if self.proc is None or self.proc.poll() is not None:
            raise TestbedError(f"the {self.what} is not running: cannot apply '{line}'")
        seen = sum(1 for l in self.stats.poll() if l.get("type") == "control")
        self.proc.stdin.write(f"{line}\n".encode())
        self.proc.stdin.flush()

        def echoed():
            echoes = [l for l in self.stats.poll() if l.get("type") == "control"]
            return echoes[seen] if len(echoes) > seen else (self.proc.poll() is not None and {"exited": 1})
        echo = util.wait_for(echoed, timeout)
        if not echo or echo.get("exited"):
            raise TestbedError(f"the {self.what} did not apply '{line}' "
                               + ("(it exited)" if echo else f"within {timeout:g} s"))
        if echo.get("error"):
            raise TestbedError(f"the {self.what} refused '{line}': {echo['error']}")

    def down(self) -> None:
        if self.proc is not None:
            self.stopping = True
            try:
                self.proc.stdin.close()
            except (OSError, AttributeError):
                pass
            self.exit_code = util.stop_process(self.proc)
            if self.stats:
                self.stats.poll()

    def health(self, since: float | None = None, until: float | None = None) -> dict:
        """The emulator's real-time health over [since, until] (time.time() values; None:
        from its start, to now). Samples are counted per stats interval that overlaps the
        window; late samples are those of the stalls (runs of consecutive late samples, with
        the time each began) that overlap it, so a stall after ``until`` (say, while the
        run's processes exit after the last message was delivered) is listed but not
        counted."""
        p = self.profile
        bound, allowed = p.lag_bound_ms, p.lag_late_fraction
        out = {"valid": True, "reason": "ok", "lag_bound_ms": bound, "max_lag_ms": None,
               "mean_lag_ms": None, "late_fraction": None, "late_fraction_allowed": allowed,
               "samples": 0, "late_samples": 0, "stalls": []}
        lines = self.stats.stats() if self.stats is not None else []
        interval = float(self.stats_interval_s)
        start, end = (since if since is not None else -math.inf), (until if until is not None else math.inf)
        # a line at wall time W covers (W - interval, W]; its counts are differences to the line before
        window = [(prev, l) for prev, l in zip([None] + lines[:-1], lines)
                  if l["wall"] > start and l["wall"] - interval < end]
        if window:
            if since is None and until is None:
                out["max_lag_ms"] = lines[-1]["lag_max_total_ms"]
                out["mean_lag_ms"] = lines[-1]["lag_mean_total_ms"]
            else:
                out["max_lag_ms"] = max(l["lag_max_ms"] for _, l in window)
                out["mean_lag_ms"] = sum(l["lag_mean_ms"] for _, l in window) / len(window)
            first_base = window[0][0]
            out["samples"] = window[-1][1]["probes"] - (first_base["probes"] if first_base else 0)
            if all("stalls" in l for l in lines):
                for l in lines:
                    for began, max_ms, probes in l["stalls"]:
                        counted = began < end and began + max_ms / 1e3 > start
                        out["stalls"].append({"began": began, "max_ms": max_ms, "late_samples": probes,
                                              "counted": counted})
                # a stall still under way is in the counters but not yet listed: counted
                unlisted = lines[-1]["late_probes"] - sum(st["late_samples"] for st in out["stalls"])
                out["late_samples"] = (sum(st["late_samples"] for st in out["stalls"] if st["counted"])
                                       + max(0, unlisted))
            else:   # an emulator without the stall list: late samples of the overlapping intervals
                out["late_samples"] = window[-1][1]["late_probes"] - (first_base["late_probes"] if first_base else 0)
            if out["samples"]:
                out["late_fraction"] = out["late_samples"] / out["samples"]
        late = out["late_fraction"] or 0.0
        if (allowed == 0 and out["late_samples"] > 0) or late > allowed:
            counted = [st for st in out["stalls"] if st["counted"]]
            worst = max((st["max_ms"] for st in counted), default=out["max_lag_ms"] or 0.0)
            out["valid"] = False
            out["reason"] = (f"{self.what} was more than {bound:g} ms behind real time in "
                             f"{late:.3%} of samples (allowed {allowed:.3%}; max "
                             f"{worst:.1f} ms"
                             + (f", {len(counted)} stall(s)" if counted else "")
                             + "): link timing not trustworthy")
        if self.proc is not None and not self.stopping and self.proc.poll() is not None:
            out["valid"] = False
            out["reason"] = (f"{self.what} exited unexpectedly (code {self.proc.returncode}); "
                             f"see {self.log_path}")
        return out

    def metadata(self) -> dict:
        out = {"emulator": self.what, "taps": self.taps, "stats_file": str(self.stats_path)
               if self.ctx else None}
        if self.stats:
            lines = self.stats.stats()
            if lines:
                last = lines[-1]
                out["final_stats"] = last
                elapsed = last["wall"] - (self.ready_info or {}).get("wall", self.started_wall)
                if elapsed > 0:
                    out["cpu_fraction"] = round(last["cpu_s"] / elapsed, 4)
        if self.exit_code is not None:
            out["exit_code"] = self.exit_code
        return out
