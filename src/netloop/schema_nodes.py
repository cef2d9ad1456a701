"""The node types of netloop's declarative YAML validation, and the error they raise.

Everything :mod:`netloop.schema` builds on that also runs on a robot (the car driver's
profiles): :class:`ConfigError`, the nodes (:class:`Num`, :func:`Int`, :class:`Bool`,
:class:`Str`, :class:`Enum`, :class:`List`, :class:`Map`, :class:`Any_`), :func:`validate`,
:func:`to_dict`, and :func:`load_config_file`, the one reader of configuration files (YAML or
JSON; a file that is not one is a one-line error naming it). Robot-side (see
:mod:`netloop.robot_side`): Python 3.8, the standard library and PyYAML only. The typed
sections (``@section`` classes, keyword-only dataclasses, Python >= 3.10) are the operator's,
in :mod:`netloop.schema`, which re-exports all of this.

Example::

    PLANT = Map({"R": Num(default=1.0, gt=0), "mode": Enum(["a", "b"], default="a")})
    cfg = validate(PLANT, {"R": 2}, source="exp.yaml")   # -> {"R": 2.0, "mode": "a"}
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import difflib
import json
import math
from typing import Any, Callable, Iterable

import yaml

_REQUIRED = object()


class ConfigError(ValueError):
    """Invalid configuration: one or several (key, message) pairs of one document.

    ``key`` is the dotted path of the first problem (``loop.plant.R``), ``message`` what is
    wrong there and what is allowed, ``source`` the file; ``errors`` holds every problem found
    (validation goes on after the first one, so a file's problems are reported at once), and
    ``str()`` gives one line per problem."""

    def __init__(self, key: str, message: str, source: str | None = None,
                 errors: list[tuple[str, str]] | None = None):
        self.key, self.message, self.source = key, message, source
        self.errors = list(errors) if errors else [(key, message)]
        where = f"{source}: " if source else ""
        super().__init__("\n".join(f"{where}{k or '<top level>'}: {m}" for k, m in self.errors))

    @classmethod
    def collect(cls, found: list["ConfigError"], source: str | None = None) -> "ConfigError":
        """One error holding every problem of ``found`` (in order); a problem of another file
        (a hosts file or link profile the document names) says which file."""
        source = source or found[0].source
        errors = [(k, m if err.source in (None, source) else f"{m} (in {err.source})")
                  for err in found for k, m in err.errors]
        return cls(errors[0][0], errors[0][1], source, errors)

    def rekeyed(self, prefix: str = "", source: str | None = None) -> "ConfigError":
        """The same problems with ``prefix`` put in front of every key (``loop.teleop.sim`` +
        ``rate`` -> ``loop.teleop.sim.rate``) and ``source`` set."""
        def join(key: str) -> str:
            return f"{prefix}.{key}" if prefix and key else (prefix or key)
        errors = [(join(k), m) for k, m in self.errors]
        return ConfigError(errors[0][0], errors[0][1], source or self.source, errors)


class Collector:
    """Gathers ConfigErrors so that validation goes on after the first problem::

        found = Collector()
        with found.check():
            validate_something()      # a ConfigError raised here is kept
        found.raise_if_any(source)
    """

    def __init__(self):
        self.found: list[ConfigError] = []

    @contextlib.contextmanager
    def check(self, prefix: str = ""):
        try:
            yield
        except ConfigError as err:
            self.found.append(err.rekeyed(prefix) if prefix else err)

    def add(self, key: str, message: str) -> None:
        self.found.append(ConfigError(key, message))

    def raise_if_any(self, source: str | None = None) -> None:
        if self.found:
            raise ConfigError.collect(self.found, source)


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
        found, out = Collector(), []
        for i, v in enumerate(value):
            with found.check():
                out.append(self.item.check(v, f"{key}[{i}]"))
        found.raise_if_any()
        if self.unique and len({repr(v) for v in out}) != len(out):
            raise ConfigError(key, f"items must be unique, got {out!r}")
        return out


class Map(Node):
    """A mapping with known keys. Unknown keys are refused with the list of allowed ones,
    unless ``extra`` gives a schema for free-form values (e.g. per-topic settings). With
    ``into`` (a callable taking the validated keys, as :func:`netloop.schema.section` sets) the
    mapping becomes a typed object. ``more`` (called at each validation) gives keys that are
    known only when the file is read: sections registered by plug-ins (a loop kind's
    ``loop.<kind>``)."""

    def __init__(self, fields: dict[str, Node], default: Any = _REQUIRED, doc: str = "",
                 extra: Node | None = None, check: Callable[[dict, str], None] | None = None,
                 into: Callable[..., Any] | None = None, more: Callable[[], dict[str, Node]] | None = None):
        super().__init__(default, doc)
        self.fields, self.extra, self.post_check, self.into, self.more = fields, extra, check, into, more
        self.section: type | None = None   # the section class ``into`` builds, if any

    def all_fields(self) -> dict[str, Node]:
        """The fixed keys, then those ``more`` gives now."""
        return {**self.fields, **self.more()} if self.more is not None else self.fields

    def check(self, value, key):
        if value is None:
            value = {}
        if self.section is not None and isinstance(value, self.section):
            value = to_dict(value)
        if not isinstance(value, dict):
            raise ConfigError(key, f"expected a mapping, got {_type_name(value)} {value!r}")
        out, found, fields = {}, Collector(), self.all_fields()
        for k, v in value.items():
            sub = f"{key}.{k}" if key else str(k)
            with found.check():
                if k in fields and v is None and fields[k].default is None:
                    out[k] = None  # an optional key given as null, as validated output holds it
                elif k in fields:
                    out[k] = fields[k].check(v, sub)
                elif self.extra is not None:
                    out[k] = self.extra.check(v, sub)
                else:
                    raise ConfigError(sub, f"unknown key{_suggest(k, fields)}; allowed keys at "
                                           f"{key or 'the top level'}: {', '.join(fields)}")
        for k, node in fields.items():
            if k in value:
                continue
            sub = f"{key}.{k}" if key else k
            with found.check():
                if node.required:
                    raise ConfigError(sub, f"missing required key ({node.describe()})")
                out[k] = node.check({}, sub) if isinstance(node, Map) and node.default == {} else \
                    copy.deepcopy(node.default)
        found.raise_if_any()
        if self.post_check:
            self.post_check(out, key)
        return self.into(**out) if self.into is not None else out


def _file_key(f: dataclasses.Field) -> str:
    return f.metadata.get("name") or f.name



def to_dict(obj: Any) -> Any:
    """A section (or a list/dict of them) as plain data: what YAML and JSON files hold. A
    field of registered sections (``netloop.schema.registered_sections``) puts each of its
    sections beside the section's own keys, as the file has them."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            if "sections" in f.metadata:
                out.update((k, to_dict(v)) for k, v in getattr(obj, f.name).items())
            else:
                out[_file_key(f)] = to_dict(getattr(obj, f.name))
        return out
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_dict(v) for k, v in obj.items()}
    return copy.deepcopy(obj)


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
            raise err.rekeyed(source=source) from None
        raise


def load_config_file(path: str, mapping: bool = True) -> Any:
    """Read a configuration file: YAML, or JSON when its name ends in ``.json``. Every way it
    can fail to be one is a ConfigError naming the file, in one line: not found, a folder, not
    readable, bytes that are not UTF-8, a syntax error (with its line and column), no document
    (empty, or only comments: nothing in a file is never what its author meant to run), and,
    with ``mapping`` (the default), a document that is not a mapping of keys. The experiment
    file, link profiles, hosts files and transport options files are all read through it."""
    source = str(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ConfigError("", "file not found", source) from None
    except IsADirectoryError:
        raise ConfigError("", "is a directory, not a configuration file", source) from None
    except PermissionError:
        raise ConfigError("", "cannot be read (permission denied)", source) from None
    except UnicodeDecodeError as err:
        raise ConfigError("", f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start}): "
                              f"a text file is expected", source) from None
    doc = _parse_json(text, source) if source.endswith(".json") else _parse_yaml(text, source)
    if doc is None:
        raise ConfigError("", "the file is empty (no document, only blanks or comments)", source)
    if mapping and not isinstance(doc, dict):
        raise ConfigError("", f"expected a mapping of keys at the top level, got {_type_name(doc)}", source)
    return doc


#: libyaml's parser where PyYAML has it (several times faster: a sweep validates a profile per
#: cell); the same safe constructor, so the same document
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse_yaml(text: str, source: str) -> Any:
    """A YAML document, or None; a syntax error becomes one line with its line and column
    (as PyYAML's own parser words it: a document libyaml refuses is parsed again by it)."""
    try:
        return yaml.load(text, Loader=_FAST_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        def at(mark: Any) -> str:
            return f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = " ".join(str(err.problem or err).split())
        if err.context:   # e.g. the flow mapping an unclosed brace began
            what += f" ({' '.join(str(err.context).split())}{at(err.context_mark)})"
        raise ConfigError("", f"not valid YAML{at(err.problem_mark)}: {what}", source) from None
    except yaml.YAMLError as err:
        raise ConfigError("", f"not valid YAML: {' '.join(str(err).split())}", source) from None


def _parse_json(text: str, source: str) -> Any:
    """A JSON document, or None for a blank file; a syntax error becomes one line with its
    line and column."""
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError("", f"not valid JSON at line {err.lineno}, column {err.colno}: {err.msg}",
                          source) from None


def load_yaml(path: str) -> Any:
    """A YAML file's document, whatever its type (:func:`load_config_file` without the
    mapping check: e.g. a list)."""
    return load_config_file(path, mapping=False)
