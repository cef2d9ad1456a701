"""``none``: no loop; the run is the perturbing flows alone (their counts or the experiment's
``duration`` end it)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import LoopKind

if TYPE_CHECKING:  # pragma: no cover
    from ...model import Experiment


class NoLoop(LoopKind):
    name = "none"
    description = "no loop: flows only"

    def check(self, exp: "Experiment", hosts: list[str]) -> None:
        from ...schema import ConfigError  # noqa: PLC0415

        if not exp.flows:
            raise ConfigError("flows", "an experiment without a loop needs at least one flow")
        if exp.duration is None and any(f.count == 0 for f in exp.flows):
            raise ConfigError("duration", "required when loop.type is none and a flow has count 0 "
                                          "(nothing else would end the run)")
