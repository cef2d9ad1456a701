"""``rlc``: the series RLC circuit of the Pound paper, plant and controller on two hosts.

The plant (``rlc_plant``) samples y every period and applies each u as it arrives; the
controller (``loop_controller``) answers every y with a u. Both read the loop's shared
parameters from ``/rlc/*`` and record every message (``records/plant.csv``,
``records/controller.csv``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import paths
from ..transports.base import CrossingTopic
from .base import LoopKind, LoopStart, StartedLoop

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Experiment, Loop

#: serialized size of a netloop/LoopSample without padding: seq (4) + value (8) + stamp (8)
#: + answer_seq (8) + answer_stamp (8) + the padding array's length (4); a test holds it to
#: the generated message class
LOOP_SAMPLE_BYTES = 40

#: (topic, publisher node, subscriber node) of the loop's two directions
LOOP_TOPICS = {"/y": ("/plant", "/controller"), "/u": ("/controller", "/plant")}


def loop_message_bytes(loop: "Loop") -> int:
    """Serialized size of one y or u message of the loop."""
    return LOOP_SAMPLE_BYTES + loop.padding_bytes


def rlc_parameters(loop: "Loop") -> dict[str, Any]:
    """The shared loop parameters (``/rlc/*``) both nodes read."""
    plant, ctl = loop.plant, loop.controller
    return {"R": plant.R, "L": plant.L, "C": plant.C, "period": plant.period,
            "initial_state": list(plant.initial_state), "K": ctl.K, "Ki": ctl.Ki, "Kd": ctl.Kd,
            "reference": ctl.reference}


class RlcLoop(LoopKind):
    name = "rlc"
    description = "the RLC circuit (plant) and its controller, y and u crossing the link"
    analysis_name = "RLC"

    def crossing_topics(self, exp: "Experiment") -> list[CrossingTopic]:
        loop = exp.loop
        plant, ctl = loop.placement.plant, loop.placement.controller
        if plant == ctl:
            return []
        size, period = loop_message_bytes(loop), loop.plant.period
        return [CrossingTopic("/y", "netloop/LoopSample", plant, ctl, size, period),
                CrossingTopic("/u", "netloop/LoopSample", ctl, plant, size, period)]

    def check(self, exp: "Experiment", hosts: list[str]) -> None:
        from ..schema import Collector  # noqa: PLC0415

        found = Collector()
        for role in ("plant", "controller"):
            host = getattr(exp.loop.placement, role)
            if host not in hosts:
                found.add(f"loop.placement.{role}", f"unknown host {host!r} for link '{exp.link}'; "
                                                    f"allowed: {', '.join(hosts)}")
        found.raise_if_any()

    def run_seconds(self, exp: "Experiment") -> float:
        return exp.loop.warmup + exp.loop.samples * exp.loop.plant.period

    def shorten(self, exp: "Experiment") -> None:
        loop = exp.loop
        loop.samples = min(loop.samples, max(10, int(2.0 / loop.plant.period)))
        loop.warmup = min(loop.warmup, 1.0)

    def start(self, ctx: LoopStart) -> StartedLoop:
        loop, run_dir, transport = ctx.experiment.loop, ctx.run_dir, ctx.transport
        size = loop_message_bytes(loop)
        queues = {"publisher_queue_size": loop.publisher_queue_size,
                  "subscriber_queue_size": loop.subscriber_queue_size, "padding_bytes": loop.padding_bytes}
        ctx.hosts.set_params(rlc_parameters(loop), "/rlc")
        ctx.hosts.start("controller", loop.placement.controller,
                        [str(paths.node_binary("loop_controller")), "__name:=controller"],
                        {"transport": transport.subscriber_transport("/y", size), **queues,
                         "record_path": str(run_dir / "records" / "controller.csv")})
        plant = ctx.hosts.start("plant", loop.placement.plant,
                                [str(paths.node_binary("rlc_plant")), "__name:=plant"],
                                {"transport": transport.subscriber_transport("/u", size), **queues,
                                 "samples": loop.samples, "warmup": loop.warmup,
                                 "record_path": str(run_dir / "records" / "plant.csv")})
        return StartedLoop(ending=plant, connections=dict(LOOP_TOPICS))

    def metadata(self, exp: "Experiment") -> dict[str, Any]:
        p = exp.loop.placement
        return {"type": self.name, "placement": {"plant": p.plant, "controller": p.controller}}
