"""Experiment files: loading, the checks across keys, and the expansion into runs.

An experiment file is YAML; its keys are defined once, typed, in :mod:`netloop.model`. Every
problem of a file is reported at once, before anything starts (unknown keys, wrong types,
unknown transports, link profiles or hosts, sweep values that make a cell invalid), each with
the key's dotted path and the allowed values. See ``experiments/README.md`` for the keys.
"""
from __future__ import annotations

import copy
import itertools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .flows import check_flows, link_bits_per_second, message_bytes
from .loops import get_loop_kind
from .machines import load_machines
from .model import Experiment, RunSpec
from .schema import Collector, ConfigError, load_config_file, to_dict, validate
from .testbed import Testbed, load_profile
from .testbed.profiles import link_capacity_mbit
from .transports import get_transport, transport_names, transports_for_all

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


# --- sweeps -------------------------------------------------------------------------------

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


def _check_sweep(sweep: dict[str, Any], found: Collector) -> bool:
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


def _with_settings(doc: dict, settings: Settings) -> dict:
    out = copy.deepcopy(doc)
    out["sweep"] = {}
    for path, value in settings:
        set_path(out, path, value)
    return out


# --- validation ---------------------------------------------------------------------------

def validate_experiment(data: Any, source: str | None = None, name: str | None = None) -> Experiment:
    """Validate a parsed experiment document into an :class:`Experiment`, every default filled
    in. Every cell of a sweep is validated too, so a bad sweep value is refused up front; all
    problems found are raised at once as one ConfigError."""
    if isinstance(data, dict) and data.get("transport") == "all":
        data = dict(data, transport=transports_for_all())
    exp = _validate_one(data, source, name)
    found = Collector()
    if not _check_sweep(exp.sweep, found):
        found.raise_if_any(source)
    doc = to_dict(exp)
    for combo in sweep_combinations(exp.sweep):
        where = ", ".join(f"{p}={v!r}" for p, v in combo)
        try:
            cell_doc = _with_settings(doc, combo)
        except (KeyError, IndexError) as err:
            path = next(p for p, _ in combo)
            found.add(f"sweep.{path}", f"no such key in the experiment ({err})")
            break
        try:
            _validate_one(cell_doc, source, name)
        except ConfigError as err:
            found.add(f"sweep ({where})", "; ".join(f"{k}: {m}" for k, m in err.errors))
    found.raise_if_any(source)
    return exp


def _check_transport_options(exp: Experiment, found: Collector) -> None:
    for tname, options in exp.transport_options.items():
        key = f"transport_options.{tname}"
        if tname not in transport_names():
            found.add(key, f"unknown transport {tname!r}; allowed: {', '.join(transport_names())}")
            continue
        schema = get_transport(tname).options_schema
        if schema is None:
            if options:
                found.add(key, f"transport {tname!r} takes no options")
            continue
        with found.check(key):
            exp.transport_options[tname] = validate(schema, options)


def _validate_one(data: Any, source: str | None, name: str | None) -> Experiment:
    exp: Experiment = validate(Experiment.schema, data, source)
    found = Collector()
    if exp.name is None:
        if name:
            exp.name = name
        else:
            found.add("name", "missing required key (a string)")
    _check_transport_options(exp, found)
    hosts = None
    with found.check("link_params"):   # the profile with the overrides, checked by the profile's schema
        hosts = Testbed(load_profile(exp.link, exp.link_params)).hosts  # creates nothing: the host names
    if exp.machines:
        hosts = None
        with found.check():  # real machines: their names are the hosts (errors name the hosts file)
            hosts = list(load_machines(exp.machines).hosts)
    if hosts is not None:
        with found.check():
            check_flows(exp.flows, hosts)
            _check_instance_names(exp)
        with found.check():
            get_loop_kind(exp.loop.type).check(exp, hosts)
        _check_host_computers(exp, hosts, found)
        _check_faults(exp, hosts, found)
        _check_per_robot(exp, found)
        _check_ros2(exp, found)
    if not found.found:
        _check_message_sizes(exp, found)
    found.raise_if_any(source)
    return exp


def _check_host_computers(exp: Experiment, hosts: list[str], found: Collector) -> None:
    """``hosts``: only the link's hosts, and no more CPU than the machine has."""
    cpus = os.cpu_count() or 1
    for host, computer in exp.hosts.items():
        if host not in hosts:
            found.add(f"hosts.{host}", f"unknown host {host!r} for link {exp.link!r}; allowed: {', '.join(hosts)}")
        elif exp.machines and computer.get("cpu") is not None:
            found.add(f"hosts.{host}.cpu", f"CPU limits emulate a slow computer on this machine; with real "
                                           f"machines (machines: {exp.machines}) run on the slow computer itself")
        elif computer.get("cpu_model") == "clock" and computer.get("cpu") is not None and computer["cpu"] > 1:
            found.add(f"hosts.{host}.cpu", f"cpu_model clock is one core at a fraction of its clock: cpu must be "
                                           f"at most 1, got {computer['cpu']:g}")
        elif computer.get("cpu") is not None and computer["cpu"] > cpus:
            found.add(f"hosts.{host}.cpu", f"{computer['cpu']:g} CPUs is more than this machine has ({cpus})")


def _check_per_robot(exp: Experiment, found: Collector) -> None:
    if exp.loop.per_robot and exp.loop.type != "rlc":
        found.add("loop.per_robot", f"only the rlc loop runs one per robot; loop.type is {exp.loop.type}")
    for i, flow in enumerate(exp.flows):
        if not flow.per_robot:
            continue
        if flow.replicas > 1:
            found.add(f"flows[{i}].per_robot", "one flow per robot, or replicas: not both")
        if "robot" not in [flow.from_, *flow.to]:
            found.add(f"flows[{i}].per_robot", f"the flow neither starts nor ends on 'robot' (from {flow.from_}, "
                                               f"to {', '.join(flow.to)}): nothing to give each robot")


def _check_ros2(exp: Experiment, found: Collector) -> None:
    """ROS 2 transports: what the native nodes cannot do, and late subscribers."""
    from .transports.ros2 import check_experiment  # noqa: PLC0415
    for key, message in check_experiment(exp):
        found.add(key, message)


#: link types whose emulator can lose a share of the packets (faults[].loss)
LOSS_BURST_LINKS = ("shaped", "ns3_wifi")


def _check_faults(exp: Experiment, hosts: list[str], found: Collector) -> None:
    """``faults``: an emulated link with interfaces, known hosts, outages that do not overlap
    and end within the run."""
    if exp.faults and (exp.machines or exp.link == "loopback"):
        found.add("faults", "outages are made on an emulated link's interfaces: not on "
                            + (f"real machines (machines: {exp.machines})" if exp.machines else "link loopback"))
        return
    try:
        length = run_seconds(exp)
    except (ValueError, TypeError):   # flows without a count and no duration: no known end
        length = None
    link_type = load_profile(exp.link, exp.link_params)["type"] if any(f.loss for f in exp.faults) else None
    for i, fault in enumerate(exp.faults):
        if fault.loss is not None and link_type not in LOSS_BURST_LINKS:
            found.add(f"faults[{i}].loss", f"a loss burst needs a link whose emulator decides per packet (type "
                                           f"{' or '.join(LOSS_BURST_LINKS)}); link '{exp.link}' is {link_type} and "
                                           f"the kernel here has no netem. Drop 'loss' for an outage")
        if fault.loss is not None and fault.kind == "interface_down":
            found.add(f"faults[{i}].kind", "a loss burst ('loss') is frames lost on the air, not an interface "
                                           "going down: kind drop (the default) with loss, or interface_down "
                                           "without it")
        for host in fault.hosts:
            if host not in hosts:
                found.add(f"faults[{i}].hosts", f"unknown host {host!r}; allowed: {', '.join(hosts)}")
        if fault.repeat > 1 and (fault.every is None or fault.every <= fault.duration):
            found.add(f"faults[{i}].every", f"with repeat {fault.repeat}, every must be longer than the duration "
                                            f"({fault.duration:g} s), got {fault.every}")
            continue
        _check_interface_overlap(exp, i, hosts, found)
        end = fault.windows()[-1][1]
        if length is not None and end > length:
            found.add(f"faults[{i}]", f"the outage ends {end:g} s after the nodes connected, after the run "
                                      f"(about {length:g} s): start it earlier, shorten it, or lengthen the run")


def _check_interface_overlap(exp: Experiment, i: int, hosts: list[str], found: Collector) -> None:
    """An interface that is down cannot go down again: ``faults[i]`` of kind interface_down must
    not overlap an earlier one on the same host."""
    fault = exp.faults[i]
    if fault.kind != "interface_down":
        return
    mine = set(fault.hosts or hosts)
    for j, other in enumerate(exp.faults[:i]):
        if other.kind != "interface_down" or other.repeat > 1 and (other.every or 0) <= other.duration:
            continue
        shared = mine & set(other.hosts or hosts)
        if shared and any(a < d and c < b for a, b in fault.windows() for c, d in other.windows()):
            found.add(f"faults[{i}]", f"its interface outage overlaps faults[{j}]'s on {', '.join(sorted(shared))}: "
                                      "an interface that is down cannot go down again; move one of them")
            return


def _check_message_sizes(exp: Experiment, found: Collector) -> None:
    """Each transport must be able to carry the largest flow message (e.g. the priority relay
    refuses a message larger than its whole send queue, for ever)."""
    sizes = [(message_bytes(f), f.name) for f in exp.flow_instances]
    if not sizes:
        return
    largest, flow = max(sizes)
    for tname in dict.fromkeys(exp.transport):
        transport = get_transport(tname)
        if transport.options_schema is None:
            continue
        options = exp.transport_options.get(tname) or validate(transport.options_schema, {})
        problem = transport.check_messages(largest, options)
        if problem:
            option, _, what = problem.partition(": ")
            found.add(f"transport_options.{tname}.{option}", f"{what} (flow {flow!r})")


def _check_instance_names(exp: Experiment) -> None:
    """Replicas are named <name>_<k>: they must not collide with another flow's name."""
    names = [f.name for f in exp.flow_instances]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ConfigError("flows", f"flow names {', '.join(clash)} occur twice once replicas are expanded "
                                   f"(a flow with replicas: N is named <name>_1 ... <name>_N)")


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
    one = _validate_one(_with_settings(to_dict(exp), cell.settings), None, exp.name)
    one.transport = [cell.transport]
    return RunSpec(one, cell.transport, cell.repetition, cell.condition, dict(cell.settings))


def experiment_warnings(exp: Experiment) -> list[str]:
    """Things worth saying before a run that are not errors: flows the link cannot carry; on
    real machines without a known rate, a priority relay that cannot pace."""
    out = []
    from .transports import left_out_of_all, transports_for_all  # noqa: PLC0415
    from .transports.ros2 import MIDDLEWARES  # noqa: PLC0415
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
        capacity = link_capacity_mbit(load_profile(exp.link, exp.link_params))
    from .transports.ros2 import zenoh_drop_warnings  # noqa: PLC0415
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
