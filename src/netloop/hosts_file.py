"""A hosts file (``config/hosts/<name>.yaml``, or a path): the real machines of an experiment
as a typed model (:class:`Machines`, :class:`Machine`, :class:`Ssh`), validated like the
experiment file: every problem at once, each naming its key; an unreadable, non-UTF-8 or empty
file is one line naming the file (:func:`netloop.schema.load_config_file`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import paths
from .schema import Bool, ConfigError, Enum, Int, List, Map, Num, Str, key, load_config_file, section, validate

MACHINES_DIR = paths.CONFIG / "hosts"
#: how much later than the driver the other nodes of a machine stop on a silent heartbeat [s]
AFTER_DRIVER_S = 1.0
#: the default heartbeat_timeout [s]: a Wi-Fi stall under 2 s never stops the robot (the first
#: datagram after it comes within 0.2 s), a dead operator stops the car driver within 3 s
#: (docs/real-machines.md, the stall-versus-stop table)
DEFAULT_HEARTBEAT_S = 2.5
#: the default run_root: survives a reboot (not /tmp); each run's directory is removed once fetched
DEFAULT_RUN_ROOT = "~/.local/share/netloop/runs"


@section("how to reach a machine over SSH (OpenSSH's ssh; ~/.ssh/config applies too)")
class Ssh:
    user: str | None = key(Str(None, "login name (default: ssh's own choice: ~/.ssh/config, else the local user)"))
    host: str | None = key(Str(None, "name or address to connect to (default: the machine's address)"))
    port: int = key(Int(22, "SSH port", ge=1, le=65535))
    key_file: str | None = key(Str(None, "private key file (default: ssh's own: the agent, ~/.ssh/id_*)"), "key")
    known_hosts: str | None = key(Str(None, "known_hosts file (default: ssh's own, ~/.ssh/known_hosts)"))
    options: list[str] = key(List(Str(), [], "ssh -o options, e.g. [ConnectTimeout=10]; they come first on "
                                             "the command line, so they override netloop's defaults"))
    connect_timeout: float = key(Num(5.0, "seconds to wait for the connection", gt=0, le=120))
    sessions_per_connection: int = key(Int(8, "sessions netloop opens on one SSH connection before it opens "
                                              "another (keep it below sshd's MaxSessions, default 10)",
                                           ge=1, le=1000))


@section("one machine of the run")
class Machine:
    address: str = key(Str(doc="IPv4 address the other machines reach it at (its ROS_IP)"))
    local: bool = key(Bool(False, "the machine netloop runs on: its processes start here, without SSH"))
    ssh: Ssh = key(Ssh.schema)
    root: str | None = key(Str(None, "the netloop checkout on that machine, built with 'make build' "
                                     "(default: the same path as here)"))
    workspace: str | None = key(Str(None, "a catkin workspace of the user's holding netloop (its sources in "
                                          "src/, built with catkin_make), used instead of a checkout built by "
                                          "'make build'/'make robot'; root then defaults to <workspace>/src/netloop"))
    run_root: str = key(Str(DEFAULT_RUN_ROOT, "where its records are written during a run (copied home after "
                                              "it, then removed there; ~ is its user's home)"))
    interface: str | None = key(Str(None, "its network interface, e.g. wlan0 (recorded: MTU, SSID, bitrate)"))
    env: dict[str, str] = key(Map({}, {}, "more environment variables of its processes", extra=Str(nonempty=False)))
    heartbeat_timeout: float = key(Num(DEFAULT_HEARTBEAT_S, "seconds without the operator's heartbeat (a UDP "
                                                            "datagram every 0.2 s, and a byte a second over SSH) "
                                                            "after which its nodes stop: the car driver first, the "
                                                            f"others {AFTER_DRIVER_S:g} s later", ge=2, le=600))
    heartbeat_udp: bool = key(Bool(True, "send the heartbeat as UDP datagrams too (they do not wait on a stalled TCP "
                                         "connection's retransmission backoff); false: over SSH only"))


def _across_machines(hosts: Any, key: str) -> list[tuple[str, str]]:
    """The hosts file's rules across machines (an operator, at most one local machine), on the
    validated hosts or, when a machine has problems of its own, on the file's raw mapping."""
    if not isinstance(hosts, dict):
        return []
    problems = []
    if not hosts:
        problems.append((key, "no machines given (at least robot and operator)"))
    elif "operator" not in hosts:
        problems.append((key, f"no 'operator' machine (the ROS master runs there); given: {', '.join(map(str, hosts))}"))
    local = [h for h, m in hosts.items()
             if (m.local if isinstance(m, Machine) else isinstance(m, dict) and m.get("local") is True)]
    if len(local) > 1:
        problems.append((key, f"only one machine can be local (this one); given: {', '.join(local)}"))
    return problems


def _check_machines(doc: dict, where: str) -> None:
    problems = _across_machines(doc["hosts"], f"{where}.hosts" if where else "hosts")
    if problems:
        raise ConfigError(*problems[0], errors=problems)


@section("the real machines of an experiment: config/hosts/*.yaml", check=_check_machines)
class Machines:
    description: str = key(Str("", nonempty=False))
    hosts: dict[str, Machine] = key(Map({}, {}, "per host name (robot, operator, relay, robot2, ...): its machine",
                                        extra=Machine.schema))
    clock_samples: int = key(Int(16, "NTP-style exchanges per clock measurement (before and after each run)",
                                 ge=4, le=1000))
    clock_max_uncertainty: float = key(Num(0.1, "one-way delays whose clock uncertainty is above this fraction of "
                                                "the delay are flagged in the report (use the round trip)",
                                           gt=0, le=10))
    link_mbit: float | None = key(Num(None, "the network's usable rate [Mbit/s] (measure it, e.g. with iperf3): "
                                            "the priority relay paces its sends at a fraction of it, and flows "
                                            "offering more are warned about; none: unknown (priority unpaced)",
                                      gt=0))
    revision_mismatch: str = key(Enum(["warn", "refuse"], "warn", "a machine whose checkout is at another git "
                                                                 "revision than this one: warn, or refuse to run"))


def machines_names() -> list[str]:
    return sorted(p.stem for p in MACHINES_DIR.glob("*.yaml"))


def machines_path(spec: str) -> Path:
    """The hosts file ``spec`` names: a path, or a name in config/hosts."""
    path = Path(os.path.expanduser(spec))
    if path.suffix in (".yaml", ".yml") or os.sep in spec:
        if not path.is_file():
            raise ConfigError("machines", f"hosts file {spec!r} not found")
        return path
    if spec not in machines_names():
        raise ConfigError("machines", f"unknown hosts file {spec!r}; allowed: a path to a .yaml file, or one of "
                                      f"{', '.join(machines_names()) or '(none in config/hosts)'}")
    return MACHINES_DIR / f"{spec}.yaml"


def load_machines(spec: str) -> Machines:
    """The validated hosts file ``spec`` names (ConfigError naming the key otherwise)."""
    path = machines_path(spec)
    doc = load_config_file(str(path))
    try:
        return validate(Machines.schema, doc, str(path))
    except ConfigError as err:   # a machine's own problems: the rules across machines too, at once
        extra = _across_machines(doc.get("hosts"), "hosts")
        errors = err.errors + [e for e in extra if e not in err.errors]
        raise ConfigError(errors[0][0], errors[0][1], err.source, errors) from None

