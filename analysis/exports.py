"""The report's files for other tools, and the section that links them: the CSV tables (per
run, per step, per condition, ...), analysis.json, and each run's time series as MCAP
(:mod:`mcap_export`), which Foxglove and PlotJuggler open."""
from __future__ import annotations

from pathlib import Path

from ..run_files import ANALYSIS
from . import mcap_export
from .rendering import Section
from .results import RunAnalysis

#: the files a report may write, in the order the section lists them, with what each holds
FILES = (
    ("runs.csv", "one row per loop run: its per-run numbers (the table \"Every loop run\")"),
    ("steps.csv", "one row per step of every loop run (a single-step run is one step): IAE(y − baseline) per "
                  "step, overshoot, settling time, settled or not"),
    ("margins.csv", "per transport, its loop delay and jitter against the loop's delay and jitter margins"),
    ("degradation.csv", "one row per loop run: degradation, delay, jitter, MDR, prediction error"),
    ("conditions.csv", "per condition: n, mean, std, min, max and median of every number of degradation.csv"),
    ("prediction.csv", "per loop run: the prediction error of the three replays"),
    (ANALYSIS, "every number of the report, typed, for scripts"),
    ("repeated_steps.json", "a square wave's verdict per transport"),
)


def write_and_link(path: Path, analyses: list[RunAnalysis]) -> Section:
    """Write every run's MCAP file into ``path``/mcap/ and return the section that links the
    report's files: those of :data:`FILES` present, the flows' tables, the MCAP files."""
    mcaps = mcap_export.write_all(path, analyses)
    section = Section("Exports")
    items = [f"[{name}]({name}): {what}" for name, what in FILES if (path / name).is_file()]
    items += [f"[{f.name}]({f.name}): the flow's table per transport and condition"
              for f in sorted(path.glob("flow_*.csv"))]
    if items:
        section.p("Tables for scripts and spreadsheets (CSV: one header row, units in the column names; "
                  "an empty field is a value that does not exist):").ul(items)
    if mcaps:
        section.p("Each run's time series as MCAP with ROS 2 messages (`std_msgs/msg/Float64`, SI units), for "
                  "Foxglove or PlotJuggler: `/reference`, `/y`, `/u` (as applied at the plant), `/loop/rtt`, "
                  "`/loop/y/delay`, `/loop/u/delay` and `/flows/<flow>/delay` (seconds, at each message's send "
                  "time; a gap is a lost message): "
                  + ", ".join(f"[{p.stem}]({mcap_export.FOLDER}/{p.name})" for p in mcaps) + ".")
    return section
