"""The generated block of each study's page, ``docs/studies/<study>.md`` (``make docs``).

The block ``study-<study>`` holds the newest comparison ``netloop reproduce <study>`` wrote under
``results/`` (``reproduce_<study>-<stamp>/reproduction.json``; a full one before a ``--quick`` one),
with the date and machine its campaigns ran on. With no comparison under ``results/`` the page keeps
what it has, or says the command that measures it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from .cli import OUTPUT_PREFIX
from .core import Comparison, ShapeCheck, StudyResult, Tolerance

_STAMP = re.compile(r"-(\d{8}-\d{6})$")


def newest_reproduction(results: Path, study: str) -> Path | None:
    """The newest ``reproduce_<study>-*`` directory of ``results``: full before quick."""
    found = {False: [], True: []}
    for d in results.glob(f"{OUTPUT_PREFIX}{study}*-*"):
        m = _STAMP.search(d.name)
        rest = d.name[len(OUTPUT_PREFIX) + len(study):-len(m.group(0))] if m else None
        if m and rest in ("", "-quick") and (d / "reproduction.json").is_file():
            found[rest == "-quick"].append((m.group(1), d))
    for quick in (False, True):
        if found[quick]:
            return max(found[quick])[1]
    return None


def result_from_json(data: dict) -> StudyResult:
    """A StudyResult read back from reproduction.json (verdicts recomputed by the same rules)."""
    comps = []
    for c in data.get("comparisons") or []:
        tol = _tolerance(c.get("tolerance"))
        comps.append(Comparison(c["item"], c["unit"], c["published"], c["netloop"], tol, c["basis"], c.get("note", ""),
                                never=bool(c.get("never"))))
    checks = [ShapeCheck(s["item"], s["expected"], s["observed"],
                         None if s["verdict"] == "not measured" else s["verdict"] == "holds", s.get("note", ""))
              for s in data.get("checks") or []]
    return StudyResult(data["study"], comps, checks, dict(data.get("campaigns") or {}), list(data.get("notes") or []))


def _tolerance(text: str | None) -> Tolerance | None:
    """``"×2 or ±3"`` (Tolerance.describe) back to a Tolerance."""
    if not text:
        return None
    kw = {}
    for part in text.split(" or "):
        part = part.strip()
        if part.startswith("×"):
            kw["factor"] = float(part[1:])
        elif part.endswith(" pp"):
            kw["points"] = float(part[1:-3])
        elif part.startswith("±"):
            kw["absolute"] = float(part[1:])
    return Tolerance(**kw)


def block(study: str, results: Path, kept: str | None, run_metadata, date, machine) -> str:
    """The body of block ``study-<study>``; ``run_metadata``, ``date``, ``machine`` are docgen's
    helpers (the same date and machine lines as docs/results.md)."""
    d = newest_reproduction(results, study) if results.is_dir() else None
    if d is None:
        if kept:
            return kept
        return (f"Not reproduced on this machine yet: `sudo bin/netloop reproduce {study}` "
                f"(`--quick` for the short variants), then `make docs`.")
    data = json.loads((d / "reproduction.json").read_text(encoding="utf-8"))
    metas, where = [], []
    for part, rel in (data.get("campaigns") or {}).items():
        campaign = (d / rel).resolve()
        m = run_metadata(campaign) if campaign.is_dir() else []
        metas += m
        where.append(f"{part}: `{campaign.name}`")
    kind = "the quick variants (`--quick`)" if data.get("quick") else "the full experiment files"
    head = (f"Reproduced with {kind}, measured {date(d, metas)} on {machine(metas)} "
            f"(`{d.name}`; campaigns {', '.join(where) or 'none'}).")
    return head + "\n\n" + result_from_json(data).markdown()
