"""The ``rlc`` kind's sections of the experiment model (keys under ``loop``): the plant, the
controller with its square-wave reference, and its hosts in ``loop.placement``. Data only
(the schema library): :mod:`netloop.model` composes them into ``Loop``, and the analysis
imports them with the model."""
from __future__ import annotations

import dataclasses

from ...schema import Bool, Int, List, Num, Str, key, section


@section("the series RLC circuit of the Pound paper")
class Plant:
    R: float = key(Num(1.0, "resistance [ohm]", gt=0))
    L: float = key(Num(0.1, "inductance [H]", gt=0))
    C: float = key(Num(0.1, "capacitance [F]", gt=0))
    period: float = key(Num(0.02, "sensor sample period T [s]", gt=0, le=10))
    initial_state: list[float] = key(List(Num(), [0.0, 0.0], "[Vc [V], i [A]] at the start", min_len=2,
                                          max_len=2))


@section("a square-wave reference: repeated steps between 'low' and the controller's 'reference' (count 0: "
         "off, one step at the first sample); each step's sample index is in the run's "
         "records/reference.json (netloop.reference)")
class SquareWave:
    period: float = key(Num(1.0, "seconds of one period: a step up, then half a period later a step down",
                            gt=0, le=3600))
    count: int = key(Int(0, "periods per run (2 x count steps); 0 = off: the single step of 'reference' from "
                            "the first sample", ge=0, le=100_000))
    low: float = key(Num(0.0, "the low level [V]: before the first step and after every step down"))
    random_phase: bool = key(Bool(True, "each step later than its nominal time (k x period / 2) by a random "
                                        "0 to period / 8, drawn per run from (seed, repetition), so the steps "
                                        "do not lock to a periodic perturbing flow (make period / 8 longer "
                                        "than the flow's period); false: steps exactly on "
                                        "k x period / 2, the first at the first sample"))
    seed: int = key(Int(1, "seed of the random phases (with the run's repetition: the same steps for every "
                           "transport of a repetition)", ge=0, le=2**31 - 1))


@section("the controller u = K e + Ki T sum(e) + Kd (e - e_prev) / T, e = reference - y")
class Controller:
    K: float = key(Num(1.0, "proportional gain"))
    Ki: float = key(Num(0.0, "integral gain [1/s]"))
    Kd: float = key(Num(0.0, "derivative gain [s]"))
    reference: float = key(Num(1.0, "reference step r [V], applied from the first sample (with square_wave: "
                                    "the high level)"))
    square_wave: SquareWave = key(SquareWave.schema)


@dataclasses.dataclass(kw_only=True)
class RlcPlacement:
    """The rlc kind's roles in ``loop.placement``."""

    plant: str = key(Str("robot", "host of the plant (rlc)"))
    controller: str = key(Str("operator", "host of the controller (rlc)"))
