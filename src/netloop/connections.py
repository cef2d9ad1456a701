"""What a node's connections really are: the transport ROS negotiated (from the node's
XML-RPC getBusInfo, as ``rosnode info`` shows it) and, for TCPROS, whether TCP_NODELAY is
set on the socket, read from the socket itself.

roscpp names each connection's socket descriptor in its bus info ("... on socket 13"); the
descriptor is duplicated out of the node with pidfd_getfd(2) (Linux >= 5.6, needs the
right to ptrace the node, e.g. the same user or root) and asked for TCP_NODELAY.
"""
from __future__ import annotations

import ctypes
import os
import re
import socket
from typing import Any

from .master import RosMaster
from .netns import NetnsCaller

_SYS_PIDFD_GETFD = 438  # x86_64 and aarch64 generic table
_libc = ctypes.CDLL(None, use_errno=True)
_SOCKET_RE = re.compile(r"on socket (\d+)\]")


def socket_tcp_nodelay(pid: int, fd: int) -> bool | None:
    """TCP_NODELAY of descriptor ``fd`` of process ``pid``; None when it cannot be read."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        local = _libc.syscall(_SYS_PIDFD_GETFD, pidfd, fd, 0)
        if local < 0:
            return None
        try:
            sock = socket.socket(fileno=local)
        except OSError:
            os.close(local)
            return None
        try:
            return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        finally:
            sock.detach()
            os.close(local)
    finally:
        os.close(pidfd)


def node_connections(master: RosMaster, node: str, caller: NetnsCaller | None = None) -> list[dict[str, Any]]:
    """Every connection of a node (by name), with ``tcp_nodelay`` read from the socket for TCPROS.
    ``caller``: where to ask the node from (its own host's namespace), else the master's host."""
    uri = master.lookup_node(node)
    pid = master.node_pid(uri, caller)
    out = []
    for conn in master.bus_info(uri, caller):
        conn = dict(conn)
        m = _SOCKET_RE.search(conn.get("info", ""))
        conn["tcp_nodelay"] = (socket_tcp_nodelay(pid, int(m.group(1)))
                               if m and conn["transport"] == "TCPROS" else None)
        out.append(conn)
    return out


def describe(conn: dict[str, Any]) -> str:
    """'TCPROS', 'TCPROS+NODELAY' or 'UDPROS'."""
    return conn["transport"] + ("+NODELAY" if conn.get("tcp_nodelay") else "")
