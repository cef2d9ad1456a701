"""Two (or three) hosts on one machine: network namespaces joined by an emulated link.

::

    from netloop.testbed import Testbed, load_profile, profile_names

    profile_names()                        # ['cellular', 'ethernet', 'loopback', 'shaped', ...]
    prof = load_profile("shaped", {"delay_ms": 20})   # validated; ConfigError names key+allowed
    with Testbed(prof, log_dir=run_dir) as tb:        # up() ... down(), also on exceptions
        tb.hosts                           # ['robot', 'operator'] (+ 'relay' for 2-hop)
        tb.exec_prefix("robot")            # ['ip', 'netns', 'exec', 'nl3f2a-robot']; [] loopback
        tb.address("operator")             # '10.77.0.2' (ROS_IP); '127.0.0.1' for loopback
        tb.health()                        # {'valid': True, 'reason': 'ok', 'max_lag_ms': ...}
        tb.metadata()                      # profile, parameters, emulator stats

Hosts are namespaces ``nl<id>-robot``, ``nl<id>-operator`` (``nl<id>-relay``) with ``lo``
up and one interface ``net0`` in 10.77.0.0/24 (robot .1, operator .2, relay .3). ``<id>``
is 4 random hex digits, unique among live testbeds. ``/run/netloop/<id>.json`` records
what was created and by whom; leftovers of a crashed owner are removed by the next ``up()``.
Everything except ``loopback`` needs root. Child processes die with their parent.

Link types (``type`` in ``config/links/*.yaml``): ``loopback``, ``ethernet`` (veth + htb),
``ns3_wifi`` (802.11a in ns-3, real time; 1 or 2 hops), ``shaped`` (userspace
rate/delay/jitter/loss emulator). See :mod:`netloop.testbed.links`.
"""
from netloop.schema import ConfigError

from .profiles import load_profile, profile_names, validate_profile
from .testbed import Testbed
from .util import TestbedError

__all__ = ["Testbed", "TestbedError", "ConfigError", "load_profile", "profile_names",
           "validate_profile"]
