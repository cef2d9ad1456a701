"""A configuration file that is not one (bytes that are not UTF-8, nothing in it, a folder)
gets one line naming the file, from `netloop validate` and `netloop run` alike, before
anything starts; a problem in a file the experiment names (a hosts file) names that file."""
from __future__ import annotations

import subprocess

import pytest
import yaml

from netloop import paths
from netloop.experiment import load_experiment
from netloop.schema import ConfigError

NETLOOP = str(paths.REPO / "bin" / "netloop")


def _bad_files(tmp_path):
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00name: x\n")
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "comments.yaml").write_text("# only a comment\n\n")
    (tmp_path / "folder.yaml").mkdir()
    return {"binary.yaml": "not UTF-8 text (byte 0xff at offset 0)",
            "empty.yaml": "the file is empty",
            "comments.yaml": "the file is empty",
            "folder.yaml": "is a directory"}


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_file_that_is_not_a_yaml_document_is_refused_in_one_line(tmp_path, command):
    for name, words in _bad_files(tmp_path).items():
        path = tmp_path / name
        args = [NETLOOP, command, str(path)] + (["--out", str(tmp_path / "results")] if command == "run" else [])
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and words in lines[0], (name, r.stderr)
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "results").exists()   # nothing started, nothing written


def test_the_loader_raises_config_errors_naming_the_file(tmp_path):
    for name, words in _bad_files(tmp_path).items():
        with pytest.raises(ConfigError) as err:
            load_experiment(tmp_path / name)
        assert err.value.source == str(tmp_path / name) and words in str(err.value)


def test_a_bad_hosts_file_is_named_in_the_experiments_errors(tmp_path):
    hosts = tmp_path / "lab.yaml"
    hosts.write_text(yaml.safe_dump({"hosts": {"operator": {"address": "10.0.0.1", "local": True},
                                               "robot": {"address": "10.0.0.2", "bogus": 1}}}))
    exp = paths.REPO / "experiments" / "real" / "rlc_wifi.yaml"
    r = subprocess.run([NETLOOP, "validate", str(exp), "--machines", str(hosts)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "hosts.robot.bogus: unknown key" in r.stderr and f"(in {hosts})" in r.stderr, r.stderr
    (tmp_path / "empty_hosts.yaml").write_text("")
    r = subprocess.run([NETLOOP, "validate", str(exp), "--machines", str(tmp_path / "empty_hosts.yaml")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "the file is empty" in r.stderr and "empty_hosts.yaml" in r.stderr, r.stderr


def test_the_shared_reader_gives_one_line_per_kind_of_bad_file(tmp_path):
    """load_config_file: what every configuration file (experiment, link profile, hosts file,
    transport options) is read through."""
    from netloop.schema import load_config_file
    cases = {"syntax.yaml": ("a: [1, 2\nb: 3\n", "not valid YAML at line 2, column 2"),
             "list.yaml": ("- 1\n- 2\n", "expected a mapping of keys at the top level, got a list"),
             "scalar.yaml": ("just words\n", "expected a mapping of keys at the top level, got a string"),
             "syntax.json": ('{"a": 1,\n "b": }', "not valid JSON at line 2, column 7"),
             "blank.json": ("  \n", "the file is empty"),
             "missing.yaml": (None, "file not found")}
    for name, (text, words) in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        with pytest.raises(ConfigError) as err:
            load_config_file(str(tmp_path / name))
        assert err.value.source == str(tmp_path / name) and words in str(err.value), (name, str(err.value))
        assert len(str(err.value).splitlines()) == 1
    (tmp_path / "ok.json").write_text('{"a": {"b": [1, 2]}}')
    assert load_config_file(str(tmp_path / "ok.json")) == {"a": {"b": [1, 2]}}
    assert load_config_file(str(tmp_path / "list.yaml"), mapping=False) == [1, 2]


def test_every_class_of_problem_is_reported_at_once(tmp_path):
    """A key out of range, an unknown key and an unknown host in flows[].to and hosts: one
    `netloop validate`, every problem (the checks across keys no longer wait for the rest)."""
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nlink: wifi6\nloop: {plant: {R: -1}}\nbogus: 1\n"
                    "flows: [{name: a, to: nowhere}]\nhosts: {mars: {cpu: 0.5}}\n")
    r = subprocess.run([NETLOOP, "validate", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    for words in ("loop.plant.R: -1 is out of range", "bogus: unknown key", "flows[0].to: unknown host 'nowhere'",
                  "hosts.mars: unknown host 'mars'"):
        assert words in r.stderr, (words, r.stderr)
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert {k for k, _ in err.value.errors} == {"loop.plant.R", "bogus", "flows[0].to", "hosts.mars"}


def test_checks_across_keys_wait_for_the_keys_they_read(tmp_path):
    """With the link itself invalid the hosts are unknown: no flow is judged against the wrong
    link's hosts."""
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nlink: wifi7\nflows: [{name: a, to: relay}]\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert [k for k, _ in err.value.errors] == ["link"]


def test_a_bad_link_profile_file_is_one_line_naming_it(tmp_path, monkeypatch):
    from netloop.testbed import load_profile, profiles
    monkeypatch.setattr(profiles, "LINKS_DIR", tmp_path)
    (tmp_path / "binary.yaml").write_bytes(b"type: shaped\n\xff\n")
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    (tmp_path / "listed.yaml").write_text("- type: shaped\n")
    (tmp_path / "broken.yaml").write_text("type: shaped\ndelay_ms: [1\n")
    (tmp_path / "child.yaml").write_text("extends: empty\ndelay_ms: 5\n")
    for name, words in {"binary": "not UTF-8 text (byte 0xff at offset 13)", "empty": "the file is empty",
                        "listed": "expected a mapping of keys at the top level, got a list",
                        "broken": "not valid YAML at line 3", "child": "the file is empty"}.items():
        with pytest.raises(ConfigError) as err:
            load_profile(name)
        text = str(err.value)
        assert len(text.splitlines()) == 1 and words in text, (name, text)
        named = "empty" if name == "child" else name        # the file at fault is the one named
        assert err.value.source == str(tmp_path / f"{named}.yaml"), (name, err.value.source)


def test_a_link_profile_reports_every_problem_at_once(tmp_path):
    """Keys out of range and unknown ones together; the keys of a Wi-Fi profile that must agree,
    all that disagree."""
    from netloop.testbed import load_profile
    with pytest.raises(ConfigError) as err:
        load_profile("shaped", {"delay_ms": -1, "loss": 2, "bogus": 1})
    assert [k for k, _ in err.value.errors] == ["delay_ms", "loss", "bogus"]
    with pytest.raises(ConfigError) as err:
        load_profile("wifi6", {"hops": 2, "robots": 2, "max_range_m": 5, "standard": "802.11g",
                               "phy_rate": "ErpOfdmRate6Mbps", "qdisc_rate_fraction": 0.9})
    assert {k for k, _ in err.value.errors} == {"max_range_m", "qdisc_rate_fraction", "robots"}


def test_a_link_profile_is_a_typed_model(tmp_path):
    """Read by attribute only; to_dict() gives its keys in the schema's order (what metadata.json
    records as the link's params), and validating that gives the profile back."""
    from collections.abc import Mapping

    from netloop.testbed import load_profile, validate_profile
    from netloop.testbed.profile_models import Ns3WifiProfile, ShapedProfile
    wifi, shaped = load_profile("wifi6"), load_profile("shaped", {"delay_ms": 20})
    assert isinstance(wifi, Ns3WifiProfile) and wifi.phy_rate == "OfdmRate6Mbps"
    assert isinstance(shaped, ShapedProfile) and shaped.delay_ms == 20.0 and shaped.to_dict()["name"] == "shaped"
    assert not isinstance(shaped, Mapping) and "phy_rate" not in shaped.to_dict()
    assert list(shaped.to_dict()) == list(ShapedProfile.schema.fields)
    assert validate_profile(shaped.to_dict()) == shaped and validate_profile(wifi) == wifi
    with pytest.raises(TypeError):
        shaped["delay_ms"]


def test_every_link_type_has_a_model_and_an_emulator():
    from netloop.testbed.links import IMPLEMENTATIONS
    from netloop.testbed.profile_models import MODELS
    assert list(MODELS) == list(IMPLEMENTATIONS)


def test_an_experiment_names_its_bad_link_profile_file(tmp_path, monkeypatch):
    from netloop.experiment import validate_experiment
    from netloop.testbed import profiles
    monkeypatch.setattr(profiles, "LINKS_DIR", tmp_path)
    (tmp_path / "bad.yaml").write_bytes(b"\xfftype: shaped\n")
    (tmp_path / "ok.yaml").write_text("type: shaped\n")
    with pytest.raises(ConfigError) as err:
        validate_experiment({"name": "x", "link": "bad"}, "exp.yaml")
    assert err.value.errors == [("link", f"not UTF-8 text (byte 0xff at offset 0): a text file is expected "
                                         f"(in {tmp_path / 'bad.yaml'})")]
    with pytest.raises(ConfigError) as err:
        validate_experiment({"name": "x", "link": "ok", "link_params": {"delay_ms": -3}}, "exp.yaml")
    assert err.value.key == "link_params.delay_ms"
