"""The Testbed: hosts as network namespaces joined by an emulated link.

See :mod:`netloop.testbed` for the API. Life cycle of ``up()``:

1. refuse early: profile invalid (at construction), not root, program missing;
2. under the state lock: clean leftovers of crashed runs, pick an id, write the record;
3. create namespaces ``nl<id>-robot``, ``nl<id>-operator`` (``-relay``), and for tap-based
   links ``nl<id>-link``; ``lo`` up, IPv6 off (no router/neighbour chatter on the
   emulated link), forwarding on in the relay;
4. bring the link up. Any failure tears down what exists and re-raises.

``down()`` stops the link's processes, deletes the namespaces (their interfaces go with
them) and the record. It is idempotent and also runs at interpreter exit and on SIGTERM /
SIGHUP (turned into SystemExit when the process had no handler of its own).
"""
from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Sequence

from . import interfaces, state, util
from .links import LinkContext, host_address, make_link
from .profiles import LinkProfile, link_capacity_mbit, validate_profile
from .util import TestbedError
from netloop.hosts import Hosts, read_here
from netloop.schema import ConfigError

log = logging.getLogger("netloop.testbed")

_LIVE: set["Testbed"] = set()
_SAVED_HANDLERS: dict = {}  # signal -> handler before the first live testbed installed ours
_EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _down_all_at_exit() -> None:
    for tb in list(_LIVE):
        try:
            tb.down()
        except Exception as err:  # pragma: no cover - best effort at exit
            log.error("testbed %s teardown at exit failed: %s", tb.id, err)


atexit.register(_down_all_at_exit)


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)


class Testbed(Hosts):
    """Hosts (network namespaces) joined by the emulated link a profile describes.

    ``profile`` is a typed profile from :func:`load_profile`, or a mapping of its keys (it is
    validated again here, so nothing is created for an invalid one). ``log_dir`` receives the
    emulator's log and stats files; without it they live in ``/run/netloop/<id>/`` and are
    removed by ``down()``.
    Start it from the main thread (or a thread that outlives the testbed): the emulator
    processes get SIGKILL when the thread that started them ends (PR_SET_PDEATHSIG).
    ``persistent`` marks the record as made by ``netloop testbed up`` (its keeper process
    is the owner), so that ``netloop testbed down`` finds it.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, profile: LinkProfile | dict, log_dir: Path | str | None = None, *,
                 persistent: bool = False):
        self.profile = validate_profile(profile)
        self.name = self.profile.name
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.persistent = persistent
        self._link = make_link(self.profile)
        self.id: str | None = None
        self._netns: dict[str, str] = {}
        self._record: dict | None = None
        self._is_up = False
        self._work_dir: Path | None = None
        self.up_time_s: float | None = None
        self.down_time_s: float | None = None
        self.leftovers_cleaned: list[dict] = []

    # --- public API ----------------------------------------------------------------------
    @property
    def hosts(self) -> list[str]:
        """Host names, e.g. ['robot', 'operator'] or ['robot', 'relay', 'operator']."""
        return list(self._link.hosts)

    @property
    def is_loopback(self) -> bool:
        return self.profile.type == "loopback"

    @property
    def is_up(self) -> bool:
        return self._is_up

    def _check_host(self, host: str) -> None:
        if host not in self._link.hosts:
            raise ConfigError("host", f"unknown host {host!r} for link profile "
                                      f"'{self.name}'; allowed: {', '.join(self.hosts)}")

    def exec_prefix(self, host: str) -> list[str]:
        """Command prefix that runs a program on ``host`` ([] for loopback)."""
        self._check_host(host)
        if self.is_loopback:
            return []
        if not self._is_up:
            raise TestbedError("testbed is not up: call up() first")
        return ["ip", "netns", "exec", self._netns[host]]

    def command(self, host: str, argv: list[str], env: dict[str, str] | None) -> tuple[list[str], dict | None, bool]:
        """(argv, env, remote) that start ``argv`` on ``host``: behind :meth:`exec_prefix`; never
        remote (:class:`netloop.hosts.Hosts`)."""
        return self.exec_prefix(host) + list(argv), env, False

    def translate(self, host: str, value):
        """``value`` as ``host`` sees it: the same (every host shares this file system)."""
        return value

    def is_remote(self, host: str) -> bool:
        """Never: every namespace is on this machine."""
        return False

    def read_text(self, host: str, path: str) -> str | None:
        """The file ``path``: namespaces share this machine's file system."""
        return read_here(path)

    def interfaces(self) -> tuple[dict[str, str], dict[str, int]]:
        """Per host its link interface and MTU: ``lo`` for loopback, else ``net0`` with the
        profile's MTU."""
        if self.is_loopback:
            return {h: "lo" for h in self.hosts}, {h: 65536 for h in self.hosts}
        return {h: "net0" for h in self.hosts}, {h: int(self.profile.mtu) for h in self.hosts}   # every other type has one

    def records_problems(self) -> list[str]:
        """None: the namespaces write into the run directory directly."""
        return []

    def set_transmitting(self, hosts: str | Sequence[str], on: bool) -> None:
        """An outage of ``hosts`` (a host or several; ``on`` False: everything they send is
        dropped at their interface) or its end, for every host at the same time; see
        :meth:`netloop.testbed.links.Link.set_transmitting`."""
        hosts = [hosts] if isinstance(hosts, str) else list(hosts)
        for host in hosts:
            self._check_host(host)
        if self.is_loopback or not self._is_up:
            raise TestbedError("outages need a testbed that is up, with interfaces (not loopback)")
        self._link.set_transmitting(hosts, on)

    def set_interface(self, host: str, up: bool) -> None:
        """An interface outage of ``host`` (``up`` False: its net0 goes down, the kernel drops its
        routes and its sockets get errors; on Wi-Fi its station leaves the network) or its end
        (net0 up, routes restored, the station rejoins); see :mod:`netloop.testbed.interfaces`."""
        self._check_host(host)
        if self.is_loopback or not self._is_up:
            raise TestbedError("interface outages need a testbed that is up, with interfaces (not loopback)")
        if up:
            interfaces.bring_up(self._link, host)
        else:
            interfaces.bring_down(self._link, host)

    def interface_is_up(self, host: str) -> bool:
        """Whether ``host``'s net0 is up (False during an interface outage)."""
        self._check_host(host)
        if self.is_loopback or not self._is_up:
            raise TestbedError("a loopback testbed, or one that is not up, has no interfaces")
        return interfaces.is_up(self._link, host)

    def station_events(self) -> list[dict]:
        """The Wi-Fi emulator's "station" lines (a station leaving, rejoining, associating), each
        with its ``host``; [] on other links."""
        return self._link.station_events() if self._link.ctx is not None else []

    @property
    def station_queue_stats(self) -> bool:
        """Whether the emulator's stats lines carry each station's MAC queue statistics
        (:attr:`netloop.testbed.link_base.Link.station_queue_stats`: ns-3's Wi-Fi)."""
        return self._link.station_queue_stats

    def emulator_stats(self) -> list[dict]:
        """The link emulator's statistics lines so far ("stats" and "final"); [] without an
        emulator (loopback, ethernet) or before :meth:`up`."""
        return self._link.emulator_stats() if self._is_up else []

    def set_loss(self, host: str | None, probability: float) -> None:
        """A loss burst (``probability`` > 0) on what ``host`` sends (None: every host), or its
        end (0); see :meth:`netloop.testbed.links.Link.set_loss`."""
        if host is not None:
            self._check_host(host)
        if self.is_loopback or not self._is_up:
            raise TestbedError("loss bursts need a testbed that is up, with an emulated link (not loopback)")
        self._link.set_loss(host, probability)

    def netns(self, host: str) -> str | None:
        """Namespace name of ``host`` (None for loopback)."""
        self._check_host(host)
        return None if self.is_loopback else self._netns.get(host)

    @property
    def link_mbit(self) -> float | None:
        """The link's nominal capacity [Mbit/s] (None: no limit), as the relays pace to it."""
        return link_capacity_mbit(self.profile)

    def address(self, host: str) -> str:
        """IPv4 address other hosts reach ``host`` at (use as ROS_IP)."""
        self._check_host(host)
        return "127.0.0.1" if self.is_loopback else host_address(host)

    def up(self) -> "Testbed":
        """Create namespaces and link. Calling it again while up does nothing."""
        if self._is_up:
            return self
        t0 = time.monotonic()
        if self.is_loopback:
            self._link.up(LinkContext("", {}, None, Path(".")))
            self._is_up = True
            self.up_time_s = time.monotonic() - t0
            return self
        if os.geteuid() != 0:
            raise TestbedError(f"link profile '{self.name}' needs root (it creates network "
                               "namespaces); use the 'loopback' profile")
        self._link.prerequisites()
        with state.lock():
            self.leftovers_cleaned = state.cleanup_stale()
            self.id = state.new_id()
            roles = self.hosts + (["link"] if self._link.uses_link_netns else [])
            self._netns = {r: state.ns_name(self.id, r) for r in roles}
            if self.log_dir is not None:
                self._work_dir = self.log_dir
                work_owned = None
            else:
                self._work_dir = state.STATE_DIR / self.id
                work_owned = str(self._work_dir)
            self._record = state.new_record(self.id, self.profile, self.persistent,
                                            list(self._netns.values()), work_owned)
            self._record["hosts"] = {h: {"netns": self._netns[h], "address": host_address(h)}
                                     for h in self.hosts}
            state.save(self._record)
        _LIVE.add(self)
        self._install_signal_handlers()
        try:
            self._work_dir.mkdir(parents=True, exist_ok=True)
            self._create_namespaces()
            ctx = LinkContext(self.id, {h: self._netns[h] for h in self.hosts},
                              self._netns.get("link"), self._work_dir, self._record_pid)
            self._link.up(ctx)
            if self._link.stats_file() is not None:
                self._record["stats"] = str(self._link.stats_file())
                state.save(self._record)
        except BaseException:
            self._is_up = True  # so down() does its whole job
            self.down()
            raise
        self._is_up = True
        self.up_time_s = time.monotonic() - t0
        return self

    def down(self) -> None:
        """Remove everything up() made. Safe to call twice or after a failed up()."""
        if not self._is_up:
            return
        t0 = time.monotonic()
        errors = []
        try:
            self._link.down()
        except Exception as err:
            errors.append(f"link: {err}")
        if not self.is_loopback and self._record is not None:
            with state.lock():
                try:
                    state.cleanup_record(self._record)
                except Exception as err:
                    errors.append(f"cleanup: {err}")
        self._is_up = False
        _LIVE.discard(self)
        self._restore_signal_handlers()
        self.down_time_s = time.monotonic() - t0
        if errors:
            log.error("testbed %s teardown problems: %s", self.id, "; ".join(errors))

    def health(self, since: float | None = None, until: float | None = None) -> dict:
        """{'valid', 'reason', 'max_lag_ms', 'mean_lag_ms', 'lag_bound_ms', 'late_fraction',
        'stalls', ...}.

        ``valid`` is False when the emulator (ns-3 or the shaper) was more than the profile's
        ``lag_bound_ms`` behind real time in more than ``lag_late_fraction`` of its samples
        (0 = in any sample), or died. Links without an emulator are always valid. ``since``
        and ``until`` (time.time() values) limit the judgement to a window, e.g. one trial or
        the time a run's messages were under way: ``stalls`` lists every stall (when it began,
        how far behind, how many samples) and whether it was in the window (``counted``)."""
        out = self._link.health(since, until)
        out.setdefault("max_lag_ms", None)
        out.setdefault("lag_bound_ms", None)   # a link with an emulator gives its profile's
        return out

    def metadata(self) -> dict:
        """Profile, actual parameters and emulator statistics, for a run's metadata.json."""
        return {
            "profile": self.name, "type": self.profile.type, "params": self.profile.to_dict(),
            "capacity_mbit": self.link_mbit,   # for the report: the analysis reads no link profile
            "testbed_id": self.id,
            "hosts": {h: {"namespace": self._netns.get(h), "address": self.address(h),
                          "interface": None if self.is_loopback else "net0"}
                      for h in self.hosts},
            "subnet": None if self.is_loopback else "10.77.0.0/24",
            "link": self._link.metadata(),
            "health": self.health(),
            "up_time_s": self.up_time_s, "down_time_s": self.down_time_s,
            "leftovers_cleaned": [r["id"] for r in self.leftovers_cleaned],
        }

    def __repr__(self) -> str:
        return (f"Testbed({self.name!r}, id={self.id!r}, "
                f"{'up' if self._is_up else 'down'}, hosts={self.hosts})")

    # --- internals -----------------------------------------------------------------------
    def _record_pid(self, pid: int, what: str) -> None:
        self._record["pids"].append({"pid": pid, "start": util.proc_start_time(pid), "what": what})
        state.save(self._record)

    def _create_namespaces(self) -> None:
        ipv6 = os.path.isdir("/proc/sys/net/ipv6")
        for role, ns in self._netns.items():
            util.netns_add(ns)
            util.ip_batch(["link set dev lo up"], ns)
            settings: dict = {}
            if ipv6:
                settings.update({"net.ipv6.conf.all.disable_ipv6": 1,
                                 "net.ipv6.conf.default.disable_ipv6": 1})
            if role == "relay":
                settings.update({"net.ipv4.ip_forward": 1,
                                 "net.ipv4.conf.all.send_redirects": 0,
                                 "net.ipv4.conf.default.send_redirects": 0})
            elif role in ("robot", "operator"):
                settings.update({"net.ipv4.conf.all.accept_redirects": 0,
                                 "net.ipv4.conf.default.accept_redirects": 0})
            if settings:
                util.sysctl(ns, settings)

    @staticmethod
    def _install_signal_handlers() -> None:
        if threading.current_thread() is not threading.main_thread() or _SAVED_HANDLERS:
            return
        for sig in _EXIT_SIGNALS:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                _SAVED_HANDLERS[sig] = signal.signal(sig, _exit_on_signal)

    @staticmethod
    def _restore_signal_handlers() -> None:
        if threading.current_thread() is not threading.main_thread() or _LIVE:
            return
        for sig, prev in list(_SAVED_HANDLERS.items()):
            if signal.getsignal(sig) is _exit_on_signal:
                signal.signal(sig, prev)
            del _SAVED_HANDLERS[sig]
