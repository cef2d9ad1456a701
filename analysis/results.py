"""The typed results of the analysis: what one run, one flow, one prediction or one
degradation point is, as dataclasses.

``analysis.json`` is written from them (:meth:`Result.to_json`): every field except the
time series and the raw metadata (fields made with :func:`series`), and the optional fields of a result that could not
be computed are left out rather than written as null, so the file keeps its keys.

Results also answer ``result["key"]`` and ``result.get("key")`` (read-only, the field of
that name) for callers written against the dicts these results replace.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..run_files import RunRecord

NOT_IN_JSON = {"not_in_json": True}   # time series and the raw metadata: not written to analysis.json
OPTIONAL = {"optional": True}          # left out of analysis.json while None


def series(default_factory=list):
    """A field analysis.json leaves out (a time series, the run's metadata)."""
    return field(default_factory=default_factory, metadata=NOT_IN_JSON, repr=False)


def optional(default=None):
    return field(default=default, metadata=OPTIONAL)


def to_json(value: Any) -> Any:
    """A result (or a list/dict of them) as plain JSON data."""
    if isinstance(value, Result):
        return value.to_json()
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


class Result:
    """Base of the result dataclasses: JSON without the series, read-only item access."""

    def to_json(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("not_in_json") or (f.metadata.get("optional") and value is None):
                continue
            out[f.name] = to_json(value)
        return out

    def __getitem__(self, key: str) -> Any:
        if key not in {f.name for f in dataclasses.fields(self)} and not hasattr(type(self), key):
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            value = self[key]
        except KeyError:
            return default
        return default if value is None else value


class RunResult(Result):
    """Base of a loop kind's typed result of one run (:attr:`RunAnalysis.result`): says whether
    the run is usable and writes the run's analysis.json entry. A kind's result class overrides
    either (a dataclass field ``ok`` does too)."""

    @property
    def ok(self) -> bool:
        """Whether the run's result is usable (by default: not)."""
        return False

    def run_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The run's entry of analysis.json from the generic ``entry``: by default the entry with
        this result as ``result``."""
        return entry | {"result": self.to_json()}


@dataclass
class DirectionStats(Result):
    """The loop's messages in one direction: delivery, one-way delay, period at the receiver."""

    sent: int
    received: int
    MDR: float
    delay: dict[str, float]       # metrics.delay_stats: n, mean_ms, std_ms, p50_ms, p95_ms, p99_ms, max_ms
    period: dict[str, float]      # metrics.period_stats: mean_ms, std_ms
    clock_uncertainty_ms: float | None = optional()  # real machines: the delays' clock correction, ±
    outages: list[dict[str, Any]] = field(default_factory=list)  # analysis.outages.per_outage
    delays_ms: list[float] = series()
    sent_s: list[float] = series()    # of each delay: the message's send stamp [s since the epoch]


@dataclass
class LoopRunResult(Result):
    """One RLC-loop run: its step response against the local baseline and its messages.
    Everything after ``cell`` is None when the run could not be analysed (``ok`` false)."""

    run_id: str
    transport: str
    status: str
    problems: list[str] = field(default_factory=list)
    ok: bool = False
    cell: dict[str, Any] | None = None
    samples: int | None = optional()
    period_s: float | None = optional()
    reference: float | None = optional()
    start_s: float | None = optional()                  # the first sample's stamp [s since the epoch]
    t: list[float] = series()                           # sample times [s from the first sample]
    y: list[float] = series()
    baseline_y: list[float] = series()
    u_applied_t: list[float] = series()                 # each u applied at the plant: when [s from the first sample]
    u_applied: list[float] = series()                   # and its value [V]
    rtt_t: list[float] = series()                       # each u that reached the plant: its sample's time
    rtt_each_ms: list[float] = series()                 # and the loop's round trip to it [ms]
    step: dict[str, Any] | None = optional()            # metrics.step_metrics of y
    baseline_step: dict[str, Any] | None = optional()
    tracking: dict[str, float] | None = optional()      # IAE/ISE of r − y
    baseline_tracking: dict[str, float] | None = optional()
    deviation: dict[str, float] | None = optional()     # IAE/ISE of y − baseline
    sensor: DirectionStats | None = optional()          # y: plant → controller
    actuation: DirectionStats | None = optional()       # u: controller → plant
    rtt: dict[str, float] | None = optional()           # sample → arrival of its u at the plant
    stale_actuations: int | None = optional()
    outage_windows_s: list[list[float]] = field(default_factory=list)  # link outages, s after the first sample
    fault_kinds: list[str] = field(default_factory=list)  # per window: 'outage' or 'loss burst' (analysis.outages)
    sampling: dict[str, float] | None = optional()
    negotiated_transport: dict[str, str] | None = optional()
    delta_IAE: float | None = optional()
    delta_overshoot_pp: float | None = optional()
    delta_settling_s: float | None = optional()
    unstable: bool | None = optional()
    steps: list[dict[str, Any]] = field(default_factory=list)   # square wave: each step's metrics (repeated_steps)
    delay_trace: dict[str, Any] = series(dict)   # square wave: RTT per sample, flows' send times (step_report)


@dataclass
class LoopTiming(Result):
    """A run's loop delay and its jitter [ms], in the terms of the margins (:mod:`.loop_timing`)."""

    samples: int                  # samples with a hold delay (the run's end left out)
    answered: int                 # of those, samples whose own answer was applied
    min_ms: float                 # L: the smallest loop delay
    p50_ms: float                 # loop delays of the applied answers
    p99_ms: float
    max_ms: float
    hold_p99_ms: float            # hold delays
    hold_max_ms: float
    delays_ms: list[float] = series()   # the applied answers' loop delays
    hold_ms: list[float] = series()

    @property
    def jitter_ms(self) -> float:
        """J: the largest hold delay less the smallest loop delay."""
        return self.hold_max_ms - self.min_ms

    @property
    def jitter_p99_ms(self) -> float:
        """The same with the 99th percentile of the hold delays (what the worst 1 % adds is left out)."""
        return self.hold_p99_ms - self.min_ms


@dataclass
class FlowResult(Result):
    """One perturbing flow of a run: the Pound paper's measurements."""

    flow: str
    kind: str
    entry: str = ""                                 # the experiment's flow entry (flow without replicas)
    replica: int | None = optional()                # k of replica <entry>_<k>, None without replicas
    replicas: int = 1                               # how many replicas of the entry the run had
    per_robot: bool = False                         # the replicas are one per robot (per_robot: true)
    size_bytes: int | None = optional()             # bytes per message as configured (flows.message_bytes)
    payload_bytes: int | None = optional()          # the payload of each message, where the flow set it
    period_s: float | None = optional()             # the configured period
    subscriber: str | None = optional()            # "#k on <host>" when the flow has several
    measures: str = "one-way"                       # what D is: "one-way", or "round trip" (echo flows)
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    sent: int | None = optional()
    received: int | None = optional()
    MDR: float | None = optional()
    period: dict[str, float] | None = optional()   # J_d: mean_ms, std_ms
    source_period: dict[str, float] | None = optional()  # the sender's publish period: mean_ms, std_ms
    delay: dict[str, float] | None = optional()    # D: n, mean_ms, std_ms, p50_ms, p95_ms, p99_ms, max_ms
    bandwidth_mbit: float | None = optional()
    mean_bytes: float | None = optional()
    subscriber_queue_drops: int | None = optional()  # roscpp's drops of a full subscriber queue
    lost_before_subscriber: int | None = optional()  # publisher queue (TCPROS) or network (UDPROS)
    clock_uncertainty_ms: float | None = optional()  # real machines: D's clock correction is known to ±this
    outages: list[dict[str, Any]] = field(default_factory=list)  # analysis.outages.per_outage
    delays_ms: list[float] = series()
    sent_s: list[float] = series()                  # of each delay: the message's send time [s since the epoch]
    message_numbers: list[int] = series()           # of each delay: the message's place in the sending order, from 0
    periods_ms: list[float] = series()

    @property
    def label(self) -> str:
        """The flow's name, with its subscriber when it has several."""
        return self.flow + (f" {self.subscriber}" if self.subscriber else "")


@dataclass
class ReplayError(Result):
    """How far one replay of a run's delays (a prediction mode) is from the measured y."""

    rms_mV: float
    max_mV: float
    overshoot: float
    delta_overshoot_pp: float
    y_hat: list[float] = series()


@dataclass
class PredictionResult(Result):
    """A run's response replayed from its measured delays, and the error of each replay."""

    run_id: str
    transport: str
    threshold_mV: float             # prediction.RMS_THRESHOLD_MV unless chosen
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    samples: int | None = optional()
    t: list[float] = series()
    y: list[float] = series()
    lost: int | None = optional()
    stale: int | None = optional()
    unmatched: int | None = optional()
    loop_delay_median_ms: float | None = optional()
    rms_mV: float | None = optional()
    max_mV: float | None = optional()
    delta_overshoot_pp: float | None = optional()
    explained: bool | None = optional()
    modes: dict[str, ReplayError] = field(default_factory=dict)


@dataclass
class StepResponse(Result):
    """A teleop step, normalised to the step size (0 → 1), timed from the reference change."""

    t: list[float]
    y: list[float]
    step: float
    metrics: dict[str, Any]


@dataclass
class TeleopRunResult(RunResult):
    """One teleoperation run: the trial's speed and heading steps and its messages' delays."""

    run_dir: str
    run_id: str
    status: str
    transport: str
    local: bool
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    speed: StepResponse | None = None
    heading: StepResponse | None = None
    odom_delay: dict[str, float] | None = None
    odom_period: dict[str, float] | None = None
    command_age: dict[str, float] | None = None

    def run_entry(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A teleop run's entry of analysis.json is the generic one: the trial's numbers are in
        runs.csv and the report."""
        return entry


@dataclass
class RunPoint(Result):
    """One loop run as a point of the degradation analysis (keys: degradation.POINT_FIELDS)."""

    run_id: str
    transport: str
    condition: str
    setting: str
    settings: dict[str, Any]
    repetition: int | None
    status: str | None
    ok: bool
    iae_dev_mVs: float | None = optional()
    delta_IAE: float | None = optional()
    overshoot: float | None = optional()
    delta_overshoot_pp: float | None = optional()
    settling_s: float | None = optional()
    steps: int | None = optional()          # a square wave: its steps, and how many settled
    steps_settled: int | None = optional()
    verdict: str | None = optional()
    rtt_mean_ms: float | None = optional()
    rtt_std_ms: float | None = optional()
    rtt_p50_ms: float | None = optional()
    rtt_p95_ms: float | None = optional()
    rtt_p99_ms: float | None = optional()
    mdr_y: float | None = optional()
    mdr_u: float | None = optional()
    stale_u: int | None = optional()
    y_mean_ms: float | None = optional()
    y_std_ms: float | None = optional()
    y_p95_ms: float | None = optional()
    y_p99_ms: float | None = optional()
    u_mean_ms: float | None = optional()
    u_std_ms: float | None = optional()
    u_p95_ms: float | None = optional()
    u_p99_ms: float | None = optional()
    pred_rms_mV: float | None = optional()
    pred_max_mV: float | None = optional()
    pred_dovershoot_pp: float | None = optional()
    explained: bool | None = optional()


@dataclass
class ConditionGroup(Result):
    """The runs of one condition (setting × transport) and the spread of every point field."""

    setting: str
    transport: str
    condition: str
    settings: dict[str, Any]
    runs: list[RunPoint]
    n: int
    stats: dict[str, dict[str, float]]     # field -> degradation.spread (n, mean, std, min, max, median)
    verdicts: dict[str, int]
    run_ids: list[str]


@dataclass
class RunAnalysis(Result):
    """Everything the report knows about one run directory, whatever its loop kind: what the
    run was, its problems and flows, and ``result``, the kind's own typed result of the run
    (None: no loop, or its analysis failed), set by the analysis side of the run's loop kind
    (:class:`kinds.LoopAnalysis`): the ``rlc`` kind's :class:`rlc_result.RlcRunResult`, the
    ``teleop`` kind's :class:`TeleopRunResult`, a plug-in's own. Code that needs a kind's result
    asks the kind's accessor (:func:`rlc_result.rlc_result`, :func:`teleop_run.teleop_result`)."""

    run_id: str
    transport: str
    status: str
    loop_type: str
    cell: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    #: the loop kind's typed result of the run; it writes the run's analysis.json entry (:meth:`RunResult.run_entry`)
    result: RunResult | None = None
    flows: list[FlowResult] = field(default_factory=list)
    meta: RunRecord = series(RunRecord)       # the run's metadata.json (the empty record when unusable)

    @property
    def experiment(self) -> dict[str, Any]:
        """The experiment as the run recorded it ({} when unknown)."""
        return self.meta.experiment

    @property
    def ok(self) -> bool:
        """Whether the kind's result of the run is usable (its ``ok``; False without one)."""
        return self.result is not None and self.result.ok

    def add_problems(self, problems: list[str], prefix: str = "") -> None:
        """Add problems not listed yet."""
        for p in problems:
            if prefix + p not in self.problems:
                self.problems.append(prefix + p)

    def to_json(self, point: RunPoint | None = None) -> dict[str, Any]:
        """The run's entry of analysis.json (with its degradation point): the generic keys,
        then what the kind's result makes of them (:meth:`RunResult.run_entry`)."""
        entry = {"run_id": self.run_id, "transport": self.transport, "status": self.status, "ok": self.ok,
                 "cell": self.cell, "problems": list(self.problems), "loop_type": self.loop_type,
                 "degradation": to_json(point), "prediction": None, "flows": to_json(self.flows)}
        return entry if self.result is None else self.result.run_entry(entry)
