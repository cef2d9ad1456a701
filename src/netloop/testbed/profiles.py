"""Link profiles: the YAML files in ``config/links/`` and their validation.

A profile file holds a ``type`` (which :class:`~netloop.testbed.links.Link` implementation
emulates it), an optional ``description`` and that type's keys, all at the top level::

    type: shaped
    description: 10 Mbit/s, 20 ms each way
    rate_mbit: 10
    delay_ms: 20

:func:`load_profile` returns the validated profile, a typed model of its type
(:mod:`netloop.testbed.profile_models`) with every default filled in, named by the file's
stem. Overrides use the same keys (dotted for nested ones, e.g. ``to_robot.delay_ms``) and are
validated together with the file, so a bad value is refused with its key and the allowed
values before anything is created; every problem of a profile is reported at once.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netloop.paths import CONFIG
from netloop.schema import ConfigError, _suggest, load_config_file, validate

from .link_air import (OFDM_RATES, WIFI_RATES, air_crossings, air_left_mbit, air_overhead_bytes,
                       background_air_mbit, link_capacity_mbit, phy_mbit, shaper_rate_kbit)
from .profile_models import MODELS, TYPES, LinkProfile

__all__ = ["LINKS_DIR", "MODELS", "OFDM_RATES", "TYPES", "WIFI_RATES", "LinkProfile", "air_crossings", "air_left_mbit",
           "air_overhead_bytes", "background_air_mbit", "link_capacity_mbit", "load_profile",
           "phy_mbit", "profile_names", "shaper_rate_kbit", "validate_profile"]

LINKS_DIR = CONFIG / "links"


def profile_names() -> list[str]:
    """Names of the link profiles in ``config/links/*.yaml``, sorted."""
    return sorted(p.stem for p in LINKS_DIR.glob("*.yaml"))


def _set_dotted(doc: dict, key: str, value: Any) -> None:
    parts = str(key).split(".")
    node = doc
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(".".join(parts[:i + 1]), "is not a mapping; cannot set "
                              f"'{key}' inside it")
        node = child
    node[parts[-1]] = value


def validate_profile(data: Any, source: str | None = None, name: str | None = None) -> LinkProfile:
    """Validate a profile (a mapping from a file or built in code, or a profile already typed)
    into the typed model of its ``type``, every default filled in and every problem reported
    at once; ``name`` when the mapping has none (else ``custom``)."""
    if isinstance(data, LinkProfile):
        data = data.to_dict()
    if not isinstance(data, Mapping):
        raise ConfigError("", f"a link profile must be a mapping, got {type(data).__name__}",
                          source)
    data = dict(data)
    data["name"] = data.get("name") or name or "custom"
    if "type" not in data:
        raise ConfigError("type", f"missing required key (one of {', '.join(TYPES)})", source)
    kind = validate(LinkProfile.schema.fields["type"], data["type"], source)
    return validate(MODELS[kind].schema, data, source)


def _raw_profile(name: str, names: list[str], seen: tuple[str, ...] = ()) -> dict:
    """``config/links/<name>.yaml`` as written; a profile with ``extends: <other>`` is the other
    profile's keys with its own on top (one level of keys; chains allowed, cycles refused)."""
    path = LINKS_DIR / f"{name}.yaml"
    raw = load_config_file(str(path))
    base = raw.pop("extends", None)
    if base is None:
        return raw
    if base not in names:
        raise ConfigError("extends", f"unknown link profile {base!r}; allowed: {', '.join(names)}", str(path))
    if base in seen + (name,):
        raise ConfigError("extends", f"profiles extend each other in a cycle: {' -> '.join(seen + (name, base))}",
                          str(path))
    merged = _raw_profile(base, names, seen + (name,))
    if "type" in raw and raw["type"] != merged.get("type"):
        raise ConfigError("type", f"{name} extends {base} ({merged.get('type')}) and cannot change its type",
                          str(path))
    return {**merged, **raw}


def load_profile(name: str, overrides: dict | None = None) -> LinkProfile:
    """Load ``config/links/<name>.yaml``, apply ``overrides`` and validate.

    Raises ConfigError for an unknown profile (listing the known ones), an unknown key
    (listing the allowed ones) or a value out of range (naming the key and the bounds)."""
    names = profile_names()
    if name not in names:
        raise ConfigError("link", f"unknown link profile {name!r}{_suggest(name, names)}; "
                                  f"allowed: {', '.join(names)}")
    path = LINKS_DIR / f"{name}.yaml"
    raw = _raw_profile(name, names)
    source = str(path)
    if overrides:
        source += " with overrides " + ", ".join(f"{k}={v!r}" for k, v in overrides.items())
        for key, value in overrides.items():
            if key in ("type", "name"):
                raise ConfigError(key, "cannot be overridden; choose another profile instead")
            _set_dotted(raw, key, value)
    return validate_profile(raw, source=source, name=name)


