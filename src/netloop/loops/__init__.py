"""Loop kinds, chosen by ``loop.type`` in an experiment file: the one registry.

A loop kind is one package of this folder behind one :class:`LoopKindEntry`:

  - ``rlc``: the RLC circuit of the Pound paper with its P/PI/PID controller (:mod:`.rlc`)
  - ``teleop``: teleoperation of the simulated Sunfounder car by the scripted trial (:mod:`.teleop`),
    on the simulator chosen by ``loop.teleop.simulator`` (:mod:`.simulators`)
  - ``none``: no loop, only the perturbing flows (:mod:`.none`)

An entry names the kind's two sides as ``"module:attribute"`` (or gives them directly): the
run side, a :class:`~netloop.loops.base.LoopKind` (its checks, crossing topics, nodes), and
the analysis side, a :class:`netloop.analysis.kinds.LoopAnalysis` (its analysis of a run,
typed results, CSVs and report sections). Each side is imported only when it is first asked
for, so this module imports nothing: the analysis finds a kind here without loading the run
(test/test_analysis_imports.py), and the operator's side runs without the analysis's numpy.
An entry may also name the kind's own section of the experiment file (``config``: its keys
are ``loop.<name>.*``, as ``loop.teleop``), which the model validates, defaults and documents
like its declared keys. A kind defined elsewhere (a plug-in, a test) joins with
:func:`register_loop_kind`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Union

if TYPE_CHECKING:
    from ..run_files import RunRecord

#: a side of a kind: "package.module:attribute" imported when first used, or the class itself
Side = Union[str, Callable[[], Any]]


@dataclass(frozen=True)
class LoopKindEntry:
    """One loop kind: its word (``loop.type``), its run and analysis sides, and its keys of the
    experiment file, if it has its own: ``config`` names a section class
    (:func:`netloop.schema.section`) whose keys are ``loop.<name>.*`` (``loop.teleop``)."""

    name: str
    run: Side
    analysis: Side
    config: Side | None = None


def _load(side: Side) -> Callable[[], Any]:
    """The class a side names (``"module:attribute"`` imported now)."""
    if not isinstance(side, str):
        return side
    module, _, attribute = side.partition(":")
    return getattr(importlib.import_module(module), attribute)


_KINDS: dict[str, LoopKindEntry] = {}


def register_loop_kind(entry: LoopKindEntry) -> None:
    """Add a loop kind (or replace the one of that name): from then on ``loop.type`` accepts
    its word, the runner starts it and the report analyses its runs."""
    _KINDS[entry.name] = entry


for _entry in (
        LoopKindEntry("rlc", "netloop.loops.rlc.run:RlcLoop", "netloop.loops.rlc.analysis:RlcAnalysis"),
        LoopKindEntry("teleop", "netloop.loops.teleop.run:TeleopLoop", "netloop.loops.teleop.analysis:TeleopAnalysis",
                      "netloop.loops.teleop.config:Teleop"),
        LoopKindEntry("none", "netloop.loops.none.run:NoLoop", "netloop.analysis.kinds:LoopAnalysis")):
    register_loop_kind(_entry)

#: the loop type of a run whose metadata names none (runs recorded before loop kinds existed)
DEFAULT_LOOP_TYPE = "rlc"


def loop_kind_names() -> list[str]:
    """The words accepted as ``loop.type``, in a stable order (built-in kinds first)."""
    return list(_KINDS)


def loop_kind_entry(name: str) -> LoopKindEntry:
    """The registry entry called ``name``; KeyError lists the allowed names."""
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown loop type {name!r}; allowed: {', '.join(_KINDS)}") from None


def get_loop_kind(name: str) -> Any:
    """A new instance of the run side (:class:`~netloop.loops.base.LoopKind`) of the kind
    called ``name``; KeyError lists the allowed names."""
    return _load(loop_kind_entry(name).run)()


def loop_analysis(name: str) -> Any:
    """A new instance of the analysis side (:class:`netloop.analysis.kinds.LoopAnalysis`) of
    the kind called ``name``; KeyError lists the allowed names."""
    return _load(loop_kind_entry(name).analysis)()


def loop_kind_sections() -> dict[str, Any]:
    """Each kind's own section of the experiment model (``loop.<name>``), by name: the kinds
    whose entry gives a ``config``."""
    return {e.name: _load(e.config) for e in _KINDS.values() if e.config is not None}


def loop_type_of(meta: RunRecord) -> str:
    """The loop type a run's metadata.json records (:data:`DEFAULT_LOOP_TYPE` when it names none)."""
    return str(meta.loop_type or DEFAULT_LOOP_TYPE)


def __getattr__(name: str) -> Any:
    """The run-side interface (``LoopKind``, ``LoopStart``, ``StartedLoop``), imported when asked for."""
    if name in ("LoopKind", "LoopStart", "StartedLoop"):
        from . import base  # noqa: PLC0415 - not imported with the registry
        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_LOOP_TYPE", "LoopKindEntry", "get_loop_kind", "loop_analysis", "loop_kind_entry",
           "loop_kind_names", "loop_kind_sections", "loop_type_of", "register_loop_kind"]
