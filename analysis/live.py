"""``netloop plot --live``: the running loop in a matplotlib window, updated as it runs.

Subscribes (rospy) to the loop's ``/y`` and ``/u`` (netloop/LoopSample) and shows, over the
last ``--window`` seconds:

- y [V], the capacitor voltage each sample carries;
- u [V], the actuation the controller sends;
- the per-message delay [ms]: for each u, its arrival here minus the stamp of the y it
  answers (the loop delay up to this viewer), and for each y its one-way delay to here.
  Both use this machine's clock against the senders' stamps: exact when the viewer runs
  on the plant's machine (the testbed's namespaces share one clock), offset by the clock
  difference otherwise.

``--seconds N`` stops after N seconds (else: until the window is closed or Ctrl-C);
``--save FILE.png`` writes the last view. Without a display (no ``DISPLAY``) the view is
drawn off-screen, which needs ``--seconds`` and ``--save``.

``netloop plot RUN_DIR`` draws the same three panels from a recorded run (records/*.csv)
instead, into ``--save`` (default RUN_DIR/figures/loop_signals.png).

rqt users (ROS Noetic with rqt_plot; rqt is not installable on Debian 12) get the same y
and u traces from ``rqt --perspective-file config/netloop.perspective``.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np

TITLE = "netloop live: /y, /u"
COLORS = {"y": "#0072B2", "u": "#D55E00", "loop": "#009E73", "oneway": "#CC79A7"}


class LiveBuffer:
    """Thread-safe ring buffers fed by the subscriber callbacks (times in wall seconds)."""

    def __init__(self, maxlen: int = 20000):
        self.lock = threading.Lock()
        self.y, self.u = deque(maxlen=maxlen), deque(maxlen=maxlen)
        self.loop_delay, self.y_delay = deque(maxlen=maxlen), deque(maxlen=maxlen)
        self.counts = {"y": 0, "u": 0}
        self.t0: float | None = None

    def on_y(self, msg) -> None:
        now = time.time()
        with self.lock:
            self.t0 = now if self.t0 is None else self.t0
            self.counts["y"] += 1
            self.y.append((now, msg.value))
            self.y_delay.append((now, 1e3 * (now - msg.stamp.to_sec())))

    def on_u(self, msg) -> None:
        now = time.time()
        with self.lock:
            self.t0 = now if self.t0 is None else self.t0
            self.counts["u"] += 1
            self.u.append((now, msg.value))
            if msg.answer_seq >= 0:
                self.loop_delay.append((now, 1e3 * (now - msg.answer_stamp.to_sec())))

    def snapshot(self) -> dict[str, np.ndarray]:
        with self.lock:
            t0 = self.t0 or 0.0
            out = {}
            for name in ("y", "u", "loop_delay", "y_delay"):
                data = np.array(getattr(self, name), dtype=float).reshape(-1, 2)
                out[name] = np.column_stack([data[:, 0] - t0, data[:, 1]]) if len(data) else data
            return out


def make_figure(title: str = TITLE):
    import matplotlib.pyplot as plt  # noqa: PLC0415 - the backend is chosen by the caller

    fig, axes = plt.subplots(3, 1, figsize=(8.0, 6.4), dpi=100, sharex=True)
    lines = {
        "y": axes[0].plot([], [], drawstyle="steps-post", color=COLORS["y"], lw=1.4, label="y (sensor)")[0],
        "u": axes[1].plot([], [], drawstyle="steps-post", color=COLORS["u"], lw=1.4, label="u (actuation)")[0],
        "loop_delay": axes[2].plot([], [], ".", color=COLORS["loop"], ms=3,
                                   label="loop: u arrival − stamp of its y")[0],
        "y_delay": axes[2].plot([], [], ".", color=COLORS["oneway"], ms=3, label="y one-way")[0],
    }
    axes[0].set_ylabel("y = Vc [V]")
    axes[1].set_ylabel("u [V]")
    axes[2].set_ylabel("delay [ms]")
    axes[2].set_xlabel("time [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
        ax.ticklabel_format(axis="y", useOffset=False)
    axes[0].set_title(title)
    fig.tight_layout()
    return fig, axes, lines


def update_figure(axes, lines, snap: dict, window_s: float, status: str = "") -> None:
    t_end = 0.0
    for name, line in lines.items():
        data = snap.get(name)
        if data is not None and len(data):
            line.set_data(data[:, 0], data[:, 1])
            t_end = max(t_end, float(data[-1, 0]))
    t_start = max(0.0, t_end - window_s)
    for ax in axes:
        ax.relim()
        ax.autoscale_view(scalex=False, scaley=True)
        ax.set_xlim(t_start, max(t_end, t_start + 1.0) + 0.2)
    # y limits from the visible part only, so the start-up transient does not flatten the rest
    # (at least min_span wide: a settled loop is not blown up to its rounding noise)
    for ax, names, min_span in ((axes[0], ["y"], 0.05), (axes[1], ["u"], 0.05),
                                (axes[2], ["loop_delay", "y_delay"], 1.0)):
        vis = [snap[n][snap[n][:, 0] >= t_start, 1] for n in names if len(snap.get(n, []))]
        vis = np.concatenate(vis) if vis else np.array([])
        vis = vis[np.isfinite(vis)]
        if vis.size:
            lo, hi = float(vis.min()), float(vis.max())
            if hi - lo < min_span:
                mid = 0.5 * (hi + lo)
                lo, hi = mid - min_span / 2, mid + min_span / 2
            pad = 0.08 * (hi - lo)
            ax.set_ylim(lo - pad, hi + pad)
    if status:
        axes[2].set_title(status, fontsize=8, loc="right")


def _choose_backend(interactive: bool) -> str:
    import matplotlib  # noqa: PLC0415
    import matplotlib.pyplot as plt  # noqa: PLC0415

    if interactive:
        for backend in ("TkAgg", "QtAgg"):
            try:
                plt.switch_backend(backend)
                return backend
            except (ImportError, RuntimeError):
                continue
    plt.switch_backend("Agg")
    return matplotlib.get_backend()


def run_live(seconds: float | None = None, save: Path | None = None, y_topic: str = "/y", u_topic: str = "/u",
             window_s: float = 10.0, refresh_s: float = 0.2) -> int:
    interactive = bool(os.environ.get("DISPLAY"))
    if not interactive and not (seconds and save):
        print("netloop plot --live: no display (DISPLAY is not set); give --seconds N and --save FILE.png "
              "to draw off-screen", file=sys.stderr)
        return 2
    backend = _choose_backend(interactive)
    if interactive and backend == "agg":
        print("netloop plot --live: no GUI backend for matplotlib (install python3-tk); drawing off-screen",
              file=sys.stderr)
        interactive = False
        if not (seconds and save):
            return 2
    import matplotlib.pyplot as plt  # noqa: PLC0415
    import rosgraph  # noqa: PLC0415
    import rospy  # noqa: PLC0415

    from netloop.msg import LoopSample  # noqa: PLC0415 - generated by catkin

    buf = LiveBuffer()
    rospy.init_node("netloop_live_plot", anonymous=True, disable_signals=True)
    subs = [rospy.Subscriber(y_topic, LoopSample, buf.on_y, queue_size=100, tcp_nodelay=True),
            rospy.Subscriber(u_topic, LoopSample, buf.on_u, queue_size=100, tcp_nodelay=True)]
    fig, axes, lines = make_figure(f"netloop live: {y_topic}, {u_topic}")
    if interactive:
        fig.canvas.manager.set_window_title(TITLE)
        plt.show(block=False)
    end = time.monotonic() + seconds if seconds else math.inf
    print(f"netloop plot --live: {y_topic} and {u_topic} from {rosgraph.get_master_uri()} "
          f"({backend}){'' if seconds is None else f' for {seconds:g} s'}", flush=True)
    try:
        while time.monotonic() < end:
            if interactive and not plt.fignum_exists(fig.number):
                break   # window closed
            update_figure(axes, lines, buf.snapshot(), window_s,
                          f"{buf.counts['y']} y, {buf.counts['u']} u received")
            if interactive:
                fig.canvas.draw_idle()
                plt.pause(refresh_s)
            else:
                time.sleep(refresh_s)
    except KeyboardInterrupt:
        pass
    finally:
        for s in subs:
            s.unregister()
    snap = buf.snapshot()
    update_figure(axes, lines, snap, window_s, f"{buf.counts['y']} y, {buf.counts['u']} u received")
    if save:
        fig.savefig(save)
        print(f"netloop plot --live: saved {save}")
    delays = snap["loop_delay"][:, 1] if len(snap["loop_delay"]) else np.array([])
    print(f"netloop plot --live: received {buf.counts['y']} y and {buf.counts['u']} u; loop delay median "
          f"{np.median(delays) if delays.size else float('nan'):.3f} ms", flush=True)
    plt.close(fig)
    rospy.signal_shutdown("done")
    return 0


def plot_recorded(run_dir: Path, save: Path | None = None, window_s: float = 1e9) -> Path:
    """The same three panels from a recorded run (plant's clock; delays from the records)."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    from .records import read_events  # noqa: PLC0415

    plt.switch_backend("Agg")
    run_dir = Path(run_dir)
    plant = read_events(run_dir / "records" / "plant.csv")
    ctl = read_events(run_dir / "records" / "controller.csv")
    y, u = plant.select("tx", "y"), plant.select("rx", "u")
    y_rx = ctl.select("rx", "y")
    if len(y) == 0:
        raise ValueError(f"{run_dir}: no samples recorded")
    t0 = y.stamp_ns[0]

    def col(t_ns, v):
        return np.column_stack([(np.asarray(t_ns) - t0) / 1e9, np.asarray(v, float)]).reshape(-1, 2)
    snap = {"y": col(y.stamp_ns, y.value), "u": col(u.recv_ns, u.value),
            "loop_delay": col(u.recv_ns, (u.recv_ns - u.answer_stamp_ns) / 1e6),
            "y_delay": col(y_rx.recv_ns, (y_rx.recv_ns - y_rx.stamp_ns) / 1e6)}
    fig, axes, lines = make_figure(f"netloop run {run_dir.name}: y, u and delays (recorded)")
    lines["loop_delay"].set_label("loop: u arrival at the plant − stamp of its y")
    lines["y_delay"].set_label("y one-way (plant → controller)")
    axes[2].legend(loc="upper right", fontsize=8)
    update_figure(axes, lines, snap, window_s)
    axes[0].set_xlim(left=0.0)
    path = Path(save) if save else run_dir / "figures" / "loop_signals.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
