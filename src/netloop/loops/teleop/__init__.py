"""``teleop``: the scripted teleop trial driving the simulated (or real) car; odom and cmd_vel
cross the link. One package, one registry entry (:mod:`netloop.loops`):

  - :mod:`.run`: the run side (checks, crossing topics, the simulator and the trial's nodes,
    the local baseline's extra cells);
  - :mod:`.analysis`: the analysis side (the trial's speed and heading steps against the local
    baseline: :mod:`netloop.analysis.teleop_run`; its decision table, its rows of "Every loop
    run", runs.csv and its report section).

Its keys are ``loop.teleop`` and ``loop.placement.car``/``trial`` of the experiment model.
"""
