"""Declarative validation of the package's YAML files (experiments, link profiles, car profiles).

A schema is built from a few small node types and applied with :func:`validate`, which
returns the document with defaults filled in, or raises :class:`ConfigError` naming the
offending key (as a dotted path such as ``loop.plant.R``) and what is allowed there.
Validation never starts anything, so an invalid file is refused before a run begins.

Example::

    PLANT = Map({"R": Num(default=1.0, gt=0), "mode": Enum(["a", "b"], default="a")})
    cfg = validate(PLANT, {"R": 2}, source="exp.yaml")   # -> {"R": 2.0, "mode": "a"}
"""
from __future__ import annotations

import copy
import difflib
import math
from typing import Any, Callable, Iterable

import yaml

_REQUIRED = object()


class ConfigError(ValueError):
    """An invalid configuration value; ``key`` is the dotted path, ``source`` the file."""

    def __init__(self, key: str, message: str, source: str | None = None):
        self.key, self.message, self.source = key, message, source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{key or '<top level>'}: {message}")


class Node:
    """Base of schema nodes: holds the default and the help text."""

    def __init__(self, default: Any = _REQUIRED, doc: str = ""):
        self.default, self.doc = default, doc

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def check(self, value: Any, key: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__.lower()


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping", type(None): "nothing (null)"}.get(
                type(value), type(value).__name__)


class Num(Node):
    """A real number with optional bounds (``ge``/``gt``/``le``/``lt``); NaN and inf are refused."""

    def __init__(self, default: Any = _REQUIRED, doc: str = "", ge=None, gt=None, le=None, lt=None,
                 integer: bool = False):
        super().__init__(default, doc)
        self.ge, self.gt, self.le, self.lt, self.integer = ge, gt, le, lt, integer

    def describe(self) -> str:
        parts = []
        for op, bound in ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt)):
            if bound is not None:
                parts.append(f"{op} {bound}")
        kind = "an integer" if self.integer else "a number"
        return kind + (" " + " and ".join(parts) if parts else "")

    def check(self, value, key):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(key, f"expected {self.describe()}, got {_type_name(value)} {value!r}")
        if self.integer and (isinstance(value, float) and not value.is_integer()):
            raise ConfigError(key, f"expected {self.describe()}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(key, f"expected {self.describe()}, got {value!r}")
        ok = ((self.ge is None or value >= self.ge) and (self.gt is None or value > self.gt)
              and (self.le is None or value <= self.le) and (self.lt is None or value < self.lt))
        if not ok:
            raise ConfigError(key, f"{value!r} is out of range: expected {self.describe()}")
        return int(value) if self.integer else float(value)


def Int(default: Any = _REQUIRED, doc: str = "", **bounds) -> Num:
    """An integer with optional bounds."""
    return Num(default, doc, integer=True, **bounds)


class Bool(Node):
    def check(self, value, key):
        if not isinstance(value, bool):
            raise ConfigError(key, f"expected true or false, got {_type_name(value)} {value!r}")
        return value


class Str(Node):
    """A string, optionally non-empty."""

    def __init__(self, default: Any = _REQUIRED, doc: str = "", nonempty: bool = True):
        super().__init__(default, doc)
        self.nonempty = nonempty

    def check(self, value, key):
        if not isinstance(value, str) or (self.nonempty and not value.strip()):
            raise ConfigError(key, f"expected a non-empty string, got {_type_name(value)} {value!r}")
        return value


def _suggest(word: str, allowed: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(word), [str(a) for a in allowed], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


class Enum(Node):
    """One of a fixed set of strings. ``allowed`` may be a callable, evaluated at check time
    (so registries that grow, such as link profiles found on disk, stay current)."""

    def __init__(self, allowed: Iterable[str] | Callable[[], Iterable[str]], default: Any = _REQUIRED,
                 doc: str = "", what: str = "value"):
        super().__init__(default, doc)
        self._allowed, self.what = allowed, what

    @property
    def allowed(self) -> list[str]:
        return list(self._allowed() if callable(self._allowed) else self._allowed)

    def describe(self) -> str:
        return "one of " + ", ".join(self.allowed)

    def check(self, value, key):
        allowed = self.allowed
        if value not in allowed:
            raise ConfigError(key, f"unknown {self.what} {value!r}{_suggest(value, allowed)}; "
                                   f"allowed: {', '.join(allowed)}")
        return value


class List(Node):
    """A list of items; a single item is accepted where ``scalar_ok`` and wrapped in a list."""

    def __init__(self, item: Node, default: Any = _REQUIRED, doc: str = "", min_len: int = 0,
                 max_len: int | None = None, scalar_ok: bool = False, unique: bool = False):
        super().__init__(default, doc)
        self.item, self.min_len, self.max_len = item, min_len, max_len
        self.scalar_ok, self.unique = scalar_ok, unique

    def check(self, value, key):
        if self.scalar_ok and not isinstance(value, list):
            value = [value]
        if not isinstance(value, list):
            raise ConfigError(key, f"expected a list, got {_type_name(value)} {value!r}")
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            size = (f"exactly {self.min_len}" if self.min_len == self.max_len else
                    f"at least {self.min_len}" + (f" and at most {self.max_len}" if self.max_len else ""))
            raise ConfigError(key, f"expected {size} items, got {len(value)}")
        out = [self.item.check(v, f"{key}[{i}]") for i, v in enumerate(value)]
        if self.unique and len({repr(v) for v in out}) != len(out):
            raise ConfigError(key, f"items must be unique, got {out!r}")
        return out


class Map(Node):
    """A mapping with known keys. Unknown keys are refused with the list of allowed ones,
    unless ``extra`` gives a schema for free-form values (e.g. per-topic settings)."""

    def __init__(self, fields: dict[str, Node], default: Any = _REQUIRED, doc: str = "",
                 extra: Node | None = None, check: Callable[[dict, str], None] | None = None):
        super().__init__(default, doc)
        self.fields, self.extra, self.post_check = fields, extra, check

    def check(self, value, key):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise ConfigError(key, f"expected a mapping, got {_type_name(value)} {value!r}")
        out = {}
        for k, v in value.items():
            sub = f"{key}.{k}" if key else str(k)
            if k in self.fields and v is None and self.fields[k].default is None:
                out[k] = None  # an optional key given as null, as validated output holds it
            elif k in self.fields:
                out[k] = self.fields[k].check(v, sub)
            elif self.extra is not None:
                out[k] = self.extra.check(v, sub)
            else:
                raise ConfigError(sub, f"unknown key{_suggest(k, self.fields)}; allowed keys at "
                                       f"{key or 'the top level'}: {', '.join(self.fields)}")
        for k, node in self.fields.items():
            if k in out:
                continue
            sub = f"{key}.{k}" if key else k
            if node.required:
                raise ConfigError(sub, f"missing required key ({node.describe()})")
            default = node.default
            out[k] = node.check({}, sub) if isinstance(node, Map) and default == {} else copy.deepcopy(default)
        if self.post_check:
            self.post_check(out, key)
        return out


class Any_(Node):
    """Anything YAML can hold (used sparingly, e.g. for free-form notes)."""

    def check(self, value, key):
        return value


def validate(schema: Node, data: Any, source: str | None = None) -> Any:
    """Validate ``data`` against ``schema``; returns a copy with defaults, or raises ConfigError."""
    try:
        return schema.check(data, "")
    except ConfigError as err:
        if err.source is None:
            raise ConfigError(err.key, err.message, source) from None
        raise


def load_yaml(path: str) -> Any:
    """Read a YAML file, turning I/O and syntax problems into ConfigError."""
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except FileNotFoundError:
        raise ConfigError("", "file not found", str(path)) from None
    except yaml.YAMLError as err:
        raise ConfigError("", f"not valid YAML: {err}", str(path)) from None


def load_and_validate(schema: Node, path: str) -> Any:
    """Read and validate a YAML file in one step."""
    return validate(schema, load_yaml(path), source=str(path))


def describe(schema: Node, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """Every key of a schema as (dotted key, what is allowed, default, doc), for reference docs."""
    rows = []
    if isinstance(schema, Map):
        for key, node in schema.fields.items():
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
