"""Declarative validation of the package's YAML files (experiments, link profiles, car profiles).

A schema is built from a few small node types and applied with :func:`validate`, which
returns the document with defaults filled in, or raises :class:`ConfigError` naming the
offending key (as a dotted path such as ``loop.plant.R``) and what is allowed there.
Validation never starts anything, so an invalid file is refused before a run begins.

Example::

    PLANT = Map({"R": Num(default=1.0, gt=0), "mode": Enum(["a", "b"], default="a")})
    cfg = validate(PLANT, {"R": 2}, source="exp.yaml")   # -> {"R": 2.0, "mode": "a"}

The node types, :class:`ConfigError`, :func:`validate` and :func:`load_config_file` live in
:mod:`netloop.schema_nodes` (robot-side: Python 3.8, what the car driver uses) and are
re-exported here; this module adds the typed sections (:func:`section`, :func:`key`), which
need Python >= 3.10 (keyword-only dataclasses) and so stay on the operator's side, and
:func:`describe` (the key reference of the docs and ``netloop validate --keys``).
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable

from .schema_nodes import (Any_, Bool, Collector, ConfigError, Enum, Int, List, Map, Node, Num, Str, _file_key,
                           _suggest, load_config_file, load_yaml, to_dict, validate)

__all__ = ["Any_", "Bool", "Collector", "ConfigError", "Enum", "Int", "List", "Map", "Node", "Num", "Str",
           "describe", "key", "load_config_file", "load_yaml", "registered_sections", "section", "to_dict", "validate",
           "_suggest"]


def key(node: Node, name: str | None = None) -> Any:
    """A field of a :func:`section` class, validated by ``node`` (whose default it takes).
    ``name`` is the key in files when it differs from the attribute (``from`` -> ``from_``)."""
    meta = {"node": node, "name": name}
    if node.required:
        return dataclasses.field(metadata=meta)
    if isinstance(node, Map) and node.default == {}:
        return dataclasses.field(default_factory=lambda: node.check({}, ""), metadata=meta)
    return dataclasses.field(default_factory=lambda: copy.deepcopy(node.default), metadata=meta)


def registered_sections(provider: Callable[[], dict[str, type]]) -> Any:
    """A field of a :func:`section` class holding sections that are registered, not declared
    here: ``provider()`` gives, when a file is read, each section's key and its class (a
    :func:`section`). In files their keys sit beside the class's own (``loop.teleop``); in
    the object they are read as attributes (``exp.loop.teleop``) and kept in this field, a
    dict by key. Each is validated, defaulted and described like a declared key."""
    def defaults():
        return {name: cls.schema.check({}, name) for name, cls in provider().items()}
    return dataclasses.field(default_factory=defaults, metadata={"sections": provider})


def section(doc: str = "", check: Callable[[dict, str], None] | None = None, extra: Node | None = None,
            default: Any = None):
    """Class decorator: a typed configuration section. The class's fields, each declared with
    :func:`key`, are the one definition of its keys, types, defaults and help texts; the
    decorator makes it a keyword-only dataclass and attaches ``cls.schema``, the :class:`Map`
    that validates a mapping into an instance (every problem reported at once)::

        @section("the plant")
        class Plant:
            R: float = key(Num(1.0, "resistance [ohm]", gt=0))

        Plant.schema.check({"R": 2}, "plant")   # -> Plant(R=2.0)
    """
    def wrap(cls):
        cls = dataclasses.dataclass(kw_only=True)(cls)
        declared = [f for f in dataclasses.fields(cls) if "sections" not in f.metadata]
        fields = {_file_key(f): f.metadata["node"] for f in declared}
        renamed = {_file_key(f): f.name for f in declared if _file_key(f) != f.name}
        registered = next((f for f in dataclasses.fields(cls) if "sections" in f.metadata), None)
        more = None
        if registered is not None:
            provider = registered.metadata["sections"]
            more = lambda: {name: section_cls.schema for name, section_cls in provider().items()}  # noqa: E731
            cls.__getattr__ = _registered_attribute(registered.name)

        def build(**values):
            if registered is None:
                return cls(**{renamed.get(k, k): v for k, v in values.items()})
            out = {renamed.get(k, k): v for k, v in values.items() if k in fields}
            return cls(**out, **{registered.name: {k: v for k, v in values.items() if k not in fields}})
        cls.schema = Map(fields, {} if default is None else default, doc, extra=extra, check=check, into=build,
                         more=more)
        cls.schema.section = cls
        return cls
    return wrap


def _registered_attribute(field_name: str):
    """``__getattr__`` of a section with registered sections: each is read by its key."""
    def get(self, name):
        sections = self.__dict__.get(field_name)
        if sections is not None and name in sections:
            return sections[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
    return get


def describe(schema: Node, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """Every key of a schema as (dotted key, what is allowed, default, doc), for reference docs."""
    rows = []
    if isinstance(schema, Map):
        for key, node in schema.all_fields().items():
            path = f"{prefix}.{key}" if prefix else key
            if isinstance(node, Map) and node.fields:
                rows.append((path, "mapping", "", node.doc))
                rows += describe(node, path)
            elif isinstance(node, List) and isinstance(node.item, Map):
                rows.append((path, "list of mappings", _default_text(node), node.doc))
                rows += describe(node.item, path + "[]")
            else:
                rows.append((path, _allowed_text(node), _default_text(node), node.doc))
    return rows


def _allowed_text(node: Node) -> str:
    if isinstance(node, List):
        inner = _allowed_text(node.item)
        if node.scalar_ok:
            return f"{inner}, or a list of them"
        if node.max_len is not None and node.min_len == node.max_len:
            return f"list of {node.min_len} ({inner})"
        return f"list of ({inner})"
    if isinstance(node, Map):
        return "mapping"
    if isinstance(node, Bool):
        return "true or false"
    if isinstance(node, Str):
        return "string"
    if isinstance(node, Any_):
        return "any"
    return node.describe()


def _default_text(node: Node) -> str:
    return "(required)" if node.required else ("" if node.default is None else str(node.default))
