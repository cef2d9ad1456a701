"""Sweeps: the axes of an experiment's ``sweep:``, the cells they make, and setting a swept
key in a document.

Any key can be swept (``link_params.delay_ms``, ``flows[0].size_bytes``, ``loop.controller.K``);
key paths under ``zip`` vary together as one axis. Every combination of the axes, with a
transport and a repetition, is a :class:`Cell`: one run. :mod:`netloop.experiment` validates
each cell's document before anything starts.
"""
from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from typing import Any

from .schema import Collector

#: the key under ``sweep:`` whose key paths vary together (one axis of equal-length lists)
ZIP = "zip"

Settings = tuple[tuple[str, Any], ...]   # (key path, value) for every swept key of a cell


@dataclass(frozen=True)
class Cell:
    """One run of an experiment: a transport, the sweep settings, a repetition index."""

    transport: str
    repetition: int
    settings: Settings = ()

    @property
    def condition(self) -> str:
        """The cell without its repetition, e.g. 'udp delay_ms=20'."""
        return " ".join([self.transport] + [f"{_short(k)}={v}" for k, v in self.settings])

    @property
    def run_id(self) -> str:
        parts = [self.transport.replace("/", "+")] + [f"{_short(k)}={v}" for k, v in self.settings]
        safe = "__".join(parts)
        for bad in "/[] ":
            safe = safe.replace(bad, "_")
        return f"{safe}-r{self.repetition}"


def _short(path: str) -> str:
    """The last part of a key path (flows[0].size_bytes -> size_bytes)."""
    return path.rsplit(".", 1)[-1]


_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_path(doc: dict, path: str, value: Any) -> None:
    """Set ``a.b[2].c`` in a nested document; KeyError/IndexError when a part is missing."""
    parts = [(name, int(index) if index else None) for name, index in _PATH_PART.findall(path)]
    node: Any = doc
    for n, (name, index) in enumerate(parts):
        last = n == len(parts) - 1
        if name:
            if not isinstance(node, dict):
                raise KeyError(name)
            if last:
                node[name] = value
                return
            if name not in node:
                raise KeyError(name)
            node = node[name]
        else:
            if not isinstance(node, list) or index >= len(node):
                raise IndexError(index)
            if last:
                node[index] = value
                return
            node = node[index]


def _sweep_axes(sweep: dict[str, Any]) -> list[list[Settings]]:
    """The sweep as axes, each a list of settings: a plain key is one axis of its values; the
    key paths under ``zip`` (one mapping, or a list of mappings) make one axis each, whose
    n-th setting takes every path's n-th value."""
    axes = []
    for path, values in sweep.items():
        if path == ZIP:
            groups = values if isinstance(values, list) else [values]
            for group in groups:
                n = len(next(iter(group.values())))
                axes.append([tuple((p, group[p][i]) for p in group) for i in range(n)])
        else:
            axes.append([((path, v),) for v in values])
    return axes


def sweep_combinations(sweep: dict[str, Any]) -> list[Settings]:
    """Every cell's settings: the Cartesian product of the sweep's axes."""
    return [tuple(s for part in combo for s in part) for combo in itertools.product(*_sweep_axes(sweep))]


def check_sweep(sweep: dict[str, Any], found: Collector) -> bool:
    """The sweep's shape: lists of at least one distinct value; ``zip`` groups of equal
    lengths. Returns whether it is usable."""
    def values_ok(key: str, values: Any) -> bool:
        if not isinstance(values, list) or not values:
            found.add(key, f"expected a non-empty list of values, got {values!r}")
            return False
        if len({repr(v) for v in values}) != len(values):
            found.add(key, f"values must be distinct, got {values!r}")
            return False
        return True

    ok = True
    for path, values in sweep.items():
        if path != ZIP:
            ok = values_ok(f"sweep.{path}", values) and ok
            continue
        groups = values if isinstance(values, list) else [values]
        for g, group in enumerate(groups):
            where = f"sweep.{ZIP}" + (f"[{g}]" if isinstance(values, list) else "")
            if not isinstance(group, dict) or len(group) < 2:
                found.add(where, "expected a mapping of at least two key paths to lists varied together "
                                 "(e.g. {flows[0].size_bytes: [1024, 2048], flows[0].period: [0.01, 0.02]})")
                ok = False
                continue
            if not all([values_ok(f"{where}.{p}", v) for p, v in group.items()]):
                ok = False
                continue
            lengths = {p: len(v) for p, v in group.items()}
            if len(set(lengths.values())) != 1:
                found.add(where, "the lists of a zip group must have equal lengths, got "
                                 + ", ".join(f"{p}: {n}" for p, n in lengths.items()))
                ok = False
    return ok


def with_settings(doc: dict, settings: Settings) -> dict:
    out = copy.deepcopy(doc)
    out["sweep"] = {}
    for path, value in settings:
        set_path(out, path, value)
    return out
