"""Repeated steps (loop.controller.square_wave): the schedule, the per-step analysis with its
intervals and verdict on synthetic records whose answer is known, the keys refused by
name, and one short real run (real roscore, the loop nodes, loopback) cut into its steps."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from netloop import paths, reference, rosenv
from netloop.analysis import repeated_steps, synthetic
from netloop.analysis.report import analyse_run, write_report
from netloop.analysis.rlc_result import rlc_loop
from netloop.experiment import validate_experiment
from netloop.loops.rlc import rlc_parameters, run_schedule, write_schedule
from netloop.master import wait_for
from netloop.schema import ConfigError

WAVE = {"period": 1.0, "count": 3, "low": 0.0, "random_phase": True, "seed": 7}


def doc(transports, wave=WAVE, samples=170, repetitions=2) -> dict:
    return {"name": "steps", "link": "loopback", "transport": transports, "repetitions": repetitions,
            "loop": {"type": "rlc", "controller": {"K": 1.0, "reference": 1.0, "square_wave": dict(wave)},
                     "samples": samples}}


# -- the schedule ----------------------------------------------------------------------------------

def test_schedule_alternates_and_is_seeded_per_repetition():
    s0 = reference.square_wave_schedule(WAVE, 1.0, 0.02, repetition=0)
    assert s0 == reference.square_wave_schedule(WAVE, 1.0, 0.02, repetition=0)     # seeded
    assert s0 != reference.square_wave_schedule(WAVE, 1.0, 0.02, repetition=1)     # a fresh phase per repetition
    steps = reference.step_list(s0)
    assert [(b, a) for _, b, a in steps] == [(0.0, 1.0), (1.0, 0.0)] * 3
    for j, (k, _, _) in enumerate(steps):   # each step 0 .. period / 8 after its nominal time
        assert j * 25 <= k <= j * 25 + math.ceil(0.125 / 0.02)


def test_without_square_wave_the_reference_is_one_step():
    assert reference.square_wave_schedule({"count": 0}, 1.5, 0.02) == [(0, 1.5)]
    exact = reference.square_wave_schedule(dict(WAVE, random_phase=False), 1.0, 0.02)
    assert [k for k, _, _ in reference.step_list(exact)] == [0, 25, 50, 75, 100, 125]


# -- validation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("wave,key", [
    ({"period": -1.0, "count": 2}, "loop.controller.square_wave.period"),
    ({"period": 1.0, "count": -1}, "loop.controller.square_wave.count"),
    ({"period": 1.0, "count": 2, "random_phase": "sometimes"}, "loop.controller.square_wave.random_phase"),
    ({"perod": 1.0, "count": 2}, "loop.controller.square_wave.perod"),
    ({"period": 1.0, "count": 50}, "loop.samples"),                          # 50 periods do not fit 170 samples
    ({"period": 0.1, "count": 2}, "loop.controller.square_wave.period"),     # fewer than 5 samples per step
])
def test_bad_square_wave_refused_naming_the_key(wave, key):
    with pytest.raises(ConfigError) as err:
        validate_experiment(doc(["tcp"], wave), name="steps")
    assert key in str(err.value)


# -- the analysis on synthetic records -----------------------------------------------------------

def delays_by_transport(extra: dict[str, float]):
    """(y, u) delays of a run: 1 ms each way with a little noise drawn per repetition (the same
    for every transport), plus ``extra[transport]`` seconds on u."""
    def delays(cell, run_cfg, rng):
        n = run_cfg["loop"]["samples"]
        noise = np.random.default_rng(cell.repetition).uniform(0, 0.002, size=(2, n))
        return 0.001 + noise[0], 0.001 + noise[1] + extra.get(cell.transport, 0.0)
    return delays


def campaign(tmp_path, extra):
    out = synthetic.write_campaign(tmp_path / "c", doc(["tcp", "udp"]), delays_by_transport(extra))
    runs = [analyse_run(d) for d in sorted((out / "runs").iterdir())]
    groups = repeated_steps.transport_steps(runs, lambda a: "")
    return out, runs, repeated_steps.rank_steps(groups)


def test_a_known_shift_is_found_with_separated_intervals(tmp_path):
    out, runs, ranked = campaign(tmp_path, {"udp": 0.030})
    assert all(len(rlc_loop(a).steps) == 6 for a in runs)                         # 3 periods, 2 repetitions
    by = {r.group.transport: r for r in ranked}
    assert [r.group.transport for r in ranked] == ["tcp", "udp"]
    assert by["udp"].group.median() > by["tcp"].group.median()
    assert repeated_steps.clear_difference(by["tcp"].interval, by["udp"].interval)
    assert by["udp"].verdict.startswith("clearly worse") and by["tcp"].clearly_better_than == ["udp"]
    # the report: the steps' ranking heads the summary; the verdict in repeated_steps.json
    write_report(out)
    text = (out / "report.md").read_text()
    assert "**tcp** kept the loop closest to local over 12 repeated steps (2 runs)" in text
    assert "## Repeated steps" in text and "figures/loop_delay_timeline.png" in text
    verdict = {row["transport"]: row for row in json.loads((out / "repeated_steps.json").read_text())}
    assert verdict["udp"]["clearly_better_than"] == [] and verdict["tcp"]["clearly_better_than"] == ["udp"]
    entries = json.loads((out / "analysis.json").read_text())
    assert all(len(e["steps"]) == 6 for e in entries)


def test_equal_inputs_are_not_a_clear_difference(tmp_path):
    _, _, ranked = campaign(tmp_path, {})
    a, b = ranked
    assert a.interval == b.interval and not repeated_steps.clear_difference(a.interval, b.interval)
    assert b.verdict == repeated_steps.SAME and not a.clearly_better_than and not b.clearly_better_than


def test_compare_says_which_differences_are_clear(tmp_path):
    from netloop.analysis.compare import compare  # noqa: PLC0415
    a, _, _ = campaign(tmp_path / "a", {"udp": 0.030})
    b, _, _ = campaign(tmp_path / "b", {})
    text = compare(a, b, tmp_path / "out", labels=("slow udp", "fast udp")).markdown()
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| tcp") or
            line.startswith("| udp")}
    assert "B clearly better" in rows["udp"] and repeated_steps.SAME in rows["tcp"]


def test_the_baseline_follows_the_same_square_wave(tmp_path):
    """Zero delay: every step matches the local baseline's to rounding."""
    out = synthetic.write_campaign(tmp_path / "z", doc(["tcp"], repetitions=1),
                                   lambda cell, cfg, rng: (np.zeros(170), np.zeros(170)))
    run = analyse_run(out / "runs" / "tcp-r0")
    steps = rlc_loop(run).steps
    assert len(steps) == 6 and max(s["iae_mVs"] for s in steps) < 1e-6


def test_bootstrap_interval_is_seeded_and_covers_the_median():
    v = np.random.default_rng(3).normal(10.0, 1.0, 40)
    lo, hi = repeated_steps.bootstrap_ci(v)
    assert (lo, hi) == repeated_steps.bootstrap_ci(v) and lo < np.median(v) < hi
    assert all(math.isnan(x) for x in repeated_steps.bootstrap_ci([]))


# -- one real run ------------------------------------------------------------------------------------

@pytest.mark.integration
def test_real_loop_nodes_follow_the_square_wave(roscore, tmp_path):
    """The controller node follows the schedule: the records of a real 3.4 s run cut into the
    six steps of three periods, each close to the local baseline (loopback)."""
    cfg = validate_experiment(doc(["tcp_nodelay"], repetitions=1), name="steps")
    run_dir = tmp_path / "tcp_nodelay-r0"
    (run_dir / "records").mkdir(parents=True)
    schedule = run_schedule(cfg.loop, repetition=0)
    write_schedule(run_dir, cfg.loop, 0, schedule)
    roscore.set_params(rlc_parameters(cfg.loop, schedule), "/rlc")
    records = run_dir / "records"
    roscore.set_params({"record_path": str(records / "controller.csv")}, "/controller")
    roscore.set_params({"samples": cfg.loop.samples, "warmup": 0.2, "record_path": str(records / "plant.csv")},
                       "/plant")
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    roscore.group.start("controller", [str(paths.node_binary("loop_controller")), "__name:=controller"], env=env)
    plant = roscore.group.start("plant", [str(paths.node_binary("rlc_plant")), "__name:=plant"], env=env)
    assert plant.popen.wait(timeout=30) == 0
    spec = validate_experiment(doc(["tcp_nodelay"], repetitions=1), name="steps")
    from netloop.model import RunSpec  # noqa: PLC0415
    meta = {"format": "netloop-run/1", "records_format": "netloop-events/1", "status": "complete",
            "run_id": run_dir.name, "experiment": RunSpec(spec, "tcp_nodelay", 0, "tcp_nodelay").metadata(),
            "loop": {"type": "rlc"}}
    (run_dir / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    assert wait_for(lambda: (records / "controller.csv").exists(), 5)
    a = analyse_run(run_dir)
    assert a.ok, a.problems
    steps = rlc_loop(a).steps
    assert [s["direction"] for s in steps] == ["up", "down"] * 3
    assert [s["k"] for s in steps] == [k for k, _, _ in reference.step_list(schedule)]
    # loopback: each step near the baseline's (a step that followed the wrong reference would be
    # off by the whole step, ~100 mV·s)
    assert max(s["iae_mVs"] for s in steps) < 20, steps
