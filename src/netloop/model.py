"""The typed experiment model: one definition of every key of an experiment file.

Each section is a class whose fields are declared with :func:`~netloop.schema.key`; from
that one definition come the validation (every problem of a file reported at once, each
naming its dotted key and what is allowed), the defaults, the key reference in
``docs/experiments.md`` (``netloop validate --keys``) and the JSON written into each run's
``metadata.json`` (:func:`~netloop.schema.to_dict`). Checks that need more than one key
(hosts of the link profile, a teleop world that must load, ...) live in
:mod:`netloop.experiment` and in the loop kinds (:mod:`netloop.loops`).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from .loops.rlc.config import Controller, Plant, RlcPlacement
from .loops.teleop.config import TeleopPlacement
from .ros2.qos import override_fields
from .schema import Any_, Bool, Enum, Int, List, Map, Num, Str, key, registered_sections, section, to_dict, validate

FLOW_KINDS = ["generic", "camera", "lidar_bag", "topic", "echo"]
FLOW_TRANSPORTS = ["same", "tcp", "tcp_nodelay", "udp"]
QUEUE_SIZE_MAX = 1_000_000
#: serialized netloop/LoopSample without padding: seq 4, value 8, stamp 8, answer_seq 8, answer_stamp 8,
#: the padding's length 4 (flow_source pads it to a flow's size; flows.message_bytes); a test holds it to
#: the generated message class
LOOP_SAMPLE_BYTES = 40


def _loop_kind_names() -> list[str]:
    from .loops import loop_kind_names  # noqa: PLC0415 - the registry imports this module
    return loop_kind_names()


def _loop_kind_sections() -> dict[str, type]:
    from .loops import loop_kind_sections  # noqa: PLC0415 - the registry imports this module
    return loop_kind_sections()


def _link_profile_names() -> list[str]:
    from .testbed import profile_names  # noqa: PLC0415 - profiles are found on disk
    return profile_names()


def _transport_names() -> list[str]:
    from .transports import transport_names  # noqa: PLC0415
    return transport_names()


def _queue(default: int, what: str) -> Num:
    return Int(default, f"{what} queue depth [messages]: roscpp drops the oldest message beyond it",
               ge=1, le=QUEUE_SIZE_MAX)


@section("which host runs which part of the loop")
class Placement(TeleopPlacement, RlcPlacement):
    """Every loop kind's roles (each declared in its kind's config: plant, controller, car, trial)."""


@section("the control loop closed across the link")
class Loop:
    type: str = key(Enum(_loop_kind_names, "rlc", "the loop kind: rlc (the RLC circuit), teleop (the "
                                                  "simulated car), none (flows only)", what="loop type"))
    plant: Plant = key(Plant.schema)
    controller: Controller = key(Controller.schema)
    samples: int = key(Int(150, "sensor samples per run (duration = samples x period)", ge=10, le=10_000_000))
    padding_bytes: int = key(Int(0, "filler bytes added to every loop message", ge=0, le=50_000_000))
    warmup: float = key(Num(0.5, "seconds between the loop connecting and its first sample (lets flows start)",
                            ge=0, le=600))
    publisher_queue_size: int = key(_queue(10, "publisher (y and u)"))
    subscriber_queue_size: int = key(_queue(10, "subscriber (y and u)"))
    placement: Placement = key(Placement.schema)
    qos: dict[str, Any] = key(Map(override_fields("y and u"), {}, "ROS 2 transports (cyclonedds, fastdds, zenoh) "
                                                                 "only: the loop's QoS over the transport's: "
                                                                 "{reliability, durability, depth}"))
    per_robot: bool = key(Bool(False, "rlc: one loop per robot host of the link (robot, robot2, ..., robotN: "
                                      "link_params.robots), each plant on its robot and its controller on "
                                      "placement.controller, on topics /<robot>/y and /<robot>/u"))
    #: each loop kind's own section, by kind (``loop.teleop``; a plug-in's ``loop.<name>``): the
    #: sections the registry's entries give (netloop.loops), read as ``exp.loop.teleop``
    sections: dict[str, Any] = registered_sections(_loop_kind_sections)


@section("a perturbing flow sharing the link")
class Flow:
    name: str = key(Str(doc="flow name (letters, digits, _); topic /flows/<name>"))
    kind: str = key(Enum(FLOW_KINDS, "generic", "what is published (see below)", what="flow kind"))
    from_: str = key(Str("robot", "sending host"), name="from")   # ``from`` is a Python keyword
    to: list[str] = key(List(Str(), ["operator"], "receiving host, or a list of hosts (one subscriber set "
                                                  "on each)", min_len=1, scalar_ok=True, unique=True))
    subscribers: int = key(Int(1, "subscribers on each receiving host (each its own node)", ge=1, le=64))
    replicas: int = key(Int(1, "independent publisher/subscriber pairs, each on its own topic "
                               "/flows/<name>_<k> (vertical scaling: N node pairs on the same hosts)", ge=1, le=256))
    per_robot: bool = key(Bool(False, "one instance per robot host of the link (robot, robot2, ..., robotN: "
                                      "link_params.robots): 'robot' in from/to becomes each robot in turn; "
                                      "named <name>_<robot>, each on its own topic (horizontal scaling)"))
    topic: str | None = key(Str(None, "topic (default /flows/<name>)"))
    size_bytes: int = key(Int(1024, "generic, echo: serialized message size [bytes]: netloop/LoopSample, whose own "
                                    "fields take 40 bytes, padded to this size (not used with payload_bytes)",
                              ge=LOOP_SAMPLE_BYTES, le=100_000_000))
    payload_bytes: int | None = key(Int(None, "generic, echo: payload per message [bytes] (the scalability study's "
                                              "'Hello World': 11): netloop/LoopSample with exactly this many padding "
                                              "bytes, 40 + payload_bytes serialized (its own fields: seq, value, "
                                              "stamp, answer_seq, answer_stamp, the padding's length); sets the size "
                                              "in place of size_bytes. none: size_bytes decides",
                                        ge=0, le=100_000_000 - LOOP_SAMPLE_BYTES))
    period: float = key(Num(0.1, "seconds between messages", gt=0, le=3600))
    send_jitter: float = key(Num(0.0, "generic, echo, camera: std of each message's send time around its nominal "
                                      "time k x period [s] (normal, clipped to +-0.45 period so messages keep "
                                      "their order; a sensor driver's timer is not exact); 0 = exact. The "
                                      "period's std is then ~1.4 x this", ge=0, le=3600))
    count: int = key(Int(0, "messages to send; 0 = until the run ends", ge=0))
    start_delay: float = key(Num(1.0, "seconds between the subscriber connecting and the first message", ge=0))
    transport: str = key(Enum(FLOW_TRANSPORTS, "same", "ROS transport of this flow's subscribers; 'same' = "
                                                       "the run's transport decides", what="flow transport"))
    publisher_queue_size: int = key(_queue(10, "publisher"))
    subscriber_queue_size: int = key(_queue(10, "subscriber"))
    qos: dict[str, Any] = key(Map(override_fields("this flow"), {}, "ROS 2 transports (cyclonedds, fastdds, zenoh) "
                                                                   "only: this flow's QoS over the transport's: "
                                                                   "{reliability, durability, depth}"))
    subscriber_delay: float = key(Num(0.0, "seconds after the run connected at which the flow's subscribers after "
                                           "the first join (a late-joining subscriber: what it missed counts as "
                                           "lost; with ROS 2's transient_local it gets the last depth samples); "
                                           "0 = every subscriber from the start", ge=0, le=3600))
    width: int = key(Int(320, "camera: image width [px]", ge=8, le=8192))
    height: int = key(Int(240, "camera: image height [px]", ge=8, le=8192))
    encoding: str = key(Enum(["jpeg", "raw"], "jpeg", "camera: CompressedImage (jpeg) or Image (raw rgb8)"))
    jpeg_quality: int = key(Int(80, "camera: JPEG quality", ge=1, le=100))
    bag: str | None = key(Str(None, "lidar_bag: bag file (default: a synthetic 20 Hz LaserScan bag)"))
    bag_topic: str = key(Str("/scan", "lidar_bag: topic in the bag"))
    source_topic: str | None = key(Str(None, "topic: a live topic on the sending host (e.g. the simulator's "
                                             "/scan)"))
    datatype: str | None = key(Str(None, "topic: its message type, e.g. sensor_msgs/CompressedImage"))

    def instances(self, robots: list[str] | None = None) -> list["Flow"]:
        """The flows this entry starts: itself, or for ``replicas: N`` N copies named
        ``<name>_1`` ... ``<name>_N``, each on its own topic; with ``per_robot``, one per host
        of ``robots`` (the link's robot hosts) named ``<name>_<robot>``."""
        if self.per_robot and robots:
            def on(host: str, robot: str) -> str:
                return robot if host == "robot" else host
            return [dataclasses.replace(self, name=f"{self.name}_{robot}", from_=on(self.from_, robot),
                                        to=[on(h, robot) for h in self.to], per_robot=False,
                                        topic=f"{self.topic}_{robot}" if self.topic else None) for robot in robots]
        if self.replicas == 1:
            return [self]
        return [dataclasses.replace(self, name=f"{self.name}_{k}", topic=f"{self.topic}_{k}" if self.topic else None,
                                    replicas=1) for k in range(1, self.replicas + 1)]

    @property
    def loop_sample_bytes(self) -> int:
        """generic, echo: the serialized size of each message, 40 + ``payload_bytes`` where
        given, else ``size_bytes``."""
        return self.size_bytes if self.payload_bytes is None else LOOP_SAMPLE_BYTES + self.payload_bytes

    @property
    def subscriber_hosts(self) -> list[str]:
        """The host of every subscriber, in order (a host appears ``subscribers`` times)."""
        return [host for host in self.to for _ in range(self.subscribers)]


@section("a link outage (the Pound paper's Table V): for a while, the hosts' transmissions are dropped at "
         "their interfaces, as by a radio that is off (kind drop), or their interfaces go down and up (kind "
         "interface_down); or, with 'loss', a packet-loss burst")
class Fault:
    kind: str = key(Enum(["drop", "interface_down"], "drop",
                         "drop: everything the hosts send is dropped at their interface (silently, as a "
                         "radio out of range; sockets see nothing); interface_down: the hosts' interface "
                         "goes down and comes back up (the kernel sees it: routes go, sockets get errors, "
                         "the queue is dropped; routes restored on up); on ns3_wifi the station leaves "
                         "the network and rejoins (access point mode: it associates anew)",
                         what="fault kind"))
    at: float = key(Num(doc="seconds after every subscriber has connected when the (first) outage starts", ge=0))
    duration: float = key(Num(doc="seconds the outage lasts", gt=0, le=3600))
    hosts: list[str] = key(List(Str(), [], "hosts whose transmissions are dropped, or whose interface goes "
                                           "down (default: every host: the link is down)"))
    repeat: int = key(Int(1, "outages in all", ge=1, le=1000))
    every: float | None = key(Num(None, "seconds from one outage's start to the next (with repeat > 1)", gt=0))
    loss: float | None = key(Num(None, "none: an outage (everything the hosts send is dropped); a probability: "
                                       "a loss burst instead, each packet the hosts send lost with it (on "
                                       "Wi-Fi each frame on the air, which the MAC retries, as in a fade); "
                                       "links 'shaped' and 'ns3_wifi' only", gt=0, le=1))

    def windows(self) -> list[tuple[float, float]]:
        """(start, end) of every outage, in seconds after the connections."""
        return [(self.at + k * (self.every or 0.0), self.at + k * (self.every or 0.0) + self.duration)
                for k in range(self.repeat)]


@section()
class Experiment:
    """An experiment file: the link, the transports, the loop and the flows, and how to sweep them."""

    name: str | None = key(Str(None, "experiment name (default: the file name)"))
    description: str = key(Str("", nonempty=False))
    link: str = key(Enum(_link_profile_names, "loopback", "link profile from config/links", what="link profile"))
    machines: str | None = key(Str(None, "real machines: a hosts file (name in config/hosts, or a path); the "
                                         "hosts are then those computers, reached over SSH, and 'link' is not "
                                         "emulated. none: hosts are network namespaces joined by 'link'"))
    link_params: dict[str, Any] = key(Map({}, {}, "overrides of the link profile's parameters, e.g. "
                                                  "{delay_ms: 20}", extra=Any_()))
    transport: list[str] = key(List(Enum(_transport_names, what="transport"), ["tcp_nodelay"],
                                    "one transport, a list, or all (every transport the package has)", min_len=1,
                                    scalar_ok=True, unique=True))
    hosts: dict[str, Any] = key(Map({}, {}, "per host name, its computer: cpu = share of one CPU the host's "
                                            "processes may use (a slow robot computer; cgroup cpu.max, needs root), "
                                            "e.g. {robot: {cpu: 0.25}}", extra=Map({
        "cpu": Num(None, "share of one CPU (0.25 = a quarter of a core); none: unlimited", gt=0),
        "cpu_period_ms": Num(None, "the cgroup's accounting period [ms]: the host runs cpu x period in every "
                                   "period, so a short one slows it evenly; none: 10 for share and clock, the "
                                   "shortest the kernel allows (1 ms of quota) for quota", ge=1, le=1000),
        "cpu_model": Enum(["share", "clock", "quota"], "share",
                          "share: a bandwidth limit (a light load runs at full speed, a heavy one is "
                          "throttled); clock: one core at cpu x its clock, also when nearly idle (every "
                          "process's work stretched by 1/cpu before each output: src/tools/slow_clock.cpp); "
                          "quota: the former clock model (a ballast takes the rest of a 1 ms quota: "
                          "coarse, see docs/links.md)", what="CPU model"),
        "nic_packet_us": Num(None, "the host's Wi-Fi NIC: microseconds it spends on each packet it sends (its "
                                   "bus and firmware), so a small message's rate can be limited by the NIC "
                                   "itself; a Raspberry Pi 3's is in docs/links.md (ns3_wifi links)", ge=0, le=100000),
    }, {})))
    transport_options: dict[str, Any] = key(Map({}, {}, "per transport name, its options (e.g. priority: "
                                                        "{priorities: ...})", extra=Any_()))
    repetitions: int = key(Int(1, "runs per cell (transport x sweep values)", ge=1, le=1000))
    sweep: dict[str, Any] = key(Map({}, {}, "sweep axes: key path (e.g. link_params.delay_ms, "
                                            "flows[0].size_bytes, loop.controller.K) -> list of values; every "
                                            "combination is a cell. Under 'zip', key paths whose lists are "
                                            "varied together (equal lengths): one axis", extra=Any_()))
    loop: Loop = key(Loop.schema)
    flows: list[Flow] = key(List(Flow.schema, [], "perturbing flows sharing the link"))
    faults: list[Fault] = key(List(Fault.schema, [], "link outages during each run (emulated links only)"))
    duration: float | None = key(Num(None, "seconds a run lasts when no loop or count ends it", gt=0))
    run_timeout: float = key(Num(120.0, "a run taking longer than this [s] is stopped and marked failed", gt=0))
    connect_timeout: float = key(Num(20.0, "seconds every subscriber of a run has to connect to its publisher "
                                           "before the run fails naming the missing ones (raise it for many "
                                           "robots on a busy channel)", gt=0, le=600))
    keep_going: bool = key(Bool(True, "go on with the other runs when one fails"))
    rerun_invalid: int = key(Int(2, "times a run judged invalid (the link emulator fell behind real time, e.g. "
                                    "the hypervisor did not run this machine) is run again; every invalid "
                                    "attempt is kept in invalid/<run_id>.attemptN, out of the tables, and "
                                    "counted in the report; 0: keep the first verdict", ge=0, le=10))

    @property
    def link_overrides(self) -> dict[str, Any]:
        """``link_params``, with the hosts' NICs (``hosts.<host>.nic_packet_us``) as the link's
        ``nic_packet_us`` on a Wi-Fi link (elsewhere the experiment's check names the key):
        what the link profile is loaded with."""
        nics = {h: c["nic_packet_us"] for h, c in self.hosts.items() if c.get("nic_packet_us") is not None}
        if not nics or self.machines:
            return dict(self.link_params)
        from .testbed import load_profile  # noqa: PLC0415
        try:
            if load_profile(self.link).type != "ns3_wifi":
                return dict(self.link_params)
        except Exception:  # noqa: BLE001 - an unknown link: its own check names it
            return dict(self.link_params)
        return {**self.link_params, "nic_packet_us": {**(self.link_params.get("nic_packet_us") or {}), **nics}}

    @property
    def flow_instances(self) -> list[Flow]:
        """Every flow a run starts (replicas and per-robot flows expanded), in order."""
        robots = self.robot_hosts() if any(f.per_robot for f in self.flows) else None
        return [one for flow in self.flows for one in flow.instances(robots)]

    def robot_hosts(self) -> list[str]:
        """The link's robot hosts: robot, robot2, ..., robotN (``link_params.robots``), or the
        real machines named so."""
        from .testbed.links import make_link, robot_names, robot_number  # noqa: PLC0415
        if self.machines:
            from .hosts_file import load_machines  # noqa: PLC0415
            try:
                return [h for h in load_machines(self.machines).hosts if robot_number(h)]
            except Exception:  # noqa: BLE001 - a hosts file from elsewhere: the robot alone
                return ["robot"]
        robots = self.link_params.get("robots")
        if robots is None:
            try:   # the link's own robot hosts (one on a link type without a robots key)
                from .testbed import load_profile  # noqa: PLC0415
                return [h for h in make_link(load_profile(self.link)).hosts if robot_number(h)]
            except Exception:  # noqa: BLE001 - a profile from elsewhere: one robot
                robots = 1
        return robot_names(int(robots))


@dataclasses.dataclass
class RunSpec:
    """What one run is: the experiment with its cell's sweep settings applied, and the cell."""

    experiment: Experiment
    transport: str
    repetition: int
    condition: str
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        """The experiment as a run's metadata.json records it: every key, with the run's one
        transport, its repetition and cell."""
        out = to_dict(self.experiment)
        out.update(transport=self.transport, repetition=self.repetition,
                   cell={"condition": self.condition, "settings": dict(self.settings)})
        return out

    @classmethod
    def from_metadata(cls, doc: dict[str, Any]) -> "RunSpec":
        """The run a metadata.json's ``experiment`` describes, typed again (the inverse of
        :meth:`metadata`); ConfigError when it does not fit the model. Only the keys are
        checked, not the machine (link profiles and hosts), so results from elsewhere load."""
        doc = dict(doc)
        transport = doc.pop("transport", None)
        repetition, cell = doc.pop("repetition", 0), doc.pop("cell", None) or {}
        exp: Experiment = validate(Experiment.schema, dict(doc, transport=transport))
        return cls(exp, transport if isinstance(transport, str) else exp.transport[0], int(repetition or 0),
                   cell.get("condition", ""), dict(cell.get("settings") or {}))
