"""The RLC loop's margins in its report: its model read from each run's metadata (the circuit's
R, L, C, the controller's gains, the sample period, as the run recorded them), the margins
per sweep setting (:mod:`margins`), and every transport's measured loop delay against them
(:mod:`margin_report`)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import baseline, degradation, margin_report
from .margins import LoopMargins
from .rendering import Section
from .results import RunAnalysis, RunPoint
from .rlc_result import rlc_timing
from .tables import write_csv


def law_text(controller: dict) -> str:
    """'P control, K 1' / 'PI control, K 1, Ki 2 /s' / 'PID control, ...'."""
    terms = [("K", controller["K"], "")]
    terms += [("Ki", controller["Ki"], " /s")] if controller["Ki"] else []
    terms += [("Kd", controller["Kd"], " s")] if controller["Kd"] else []
    kind = "P" + ("I" if controller["Ki"] else "") + ("D" if controller["Kd"] else "")
    return f"{kind} control, " + ", ".join(f"{name} {value:g}{unit}" for name, value, unit in terms)


def rlc_model(loop: dict) -> margin_report.LoopModel:
    """The loop of an experiment's ``loop`` mapping as the margins see it."""
    p = loop["plant"]
    return margin_report.LoopModel(
        description=(f"series RLC circuit R {p['R']:g} Ω, L {p['L']:g} H, C {p['C']:g} F; "
                     f"{law_text(loop['controller'])}; sampled every {1e3 * p['period']:g} ms"),
        plant=baseline.rlc_state_space(p["R"], p["L"], p["C"]), controller=baseline.controller_tf(loop),
        dt=p["period"], continuous_controller=baseline.controller_continuous(loop))


@dataclass
class SettingMargins:
    """One sweep setting's loop, its margins and its transports against them."""

    setting: str
    model: margin_report.LoopModel | None = None
    margins: LoopMargins | None = None
    found: list[margin_report.Assessment] = field(default_factory=list)
    problem: str | None = None


def _key(loop: dict) -> str:
    return json.dumps([{k: loop["plant"][k] for k in ("R", "L", "C", "period")},
                       {k: loop["controller"][k] for k in ("K", "Ki", "Kd")}], sort_keys=True)


#: the margins of every loop computed in this process, by :func:`_key` (a loop's margins depend
#: on its model alone; a second report of the same loop need not compute them again)
_COMPUTED: dict[str, LoopMargins] = {}


def loop_margins(loop: dict) -> LoopMargins:
    """The margins of an experiment's ``loop`` mapping (:func:`rlc_model`), computed once per process."""
    key = _key(loop)
    if key not in _COMPUTED:
        _COMPUTED[key] = rlc_model(loop).margins()
    return _COMPUTED[key]


def margin_study(good: list[RunAnalysis], points: list[RunPoint], settings: list[str],
                 transports: list[str]) -> list[SettingMargins]:
    """Per setting (in ``settings`` order) the margins of its loop and every transport (in
    ``transports`` order) against them; a loop that differs between runs of one setting, or
    margins that cannot be computed, leave the setting with a ``problem``."""
    verdict = {p.run_id: p.verdict for p in points}
    out = []
    for setting in settings:
        runs = [a for a in good if degradation.setting_of(a) == setting]
        loops = {_key(a.experiment["loop"]): a.experiment["loop"] for a in runs if a.experiment.get("loop")}
        entry = SettingMargins(setting)
        out.append(entry)
        if len(loops) != 1:
            entry.problem = ("no loop configuration recorded" if not loops else
                             "its runs recorded different loops: no one set of margins")
            continue
        loop = next(iter(loops.values()))
        try:
            entry.model, entry.margins = rlc_model(loop), loop_margins(loop)
        except (ValueError, KeyError, TypeError, ArithmeticError) as err:
            entry.problem = f"the margins could not be computed ({type(err).__name__}: {err})"
            continue
        order = [t for t in dict.fromkeys(transports) if any(a.transport == t for a in runs)]
        order += sorted({a.transport for a in runs} - set(order))
        groups = []
        for t in order:
            mine = [a for a in runs if a.transport == t]
            counts: dict[str, int] = {}
            for a in mine:
                if verdict.get(a.run_id):
                    counts[verdict[a.run_id]] = counts.get(verdict[a.run_id], 0) + 1
            groups.append((setting, t, [(a.run_id, rlc_timing(a)) for a in mine], counts))
        entry.found = margin_report.assess(groups, entry.margins)
    return out


def _where(entry: SettingMargins, swept: bool) -> str:
    return f"With {entry.setting}: " if swept else ""


def summary(study: list[SettingMargins], swept: bool) -> list[str]:
    """The margins' sentences of the report's Summary, per setting."""
    out = []
    for entry in study:
        if entry.margins is None:
            out.append(_where(entry, swept) + f"Stability margins: {entry.problem}.")
        else:
            out += margin_report.summary(entry.model, entry.margins, entry.found, _where(entry, swept))
    return out


def sections(study: list[SettingMargins], swept: bool, fig_dir: Path) -> list[Section]:
    """The report's section "Stability margins" (one part per setting when swept)."""
    from .loop_sections import slug  # noqa: PLC0415 - loop_sections imports the plots

    sections = []
    for entry in study:
        title = "Stability margins" + (f", {entry.setting}" if swept else "")
        if entry.margins is None:
            sections.append(Section(title).p(f"No margins: {entry.problem}.", "problems"))
            continue
        fig = fig_dir / (f"margins__{slug(entry.setting)}.png" if swept else "margins.png")
        sections.append(margin_report.section(entry.model, entry.margins, entry.found, fig, title))
    return sections


def write_margins_csv(path: Path, study: list[SettingMargins]) -> None:
    """margins.csv: every setting's transports against its margins."""
    rows, header = [], None
    for entry in study:
        if entry.margins is not None:
            header, part = margin_report.csv_rows(entry.found, entry.margins)
            rows += part
    if header is not None:
        write_csv(path / "margins.csv", header, rows)
