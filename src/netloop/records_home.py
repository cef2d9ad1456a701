"""Records home: what a run on real machines wrote there (records, ROS logs, why each remote
process ended) copied into the run directory through ``tar`` over ssh, then removed there;
a machine whose records could not be fetched, or whose nodes were stopped by their watchdog,
is named in ``fetch_problems`` (the run's error). Each machine's folder is in metadata.json
before the run starts anything there, so ``netloop fetch RUN_DIR`` (or a campaign: each of its
runs) finds what a failed fetch or a killed operator left, and ``netloop run --resume``
fetches it first by itself."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from .hosts_file import load_machines
from .loops.simulators import FAILSAFE_RECORD
from .machine_readiness import wait_run_ended
from .run_files import RunFileError, RunRecord, has_metadata, load_metadata, save_metadata
from .schema import ConfigError
from .ssh import RealHostsError, destination, ssh_argv

if TYPE_CHECKING:  # pragma: no cover - types only
    from .machines import RealHosts


def fetch(hosts: "RealHosts", host: str, remote: str | None = None) -> bool:
    """Copy ``host``'s records and logs (ROS's, and why each remote process ended) into the run
    directory, then remove them there. ``remote``: its run directory there (default this
    run's). False when they could not be fetched (named in ``fetch_problems``)."""
    machine, remote = hosts.machine(host), remote or hosts.remote_run_dir(host)
    incoming = hosts.run_dir / f".incoming-{host}"
    shutil.rmtree(incoming, ignore_errors=True)
    incoming.mkdir(parents=True)
    error = None
    try:
        control = hosts.control(host)
        ssh = subprocess.Popen(ssh_argv(machine, control) + [f"cd {shlex.quote(remote)} && tar -cf - records logs"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        untar = subprocess.run(["tar", "-xf", "-", "-C", str(incoming)], stdin=ssh.stdout,
                               capture_output=True, timeout=600)
        ssh.stdout.close()
        ssh_err = ssh.stderr.read().decode(errors="replace")
        ssh.stderr.close()
        if ssh.wait(timeout=60) != 0 or untar.returncode != 0:
            error = (ssh_err or untar.stderr.decode(errors="replace")).strip()[-300:] or "tar failed"
    except ConnectionError as err:
        error = " ".join(str(err).split())[-300:]
    except (OSError, subprocess.SubprocessError) as err:
        error = str(err)
    if error is not None:
        shutil.rmtree(incoming, ignore_errors=True)
        problem = (f"records of {host} not fetched from {destination(machine)}:{remote}: {error} "
                   f"(they stay there: netloop fetch {shlex.quote(str(hosts.run_dir))})")
        hosts.fetch_problems.append(problem)
        hosts.records_home[host] = {"fetched": False, "remote_dir": remote, "error": problem}
        return False
    records = hosts.run_dir / "records"
    records.mkdir(exist_ok=True)
    files = 0
    for f in sorted((incoming / "records").glob("*")):
        shutil.move(str(f), str(records / f.name))
        files += 1
    logs = hosts.run_dir / "logs"
    logs.mkdir(exist_ok=True)
    for sub, target in (("ros", f"ros_{host}"), ("remote_exec", f"remote_exec_{host}")):
        if (incoming / "logs" / sub).is_dir():
            shutil.rmtree(logs / target, ignore_errors=True)
            shutil.move(str(incoming / "logs" / sub), str(logs / target))
    shutil.rmtree(incoming, ignore_errors=True)
    stopped = _watchdog_stops(hosts, host, logs / f"remote_exec_{host}")
    hosts.records_home[host] = {"fetched": True, "files": files, "from": f"{destination(machine)}:{remote}",
                               **({"stopped_by_watchdog": stopped} if stopped else {})}
    hosts._ssh_run(host, f"rm -rf {shlex.quote(remote)}")
    return True

def _watchdog_stops(hosts: "RealHosts", host: str, directory: Path) -> list[dict]:
    """The processes of ``host`` whose wrapper stopped them for a silent heartbeat (from
    their records in ``directory``), each also named in ``fetch_problems``; so is a fail-safe
    stop of the car that failed (its record there)."""
    out = []
    for path in sorted(directory.glob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if path.name == FAILSAFE_RECORD and rec.get("stopped") is False:   # the car's fail-safe stop failed
            hosts.fetch_problems.append(f"{host}: the car's fail-safe stop could not stop the motors: "
                                        f"{'; '.join(rec.get('errors') or [])} ({path.relative_to(hosts.run_dir)})")
        if rec.get("kind") != "heartbeat":
            continue
        command = _command_name(rec.get("command") or ["?"])
        out.append({"command": command, "reason": rec.get("reason"), "stopped": rec.get("stopped"),
                    "record": str(path.relative_to(hosts.run_dir))})
        hosts.fetch_problems.append(f"{host}: netloop-remote-exec stopped {command}: {rec.get('reason')} "
                                   f"({path.relative_to(hosts.run_dir)})")
    return out


def _command_name(argv: list) -> str:
    """What a wrapper's record calls its command: the program's name, or the module of a
    ``python -m`` (the heartbeat's listener: ``netloop.heartbeat``, not ``python3``)."""
    name = os.path.basename(str(argv[0]))
    if name.startswith("python") and len(argv) > 2 and argv[1] == "-m":
        return str(argv[2])
    return name


def _campaign_name(run_dir: Path) -> str:
    """The campaign folder's name of a run directory (in runs/, or set aside in aborted/ or invalid/)."""
    return run_dir.parent.parent.name


def left_on_machines(run_dir: Path, meta: RunRecord) -> dict[str, str]:
    """host -> its record folder there, for every machine whose records of this run are not
    home: named in ``link.records_home`` before the run started anything there; for a run
    recorded by an older netloop (no entry), the folder is derived from the machine's
    ``run_root`` and the run's name, as the run made it."""
    link = meta.link
    if link.get("type") != "real":
        return {}
    home = link.get("records_home") or {}
    left = {h: e["remote_dir"] for h, e in home.items() if not e.get("fetched") and e.get("remote_dir")}
    for host, info in (link.get("hosts") or {}).items():
        if host not in home and not info.get("local") and info.get("run_root") and meta.run_id:
            left[host] = f"{info['run_root'].rstrip('/')}/{_campaign_name(run_dir)}-{meta.run_id}"
    return left


def fetch_again(run_dir: Path, spec: str | None = None, log=print) -> int:
    """Fetch the records a run left on its machines (:func:`left_on_machines`: a fetch that
    failed, or a run whose operator was killed before it fetched them), with the hosts file
    ``spec`` (default: the one the run used). metadata.json is updated; a run that failed only
    because its records did not come home is then complete. Returns 0 when everything is home,
    else 1."""
    run_dir = Path(run_dir)
    try:
        meta = load_metadata(run_dir)
    except (OSError, RunFileError) as err:
        raise FileNotFoundError(f"{run_dir}: not a run directory ({err})") from None
    link = meta.link
    if link.get("type") != "real":
        raise ConfigError("run", f"{run_dir} did not run on real machines: nothing to fetch")
    missing = left_on_machines(run_dir, meta)
    if not missing:
        log(f"{run_dir}: every machine's records are home already")
        return 0
    spec = spec or meta.experiment.get("machines")
    if not spec:
        raise ConfigError("machines", f"{run_dir}: its metadata names no hosts file: give --machines")
    from .machines import RealHosts  # noqa: PLC0415 - RealHosts fetches with this module
    hosts = RealHosts(load_machines(spec), run_dir, log)
    hosts.keep_connections = True
    link.setdefault("records_home", {})
    try:
        for host, remote in missing.items():
            old = (link["records_home"].get(host) or {}).get("error")
            if meta.status == "running":   # its operator died: the machine's wrappers may still be stopping
                wait_run_ended(hosts, host, remote)
            if fetch(hosts, host, remote):
                log(f"{host}: {hosts.records_home[host]['files']} record files fetched from {remote}")
                if old and meta.error:
                    meta.error = "; ".join(p for p in meta.error.split("; ") if p != old) or None
            else:
                log(hosts.fetch_problems[-1])
            link["records_home"][host] = hosts.records_home[host]
    finally:
        hosts.close_connections()
    stops = [p for p in hosts.fetch_problems if "netloop-remote-exec stopped" in p or "fail-safe stop" in p]
    if stops:
        meta.error = "; ".join(([meta.error] if meta.error else []) + stops)
    if meta.status == "failed" and not meta.error:
        meta.status = "complete"    # on real machines nothing else makes a finished run invalid
    save_metadata(run_dir, meta)
    still = [h for h, e in link["records_home"].items() if not e.get("fetched")]
    if not still:
        unfinished = (" (it never finished: netloop run --resume on its campaign runs it again, keeping this "
                      "attempt in aborted/)") if meta.status == "running" else ""
        log(f"{run_dir}: every machine's records are home (status {meta.status}){unfinished}; "
            f"write the report again: netloop report {shlex.quote(str(run_dir.parent.parent))}")
    return 1 if still else 0


def runs_of(campaign: Path) -> list[Path]:
    """Every run directory of a campaign: its runs, and the attempts set aside."""
    return sorted(d for folder in ("runs", "aborted", "invalid") for d in (campaign / folder).glob("*")
                  if has_metadata(d))


def fetch_left_behind(campaign: Path, spec: str | None = None, log=print) -> int:
    """:func:`fetch_again` for every run of ``campaign`` whose records are still on a machine
    (``netloop fetch CAMPAIGN``; ``netloop run --resume`` calls it first). 0 when all are home."""
    status = 0
    for run_dir in runs_of(Path(campaign)):
        try:
            meta = load_metadata(run_dir)
        except (OSError, RunFileError):
            continue
        if left_on_machines(run_dir, meta):
            status |= fetch_again(run_dir, spec, log)
    return status


def _cmd_fetch(args) -> int:
    path = Path(args.run_dir)
    try:
        if not has_metadata(path) and (path / "runs").is_dir():   # a campaign
            return fetch_left_behind(path, args.machines)
        return fetch_again(path, args.machines)
    except RealHostsError as err:
        import sys  # noqa: PLC0415
        print(f"netloop fetch: {err}", file=sys.stderr)
        return 1


def register(sub) -> None:
    """``netloop fetch RUN_DIR [--machines HOSTS]``."""
    p = sub.add_parser("fetch", help="fetch the records a real-machine run left on its machines",
                       description="Copy home the records and logs that a run on real machines left there (its "
                                   "fetch failed, or netloop run was killed before it fetched them: metadata.json "
                                   "names each machine's folder before the run starts anything there), remove "
                                   "them there, and update metadata.json. Given a campaign, every run of it. Then "
                                   "write the report again (netloop report).")
    p.add_argument("run_dir", help="the run directory (results/<campaign>/runs/<run>), or a campaign "
                                   "(results/<campaign>): each of its runs")
    p.add_argument("--machines", metavar="HOSTS", default=None,
                   help="the hosts file to reach the machines with (default: the one the run used)")
    p.set_defaults(func=_cmd_fetch)
