"""The generated parts of the documentation: ``make docs`` (``python -m netloop.docgen``).

A hand-written page holds a generated block between two HTML comments::

    <!-- generated: NAME (by `make docs`) -->
    ... rewritten by this module, never edited by hand ...
    <!-- end generated: NAME -->

Each NAME has one source in the code, so the page cannot drift from it:

    experiment-keys  docs/experiments.md  every experiment-file key (the typed model; ``validate --keys``)
    cli              docs/cli.md          every subcommand and option (the argparse parser of ``netloop``)
    glossary         docs/concepts.md     the report's words and numbers (analysis/glossary.py)
    link-profiles    docs/links.md        one row per config/links/*.yaml
    transports       docs/transports.md   one row per transport word (the transport registry)
    results          docs/results.md      per shipped experiment its newest campaign under results/, or
                                          that it was not measured
    headline         README.md            the example report (docs/example_report): the default
    example-ros2     docs/ros2.md           experiment's one campaign, quoted by every page that
    example-fig21    docs/studies/pound.md  states its result (netloop.docgen_example)
    study-STUDY      docs/studies/STUDY.md  the newest `netloop reproduce STUDY` under results/
    bench-priority   docs/priority.md     the priority relay's part of bench/bench.json (`make bench`)
    bench-ros2       docs/ros2.md         ROS 2's middlewares' part of bench/bench.json (`make bench`)

Usage::

    python -m netloop.docgen                 rewrite every block of README.md and docs/*.md
    python -m netloop.docgen --check         rewrite nothing; exit 1 listing the stale blocks
    python -m netloop.docgen --results DIR   campaigns from DIR instead of results/
    python -m netloop.docgen --skip results  leave a block alone (--only NAME: just that one)

No block carries a git revision or a time of day (docgen_blocks.undiaried takes them out of
whatever a generator writes: the campaign a block names keeps both). A block whose page does not
exist yet is skipped with a note; a block whose source cannot be
imported here (a module not written yet, a package missing) is left as it is with a note
saying what is missing. A block may also appear in another page than its usual one.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Callable

from . import paths
from .docgen_blocks import BLOCK, OPENING, PAGES, Context, Unavailable, in_code, outside, undiaried
from .docgen_reference import cli_reference, experiment_keys, glossary, link_profiles, transports
from .docgen_example import EXAMPLE, example_fig21, example_ros2, headline, set_example
from .docgen_results import bench_priority, bench_ros2, results, study
from .studies import STUDY_MODULES   # the study words only (no study module is imported)

# ---------------------------------------------------------------- the pages

GENERATORS: dict[str, Callable[[Context], str]] = {
    "experiment-keys": experiment_keys,
    "cli": cli_reference,
    "glossary": glossary,
    "link-profiles": link_profiles,
    "transports": transports,
    "results": results,
    "headline": headline,
    "example-ros2": example_ros2,
    "example-fig21": example_fig21,
    **{f"study-{s}": study(s) for s in STUDY_MODULES},
    "bench-priority": bench_priority,
    "bench-ros2": bench_ros2,
}


def pages(root: Path) -> list[Path]:
    """The pages that may hold generated blocks: README.md, docs/*.md and docs/studies/*.md."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md")),
                        *sorted((root / "docs" / "studies").glob("*.md"))] if p.is_file()]


def _rewrite(text: str, content: dict[str, str | None]) -> tuple[str, list[str]]:
    """``text`` with every block whose content is known rewritten; the names that changed."""
    changed: list[str] = []

    code = in_code(text)

    def repl(m: re.Match) -> str:
        body = content.get(m.group("name"))
        if body is None or not outside(code, m.start()):
            return m.group(0)
        new = f"{m.group('start')}\n\n{body.strip()}\n\n{m.group('end')}"
        if new != m.group(0):
            changed.append(m.group("name"))
        return new
    return BLOCK.sub(repl, text), changed


def run(root: Path, results_dir: Path, check: bool = False, only: list[str] | None = None,
        skip: list[str] | None = None, out=sys.stdout, err=sys.stderr) -> int:
    """Rewrite (or with ``check`` only compare) the generated blocks of the pages under ``root``.
    Returns 0, 1 when ``check`` found stale blocks, 2 for a malformed page."""
    ctx = Context(Path(root), Path(results_dir))
    wanted = [n for n in (only or GENERATORS) if n not in (skip or [])]
    unknown = [n for n in wanted if n not in GENERATORS]
    if unknown:
        print(f"docgen: unknown block {', '.join(unknown)}; known: {', '.join(GENERATORS)}", file=err)
        return 2
    texts = {page: page.read_text(encoding="utf-8") for page in pages(ctx.root)}
    problems, found = [], {}
    for page, text in texts.items():
        rel = page.relative_to(ctx.root).as_posix()
        code = in_code(text)
        closed = [m.group("name") for m in BLOCK.finditer(text) if outside(code, m.start())]
        for name in [m.group(1) for m in OPENING.finditer(text) if outside(code, m.start())]:
            if name not in GENERATORS:
                problems.append(f"{rel}: unknown generated block {name!r} (known: {', '.join(GENERATORS)})")
            elif name not in closed:
                problems.append(f"{rel}: block {name!r} has no '<!-- end generated: {name} -->'")
        for name in closed:
            found.setdefault(name, []).append(rel)
    if problems:
        for p in problems:
            print(f"docgen: {p}", file=err)
        return 2
    content: dict[str, str | None] = {}
    for name in wanted:
        page = PAGES[name]
        if name not in found:
            why = "does not exist yet" if not (ctx.root / page).is_file() else f"has no block '{name}'"
            print(f"docgen: skipped {name}: {page} {why}", file=err)
            continue
        try:
            content[name] = undiaried(GENERATORS[name](ctx))   # no block carries a revision or a time of day
        except Unavailable as why:
            print(f"docgen: left {name} as it is: {why}", file=err)
    stale = []
    for page, text in texts.items():
        new, changed = _rewrite(text, content)
        rel = page.relative_to(ctx.root).as_posix()
        for name in changed:
            stale.append(f"{rel}: {name}")
        if changed and not check:
            page.write_text(new, encoding="utf-8")
    if check:
        if stale:
            print("docgen: stale generated blocks (run 'make docs'):", file=err)
            for s in stale:
                print(f"  {s}", file=err)
            return 1
        print(f"docgen: {len(content)} block(s) current", file=out)
        return 0
    for s in stale:
        print(f"docgen: rewrote {s}", file=out)
    if not stale:
        print(f"docgen: {len(content)} block(s) already current", file=out)
    return 0



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m netloop.docgen",
                                 description="rewrite the generated blocks of README.md and docs/*.md")
    ap.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 listing the stale blocks")
    ap.add_argument("--results", type=Path, default=None,
                    help="where the campaigns of the results block are (default results/)")
    ap.add_argument("--root", type=Path, default=paths.REPO,
                    help="where the pages are (README.md, docs/); default the repository (a copy, for tests)")
    ap.add_argument("--only", action="append", metavar="NAME", help="only this block (repeatable)")
    ap.add_argument("--skip", action="append", metavar="NAME", help="leave this block alone (repeatable)")
    ap.add_argument("--example", type=Path, metavar="CAMPAIGN",
                    help=f"first make this campaign's report the example ({EXAMPLE}), then rewrite the blocks")
    args = ap.parse_args(argv)
    if args.example:
        print(f"docgen: {set_example(args.root, args.example)} now holds the report of {args.example}")
    results_dir = args.results or (paths.RESULTS if args.root == paths.REPO else args.root / "results")
    return run(args.root, results_dir, args.check, args.only, args.skip)


if __name__ == "__main__":
    sys.exit(main())
