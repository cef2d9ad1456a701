"""Typed transport options. Each transport declares its options once, as a typed section
(:func:`netloop.schema.section`: keys, types, defaults, bounds and help texts in one class).
Two views of that one declaration:

- the **mapping** an experiment file and the records hold (``transport_options.<word>``,
  ``metadata.json`` → ``transport.options``): :func:`mapping_schema` validates into a plain
  dict with every default filled in; it is the transport's ``options_schema``, so experiment
  validation, ``netloop validate --keys`` and the docs' key reference read it;
- the **typed object** the transport's code reads (``options.rate_mbit``, not
  ``options["rate_mbit"]``): :func:`typed` validates a mapping into the section, every problem
  reported at once and named by its key, so a hand-made mapping is checked as a file is.
"""
from __future__ import annotations

import copy
from typing import Any, TypeVar

from ..schema import List, Map, Node, validate

T = TypeVar("T")


def _as_mapping(node: Node) -> Node:
    """``node`` with every section below it validating into plain dicts instead."""
    if isinstance(node, Map):
        view = copy.copy(node)
        view.into, view.section = None, None
        view.fields = {k: _as_mapping(v) for k, v in node.fields.items()}
        view.extra = _as_mapping(node.extra) if node.extra is not None else None
        return view
    if isinstance(node, List):
        view = copy.copy(node)
        view.item = _as_mapping(node.item)
        return view
    return node


def mapping_schema(section_cls: type) -> Map:
    """The options as a file holds them: the section's keys, validated into a plain dict."""
    return _as_mapping(section_cls.schema)


def typed(section_cls: type[T], options: Any) -> T:
    """``options`` (a mapping as the experiment holds it, None for every default, or already
    the section) as the typed section; a ConfigError names every bad key at once."""
    if isinstance(options, section_cls):
        return options
    return validate(section_cls.schema, options or {})
