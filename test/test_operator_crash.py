"""An operator that crashes mid-campaign loses nothing (netloop.records_home): ``netloop run``
SIGKILLed over SSH (the lab of test/sshlab.py), then ``netloop fetch`` brings the killed run's
records home, ``--resume`` runs it again; killed once more, ``--resume`` fetches by itself.
Root only (namespaces, sshd); four campaigns' worth of netloop runs (30-50 s), so it runs with
the other whole campaigns: ``make test-studies``."""
from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from sshlab import SshLab  # noqa: E402
from netloop.polling import wait_for  # noqa: E402

pytestmark = [
    pytest.mark.studies,   # a whole campaign killed and resumed: make test-studies
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces and sshd"),
]

#: two cells of 2 s each: a 2 KB message every 20 ms from the robot
CAMPAIGN = {
    "name": "crash", "link": "ethernet", "transport": ["tcp_nodelay", "tcp"], "loop": {"type": "none"},
    "flows": [{"name": "scan", "kind": "generic", "from": "robot", "to": "operator", "size_bytes": 2000,
               "period": 0.02, "count": 100}],
}


def _rows_on_the_robot(lab: SshLab, run: str) -> int:
    """Messages the robot's source has recorded so far in run ``run`` (its folder there: the
    lab's run_root is on this file system)."""
    rows = 0
    for path in (lab.tmp / "robot_runs").glob(f"*-{run}/records/*.csv"):
        try:
            rows += sum(1 for line in path.read_text().splitlines() if line.startswith("tx,"))
        except OSError:
            pass
    return rows


def _kill_mid_run(lab: SshLab, proc, run: str) -> None:
    """SIGKILL ``netloop run`` once the robot has recorded 30 messages of ``run``; then wait
    until nothing of netloop runs on either side (the wrappers see their sessions end)."""
    assert wait_for(lambda: _rows_on_the_robot(lab, run) >= 30 or proc.poll() is not None, 120)
    assert proc.poll() is None, proc.stdout.read()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    assert wait_for(lambda: not lab.ours_in("robot") and not lab.ours_in("operator"), 20), \
        (lab.ours_in("robot"), lab.ours_in("operator"))


def _sent(run_dir: Path) -> int:
    """Messages the source recorded in a run directory (its record came home from the robot)."""
    path = run_dir / "records" / "flow_scan_tx.csv"
    return sum(1 for line in path.read_text().splitlines() if line.startswith("tx,"))


def _meta(run_dir: Path) -> dict:
    return json.loads((run_dir / "metadata.json").read_text())


@pytest.mark.timeout(400)
def test_a_killed_operator_loses_nothing_fetch_and_resume_complete_the_campaign(tmp_path):
    exp = tmp_path / "crash.yaml"
    exp.write_text(yaml.safe_dump(CAMPAIGN, sort_keys=False))
    out = tmp_path / "out"
    with SshLab("ethernet", tmp_path / "lab") as lab:
        hosts = str(lab.hosts_file())
        proc = lab.popen_netloop("run", str(exp), "--out", str(out), "--machines", hosts)
        _kill_mid_run(lab, proc, "tcp-r0")
        (campaign,) = list(out.iterdir())
        killed = campaign / "runs" / "tcp-r0"
        meta = _meta(killed)
        # the robot's folder was named before anything started there, and is still there
        assert meta["status"] == "running"
        home = meta["link"]["records_home"]["robot"]
        assert not home["fetched"] and Path(home["remote_dir"]).is_dir(), home
        assert _meta(campaign / "runs" / "tcp_nodelay-r0")["status"] == "complete"

        r = lab.netloop("fetch", str(campaign), timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "robot: " in r.stdout and "record files fetched from" in r.stdout, r.stdout
        assert "it never finished: netloop run --resume" in r.stdout, r.stdout
        meta = _meta(killed)
        assert meta["link"]["records_home"]["robot"]["fetched"] and not Path(home["remote_dir"]).exists()
        assert _sent(killed) >= 30, _sent(killed)                   # what the robot recorded came home
        assert (killed / "logs" / "remote_exec_robot").is_dir()      # and why each node ended

        # --resume runs the killed cell again; killed once more, the next --resume fetches by itself
        proc = lab.popen_netloop("run", "--resume", str(campaign))
        _kill_mid_run(lab, proc, "tcp-r0")
        second = _meta(campaign / "runs" / "tcp-r0")["link"]["records_home"]["robot"]
        assert not second["fetched"] and Path(second["remote_dir"]).is_dir()
        r = lab.netloop("run", "--resume", str(campaign), timeout=300)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert "record files fetched from" in r.stdout and "1 of 2 cells done, 1 to run" in r.stdout, r.stdout
        assert not Path(second["remote_dir"]).exists()
        assert not any((lab.tmp / "robot_runs").iterdir())         # nothing left on the robot
        assert lab.ours_in("robot") == [] and lab.ours_in("operator") == []

    # every cell complete; both killed attempts kept, out of the tables, with their records
    for run in ("tcp_nodelay-r0", "tcp-r0"):
        assert _meta(campaign / "runs" / run)["status"] == "complete", _meta(campaign / "runs" / run)
    attempts = sorted((campaign / "aborted").iterdir())
    assert [a.name for a in attempts] == ["tcp-r0.attempt1", "tcp-r0.attempt2"], attempts
    for attempt in attempts:
        meta = _meta(attempt)
        assert meta["status"] == "running" and meta["link"]["records_home"]["robot"]["fetched"], meta["link"]
        assert _sent(attempt) >= 30, _sent(attempt)
    cells = {c["run_id"]: c["status"] for c in json.loads((campaign / "campaign.json").read_text())["cells"]}
    assert cells == {"tcp_nodelay-r0": "complete", "tcp-r0": "complete"}
    assert (campaign / "report.html").is_file()
