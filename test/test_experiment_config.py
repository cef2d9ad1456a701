"""Experiment files: defaults, and every kind of bad input refused with the key and what is allowed."""
from __future__ import annotations

import subprocess

import pytest
import yaml

from netloop import paths
from netloop.experiment import expand, load_experiment, validate_experiment
from netloop.schema import ConfigError


def test_shipped_experiments_are_valid():
    shipped = sorted(paths.EXPERIMENTS.glob("*.yaml"))
    assert shipped, "no experiment files shipped"
    for path in shipped:
        cfg = load_experiment(path)
        assert cfg.name


def test_defaults_are_the_pound_paper_loop():
    cfg = validate_experiment({}, name="x")
    plant, ctl = cfg.loop.plant, cfg.loop.controller
    assert (plant.R, plant.L, plant.C, plant.period) == (1.0, 0.1, 0.1, 0.02)
    assert (ctl.K, ctl.reference) == (1.0, 1.0)
    assert cfg.transport == ["tcp_nodelay"] and cfg.link == "loopback"
    assert (cfg.loop.publisher_queue_size, cfg.loop.subscriber_queue_size) == (10, 10)


def test_one_word_transport_and_expansion():
    cfg = validate_experiment({"transport": "udp", "repetitions": 3}, name="x")
    assert cfg.transport == ["udp"]
    assert [c.run_id for c in expand(cfg)] == ["udp-r0", "udp-r1", "udp-r2"]


@pytest.mark.parametrize("doc,key,words", [
    ({"transport": "udpp"}, "transport[0]", ["unknown transport 'udpp'", "did you mean 'udp'", "tcp, tcp_nodelay, udp"]),
    ({"loop": {"plant": {"Rr": 1}}}, "loop.plant.Rr", ["unknown key", "did you mean 'R'", "R, L, C, period"]),
    ({"loop": {"plant": {"R": -1}}}, "loop.plant.R", ["out of range", "> 0"]),
    ({"loop": {"plant": {"C": ".nan"}}}, "loop.plant.C", ["expected a number"]),
    ({"loop": {"samples": "many"}}, "loop.samples", ["expected an integer"]),
    ({"repetitions": 0}, "repetitions", [">= 1"]),
    ({"rerun_invalid": 11}, "rerun_invalid", ["out of range", "<= 10"]),
    ({"link": "wify"}, "link", ["unknown link profile 'wify'", "loopback"]),
    ({"loop": {"placement": {"plant": "moon"}}}, "loop.placement.plant", ["unknown host 'moon' for link 'loopback'", "robot, operator"]),
    ({"loop": {"placement": {"plant": "relay"}}}, "loop.placement.plant", ["unknown host 'relay'", "allowed: robot, operator"]),
    ({"loop": {"plant": {"initial_state": [1]}}}, "loop.plant.initial_state", ["exactly 2 items"]),
    ({"colour": "red"}, "colour", ["unknown key", "allowed keys at the top level"]),
])
def test_bad_input_names_key_and_allowed_values(doc, key, words):
    with pytest.raises(ConfigError) as err:
        validate_experiment(doc, source="exp.yaml", name="x")
    assert err.value.key == key
    text = str(err.value)
    assert text.startswith(f"exp.yaml: {key}: ")
    for w in words:
        assert w in text


def test_every_problem_of_a_file_is_reported_at_once():
    doc = {"transport": ["tcp", "quic"], "colour": "red", "repetitions": 0,
           "loop": {"plant": {"R": -1, "C": "big"}, "placement": {"plant": "moon"}},
           "flows": [{"name": "a", "kind": "vidéo"}, {"size_bytes": 1}]}
    with pytest.raises(ConfigError) as err:
        validate_experiment(doc, source="exp.yaml", name="x")
    keys = [k for k, _ in err.value.errors]
    assert keys == ["transport[1]", "colour", "repetitions", "loop.plant.R", "loop.plant.C", "flows[0].kind",
                    "flows[1].size_bytes", "flows[1].name"]
    lines = str(err.value).splitlines()
    assert len(lines) == len(keys) and all(line.startswith("exp.yaml: ") for line in lines)
    assert err.value.key == "transport[1]"   # the first problem, as before


def test_cross_key_problems_are_reported_together():
    """Checks that need the link profile (hosts) run once the keys themselves are valid, and
    report every problem too."""
    with pytest.raises(ConfigError) as err:
        validate_experiment({"loop": {"placement": {"plant": "moon", "controller": "mars"}},
                             "flows": [{"name": "a", "to": ["operator", "sun"]}, {"name": "a"}]}, name="x")
    keys = [k for k, _ in err.value.errors]
    assert keys == ["flows[0].to[1]", "flows[1].name", "loop.placement.plant", "loop.placement.controller"]


def test_typed_model_round_trips_through_plain_data():
    from netloop.model import Experiment
    from netloop.schema import to_dict
    cfg = validate_experiment({"flows": [{"name": "img", "from": "operator", "to": "robot", "subscribers": 2}]},
                              name="x")
    assert isinstance(cfg, Experiment) and cfg.flows[0].from_ == "operator"
    doc = to_dict(cfg)
    assert doc["flows"][0]["from"] == "operator" and doc["flows"][0]["to"] == ["robot"]
    assert validate_experiment(doc) == cfg
    assert cfg.flows[0].subscriber_hosts == ["robot", "robot"]


def test_loop_sample_size_matches_the_generated_message(ros_env):
    """The one constant for the loop message's size, held to the message class catkin generates."""
    code = ("from netloop.msg import LoopSample; import io; b = io.BytesIO(); "
            "LoopSample(padding=b'x' * 100).serialize(b); print(len(b.getvalue()))")
    res = subprocess.run([str(paths.REPO / ".venv/bin/python"), "-c", code], env=ros_env, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    from netloop.loops.rlc import LOOP_SAMPLE_BYTES
    assert int(res.stdout) == LOOP_SAMPLE_BYTES + 100


def test_nan_given_in_yaml_is_refused():
    with pytest.raises(ConfigError, match=r"loop\.plant\.C: expected a number .*nan"):
        validate_experiment(yaml.safe_load("loop: {plant: {C: .nan}}"), name="x")


def test_cli_refuses_invalid_experiment_and_starts_nothing(tmp_path, ros_env):
    bad = tmp_path / "bad.yaml"
    bad.write_text("transport: [tcp, quic]\n")
    results = tmp_path / "results"
    res = subprocess.run([str(paths.REPO / ".venv/bin/python"), "-m", "netloop", "run", str(bad),
                          "--out", str(results)], env=ros_env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "transport[1]: unknown transport 'quic'" in res.stderr
    assert "allowed: tcp, tcp_nodelay, udp" in res.stderr
    assert not results.exists(), "nothing may be created for an invalid experiment"


def test_cli_dry_run_lists_runs(ros_env):
    res = subprocess.run([str(paths.REPO / ".venv/bin/python"), "-m", "netloop", "run", "--dry-run",
                          str(paths.EXPERIMENTS / "rlc_loopback.yaml")], env=ros_env, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "tcp-r0" in res.stdout and "udp-r0" in res.stdout and "3 runs" in res.stdout


def test_a_message_the_transport_could_never_carry_is_refused_up_front():
    """The priority relay drops a message larger than its whole send queue, every time: such an
    experiment would run and deliver nothing, so it is refused before anything starts, naming
    the option and the size it needs (in every cell of a sweep)."""
    doc = {"transport": ["tcp", "priority", "nimbro"], "loop": {"type": "none"}, "link": "wifi6",
           "flows": [{"name": "bulk", "kind": "generic", "size_bytes": 1024, "period": 0.1}],
           "sweep": {"flows[0].size_bytes": [1024, 262144]}, "duration": 5,
           "transport_options": {"nimbro": {"max_message_bytes": 65536}}}
    with pytest.raises(ConfigError) as err:
        validate_experiment(doc, source="exp.yaml", name="x")
    text = str(err.value)
    assert "transport_options.priority.max_queue_bytes: a 262144-byte message takes 269504 bytes" in text
    assert "set max_queue_bytes to at least 269504 (flow 'bulk')" in text
    assert "transport_options.nimbro.max_message_bytes: a 262144-byte message is larger" in text
    assert "size_bytes=1024" not in text          # the small cell is fine
    doc["transport_options"] = {"priority": {"max_queue_bytes": 269504}}
    validate_experiment(doc, name="x")            # exactly enough: accepted
