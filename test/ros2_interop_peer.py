"""A real ROS 2 node for test_ros2_interop.py: rclpy on rmw_fastrtps_cpp (ROS 2 Jazzy from PyPI),
run with the ROS 2 environment's own Python (netloop.ros2.distro) in a network namespace of its
own, with ROS 2's defaults (multicast discovery, the default QoS: reliable, volatile, keep last
10). It knows nothing of netloop but ROS 2's message types (sensor_msgs/msg/Image, and
netloop/msg/LoopSample from netloop's interface package built by make build).

One process serves every case of the test module. Per line on stdin, a JSON case
  {"domain": D, "listen": {topic: "image"|"loop"}, "talk": {topic: "image"|"loop"},
   "count": N, "seconds": S}
makes a new rclpy context on ROS_DOMAIN_ID D with a node "interop_peer" that subscribes each
"listen" topic and advertises each "talk" topic, and prints "ready". From the line "go" on (the
test says it once netloop's receivers are up) it publishes N messages on each talk topic, every
50 ms while a subscription is matched. Once it has N messages of each listen topic and has sent
its own (or after S seconds) it prints one JSON line: what it received (each message's fields),
what it sent (the stamps), and the ROS graph it saw (topics with their types, nodes). Then the
context is shut down and the next case is read.
"""
import hashlib
import json
import os
import select
import time

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import Image

from netloop.msg import LoopSample

TYPES = {"image": Image, "loop": LoopSample}
PERIOD_S = 0.05
LINGER_S = 0.5        # after the last send: reliable samples still on their way


def stamp_ns(t):
    return t.sec * 10**9 + t.nanosec


def fields(kind, m):
    """What the test checks of a received message."""
    if kind == "image":
        return {"frame_id": m.header.frame_id, "stamp_ns": stamp_ns(m.header.stamp), "width": m.width,
                "height": m.height, "encoding": m.encoding, "is_bigendian": m.is_bigendian, "step": m.step,
                "sha256": hashlib.sha256(bytes(m.data)).hexdigest()}
    return {"seq": m.seq, "value": m.value, "stamp_ns": stamp_ns(m.stamp), "answer_seq": m.answer_seq,
            "answer_stamp_ns": stamp_ns(m.answer_stamp), "padding": len(m.padding), "padding_sum": sum(m.padding)}


def message(kind, k, now_ns):
    """The k-th message this node sends: an 8x4 rgb8 image of bytes k..k+95, or a LoopSample."""
    if kind == "image":
        m = Image(width=8, height=4, encoding="rgb8", step=24, data=bytes((k + i) % 256 for i in range(96)))
        m.header.frame_id = "ros2_camera"
        m.header.stamp.sec, m.header.stamp.nanosec = divmod(now_ns, 10**9)
        return m
    m = LoopSample(seq=k, value=0.5 * k, answer_seq=-1, padding=[k % 256] * 16)
    m.stamp.sec, m.stamp.nanosec = divmod(now_ns, 10**9)
    return m


class Stdin:
    """Lines of the standard input, read unbuffered (a "go" may come while a case runs)."""

    def __init__(self):
        self.buf = b""

    def line(self, timeout=None):
        """The next line, None when none comes within ``timeout`` s, "" at the end of input."""
        while b"\n" not in self.buf:
            if not select.select([0], [], [], timeout)[0]:
                return None
            chunk = os.read(0, 4096)
            if not chunk:
                return ""
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode() + "\n"


def run_case(case, stdin):
    ctx = Context()
    rclpy.init(context=ctx, domain_id=case["domain"])
    node = Node("interop_peer", context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    got = {topic: [] for topic in case["listen"]}
    for topic, kind in case["listen"].items():
        node.create_subscription(TYPES[kind], topic, lambda m, t=topic, k=kind: got[t].append(fields(k, m)), 10)
    pubs = {topic: (kind, node.create_publisher(TYPES[kind], topic, 10)) for topic, kind in case["talk"].items()}
    sent = {topic: [] for topic in pubs}
    print("ready", flush=True)
    n, deadline, next_send, done_at, go = case["count"], time.monotonic() + case["seconds"], 0.0, None, False
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.01)
        now = time.monotonic()
        if not go:
            go = (stdin.line(0) or "").strip() == "go"
        if go and now >= next_send:
            next_send = now + PERIOD_S
            for topic, (kind, pub) in pubs.items():
                if len(sent[topic]) < n and pub.get_subscription_count() > 0:
                    t = time.time_ns()
                    pub.publish(message(kind, len(sent[topic]), t))
                    sent[topic].append(t)
        complete = all(len(v) >= n for v in got.values()) and all(len(v) >= n for v in sent.values())
        if complete and done_at is None:
            done_at = now
        if done_at is not None and now - done_at >= LINGER_S:
            break
    report = {"received": got, "sent": sent, "topics": dict(node.get_topic_names_and_types()),
              "nodes": ["/".join(p for p in (ns.rstrip("/"), name)) for name, ns in node.get_node_names_and_namespaces()],
              "rmw": rclpy.get_rmw_implementation_identifier()}
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=ctx)
    print(json.dumps(report), flush=True)


def main():
    stdin = Stdin()
    while line := stdin.line():
        if line.strip():
            run_case(json.loads(line), stdin)


if __name__ == "__main__":
    main()
