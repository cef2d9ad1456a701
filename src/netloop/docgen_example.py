"""The default experiment's one story (:mod:`netloop.docgen`): every page's statement about the
default experiment comes from ONE campaign, the example report in docs/example_report, which
``make example-report`` measures and installs (``python -m netloop.docgen --example CAMPAIGN``).

    headline       README.md              the summary's first paragraph and the decision table
    example-ros2   docs/ros2.md           the decision table's ROS 2 rows beside the best one
    example-fig21  docs/studies/pound.md  the Pound paper's Fig. 21 claims against the table

docs/results.md's section of the default experiment names the same campaign and links here
(:func:`netloop.docgen_results.results`). Each block names the campaign, its date and machine, so
a reader can tell it from an older campaign a page still discusses. The report is read from its
report.md (title, header lines, Summary, decision table), so its format may grow columns: a
column is found by its header's first word.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .docgen_blocks import Context, Unavailable, md_table, need
from .docgen_report import report_extract

EXAMPLE = "docs/example_report"


@dataclass
class Example:
    """What the pages quote of the example report."""
    campaign: str                  # its campaign directory's name (the report's title)
    date: str                      # the day its runs ran
    host: str                      # the machine, as the report's header names it
    repetitions: str | None
    runs: str | None               # e.g. "22 (22 without problems)"
    summary: str                   # the Summary's first paragraph
    table: str                     # the decision table, as Markdown
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def column(self, first_word: str) -> int | None:
        """The index of the decision table's column whose header starts with ``first_word``."""
        for i, h in enumerate(self.header):
            if h.lower().startswith(first_word.lower()):
                return i
        return None

    def cell(self, row: list[str], first_word: str) -> str:
        i = self.column(first_word)
        return row[i] if i is not None and i < len(row) else ""

    def transports(self) -> list[str]:
        """The decision table's transports, best first."""
        return [self.cell(r, "transport") for r in self.rows]

    def row(self, transport: str) -> list[str] | None:
        return next((r for r in self.rows if self.cell(r, "transport") == transport), None)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_example(root: Path) -> Example:
    """The example report of ``root`` (docs/example_report/report.md), or Unavailable."""
    report = root / EXAMPLE / "report.md"
    if not report.is_file():
        raise Unavailable(f"{EXAMPLE}/report.md does not exist (make example-report makes it)")
    md = report.read_text(encoding="utf-8")
    title = re.search(r"^# netloop report: (\S+)", md, re.M)
    host = re.search(r"^- git \S+(?: \(dirty\))?; host (.+?)(?:; run on (\S+))?$", md, re.M)
    reps = re.search(r"^- repetitions: (\d+)", md, re.M)
    runs = re.search(r"^- runs: (.+)$", md, re.M)
    summary, table = report_extract(md)
    lines = [ln for ln in table.splitlines() if ln.lstrip().startswith("|")]
    header = _cells(lines[0]) if lines else []
    return Example(campaign=title.group(1) if title else "campaign not named",
                   date=host.group(2) if host and host.group(2) else "date not recorded",
                   host=host.group(1) if host else "machine not recorded",
                   repetitions=reps.group(1) if reps else None, runs=runs.group(1) if runs else None,
                   summary=summary.split("\n\n")[0].strip(), table=table,
                   header=header, rows=[_cells(ln) for ln in lines[2:]])


def cite(ex: Example) -> str:
    """The words every block uses to name the campaign it states."""
    reps = (f", {ex.repetitions} repetition{'' if ex.repetitions == '1' else 's'}" if ex.repetitions else "")
    return f"campaign `{ex.campaign}`, measured {ex.date} on {ex.host}{reps}"


def headline(ctx: Context) -> str:
    """The README's headline: the example report's first summary paragraph and decision table,
    with the campaign, when and where it was measured."""
    ex = read_example(ctx.root)
    folder = ctx.root / EXAMPLE
    figure = ("![each step of every transport against the local loop](docs/example_report/figures/step_intervals.png)"
              if (folder / "figures" / "step_intervals.png").is_file() else
              "![step responses over wifi6](docs/example_report/figures/step_response.png)")
    shape = ", a square-wave reference" if "repeated steps" in ex.summary else ""
    return "\n".join([
        f"The default experiment (`make run`: the RLC loop over emulated 802.11a at 6 Mbit/s beside a 64 KB "
        f"image every 200 ms, {len(ex.rows)} transports{shape}): {cite(ex)}. The whole "
        f"report is [docs/example_report](docs/example_report/report.md); `make example-report` measures it "
        f"again and rewrites every page's statement of it.", "",
        figure, "",
        ex.summary, "", ex.table])


def _ros2_transports() -> set[str]:
    registry = need("netloop.transports", "the ROS 2 rows")
    return {n for n in registry.transport_names() if getattr(registry.get_transport(n), "middleware", None)}


def example_ros2(ctx: Context) -> str:
    """docs/ros2.md: the example's ROS 2 rows beside the best transport, one sentence on them."""
    ex = read_example(ctx.root)
    ros2 = _ros2_transports()
    mine = [r for r in ex.rows if ex.cell(r, "transport") in ros2]
    if not mine:
        return (f"The default experiment's {cite(ex)} ([the example report](example_report/report.md)) has no "
                f"ROS 2 transport: this build could not run one (`make build` builds them).")
    top, best = mine[0], ex.rows[0]
    rank = ex.cell(top, "rank")
    words = [f"From the default experiment's {cite(ex)} ([the example report](example_report/report.md), the "
             f"[README's headline](../README.md#headline-result)): of ROS 2's transports, **{ex.cell(top, 'transport')}** kept the loop closest "
             f"to local (rank {rank} of {len(ex.rows)}: {ex.cell(top, 'verdict')})"]
    if best is not top:
        words.append(f"; the best of all was {ex.cell(best, 'transport')}")
    rows = [best] + mine if best is not top else mine
    return "".join(words) + ".\n\n" + md_table(ex.header, rows)


#: the Pound paper's methods and netloop's transports for them (RT-WMP has none)
def _pound_methods() -> dict[str, str]:
    return dict(need("netloop.studies.pound", "the Fig. 21 statement").METHODS)


def _names(items: list[str]) -> str:
    return ", ".join(items) if items else "none"


def example_fig21(ctx: Context) -> str:
    """docs/studies/pound.md: the paper's two Fig. 21 claims (only Pound close to the local
    response; Pound the closest) judged on the example's decision table: its ranking and its
    "clearly better than" (the intervals of the per-step medians do not overlap)."""
    ex = read_example(ctx.root)
    methods = _pound_methods()
    ranked = [(m, t) for t in ex.transports() for m, mt in methods.items() if mt == t]
    intro = (f"The default experiment's {cite(ex)} ([the example report](../example_report/report.md), the "
             f"[README's headline](../../README.md#headline-result))")
    if "Pound" not in dict(ranked) or len(ranked) < 2:
        return (f"{intro} has no `{methods['Pound']}` row beside another of the paper's methods "
                f"({_names([t for _, t in ranked])} among its transports), so it cannot judge Fig. 21.")
    pound = methods["Pound"]
    row = ex.row(pound)
    beaten = {w.strip() for w in ex.cell(row, "clearly").split(",")}
    others = [m for m, _ in ranked if m != "Pound"]
    clear = [m for m in others if methods[m] in beaten]
    unclear = [m for m in others if methods[m] not in beaten]
    first = ranked[0][0]
    closest = ("Pound is the closest of the paper's methods" if first == "Pound" else
               f"{first} (`{methods[first]}`) is the closest of the paper's methods, not Pound")
    if not unclear:
        verdict = "the paper's finding holds: Pound is clearly closer to the local response than every other method"
    elif clear:
        verdict = (f"the paper's finding holds only in part: Pound is clearly closer than {_names(clear)}, "
                   f"but not clearly different from {_names(unclear)}")
    else:
        verdict = "the paper's finding does not hold: Pound is not clearly closer than any other method"
    iae = ex.column("IAE")
    table_rows = [[m, f"`{t}`", ex.cell(ex.row(t), "rank"), ex.row(t)[iae] if iae is not None else "",
                   ex.cell(ex.row(t), "verdict")] for m, t in ranked]
    return "\n".join([
        f"{intro}, judged on its decision table: a difference is clear when the 95 % intervals of two "
        f"transports' per-step medians do not overlap. {closest}; {verdict}.", "",
        md_table(["paper's method", "transport", "rank (of all)", ex.header[iae] if iae is not None else "IAE",
                  "verdict"], table_rows)])


def set_example(root: Path, campaign: Path) -> Path:
    """Make ``campaign``'s report the example of ``root``/docs/example_report: its report.md,
    report.html, CSV tables, analysis.json, campaign.json, experiment.yaml, figures and the runs'
    MCAP files (not the runs' records, which stay in results/). What the example held before is
    replaced."""
    import shutil  # noqa: PLC0415
    if not (campaign / "report.md").is_file():
        raise SystemExit(f"docgen: {campaign} holds no report.md (run 'bin/netloop report {campaign}' first)")
    dest = root / EXAMPLE
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "figures").mkdir(parents=True)
    for f in sorted(campaign.iterdir()):
        if f.is_file() and (f.suffix in (".md", ".html", ".csv", ".json") or f.name == "experiment.yaml"):
            shutil.copy2(f, dest / f.name)
    for f in sorted((campaign / "figures").glob("*.png")):
        shutil.copy2(f, dest / "figures" / f.name)
    if (campaign / "mcap").is_dir():   # the time series the report links
        (dest / "mcap").mkdir()
        for f in sorted((campaign / "mcap").glob("*.mcap")):
            shutil.copy2(f, dest / "mcap" / f.name)
    return dest
