"""A run's timeline: when it reached each of its phases, so that what happened at a moment
(an emulator stall, say) can be placed in the run."""
from __future__ import annotations

import time


class RunPhases:
    """When a run reached each of its phases (time.time()), so that what happened at a moment
    (an emulator stall, say) can be placed in the run: ``nodes_started`` (flows and loop
    launched), ``connected`` (every subscriber connected), ``ended`` (the loop or the flows
    ended), ``senders_stopped`` (the flow sources stopped, messages in flight delivered),
    ``nodes_stopped``."""

    def __init__(self, start_unix: float):
        self.start = start_unix
        self.times: dict[str, float] = {}

    def mark(self, name: str) -> None:
        self.times[name] = time.time()

    def __getitem__(self, name: str) -> float:
        return self.times[name]

    def at(self, t: float) -> str:
        """The phase under way at time ``t`` ('setup' before the first)."""
        return max(((v, k) for k, v in self.times.items() if v <= t), default=(0.0, "setup"))[1]

    def label(self, stalls: list[dict]) -> None:
        """Add to each stall of a health record when it began in the run (s) and in which phase."""
        for st in stalls:
            st["at_s"] = round(st["began"] - self.start, 3)
            st["phase"] = self.at(st["began"])

    def relative(self) -> dict[str, float]:
        return {k: round(v - self.start, 3) for k, v in self.times.items()}
