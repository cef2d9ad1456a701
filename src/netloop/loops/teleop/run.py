"""``teleop``: the scripted teleoperation trial driving the simulated car across the link.

The simulator (``loop.teleop.simulator``) runs on the car's host and the trial
(``teleop_trial``: a speed step, then a heading step, closed over the network at 20 Hz) on the
trial's host; each repetition can also run the trial on the car's own host, the local
baseline. rospy (so the simulator) has no UDPROS: for ``udp``, roscpp relays on the car's host
carry odometry out (odom -> odom_net) and commands in (cmd_vel_net -> cmd_vel, subscribed
unreliably), and the trial uses odom_net and cmd_vel_net.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import paths
from ...schema import Collector, ConfigError, load_yaml
from ...transports.base import CrossingTopic
from ..base import LoopKind, LoopStart, StartedLoop
from ..simulators import get_simulator

if TYPE_CHECKING:  # pragma: no cover
    from ...model import Experiment, Loop

#: serialized sizes and rates of the teleop loop's two topics
ODOM_BYTES, ODOM_PERIOD = 700, 0.02            # nav_msgs/Odometry with frame ids, 50 Hz
CMD_VEL_BYTES, CMD_VEL_PERIOD = 48, 0.05       # geometry_msgs/Twist, 20 Hz
#: seconds between the nodes starting and the trial's first command
TRIAL_LEAD_IN = 3.0
TRIAL_CONFIG = paths.REPO / "controllers" / "config" / "teleop_trial.yaml"

TOPIC_TOOLS_RELAY = next((p for p in ("/opt/ros/noetic/lib/topic_tools/relay", "/usr/lib/topic_tools/relay")
                          if Path(p).exists()), "relay")


def teleop_trial_params(loop: "Loop") -> dict[str, Any]:
    """The trial's parameters: controllers/config/teleop_trial.yaml with the experiment's overrides."""
    base = load_yaml(str(TRIAL_CONFIG))
    return {**base, **loop.teleop.trial}


class TeleopLoop(LoopKind):
    name = "teleop"
    description = "the scripted teleop trial driving the simulated car; odom and cmd_vel cross the link"

    def crossing_topics(self, exp: "Experiment") -> list[CrossingTopic]:
        car, trial = exp.loop.placement.car, exp.loop.placement.trial
        if car == trial:
            return []
        return [CrossingTopic("/odom", "nav_msgs/Odometry", car, trial, ODOM_BYTES, ODOM_PERIOD),
                CrossingTopic("/cmd_vel", "geometry_msgs/Twist", trial, car, CMD_VEL_BYTES, CMD_VEL_PERIOD)]

    def check(self, exp: "Experiment", hosts: list[str]) -> None:
        """Hosts known, the simulator available, the world loads, the overrides are known."""
        from ...sim.world import prepare_world  # noqa: PLC0415

        teleop, found = exp.loop.teleop, Collector()
        for role in ("car", "trial"):
            host = getattr(exp.loop.placement, role)
            if host not in hosts:
                found.add(f"loop.placement.{role}", f"unknown host {host!r} for link '{exp.link}'; "
                                                    f"allowed: {', '.join(hosts)}")
        why = get_simulator(teleop.simulator).unavailable()
        if why:
            found.add("loop.teleop.simulator", why)
        with found.check():
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    prepare_world(teleop.world, tmp)   # exists, parses, includes resolve
            except (FileNotFoundError, ValueError) as err:
                raise ConfigError("loop.teleop.world", str(err)) from None
        with found.check("loop.teleop.sim"):
            get_simulator(teleop.simulator).check_params(teleop.sim, teleop.world)
        known = set(load_yaml(str(TRIAL_CONFIG)))
        for key in teleop.trial:
            if key not in known:
                found.add(f"loop.teleop.trial.{key}", f"unknown trial parameter; allowed: {', '.join(sorted(known))}")
        found.raise_if_any()

    def run_seconds(self, exp: "Experiment") -> float:
        return TRIAL_LEAD_IN + float(teleop_trial_params(exp.loop)["duration"])

    def shorten(self, exp: "Experiment") -> None:
        loop = exp.loop
        loop.teleop.trial = dict(loop.teleop.trial, duration=min(float(teleop_trial_params(loop)["duration"]), 6.0))

    def baseline_settings(self, exp: "Experiment") -> list[tuple[tuple[str, Any], ...]]:
        if not exp.loop.teleop.local_baseline:
            return []
        return [(("loop.placement.trial", exp.loop.placement.car),)]

    def start(self, ctx: LoopStart) -> StartedLoop:
        loop, hosts = ctx.experiment.loop, ctx.hosts
        car, trial_host = loop.placement.car, loop.placement.trial
        crossing = car != trial_host
        odom_transport = ctx.transport.subscriber_transport("/odom", ODOM_BYTES) if crossing else "tcp_nodelay"
        cmd_transport = ctx.transport.subscriber_transport("/cmd_vel", CMD_VEL_BYTES) if crossing else "tcp_nodelay"
        simulator = get_simulator(loop.teleop.simulator)
        simulator.start(hosts, car, loop.teleop.world, loop.teleop.sim, ctx.run_dir)
        trial_argv = [str(paths.node_binary("teleop_trial")), "__name:=trial"]
        connections = {"/odom": (simulator.odom_node, "/trial"), "/cmd_vel": ("/trial", simulator.cmd_vel_node)}
        if odom_transport == "udp":
            hosts.start("odom_relay", car, [TOPIC_TOOLS_RELAY, "odom", "odom_net", "__name:=odom_relay"])
            trial_argv.append("odom:=odom_net")
            connections["/odom"] = (simulator.odom_node, "/odom_relay")
            connections["/odom_net"] = ("/odom_relay", "/trial")
        if cmd_transport == "udp":
            hosts.start("cmd_relay", car, [TOPIC_TOOLS_RELAY, "cmd_vel_net", "cmd_vel", "__name:=cmd_relay",
                                           "_unreliable:=true"])
            trial_argv.append("cmd_vel:=cmd_vel_net")
            connections["/cmd_vel"] = ("/cmd_relay", simulator.cmd_vel_node)
            connections["/cmd_vel_net"] = ("/trial", "/cmd_relay")
        params = dict(teleop_trial_params(loop), transport=odom_transport,
                      record_path=str(ctx.run_dir / "records" / "trial.csv"))
        trial = hosts.start("trial", trial_host, trial_argv, params)
        return StartedLoop(ending=trial, connections=connections)

    def metadata(self, exp: "Experiment") -> dict[str, Any]:
        p = exp.loop.placement
        return {"type": self.name, "placement": {"car": p.car, "trial": p.trial},
                "simulator": exp.loop.teleop.simulator}
