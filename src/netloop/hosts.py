"""The hosts of a run, declared: what the runner, the transports and the loops may ask of them.

Three classes implement :class:`Hosts`, each explicitly (they subclass it; a missing method is
a TypeError when the class is instantiated, not an AttributeError in the middle of a run):

* :class:`netloop.testbed.Testbed`: network namespaces joined by an emulated link (or one
  loopback host set);
* :class:`netloop.machines.RealHosts`: real machines of a hosts file, reached over SSH;
* :class:`netloop.cpulimit.LimitedHosts`: either of them seen through the run's CPU limits
  (every limited host's commands join its cgroup); it forwards each method by name.

Link faults (outages, loss bursts) are not part of it: they need an emulated link, which only
:class:`~netloop.testbed.Testbed` has, and the experiment file refuses them on real machines.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any


class Hosts(ABC):
    """The hosts of one run: names, addresses, how to start a command on one, and the record
    of the network they share."""

    @property
    @abstractmethod
    def hosts(self) -> list[str]:
        """Host names, e.g. ['robot', 'operator']."""

    @property
    @abstractmethod
    def link_mbit(self) -> float | None:
        """The network's usable rate [Mbit/s] (None: unknown or unlimited)."""

    @abstractmethod
    def address(self, host: str) -> str:
        """The IPv4 address the other hosts reach ``host`` at (its ROS_IP)."""

    @abstractmethod
    def netns(self, host: str) -> str | None:
        """The network namespace of ``host`` (None: none, the host is this machine's or another)."""

    @abstractmethod
    def exec_prefix(self, host: str) -> list[str]:
        """A command prefix that runs a helper program of this machine in ``host``'s network."""

    @abstractmethod
    def command(self, host: str, argv: list[str],
                env: dict[str, str] | None) -> tuple[list[str], dict | None, bool]:
        """(argv, env, remote) that start ``argv`` on ``host`` with ``env``'s ROS settings;
        ``remote``: the process runs on another machine (its exit status 255 is a lost SSH)."""

    @abstractmethod
    def translate(self, host: str, value: Any) -> Any:
        """``value`` (a path, or a list/dict of them) as ``host`` sees it."""

    @abstractmethod
    def is_remote(self, host: str) -> bool:
        """Whether ``host`` is another machine than this one."""

    @abstractmethod
    def read_text(self, host: str, path: str) -> str | None:
        """The text of the file ``path`` (a path of this machine, translated) on ``host``;
        None when it is not there (yet)."""

    @abstractmethod
    def interfaces(self) -> tuple[dict[str, str], dict[str, int]]:
        """Per host its link interface and MTU, where known."""

    @abstractmethod
    def health(self, since: float | None = None, until: float | None = None) -> dict:
        """Whether the link kept real time over [since, until] ('valid', 'reason', 'stalls', ...)."""

    @abstractmethod
    def metadata(self) -> dict:
        """The record of the hosts and their network for metadata.json's ``link``."""

    @abstractmethod
    def records_problems(self) -> list[str]:
        """Why records of the run are missing or suspect (a machine's records not fetched, its
        nodes stopped by their watchdog): each makes the run ``failed``; [] when none."""

    @abstractmethod
    def up(self) -> "Hosts":
        """Bring the hosts up (namespaces and link, or machines checked); again does nothing."""

    @abstractmethod
    def down(self) -> None:
        """Take them down (real machines: their records come home); again does nothing."""

    def __enter__(self) -> "Hosts":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()


def read_here(path: str) -> str | None:
    """The text of a file of this machine (None when it is not there or not text)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
