"""Userspace link emulator between two tap devices (the ``shaped`` link type).

The kernel here has no netem, so delay, jitter and loss are emulated by this process. It
opens two taps (``--tap A --tap B``; A faces the robot, B the operator) and forwards every
Ethernet frame from one to the other through a per-direction model:

1. **loss** — the frame is dropped with probability ``loss`` (independent per frame);
2. **queue + rate** — the frame waits for the link, which sends ``rate_mbit`` (frame bytes
   as counted by Linux qdiscs, without preamble/FCS); if ``queue_packets`` frames are
   already waiting or being sent, it is tail-dropped;
3. **delay + jitter** — after being sent it arrives ``delay_ms`` plus a jitter sample later:
   uniform in ``[-jitter_ms, +jitter_ms]`` or normal with standard deviation ``jitter_ms``;
   the total is never negative.

Order: by default a frame never overtakes an earlier one in the same direction (its
arrival time is at least the previous frame's), so jitter shows as bunching, not
reordering, like a real link's FIFO. ``reorder: true`` releases frames at their own sampled
time, so jitter larger than the gap between frames reorders them.

Loss bursts (an experiment's ``faults`` with ``loss``) are set while it runs: each line on
its standard input ``loss <k> <p>`` makes the frames the host behind tap ``k`` (0: the
first ``--tap``) sends lost with probability at least ``p`` (``loss all <p>``: both
directions; ``p`` 0 ends the burst). They are counted apart (``drop_burst``).

Every ``--stats-interval`` seconds one JSON line goes to ``--stats`` with the same
real-time fields as the ns-3 program (``lag_*``: how late frames were written compared with
their due time) plus per-direction counters. The first line is ``{"type": "ready", ...}``
once both taps are open. SIGTERM/SIGINT end it after a last ``"final"`` line.

Run as ``python -m netloop.testbed.shaper --tap A --tap B --config '<json>' --stats FILE``
where the JSON is ``{"to_operator": {...}, "to_robot": {...}, "reorder": false, "seed": 1}``
and each direction has ``rate_mbit, delay_ms, jitter_ms, jitter_dist, loss, queue_packets``.
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import fcntl
import heapq
import json
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
PR_SET_TIMERSLACK = 29
#: frames due within this many seconds are written now rather than after another wait
EARLY = 20e-6


def open_tap(name: str) -> int:
    """Create (or attach to) tap ``name`` without packet information; returns a non-blocking fd."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


class Direction:
    """One direction of the link: loss, a rate-limited FIFO with a packet limit, a delay line."""

    def __init__(self, name: str, p: dict, rng: random.Random, reorder: bool, out_fd: int):
        self.name, self.rng, self.reorder, self.out_fd = name, rng, reorder, out_fd
        self.bits_per_s = float(p["rate_mbit"]) * 1e6
        self.delay = float(p["delay_ms"]) / 1e3
        self.jitter = float(p["jitter_ms"]) / 1e3
        self.normal = p["jitter_dist"] == "normal"
        self.loss = float(p["loss"])
        self.limit = int(p["queue_packets"])
        self.link_free = 0.0          # when the link finishes sending what it has
        self.sending = collections.deque()   # finish times of frames queued or being sent
        self.heap: list = []          # (due time, seq, frame)
        self.last_due = 0.0
        self.seq = 0
        self.burst_loss = 0.0         # a loss burst in effect (set through the control input)
        self.c = dict(rx=0, tx=0, tx_bytes=0, drop_loss=0, drop_burst=0, drop_queue=0, drop_write=0)

    def arrive(self, frame: bytes, now: float) -> None:
        self.c["rx"] += 1
        if self.loss and self.rng.random() < self.loss:
            self.c["drop_loss"] += 1
            return
        if self.burst_loss and self.rng.random() < self.burst_loss:
            self.c["drop_burst"] += 1
            return
        sending = self.sending
        while sending and sending[0] <= now:
            sending.popleft()
        if len(sending) >= self.limit:
            self.c["drop_queue"] += 1
            return
        start = self.link_free if self.link_free > now else now
        done = start + len(frame) * 8 / self.bits_per_s
        self.link_free = done
        sending.append(done)
        delay = self.delay
        if self.jitter:
            delay += (self.rng.gauss(0.0, self.jitter) if self.normal
                      else self.rng.uniform(-self.jitter, self.jitter))
            if delay < 0:
                delay = 0.0
        due = done + delay
        if not self.reorder:
            if due < self.last_due:
                due = self.last_due
            self.last_due = due
        self.seq += 1
        heapq.heappush(self.heap, (due, self.seq, frame))

    def next_due(self) -> float | None:
        return self.heap[0][0] if self.heap else None

    def release(self, now: float, lag: "Lag") -> None:
        heap = self.heap
        while heap and heap[0][0] <= now + EARLY:
            due, _, frame = heapq.heappop(heap)
            lag.add(max(0.0, now - due))
            try:
                os.write(self.out_fd, frame)
                self.c["tx"] += 1
                self.c["tx_bytes"] += len(frame)
            except OSError:
                self.c["drop_write"] += 1


def apply_control(line: str, by_sender: list[Direction]) -> str | None:
    """Apply one control line (``loss <k>|all <p>``) to the directions, indexed by the tap
    their frames come from; returns an error text for a line it cannot apply."""
    words = line.split()
    try:
        if len(words) != 3 or words[0] != "loss":
            raise ValueError
        p = float(words[2])
        if not 0.0 <= p <= 1.0:
            raise ValueError
        targets = by_sender if words[1] == "all" else [by_sender[int(words[1])]]
    except (ValueError, IndexError):
        return f"bad control line {line.strip()!r} (expected: loss <tap index>|all <probability 0..1>)"
    for d in targets:
        d.burst_loss = p
    return None


class _Stop(Exception):
    """Raised by the SIGTERM/SIGINT handler to leave the forwarding loop at once."""


class Lag:
    """Real-time lateness of frame releases (ms), per interval and in total, and the stalls:
    runs of consecutive releases later than the bound, as ``[epoch s it began, max ms,
    late releases]`` (the ns-3 program's ``stalls``)."""

    def __init__(self, bound_ms: float):
        self.bound = bound_ms
        self.imax = self.isum = 0.0
        self.icount = 0
        self.tmax = self.tsum = 0.0
        self.tcount = self.late = 0
        self.stall: list | None = None   # the one under way
        self.stalls: list[list] = []     # ended since the last line

    def add(self, seconds: float) -> None:
        ms = seconds * 1e3
        self.imax = max(self.imax, ms)
        self.isum += ms
        self.icount += 1
        self.tmax = max(self.tmax, ms)
        self.tsum += ms
        self.tcount += 1
        if ms > self.bound:
            self.late += 1
            if self.stall is None:
                self.stall = [time.time() - seconds, 0.0, 0]
            self.stall[1] = max(self.stall[1], ms)
            self.stall[2] += 1
        elif self.stall is not None:
            self.stalls.append(self.stall)
            self.stall = None

    def fields(self, final: bool = False) -> dict:
        if final and self.stall is not None:
            self.stalls.append(self.stall)
            self.stall = None
        out = {"lag_max_ms": self.imax, "lag_mean_ms": self.isum / self.icount if self.icount else 0.0,
               "lag_max_total_ms": self.tmax,
               "lag_mean_total_ms": self.tsum / self.tcount if self.tcount else 0.0,
               "probes": self.tcount, "late_probes": self.late, "lag_bound_ms": self.bound,
               "stalls": self.stalls}
        self.imax = self.isum = 0.0
        self.icount = 0
        self.stalls = []
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tap", action="append", required=True, help="tap name (robot side first)")
    ap.add_argument("--config", required=True, help="JSON: to_operator, to_robot, reorder, seed")
    ap.add_argument("--stats", required=True, help="file to append JSON lines to")
    ap.add_argument("--stats-interval", type=float, default=1.0)
    ap.add_argument("--lag-bound", type=float, default=5.0)
    args = ap.parse_args(argv)
    if len(args.tap) != 2:
        ap.error("need exactly two --tap")
    cfg = json.loads(args.config)

    def on_signal(*_):
        raise _Stop

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:  # wake up on time rather than up to 50 us late
        ctypes.CDLL(None).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass

    fd_r, fd_o = (open_tap(t) for t in args.tap)
    rng = random.Random(cfg.get("seed", 1))
    reorder = bool(cfg.get("reorder", False))
    dirs = {fd_r: Direction("to_operator", cfg["to_operator"], rng, reorder, fd_o),
            fd_o: Direction("to_robot", cfg["to_robot"], rng, reorder, fd_r)}
    lag = Lag(args.lag_bound)
    stats = open(args.stats, "a", encoding="utf-8")

    def write(kind: str, extra: dict | None = None) -> None:
        line = {"type": kind, "wall": time.time(), "pid": os.getpid()}
        line.update(extra or {})
        stats.write(json.dumps(line) + "\n")
        stats.flush()

    def stats_line(kind: str) -> None:
        t = os.times()
        write(kind, {**lag.fields(final=kind == "final"), "cpu_s": t.user + t.system,
                     "directions": {d.name: dict(d.c) for d in dirs.values()}})

    write("ready", {"taps": args.tap})
    by_sender = [dirs[fd_r], dirs[fd_o]]
    control = sys.stdin.fileno()
    pending = b""
    fds = list(dirs)
    if not os.isatty(control):   # netloop's pipe (a terminal's is left alone: O_NONBLOCK would outlive us)
        os.set_blocking(control, False)
        fds.append(control)  # select(): its timeout has microsecond resolution, epoll's only ms
    next_stats = time.monotonic() + args.stats_interval
    read = os.read
    try:
        while True:
            now = time.monotonic()
            for d in dirs.values():
                d.release(now, lag)
            if now >= next_stats:
                stats_line("stats")
                next_stats += args.stats_interval
                if next_stats < now:
                    next_stats = now + args.stats_interval
            wake = next_stats
            for d in dirs.values():
                due = d.next_due()
                if due is not None and due < wake:
                    wake = due
            ready, _, _ = select.select(fds, [], [], max(0.0, wake - time.monotonic()))
            now = time.monotonic()
            for fd in ready:
                if fd == control:
                    try:
                        chunk = read(control, 4096)
                    except BlockingIOError:
                        continue
                    if not chunk:          # no controller (any more): nothing left to read
                        fds.remove(control)
                        continue
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        error = apply_control(line.decode(errors="replace"), by_sender)
                        write("control", {"line": line.decode(errors="replace"), "error": error})
                    continue
                d = dirs[fd]
                for _ in range(256):
                    try:
                        frame = read(fd, 65536)
                    except BlockingIOError:
                        break
                    except OSError:
                        break
                    if not frame:
                        break
                    d.arrive(frame, now)
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stats_line("final")
        stats.close()
        os.close(fd_r)
        os.close(fd_o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
