"""The options several ``netloop`` commands share, spelled and read one way in every command.

    --out DIR             where what the command writes goes (a new campaign folder is made in it)
    --campaign DIR        a campaign already run, read instead of running one
    --link-param KEY=VAL  a link profile's key set for this command (repeatable)
    --transports a,b      only these of the experiment's transports
    --shard K/N           only the K-th of N shares of the campaign's cells (netloop.shards)

An older spelling of one of them (``--results``, ``--results-parent``, ``--set``, ...) is still
accepted for one release: :func:`renamed` adds it hidden, and using it prints a one-line warning
naming the new spelling; the command's ``--help`` (and so docs/cli.md) lists the renamings.

Like :mod:`netloop.cli`, this module imports the standard library and PyYAML only.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

OUT, CAMPAIGN, LINK_PARAM, TRANSPORTS, SHARD = "--out", "--campaign", "--link-param", "--transports", "--shard"


def _warn(text: str) -> None:
    print(f"netloop: warning: {text}", file=sys.stderr)


class _Renamed(argparse.Action):
    """An old spelling: stores (or appends) into the new option's ``dest``, with a warning."""

    def __init__(self, option_strings, dest, new: str = "", append: bool = False, **kwargs):
        self.new, self.append = new, append
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__  # noqa: PLC0415
        _warn(f"{option_string} is now {self.new}; the old spelling goes in the release after {__version__}")
        if self.append:
            setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])
        else:
            setattr(namespace, self.dest, values)


def renamed(parser: argparse.ArgumentParser, old: str, new: str, **kwargs: Any) -> None:
    """Accept ``old`` as a hidden alias of the option ``new`` (already added to ``parser``),
    with a warning when used, and list the renaming in the parser's epilog."""
    target = next(a for a in parser._actions if new in a.option_strings)
    append = isinstance(target, argparse._AppendAction)
    parser.add_argument(old, dest=target.dest, action=_Renamed, new=new, append=append, help=argparse.SUPPRESS,
                        metavar=target.metavar, type=target.type, **kwargs)
    line = f"  {old:<20} now {new}"
    head = "old spellings (still accepted for one release, with a warning):"
    epilog = parser.epilog or ""
    parser.epilog = (epilog + "\n" + line) if head in epilog else (epilog + ("\n\n" if epilog else "") + head + "\n" + line)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def add_out(parser: argparse.ArgumentParser, what: str, default: Any = None, **kwargs: Any) -> None:
    """``--out DIR``: where the command's results go (``what``: how they are laid out in it)."""
    parser.add_argument(OUT, metavar="DIR", type=Path, default=default, help=what, **kwargs)


def add_campaign(parser: argparse.ArgumentParser, what: str, **kwargs: Any) -> None:
    """``--campaign DIR``: a campaign already run (``what``: what the command does with it)."""
    parser.add_argument(CAMPAIGN, metavar=kwargs.pop("metavar", "CAMPAIGN"), help=what, **kwargs)


def add_link_param(parser: argparse.ArgumentParser, what: str) -> None:
    """``--link-param KEY=VALUE`` (repeatable), read by :func:`parse_link_params`."""
    parser.add_argument(LINK_PARAM, action="append", default=[], metavar="KEY=VALUE",
                        help=f"{what} (repeatable; the value is read as YAML), e.g. --link-param delay_ms=20")


def add_transports(parser: argparse.ArgumentParser, of: str = "the experiment's") -> None:
    """``--transports a,b``: only these transports (:func:`parse_transports`; checked against the
    file by :func:`netloop.experiment.select_transports`)."""
    parser.add_argument(TRANSPORTS, metavar="A,B", type=parse_transports, default=None,
                        help=f"run only these of {of} transports (comma-separated); a name the file does "
                             "not list is refused")


def add_shard(parser: argparse.ArgumentParser) -> None:
    """``--shard K/N | auto | auto/N`` (:func:`netloop.shards.parse_shard`)."""
    parser.add_argument(SHARD, metavar="K/N", default=None,
                        help="run only the K-th (from 1) of N deterministic shares of the cells, split by "
                             "repetition first; 'auto' takes K and N from a Slurm job array "
                             "(SLURM_ARRAY_TASK_ID, _MIN, _COUNT), 'auto/N' K from SLURM_ARRAY_TASK_ID or a "
                             "Kubernetes Indexed Job's JOB_COMPLETION_INDEX (docs/shards.md)")


def parse_transports(text: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``; argparse's error for an empty list."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r}: name one or more transports, comma-separated")
    return names


def parse_link_params(items: list[str] | None) -> dict:
    """``["key=value", ...]`` -> {key: value} (values read as YAML scalars, the text itself when
    that fails); ConfigError naming the item when one is not KEY=VALUE."""
    import yaml  # noqa: PLC0415
    from .schema import ConfigError  # noqa: PLC0415
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(LINK_PARAM, f"{item!r} is not KEY=VALUE (e.g. delay_ms=20)")
        try:
            out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = value
    return out
