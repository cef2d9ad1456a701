"""The operator's UDP heartbeat (netloop.heartbeat) and the robot's UDP servers answering the
operator only (netloop.clocksync): a listener, the wrapper reading its file, datagrams on
loopback. No root, no SSH (the lab's tests run them over SSH: test_machines)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netloop import clocksync
from netloop.heartbeat import TOKEN_BYTES, Beats, last_beat

pytestmark = pytest.mark.robot

TOKEN = b"0123456789abcdef0123456789abcdef"
assert len(TOKEN) == TOKEN_BYTES


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "SSH_CLIENT"}


def _listener(tmp_path: Path, allow: str = "127.0.0.1") -> tuple[subprocess.Popen, int, Path]:
    (tmp_path / "token").write_bytes(TOKEN)
    beat_file = tmp_path / "heartbeat"
    proc = subprocess.Popen([sys.executable, "-m", "netloop.heartbeat", "listen", "--bind", "127.0.0.1",
                             "--file", str(beat_file), "--token-file", str(tmp_path / "token"), f"--allow={allow}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    line = proc.stdout.readline().decode()
    assert line.startswith("port "), proc.stderr.read()
    return proc, int(line.split()[1]), beat_file


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream:
            stream.close()


def test_datagrams_keep_a_node_alive_without_a_byte_over_ssh_and_their_end_stops_it(tmp_path):
    """The wrapper hears nothing on standard input (a stalled TCP connection): the datagrams
    alone keep its command running past its silence bound; when they stop, it is stopped
    within the bound (+ the 50 ms poll), recorded as a silent heartbeat."""
    listener, port, beat_file = _listener(tmp_path)
    beats = Beats(TOKEN)
    beats.add("127.0.0.1", port)
    wrapper = subprocess.Popen([sys.executable, "-m", "netloop.remote_exec", "--silence=1.5", "--run=r1",
                                f"--heartbeat-file={beat_file}", f"--record={tmp_path / 'why'}", "--", "sleep", "60"],
                               stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        time.sleep(3.5)                                  # more than twice the bound, no byte on stdin
        assert wrapper.poll() is None
        heard = last_beat(str(beat_file))
        assert heard is not None and time.monotonic() - heard < 0.5
        beats.stop()
        stopped_beating = time.time()
        status = wrapper.wait(timeout=10)
    finally:
        beats.stop()
        if wrapper.poll() is None:
            wrapper.kill()
        wrapper.wait()
        wrapper.stdin.close()
        _stop(listener)
    assert status == 128 + signal.SIGINT
    (path,) = (tmp_path / "why").glob("sleep-*.json")
    rec = json.loads(path.read_text())
    assert rec["kind"] == "heartbeat" and rec["silence_s"] == 1.5
    assert 1.5 - 0.25 <= rec["signalled"] - stopped_beating < 1.5 + 0.3, rec   # the last datagram <= 0.2 s before


def test_a_datagram_without_the_runs_token_or_from_another_address_is_not_a_heartbeat(tmp_path):
    listener, port, beat_file = _listener(tmp_path)
    (tmp_path / "other").mkdir()
    other, other_port, other_file = _listener(tmp_path / "other", allow="10.9.9.9")
    try:
        time.sleep(0.2)
        started = last_beat(str(beat_file))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.sendto(b"x" * TOKEN_BYTES + b"\0" * 8, ("127.0.0.1", port))       # a wrong token
            sock.sendto(TOKEN + b"\0" * 8, ("127.0.0.1", other_port))              # not from 10.9.9.9
            time.sleep(0.3)
            assert last_beat(str(beat_file)) == started and last_beat(str(other_file)) is not None
            unchanged = last_beat(str(other_file))
            sock.sendto(TOKEN + b"\0" * 8, ("127.0.0.1", port))                    # the real one
            time.sleep(0.3)
        assert last_beat(str(beat_file)) > started and last_beat(str(other_file)) == unchanged
    finally:
        _stop(listener)
        _stop(other)


def test_the_clock_server_answers_the_operator_only(tmp_path, monkeypatch):
    """Only the operator's address (--allow, and the SSH session's client) gets an answer."""
    def serve(*allow: str) -> tuple[subprocess.Popen, int]:
        proc = subprocess.Popen([sys.executable, "-m", "netloop.clocksync", "serve", "--bind", "127.0.0.1",
                                 "--idle", "10", *[f"--allow={a}" for a in allow]], stdout=subprocess.PIPE, env=_env())
        return proc, int(proc.stdout.readline().split()[1])
    mine, port = serve("127.0.0.1")
    theirs, other_port = serve("10.9.9.9")
    try:
        assert clocksync.measure("127.0.0.1", port, count=4)["samples"] == 4
        with pytest.raises(TimeoutError, match="no answer from the clock server"):
            clocksync.measure("127.0.0.1", other_port, count=3, timeout=0.2)
    finally:
        for proc in (mine, theirs):
            proc.kill()
            proc.wait()
            proc.stdout.close()
    monkeypatch.setenv("SSH_CLIENT", "10.1.2.3 51000 22")
    assert clocksync.allowed_sources(["10.0.0.5"]) == {"10.0.0.5", "10.1.2.3"}
    monkeypatch.delenv("SSH_CLIENT")
    assert clocksync.allowed_sources([]) == set()
