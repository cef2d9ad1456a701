"""netloop's master discovery and synchronisation (what multimaster_fkie's master_discovery
and master_sync do), used by the ``multimaster`` transport when multimaster_fkie is not
installed. One process per host, a ROS node of that host's master:

    python -m netloop.transports.mm_sync __name:=mm_sync_robot   (private parameters below)

Discovery (:mod:`.mm_discovery`). Heartbeats by multicast and/or unicast to the static peers
(``~discovery``: ``multicast``, ``static``, ``auto``; unicast also to a peer multicast has not
found within ``~static_after`` s, e.g. the two ends of a two-hop chain, out of each other's
radio range); foreign, malformed and own heartbeats dropped and counted. A peer not heard for
``~peer_timeout`` s is gone: everything synchronised from it is unregistered; when it
comes back (or restarts: new epoch) it is synchronised again.

Synchronisation. Every ``~sync_interval`` s the node reads its master's state
(getSystemState, getTopicTypes, lookupNode) and keeps the publishers and subscribers of
the topics in ``~sync_topics`` (all but ROS's own when empty) that are local (not
registered by this node). Peers fetch that state from its XML-RPC server
(``getLocalState``) when the version in a heartbeat changes (and every
``~refresh_interval`` s). The union of the peers' states is registered in the local master
under the remote nodes' names and XML-RPC URIs (registerPublisher / registerSubscriber):
the local master then tells local subscribers about the remote publishers
(publisherUpdate), and the subscriber connects to the publisher directly, TCPROS or UDPROS
as it asks. Entries that disappear are unregistered. A remote node whose name is already
used by a different local node is not registered (counted as a conflict: the master would
otherwise shut the local node down). What this node registered is kept in its private
parameter ``~registered``, so a restarted sync adopts (and cleans up) its predecessor's
registrations. At shutdown everything is unregistered.

Statistics every ``~stats_period`` s: on /netloop_relay/stats (netloop/MasterSyncStats) and
appended to ``~stats_path`` (JSON lines, the same report).
"""
from __future__ import annotations

import json
import os
import random
import socket
import sys
import threading
import time
import xmlrpc.client
from socketserver import ThreadingMixIn
from typing import Any
from xmlrpc.server import SimpleXMLRPCServer

from .mm_discovery import Discovery, Peer

IGNORED_TOPICS = {"/rosout", "/rosout_agg", "/netloop_relay/stats"}


class _TimeoutTransport(xmlrpc.client.Transport):
    def __init__(self, timeout: float):
        super().__init__()
        self.timeout = timeout

    def make_connection(self, host):
        conn = super().make_connection(host)
        conn.timeout = self.timeout
        return conn


def rpc(uri: str, timeout: float = 2.0) -> xmlrpc.client.ServerProxy:
    return xmlrpc.client.ServerProxy(uri, transport=_TimeoutTransport(timeout), allow_none=True)


class _Server(ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True


class MasterSync(Discovery):
    """Discovery (:class:`.mm_discovery.Discovery`) plus synchronisation: one per host."""

    def __init__(self, cfg: dict[str, Any], name: str, master_uri: str, publish_stats=None):
        self.cfg, self.name, self.master_uri = cfg, name, master_uri
        self.host, self.address = cfg["host"], cfg["address"]
        self.epoch = random.randint(1, 2**31 - 1)
        self.publish_stats = publish_stats
        self.lock = threading.RLock()
        self.stop_event = threading.Event()
        self.peers: dict[str, Peer] = {}
        self.ever_seen: set[str] = set()
        self.local: dict[str, list] = {"publishers": [], "subscribers": []}
        self._last_read: tuple | None = None
        self._last_full = 0.0
        self.version = 0
        self.registered: dict[tuple[str, str, str], dict[str, str]] = {}   # (kind, topic, node) -> uri, type, peer
        self.counters = {k: 0 for k in ("heartbeats_sent", "heartbeats_received", "malformed", "foreign", "own",
                                        "send_errors", "registered", "unregistered", "conflicts", "fetch_errors",
                                        "master_errors", "peer_lost", "peer_back", "peer_restarted")}
        self.started = time.monotonic()
        self.mcast: socket.socket | None = None
        self.mcast_ok = False
        self.mcast_error: str | None = None
        self.ucast = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.ucast.bind((self.address, cfg["port"]))
        self.server = _Server((self.address, 0), logRequests=False, allow_none=True)
        self.server.register_function(self.get_local_state, "getLocalState")
        self.rpc_uri = f"http://{self.address}:{self.server.server_address[1]}/"
        if cfg["discovery"] in ("multicast", "auto"):
            self._open_multicast()
        self._adopt_previous()

    # --- state ---------------------------------------------------------------------------
    def selected(self, topic: str) -> bool:
        if topic in IGNORED_TOPICS:
            return False
        return not self.cfg["sync_topics"] or topic in self.cfg["sync_topics"]

    def get_local_state(self) -> dict[str, Any]:
        with self.lock:
            return {"host": self.host, "epoch": self.epoch, "version": self.version, "master": self.master_uri,
                    **self.local}

    def _read_local(self) -> None:
        master = rpc(self.master_uri)
        code, msg, state = master.getSystemState(self.name)
        if code != 1:
            raise RuntimeError(f"getSystemState: {msg}")
        with self.lock:
            ours = set(self.registered)
        key = (json.dumps(state[:2], sort_keys=True), tuple(sorted(ours)))
        if key == self._last_read and time.monotonic() - self._last_full < self.cfg["refresh_interval"]:
            return  # nothing changed (a node restarted under its name is seen at the next refresh)
        code, _, types = master.getTopicTypes(self.name)
        types = dict(types) if code == 1 else {}
        uris: dict[str, str | None] = {}
        local: dict[str, list] = {"publishers": [], "subscribers": []}
        for kind, entries in (("publishers", state[0]), ("subscribers", state[1])):
            for topic, nodes in entries:
                if not self.selected(topic):
                    continue
                for node in nodes:
                    if node == self.name or (kind, topic, node) in ours:
                        continue
                    if node not in uris:
                        c, _, uri = master.lookupNode(self.name, node)
                        uris[node] = uri if c == 1 else None
                    if uris[node]:
                        local[kind].append([topic, types.get(topic, "*"), node, uris[node]])
        for k in local:
            local[k].sort()
        with self.lock:
            if local != self.local:
                self.local = local
                self.version = (self.version + 1) % (2**31 - 1)
        self._last_read, self._last_full = key, time.monotonic()

    def _fetch_peers(self) -> None:
        now = time.monotonic()
        with self.lock:
            for host, peer in list(self.peers.items()):
                if now - peer.last_seen > self.cfg["peer_timeout"]:
                    del self.peers[host]
                    self.counters["peer_lost"] += 1
            todo = [p for p in self.peers.values()
                    if p.fetched_version != p.version or now - p.fetched_at > self.cfg["refresh_interval"]]
        for peer in todo:
            try:
                state = rpc(peer.rpc, timeout=1.5).getLocalState()
            except (OSError, xmlrpc.client.Error):
                self.counters["fetch_errors"] += 1
                continue
            if not isinstance(state, dict) or state.get("epoch") != peer.epoch:
                self.counters["fetch_errors"] += 1
                continue
            with self.lock:
                peer.state, peer.fetched_version, peer.fetched_at = state, state.get("version"), now

    def _desired(self) -> dict[tuple[str, str, str], dict[str, str]]:
        out = {}
        with self.lock:
            peers = list(self.peers.values())
        for peer in peers:
            if not peer.state:
                continue
            for kind in ("publishers", "subscribers"):
                for entry in peer.state.get(kind, []):
                    if not (isinstance(entry, list) and len(entry) == 4 and all(isinstance(x, str) for x in entry)):
                        continue
                    topic, type_, node, uri = entry
                    if self.selected(topic):
                        out[(kind, topic, node)] = {"uri": uri, "type": type_, "peer": peer.host}
        return out

    def _apply(self, desired: dict[tuple[str, str, str], dict[str, str]]) -> None:
        master = rpc(self.master_uri)
        with self.lock:
            current = dict(self.registered)
        changed = False
        for key, reg in current.items():
            if key not in desired or desired[key]["uri"] != reg["uri"]:
                kind, topic, node = key
                try:
                    if kind == "publishers":
                        master.unregisterPublisher(node, topic, reg["uri"])
                    else:
                        master.unregisterSubscriber(node, topic, reg["uri"])
                    self.counters["unregistered"] += 1
                except (OSError, xmlrpc.client.Error):
                    self.counters["master_errors"] += 1
                with self.lock:
                    self.registered.pop(key, None)
                changed = True
        with self.lock:
            current = dict(self.registered)
        for key, want in desired.items():
            if key in current:
                continue
            kind, topic, node = key
            try:
                c, _, uri = master.lookupNode(self.name, node)
                ours = any(k[2] == node for k in current)
                if c == 1 and uri != want["uri"] and not ours:
                    self.counters["conflicts"] += 1
                    continue
                if kind == "publishers":
                    master.registerPublisher(node, topic, want["type"], want["uri"])
                else:
                    master.registerSubscriber(node, topic, want["type"], want["uri"])
                self.counters["registered"] += 1
            except (OSError, xmlrpc.client.Error):
                self.counters["master_errors"] += 1
                continue
            with self.lock:
                self.registered[key] = want
                current[key] = want
            changed = True
        if changed:
            self._save_registered()

    def _save_registered(self) -> None:
        with self.lock:
            value = json.dumps([[*k, v["uri"], v["type"], v["peer"]] for k, v in sorted(self.registered.items())])
        try:
            rpc(self.master_uri).setParam(self.name, self.name + "/registered", value)
        except (OSError, xmlrpc.client.Error):
            self.counters["master_errors"] += 1

    def _adopt_previous(self) -> None:
        """Registrations a previous instance of this node left in the master become ours."""
        try:
            code, _, value = rpc(self.master_uri).getParam(self.name, self.name + "/registered")
            if code == 1 and isinstance(value, str):
                for kind, topic, node, uri, type_, peer in json.loads(value):
                    self.registered[(kind, topic, node)] = {"uri": uri, "type": type_, "peer": peer}
        except (OSError, xmlrpc.client.Error, ValueError, TypeError):
            pass

    def sync_loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                self._read_local()
                self._fetch_peers()
                self._apply(self._desired())
            except (OSError, xmlrpc.client.Error, RuntimeError):
                self.counters["master_errors"] += 1
            self.stop_event.wait(self.cfg["sync_interval"])

    def unregister_all(self) -> None:
        self._apply({})

    def stats(self) -> dict[str, Any]:
        now = time.monotonic()
        with self.lock:
            return {"role": "mm_sync", "node": self.name, "host": self.host, "stamp_ns": time.time_ns(),
                    "cpu_s": time.process_time(), "discovery": self.cfg["discovery"], "multicast": self.mcast_ok,
                    "multicast_error": self.mcast_error, "epoch": self.epoch, "version": self.version,
                    "peers": {h: p.summary(now) for h, p in self.peers.items()},
                    "local": {k: len(v) for k, v in self.local.items()},
                    "registrations": len(self.registered), **self.counters}

    def run(self, is_shutdown) -> None:
        threads = [threading.Thread(target=f, daemon=True) for f in (self.discovery_loop, self.sync_loop,
                                                                    self.server.serve_forever)]
        for t in threads:
            t.start()
        stats_file = open(self.cfg["stats_path"], "a", encoding="utf-8") if self.cfg["stats_path"] else None
        try:
            next_stats = time.monotonic() + self.cfg["stats_period"]
            while not is_shutdown():
                time.sleep(0.05)
                if time.monotonic() >= next_stats:
                    next_stats += self.cfg["stats_period"]
                    self._report(stats_file)
        finally:
            self.stop_event.set()
            self.server.shutdown()
            self.unregister_all()
            self._report(stats_file)
            if stats_file:
                stats_file.close()

    def _report(self, stats_file) -> None:
        report = self.stats()
        if stats_file:
            os.write(stats_file.fileno(), (json.dumps(report) + "\n").encode())
        if self.publish_stats:
            self.publish_stats(report)


#: the parameters the multimaster transport sets from ``transport_options.multimaster`` (their
#: defaults are MultimasterOptions'; a robot's Python 3.8 cannot import the typed sections)
FROM_OPTIONS = ("discovery", "mcast_group", "mcast_port", "port", "heartbeat_hz", "peer_timeout", "static_after",
                "sync_interval")
#: the node's own parameters and their defaults
DEFAULTS: dict[str, Any] = {
    "host": None, "address": None, "domain": "", "peers": [], "allowed_peers": [], "refresh_interval": 1.0,
    "sync_topics": [], "stats_period": 1.0, "stats_path": "",
}
_MISSING = object()


def read_config(get_param) -> dict[str, Any]:
    cfg = {k: get_param("~" + k, v) for k, v in DEFAULTS.items()}
    for k in FROM_OPTIONS:
        cfg[k] = get_param("~" + k, _MISSING)
        if cfg[k] is _MISSING:
            raise SystemExit(f"mm_sync: ~{k} is not set (the multimaster transport sets it from "
                             f"transport_options.multimaster.{k})")
    if cfg["address"] is None:
        cfg["address"] = os.environ.get("ROS_IP", "127.0.0.1")
    if cfg["host"] is None:
        cfg["host"] = socket.gethostname()
    if cfg["discovery"] not in ("auto", "multicast", "static"):
        raise SystemExit(f"mm_sync: ~discovery must be auto, multicast or static, not {cfg['discovery']!r}")
    for k in ("heartbeat_hz", "peer_timeout", "sync_interval", "refresh_interval", "stats_period"):
        if not isinstance(cfg[k], (int, float)) or cfg[k] <= 0:
            raise SystemExit(f"mm_sync: ~{k} must be a positive number")
    return cfg


def stats_message(report: dict[str, Any]):
    """A report of :meth:`MasterSync.stats` as the typed netloop/MasterSyncStats message (its
    ``stamp_ns`` in ``header.stamp``)."""
    from netloop.msg import MasterSyncPeer, MasterSyncStats  # noqa: PLC0415 - generated by catkin

    fields = {k: v for k, v in report.items() if k not in ("peers", "local", "stamp_ns") and v is not None}
    peers = [MasterSyncPeer(host=h, address=p["address"] or "", via=list(p["via"]), age_s=p["age_s"],
                            epoch=p["epoch"] or 0, master=p["master"] or "", synced=p["synced"])
             for h, p in sorted(report["peers"].items())]
    message = MasterSyncStats(peers=peers, local_publishers=report["local"].get("publishers", 0),
                              local_subscribers=report["local"].get("subscribers", 0), **fields)
    message.header.stamp.secs, message.header.stamp.nsecs = divmod(report["stamp_ns"], 10**9)  # frame_id empty
    return message


def main() -> int:
    import rospy  # noqa: PLC0415

    from netloop.msg import MasterSyncStats  # noqa: PLC0415

    rospy.init_node("mm_sync", disable_signals=False)
    cfg = read_config(rospy.get_param)
    pub = rospy.Publisher("/netloop_relay/stats", MasterSyncStats, queue_size=10)
    sync = MasterSync(cfg, rospy.get_name(), os.environ["ROS_MASTER_URI"],
                      lambda report: pub.publish(stats_message(report)))
    rospy.loginfo("mm_sync %s on %s: discovery %s (multicast %s), rpc %s", cfg["host"], cfg["address"],
                  cfg["discovery"], "ok" if sync.mcast_ok else sync.mcast_error, sync.rpc_uri)
    sync.run(rospy.is_shutdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
