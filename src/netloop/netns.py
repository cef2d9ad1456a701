"""Calling into a network namespace from this process.

Network namespaces are per thread in Linux: a thread that calls setns(2) on a namespace
makes its new sockets there. :class:`NetnsCaller` keeps one such thread per namespace and
runs functions on it, so the runner can reach the ROS master and nodes on a testbed host
(e.g. XML-RPC to 10.77.0.2) while the rest of the process stays in its own namespace.
"""
from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _enter(name: str) -> None:
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into network namespace {name!r}: {os.strerror(err)}")
    finally:
        os.close(fd)


class NetnsCaller:
    """Runs calls inside network namespace ``name`` (or directly when ``name`` is None)."""

    def __init__(self, name: str | None):
        self.name = name
        self._pool = (ThreadPoolExecutor(1, thread_name_prefix=f"netns-{name}", initializer=_enter,
                                         initargs=(name,)) if name else None)

    def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._pool is None:
            return fn(*args)
        return self._pool.submit(fn, *args).result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
