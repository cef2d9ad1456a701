"""A loop kind is one registry entry: a toy fourth kind, defined and registered in this module
alone, has its own keys in the experiment file (validated, defaulted, recorded and listed in
the key reference), runs end to end (real roscore and nodes on loopback) and gets its own
section, its rows of "Every loop run" and its CSV in the report, with no other file touched.
Also: teleop runs are loop runs. (That a kind's analysis side imports no module of the run is
test_analysis_imports'.)

The toy kind "ping": the package's flow_source on the robot sends ``loop.samples`` messages
every ``loop.ping.period`` seconds on /toy, a flow_sink on the operator records them; its
analysis counts what arrived.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from netloop import paths
from netloop.analysis.glossary import Term
from netloop.analysis.kinds import LoopAnalysis, ReportContext
from netloop.analysis.records import read_events
from netloop.analysis.rendering import Document, Section
from netloop.analysis.report import closing, write_report_document
from netloop.analysis.results import LoopRunResult, RunAnalysis, RunResult, StepResponse, TeleopRunResult
from netloop.analysis.rlc_result import RlcRunResult, rlc_loop, rlc_result
from netloop.analysis.teleop_run import teleop_result
from netloop.experiment import validate_experiment
from netloop.loops import (LoopKindEntry, get_loop_kind, loop_analysis, loop_kind_entry, loop_kind_names,
                           register_loop_kind)
from netloop.loops.base import LoopKind, LoopStart, StartedLoop
from netloop.run_files import RunRecord, load_analysis, load_metadata
from netloop.model import Experiment
from netloop.runner import campaign_dir_for, run_experiment
from netloop.schema import ConfigError, Num, describe, key, section
from netloop.transports.base import CrossingTopic


@section("the toy ping kind (loop.type ping)")
class PingConfig:
    """The toy's own keys: ``loop.ping.*``."""

    period: float = key(Num(0.02, "seconds between pings", gt=0, le=1))


class PingLoop(LoopKind):
    """The run side: one stream robot → operator, ended by its sender."""

    name = "ping"
    description = "a toy: flow_source on the robot pings the operator's flow_sink"

    def crossing_topics(self, exp) -> list[CrossingTopic]:
        return [CrossingTopic("/toy", "netloop/LoopSample", "robot", "operator", 64, exp.loop.ping.period)]

    def run_seconds(self, exp) -> float:
        return exp.loop.samples * exp.loop.ping.period + 1.0

    def start(self, ctx: LoopStart) -> StartedLoop:
        rec = ctx.run_dir / "records"
        ctx.hosts.start("toy_sink", "operator", [str(paths.node_binary("flow_sink")), "__name:=toy_sink", "flow:=/toy"],
                        {"kind": "rx", "transport": ctx.transport.subscriber_transport("/toy", 64),
                         "record_path": str(rec / "toy_sink.csv")})
        source = ctx.hosts.start("toy_source", "robot",
                                 [str(paths.node_binary("flow_source")), "__name:=toy_source", "flow:=/toy"],
                                 {"message": "loop_sample", "size_bytes": 64, "period": ctx.experiment.loop.ping.period,
                                  "count": ctx.experiment.loop.samples, "record_path": str(rec / "toy_source.csv")})
        return StartedLoop(ending=source, connections={"/toy": ("/toy_source", "/toy_sink")})


@dataclass
class PingResult(RunResult):
    """The toy's typed result of one run (analysis.json's ``result``): usable when a ping arrived."""

    sent: int
    received: int

    @property
    def ok(self) -> bool:
        return self.received > 0


class PingAnalysis(LoopAnalysis):
    """The analysis side: how many pings arrived, its section, its rows and its CSV."""

    name = "ping"
    glossary_terms = (Term("pings received", "", "Toy pings that reached the sink."),)

    def analyse_run(self, run_dir: Path, meta: RunRecord) -> RunAnalysis:
        a = super().analyse_run(run_dir, meta)
        sent = len(read_events(Path(run_dir) / "records" / "toy_source.csv").select("tx", "/toy"))
        got = len(read_events(Path(run_dir) / "records" / "toy_sink.csv").select("rx", "/toy"))
        a.result = PingResult(sent, got)
        return a

    def run_table(self, runs: list[RunAnalysis]):
        return ["run", "pings sent", "pings received"], [[a.run_id, a.result.sent, a.result.received] for a in runs]

    def sections(self, runs: list[RunAnalysis], ctx: ReportContext) -> list[Section]:
        return [Section("Ping loop").p(f"{sum(a.result.received for a in runs)} pings arrived.")]

    def write_files(self, runs: list[RunAnalysis], ctx: ReportContext) -> None:
        header, rows = self.run_table(runs)
        with open(ctx.path / "pings.csv", "w", newline="") as f:
            csv.writer(f).writerows([header, *rows])


@pytest.fixture
def ping_kind():
    register_loop_kind(LoopKindEntry("ping", PingLoop, PingAnalysis, PingConfig))
    yield
    from netloop import loops   # noqa: PLC0415 - leave the registry as the other tests expect it
    loops._KINDS.pop("ping")


@pytest.mark.integration
def test_a_kind_registered_here_runs_end_to_end_and_has_its_report_section(ping_kind, tmp_path):
    assert loop_kind_names()[-1] == "ping" and isinstance(get_loop_kind("ping"), PingLoop)
    cfg = validate_experiment({"name": "ping", "link": "loopback", "transport": "tcp", "repetitions": 1,
                               "loop": {"type": "ping", "samples": 20, "ping": {"period": 0.01}}}, name="ping")
    assert cfg.loop.ping.period == 0.01
    out = campaign_dir_for(cfg, tmp_path)
    run_experiment(cfg, out, log=lambda _: None)
    meta = load_metadata(out / "runs" / "tcp-r0").to_json()
    assert meta["status"] == "complete", meta.get("error")
    assert meta["loop"]["type"] == "ping" and meta["negotiated_transport"]["/toy"] == "TCPROS"
    assert meta["experiment"]["loop"]["ping"] == {"period": 0.01}   # recorded beside the generic keys
    tx = read_events(out / "runs" / "tcp-r0" / "records" / "toy_source.csv").select("tx", "/toy")
    assert 0.005 < float(np.median(np.diff(tx.stamp_ns))) / 1e9 < 0.015   # sent at the toy's own period

    doc = write_report_document(out)
    md = (out / "report.md").read_text()
    assert "## Ping loop" in md and "20 pings arrived." in md
    assert "## Every loop run" in md and "| tcp-r0 | 20 | 20 |" in md
    glossary = md.split("## Glossary\n", 1)[1]
    assert "| pings received | – | Toy pings that reached the sink. |" in glossary     # the kind's words
    assert "| MDR |" in glossary and "IAE(y − baseline)" not in glossary           # the generic ones, no rlc's
    assert list(csv.reader(open(out / "pings.csv"))) == [["run", "pings sent", "pings received"], ["tcp-r0", "20", "20"]]
    entry = load_analysis(out)[0]
    assert entry.get("loop_type") == "ping" and entry.get("result") == {"sent": 20, "received": 20}
    assert not (out / "runs.csv").exists()      # the rlc kind's tables are the rlc kind's
    assert doc.written[0] == out / "report.md"


def test_a_kinds_own_keys_are_validated_defaulted_and_listed_only_while_it_is_registered(ping_kind):
    assert validate_experiment({"name": "x", "loop": {"type": "ping"}}, name="x").loop.ping.period == 0.02
    with pytest.raises(ConfigError) as err:
        validate_experiment({"name": "x", "loop": {"type": "ping", "ping": {"period": 0, "rate": 1}}}, name="x")
    assert [k for k, _ in err.value.errors] == ["loop.ping.period", "loop.ping.rate"]   # every problem at once
    rows = {row[0]: row for row in describe(Experiment.schema)}
    assert rows["loop.ping.period"][1:] == ("a number > 0 and <= 1", "0.02", "seconds between pings")
    assert "loop.teleop.world" in rows                    # the built-in kind's section, the same way
    from netloop import loops   # noqa: PLC0415
    loops._KINDS.pop("ping")
    try:
        assert "loop.ping.period" not in {row[0] for row in describe(Experiment.schema)}
        with pytest.raises(ConfigError, match="loop.ping: unknown key"):
            validate_experiment({"name": "x", "loop": {"ping": {}}}, name="x")
    finally:
        register_loop_kind(LoopKindEntry("ping", PingLoop, PingAnalysis, PingConfig))


def test_an_unknown_loop_type_is_refused_naming_the_known_ones():
    with pytest.raises(KeyError, match="unknown loop type 'ping'; allowed: rlc, teleop, none"):
        loop_kind_entry("ping")
    with pytest.raises(Exception, match="loop.type"):
        validate_experiment({"name": "x", "loop": {"type": "ping"}}, name="x")


def test_every_kind_is_found_through_the_one_registry():
    for name in loop_kind_names():
        assert get_loop_kind(name).name == name
        assert loop_analysis(name).name == name


def _trial(run_id: str, local: bool) -> TeleopRunResult:
    step = StepResponse(t=[0.0, 1.0], y=[0.0, 1.0], step=1.0, metrics={"RiseTime": 0.4})
    return TeleopRunResult(run_dir=run_id, run_id=run_id, status="complete", transport="udp", local=local, ok=True,
                           speed=step, heading=step, odom_delay={"mean_ms": 1.0, "p99_ms": 2.0},
                           command_age={"mean_ms": 3.0})


def test_teleop_runs_are_in_every_loop_run():
    runs = [RunAnalysis(run_id=r, transport="udp", status="complete", loop_type="teleop", result=_trial(r, local))
            for r, local in (("udp-r0", False), ("udp__trial=robot-r0", True))]
    table = loop_analysis("teleop").run_table(runs)
    header, rows = table
    assert header[:4] == ["run", "transport", "status", "where"]
    assert rows[0][:4] == ["udp-r0", "udp", "complete", "over udp"]
    assert rows[1][3] == "trial on the car (local)"
    md = Document("teleop", base=Path(".")).add(closing([table], [], [], [])).markdown()
    assert "## Every loop run" in md and "| udp-r0 | udp | complete | over udp |" in md


def test_a_run_holds_one_kind_result_which_writes_its_entry_and_says_ok():
    """A run's analysis holds its kind's typed result in ``result``: it decides ``ok`` and the
    run's analysis.json entry, its "ok" the same (a plug-in's under ``result``; a teleop run's entry is the generic
    one; an rlc run's has its loop result's keys at the top level and its prediction)."""
    generic = dict(run_id="udp-r0", transport="udp", status="complete", cell={"condition": "udp"})
    none = RunAnalysis(loop_type="none", **generic)
    assert not none.ok and none.to_json() == {
        "run_id": "udp-r0", "transport": "udp", "status": "complete", "ok": False, "cell": {"condition": "udp"},
        "problems": [], "loop_type": "none", "degradation": None, "prediction": None, "flows": []}
    ping = RunAnalysis(loop_type="ping", result=PingResult(3, 2), **generic)
    assert ping.ok and ping.to_json() == none.to_json() | {"loop_type": "ping", "ok": True,
                                                           "result": {"sent": 3, "received": 2}}
    assert not RunAnalysis(loop_type="ping", result=PingResult(3, 0), **generic).ok
    teleop = RunAnalysis(loop_type="teleop", result=_trial("udp-r0", False), **generic)
    assert teleop.ok and teleop.to_json() == none.to_json() | {"loop_type": "teleop", "ok": True}
    assert teleop_result(teleop) is teleop.result and teleop_result(ping) is None and rlc_result(teleop) is None
    loop = LoopRunResult(run_id="udp-r0", transport="udp", status="complete", ok=True, cell={"condition": "udp"},
                         samples=5)
    rlc = RunAnalysis(loop_type="rlc", result=RlcRunResult(loop), problems=["late"], **generic)
    entry = rlc.to_json()
    assert rlc.ok and rlc_loop(rlc) is loop and rlc_result(rlc).prediction is None
    assert list(entry) == list(loop.to_json()) + ["loop_type", "degradation", "prediction", "flows", "timing"]
    assert entry["problems"] == ["late"] and entry["samples"] == 5 and entry["prediction"] is None
    assert not RunAnalysis(loop_type="rlc", result=RlcRunResult(LoopRunResult("x", "udp", "failed")), **generic).ok
