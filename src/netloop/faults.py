"""Link outages during a run (an experiment's ``faults:``; the Pound paper's Table V).

Each fault is one or more windows, in seconds after every subscriber of the run has
connected, during which the listed hosts (default: all) transmit nothing: their interface
drops every packet (:meth:`netloop.testbed.Testbed.set_transmitting`); or, for a fault with
``loss``, a loss burst: the link's emulator loses each packet (on Wi-Fi: each frame on the
air) they send with that probability (:meth:`netloop.testbed.Testbed.set_loss`). The schedule is
polled by the runner's wait loop (every 50 ms); the actual start and end of every outage,
wall-clock, are recorded in ``metadata.json`` (``faults``), which is what the analysis uses
(recovery time: from an outage's end to the first message delivered after it). Every
outage still in effect is ended on every exit path (:meth:`FaultSchedule.end_all`).
"""
from __future__ import annotations

import time
from typing import Any


class FaultSchedule:
    def __init__(self, faults: list, testbed, log=print):
        self.testbed, self.log = testbed, log
        #: (start, end, hosts, loss) in seconds after start(), in order; hosts [] = every host;
        #: loss None = an outage
        self.windows = sorted(((start, end, list(f.hosts), f.loss) for f in faults for start, end in f.windows()),
                              key=lambda w: w[:2])
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
            start, end, hosts, loss = self.windows[self._next]
            self._next += 1
            self._apply(hosts, loss, True)
            rec = {"hosts": hosts or list(self.testbed.hosts), "loss": loss, "planned_start_s": start,
                   "planned_end_s": end, "start": time.time(), "end": None, "_hosts": hosts}
            self.records.append(rec)
            self._active.append(rec)
            who = ", ".join(rec["hosts"])
            self.log(f"    outage: {who} silent for {end - start:g} s" if loss is None
                     else f"    loss burst: {who} lose {loss:.0%} for {end - start:g} s")

    def _apply(self, hosts: list[str], loss: float | None, begin: bool) -> None:
        if loss is None:
            for host in hosts or self.testbed.hosts:
                self.testbed.set_transmitting(host, not begin)
        else:
            for host in hosts or [None]:     # None: every frame on the link
                self.testbed.set_loss(host, loss if begin else 0.0)

    def _end(self, rec: dict[str, Any]) -> None:
        self._apply(rec["_hosts"], rec["loss"], False)
        rec["end"] = time.time()
        self._active.remove(rec)

    def end_all(self) -> None:
        """End every outage still in effect (on every exit path)."""
        for rec in list(self._active):
            try:
                self._end(rec)
            except Exception as exc:  # noqa: BLE001 - the others must still end
                rec["end_error"] = str(exc)
                self._active.remove(rec)

    def metadata(self) -> list[dict[str, Any]]:
        return [{**{k: v for k, v in r.items() if not k.startswith("_")}, "start": round(r["start"], 6),
                 "end": None if r["end"] is None else round(r["end"], 6)} for r in self.records]
