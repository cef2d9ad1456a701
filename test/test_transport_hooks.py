"""What a run asks a transport instead of testing its class: whether it is a ROS 2 transport
(its ``middleware``), and its run hooks, which do nothing for a ROS 1 transport. (What they do
for a ROS 2 one: test_transport_ros2's runs.)"""
from __future__ import annotations

from netloop.transports import get_transport, transport_names
from netloop.transports.base import Transport
from netloop.transports.ros2 import MIDDLEWARES


def test_only_ros2_transports_name_a_middleware():
    assert Transport.middleware is None
    conns = [("/y", "/plant", "/controller")]
    for name in transport_names():
        t = get_transport(name)
        if name in MIDDLEWARES:
            assert t.middleware == name
            assert t.run_record() == {}     # never started: nothing to record
        else:
            assert t.middleware is None
            assert t.native_connections(conns) == []
            assert t.unmatched([], lambda host, path: None) == []
            assert t.negotiated({"/y": "TCPROS"}, []) == {"/y": "TCPROS"}
            assert t.run_record() == {}
