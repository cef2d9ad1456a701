"""The documentation as a reader meets it: README.md, docs/*.md and the per-folder READMEs.

(a) every generated block is current (``make docs`` / ``python -m netloop.docgen --check``),
    except ``results``, which depends on results/ (absent in a fresh clone): its generation
    is checked on a synthetic campaign instead;
(b) every relative link resolves to a file or folder of the repository, and every ``#anchor``
    to a heading of the target page (GitHub's slug: lower case, spaces to '-', punctuation
    other than '-' and '_' dropped, '-1', '-2' ... for repeated headings);
(c) every page of docs/ is reachable from README.md by following links;
(d) every command of a fenced ```sh block of README.md and docs/*.md runs and exits 0, from the
    repository root, one line at a time (a line ending in '\\' goes on with the next; blank
    lines and '#' comments are skipped), with these rules:
      - a leading ``sudo `` is dropped (the test runs as root);
      - ``make X`` is checked as ``make -n X`` (the targets themselves run elsewhere in CI);
      - ``netloop ...`` is ``bin/netloop ...``;
      - ``bin/netloop run FILE`` of a loopback experiment runs with ``--quick`` into a
        temporary results directory; of any other experiment it becomes
        ``bin/netloop run --dry-run FILE`` (``--dry-run`` already given: run as written);
      - ``bin/netloop calibrate ...`` and ``bin/netloop bench ...`` become their ``--help``, and
        ``bin/netloop reproduce ...`` too unless it is ``--list``;
      - ``git clone``, ``cd`` (into the clone) and ``apt-get``/``apt`` lines are skipped (a
        fresh machine is CI itself); in a line of commands joined by ``&&`` each is taken alone;
      - a ``<placeholder>`` in an sh block is a failure: such a line belongs in a ``console``
        block.
    Tests are named by page and line (``test_sh_command[docs/install.md:42]``).

Pages are collected as they exist when the tests are collected: a page not written yet is
simply not checked.
"""
from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
from collections import Counter, deque
from pathlib import Path

import pytest

from netloop import docgen, docgen_example, docgen_results, paths

REPO = paths.REPO
NETLOOP = str(REPO / "bin" / "netloop")


# ---------------------------------------------------------------- the pages

def _git_md_files() -> list[str]:
    out = []
    for args in (["ls-files"], ["ls-files", "--others", "--exclude-standard"]):
        res = subprocess.run(["git", "-C", str(REPO), *args, "*.md"], capture_output=True, text=True)
        out += res.stdout.split()
    return sorted(set(out))


def checked_pages() -> list[str]:
    """README.md, CHANGELOG.md, docs/*.md, docs/studies/*.md and every README.md of a folder, as
    paths from the repository root."""
    files = [f for f in _git_md_files() if (REPO / f).is_file()]
    docs = [f for f in files if re.fullmatch(r"docs/(studies/)?[^/]+\.md", f) or f == "CHANGELOG.md"]
    readmes = [f for f in files if Path(f).name == "README.md"]
    return sorted(set(docs + readmes), key=lambda f: (f != "README.md", f))


def command_pages() -> list[str]:
    """The pages whose sh blocks are run: README.md, docs/*.md and docs/studies/*.md."""
    return [f for f in checked_pages() if f == "README.md" or re.fullmatch(r"docs/(studies/)?[^/]+\.md", f)]


def _without_code(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks, inline code blanked out."""
    out, fence = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"\s*(`{3,}|~{3,})", line)
        if m and (fence is None or m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)):
            fence = None if fence else m.group(1)
            continue
        if fence is None:
            out.append((n, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda c: " " * len(c.group(0)), line)))
    return out


# ---------------------------------------------------------------- (a) generated blocks

def test_generated_blocks_are_current():
    """``make docs`` has been run after the last change to what the blocks come from."""
    out, err = io.StringIO(), io.StringIO()
    rc = docgen.run(REPO, REPO / "results", check=True, skip=["results"], out=out, err=err)
    notes = err.getvalue()
    assert "left " not in notes, notes               # every source readable here
    assert rc == 0, notes


def test_each_existing_page_holds_its_block():
    missing = [f"{page}: {name}" for name, page in docgen.PAGES.items()
               if (REPO / page).is_file()
               and f"<!-- end generated: {name} -->" not in (REPO / page).read_text(encoding="utf-8")]
    assert not missing, "pages without their generated block (add the two marker lines): " + ", ".join(missing)


def _block(page: Path, name: str) -> str:
    m = re.search(rf"<!-- generated: {name} \(by `make docs`\) -->(.*?)<!-- end generated: {name} -->",
                  page.read_text(encoding="utf-8"), re.S)
    assert m, f"{page} has no generated block {name!r}"
    return m.group(1)


@pytest.mark.skipif(not (REPO / "docs" / "experiments.md").is_file(), reason="docs/experiments.md not written yet")
def test_experiment_reference_is_current():
    """docs/experiments.md holds the table `netloop validate --keys` prints."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROS_PACKAGE_PATH")}
    res = subprocess.run([NETLOOP, "validate", "--keys"], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() in _block(REPO / "docs" / "experiments.md", "experiment-keys")


def _loop_delays(cell, cfg, rng):
    n = cfg["loop"]["samples"]
    base = {"tcp": 0.004, "udp": 0.0005, "priority": 0.0002, "cyclonedds": 0.03}[cell.transport]
    return [base + rng.uniform(0, 0.002, n) for _ in range(2)]


def test_results_block_copies_the_newest_campaign(tmp_path):
    """On a synthetic campaign of rlc_loopback: its date, machine, valid runs, Summary and first
    table appear, no git revision; an older campaign and a --quick one are passed over; an
    experiment with no campaign is in the table of those not measured, with its estimate."""
    from netloop.analysis import synthetic
    from netloop.analysis.report import write_report

    results = tmp_path / "results"
    camp = synthetic.write_campaign(results / "rlc_loopback-20261125-120000", {
        "name": "rlc_loopback", "link": "loopback", "transport": ["tcp", "udp"], "repetitions": 2,
        "loop": {"samples": 80}}, _loop_delays)
    write_report(camp)
    for older in ("rlc_loopback-20261001-120000", "rlc_loopback-quick-20261201-120000"):
        (results / older).mkdir()
        (results / older / "report.md").write_text("# old\n\n## Summary\n\nNOT THIS ONE\n")
    report = (camp / "report.md").read_text(encoding="utf-8")
    summary, table = docgen_results.report_extract(report)
    assert summary and table.startswith("|")

    block = docgen_results.results(docgen.Context(tmp_path, results))
    meta = json.loads(next((camp / "runs").glob("*/metadata.json")).read_text())
    part = block.split("### rlc_loopback", 1)[1].split("\n### ", 1)[0]
    assert meta["start_time"][:10] in part                # the date
    assert meta["host"]["cpu"] in part                    # the machine
    assert "4 of 4 runs valid" in part
    assert table.splitlines()[0] in part and table.splitlines()[-1] in part   # the first table, copied
    assert summary.splitlines()[0] in part
    assert "NOT THIS ONE" not in block
    assert "](" not in part                               # nothing links into the campaign directory
    assert "; git " not in part                           # the revision stays in the campaign
    assert re.search(r"^\| `experiments/pound_fig21.yaml` \| about \d+(\.\d)? (min|h) \| "
                     r"\[pound\]\(studies/pound.md\), `--part fig21` \|$", block, re.M)
    assert "### pound_fig21" not in block
    assert re.search(r"\*\*Measured: 1 of the (\d+) shipped files\*\*.*\*\*Not measured: \d+\*\*", block)
    assert "| `experiments/real/rlc_wifi.yaml` |" in block


def test_results_block_keeps_what_it_cannot_measure_again(tmp_path):
    """A clone without results/ keeps the page's measured sections (make docs loses nothing) and
    still names the command for what was never measured."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "results.md").write_text(
        "# Results\n\n<!-- generated: results (by `make docs`) -->\n\nhead\n\n### rlc_loopback\n\n"
        "`experiments/rlc_loopback.yaml`, measured 2026-11-25 on X; git 0123abc4567 with local changes; "
        "1 of 1 runs valid.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "### pound_fig21\n\nnot measured yet: `bin/netloop run experiments/pound_fig21.yaml` (about 5 min)\n\n"
        "<!-- end generated: results -->\n", encoding="utf-8")
    block = docgen_results.results(docgen.Context(tmp_path, tmp_path / "no-results"))
    part = block.split("### rlc_loopback", 1)[1].split("\n### ", 1)[0]
    assert "measured 2026-11-25 on X; 1 of 1 runs valid." in part and "| 1 | 2 |" in part   # kept, without git
    assert re.search(r"^\| `experiments/pound_fig21.yaml` \| about", block, re.M)


def test_one_campaign_made_the_example_feeds_every_statement_of_the_default_experiment(tmp_path):
    """--example copies a campaign's report (not its runs) into docs/example_report; the README's
    headline (its first summary paragraph and decision table), ros2.md's ROS 2 rows, pound.md's
    Fig. 21 judgement and results.md's section of the default experiment all name that campaign
    and its date; a newer campaign in results/ is pointed out, not quoted."""
    from netloop.analysis import synthetic
    from netloop.analysis.report import write_report

    camp = synthetic.write_campaign(tmp_path / "results" / "pound_fig21-20261125-120000", {
        "name": "pound_fig21", "link": "loopback", "transport": ["udp", "priority", "cyclonedds"], "repetitions": 2,
        "loop": {"samples": 120, "controller": {"square_wave": {"period": 2.0, "count": 1}}}}, _loop_delays)
    write_report(camp)
    example = docgen_example.set_example(tmp_path, camp)
    assert (example / "report.md").read_text() == (camp / "report.md").read_text()
    assert (example / "report.html").is_file() and (example / "figures" / "step_response.png").is_file()
    assert not (example / "runs").exists()
    assert sorted(p.name for p in (example / "mcap").glob("*.mcap")) == sorted(
        p.name for p in (camp / "mcap").glob("*.mcap")) and len(list((camp / "mcap").glob("*.mcap"))) == 6

    ctx = docgen.Context(tmp_path, tmp_path / "results")
    day = json.loads(next((camp / "runs").glob("*/metadata.json")).read_text())["start_time"][:10]
    named = f"campaign `{camp.name}`, measured {day} on "
    summary, table = docgen_results.report_extract((camp / "report.md").read_text(encoding="utf-8"))
    headline = docgen_example.headline(ctx)
    assert named in headline and summary.split("\n\n")[0] in headline and table.splitlines()[2] in headline
    assert "(docs/example_report/figures/step_intervals.png)" in headline

    ex = docgen_example.read_example(tmp_path)
    best = ex.transports()[0]
    ros2 = docgen_example.example_ros2(ctx)
    assert named in ros2 and "**cyclonedds** kept the loop closest" in ros2
    assert "| cyclonedds |" in ros2 and f"| {best} |" in ros2
    assert ("| udp |" in ros2) == (best == "udp")             # ROS 1's rows: only the best one

    fig21 = docgen_example.example_fig21(ctx)
    assert named in fig21 and "| Pound | `priority` |" in fig21 and "| UDP | `udp` |" in fig21
    assert "cyclonedds" not in fig21.split("\n\n", 1)[1]     # the paper has no ROS 2 method
    assert re.search(r"the paper's finding (holds|holds only in part|does not hold)", fig21)

    block = docgen_results.results(ctx)
    part = block.split("### pound_fig21", 1)[1].split("\n### ", 1)[0]
    assert named in part and "(../README.md#headline-result)" in part and "newer" not in part
    newer = tmp_path / "results" / "pound_fig21-20261126-120000"
    newer.mkdir()
    (newer / "report.md").write_text("# netloop report: pound_fig21-20261126-120000\n\n## Summary\n\nx\n")
    part = docgen_results.results(ctx).split("### pound_fig21", 1)[1].split("\n### ", 1)[0]
    assert named in part and f"--example results/{newer.name}" in part


def test_example_blocks_find_columns_by_name_and_say_what_they_cannot_judge(tmp_path):
    """The example's statements read the decision table by its columns' names (a report may grow
    or reorder columns), and a campaign without Pound beside another of the paper's methods says
    that it cannot judge Fig. 21 rather than leaving an older campaign's statement standing."""
    report = tmp_path / "docs" / "example_report" / "report.md"
    report.parent.mkdir(parents=True)
    report.write_text(
        "# netloop report: pound_fig21-20261201-080000\n\n- repetitions: 1\n- git abc1234; host X ×2; run on 2026-12-01\n"
        "- runs: 2 (2 without problems)\n\n## Summary\n\n**tcp** kept the loop closest to local over 8 repeated steps.\n\n"
        "## Decision table\n\n| transport | rank | RTT p50 / p99 [ms] | IAE(y − baseline) per step [mV·s] | verdict | clearly better than |\n"
        "|---|---|---|---|---|---|\n| tcp | 1 | 3 / 9 | 4.0 [3–5] | best | rmw_fastrtps_cpp |\n"
        "| rmw_fastrtps_cpp | 2 | 9 / 30 | 40 [30–50] | clearly worse by 36 mV·s | – |\n", encoding="utf-8")
    ctx = docgen.Context(tmp_path, tmp_path / "results")
    named = "campaign `pound_fig21-20261201-080000`, measured 2026-12-01 on X ×2, 1 repetition"
    assert named in docgen_example.headline(ctx) and "2 transports, a square-wave reference" in docgen_example.headline(ctx)
    ros2 = docgen_example.example_ros2(ctx)
    assert "**rmw_fastrtps_cpp** kept the loop closest to local (rank 2 of 2: clearly worse by 36 mV·s); the best " \
           "of all was tcp." in ros2 and "| tcp | 1 |" in ros2
    fig21 = docgen_example.example_fig21(ctx)
    assert named in fig21 and "has no `priority` row beside another of the paper's methods (tcp among its " \
                              "transports), so it cannot judge Fig. 21." in fig21


def test_report_extract_finds_the_first_table_after_the_summary():
    report = ("# r\n\n- git abc; host X ×2\n\n| not | this |\n|---|---|\n| 1 | 2 |\n\n## Summary\n\n"
              "**a** is best, see [the figure](figures/x.png).\n\n![f](figures/f.png)\n\n"
              "| transport | verdict |\n|:---|---:|\n| a | best |\n| b | worse by 3 % |\n\n*caption*\n\n"
              "## Next\n\n| other | table |\n|---|---|\n")
    summary, table = docgen_results.report_extract(report)
    assert summary == "**a** is best, see the figure."
    assert table.splitlines() == ["| transport | verdict |", "|:---|---:|", "| a | best |", "| b | worse by 3 % |",
                                  "", "*caption*"]


def test_report_extract_merges_a_decision_table_per_setting_into_one():
    report = ("# r\n\n## Summary\n\nbest: a\n\n## Decision table\n\nwhy\n\n### Flow `e`, period=0.1\n\n"
              "| rank | transport |\n|---|---|\n| 1 | a |\n| 2 | b |\n\n### Flow `e`, period=0.01\n\n"
              "| rank | transport |\n|---|---|\n| 1 | b |\n\n## Next\n")
    _, table = docgen_results.report_extract(report)
    assert table.splitlines() == ["| setting | rank | transport |", "|---|---|---|",
                                  "| Flow `e`, period=0.1 | 1 | a |", "| Flow `e`, period=0.1 | 2 | b |",
                                  "| Flow `e`, period=0.01 | 1 | b |"]


def test_check_lists_a_stale_block_and_rewriting_makes_it_current(tmp_path):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "transports.md"
    page.write_text("# T\n\n<!-- generated: transports (by `make docs`) -->\nold\n<!-- end generated: transports -->\n")
    err = io.StringIO()
    assert docgen.run(tmp_path, tmp_path / "results", check=True, out=io.StringIO(), err=err) == 1
    assert "docs/transports.md: transports" in err.getvalue()
    assert "skipped cli: docs/cli.md does not exist yet" in err.getvalue()
    assert docgen.run(tmp_path, tmp_path / "results", out=io.StringIO(), err=io.StringIO()) == 0
    assert "| `tcp_nodelay` |" in page.read_text()
    assert docgen.run(tmp_path, tmp_path / "results", check=True, out=io.StringIO(), err=io.StringIO()) == 0


# ---------------------------------------------------------------- (b) links, (c) reachability

_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HTML = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"([^\"]+)\"", re.I)


def links(page: str) -> list[tuple[int, str]]:
    """(line, target) of every link and image of a page (outside code)."""
    out = []
    for n, line in _without_code((REPO / page).read_text(encoding="utf-8")):
        for rx in (_INLINE, _HTML):
            out += [(n, m.group(1)) for m in rx.finditer(line)]
        m = _REFDEF.match(line)
        if m:
            out.append((n, m.group(1)))
    return out


def slug(heading: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())   # a link: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors GitHub makes for a page: one per heading (repeats numbered), plus explicit ids."""
    text = path.read_text(encoding="utf-8")
    seen: Counter = Counter()
    out = set()
    lines = _without_code(text)
    for i, (n, line) in enumerate(lines):
        m = re.match(r"\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        heading = m.group(1) if m else None
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if heading is None and line.strip() and nxt and nxt[0] == n + 1 and re.fullmatch(r"\s{0,3}(=+|-+)\s*", nxt[1]) \
                and not line.lstrip().startswith(("|", "-", "*")):
            heading = line.strip()
        if heading is None:
            continue
        s = slug(heading)
        out.add(s if not seen[s] else f"{s}-{seen[s]}")
        seen[s] += 1
    out |= set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    return out


def _ignored(path: Path) -> bool:
    return subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", str(path)]).returncode == 0


def _local(target: str) -> bool:
    return not re.match(r"[a-z][a-z0-9+.-]*:", target, re.I)   # http:, https:, mailto: ...


@pytest.mark.parametrize("page", checked_pages())
def test_relative_links_resolve(page):
    problems = []
    for n, target in links(page):
        if not _local(target):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (REPO / page).parent / path_part if path_part else REPO / page
        dest = Path(os.path.normpath(dest))
        where = f"{page}:{n}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
        elif REPO not in dest.parents and dest != REPO:
            problems.append(f"{where}: outside the repository")
        elif _ignored(dest):
            problems.append(f"{where}: not in the repository (ignored by git)")
        elif anchor:
            if dest.is_file() and dest.suffix == ".md":
                if anchor not in anchors(dest):
                    problems.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(REPO)}")
            elif not re.fullmatch(r"L\d+(-L\d+)?", anchor):
                problems.append(f"{where}: #{anchor} points into a file that is not a Markdown page")
    assert not problems, "\n".join(problems)


def test_every_docs_page_is_reachable_from_the_readme():
    seen, todo = {"README.md"}, deque(["README.md"])
    while todo:
        page = todo.popleft()
        for _, target in links(page):
            path_part = target.partition("#")[0]
            if not _local(target) or not path_part:
                continue
            dest = Path(os.path.normpath((REPO / page).parent / path_part))
            if dest.is_dir():
                dest = dest / "README.md"
            if dest.suffix == ".md" and dest.is_file() and REPO in dest.parents:
                rel = dest.relative_to(REPO).as_posix()
                if rel not in seen:
                    seen.add(rel)
                    todo.append(rel)
    docs = [f for f in checked_pages() if f.startswith("docs/")]
    assert not [f for f in docs if f not in seen], f"not reachable from README.md: {[f for f in docs if f not in seen]}"


# ---------------------------------------------------------------- (e) no diary; one index

def diary_pages() -> list[str]:
    """The user documentation that must carry no diary: README.md, docs/*.md, docs/studies/*.md."""
    return [f for f in checked_pages() if f == "README.md" or re.fullmatch(r"docs/(studies/)?[^/]+\.md", f)]


#: a commit hash: 7-40 hex digits with a digit and a letter, not part of a name or a path. An
#: upstream source's pinned revision (``owner/repo@7e1de20``) counts too: the pages name the
#: branch, and the tests and modules that hold netloop to that source keep the exact revision.
_HASH = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])")
_NOT_HASHES = {"ed25519"}
#: a time of day: HH:MM (not a part of HH:MM:SS-like values such as sshd's 10:30:100)
_CLOCK = re.compile(r"(?<![\d:.])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])")
#: what makes HH:MM a time of day in its paragraph: a date, UTC, "the same day"
_DATE_CONTEXT = re.compile(r"\b20\d\d-\d\d-\d\d\b|\bUTC\b|\b(?:same|that) day\b", re.I)
_CAMPAIGN = re.compile(r"[\w.+-]+-\d{8}-\d{6}")


def diary(text: str) -> list[str]:
    """'line: what' for every commit hash, time of day and "this round" of a page, outside the
    generated blocks that name their campaign (which keeps the revision and the time)."""
    for m in docgen.BLOCK.finditer(text):
        if _CAMPAIGN.search(m.group("body")):
            text = text[:m.start()] + "\n" * m.group(0).count("\n") + text[m.end():]
    found, paragraph = [], []
    for n, line in enumerate(text.splitlines() + [""], 1):
        if line.strip():
            paragraph.append((n, line))
            continue
        dated = _DATE_CONTEXT.search(" ".join(ln for _, ln in paragraph))
        for k, ln in paragraph:
            found += [f"{k}: commit hash {h}" for h in _HASH.findall(ln) if h not in _NOT_HASHES]
            found += [f"{k}: time of day {c}" for c in _CLOCK.findall(ln) if dated]
            found += [f"{k}: 'this round'" for _ in re.findall(r"\bthis round\b", ln, re.I)]
        paragraph = []
    return found


def test_no_generated_block_carries_a_revision_or_a_time_of_day(tmp_path, monkeypatch):
    """make docs takes a git revision and a time of day out of whatever a generator writes."""
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "transports.md"
    page.write_text("# T\n\n<!-- generated: transports (by `make docs`) -->\n<!-- end generated: transports -->\n")
    monkeypatch.setitem(docgen.GENERATORS, "transports",
                        lambda ctx: "Measured 2026-11-29 02:02 UTC on X; git 0123abcd45 with local changes; 4 runs")
    assert docgen.run(tmp_path, tmp_path / "results", only=["transports"], out=io.StringIO(), err=io.StringIO()) == 0
    assert "Measured 2026-11-29 on X; 4 runs" in page.read_text() and not diary(page.read_text())


def test_diary_finds_what_it_should():
    text = ("Measured 2026-11-26 17:49 UTC on X; git 6318db46c6 with local changes.\n\n"
            "at 20:02 the same day, this round\n\nread at AIS-Bonn/nimbro_network@7e1de20; ssh-keygen -t ed25519; "
            "MaxStartups 10:30:100; a 3:14 wait\n\n"
            "<!-- generated: results (by `make docs`) -->\ncampaign `x-20261126-175133`, 17:51 UTC, git 0a1b2c3d\n"
            "<!-- end generated: results -->\n"
            "<!-- generated: cli (by `make docs`) -->\n2026-11-26 09:00 UTC\n<!-- end generated: cli -->\n")
    assert diary(text) == ["1: commit hash 6318db46c6", "1: time of day 17:49", "3: time of day 20:02",
                           "3: 'this round'", "5: commit hash 7e1de20", "11: time of day 09:00"]


@pytest.mark.parametrize("page", diary_pages())
def test_no_diary_in_the_documentation(page):
    """No commit hash, time of day or "this round" in the user docs: a number keeps its date, its
    machine and its campaign; the rest of its story is in CHANGELOG.md."""
    found = diary((REPO / page).read_text(encoding="utf-8"))
    assert not found, f"{page}: diary (move it to CHANGELOG.md, keep the date):\n" + "\n".join(found)


def _linked_pages(page: str) -> set[str]:
    out = set()
    for _, target in links(page):
        path_part = target.partition("#")[0]
        if _local(target) and path_part:
            dest = Path(os.path.normpath((REPO / page).parent / path_part))
            if REPO in dest.parents:
                out.add(dest.relative_to(REPO).as_posix().rstrip("/"))
    return out


def test_the_indexes_list_every_docs_page_and_no_changelog():
    """docs/README.md and the README's docs table list every page of docs/ (the studies by their
    folder's README), and neither lists CHANGELOG.md: it is no user page."""
    pages = sorted({f for f in checked_pages() if re.fullmatch(r"docs/[^/]+\.md", f)} - {"docs/README.md"}
                   | {"docs/studies"})
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    in_table = {t.rstrip("/") for t in re.findall(r"\]\((docs/[^)#\s]*)", table)}
    in_table |= {"docs/studies" for t in set(in_table) if t == "docs/studies/README.md"}
    in_index = _linked_pages("docs/README.md")
    in_index |= {"docs/studies" for t in set(in_index) if t == "docs/studies/README.md"}
    assert not [p for p in pages if p not in in_table], f"missing from README.md's docs table: {[p for p in pages if p not in in_table]}"
    assert not [p for p in pages if p not in in_index], f"missing from docs/README.md: {[p for p in pages if p not in in_index]}"
    assert "CHANGELOG.md" not in table and "CHANGELOG.md" not in in_index


# ---------------------------------------------------------------- (d) runnable commands

def sh_commands(page: str) -> list[tuple[int, str]]:
    """(line, command) of every command of the page's ```sh blocks."""
    out, block, pending, start = [], None, "", 0     # block: None outside a fence, else its info string
    for n, line in enumerate((REPO / page).read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"\s*```\s*([^\s`]*)", line)
        if fence:
            block = fence.group(1) if block is None else None
            continue
        if block != "sh":
            continue
        if not pending:
            start = n
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command, pending = (pending + line).strip(), ""
        if command and not command.startswith("#"):
            out.append((start, command))
    return out


def _collect_commands():
    # a documented `netloop run` without --dry-run may run an experiment for real (roscore, nodes)
    def marks(command):
        real = re.search(r"netloop run\b", command) and "--dry-run" not in command
        return [pytest.mark.integration] if real else []
    return [pytest.param(page, n, command, id=f"{page}:{n}", marks=marks(command)) for page in command_pages()
            for n, command in sh_commands(page)]


def _is_loopback(path: str) -> bool:
    from netloop.experiment import load_experiment
    exp = load_experiment(REPO / path)
    return exp.link == "loopback" and not exp.machines


def as_run(command: str, tmp: Path) -> str | None:
    """The command the test runs for a documented one (None: skipped); see the module's rules."""
    parts = []
    for segment in re.split(r"\s*&&\s*", command.strip()):
        segment = re.sub(r"^sudo\s+", "", segment.strip())
        if re.match(r"(git\s+clone|cd|apt-get|apt)(\s|$)", segment):
            continue
        segment = re.sub(r"^netloop(?=\s|$)", "bin/netloop", segment)
        segment = re.sub(r"^make(?=\s|$)", "make -n", segment)
        segment = re.sub(r"(?<=\s)/tmp/", f"{tmp.parent}/", segment)   # what it writes stays in the test's tmp
        words = shlex.split(segment)
        if words[:2] in (["bin/netloop", "calibrate"], ["bin/netloop", "bench"]) or \
                (words[:2] == ["bin/netloop", "reproduce"] and "--list" not in words):
            segment = f"bin/netloop {words[1]} --help"
        elif words[:2] == ["bin/netloop", "run"] and "--dry-run" not in words:
            files = [w for w in words[2:] if w.endswith((".yaml", ".yml"))]
            if files and all(_is_loopback(f) for f in files):
                segment += f" --quick --out {shlex.quote(str(tmp))}"
            else:
                segment = "bin/netloop run --dry-run " + shlex.join(words[2:])
        parts.append(segment)
    return " && ".join(parts) if parts else None


def test_command_rules(tmp_path):
    assert as_run("sudo make run", tmp_path) == "make -n run"
    assert as_run("git clone https://example.org/netloop.git && cd netloop", tmp_path) is None
    assert as_run("sudo apt-get install -y git make", tmp_path) is None
    assert as_run("netloop calibrate wifi6 --part tables", tmp_path) == "bin/netloop calibrate --help"
    assert as_run("sudo netloop reproduce pound --quick", tmp_path) == "bin/netloop reproduce --help"
    assert as_run("netloop reproduce --list", tmp_path) == "bin/netloop reproduce --list"
    assert as_run("bin/netloop bag lidar --out /tmp/t.bag", tmp_path / "results") == \
        f"bin/netloop bag lidar --out {tmp_path}/t.bag"
    assert as_run("sudo bin/netloop run experiments/pound_fig21.yaml", tmp_path) == \
        "bin/netloop run --dry-run experiments/pound_fig21.yaml"
    assert as_run("bin/netloop run experiments/rlc_loopback.yaml", tmp_path) == \
        f"bin/netloop run experiments/rlc_loopback.yaml --quick --out {tmp_path}"
    assert as_run("bin/netloop run --dry-run experiments/pound_fig21.yaml", tmp_path) == \
        "bin/netloop run --dry-run experiments/pound_fig21.yaml"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("page,line,command", _collect_commands())
def test_sh_command(page, line, command, tmp_path):
    placeholder = re.search(r"<[A-Za-z][\w .:/-]*>", command)
    assert not placeholder, (f"{page}:{line}: {placeholder.group(0)} is a placeholder; an sh block holds commands "
                             f"that run verbatim (put this one in a console block)")
    run = as_run(command, tmp_path / "results")
    if run is None:
        pytest.skip("a fresh machine's step (clone, cd, apt-get): CI is that machine")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ROS_PACKAGE_PATH")}
    res = subprocess.run(["bash", "-c", run], cwd=REPO, capture_output=True, text=True, timeout=840, env=env)
    assert res.returncode == 0, (f"{page}:{line}: `{command}` (run as `{run}`) exited {res.returncode}\n"
                                 f"{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
