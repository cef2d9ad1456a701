"""One-way delays across machines whose clocks differ (runs on real machines).

On the testbed every host reads the same clock, so a delay is the receive time minus the
send stamp, exactly. On real machines (:mod:`netloop.machines`) each machine's clock offset
against the operator's was measured before and after the run (NTP-style, with an
uncertainty: :mod:`netloop.clocksync`), and stored in ``metadata.json`` under
``link.clocks``. A delay from host A to host B is then corrected::

    D = (recv_B - offset_B(t)) - (stamp_A - offset_A(t))

with each offset interpolated linearly over the run (a drifting clock), and known to within
the sum of the two uncertainties. When that is more than ``link.clock_max_uncertainty`` of
the median delay, the report says so: the round trip (the loop's echo fields, an ``echo``
flow) is then the measurement to trust, as it is read on one clock.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..clocksync import offset_at
from ..run_files import RunRecord


@dataclass
class Correction:
    delays: np.ndarray            # corrected one-way delays [s]
    uncertainty_s: float          # the correction is known to within this


def clocks_of(meta: RunRecord) -> dict[str, dict] | None:
    """Per host its clock measurements, for a run on real machines; None on one clock."""
    link = meta.link
    return link.get("clocks") if link.get("type") == "real" else None


def offset_between(meta: RunRecord, from_host: str, to_host: str,
                   t_s: np.ndarray) -> tuple[np.ndarray, float] | None:
    """(``to_host``'s clock minus ``from_host``'s at each time ``t_s`` [s], its uncertainty
    [s]); a stamp made on ``from_host`` plus this is the same instant on ``to_host``'s clock.
    None when the run had one clock; uncertainty inf for a host never measured."""
    clocks = clocks_of(meta)
    if clocks is None:
        return None
    t_s = np.asarray(t_s, float)
    shifts, uncertainty = np.zeros(len(t_s)), 0.0
    for host, sign in ((to_host, 1.0), (from_host, -1.0)):
        c = clocks.get(host) or {}
        if c.get("before") is None and c.get("after") is None:
            return shifts, float("inf")
        values = [offset_at(c.get("before"), c.get("after"), t) for t in t_s]
        if values:
            shifts += sign * np.array([v[0] for v in values])
        uncertainty += max((v[1] for v in values), default=0.0)
    return shifts, uncertainty


def correct(meta: RunRecord, from_host: str, to_host: str, sent_s: np.ndarray,
            delays: np.ndarray) -> Correction | None:
    """``delays`` (receive time on ``to_host``'s clock minus send stamp on ``from_host``'s, at
    send times ``sent_s``) on one clock; None when the run had one clock (nothing to correct)."""
    between = offset_between(meta, from_host, to_host, sent_s)
    if between is None:
        return None
    shifts, uncertainty = between
    return Correction(np.asarray(delays, float) - shifts, uncertainty)


def trusted(meta: RunRecord, uncertainty_ms: float, median_ms: float) -> bool:
    """Whether a corrected one-way delay of median ``median_ms`` is known well enough: its clock
    uncertainty at most the hosts file's ``clock_max_uncertainty`` of it (else the report
    falls back to the round trip, read on one clock)."""
    fraction = float(meta.link.get("clock_max_uncertainty", 0.1))
    return uncertainty_ms <= fraction * abs(median_ms)
