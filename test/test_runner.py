"""Whole runs through `netloop run`: real roscore, real nodes, loopback link.

Checks that each transport's loop matches the local baseline (final value within 1 %,
overshoot within 2 percentage points, settling time within one sample period), the
requested transport is the negotiated one, a killed or interrupted run leaves a readable
run directory and no process behind, and the report shows it all.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from netloop import paths
from netloop.analysis.loop_run import analyse_loop_run, load_loop_run
from netloop.analysis.report import write_report
from netloop.experiment import load_experiment, validate_experiment
from netloop.master import wait_for
from netloop.runner import campaign_dir_for, run_experiment

pytestmark = pytest.mark.integration

EXPECTED = {"tcp": {"y": "TCPROS", "u": "TCPROS"}, "tcp_nodelay": {"y": "TCPROS+NODELAY", "u": "TCPROS+NODELAY"},
            "udp": {"y": "UDPROS", "u": "UDPROS"}}


def cli_env() -> dict:
    """The environment a test runs ``python -m netloop`` in: this checkout's sources."""
    return dict(os.environ, PYTHONPATH=str(paths.REPO / "src"))


NETLOOP_RUN = [str(paths.REPO / ".venv/bin/python"), "-m", "netloop", "run"]


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose environment mentions ``text`` (every process of a run has its log dir there)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return [p for p in found if p != os.getpid()]


@pytest.fixture(scope="module")
def loopback_campaign(tmp_path_factory):
    cfg = load_experiment(paths.EXPERIMENTS / "rlc_loopback.yaml")
    out = campaign_dir_for(cfg, tmp_path_factory.mktemp("results"))
    run_experiment(cfg, out, log=lambda _: None)
    return out


#: the loop's sample period in rlc_loopback.yaml (ms)
PERIOD_MS = 20.0


def _off_baseline(a: dict) -> list[str]:
    """How the loop's step response missed the local baseline: final value within 1 %,
    overshoot within 2 percentage points, settling time within one sample period."""
    step, base = a["step"], a["baseline_step"]
    misses = []
    if abs(step["SteadyStateValue"] - 0.5) > 0.005:
        misses.append(f"final value {step['SteadyStateValue']:.4f}")
    if abs(step["Overshoot"] - base["Overshoot"]) > 2.0:
        misses.append(f"overshoot {step['Overshoot']:.2f} % against {base['Overshoot']:.2f}")
    if abs(step["SettlingTime"] - base["SettlingTime"]) > PERIOD_MS / 1e3 + 1e-9:
        misses.append(f"settling time {step['SettlingTime']:.3f} s against {base['SettlingTime']:.3f}")
    return misses


def _loop_once_more(transport: str, out: Path) -> dict:
    """The experiment run again with ``transport`` alone; its loop analysed."""
    doc = yaml.safe_load((paths.EXPERIMENTS / "rlc_loopback.yaml").read_text())
    cfg = validate_experiment(dict(doc, transport=transport), name="rlc_loopback")
    campaign = campaign_dir_for(cfg, out)
    run_experiment(cfg, campaign, log=lambda _: None)
    return analyse_loop_run(load_loop_run(campaign / "runs" / f"{transport}-r0"))


@pytest.mark.parametrize("transport", ["tcp", "tcp_nodelay", "udp"])
def test_loop_matches_local_baseline(loopback_campaign, transport, tmp_path):
    a = analyse_loop_run(load_loop_run(loopback_campaign / "runs" / f"{transport}-r0"))
    assert a["ok"] and a["status"] == "complete", a["problems"]
    assert a["samples"] == 150
    assert a["sensor"]["MDR"] == 1.0 and a["actuation"]["MDR"] >= 0.99
    assert a["rtt"]["n"] >= 148
    # Over loopback a round trip takes ~1 ms of the 20 ms period. On a busy machine one can
    # take longer than a period (34 ms once at a load average of 8, and TCPROS's settling time
    # came out 0.16 s off): a run with such a round trip that misses the baseline is run once
    # more; missing it again with one again, the timing is not checked (xfail with the numbers).
    misses = _off_baseline(a)
    if misses and a["rtt"]["max_ms"] > PERIOD_MS:
        first = f"{'; '.join(misses)} with a round trip of {a['rtt']['max_ms']:.1f} ms"
        a = _loop_once_more(transport, tmp_path)
        misses = _off_baseline(a)
        if misses and a["rtt"]["max_ms"] > PERIOD_MS:
            pytest.xfail(f"round trips longer than the sample period in both runs (machine busy): {first}; then "
                         f"{'; '.join(misses)} with one of {a['rtt']['max_ms']:.1f} ms")
    assert not misses, (misses, a["step"], a["baseline_step"], a["rtt"])


@pytest.mark.parametrize("transport", ["tcp", "tcp_nodelay", "udp"])
def test_metadata_records_negotiated_transport(loopback_campaign, transport):
    meta = json.loads((loopback_campaign / "runs" / f"{transport}-r0" / "metadata.json").read_text())
    assert meta["format"] == "netloop-run/1" and meta["status"] == "complete"
    assert meta["negotiated_transport"] == {f"/{k}": v for k, v in EXPECTED[transport].items()}
    for key in ("git", "host", "ros", "start_time", "end_time", "experiment", "transport", "link"):
        assert meta.get(key) is not None, key
    assert meta["experiment"]["transport"] == transport
    assert meta["exit_codes"]["plant"] == 0


def test_report_tables_match_csv_and_figures_exist(loopback_campaign):
    report = write_report(loopback_campaign)
    assert report == loopback_campaign / "report.html" and "<img " in report.read_text()
    text = report.with_name("report.md").read_text()
    for fig in ("step_response.png", "delay_sensor.png", "delay_actuation.png"):
        assert (loopback_campaign / "figures" / fig).stat().st_size > 10_000
        assert f"figures/{fig}" in text
    with open(loopback_campaign / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["run"] for r in rows] == ["tcp-r0", "tcp_nodelay-r0", "udp-r0"]
    for r in rows:
        a = analyse_loop_run(load_loop_run(loopback_campaign / "runs" / r["run"]))
        assert float(r["overshoot [%]"]) == pytest.approx(a["step"]["Overshoot"])
        assert float(r["y delay mean [ms]"]) == pytest.approx(a["sensor"]["delay"]["mean_ms"])
        assert f"| {r['run']} | {r['transport']} | complete |" in text


def start_cli_run(tmp_path: Path, samples: int) -> tuple[subprocess.Popen, Path]:
    exp = tmp_path / "long.yaml"
    exp.write_text(yaml.safe_dump({"name": "long", "transport": "tcp_nodelay", "loop": {"samples": samples}}))
    results = tmp_path / "results"
    proc = subprocess.Popen(NETLOOP_RUN + [str(exp), "--out", str(results)], env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    run_dir_box = []

    def recording():
        dirs = list(results.glob("long-*/runs/tcp_nodelay-r0"))
        if dirs and (dirs[0] / "records" / "plant.csv").exists():
            run_dir_box[:] = dirs
            return len((dirs[0] / "records" / "plant.csv").read_text().splitlines()) > 50
        return False
    assert wait_for(recording, 30), proc.stdout.read1().decode() if proc.poll() is not None else "no records"
    return proc, run_dir_box[0]


def test_killed_run_leaves_readable_run_dir_and_no_process(tmp_path):
    proc, run_dir = start_cli_run(tmp_path, samples=100000)
    assert processes_mentioning(str(run_dir))          # the run's nodes are up
    proc.send_signal(signal.SIGKILL)                     # no cleanup code runs in the runner
    proc.wait(10)
    assert wait_for(lambda: not processes_mentioning(str(run_dir)), 15), "processes survived the runner"
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "running" and meta["end_time"] is None
    run = load_loop_run(run_dir)
    assert any("incomplete" in p for p in run.problems)
    a = analyse_loop_run(run)
    assert a["ok"] and a["samples"] >= 20  # 50 rows of plant.csv = about 25 samples (y out, u in)
    report = write_report(run_dir).with_name("report.md").read_text()
    assert "run incomplete" in report


def test_sigterm_marks_run_interrupted_and_cleans_up(tmp_path):
    proc, run_dir = start_cli_run(tmp_path, samples=100000)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=30)[0].decode()
    assert proc.returncode == 130, out
    assert "interrupted" in out
    meta = json.loads((run_dir / "metadata.json").read_text())
    assert meta["status"] == "interrupted" and meta["end_time"]
    assert not processes_mentioning(str(run_dir))


def test_subscribers_that_do_not_connect_in_time_fail_the_run_naming_them(tmp_path):
    """A connect_timeout far shorter than any node's start: the run fails at once, names every
    connection still missing, and leaves no process behind."""
    from campaign_helpers import campaign_runs   # noqa: PLC0415
    runs = campaign_runs(tmp_path, {"transport": "tcp_nodelay", "connect_timeout": 0.001,
                                    "loop": {"samples": 50}}, "slow_connect")
    meta = json.loads((runs["tcp_nodelay-r0"] / "metadata.json").read_text())
    assert meta["status"] == "failed"
    assert "within connect_timeout = 0.001 s: 2 of 2 still missing: /u (/controller -> /plant), " \
           "/y (/plant -> /controller)" in meta["error"], meta["error"]
    assert not processes_mentioning(str(runs["tcp_nodelay-r0"]))


def _child_running(parent: int, text: str) -> int | None:
    """The PID of a child of ``parent`` whose command line contains ``text`` (one we started)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent and text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return int(pid)
        except (OSError, ValueError, IndexError):
            continue
    return None


def run_with_a_stalled_emulator(tmp_path: Path, rerun_invalid: int) -> tuple[str, Path]:
    """``netloop run`` of a 2-s loop over wifi6 whose first attempt has its link emulator (ns-3)
    stopped for 300 ms: (what the command printed, the campaign)."""
    if os.geteuid() != 0:
        pytest.skip("the wifi6 link needs root (network namespaces)")
    exp = tmp_path / "rerun.yaml"
    exp.write_text(yaml.safe_dump({"name": "rerun", "link": "wifi6", "transport": "tcp_nodelay",
                                   "loop": {"samples": 100}, "rerun_invalid": rerun_invalid}))
    results = tmp_path / "results"
    proc = subprocess.Popen(NETLOOP_RUN + [str(exp), "--out", str(results)], env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def looping():
            plant = list(results.glob("rerun-*/runs/tcp_nodelay-r0/records/plant.csv"))
            return bool(plant) and len(plant[0].read_text().splitlines()) > 100   # about 1 s of loop
        assert wait_for(looping, 60), "the first attempt never got its loop going"
        emulator = _child_running(proc.pid, "netloop_wifi_link")
        assert emulator, "no ns-3 process under the runner"
        os.kill(emulator, signal.SIGSTOP)
        try:
            time.sleep(0.3)
        finally:
            os.kill(emulator, signal.SIGCONT)
        out = proc.communicate(timeout=200)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    return out, next(results.glob("rerun-*"))


@pytest.mark.timeout(240)
def test_a_run_judged_invalid_is_kept_and_run_again(tmp_path):
    """The link emulator (ns-3) is stopped for 300 ms in the middle of the first attempt: that
    attempt is judged invalid, moved to invalid/ with its verdict and records, and the cell
    runs again; campaign.json, the printed summary and the report count the invalid attempt,
    and the tables hold the second attempt only. (ns-3, not the shaper: ns-3 probes its lag
    every 1 ms whatever the traffic, where the shaper can only be late with a frame it holds —
    with a 50 Hz loop there may be none in it when it is stopped.)"""
    from link_health import assert_finished   # noqa: PLC0415
    out, camp = run_with_a_stalled_emulator(tmp_path, rerun_invalid=1)
    assert (camp / "invalid" / "tcp_nodelay-r0.attempt1").is_dir(), out
    first = json.loads((camp / "invalid" / "tcp_nodelay-r0.attempt1" / "metadata.json").read_text())
    assert first["status"] == "invalid" and first["link_health"]["valid"] is False, first.get("error")
    assert first["link_health"]["late_samples"] >= 200, first["link_health"]   # 1 ms probes
    # the 300 ms stop, counted in its phase (a hiccup of a few ms may be listed beside it), and
    # named in the verdict
    stop = [st for st in first["link_health"]["stalls"]
            if st["counted"] and st["phase"] == "connected" and 250 <= st["max_ms"] < 1000]
    assert stop, first["link_health"]["stalls"]
    assert f"{stop[0]['max_ms']:.0f} ms at {stop[0]['at_s']:.1f} s (connected)" in first["error"], first["error"]
    assert (camp / "invalid" / "tcp_nodelay-r0.attempt1" / "records" / "plant.csv").exists()
    second = json.loads((camp / "runs" / "tcp_nodelay-r0" / "metadata.json").read_text())
    assert_finished(second, "second attempt")
    assert second["start_time"] > first["end_time"]
    cells = json.loads((camp / "campaign.json").read_text())["cells"]
    assert [(c["run_id"], c["invalid_attempts"]) for c in cells] == [("tcp_nodelay-r0", 1)]
    assert "tcp_nodelay-r0: running it again (2 of 2)" in out, out
    assert "and run again: 1" in out, out
    assert [r["run_id"] for r in json.loads((camp / "analysis.json").read_text())] == ["tcp_nodelay-r0"]
    report = (camp / "report.md").read_text()
    assert "run again: 1" in report and "`tcp_nodelay-r0` ×1" in report
    assert not processes_mentioning(str(camp))


@pytest.mark.timeout(300)
def test_a_cell_invalid_in_every_attempt_runs_again_with_rerun_invalid(tmp_path):
    """A campaign allowed no second attempt keeps its stalled cell invalid and says how to run it
    again; --resume alone leaves it; --resume --rerun-invalid runs it again, the invalid run
    kept in invalid/ and counted as an attempt."""
    from link_health import assert_finished   # noqa: PLC0415
    out, camp = run_with_a_stalled_emulator(tmp_path, rerun_invalid=0)
    first = json.loads((camp / "runs" / "tcp_nodelay-r0" / "metadata.json").read_text())
    assert first["status"] == "invalid", first.get("error")
    assert (f"1 cell(s) invalid in every attempt (tcp_nodelay-r0): the host kept the link emulator "
            f"from real time; run them again when it is quieter: netloop run --resume {camp} --rerun-invalid") in out, out

    refused = subprocess.run(NETLOOP_RUN + ["--rerun-invalid", str(tmp_path / "rerun.yaml")], env=cli_env(),
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--rerun-invalid" in refused.stderr and "--resume" in refused.stderr, refused
    kept = subprocess.run(NETLOOP_RUN + ["--resume", str(camp)], env=cli_env(), capture_output=True,
                          text=True, timeout=120)
    assert "resuming: 1 of 1 cells done, 0 to run" in kept.stdout, kept.stdout + kept.stderr
    assert json.loads((camp / "runs" / "tcp_nodelay-r0" / "metadata.json").read_text()) == first

    again = subprocess.run(NETLOOP_RUN + ["--resume", str(camp), "--rerun-invalid"], env=cli_env(),
                           capture_output=True, text=True, timeout=200)
    assert again.returncode == 0, again.stdout + again.stderr
    assert ("resuming: 0 of 1 cells done, 1 to run (1 of them invalid in every earlier attempt)"
            in again.stdout), again.stdout
    assert json.loads((camp / "invalid" / "tcp_nodelay-r0.attempt1" / "metadata.json").read_text()) == first
    second = json.loads((camp / "runs" / "tcp_nodelay-r0" / "metadata.json").read_text())
    assert_finished(second, "the attempt run again")
    assert second["start_time"] > first["end_time"]
    cells = json.loads((camp / "campaign.json").read_text())["cells"]
    assert [(c["run_id"], c["invalid_attempts"]) for c in cells] == [("tcp_nodelay-r0", 1)]
    assert not processes_mentioning(str(camp))
