"""Link outages during a run (an experiment's ``faults:``; the Pound paper's Table V).

Each fault is one or more windows, in seconds after every subscriber of the run has
connected, during which the listed hosts (default: all) transmit nothing: their interface
drops every packet (:meth:`netloop.testbed.Testbed.set_transmitting`). The schedule is
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
        #: (start, end, hosts) in seconds after start(), in order
        self.windows = sorted((start, end, list(f.hosts) or list(testbed.hosts))
                              for f in faults for start, end in f.windows())
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
            start, end, hosts = self.windows[self._next]
            self._next += 1
            for host in hosts:
                self.testbed.set_transmitting(host, False)
            rec = {"hosts": hosts, "planned_start_s": start, "planned_end_s": end, "start": time.time(), "end": None}
            self.records.append(rec)
            self._active.append(rec)
            self.log(f"    outage: {', '.join(hosts)} silent for {end - start:g} s")

    def _end(self, rec: dict[str, Any]) -> None:
        for host in rec["hosts"]:
            self.testbed.set_transmitting(host, True)
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
        return [dict(r, start=round(r["start"], 6), end=None if r["end"] is None else round(r["end"], 6))
                for r in self.records]
