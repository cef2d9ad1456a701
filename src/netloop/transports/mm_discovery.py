"""The discovery half of netloop's master sync (:mod:`.mm_sync`): heartbeats and peers.

Every 1/``~heartbeat_hz`` s a sync sends a heartbeat (one small JSON datagram: host name, master
URI, the URI of its own XML-RPC state server, a random epoch per start, a state version) to the
multicast group ``~mcast_group``:``~mcast_port`` (TTL 1) on its host's interface, and/or by
unicast to the static peers ``~peers`` ([{host, address, port}]). ``~discovery``: ``multicast``,
``static``, or ``auto`` = multicast, plus unicast to every static peer when multicast cannot be
used here (no multicast on the interface) or has not found that peer within ``~static_after`` s.
Heartbeats from addresses not in ``~allowed_peers``, of another ``~domain``, malformed ones and
our own are dropped (and counted). Robot-side: Python 3.8 and the standard library only.
"""
from __future__ import annotations

import json
import select
import socket
import time
import urllib.parse
from typing import Any

MAGIC = "netloop-sync/1"
MAX_HEARTBEAT = 1024


def parse_heartbeat(data: bytes) -> dict[str, Any] | None:
    """A heartbeat's fields, or None when it is not a valid one."""
    if len(data) > MAX_HEARTBEAT:
        return None
    try:
        hb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(hb, dict) or hb.get("magic") != MAGIC:
        return None
    ok = (isinstance(hb.get("host"), str) and 0 < len(hb["host"]) <= 64
          and all(isinstance(hb.get(k), str) and hb[k].startswith("http://") and len(hb[k]) < 200
                  for k in ("master", "rpc"))
          and all(isinstance(hb.get(k), int) and not isinstance(hb.get(k), bool) for k in ("epoch", "version", "seq")))
    return hb if ok else None


class Peer:
    def __init__(self, hb: dict[str, Any], address: str, via: str, now: float):
        self.host, self.epoch, self.master, self.rpc = hb["host"], hb["epoch"], hb["master"], hb["rpc"]
        self.address, self.via, self.last_seen = address, via, now
        self.version = hb["version"]
        self.fetched_version: int | None = None
        self.fetched_at = 0.0
        self.state: dict[str, Any] | None = None
        self.heard_by: set[str] = {via}

    def summary(self, now: float) -> dict[str, Any]:
        return {"address": self.address, "via": sorted(self.heard_by), "age_s": round(now - self.last_seen, 3),
                "epoch": self.epoch, "master": self.master, "synced": self.state is not None}


class Discovery:
    """Heartbeats out and in, the peers heard. A base of :class:`.mm_sync.MasterSync`, which
    owns the state it uses: ``cfg``, ``host``, ``address``, ``epoch``, ``version``, ``rpc_uri``,
    ``master_uri``, ``lock``, ``stop_event``, ``peers``, ``ever_seen``, ``counters``,
    ``started``, ``ucast``, ``mcast``, ``mcast_ok``, ``mcast_error``."""

    def _open_multicast(self) -> None:
        group, port = self.cfg["mcast_group"], self.cfg["mcast_port"]
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((group, port))
            iface = socket.inet_aton(self.address)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + iface)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, iface)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            s.sendto(self._heartbeat(), (group, port))  # fails here when the interface has no multicast
            self.mcast, self.mcast_ok = s, True
        except OSError as err:
            self.mcast_error = f"{type(err).__name__}: {err}"
            if self.cfg["discovery"] == "multicast":
                raise SystemExit(f"mm_sync: multicast discovery impossible on {self.address}: {err}")

    def _heartbeat(self) -> bytes:
        return json.dumps({"magic": MAGIC, "domain": self.cfg["domain"], "host": self.host, "epoch": self.epoch,
                           "seq": self.counters["heartbeats_sent"],
                           "master": self.master_uri, "rpc": self.rpc_uri, "version": self.version}).encode()

    def _send_heartbeats(self) -> None:
        hb = self._heartbeat()
        if self.mcast is not None:
            try:
                self.mcast.sendto(hb, (self.cfg["mcast_group"], self.cfg["mcast_port"]))
            except OSError:
                self.counters["send_errors"] += 1
        mode = self.cfg["discovery"]
        if mode == "multicast":
            pass
        else:
            waited = time.monotonic() - self.started >= self.cfg["static_after"]
            for p in self.cfg["peers"]:
                if p["host"] == self.host:
                    continue
                heard = self.peers.get(p["host"])
                if mode == "static" or not self.mcast_ok or (waited and (heard is None or "multicast" not in heard.heard_by)):
                    try:
                        self.ucast.sendto(hb, (p["address"], int(p["port"])))
                    except OSError:
                        self.counters["send_errors"] += 1
        self.counters["heartbeats_sent"] += 1

    def _receive(self, sock: socket.socket, via: str) -> None:
        try:
            data, (addr, _port) = sock.recvfrom(MAX_HEARTBEAT + 1)
        except OSError:
            return
        allowed = self.cfg["allowed_peers"]
        if allowed and addr not in allowed:
            self.counters["foreign"] += 1
            return
        hb = parse_heartbeat(data)
        if hb is None:
            self.counters["malformed"] += 1
            return
        if hb.get("domain", "") != self.cfg["domain"]:  # another run's (or system's) syncs
            self.counters["foreign"] += 1
            return
        if any(urllib.parse.urlsplit(hb[k]).hostname != addr for k in ("rpc", "master")):
            self.counters["malformed"] += 1   # a heartbeat may only point at its own sender
            return
        if hb["epoch"] == self.epoch or hb["host"] == self.host:
            self.counters["own"] += 1
            return
        self.counters["heartbeats_received"] += 1
        now = time.monotonic()
        with self.lock:
            peer = self.peers.get(hb["host"])
            if peer is not None and peer.epoch != hb["epoch"]:  # restarted: a new peer
                self.counters["peer_restarted"] += 1
                peer = None
            if peer is None:
                if hb["host"] in self.ever_seen:
                    self.counters["peer_back"] += 1
                self.ever_seen.add(hb["host"])
                peer = Peer(hb, addr, via, now)
                self.peers[hb["host"]] = peer
            peer.last_seen, peer.version, peer.master, peer.rpc = now, hb["version"], hb["master"], hb["rpc"]
            peer.heard_by.add(via)

    def discovery_loop(self) -> None:
        period = 1.0 / self.cfg["heartbeat_hz"]
        next_send = 0.0
        socks = [self.ucast] + ([self.mcast] if self.mcast is not None else [])
        while not self.stop_event.is_set():
            now = time.monotonic()
            if now >= next_send:
                self._send_heartbeats()
                next_send = now + period
            ready, _, _ = select.select(socks, [], [], max(0.0, min(0.1, next_send - time.monotonic())))
            for s in ready:
                self._receive(s, "multicast" if s is self.mcast else "unicast")
