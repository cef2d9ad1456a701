"""The report's word on shards: a campaign run as ``netloop run --shard K/N`` on several machines
and merged (campaign.json's ``shards``, :mod:`netloop.merge`), or one shard reported alone
(``shard``). It says which shard ran where (machine, CPU, kernel, netloop version), how the cells
were split, and so whether the comparisons between transports stay within one machine."""
from __future__ import annotations

from pathlib import Path

from ..run_files import RunFileError, has_campaign, load_campaign
from .rendering import Section


def _campaign_shards(path: Path) -> tuple[list[dict], bool]:
    """(the shards' records, merged?) of a campaign folder; ([], False) for a whole campaign."""
    if not has_campaign(path):
        return [], False
    try:
        record = load_campaign(path)
    except RunFileError:
        return [], False
    if record.shards:
        return [s for s in record.shards if isinstance(s, dict)], True
    return ([record.shard], False) if record.shard else ([], False)


def _machine(host: dict) -> str:
    return (f"{host.get('hostname') or '?'}: {host.get('cpu') or '?'} ×{host.get('cores') or '?'}, "
            f"kernel {host.get('kernel') or '?'}, netloop {host.get('netloop') or '?'}")


def summary_line(path: Path) -> str | None:
    """One Summary sentence: how many shards on how many machines, and whether each
    repetition's transports were compared on one machine; None for a whole campaign."""
    shards, merged = _campaign_shards(path)
    if not shards:
        return None
    split = shards[0].get("split", "repetition")
    paired = all(s.get("paired", True) for s in shards)
    where = (f"every transport of a {split} ran on the same machine, so each comparison between transports "
             f"within a {split} is made on one machine" if paired else
             "the transports of one repetition ran on different machines, so comparisons between transports "
             "also compare machines (see Shards)")
    if not merged:
        s = shards[0]
        return (f"This is shard {s.get('index')}/{s.get('count')} of the campaign (split by {split}): only its "
                f"runs are here; `netloop report` with every shard's folder merges them.")
    hosts = {h.get("hostname") for s in shards for h in s.get("hosts", [])}
    machines = f"{len(hosts)} machine" + ("s" if len(hosts) != 1 else "")
    return f"This campaign ran as {len(shards)} shards on {machines}, split by {split}: {where}."


def section(path: Path) -> Section | None:
    """The Shards section: per shard its runs and machines, and what makes machines comparable."""
    shards, merged = _campaign_shards(path)
    if not merged:
        return None
    sec = Section("Shards")
    rows = [[f"{s.get('index', '?')}/{s.get('count', '?')}", len(s.get("runs", [])),
             "; ".join(_machine(h) for h in s.get("hosts", [])) or "?", s.get("from", "?")] for s in shards]
    sec.table(["shard", "runs", "machine (CPU ×cores, kernel, netloop)", "merged from"], rows)
    machines = {(h.get("cpu"), h.get("kernel")) for s in shards for h in s.get("hosts", [])}
    sec.p(summary_line(path) + (" The machines differ in CPU model or kernel: delays and CPU shares can differ "
                                "between them, and the intervals above pool repetitions of every machine "
                                "(docs/shards.md, what breaks comparability)." if len(machines) > 1 else
                                " Every shard ran on the same CPU model and kernel."))
    return sec
