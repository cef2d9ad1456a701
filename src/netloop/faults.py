"""Link outages during a run (an experiment's ``faults:``; the Pound paper's Table V).

Each fault is one or more windows, in seconds after every subscriber of the run has
connected, during which the listed hosts (default: all) are cut off, in one of two ways
(``kind``):

* ``drop`` (the default): their interface drops every packet they send, silently, as a radio
  out of range (:meth:`netloop.testbed.Testbed.set_transmitting`): sockets see nothing;
* ``interface_down``: their interface goes down and comes back up, as the Pound paper did it
  (:meth:`netloop.testbed.Testbed.set_interface`): the kernel drops the interface's routes, so
  sockets get errors, and restores them on up; on the emulated Wi-Fi the station leaves the
  network and rejoins (access point mode: it associates anew; how long that took, from the
  emulator, is each record's ``rejoin``).

A fault with ``loss`` is a loss burst instead: the link's emulator loses each packet (on Wi-Fi:
each frame on the air) the hosts send with that probability (:meth:`netloop.testbed.Testbed.set_loss`).

The schedule is polled by the runner's wait loop (every 50 ms); the actual start and end of
every outage, wall-clock, are recorded in ``metadata.json`` (``faults``), which is what the
analysis uses. An outage starts once it is in effect on every one of its hosts, and ends the
moment netloop begins to bring them back (``up_s``: how long that took), so a message sent
between the two was sent while every host was cut off; the recovery time, from the end to the
first message delivered after it, includes bringing the link back. Every outage still in
effect is ended on every exit path (:meth:`FaultSchedule.end_all`): interfaces back up,
stations back on the air.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .testbed.interfaces import rejoins

if TYPE_CHECKING:   # pragma: no cover - annotations only
    from .model import Fault
    from .testbed.testbed import Testbed


class FaultSchedule:
    def __init__(self, faults: "list[Fault]", testbed: "Testbed", log=print):
        """``testbed``: the namespaces the faults act on (faults are refused on real machines)."""
        self.testbed, self.log = testbed, log
        #: (start, end, hosts, loss, kind) in seconds after start(), in order; hosts [] = every
        #: host; loss None = an outage
        self.windows = sorted(((start, end, list(f.hosts), f.loss, f.kind)
                               for f in faults for start, end in f.windows()), key=lambda w: w[:2])
        self.t0: float | None = None
        self.records: list[dict[str, Any]] = []
        self._active: list[dict[str, Any]] = []
        self._next = 0

    def start(self) -> None:
        """Time zero: every subscriber has connected."""
        self.t0 = time.monotonic()

    def poll(self) -> None:
        """Start and end the outages that are due."""
        if self.t0 is None:
            return
        elapsed = time.monotonic() - self.t0
        for rec in list(self._active):
            if elapsed >= rec["planned_end_s"]:
                self._end(rec)
        while self._next < len(self.windows) and elapsed >= self.windows[self._next][0]:
            start, end, hosts, loss, kind = self.windows[self._next]
            self._next += 1
            rec = {"kind": kind, "hosts": hosts or list(self.testbed.hosts), "loss": loss,
                   "planned_start_s": start, "planned_end_s": end, "start": time.time(), "end": None,
                   "_hosts": hosts}
            self.records.append(rec)
            self._active.append(rec)
            self._apply(rec, True)
            # in effect from here (the commands that make it take a while on a busy machine, ~0.3 s
            # at a load average of 9: what is sent meanwhile still goes through)
            rec["start"] = time.time()
            who = ", ".join(rec["hosts"])
            self.log(f"    loss burst: {who} lose {loss:.0%} for {end - start:g} s" if loss is not None
                     else f"    outage: {who} interface down for {end - start:g} s" if kind == "interface_down"
                     else f"    outage: {who} silent for {end - start:g} s")

    def _apply(self, rec: dict[str, Any], begin: bool) -> None:
        hosts, loss = rec["_hosts"], rec["loss"]
        if loss is not None:
            for host in hosts or [None]:     # None: every frame on the link
                self.testbed.set_loss(host, loss if begin else 0.0)
            return
        if rec["kind"] != "interface_down":
            self.testbed.set_transmitting(hosts or self.testbed.hosts, not begin)
        elif begin:
            for host in hosts or self.testbed.hosts:
                rec.setdefault("_down", []).append(host)   # first: if going down fails half-way, the end restores it
                self.testbed.set_interface(host, False)
        else:
            errors = []
            for host in list(rec.get("_down", [])):        # every host is brought back, whatever fails
                try:
                    self.testbed.set_interface(host, True)
                    rec["_down"].remove(host)
                except Exception as exc:  # noqa: BLE001 - reported after the others are up
                    errors.append(exc)
            if errors:
                raise errors[0]

    def _end(self, rec: dict[str, Any]) -> None:
        t_end = time.time()
        try:
            self._apply(rec, False)
        finally:
            # an outage ends when its hosts are being brought back: the recovery counts that, and
            # nothing a host sends after its own return counts as sent during the outage (with
            # several hosts, each returns within the time the others take); a loss burst ends
            # once the emulator has been told
            if rec["loss"] is None:
                rec["end"], rec["up_s"] = t_end, round(time.time() - t_end, 6)
            else:
                rec["end"] = time.time()
            self._active.remove(rec)

    def end_all(self) -> None:
        """End every outage still in effect (on every exit path)."""
        for rec in list(self._active):
            try:
                self._end(rec)
            except Exception as exc:  # noqa: BLE001 - the others must still end
                rec["end_error"] = str(exc)

    def metadata(self) -> list[dict[str, Any]]:
        """The records for metadata.json; an interface outage on Wi-Fi also says how each host's
        station rejoined (``rejoin``: host -> {"event", "wall", "rejoin_ms"}, see
        :func:`netloop.testbed.interfaces.rejoins`)."""
        events = self.testbed.station_events() if any(r["kind"] == "interface_down" for r in self.records) else []
        out = []
        for r in self.records:
            rec = {**{k: v for k, v in r.items() if not k.startswith("_")}, "start": round(r["start"], 6),
                   "end": None if r["end"] is None else round(r["end"], 6)}
            if events and r["end"] is not None and r["kind"] == "interface_down":
                rec["rejoin"] = {h: rejoins(events, h, r["end"]) for h in r["hosts"]}
            out.append(rec)
        return out
