"""The ``teleop`` kind's sections of the experiment model: ``loop.teleop`` (world, simulator,
its parameters, the trial's overrides, the local baseline), which its registry entry gives
(netloop.loops), and its hosts in ``loop.placement``, which :mod:`netloop.model` composes into
``Placement``. Data only (the schema library)."""
from __future__ import annotations

import dataclasses
from typing import Any

from ...schema import Any_, Bool, Enum, Map, Str, key, section


def _simulator_names() -> list[str]:
    from ..simulators import simulator_names  # noqa: PLC0415 - the simulators are the run side
    return simulator_names()


@section("teleoperation of the simulated car (loop.type teleop)")
class Teleop:
    world: str = key(Str("arena", "simulator world: arena | tunnel | path of an SDF .world"))
    simulator: str = key(Enum(_simulator_names, "embedded", "the car's simulator: embedded (pybullet, this "
                                                            "package), gazebo (gazebo_ros, where installed), or "
                                                            "car (no simulator: the real car's driver)",
                              what="simulator"))
    sim: dict[str, Any] = key(Map({}, {}, "simulator parameters (docs/simulation.md), e.g. {camera_rate: 15}",
                                  extra=Any_()))
    trial: dict[str, Any] = key(Map({}, {}, "overrides of controllers/config/teleop_trial.yaml, e.g. "
                                            "{duration: 8}", extra=Any_()))
    local_baseline: bool = key(Bool(True, "also run the trial on the car's host (the local baseline)"))


@dataclasses.dataclass(kw_only=True)
class TeleopPlacement:
    """The teleop kind's roles in ``loop.placement``."""

    car: str = key(Str("robot", "host of the simulated car (teleop)"))
    trial: str = key(Str("operator", "host of the scripted teleop trial (teleop)"))
