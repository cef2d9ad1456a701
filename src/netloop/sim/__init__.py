"""The embedded simulator: the Sunfounder car's URDF in the SDF worlds, in pybullet.

ROS-free core (unit-testable, benchmarkable)::

    from netloop.sim import Simulation, load_sim_config
    sim = Simulation(load_sim_config({"world": "tunnel", "camera_rate": 10}))
    sim.command(0.3, 0.0)          # cmd_vel: linear.x, angular.z (car driver's mapping)
    sim.step(1000)                 # 1 s of physics at 1 kHz
    sim.base_pose(), sim.render_camera(), sim.scan()
    sim.close()

:class:`RealTimeLoop` paces a Simulation against the wall clock and runs sensor tasks at
their rates; ``nodes/sim_node.py`` (module :mod:`netloop.sim.node`) puts ROS around it.
Worlds and URDFs are checked before anything moves (:mod:`netloop.sim.world`).

Heavy imports (pybullet, numpy) happen in the submodules, so importing this package (e.g.
for ``bag_tool.register`` in the CLI) stays cheap.
"""
from __future__ import annotations

__all__ = ["Simulation", "RealTimeLoop", "SimError", "load_sim_config", "WorldError"]


def __getattr__(name):  # lazy re-exports
    if name in ("Simulation", "RealTimeLoop", "load_sim_config", "SimError"):
        from . import simulation
        return getattr(simulation, name)
    if name == "WorldError":
        from .world import WorldError
        return WorldError
    raise AttributeError(name)
