"""What a run asks a transport instead of testing its class: whether it is a ROS 2 transport
(its ``middleware``)."""
from __future__ import annotations

from netloop.run_ros2 import ros2, split_native
from netloop.transports import get_transport, transport_names
from netloop.transports.base import Transport
from netloop.transports.ros2 import MIDDLEWARES


def test_only_ros2_transports_name_a_middleware():
    assert Transport.middleware is None
    for name in transport_names():
        t = get_transport(name)
        if name in MIDDLEWARES:
            assert t.middleware == name and ros2(t) is t
        else:
            assert t.middleware is None and ros2(t) is None
            conns = [("/y", "/plant", "/controller")]
            assert split_native(t, conns) == (conns, [])
