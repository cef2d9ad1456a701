"""The run's ROS master: its port is taken below the kernel's ephemeral range, and a port
that another process took between the choice and rosmaster's bind is replaced, not fatal."""
from __future__ import annotations

import socket

import pytest

from netloop import master as master_mod
from netloop.master import RosMaster, free_port
from netloop.processes import ProcessGroup


def test_free_ports_are_below_the_ephemeral_range_and_free():
    low = master_mod._ephemeral_low()
    for _ in range(20):
        port = free_port()
        assert 1024 <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))   # still free: binds


@pytest.mark.integration   # starts rosmaster (make test-fast leaves it out)
def test_a_port_taken_before_rosmaster_binds_is_replaced(tmp_path, ros_env, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        chosen = iter([busy])
        real = master_mod.free_port
        monkeypatch.setattr(master_mod, "free_port", lambda host="127.0.0.1": next(chosen, None) or real(host))
        with ProcessGroup(tmp_path / "logs") as group:
            master = RosMaster(group, dict(ros_env, ROS_LOG_DIR=str(tmp_path / "ros"), ROS_HOME=str(tmp_path / "ros")))
            assert master.port == busy
            master.start()
            assert master.port != busy and master.ready()
            assert "Address already in use" in (tmp_path / "logs" / "master.log").read_text()
            # the failed attempt is not one of the run's processes (its exit status is not the master's)
            assert [p.name for p in group.processes].count("master") == 1
            group.stop_all()
