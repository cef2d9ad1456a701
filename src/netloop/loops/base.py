"""The run side of a loop kind (``loop.type`` in an experiment file): the interface the
experiment loader and the runner talk to (:func:`netloop.loops.get_loop_kind`).

The run side owns which topics cross the link and how large their messages are, which extra
checks its configuration needs, how long a run lasts, the short ``--quick`` variant, extra
cells (a local baseline) and starting its nodes in a run. The same kind's analysis side
(:class:`netloop.analysis.kinds.LoopAnalysis`, found through the same registry entry) analyses
its runs and writes its part of the report.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover - types only
    from ..model import Experiment
    from ..transports import CrossingTopic, Transport


class NodeStarter(Protocol):
    """What the runner offers a loop kind for starting its nodes (runner._Hosts)."""

    def start(self, name: str, host: str, argv: list[str], params: dict[str, Any] | None = None) -> Any: ...

    def set_params(self, params: dict[str, Any], namespace: str) -> None: ...


@dataclass
class LoopStart:
    """What a loop kind gets to start its nodes for one run."""

    hosts: NodeStarter
    experiment: "Experiment"
    transport: "Transport"
    run_dir: Path
    repetition: int = 0          # the run's repetition (seeds a square-wave reference's phases)


@dataclass
class StartedLoop:
    """What a loop kind started: the process whose exit ends the run, or a list of them that
    must all end (None: the flows or the experiment's ``duration`` end it), and, per topic,
    the (publisher, subscriber) nodes whose connection must be up before the run counts."""

    ending: Any = None
    connections: dict[str, tuple[str, str]] = field(default_factory=dict)


class LoopKind:
    """Base class: a loop kind with no loop (subclasses override what they have)."""

    name: str = ""
    description: str = ""
    #: whether ``loop.per_robot`` may run one loop per robot host of the link
    per_robot: bool = False

    def check(self, exp: "Experiment", hosts: list[str]) -> None:
        """Checks of the experiment beyond the schema; raise ConfigError naming the key."""

    def crossing_topics(self, exp: "Experiment") -> list["CrossingTopic"]:
        """The loop's topics whose publisher and subscriber are on different hosts."""
        return []

    def run_seconds(self, exp: "Experiment") -> float | None:
        """How long the loop runs (None: the loop does not decide a run's length)."""
        return None

    def shorten(self, exp: "Experiment") -> None:
        """Make the loop short for ``--quick`` (in place)."""

    def baseline_settings(self, exp: "Experiment") -> list[tuple[tuple[str, Any], ...]]:
        """Extra cells run once per repetition (e.g. the local baseline), as sweep settings."""
        return []

    def start(self, ctx: LoopStart) -> StartedLoop:
        """Start the loop's nodes for one run."""
        return StartedLoop()

    def metadata(self, exp: "Experiment") -> dict[str, Any]:
        """What a run's metadata.json records about the loop."""
        return {"type": self.name}
