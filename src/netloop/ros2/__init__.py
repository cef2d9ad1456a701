"""ROS 2's conventions and the middlewares' configuration, as netloop's Python side needs them.

  - :mod:`.qos`     ROS 2's QoS profiles by name (``default``, ``sensor_data``,
                    ``transient_local``), the overrides of reliability, durability and depth
                    (transport options, ``loop.qos``, ``flows[].qos``), validation.
  - :mod:`.config`  per host, the middleware's own configuration file in the run directory:
                    Cyclone DDS XML, Fast DDS XML profiles, Zenoh JSON5 (discovery by multicast
                    or a peers list, the host's interface, message sizes for 802.11).
  - :mod:`.names`   ROS 2's topic and type names, rmw_zenoh's key expressions and RIHS01 type
                    hashes (the same rules as the C++ side's ``netloop/ros2/names.h``).

The middlewares themselves are C++ (``libnetloop_ros2``: ``include/netloop/ros2/``); the nodes
take the parameters :meth:`netloop.transports.ros2.Ros2Transport.endpoint_params` gives.
"""
