"""``none``: no loop, the run is the perturbing flows alone. Its run side is :mod:`.run`; its
analysis side is the base :class:`netloop.analysis.kinds.LoopAnalysis` (nothing of its own: the
flows' decision table)."""
