"""Running experiments: one run per (transport, repetition) cell, each in its own run directory.

A run brings up the testbed (hosts and link), starts a ROS master on the operator host,
loads the loop's parameters, starts the controller and the plant on the hosts the
experiment names, waits for the plant to finish its samples, and stops everything it
started, on every exit path. What the nodes record lands in the run directory as it
happens (see :mod:`netloop.rundir`).
"""
from __future__ import annotations

import datetime as _dt
import signal
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from . import paths, rosenv
from .experiment import estimated_run_seconds, expand, for_cell, rlc_parameters
from .connections import describe, node_connections
from .master import RosMaster
from .processes import ProcessGroup, log_tail
from .rundir import RunMetadata, create_run_dir, write_json_atomic
from .testbed import Testbed, load_profile
from .transports import TransportContext, get_transport

#: Where the master runs (the operator side, as is common).
MASTER_HOST = "operator"


class RunFailed(RuntimeError):
    pass


class Interrupted(BaseException):
    """Raised by SIGTERM/SIGINT handlers so that every cleanup runs."""


def install_signal_handlers() -> None:
    def handler(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def negotiated_transports(master: RosMaster, flows: dict[str, tuple[str, str]]) -> dict[str, str] | None:
    """For each topic -> (publisher, subscriber): the transport of the publisher's connection
    to the subscriber as it really is ('TCPROS', 'TCPROS+NODELAY' or 'UDPROS'); None until
    every one is connected."""
    out = {}
    try:
        for topic, (publisher, subscriber) in flows.items():
            conns = [c for c in node_connections(master.lookup_node(publisher))
                     if c["topic"] == topic and c["direction"] == "o" and c["destination"] == subscriber
                     and c["connected"]]
            if not conns:
                return None
            out[topic] = describe(conns[0])
    except Exception:  # a node not registered yet, or gone
        return None
    return out


LOOP_FLOWS = {"/y": ("/plant", "/controller"), "/u": ("/controller", "/plant")}


def run_loop(cfg: dict, run_dir: Path, log: Callable[[str], None] = print) -> dict:
    """One run of the RLC loop with the transport in ``cfg['transport']``; returns metadata."""
    run_dir = create_run_dir(run_dir)
    loop = cfg["loop"]
    transport = get_transport(cfg["transport"])
    link = load_profile(cfg["link"])
    meta = RunMetadata(run_dir, run_id=run_dir.name, experiment=cfg, transport=transport.metadata(),
                       link=link, loop={"type": loop["type"], "placement": loop["placement"]})
    status, error = "failed", None
    exit_codes: dict[str, Any] = {}
    try:
        with ExitStack() as stack:
            testbed = stack.enter_context(Testbed(link, log_dir=run_dir / "logs"))
            meta.update(link=testbed.metadata())
            group = stack.enter_context(ProcessGroup(run_dir / "logs"))
            ros_log = run_dir / "logs" / "ros"

            def env_for(host: str) -> dict[str, str]:
                return rosenv.node_env(master.uri, testbed.address(host), ros_log)

            master = RosMaster(group, rosenv.base_env(), address=testbed.address(MASTER_HOST),
                               prefix=testbed.exec_prefix(MASTER_HOST))
            master.start()
            ctx = TransportContext(run_dir, {h: testbed.exec_prefix(h) for h in testbed.hosts},
                                   {h: testbed.address(h) for h in testbed.hosts})
            transport.start(ctx)
            stack.callback(transport.stop)

            size = loop["padding_bytes"] + 64
            master.set_params(rlc_parameters(loop), "/rlc")
            master.set_params({"transport": transport.subscriber_transport("y", size),
                               "padding_bytes": loop["padding_bytes"],
                               "record_path": str(run_dir / "records" / "controller.csv")}, "/controller")
            master.set_params({"transport": transport.subscriber_transport("u", size),
                               "padding_bytes": loop["padding_bytes"], "samples": loop["samples"],
                               "record_path": str(run_dir / "records" / "plant.csv")}, "/plant")

            placement = loop["placement"]
            controller = group.start("controller", [str(paths.node_binary("loop_controller")), "__name:=controller"],
                                     env=env_for(placement["controller"]),
                                     prefix=testbed.exec_prefix(placement["controller"]))
            plant = group.start("plant", [str(paths.node_binary("rlc_plant")), "__name:=plant"],
                                env=env_for(placement["plant"]), prefix=testbed.exec_prefix(placement["plant"]))

            negotiated = None
            connect_deadline = time.monotonic() + 15.0
            while negotiated is None and plant.poll() is None and time.monotonic() < connect_deadline:
                negotiated = negotiated_transports(master, LOOP_FLOWS)
                time.sleep(0.05)
            meta.update(negotiated_transport=negotiated or {})

            deadline = time.monotonic() + cfg["run_timeout"]
            while plant.poll() is None and time.monotonic() < deadline:
                if controller.poll() is not None:
                    raise RunFailed(f"controller exited with status {controller.poll()}:\n"
                                    f"{log_tail(controller.log_path)}")
                time.sleep(0.05)
            if plant.poll() is None:
                raise RunFailed(f"run did not finish within run_timeout = {cfg['run_timeout']} s")
            if plant.poll() != 0:
                raise RunFailed(f"plant exited with status {plant.poll()}:\n{log_tail(plant.log_path)}")
            exit_codes = group.stop_all()
            health = testbed.health()
            meta.update(link_health=health)
            status = "complete" if health.get("valid", True) else "invalid"
            if status == "invalid":
                error = f"link emulation invalid: {health.get('reason')}"
    except Interrupted as sig:
        status, error = "interrupted", f"stopped by {sig}"
        raise
    except Exception as exc:  # recorded in the run directory, then reported by the caller
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        meta.finish(status, error=error, exit_codes=exit_codes)
    return meta.data


def campaign_dir_for(cfg: dict, results: Path | None = None) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(results or paths.RESULTS) / f"{cfg['name']}-{stamp}"


def run_experiment(cfg: dict, out_dir: Path, log: Callable[[str], None] = print) -> Path:
    """Run every cell of a validated experiment into ``out_dir``; returns ``out_dir``."""
    import yaml  # noqa: PLC0415

    out_dir = Path(out_dir)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    with open(out_dir / "experiment.yaml", "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    cells = expand(cfg)
    summary: dict[str, Any] = {"experiment": cfg["name"], "cells": []}
    started = time.monotonic()
    for i, cell in enumerate(cells, 1):
        elapsed = time.monotonic() - started
        left = (elapsed / (i - 1) if i > 1 else estimated_run_seconds(cfg)) * (len(cells) - i + 1)
        log(f"[{i}/{len(cells)}] transport={cell.transport} repetition={cell.repetition + 1}/"
            f"{cfg['repetitions']}  (about {left:.0f} s left)")
        meta = run_loop(for_cell(cfg, cell), out_dir / "runs" / cell.run_id, log)
        summary["cells"].append({"run_id": cell.run_id, "transport": cell.transport,
                                 "repetition": cell.repetition, "status": meta["status"],
                                 "error": meta.get("error")})
        write_json_atomic(out_dir / "campaign.json", summary)
        if meta["status"] != "complete":
            log(f"    run {cell.run_id} {meta['status']}: {meta.get('error')}")
            if not cfg["keep_going"]:
                break
    return out_dir
