"""The run directory's three JSON files (netloop.run_files): typed records that round-trip, an
older format read, a newer one refused by name, a key of the wrong type refused naming it,
atomic writes; and no module but the run-directory modules opens those files."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from netloop import run_files
from netloop.rundir import RunDir, RunMetadata
from netloop.run_files import (ANALYSIS_FORMAT, CAMPAIGN_FORMAT, RUN_FORMAT, CampaignCell, CampaignRecord,
                               MetadataError, RunFileError, RunRecord, load_analysis, load_campaign,
                               load_metadata, save_analysis, save_campaign, save_metadata)

REPO = Path(__file__).resolve().parents[1]

#: a metadata.json as the runner leaves it (keys of a real run of 2026-11-26), with a key
#: this version does not know
METADATA = {
    "format": RUN_FORMAT, "records_format": "netloop-events/1", "status": "complete",
    "start_time": "2026-11-26T17:51:33.000+00:00", "start_unix": 1795715493.0, "end_time": "2026-11-26T17:52:00+00:00",
    "git": {"commit": "a09bfd0", "dirty": False}, "host": {"cpu": "Xeon", "cores": 2}, "ros": {"distro": "debian"},
    "run_id": "tcp-r0", "experiment": {"transport": "tcp", "loop": {"type": "rlc"}, "cell": {"settings": {}}},
    "transport": {"name": "tcp"}, "link": {"profile": "wifi6", "capacity_mbit": 6.0}, "loop": {"type": "rlc"},
    "negotiated_transport": {"/y": "TCPROS"}, "node_uris": {}, "masters": {}, "cpu": {"robot": {"core_share": 0.2}},
    "link_health": {"valid": True}, "cpu_steal_s": 0.5, "phases": {"connected": 1.2}, "end_unix": 1795715520.0,
    "error": None, "exit_codes": {"plant": 0}, "faults": [{"start": 1.0, "end": 2.0}],
    "from_a_later_version": {"kept": True},
}


def test_metadata_round_trips_with_the_same_keys_and_values(tmp_path):
    (tmp_path / "metadata.json").write_text(json.dumps(METADATA))
    record = load_metadata(tmp_path)
    assert record.status == "complete" and record.link["capacity_mbit"] == 6.0 and record.faults[0]["end"] == 2.0
    assert record.transport_name == "tcp" and record.loop_type == "rlc" and record.link_valid is True
    assert record.extra == {"from_a_later_version": {"kept": True}}
    assert record.ros2 == {} and record.problem is None
    (tmp_path / "copy").mkdir()
    save_metadata(tmp_path / "copy", record)
    assert json.loads((tmp_path / "copy" / "metadata.json").read_text()) == METADATA
    assert not list(tmp_path.glob("copy/.*tmp"))      # written through a temporary file, renamed


def test_run_metadata_writes_a_record_the_reader_takes(tmp_path):
    meta = RunMetadata(tmp_path, run_id="udp-r1", experiment={"transport": "udp"})
    assert load_metadata(tmp_path).status == "running" and load_metadata(tmp_path).problem.startswith(
        "run incomplete")
    meta.finish("failed", error="boom", exit_codes={"plant": 1})
    record = RunDir(tmp_path).load_metadata()
    assert (record.status, record.error, record.exit_codes, record.run_id) == ("failed", "boom", {"plant": 1}, "udp-r1")
    assert record.problem == "run failed: boom" == RunDir(tmp_path).load_metadata().problem
    assert set(meta.data) >= {"format", "records_format", "start_time", "start_unix", "end_time", "end_unix", "git"}


def test_a_newer_metadata_format_is_refused_by_name(tmp_path):
    (tmp_path / "metadata.json").write_text(json.dumps(METADATA | {"format": "netloop-run/2"}))
    with pytest.raises(MetadataError, match=r"metadata.json has format 'netloop-run/2', expected 'netloop-run/1'"):
        load_metadata(tmp_path)


@pytest.mark.parametrize("text, message", [
    (None, "metadata.json missing"), ("{", "metadata.json unreadable"), ("[1]", "a JSON list, expected an object"),
    (json.dumps({"link": [1]}), "'link' is a JSON list, expected an object"),
    (json.dumps({"start_unix": "soon"}), "'start_unix' is a JSON str, expected a number")])
def test_a_broken_metadata_file_is_refused_naming_the_problem(tmp_path, text, message):
    if text is not None:
        (tmp_path / "metadata.json").write_text(text)
    with pytest.raises(MetadataError, match=re.escape(message)) as err:
        load_metadata(tmp_path)
    assert "\n" not in str(err.value) and str(tmp_path) in str(err.value)


def test_campaign_round_trip_and_the_unversioned_older_format(tmp_path):
    older = {"experiment": "demo", "cells": [   # campaign.json before it named its format (2026-11-25)
        {"run_id": "tcp-r0", "transport": "tcp", "condition": "tcp", "settings": {}, "repetition": 0,
         "status": "complete", "error": None, "invalid_attempts": 1}]}
    (tmp_path / "campaign.json").write_text(json.dumps(older))
    record = load_campaign(tmp_path)
    assert record.experiment == "demo" and record.cells[0].invalid_attempts == 1 and record.cells[0].status == "complete"
    save_campaign(tmp_path, record)
    assert json.loads((tmp_path / "campaign.json").read_text()) == {"format": CAMPAIGN_FORMAT, **older}
    assert load_campaign(tmp_path) == record
    new = CampaignRecord("x", [CampaignCell(run_id="udp-r0", transport="udp", status="missing")])
    save_campaign(tmp_path, new)
    assert load_campaign(tmp_path).cells[0].to_json() == {
        "run_id": "udp-r0", "transport": "udp", "condition": None, "settings": {}, "repetition": None,
        "status": "missing", "error": None, "invalid_attempts": 0}


def test_a_newer_campaign_or_analysis_format_is_refused_by_name(tmp_path):
    (tmp_path / "campaign.json").write_text(json.dumps({"format": "netloop-campaign/7", "cells": []}))
    with pytest.raises(RunFileError, match="campaign.json has format 'netloop-campaign/7', expected"):
        load_campaign(tmp_path)
    (tmp_path / "analysis.json").write_text(json.dumps([{"format": "netloop-analysis/2", "run_id": "a"}]))
    with pytest.raises(RunFileError, match="analysis.json has format 'netloop-analysis/2', expected"):
        load_analysis(tmp_path)
    (tmp_path / "campaign.json").write_text(json.dumps({"cells": [{"run_id": 3}]}))
    with pytest.raises(RunFileError, match=r"cells\[0\].'run_id' is a JSON int, expected a string"):
        load_campaign(tmp_path)


def test_analysis_round_trip_and_entries_without_a_format(tmp_path):
    entries = [{"run_id": "tcp-r0", "transport": "tcp", "status": "complete", "cell": {"settings": {"link": "wifi6"}},
                "flows": [{"flow": "image"}], "rtt": {"p50_ms": 3.0}}]
    (tmp_path / "analysis.json").write_text(json.dumps(entries))     # written before 2026-11-26: no format
    old = load_analysis(tmp_path)
    assert old[0].run_id == "tcp-r0" and old[0].settings == {"link": "wifi6"} and old[0].get("rtt")["p50_ms"] == 3.0
    save_analysis(tmp_path, [e.data for e in old])
    written = json.loads((tmp_path / "analysis.json").read_text())
    assert written == [{"format": ANALYSIS_FORMAT, **entries[0]}] and list(written[0])[0] == "format"
    assert load_analysis(tmp_path) == [run_files.analysis_entry(written[0], tmp_path)]


def test_record_defaults_need_no_guards():
    record = RunRecord()
    assert record.link == {} and record.faults == [] and record.transport_name == "?" and record.loop_type is None
    assert set(record.to_json()) == set(RunRecord.ALWAYS)


#: The modules that may open metadata.json, campaign.json and analysis.json.
OWNERS = {"src/netloop/run_files.py"}

_OPENS = re.compile(r"""(["'](metadata|campaign|analysis)\.json["']|glob\(["'][^"']*(metadata|campaign|analysis)\.json)""")


def openers() -> set[str]:
    """Every Python module of the package (src/netloop, analysis, nodes) whose code names one
    of the three files as a path (a string literal "metadata.json", a glob of it); docstrings
    and comments are not code."""
    out = set()
    for path in [*REPO.glob("src/netloop/**/*.py"), *REPO.glob("analysis/*.py"), *REPO.glob("nodes/*.py")]:
        code = "\n".join(line for line in _strip_docstrings(path.read_text(encoding="utf-8")).splitlines()
                         if not line.lstrip().startswith("#"))
        if _OPENS.search(code):
            out.add(str(path.relative_to(REPO)))
    return out


def _strip_docstrings(text: str) -> str:
    return re.sub(r'("""|\'\'\')(.|\n)*?\1', '""', text)


def test_only_the_run_directory_modules_open_its_files():
    others = openers() - OWNERS
    assert not others, "read and write these files through netloop.run_files:\n" + "\n".join(sorted(others))


def test_the_check_sees_an_opener():
    assert _OPENS.search('x = run_dir / "metadata.json"') and _OPENS.search("glob('*/campaign.json')")
    assert not _OPENS.search(_strip_docstrings('"""reads analysis.json"""'))
