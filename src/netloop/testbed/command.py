"""``netloop testbed up|down|status``: a testbed that outlives the command.

``up`` starts a small keeper process (``python -m netloop.testbed.command _keep ...``, in
its own session) that brings the testbed up, reports back, and holds it until SIGTERM /
SIGINT / SIGHUP; it owns the testbed's record in ``/run/netloop`` and its emulator
processes die with it, so a killed keeper leaves only namespaces, which the next ``up``
removes. ``down`` signals the keepers of CLI testbeds (all of them, or ``--id``) and waits
for them to finish; it also removes leftovers of crashed runs. ``status`` lists every live
testbed, including those of running experiments.

:func:`register` adds the sub-command to the main argparse CLI; it sets ``func`` to a
callable taking the parsed arguments and returning the exit code.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from netloop import cli_options as opt
from netloop.schema import ConfigError

from . import state, util
from .tap_link import StatsFile
from .profiles import load_profile

_SRC = str(Path(__file__).resolve().parents[2])


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``testbed up|down|status`` to an argparse sub-parser collection."""
    p = subparsers.add_parser(
        "testbed", help="bring emulated hosts and link up or down (needs root)",
        description="Hosts are network namespaces joined by an emulated link "
                    "(profiles in config/links/). The testbed stays up until 'down'.")
    sub = p.add_subparsers(dest="testbed_cmd", metavar="{up,down,status}")
    sub.required = True
    up = sub.add_parser("up", help="create hosts and link, leave them running")
    up.add_argument("--link", required=True, metavar="PROFILE",
                    help="link profile (a name in config/links/, e.g. ethernet, wifi6, shaped)")
    opt.add_link_param(up, "set a key of the link profile")
    up.add_argument("--log-dir", help="where the emulator's log and stats go "
                                      "(default /run/netloop/<id>/)")
    opt.renamed(up, "--set", opt.LINK_PARAM)
    down = sub.add_parser("down", help="remove testbeds made by 'up' and leftovers of crashes")
    down.add_argument("--id", help="only this testbed (see 'status')")
    st = sub.add_parser("status", help="list live testbeds")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    return {"up": cmd_up, "down": cmd_down, "status": cmd_status}[args.testbed_cmd](args)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = _SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def cmd_up(args) -> int:
    overrides = opt.parse_link_params(args.link_param)
    profile = load_profile(args.link, overrides or None)  # ConfigError -> caller prints it
    if profile.type == "loopback":
        print(f"link '{profile.name}' needs no testbed: robot and operator are this host "
              "(127.0.0.1); nothing to bring up")
        return 0
    if os.geteuid() != 0:
        print(f"netloop testbed: link '{profile.name}' needs root to create network "
              "namespaces; run as root or use --link loopback", file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", "netloop.testbed.command", "_keep", "--link", args.link,
           "--overrides", json.dumps(overrides)]
    if args.log_dir:
        cmd += ["--log-dir", str(Path(args.log_dir).resolve())]
    keeper = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=_env(), start_new_session=True,
                              text=True)
    line = keeper.stdout.readline()
    keeper.stdout.close()
    try:
        reply = json.loads(line)
    except ValueError:
        try:
            keeper.wait(10)
        except subprocess.TimeoutExpired:
            keeper.kill()
            keeper.wait()
        err = keeper.stderr.read()
        print(f"netloop testbed: keeper failed: {(err or line).strip()[-800:]}", file=sys.stderr)
        return 1
    keeper.stderr.close()
    if not reply.get("ok"):
        keeper.wait(10)
        print(f"netloop testbed: {reply.get('error')}", file=sys.stderr)
        return 2 if reply.get("config_error") else 1
    print(f"testbed {reply['id']} up: link '{reply['profile']}' ({reply['type']}) in "
          f"{reply['up_time_s']:.2f} s; keeper pid {keeper.pid}")
    for host, h in reply["hosts"].items():
        print(f"  {host:<9} {h['address']:<11} ip netns exec {h['netns']} <command>")
    for rec in reply.get("leftovers_cleaned", []):
        print(f"  (removed leftover testbed {rec})")
    print(f"remove it with: netloop testbed down --id {reply['id']}")
    return 0


def _keep(argv: list[str]) -> int:
    """The keeper process behind ``testbed up`` (internal)."""
    from .testbed import Testbed

    ap = argparse.ArgumentParser(prog="netloop testbed _keep")
    ap.add_argument("--link", required=True)
    ap.add_argument("--overrides", default="{}")
    ap.add_argument("--log-dir")
    a = ap.parse_args(argv)
    stop: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, f: stop.append(s))
    tb = None
    try:
        tb = Testbed(load_profile(a.link, json.loads(a.overrides) or None), a.log_dir,
                     persistent=True)
        tb.up()
        reply = {"ok": True, "id": tb.id, "profile": tb.name, "type": tb.profile.type,
                 "up_time_s": tb.up_time_s,
                 "hosts": {h: {"netns": tb.netns(h), "address": tb.address(h)} for h in tb.hosts},
                 "leftovers_cleaned": [r["id"] for r in tb.leftovers_cleaned]}
    except ConfigError as err:
        reply = {"ok": False, "error": f"invalid configuration: {err}", "config_error": True}
    except Exception as err:
        reply = {"ok": False, "error": f"{type(err).__name__}: {err}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    if not reply["ok"]:
        return 1
    try:
        while not stop:
            signal.pause()
    finally:
        tb.down()
    return 0


def _summary(rec: dict) -> dict:
    out = {"id": rec["id"], "profile": rec.get("profile"), "type": rec.get("type"),
           "owner_pid": rec.get("owner_pid"), "owner_alive": state.owner_alive(rec),
           "made_by": "netloop testbed up" if rec.get("persistent") else "a run",
           "age_s": round(time.time() - rec.get("created", time.time()), 1),
           "hosts": rec.get("hosts", {})}
    if rec.get("stats"):
        lines = StatsFile(Path(rec["stats"])).stats()
        if lines:
            last = lines[-1]
            out["emulator"] = {"max_lag_ms": round(last["lag_max_total_ms"], 3),
                               "mean_lag_ms": round(last["lag_mean_total_ms"], 3),
                               "late_samples": last["late_probes"], "samples": last["probes"],
                               "cpu_s": round(last["cpu_s"], 2)}
    return out


def cmd_status(args) -> int:
    recs = [_summary(r) for r in state.records()]
    if args.json:
        print(json.dumps(recs, indent=1))
        return 0
    if not recs:
        print("no testbed is up")
        return 0
    for r in recs:
        owner = f"owner pid {r['owner_pid']} " + ("alive" if r["owner_alive"] else
                                                  "DEAD (leftover; 'down' removes it)")
        print(f"testbed {r['id']}: link '{r['profile']}' ({r['type']}), made by {r['made_by']}, "
              f"up {r['age_s']:.0f} s, {owner}")
        for host, h in r["hosts"].items():
            print(f"  {host:<9} {h['address']:<11} ip netns exec {h['netns']} <command>")
        if "emulator" in r:
            e = r["emulator"]
            print(f"  emulator: max lag {e['max_lag_ms']} ms, mean {e['mean_lag_ms']} ms, "
                  f"{e['late_samples']}/{e['samples']} samples late, cpu {e['cpu_s']} s")
    return 0


def cmd_down(args) -> int:
    if os.geteuid() != 0:
        print("netloop testbed: removing testbeds needs root", file=sys.stderr)
        return 2
    recs = state.records()
    if args.id and not any(r["id"] == args.id for r in recs):
        print(f"netloop testbed: no testbed with id {args.id!r}; live: "
              f"{', '.join(r['id'] for r in recs) or 'none'}", file=sys.stderr)
        return 2
    done = []
    for rec in recs:
        if args.id and rec["id"] != args.id:
            continue
        alive = state.owner_alive(rec)
        if alive and not rec.get("persistent"):
            if args.id:
                print(f"netloop testbed: {rec['id']} belongs to a running experiment (pid "
                      f"{rec['owner_pid']}); stop that instead", file=sys.stderr)
                return 2
            continue
        if alive:
            os.kill(rec["owner_pid"], signal.SIGTERM)
            gone = util.wait_for(lambda: not state.path_of(rec["id"]).exists(), 15.0, 0.02)
            if not gone:
                util.kill_pid(rec["owner_pid"], rec.get("owner_start"))
        with state.lock():
            if state.path_of(rec["id"]).exists():
                state.cleanup_record(rec)
        done.append(rec["id"])
    print(f"removed testbed{'s' if len(done) != 1 else ''} {', '.join(done)}" if done
          else "no testbed to remove")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m netloop.testbed.command up|down|status ...`` without the main CLI."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_keep"]:
        return _keep(argv[1:])
    ap = argparse.ArgumentParser(prog="netloop")
    register(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args(["testbed"] + argv)
    try:
        return args.func(args)
    except ConfigError as err:
        print(f"netloop: invalid configuration: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
