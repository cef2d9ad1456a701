"""``rlc``: the series RLC circuit of the Pound paper, plant and controller on two hosts.

The plant (``rlc_plant``) samples y every period and applies each u as it arrives; the
controller (``loop_controller``) answers every y with a u. Both read the loop's shared
parameters from ``/rlc/*`` and record every message (``records/plant.csv``,
``records/controller.csv``).

With ``loop.per_robot`` every robot host of the link runs its own loop: plant ``plant_<robot>``
on the robot, controller ``controller_<robot>`` on ``placement.controller``, topics
``/<robot>/y`` and ``/<robot>/u``, records ``plant_<robot>.csv`` and ``controller_<robot>.csv``;
the run ends when every plant has ended.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import paths, reference
from ...jsonio import write_json_atomic
from ...model import LOOP_SAMPLE_BYTES   # netloop/LoopSample's size without padding (a test holds it to the message)
from ...transports.base import CrossingTopic
from ..base import LoopKind, LoopStart, StartedLoop

if TYPE_CHECKING:  # pragma: no cover
    from ...model import Experiment, Loop


@dataclass(frozen=True)
class LoopInstance:
    """One RLC loop of a run: where its plant and controller run, its topics and records."""

    robot: str | None        # the robot it belongs to (per_robot), else None: the run's one loop
    plant_host: str
    controller_host: str

    def _suffix(self) -> str:
        return f"_{self.robot}" if self.robot else ""

    @property
    def plant(self) -> str:
        """The plant's node name (and record name)."""
        return "plant" + self._suffix()

    @property
    def controller(self) -> str:
        return "controller" + self._suffix()

    def topic(self, name: str) -> str:
        """``/y`` or ``/<robot>/y`` (name: y or u)."""
        return f"/{self.robot}/{name}" if self.robot else f"/{name}"

    @property
    def connections(self) -> dict[str, tuple[str, str]]:
        """Per topic, (publisher node, subscriber node)."""
        return {self.topic("y"): ("/" + self.plant, "/" + self.controller),
                self.topic("u"): ("/" + self.controller, "/" + self.plant)}


def loop_instances(exp: "Experiment") -> list[LoopInstance]:
    """The run's RLC loops: one, or with ``loop.per_robot`` one per robot host."""
    placement = exp.loop.placement
    if not exp.loop.per_robot:
        return [LoopInstance(None, placement.plant, placement.controller)]
    return [LoopInstance(robot, robot, placement.controller) for robot in exp.robot_hosts()]


def loop_message_bytes(loop: "Loop") -> int:
    """Serialized size of one y or u message of the loop."""
    return LOOP_SAMPLE_BYTES + loop.padding_bytes


def rlc_parameters(loop: "Loop", schedule: list[tuple[int, float]] | None = None) -> dict[str, Any]:
    """The shared loop parameters (``/rlc/*``) both nodes read; with a ``schedule``
    (netloop.reference) the controller's reference steps (sample index, level)."""
    plant, ctl = loop.plant, loop.controller
    out = {"R": plant.R, "L": plant.L, "C": plant.C, "period": plant.period,
           "initial_state": list(plant.initial_state), "K": ctl.K, "Ki": ctl.Ki, "Kd": ctl.Kd,
           "reference": ctl.reference}
    if schedule and len(schedule) > 1:
        out.update(reference_steps=[k for k, _ in schedule], reference_levels=[v for _, v in schedule])
    return out


def run_schedule(loop: "Loop", repetition: int) -> list[tuple[int, float]]:
    """The run's reference schedule (netloop.reference.square_wave_schedule)."""
    ctl = loop.controller
    return reference.square_wave_schedule(dataclasses.asdict(ctl.square_wave), ctl.reference, loop.plant.period,
                                          repetition)


def write_schedule(run_dir: Path, loop: "Loop", repetition: int, schedule: list[tuple[int, float]]) -> None:
    """records/reference.json: the steps the controller follows, for the analysis."""
    wave = dataclasses.asdict(loop.controller.square_wave)
    write_json_atomic(run_dir / "records" / reference.RECORD_NAME,
                      {"square_wave": wave, "repetition": repetition, "period": loop.plant.period,
                       "schedule": [[k, v] for k, v in schedule]})


class RlcLoop(LoopKind):
    name = "rlc"
    description = "the RLC circuit (plant) and its controller, y and u crossing the link"
    per_robot = True

    def crossing_topics(self, exp: "Experiment") -> list[CrossingTopic]:
        size, period = loop_message_bytes(exp.loop), exp.loop.plant.period
        return [topic for one in loop_instances(exp) if one.plant_host != one.controller_host
                for topic in (CrossingTopic(one.topic("y"), "netloop/LoopSample", one.plant_host, one.controller_host,
                                            size, period, control=True),
                              CrossingTopic(one.topic("u"), "netloop/LoopSample", one.controller_host, one.plant_host,
                                            size, period, control=True))]

    def check(self, exp: "Experiment", hosts: list[str]) -> None:
        from ...schema import Collector  # noqa: PLC0415

        found = Collector()
        for role in ("plant", "controller"):
            host = getattr(exp.loop.placement, role)
            if host not in hosts:
                found.add(f"loop.placement.{role}", f"unknown host {host!r} for link '{exp.link}'; "
                                                    f"allowed: {', '.join(hosts)}")
        if exp.loop.per_robot:
            robots = exp.robot_hosts()
            if exp.loop.placement.plant != "robot":
                found.add("loop.placement.plant", f"with per_robot every robot ({', '.join(robots)}) has its plant: "
                                                  f"leave the plant on 'robot', got {exp.loop.placement.plant!r}")
            if exp.loop.placement.controller in robots:
                found.add("loop.placement.controller", f"with per_robot the controllers must be on a host that is "
                                                       f"not a robot ({', '.join(robots)}), e.g. operator")
        wave = exp.loop.controller.square_wave
        if wave.count:
            needed = math.ceil(reference.seconds_needed(dataclasses.asdict(wave)) / exp.loop.plant.period)
            if exp.loop.samples < needed:
                found.add("loop.samples", f"{exp.loop.samples} samples are too few for square_wave's {wave.count} "
                                          f"periods of {wave.period:g} s: at least {needed}")
            if wave.period / 2 < 5 * exp.loop.plant.period:
                found.add("loop.controller.square_wave.period", f"{wave.period:g} s leaves fewer than 5 samples "
                                                                f"per step; at least {10 * exp.loop.plant.period:g}")
        found.raise_if_any()

    def run_seconds(self, exp: "Experiment") -> float:
        return exp.loop.warmup + exp.loop.samples * exp.loop.plant.period

    def shorten(self, exp: "Experiment") -> None:
        loop = exp.loop
        loop.samples = min(loop.samples, max(10, int(2.0 / loop.plant.period)))
        loop.warmup = min(loop.warmup, 1.0)
        wave = loop.controller.square_wave
        if wave.count:   # as many periods as 2 s hold, at least one
            wave.count = max(1, min(wave.count, int((loop.samples * loop.plant.period - wave.period / 8) // wave.period)))
            loop.samples = max(loop.samples, math.ceil(reference.seconds_needed(dataclasses.asdict(wave))
                                                       / loop.plant.period))

    def start(self, ctx: LoopStart) -> StartedLoop:
        loop, run_dir, transport = ctx.experiment.loop, ctx.run_dir, ctx.transport
        size = loop_message_bytes(loop)
        queues = {"publisher_queue_size": loop.publisher_queue_size,
                  "subscriber_queue_size": loop.subscriber_queue_size, "padding_bytes": loop.padding_bytes}
        schedule = run_schedule(loop, ctx.repetition)
        if loop.controller.square_wave.count:
            write_schedule(run_dir, loop, ctx.repetition, schedule)
        ctx.hosts.set_params(rlc_parameters(loop, schedule), "/rlc")
        plants, connections = [], {}
        for one in loop_instances(ctx.experiment):
            remap = [f"y:={one.topic('y')}", f"u:={one.topic('u')}"] if one.robot else []

            def carried(node: str, host: str, takes: str, sends: str) -> dict[str, Any]:
                """The transport's parameters for the node's two topics (what it publishes, then
                what it subscribes: the subscriber's ~transport wins)."""
                return {**transport.endpoint_params(sends, size, "publisher", node=node, host=host, qos=loop.qos),
                        **transport.endpoint_params(takes, size, "subscriber", node=node, host=host, qos=loop.qos)}
            ctx.hosts.start(one.controller, one.controller_host,
                            [str(paths.node_binary("loop_controller")), f"__name:={one.controller}"] + remap,
                            {**carried(one.controller, one.controller_host, one.topic("y"), one.topic("u")), **queues,
                             "record_path": str(run_dir / "records" / f"{one.controller}.csv")})
            plants.append(ctx.hosts.start(one.plant, one.plant_host,
                                          [str(paths.node_binary("rlc_plant")), f"__name:={one.plant}"] + remap,
                                          {**carried(one.plant, one.plant_host, one.topic("u"), one.topic("y")),
                                           **queues, "samples": loop.samples, "warmup": loop.warmup,
                                           "record_path": str(run_dir / "records" / f"{one.plant}.csv")}))
            connections.update(one.connections)
        return StartedLoop(ending=plants[0] if len(plants) == 1 else plants, connections=connections)

    def metadata(self, exp: "Experiment") -> dict[str, Any]:
        p = exp.loop.placement
        out = {"type": self.name, "placement": {"plant": p.plant, "controller": p.controller}}
        if exp.loop.per_robot:
            out.update(per_robot=True, robots=[one.robot for one in loop_instances(exp)])
        return out
