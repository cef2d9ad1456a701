"""The blocks of the documentation generated from the code (:mod:`netloop.docgen`): every
experiment-file key, the glossary, the command-line reference, the link profiles and the
transports, each from its one source (the typed model, analysis/glossary.py, the argparse
parser, config/links/*.yaml, the transport registry)."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from .docgen_blocks import Context, Unavailable, md_cell, md_table, need

# ---------------------------------------------------------------- experiment-keys, glossary

def experiment_keys(ctx: Context) -> str:
    cli = need("netloop.cli", "the experiment key reference")
    return cli.experiment_keys_markdown()


def glossary(ctx: Context) -> str:
    return need("netloop.analysis.glossary", "the glossary").glossary_by_kind_markdown()


# ---------------------------------------------------------------- cli

def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    # one usage line whatever the terminal: the width is fixed, not taken from $COLUMNS
    return argparse.HelpFormatter(parser.prog, width=10_000, max_help_position=10_000)


def _usage(parser: argparse.ArgumentParser) -> str:
    fmt = _formatter(parser)
    fmt.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return " ".join(fmt.format_help().split())


def _subcommands(parser: argparse.ArgumentParser):
    """(name, help, subparser) of each subcommand of ``parser``, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:   # an alias
                    continue
                seen.add(id(sub))
                yield name, helps.get(name), sub


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading (lower case, spaces to '-', punctuation but '-' and '_' dropped)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _text(text: str | None) -> str:
    return " ".join((text or "").split())


def _prose(text: str | None) -> list[str]:
    """A parser's description or epilog as Markdown lines: paragraphs, or a text block when
    it is laid out by hand (indented lines, as in a list of examples)."""
    text = (text or "").strip("\n")
    if not text.strip():
        return []
    if re.search(r"^[ \t]+\S", text, re.M):
        return ["```text", text, "```", ""]
    return ["\n\n".join(md_cell(p) for p in re.split(r"\n\s*\n", text)), ""]


def _describe_parser(parser: argparse.ArgumentParser, summary: str | None, level: int, out: list[str]) -> None:
    out.append(f"{'#' * level} {parser.prog}")
    out.append("")
    out += _prose(parser.description or summary)
    out += ["```text", _usage(parser), "```", ""]
    fmt = _formatter(parser)
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        invocation = fmt._format_action_invocation(action)
        help_text = fmt._expand_help(action) if action.help else ""
        rows.append([f"`{invocation}`", md_cell(help_text)])
    subs = list(_subcommands(parser))
    if rows:
        out += [md_table(["argument", "meaning"], rows), ""]
    if subs:
        out += [md_table(["command", "what it does"],
                       [[f"[`{name}`](#{_slug(sub.prog)})", md_cell(_text(sub.description or helptext))]
                        for name, helptext, sub in subs]), ""]
    out += _prose(parser.epilog)
    for name, helptext, sub in subs:
        _describe_parser(sub, helptext, min(level + 1, 4), out)


def cli_reference(ctx: Context) -> str:
    cli = need("netloop.cli", "the command-line reference")
    try:
        parser = cli.build_parser()
    except ModuleNotFoundError as err:
        raise Unavailable(f"the command-line reference: building the parser needs the Python package "
                          f"{err.name!r} (run 'make build', then 'make docs' again)") from None
    out: list[str] = []
    _describe_parser(parser, None, 2, out)
    return "\n".join(out).strip()


# ---------------------------------------------------------------- link-profiles

#: Data rates of 802.11n HT MCS 0-7, one spatial stream, 20 MHz, 800 ns guard interval [Mbit/s].
_HT_MBIT = (6.5, 13, 19.5, 26, 39, 52, 58.5, 65)


def _leading_comment(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(lines)
    first = re.match(r"(.+?\.)(\s|$)", text)
    return first.group(1) if first else text


def _mbit(value: float) -> str:
    return f"{value:g} Mbit/s"


def _emulator(p) -> str:
    """What emulates a link profile (``p``: a typed profile, each type's keys read in its branch)."""
    kind = p.type
    if kind == "loopback":
        return "none: one host, traffic on `lo`"
    if kind == "ethernet":
        return f"veth pair, {p.qdisc} qdisc (kernel)" + (f", {p.robots} robots on a bridge" if p.robots > 1 else "")
    if kind == "shaped":
        return "userspace shaper between two taps"
    if kind == "ns3_wifi":
        text = f"ns-3 in real time: {p.standard} {'ad-hoc' if p.mode == 'adhoc' else 'access point'}"
        if p.hops > 1:
            text += f", {p.hops} hops"
        if p.robots > 1:
            text += f", {p.robots} robots"
        if p.background_pairs:
            text += f", {p.background_pairs} background pair(s)"
        return text
    return kind


def _rate(p) -> str:
    kind = p.type
    if kind == "loopback":
        return "not limited"
    if kind == "ethernet":
        return f"{_mbit(p.rate_mbit)} each way"
    if kind == "shaped":
        up = (p.to_operator or {}).get("rate_mbit") or p.rate_mbit
        down = (p.to_robot or {}).get("rate_mbit") or p.rate_mbit
        return f"{_mbit(up)} each way" if up == down else f"{_mbit(down)} to the robot, {_mbit(up)} to the operator"
    if kind == "ns3_wifi":
        if p.rate_manager != "constant":
            return f"adaptive ({p.rate_manager})"
        name = str(p.phy_rate)
        ht = re.fullmatch(r"HtMcs(\d)", name)
        from .testbed.profiles import phy_mbit  # noqa: PLC0415
        mbit = _HT_MBIT[int(ht.group(1))] if ht else phy_mbit(name)
        return f"{_mbit(mbit)} on the air (`{name}`)" if mbit else f"`{name}`"
    return ""


def link_profiles(ctx: Context) -> str:
    profiles = need("netloop.testbed.profiles", "the link profiles")
    rows = []
    for path in sorted(profiles.LINKS_DIR.glob("*.yaml")):
        p = profiles.load_profile(path.stem)
        what = p.description or _leading_comment(path)
        rows.append([f"`{path.stem}`", md_cell(what), md_cell(_emulator(p)), md_cell(_rate(p))])
    return md_table(["profile", "what it is", "emulator", "rate"], rows)


# ---------------------------------------------------------------- transports

def transports(ctx: Context) -> str:
    registry = need("netloop.transports", "the transport table")
    rows = []
    for name in registry.transport_names():
        describe = getattr(registry, "transport_description", None)
        text = describe(name) if describe else getattr(registry.get_transport(name), "description", "")
        rows.append([f"`{name}`", md_cell(text)])
    return md_table(["transport", "what it is"], rows)
