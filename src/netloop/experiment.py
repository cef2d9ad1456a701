"""Experiment files: loading, the checks across keys, and the expansion into runs.

An experiment file is YAML; its keys are defined once, typed, in :mod:`netloop.model`. Every
problem of a file is reported at once, before anything starts (unknown keys, wrong types,
unknown transports, link profiles or hosts, sweep values that make a cell invalid), each with
the key's dotted path and the allowed values. See ``experiments/README.md`` for the keys.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from .experiment_checks import (check_faults, check_host_computers, check_instance_names, check_message_sizes,
                                check_per_robot, check_ros2, check_transport_options)
from .flows import check_flows, link_bits_per_second
from .loops import get_loop_kind
from .hosts_file import load_machines
from .model import Experiment, RunSpec
from .schema import Collector, ConfigError, load_config_file, to_dict, validate
from .sweep import ZIP, Cell, check_sweep, set_path, sweep_combinations, with_settings
from .testbed import Testbed, load_profile
from .testbed.profiles import link_capacity_mbit
from .transports import transports_for_all

__all__ = ["ZIP", "Cell", "estimated_run_seconds", "expand", "experiment_warnings", "for_cell", "load_experiment",
           "quick_variant", "run_seconds", "select_transports", "set_path", "sweep_combinations",
           "validate_experiment"]

# --- validation ---------------------------------------------------------------------------

def validate_experiment(data: Any, source: str | None = None, name: str | None = None) -> Experiment:
    """Validate a parsed experiment document into an :class:`Experiment`, every default filled
    in. Every cell of a sweep is validated too, so a bad sweep value is refused up front. All
    problems are raised at once as one ConfigError: those of single keys, those across keys
    (checked on the keys that are valid) and those of the sweep's cells."""
    if isinstance(data, dict) and data.get("transport") == "all":
        data = dict(data, transport=transports_for_all())
    exp, found, bad = _check_one(data, name, source)
    problems = {problem for err in found.found for problem in err.errors}
    if not check_sweep(exp.sweep, found) or not exp.sweep:
        found.raise_if_any(source)
        return exp
    doc = to_dict(exp)
    for combo in sweep_combinations(exp.sweep):
        where = ", ".join(f"{p}={v!r}" for p, v in combo)
        try:
            cell_doc = with_settings(doc, combo)
        except (KeyError, IndexError) as err:
            path = next(p for p, _ in combo)
            found.add(f"sweep.{path}", f"no such key in the experiment ({err})")
            break
        _, in_cell, _ = _check_one(cell_doc, name, source, bad)   # the base's bad keys stay unchecked
        new = [(k, m) for err in in_cell.found for k, m in err.errors if (k, m) not in problems]
        if new:
            found.add(f"sweep ({where})", "; ".join(f"{k}: {m}" for k, m in new))
    found.raise_if_any(source)
    return exp


#: top-level keys the host names come from: while one of them is invalid, the checks that
#: need the hosts wait (they would judge the other keys against the wrong link)
_HOST_KEYS = ("link", "link_params", "machines")


def _typed(data: Any, source: str | None, found: Collector, bad: set[str]) -> tuple[Experiment, set[str]]:
    """The document as an :class:`Experiment` and the top-level keys it had problems in, added
    to ``bad`` (each problem collected in ``found``; those keys take their defaults, so the
    checks across keys still run on the others). A document that is not a mapping raises."""
    bad = set(bad)
    while True:
        try:
            return validate(Experiment.schema, data), bad
        except ConfigError as err:
            tops = {re.split(r"[.\[]", key, maxsplit=1)[0] for key, _ in err.errors}
            if "" in tops or not isinstance(data, dict) or tops <= bad:
                found.found.append(err)
                found.raise_if_any(source)
            found.found.append(err)
            bad |= tops
            data = {k: v for k, v in data.items() if k not in bad}


def _check_one(data: Any, name: str | None, source: str | None,
               bad: frozenset[str] | set[str] = frozenset()) -> tuple[Experiment, Collector, set[str]]:
    """One document's problems, of single keys and across keys, all collected; the experiment
    as far as it is valid (a key with a problem at its default), and the keys with problems.
    The checks across keys skip those that read a key in ``bad``."""
    found = Collector()
    exp, bad = _typed(data, source, found, bad)
    if exp.name is None:
        if name:
            exp.name = name
        elif "name" not in bad:
            found.add("name", "missing required key (a string)")
    if "transport_options" not in bad:
        check_transport_options(exp, found)
    hosts = None
    if not bad & set(_HOST_KEYS):
        try:   # the profile with the overrides, checked by the profile's model; creates nothing
            hosts = Testbed(load_profile(exp.link, exp.link_overrides)).hosts
        except ConfigError as err:   # a key of the profile is link_params'; its file, the link's
            found.found.append(err.rekeyed("link_params" if err.key else "link"))
        if exp.machines:
            hosts = None
            with found.check():  # real machines: their names are the hosts (errors name the hosts file)
                hosts = list(load_machines(exp.machines).hosts)
    if hosts is not None:
        _check_with_hosts(exp, hosts, bad, found)
    if not found.found:
        check_message_sizes(exp, found)
    return exp, found, bad


def _check_with_hosts(exp: Experiment, hosts: list[str], bad: set[str], found: Collector) -> None:
    """The checks that need the link's host names, each skipped while a key it reads is bad."""
    if "flows" not in bad:
        with found.check():
            check_flows(exp.flows, hosts)
            check_instance_names(exp)
    if "loop" not in bad:
        with found.check():
            get_loop_kind(exp.loop.type).check(exp, hosts)
    if "hosts" not in bad:
        check_host_computers(exp, hosts, found)
    if not bad & {"faults", "loop", "flows", "duration"}:
        try:
            length = run_seconds(exp)
        except (ValueError, TypeError):   # flows without a count and no duration: no known end
            length = None
        check_faults(exp, hosts, length, found)
    if not bad & {"loop", "flows"}:
        check_per_robot(exp, found)
    if not bad & {"loop", "flows", "transport", "transport_options"}:
        check_ros2(exp, found)


def _validate_one(data: Any, source: str | None, name: str | None) -> Experiment:
    exp, found, _ = _check_one(data, name, source)
    found.raise_if_any(source)
    return exp


def load_experiment(path: str | Path, machines: str | None = None) -> Experiment:
    """Read and validate an experiment file; ``machines`` (a hosts file) runs it on real machines."""
    path = Path(path)
    doc = load_config_file(str(path))
    if machines is not None:
        doc = dict(doc, machines=machines)
    return validate_experiment(doc, str(path), name=path.stem)


# --- runs ---------------------------------------------------------------------------------

def expand(exp: Experiment) -> list[Cell]:
    """The runs of an experiment, in the order they are run: repetition by repetition, so
    slow drifts of a shared machine spread over every cell instead of biasing one. A loop kind
    may add cells per repetition (the teleop trial's local baseline)."""
    extra = get_loop_kind(exp.loop.type).baseline_settings(exp)
    cells = []
    for r in range(exp.repetitions):
        cells += [Cell(exp.transport[0], r, settings) for settings in extra]
        cells += [Cell(t, r, combo) for t in exp.transport for combo in sweep_combinations(exp.sweep)]
    return cells


def run_seconds(exp: Experiment) -> float:
    """How long the measured part of a run lasts: the loop's, or the flows' counts, or
    ``duration``."""
    loop_seconds = get_loop_kind(exp.loop.type).run_seconds(exp)
    if loop_seconds is not None:
        return loop_seconds
    if exp.duration is not None:
        return exp.duration
    return max(f.start_delay + f.count * f.period for f in exp.flow_instances)


def estimated_run_seconds(exp: Experiment) -> float:
    """Rough wall time of one run: testbed and master start, connections, the run, teardown."""
    return 5.0 + run_seconds(exp)


def for_cell(exp: Experiment, cell: Cell) -> RunSpec:
    """The run of one cell: its sweep values applied and validated again (defaults of swept
    sections filled in), with its transport and repetition."""
    one = _validate_one(with_settings(to_dict(exp), cell.settings), None, exp.name)
    one.transport = [cell.transport]
    return RunSpec(one, cell.transport, cell.repetition, cell.condition, dict(cell.settings))


def experiment_warnings(exp: Experiment) -> list[str]:
    """Things worth saying before a run that are not errors: flows the link cannot carry; on
    real machines without a known rate, a priority relay that cannot pace."""
    out = []
    from .transports import left_out_of_all, transports_for_all  # noqa: PLC0415
    from .transports.ros2_checks import MIDDLEWARES  # noqa: PLC0415
    left_out = left_out_of_all()
    if left_out and exp.transport == transports_for_all():
        out += [f"transport all leaves out {name}: {why}" for name, why in left_out.items()]
    if not any(t in MIDDLEWARES for t in exp.transport):
        qos_keys = (["loop.qos"] if any(v is not None for v in exp.loop.qos.values()) else []) + \
            [f"flows[{i}].qos" for i, f in enumerate(exp.flows) if any(v is not None for v in f.qos.values())]
        if qos_keys:
            out.append(f"{', '.join(qos_keys)}: QoS applies to ROS 2 transports ({', '.join(MIDDLEWARES)}) only; "
                       f"transport {', '.join(exp.transport)} ignores it")
    if exp.machines:
        capacity = load_machines(exp.machines).link_mbit
        prio = exp.transport_options.get("priority") or {}
        if capacity is None and "priority" in exp.transport and not prio.get("rate_mbit") and \
                prio.get("backpressure") is False:   # with backpressure the NIC's queue sets the pace
            out.append(f"transport priority on real machines without backpressure, link_mbit (hosts file "
                       f"{exp.machines}) or transport_options.priority.rate_mbit: its relays cannot pace, so a "
                       f"large message queues in the kernel ahead of the small ones it should overtake")
    else:
        capacity = link_capacity_mbit(load_profile(exp.link, exp.link_overrides))
    from .transports.ros2_checks import zenoh_drop_warnings  # noqa: PLC0415
    out += zenoh_drop_warnings(exp, capacity)
    if capacity is None:
        return out
    for i, flow in enumerate(exp.flows):
        load = link_bits_per_second(flow) * flow.replicas / 1e6
        if load > capacity:
            out.append(f"flows[{i}] ({flow.name}): offers {load:.1f} Mbit/s, more than link "
                       f"'{exp.link}' can ever carry ({capacity:g} Mbit/s): messages will queue and be lost")
    total = sum(link_bits_per_second(f) for f in exp.flow_instances) / 1e6
    if len(exp.flow_instances) > 1 and total > capacity:
        out.append(f"the flows together offer {total:.1f} Mbit/s, more than link '{exp.link}' carries "
                   f"({capacity:g} Mbit/s)")
    return out


def quick_variant(exp: Experiment) -> Experiment:
    """The same experiment made short for tests and smoke runs (``netloop run --quick``): one
    repetition, the loop cut short by its kind, flows cut to a few seconds, one outage of at
    most 1 s from t = 1 s at the latest."""
    out = copy.deepcopy(exp)
    out.repetitions = 1
    get_loop_kind(out.loop.type).shorten(out)
    for flow in out.flows:
        if flow.count:
            flow.count = max(5, min(flow.count, int(3.0 / flow.period)))
    if out.duration is not None:
        out.duration = min(out.duration, 4.0)
    if out.faults:   # one short outage early in the short run
        first = out.faults[0]
        first.at, first.duration, first.repeat, first.every = min(first.at, 1.0), min(first.duration, 1.0), 1, None
        out.faults = [first]
    out.name = f"{exp.name}-quick"
    return validate_experiment(to_dict(out), name=out.name)


def select_transports(exp: Experiment, names: list[str] | None) -> Experiment:
    """The experiment with only the transports ``names`` (``--transports a,b``), in the file's
    order; ConfigError when a name is not one of the file's transports, naming those it has."""
    if not names:
        return exp
    unknown = [n for n in names if n not in exp.transport]
    if unknown:
        raise ConfigError("--transports", f"{', '.join(unknown)}: not a transport of {exp.name}; "
                                          f"it has {', '.join(exp.transport)}")
    out = copy.deepcopy(exp)
    out.transport = [t for t in exp.transport if t in names]
    return validate_experiment(to_dict(out), name=out.name)
