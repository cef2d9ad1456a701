"""Experiment files: their schema, loading and the expansion into runs.

An experiment file is YAML; every key is checked before anything starts (unknown keys,
wrong types and unknown transports or link profiles are refused with the key's dotted
path and the allowed values). See ``experiments/rlc_loopback.yaml`` for a commented one.
"""
from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .schema import Any_, Bool, ConfigError, Enum, Int, List, Map, Num, Str, load_yaml, validate
from . import paths
from .flows import check_flows, flow_schema, link_bits_per_second
from .testbed import Testbed, load_profile, profile_names
from .transports import get_transport, transport_names


PLANT = Map({
    "R": Num(1.0, "resistance [ohm]", gt=0),
    "L": Num(0.1, "inductance [H]", gt=0),
    "C": Num(0.1, "capacitance [F]", gt=0),
    "period": Num(0.02, "sensor sample period T [s]", gt=0, le=10),
    "initial_state": List(Num(), [0.0, 0.0], "[Vc [V], i [A]] at the start", min_len=2, max_len=2),
}, default={}, doc="the series RLC circuit of the Pound paper")

CONTROLLER = Map({
    "K": Num(1.0, "proportional gain"),
    "Ki": Num(0.0, "integral gain [1/s]"),
    "Kd": Num(0.0, "derivative gain [s]"),
    "reference": Num(1.0, "reference step r [V], applied from the first sample"),
}, default={})

LOOP = Map({
    "type": Enum(["rlc", "teleop", "none"], "rlc",
                 "the RLC loop, teleoperation of the simulated car, or none for flows only", what="loop type"),
    "plant": PLANT,
    "controller": CONTROLLER,
    "samples": Int(150, "sensor samples per run (duration = samples x period)", ge=10, le=10_000_000),
    "padding_bytes": Int(0, "filler bytes added to every loop message", ge=0, le=50_000_000),
    "warmup": Num(0.5, "seconds between the loop connecting and its first sample (lets flows start)", ge=0,
                  le=600),
    "placement": Map({
        "plant": Str("robot", "host of the plant (rlc)"),
        "controller": Str("operator", "host of the controller (rlc)"),
        "car": Str("robot", "host of the simulated car (teleop)"),
        "trial": Str("operator", "host of the scripted teleop trial (teleop)"),
    }, default={}),
    "teleop": Map({
        "world": Str("arena", "simulator world: arena | tunnel | path of an SDF .world"),
        "sim": Map({}, {}, "simulator parameters (nodes/README.md), e.g. {camera_rate: 15}", extra=Any_()),
        "trial": Map({}, {}, "overrides of controllers/config/teleop_trial.yaml, e.g. {duration: 8}",
                     extra=Any_()),
        "local_baseline": Bool(True, "also run the trial on the car's host (the local baseline)"),
    }, default={}),
}, default={})

EXPERIMENT = Map({
    "name": Str(None, "experiment name (default: the file name)"),
    "description": Str("", nonempty=False),
    "link": Enum(profile_names, "loopback", "link profile from config/links", what="link profile"),
    "link_params": Map({}, {}, "overrides of the link profile's parameters, e.g. {delay_ms: 20}", extra=Any_()),
    "transport": List(Enum(transport_names, what="transport"), ["tcp_nodelay"],
                      "one transport, a list, or all (every transport the package has)", min_len=1,
                      scalar_ok=True, unique=True),
    "transport_options": Map({}, {}, "per transport name, its options (e.g. priority: {priorities: ...})",
                             extra=Any_()),
    "repetitions": Int(1, "runs per cell (transport x sweep values)", ge=1, le=1000),
    "sweep": Map({}, {}, "sweep axes: key path (e.g. link_params.delay_ms, flows[0].size_bytes, "
                         "loop.controller.K) -> list of values; every combination is a cell",
                 extra=List(Any_(), min_len=1, unique=True)),
    "loop": LOOP,
    "flows": List(flow_schema(), [], "perturbing flows sharing the link"),
    "duration": Num(None, "seconds a run lasts when no loop or count ends it", gt=0),
    "run_timeout": Num(120.0, "a run taking longer than this [s] is stopped and marked failed", gt=0),
    "keep_going": Bool(True, "go on with the other runs when one fails"),
})


@dataclass(frozen=True)
class Cell:
    """One run of an experiment: a transport, the sweep settings, a repetition index."""

    transport: str
    repetition: int
    settings: tuple[tuple[str, Any], ...] = ()   # (key path, value) for every sweep axis

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


def validate_experiment(data: Any, source: str | None = None, name: str | None = None) -> dict:
    """Validate a parsed experiment document; returns it with every default filled in.
    Every cell of a sweep is validated too, so a bad sweep value is refused up front."""
    if isinstance(data, dict) and data.get("transport") == "all":
        data = dict(data, transport=transport_names())
    cfg = _validate_one(data, source, name)
    for combo in _combinations(cfg["sweep"]):
        try:
            _validate_one(_with_settings(cfg, combo), source, name)
        except (KeyError, IndexError) as err:
            path = next(p for p, _ in combo)
            raise ConfigError(f"sweep.{path}", f"no such key in the experiment ({err})", source) from None
        except ConfigError as err:
            where = ", ".join(f"{p}={v!r}" for p, v in combo)
            raise ConfigError(f"sweep ({where})", f"{err.key}: {err.message}", source) from None
    return cfg


def _check_teleop(loop: dict, source: str | None) -> None:
    """The world must load and the trial/simulator overrides must be known parameters."""
    import tempfile  # noqa: PLC0415

    from .sim.simulation import load_sim_config  # noqa: PLC0415 - only for teleop experiments
    from .sim.world import prepare_world  # noqa: PLC0415
    try:
        with tempfile.TemporaryDirectory() as tmp:
            prepare_world(loop["teleop"]["world"], tmp)   # exists, parses, includes resolve
        load_sim_config(dict(loop["teleop"]["sim"], world=loop["teleop"]["world"]))
    except ConfigError as err:
        raise ConfigError(f"loop.teleop.sim.{err.key}".rstrip("."), err.message, source) from None
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError("loop.teleop.world", str(err), source) from None
    known = set(load_yaml(str(paths.REPO / "controllers" / "config" / "teleop_trial.yaml")) or {})
    for key in loop["teleop"]["trial"]:
        if key not in known:
            raise ConfigError(f"loop.teleop.trial.{key}", f"unknown trial parameter; allowed: {', '.join(sorted(known))}",
                              source)


def _combinations(sweep: dict[str, list]) -> list[tuple[tuple[str, Any], ...]]:
    if not sweep:
        return [()]
    return [tuple(zip(sweep, values)) for values in itertools.product(*sweep.values())]


def _with_settings(cfg: dict, settings) -> dict:
    out = copy.deepcopy(cfg)
    out["sweep"] = {}
    for path, value in settings:
        set_path(out, path, value)
    return out


def _validate_one(data: Any, source: str | None, name: str | None) -> dict:
    cfg = validate(EXPERIMENT, data, source)
    if cfg["name"] is None:
        if not name:
            raise ConfigError("name", "missing required key (a string)", source)
        cfg["name"] = name
    for tname, options in cfg["transport_options"].items():
        key = f"transport_options.{tname}"
        if tname not in transport_names():
            raise ConfigError(key, f"unknown transport {tname!r}; allowed: {', '.join(transport_names())}", source)
        schema = get_transport(tname).options_schema
        if schema is None:
            if options:
                raise ConfigError(key, f"transport {tname!r} takes no options", source)
            continue
        try:
            cfg["transport_options"][tname] = validate(schema, options)
        except ConfigError as err:
            raise ConfigError(f"{key}.{err.key}".rstrip("."), err.message, source) from None
    try:  # the profile with the experiment's overrides, validated by the profile's own schema
        profile = load_profile(cfg["link"], cfg["link_params"])
    except ConfigError as err:
        raise ConfigError(f"link_params.{err.key}" if err.key else "link_params", err.message, source) from None
    hosts = Testbed(profile).hosts  # creates nothing: the profile's host names
    for key, host in cfg["loop"]["placement"].items():
        if host not in hosts:
            raise ConfigError(f"loop.placement.{key}", f"unknown host {host!r} for link '{cfg['link']}'; "
                                                       f"allowed: {', '.join(hosts)}", source)
    try:
        check_flows(cfg["flows"], hosts)
    except ConfigError as err:
        raise ConfigError(err.key, err.message, source) from None
    if cfg["loop"]["type"] == "teleop":
        _check_teleop(cfg["loop"], source)
    if cfg["loop"]["type"] == "none":
        if not cfg["flows"]:
            raise ConfigError("flows", "an experiment without a loop needs at least one flow", source)
        if cfg["duration"] is None and any(f["count"] == 0 for f in cfg["flows"]):
            raise ConfigError("duration", "required when loop.type is none and a flow has count 0 "
                                          "(nothing else would end the run)", source)
    return cfg


def load_experiment(path: str | Path) -> dict:
    """Read and validate an experiment file."""
    path = Path(path)
    return validate_experiment(load_yaml(str(path)), str(path), name=path.stem)


def expand(cfg: dict) -> list[Cell]:
    """The runs of an experiment, in the order they are run: repetition by repetition, so
    slow drifts of a shared machine spread over every cell instead of biasing one. A teleop
    experiment adds, per repetition, the local baseline: the trial on the car's host."""
    cells = []
    loop = cfg["loop"]
    for r in range(cfg["repetitions"]):
        if loop["type"] == "teleop" and loop["teleop"]["local_baseline"]:
            cells.append(Cell(cfg["transport"][0], r, (("loop.placement.trial", loop["placement"]["car"]),)))
        cells += [Cell(t, r, combo) for t in cfg["transport"] for combo in _combinations(cfg["sweep"])]
    return cells


def run_seconds(cfg: dict) -> float:
    """How long the measured part of a run lasts: the loop's samples, the flows' counts, or
    ``duration``."""
    loop = cfg["loop"]
    if loop["type"] == "rlc":
        return loop["warmup"] + loop["samples"] * loop["plant"]["period"]
    if loop["type"] == "teleop":
        return 3.0 + float(teleop_trial_params(loop)["duration"])
    if cfg["duration"] is not None:
        return cfg["duration"]
    return max(f["start_delay"] + f["count"] * f["period"] for f in cfg["flows"])


def estimated_run_seconds(cfg: dict) -> float:
    """Rough wall time of one run: testbed and master start, connections, the run, teardown."""
    return 5.0 + run_seconds(cfg)


def for_cell(cfg: dict, cell: Cell) -> dict:
    """The experiment as one run sees it: the cell's transport and sweep values applied,
    validated again (defaults of swept sections filled in)."""
    out = _validate_one(_with_settings(cfg, cell.settings), None, cfg["name"])
    out["transport"] = cell.transport
    out["repetition"] = cell.repetition
    out["cell"] = {"condition": cell.condition, "settings": dict(cell.settings)}
    return out


def rlc_parameters(loop: dict) -> dict[str, Any]:
    """The shared loop parameters (``/rlc/*``) both nodes read."""
    plant, ctl = loop["plant"], loop["controller"]
    return {"R": plant["R"], "L": plant["L"], "C": plant["C"], "period": plant["period"],
            "initial_state": list(plant["initial_state"]), "K": ctl["K"], "Ki": ctl["Ki"],
            "Kd": ctl["Kd"], "reference": ctl["reference"]}


def link_capacity_mbit(profile: dict) -> float | None:
    """Nominal capacity of a link profile [Mbit/s] (the PHY rate for Wi-Fi, shared by both
    directions), or None when it has no limit (loopback)."""
    if profile["type"] == "ns3_wifi":
        return float(profile["phy_rate"].removeprefix("OfdmRate").removesuffix("Mbps"))
    return profile.get("rate_mbit")


def experiment_warnings(cfg: dict) -> list[str]:
    """Things worth saying before a run that are not errors: flows the link cannot carry."""
    capacity = link_capacity_mbit(load_profile(cfg["link"], cfg["link_params"]))
    if capacity is None:
        return []
    out = []
    for i, flow in enumerate(cfg["flows"]):
        load = link_bits_per_second(flow) / 1e6
        if load > capacity:
            out.append(f"flows[{i}] ({flow['name']}): offers {load:.1f} Mbit/s, more than link "
                       f"'{cfg['link']}' can ever carry ({capacity:g} Mbit/s): messages will queue and be lost")
    total = sum(link_bits_per_second(f) for f in cfg["flows"]) / 1e6
    if len(cfg["flows"]) > 1 and total > capacity:
        out.append(f"the flows together offer {total:.1f} Mbit/s, more than link '{cfg['link']}' carries "
                   f"({capacity:g} Mbit/s)")
    return out


def teleop_trial_params(loop: dict) -> dict[str, Any]:
    """The trial's parameters: controllers/config/teleop_trial.yaml with the experiment's overrides."""
    base = load_yaml(str(paths.REPO / "controllers" / "config" / "teleop_trial.yaml")) or {}
    return {**base, **loop["teleop"]["trial"]}


def quick_variant(cfg: dict) -> dict:
    """The same experiment made short for tests and smoke runs (``netloop run --quick``): one
    repetition, at most 2 s of loop samples, flows and trials cut to a few seconds."""
    out = copy.deepcopy(cfg)
    out["repetitions"] = 1
    loop = out["loop"]
    loop["samples"] = min(loop["samples"], max(10, int(2.0 / loop["plant"]["period"])))
    loop["warmup"] = min(loop["warmup"], 1.0)
    if loop["type"] == "teleop":
        loop["teleop"]["trial"] = dict(loop["teleop"]["trial"], duration=min(
            float(teleop_trial_params(loop)["duration"]), 6.0))
    for flow in out["flows"]:
        if flow["count"]:
            flow["count"] = max(5, min(flow["count"], int(3.0 / flow["period"])))
    if out["duration"] is not None:
        out["duration"] = min(out["duration"], 4.0)
    out["name"] = f"{cfg['name']}-quick"
    return validate_experiment(out, name=out["name"])
