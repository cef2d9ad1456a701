"""A ROS master started for one run, on a free port, and the parameter server calls the
runner needs (through the master's XML-RPC API, as rosparam does)."""
from __future__ import annotations

import os
import random
import socket
import time
import xmlrpc.client
from typing import Any

from .netns import NetnsCaller
from .polling import wait_for as _wait_for
from .processes import CORE, ManagedProcess, ProcessGroup, log_tail
from .transports.mm_sync import rpc as timed_rpc   # an XML-RPC proxy whose calls time out

#: the package's one polling helper (netloop.polling), also importable from here
wait_for = _wait_for

CALLER_ID = "/netloop_runner"
#: rosout from Debian's ROS packages or ROS Noetic (roscore starts the same binary).
ROSOUT_BINARY = next((p for p in ("/opt/ros/noetic/lib/rosout/rosout", "/usr/lib/rosout/rosout")
                      if os.path.exists(p)), "rosout")


#: what rosmaster logs when its port is taken (it then keeps running without its server)
PORT_IN_USE = "is already in use"


def _size(path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _read_from(path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free now on ``host`` (of the calling namespace), taken below the
    kernel's ephemeral range (``ip_local_port_range``): a port from that range can be given
    to an outgoing connection between this check and the server's bind ("Address already
    in use"); one below it can only be taken by another listener."""
    low = _ephemeral_low()
    first = max(1024, low - 12000)
    rng = random.Random()
    for _ in range(64):
        port = rng.randrange(first, low) if low > first else 0
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return s.getsockname()[1]
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class MasterError(RuntimeError):
    pass


class RosMaster:
    """The ROS core of a run on a host: ``rosmaster --core -p PORT`` and the ``rosout`` node,
    what ``roscore`` starts, but started here so each is a process of the run's group (and
    stopped by its PID). ``uri`` is what nodes put in ROS_MASTER_URI."""

    def __init__(self, group: ProcessGroup, env: dict[str, str], address: str = "127.0.0.1",
                 port: int | None = None, prefix: list[str] | None = None, name: str = "master",
                 netns: str | None = None, command=None):
        self.group, self.env, self.address, self.prefix, self.name = group, env, address, prefix or [], name
        #: command(argv, env) -> (argv, env, remote): how to start a process on the master's
        #: host (a testbed's or real machines' ``command``); default: behind ``prefix``
        self.command = command or (lambda argv, env: (self.prefix + list(argv), env, False))
        #: runs this process's XML-RPC calls in the master's network namespace
        self.rpc_caller = NetnsCaller(netns)
        self._port_chosen_here = port is None
        self.port = port or free_port()
        self.uri = f"http://{address}:{self.port}/"
        self.process: ManagedProcess | None = None
        self._log_start = 0
        self.rosout: ManagedProcess | None = None

    def _core_env(self) -> dict[str, str]:
        """The environment of rosmaster and rosout: this master's URI (its port may have been
        replaced since the last start) and address."""
        return dict(self.env, ROS_MASTER_URI=self.uri, ROS_IP=self.address)

    def launch(self) -> None:
        """Start rosmaster without waiting for it (:meth:`start` waits): the masters of a
        multi-master run are launched together, then awaited one by one (start_together)."""
        argv, penv, remote = self.command(["rosmaster", "--core", "-p", str(self.port), "-w", "3"], self._core_env())
        self._log_start = _size(self.group.log_dir / f"{self.name}.log")   # the log is appended to
        self.process = self.group.start(self.name, argv, env=penv, remote=remote, role=CORE)

    def start(self, timeout: float = 20.0) -> "RosMaster":
        """Start rosmaster (unless :meth:`launch` did), wait until it answers, then start rosout;
        a port chosen here that another process took meanwhile (rosmaster: "port ... is already
        in use") is replaced by another, twice at most."""
        for attempt in range(3):
            try:
                if self.process is None:
                    self.launch()
                return self._await_ready(timeout)
            except MasterError as e:
                if not (self._port_chosen_here and attempt < 2 and PORT_IN_USE in str(e)):
                    raise
                if self.process in self.group.processes:   # it ended; not one of the run's
                    self.group.processes.remove(self.process)
                self.process = None
                self.port = free_port()
                self.uri = f"http://{self.address}:{self.port}/"
        raise AssertionError("unreachable")

    def _await_ready(self, timeout: float) -> "RosMaster":
        deadline = time.monotonic() + timeout
        while not self.ready():
            if PORT_IN_USE in _read_from(self.process.log_path, self._log_start):   # it lives on, serving nothing
                self.group.stop(self.process, grace=1.0)
                raise MasterError(f"rosmaster on {self.uri}: {PORT_IN_USE}:\n{log_tail(self.process.log_path)}")
            if self.process.poll() is not None:
                raise MasterError(f"rosmaster exited with status {self.process.poll()}:\n"
                                  f"{log_tail(self.process.log_path)}")
            if time.monotonic() > deadline:
                raise MasterError(f"rosmaster on {self.uri} not answering after {timeout:.0f} s:\n"
                                  f"{log_tail(self.process.log_path)}")
            time.sleep(0.05)
        self.set_params({"run_id": self.name + "-" + str(self.port)}, "/")
        argv, penv, remote = self.command([ROSOUT_BINARY, "__name:=rosout"], self._core_env())
        self.rosout = self.group.start(f"{self.name}-rosout", argv, env=penv, remote=remote, role=CORE)
        return self

    def rpc(self, uri: str, method: str, *args: Any, caller: NetnsCaller | None = None) -> Any:
        """An XML-RPC call to the master or a node, made from the master's host (or through
        ``caller``: from a node's own host, so that asking it does not cross the link)."""
        return (caller or self.rpc_caller)(lambda: getattr(xmlrpc.client.ServerProxy(uri), method)(CALLER_ID, *args))

    def ready(self, timeout: float = 2.0) -> bool:
        """The master answers getPid within ``timeout`` seconds (another server on its port
        may accept the connection and never answer)."""
        def call():
            return timed_rpc(self.uri, timeout).getPid(CALLER_ID)
        try:
            code, _, _ = self.rpc_caller(call)
            return code == 1
        except (OSError, xmlrpc.client.Error):
            return False

    def set_params(self, params: dict[str, Any], namespace: str = "/") -> None:
        """Set every leaf of a nested dict below ``namespace``."""
        for key, value in params.items():
            name = namespace.rstrip("/") + "/" + key
            code, msg, _ = self.rpc(self.uri, "setParam", name, value)
            if code != 1:
                raise MasterError(f"setParam {name}: {msg}")

    def lookup_node(self, name: str) -> str:
        code, msg, uri = self.rpc(self.uri, "lookupNode", name)
        if code != 1:
            raise MasterError(f"lookupNode {name}: {msg}")
        return uri

    def bus_info(self, node_uri: str, caller: NetnsCaller | None = None) -> list[dict[str, Any]]:
        """A node's connections, as ``rosnode info`` shows them (XML-RPC getBusInfo)."""
        code, msg, info = self.rpc(node_uri, "getBusInfo", caller=caller)
        if code != 1:
            raise MasterError(f"getBusInfo {node_uri}: {msg}")
        keys = ("id", "destination", "direction", "transport", "topic", "connected", "info")
        return [dict(zip(keys, row)) for row in info]

    def node_pid(self, node_uri: str, caller: NetnsCaller | None = None) -> int:
        code, msg, pid = self.rpc(node_uri, "getPid", caller=caller)
        if code != 1:
            raise MasterError(f"getPid {node_uri}: {msg}")
        return int(pid)

    @staticmethod
    def start_together(masters: "list[RosMaster]", timeout: float = 20.0) -> "list[RosMaster]":
        """Launch every master, then wait for each (each rosmaster takes ~0.3 s to answer, so a
        run with one per host waits once, not once per host)."""
        for master in masters:
            master.launch()
        return [master.start(timeout) for master in masters]

    def stop(self) -> None:
        for proc in (self.rosout, self.process):
            if proc is not None:
                self.group.stop(proc)
        self.rpc_caller.close()



