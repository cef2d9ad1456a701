"""Each run's time series as an MCAP file with ROS 2 messages (CDR, the schema embedded), which
Foxglove and PlotJuggler open as a recording: ``mcap/<run id>.mcap`` in the report's folder.

Channels (every message ``std_msgs/msg/Float64``, SI units as REP 103 asks; each message's log
and publish time is the instant it describes, on the run's clock, nanoseconds since the epoch):

    /reference        the loop's reference r(k) [V], at each sample
    /y                the plant's sample y(k) = Vc [V], at its stamp
    /u                each u the plant applied [V], at its arrival (held until the next)
    /loop/rtt         the loop's round trip [s] of each sample, at the sample: its stamp to the
                      arrival at the plant of the u answering it
    /loop/y/delay     one-way delay [s] of each y, at its send time (plant -> controller)
    /loop/u/delay     one-way delay [s] of each u, at its send time (controller -> plant)
    /flows/<flow>/delay            one-way delay [s] of each message of a perturbing flow (its
                                   round trip for an echo flow), at its send time;
    /flows/<flow>/sub<k>/delay     the same per subscriber of a flow with several

The loop channels exist for an ``rlc`` run, the flow channels for every run with flows. A
lost message has no delay message: gaps in a delay channel are losses. The file's metadata
record ``netloop`` names the run, its transport and status.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Iterable

import numpy as np

from . import baseline
from .results import RunAnalysis
from .rlc_result import rlc_loop

FLOAT64 = ("std_msgs/msg/Float64", "float64 data\n")
FOLDER = "mcap"
#: a std_msgs/msg/Float64 as CDR: the encapsulation header (little-endian CDR), then the double
_CDR_FLOAT64 = struct.Struct("<4sd")
_CDR_LE = b"\x00\x01\x00\x00"


def cdr_float64(value: float) -> bytes:
    """One ``std_msgs/msg/Float64`` serialized as ROS 2 does (CDR, little-endian)."""
    return _CDR_FLOAT64.pack(_CDR_LE, value)


def _ns(seconds) -> np.ndarray:
    return np.round(np.asarray(seconds, float) * 1e9).astype(np.int64)


def loop_series(a: RunAnalysis) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """topic -> (times [ns], values) of an rlc run's loop ({} for another kind or a loop that
    could not be analysed)."""
    loop = rlc_loop(a)
    if loop is None or not loop.ok or loop.start_s is None:
        return {}
    t0 = loop.start_s
    stamps = _ns(t0 + np.asarray(loop.t, float))
    cfg = a.experiment.get("loop") or {}
    out = {"/y": (stamps, np.asarray(loop.y, float)),
           "/u": (_ns(t0 + np.asarray(loop.u_applied_t, float)), np.asarray(loop.u_applied, float)),
           "/loop/rtt": (_ns(t0 + np.asarray(loop.rtt_t, float)), 1e-3 * np.asarray(loop.rtt_each_ms, float))}
    if cfg.get("controller") and cfg.get("plant"):
        out["/reference"] = (stamps, baseline.reference_series(cfg, len(stamps)))
    for topic, d in (("/loop/y/delay", loop.sensor), ("/loop/u/delay", loop.actuation)):
        if d is not None and len(d.sent_s) == len(d.delays_ms):
            out[topic] = (_ns(d.sent_s), 1e-3 * np.asarray(d.delays_ms, float))
    return out


def flow_series(a: RunAnalysis) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """topic -> (send times [ns], delays [s]) of every subscriber of every flow of a run."""
    out = {}
    for f in a.flows:
        if not f.ok or len(f.sent_s) != len(f.delays_ms):
            continue
        sub = f"/sub{f.subscriber.split()[0].lstrip('#')}" if f.subscriber else ""
        out[f"/flows/{f.flow}{sub}/delay"] = (_ns(f.sent_s), 1e-3 * np.asarray(f.delays_ms, float))
    return out


def run_series(a: RunAnalysis) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every channel of a run's MCAP file: topic -> (times [ns], values)."""
    return loop_series(a) | flow_series(a)


def write_run(a: RunAnalysis, path: Path) -> Path | None:
    """``path``: the run's time series as MCAP (module docstring); None when it has none. The
    file has MCAP's ``ros2`` profile: the schema is the message definition (``ros2msg``) and the
    messages CDR, as a ROS 2 recording (rosbag2's MCAP storage) writes them."""
    from mcap.writer import Writer  # noqa: PLC0415 - the report's one use of it

    series = {topic: (t, v) for topic, (t, v) in run_series(a).items() if len(t)}
    if not series:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as stream:
        writer = Writer(stream)
        writer.start(profile="ros2", library="netloop")
        schema = writer.register_schema(name=FLOAT64[0], encoding="ros2msg", data=FLOAT64[1].encode())
        channels = {topic: writer.register_channel(topic=topic, message_encoding="cdr", schema_id=schema)
                    for topic in sorted(series)}
        writer.add_metadata("netloop", {"run_id": a.run_id, "transport": a.transport, "status": a.status,
                                        "loop_type": a.loop_type,
                                        "units": "V: /reference /y /u; s: /loop/rtt and every .../delay"})
        messages = sorted((int(t), topic, float(v)) for topic, (ts, vs) in series.items() for t, v in zip(ts, vs))
        for sequence, (t, topic, value) in enumerate(messages):
            writer.add_message(channel_id=channels[topic], log_time=t, publish_time=t, sequence=sequence,
                               data=cdr_float64(value))
        writer.finish()
    return path


def write_all(folder: Path, analyses: Iterable[RunAnalysis]) -> list[Path]:
    """``folder``/mcap/<run id>.mcap for every complete run with a time series; what an
    earlier report left there is replaced."""
    out_dir = Path(folder) / FOLDER
    for old in out_dir.glob("*.mcap") if out_dir.is_dir() else ():
        old.unlink()
    written = []
    for a in analyses:
        if a.status == "complete":
            path = write_run(a, out_dir / f"{a.run_id}.mcap")
            if path is not None:
                written.append(path)
    return written
