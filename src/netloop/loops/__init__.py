"""Loop kinds, chosen by ``loop.type`` in an experiment file; each implements
:class:`LoopKind` (:mod:`.base`):

  - ``rlc``: the RLC circuit of the Pound paper with its P/PI/PID controller (:mod:`.rlc`)
  - ``teleop``: teleoperation of the simulated Sunfounder car by the scripted trial (:mod:`.teleop`),
    on the simulator chosen by ``loop.teleop.simulator`` (:mod:`.simulators`)
  - ``none``: no loop, only the perturbing flows (:mod:`.none`)
"""
from __future__ import annotations

from ..registry import Registry
from .base import LoopKind, LoopStart, StartedLoop
from .none import NoLoop
from .rlc import RlcLoop
from .teleop import TeleopLoop

_KINDS: Registry[LoopKind] = Registry("loop type", {k.name: k for k in (RlcLoop, TeleopLoop, NoLoop)})


def loop_kind_names() -> list[str]:
    """The words accepted as ``loop.type``, in a stable order."""
    return _KINDS.names()


def get_loop_kind(name: str) -> LoopKind:
    """The loop kind called ``name``; KeyError lists the allowed names."""
    return _KINDS.get(name)


__all__ = ["LoopKind", "LoopStart", "StartedLoop", "loop_kind_names", "get_loop_kind"]
