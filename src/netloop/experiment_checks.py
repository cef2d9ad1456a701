"""The checks of an experiment that need several keys: hosts named by flows, faults and CPU
limits exist on the link; outages fit the run and do not overlap; transport options and
message sizes suit each transport; ROS 2's limits; replica names do not collide.

Each check adds every problem it finds to a :class:`~netloop.schema.Collector` (or raises one
ConfigError that the caller collects), so :func:`netloop.experiment.validate_experiment`
reports them together with the problems of single keys.
"""
from __future__ import annotations

import os

from .flows import message_bytes
from .loops import get_loop_kind, loop_kind_names
from .model import Experiment
from .schema import Collector, ConfigError, validate
from .testbed import load_profile
from .transports import get_transport, transport_names

def check_transport_options(exp: Experiment, found: Collector) -> None:
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


def check_host_computers(exp: Experiment, hosts: list[str], found: Collector) -> None:
    """``hosts``: only the link's hosts, and no more CPU than the machine has."""
    cpus = os.cpu_count() or 1
    for host, computer in exp.hosts.items():
        if host not in hosts:
            found.add(f"hosts.{host}", f"unknown host {host!r} for link {exp.link!r}; allowed: {', '.join(hosts)}")
        elif exp.machines and computer.get("cpu") is not None:
            found.add(f"hosts.{host}.cpu", f"CPU limits emulate a slow computer on this machine; with real "
                                           f"machines (machines: {exp.machines}) run on the slow computer itself")
        elif computer.get("cpu_model") in ("clock", "quota") and computer.get("cpu") is not None \
                and computer["cpu"] > 1:
            found.add(f"hosts.{host}.cpu", f"cpu_model {computer['cpu_model']} is one core at a fraction of its "
                                           f"clock: cpu must be at most 1, got {computer['cpu']:g}")
        elif computer.get("cpu") is not None and computer["cpu"] > cpus:
            found.add(f"hosts.{host}.cpu", f"{computer['cpu']:g} CPUs is more than this machine has ({cpus})")
        if host in hosts and computer.get("nic_packet_us") is not None and (
                exp.machines or load_profile(exp.link).type != "ns3_wifi"):
            found.add(f"hosts.{host}.nic_packet_us", "a Wi-Fi NIC's time per packet is emulated on the ns3_wifi "
                                                     f"links only (with nic_ring_frames); link {exp.link!r} has none"
                      + (" (real machines have their own NICs)" if exp.machines else ""))


def check_per_robot(exp: Experiment, found: Collector) -> None:
    if exp.loop.per_robot and not get_loop_kind(exp.loop.type).per_robot:
        runs = [name for name in loop_kind_names() if get_loop_kind(name).per_robot]
        found.add("loop.per_robot", f"only the {', '.join(runs)} loop runs one per robot; loop.type is {exp.loop.type}")
    for i, flow in enumerate(exp.flows):
        if not flow.per_robot:
            continue
        if flow.replicas > 1:
            found.add(f"flows[{i}].per_robot", "one flow per robot, or replicas: not both")
        if "robot" not in [flow.from_, *flow.to]:
            found.add(f"flows[{i}].per_robot", f"the flow neither starts nor ends on 'robot' (from {flow.from_}, "
                                               f"to {', '.join(flow.to)}): nothing to give each robot")


def check_ros2(exp: Experiment, found: Collector) -> None:
    """ROS 2 transports: what the native nodes cannot do, and late subscribers."""
    from .transports.ros2_checks import check_experiment  # noqa: PLC0415
    for key, message in check_experiment(exp):
        found.add(key, message)


#: link types whose emulator can lose a share of the packets (faults[].loss)
LOSS_BURST_LINKS = ("shaped", "ns3_wifi")


def check_faults(exp: Experiment, hosts: list[str], length: float | None, found: Collector) -> None:
    """``faults``: an emulated link with interfaces, known hosts, outages that do not overlap
    and end within the run (``length`` seconds after the nodes connected; None: no known end)."""
    if exp.faults and (exp.machines or exp.link == "loopback"):
        found.add("faults", "outages are made on an emulated link's interfaces: not on "
                            + (f"real machines (machines: {exp.machines})" if exp.machines else "link loopback"))
        return
    link_type = load_profile(exp.link, exp.link_params).type if any(f.loss for f in exp.faults) else None
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
        check_interface_overlap(exp, i, hosts, found)
        end = fault.windows()[-1][1]
        if length is not None and end > length:
            found.add(f"faults[{i}]", f"the outage ends {end:g} s after the nodes connected, after the run "
                                      f"(about {length:g} s): start it earlier, shorten it, or lengthen the run")


def check_interface_overlap(exp: Experiment, i: int, hosts: list[str], found: Collector) -> None:
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


def check_message_sizes(exp: Experiment, found: Collector) -> None:
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


def check_instance_names(exp: Experiment) -> None:
    """Replicas are named <name>_<k>: they must not collide with another flow's name."""
    names = [f.name for f in exp.flow_instances]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ConfigError("flows", f"flow names {', '.join(clash)} occur twice once replicas are expanded "
                                   f"(a flow with replicas: N is named <name>_1 ... <name>_N)")
