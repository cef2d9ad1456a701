"""The record format written by the C++ nodes and read by the analysis."""
from __future__ import annotations

import pytest

from netloop.analysis.records import HEADER, RecordError, read_events

ROWS = ["tx,y,0,0,1000,-1,-1,-1,52", "tx,y,1,0.125,21000,-1,-1,-1,52", "rx,u,0,1,30000,31000,0,1000,52"]


def write(path, lines, end="\n"):
    path.write_text("\n".join(lines) + end)
    return path


def test_reads_columns(tmp_path):
    ev = read_events(write(tmp_path / "a.csv", [",".join(HEADER)] + ROWS))
    assert len(ev) == 3 and ev.truncated_rows == 0
    assert ev.seq.tolist() == [0, 1, 0] and ev.value[1] == 0.125
    u = ev.select("rx", "u")
    assert u.recv_ns.tolist() == [31000] and u.answer_stamp_ns.tolist() == [1000]


def test_cut_off_last_row_is_skipped_and_counted(tmp_path):
    # A kill during a write leaves a row without its newline, possibly with a cut number.
    ev = read_events(write(tmp_path / "a.csv", [",".join(HEADER)] + ROWS + ["tx,y,2,0.2"], end=""))
    assert len(ev) == 3 and ev.truncated_rows == 1


def test_header_only_file_is_empty(tmp_path):
    ev = read_events(write(tmp_path / "a.csv", [",".join(HEADER)]))
    assert len(ev) == 0


def test_malformed_complete_row_is_an_error_naming_the_line(tmp_path):
    with pytest.raises(RecordError, match=r"a\.csv:3: malformed row"):
        read_events(write(tmp_path / "a.csv", [",".join(HEADER), ROWS[0], "tx,y,zz,0,1,-1,-1,-1,52", ROWS[2]]))


def test_wrong_header_and_missing_file(tmp_path):
    with pytest.raises(RecordError, match="not a netloop-events/1 file"):
        read_events(write(tmp_path / "a.csv", ["a,b,c"]))
    with pytest.raises(RecordError, match="record file missing"):
        read_events(tmp_path / "none.csv")
