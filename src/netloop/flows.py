"""Perturbing flows: what an experiment's ``flows:`` entries mean, and starting them.

Every flow goes from one host to another on its own topic (``/flows/<name>`` unless
``topic`` is given), and is recorded at both ends in the netloop-events/1 format:

  generic    ``flow_source`` publishes netloop/LoopSample padded to ``size_bytes`` every
             ``period`` (``count`` messages, 0 = until the run ends); records tx.
  camera     ``flow_source`` publishes sensor_msgs/CompressedImage with real JPEG frames
             (made here with OpenCV from a moving synthetic scene at ``width`` x ``height``,
             ``jpeg_quality``), or raw sensor_msgs/Image with ``encoding: raw``.
  topic      a live topic already published on the sending host (``source_topic``, e.g. the
             simulator's camera or /scan), carried and measured like a bag replay.
  lidar_bag  ``rosbag play`` of a LaserScan bag (``bag``, or a synthetic 20 Hz one), through
             ``flow_sink`` in relay mode on the sending host (rospy, and so rosbag, cannot
             publish over UDPROS), which records when each scan entered the network.
  echo       round trips (Jordan's sender/echoer): ``flow_source`` publishes like generic;
             on the receiving host ``flow_sink`` in relay mode (the echoer) republishes each
             message at once on ``<topic>/echo``; back on the sending host ``flow_sink``
             records each echo. Send and echo times are both on the sender's clock, so the
             flow's delay is the round-trip time, exact without synchronised clocks.

At each destination ``flow_sink`` receives any type over the flow's transport and records
each arrival; a flow may have several subscribers (``to`` lists hosts, ``subscribers`` per
host), each its own node and record file. Send and receive times share one clock when hosts are namespaces of one
machine, so one-way delays are exact.
"""
from __future__ import annotations

import dataclasses
import zlib
from pathlib import Path
from typing import Any, Callable

from .model import LOOP_SAMPLE_BYTES, Flow
from .rundir import sink_names
from .schema import Collector, ConfigError


def check_flows(flows: list["Flow"], hosts: list[str], key: str = "flows") -> None:
    """Cross-field checks: names unique and topic-safe, hosts known and different, the
    fields a kind needs present; every problem is raised at once."""
    seen, found = set(), Collector()
    for i, f in enumerate(flows):
        where = f"{key}[{i}]"
        if not f.name.replace("_", "").isalnum() or f.name in seen:
            found.add(f"{where}.name", f"{f.name!r} must be unique and made of letters, digits and _")
        seen.add(f.name)
        if f.from_ not in hosts:
            found.add(f"{where}.from", f"unknown host {f.from_!r}; allowed: {', '.join(hosts)}")
        for n, dest in enumerate(f.to):
            sub = f"{where}.to" + (f"[{n}]" if len(f.to) > 1 else "")
            if dest not in hosts:
                found.add(sub, f"unknown host {dest!r}; allowed: {', '.join(hosts)}")
            elif dest == f.from_:
                found.add(sub, f"a flow must cross the link: from and to are both {dest!r}")
        if f.kind == "topic":
            for name in ("source_topic", "datatype"):
                if not getattr(f, name):
                    found.add(f"{where}.{name}", "required for a flow of kind topic")
            if f.datatype:
                try:
                    message_class(f.datatype)
                except ValueError as err:
                    found.add(f"{where}.datatype", str(err))
                except ModuleNotFoundError:   # no ROS Python here (not built yet): checked again by 'run'
                    pass
        if f.send_jitter and f.kind in ("lidar_bag", "topic"):
            found.add(f"{where}.send_jitter", f"a {f.kind} flow is sent as its source publishes; "
                                              "send_jitter is for generic, echo and camera flows")
        if f.send_jitter and f.send_jitter * 3 > f.period:
            found.add(f"{where}.send_jitter", f"{f.send_jitter:g} s is more than a third of the period "
                                              f"({f.period:g} s): the clipping at +-0.45 period would shape it")
        if f.payload_bytes is not None:
            _check_payload(f, where, found)
        if f.kind == "echo" and (len(f.to) > 1 or f.subscribers > 1):
            found.add(f"{where}.to", "an echo flow has one echoer: one receiving host and subscribers 1")
        if f.kind == "lidar_bag" and f.bag:
            with found.check():
                _check_bag(f, where)
    found.raise_if_any()


def _check_payload(f: "Flow", where: str, found: Collector) -> None:
    """payload_bytes: for the sized kinds, and not with a size_bytes that says otherwise."""
    if f.kind not in ("generic", "echo"):
        found.add(f"{where}.payload_bytes", f"for generic and echo flows; a {f.kind} flow's size is its content's")
    elif f.size_bytes not in (_default_size(), LOOP_SAMPLE_BYTES + f.payload_bytes):
        found.add(f"{where}.size_bytes", f"{f.size_bytes} given with payload_bytes {f.payload_bytes}, which makes "
                                         f"the message {LOOP_SAMPLE_BYTES + f.payload_bytes} bytes: give one of "
                                         "the two")


def _default_size() -> int:
    return next(fl.metadata["node"].default for fl in dataclasses.fields(Flow) if fl.name == "size_bytes")


def _check_bag(f: "Flow", where: str) -> None:
    if not Path(f.bag).is_file():
        raise ConfigError(f"{where}.bag", f"bag file {f.bag!r} not found")
    from .bags import bag_topics  # noqa: PLC0415
    try:
        topics = bag_topics(Path(f.bag))
    except ValueError as err:
        raise ConfigError(f"{where}.bag", str(err)) from None
    if f.bag_topic not in topics:
        raise ConfigError(f"{where}.bag_topic", f"{f.bag_topic!r} is not in {f.bag}; "
                                                f"the bag has: {', '.join(topics) or 'no topics'}")


def topic_of(flow: "Flow") -> str:
    return flow.topic or f"/flows/{flow.name}"


def message_bytes(flow: "Flow") -> int:
    """Expected serialized size of one message (used to choose a transport by size); a
    generic or echo flow's exact size: 40 + ``payload_bytes`` where given, else ``size_bytes``."""
    if flow.kind in ("generic", "echo"):
        return flow.loop_sample_bytes
    if flow.kind == "camera":
        raw = flow.width * flow.height * 3
        return raw if flow.encoding == "raw" else raw // 10
    if flow.kind == "topic":
        return flow.size_bytes  # the expected size, as given
    return 4300


def message_class(datatype: str):
    """The Python class of a ROS message type; ValueError when it is not installed."""
    import roslib.message  # noqa: PLC0415 - Debian's ROS Python packages

    cls = roslib.message.get_message_class(datatype) if "/" in datatype else None
    if cls is None:
        raise ValueError(f"unknown message type {datatype!r} (not installed, or not 'package/Type')")
    return cls


def flow_datatype(flow: "Flow") -> str:
    """The ROS message type a flow publishes."""
    if flow.kind == "topic":
        return flow.datatype
    if flow.kind in ("generic", "echo"):
        return "netloop/LoopSample"
    if flow.kind == "camera":
        return "sensor_msgs/Image" if flow.encoding == "raw" else "sensor_msgs/CompressedImage"
    return "sensor_msgs/LaserScan"


def echo_topic(flow: "Flow") -> str:
    """The topic an echo flow's echoes come back on."""
    return f"{topic_of(flow)}/echo"


def link_bits_per_second(flow: "Flow") -> float:
    """The flow's offered load on the link [bit/s] (once per receiving host: each gets its own
    copy across the link; an echo crosses it twice)."""
    return message_bytes(flow) * 8 / flow.period * len(flow.to) * (2 if flow.kind == "echo" else 1)


def camera_frames(out_dir: Path, width: int, height: int, quality: int, frames: int = 30) -> Path:
    """Real JPEG frames of a moving synthetic scene (textured background, moving shapes and
    sensor noise, so the compressed size behaves like a camera's); returns the directory."""
    import cv2  # noqa: PLC0415 - Debian's python3-opencv (comes with cv_bridge)
    import numpy as np

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:height, 0:width]
    texture = (rng.random((height // 8 + 1, width // 8 + 1, 3)) * 255).astype(np.uint8)
    texture = cv2.resize(texture, (width, height), interpolation=cv2.INTER_LINEAR)
    for k in range(frames):
        img = texture.copy()
        img[..., 0] = ((xx + 4 * k) % 256).astype(np.uint8) // 2 + img[..., 0] // 2
        cx, cy = int(width * (0.2 + 0.6 * k / frames)), height // 2
        cv2.circle(img, (cx, cy), max(4, height // 6), (30, 200, 40), -1)
        cv2.rectangle(img, (width // 8, height // 8 + k), (width // 3, height // 3 + k), (200, 40, 40), -1)
        noisy = np.clip(img.astype(np.int16) + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
        cv2.imwrite(str(out_dir / f"frame_{k:03d}.jpg"), noisy, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return out_dir


def flow_processes(flow: "Flow", transport: str, run_dir: Path, node_binary,
                   endpoint: Callable[[str, str, str, str], dict[str, Any]] | None = None,
                   relayed: bool = False) -> list[dict[str, Any]]:
    """What to start for one flow: a list of {name, host, argv, params, publishes, subscribes}
    (params are private parameters of the node, set on the master before it starts;
    publishes/subscribes name the flow's topics the node sends and takes, so that every
    connection can be checked), the subscribers first.

    ``endpoint(topic, role, node, host)`` gives the parameters that carry one of the flow's
    topics at a node (``role``: ``subscriber`` or ``publisher``; the run transport's
    ``endpoint_params``, e.g. a ROS 2 middleware's); by default a subscriber asks for the ROS
    transport ``transport`` and a publisher needs nothing. ``relayed``: the run transport's
    relays carry the flow (``Transport.relays``), so its source drains for its whole time."""
    name, topic = flow.name, topic_of(flow)
    rec = run_dir / "records"
    queues = {"publisher_queue_size": flow.publisher_queue_size, "subscriber_queue_size": flow.subscriber_queue_size}
    if endpoint is None:
        def endpoint(_topic: str, role: str, _node: str, _host: str) -> dict[str, Any]:
            return {"transport": transport} if role == "subscriber" else {}

    def sink(node: str, host: str, record: str, on: str) -> dict[str, Any]:
        return {"name": node, "host": host, "argv": [str(node_binary("flow_sink")), f"__name:={node}", f"flow:={on}"],
                "params": {**endpoint(on, "subscriber", node, host), "kind": "rx", "record_path": str(rec / record),
                           **queues},
                "publishes": [], "subscribes": [on]}

    def relay(node: str, host: str, take: str, take_params: dict[str, Any], record: str, datatype, md5sum,
              definition, out: str | None = None):
        """flow_sink in relay mode: takes ``take`` on its host (with ``take_params``: its
        subscriber's), republishes on ``out`` (the flow's topic unless given)."""
        out = out or topic
        return {"name": node, "host": host,
                "argv": [str(node_binary("flow_sink")), f"__name:={node}", f"flow:={out}", f"flow_in:={take}"],
                "params": {**endpoint(out, "publisher", node, host), **take_params, "republish": True, "kind": "tap",
                           "datatype": datatype, "md5sum": md5sum, "definition": definition,
                           "record_path": str(rec / record), **queues},
                "publishes": [out], "subscribes": [take]}

    if flow.kind == "echo":  # source -> echoer on the far host (republishes on <topic>/echo) -> sink here
        cls = message_class(flow_datatype(flow))
        node = f"flow_{name}_echo"
        echoer = relay(node, flow.to[0], topic, endpoint(topic, "subscriber", node, flow.to[0]),
                       f"flow_{name}_echo.csv", cls._type, cls._md5sum, cls._full_text, out=echo_topic(flow))
        back = sink(f"flow_{name}_sink", flow.from_, f"flow_{name}_rx.csv", echo_topic(flow))
        return [back, echoer, _source(flow, topic, rec, queues, run_dir, node_binary, endpoint, relayed)]

    sinks = [sink(node, host, record, topic) for node, host, record in sink_names(flow)]
    if flow.kind in ("generic", "camera"):
        return sinks + [_source(flow, topic, rec, queues, run_dir, node_binary, endpoint, relayed)]

    local_in = {"transport": "tcp_nodelay"}   # the tap's input is a topic of its own host (ROS 1)
    if flow.kind == "topic":  # the live topic -> relay recording each send (network topic) -> sinks
        cls = message_class(flow.datatype)
        return sinks + [relay(f"flow_{name}_relay", flow.from_, flow.source_topic, local_in,
                              f"flow_{name}_tx.csv", cls._type, cls._md5sum, cls._full_text)]

    # lidar_bag: rosbag play (local topic) -> relay recording each send (network topic) -> sinks.
    from .bags import cached_lidar_bag, message_type_of  # noqa: PLC0415
    bag = Path(flow.bag) if flow.bag else cached_lidar_bag(flow.count or 1200, 1.0 / flow.period)
    local = f"{topic}_local"
    tap = relay(f"flow_{name}_relay", flow.from_, local, local_in, f"flow_{name}_tx.csv",
                *message_type_of(bag, flow.bag_topic))
    play_args = ["rosbag", "play", "--quiet", "--wait-for-subscribers", f"--delay={max(flow.start_delay, 1.0)}",
                 str(bag), f"{flow.bag_topic}:={local}", f"__name:=flow_{name}_play"]
    if flow.count:
        play_args.insert(3, f"--duration={flow.count * flow.period}")
    play = {"name": f"flow_{name}_play", "host": flow.from_, "argv": play_args, "params": {},
            "publishes": [local], "subscribes": []}
    return sinks + [tap, play]


def _source(flow: "Flow", topic: str, rec: Path, queues: dict, run_dir: Path, node_binary,
            endpoint: Callable[[str, str, str, str], dict[str, Any]], relayed: bool) -> dict[str, Any]:
    """``flow_source`` publishing the flow's messages (generic, echo, camera). Its drain ends
    once its connections acknowledged everything, unless relays carry the flow."""
    node = f"flow_{flow.name}_source"
    params = {**endpoint(topic, "publisher", node, flow.from_), "period": flow.period, "count": flow.count,
              "start_delay": flow.start_delay, "record_path": str(rec / f"flow_{flow.name}_tx.csv"),
              "drain_until_acked": not relayed, **queues}
    if flow.send_jitter:
        params.update(send_jitter=flow.send_jitter, seed=zlib.crc32(flow.name.encode()) % 2**31 or 1)  # XML-RPC int
    if flow.kind in ("generic", "echo"):
        params.update(message="loop_sample", size_bytes=message_bytes(flow))
    elif flow.encoding == "raw":
        params.update(message="image", width=flow.width, height=flow.height)
    else:
        frames = camera_frames(run_dir / "flows" / flow.name, flow.width, flow.height, flow.jpeg_quality)
        params.update(message="compressed_image", frames_dir=str(frames))
    return {"name": node, "host": flow.from_, "argv": [str(node_binary("flow_source")), f"__name:={node}",
                                                       f"flow:={topic}"],
            "params": params, "publishes": [topic], "subscribes": []}


def flow_connections(procs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(topic, publisher node, subscriber node) of every connection of a flow that crosses
    between hosts, from what each of its processes publishes and subscribes."""
    return [(topic, "/" + pub["name"], "/" + sub["name"]) for sub in procs for topic in sub["subscribes"]
            for pub in procs if topic in pub["publishes"] and pub["host"] != sub["host"]]
