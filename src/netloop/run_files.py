"""The three JSON files of a run directory and a campaign, as typed, format-versioned records.

    runs/<run-id>/metadata.json   one run: :class:`RunRecord`        format "netloop-run/1"
    campaign.json                 every cell and its status:         format "netloop-campaign/1"
                                  :class:`CampaignRecord` of :class:`CampaignCell`
    analysis.json                 one entry per run (a JSON list):   format "netloop-analysis/1"
                                  :class:`AnalysisEntry`             (in every entry)

This module is the only one that opens these files: read them with :func:`load_metadata`,
:func:`load_campaign`, :func:`load_analysis`; write them with :func:`save_metadata`,
:func:`save_campaign`, :func:`save_analysis`, always atomically
(:func:`netloop.jsonio.write_json_atomic`: a reader sees the old file or the new one).

Formats: a file carries its format name and version in ``format`` (``"netloop-run/1"``). A
file with no ``format`` was written before its format was named (campaign.json and
analysis.json before 2026-11-26) and is read as it is; a file naming any other format, e.g. a
newer version, is refused with a :class:`RunFileError` naming the file and both formats. A
known key holding the wrong JSON type (``link`` a list, say) is refused naming the key. Keys
this version does not know are kept as they are (``extra``) and written back unchanged.

Standard library and :mod:`netloop.jsonio` only: the analysis imports this module, and it
imports nothing of the run.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .jsonio import write_json_atomic

METADATA, CAMPAIGN, ANALYSIS = "metadata.json", "campaign.json", "analysis.json"
RUN_FORMAT = "netloop-run/1"
EVENTS_FORMAT = "netloop-events/1"
CAMPAIGN_FORMAT = "netloop-campaign/1"
ANALYSIS_FORMAT = "netloop-analysis/1"


class RunFileError(ValueError):
    """One of the three files is missing, not JSON, of another format, or holds a key of the
    wrong type. ``problem`` is the sentence without the directory (a report lists it)."""

    def __init__(self, where: str | Path, problem: str):
        super().__init__(f"{where}: {problem}")
        self.where, self.problem = Path(where), problem

    @property
    def run_dir(self) -> Path:
        """The directory the file is in (a run directory for metadata.json)."""
        return self.where


class MetadataError(RunFileError):
    """A run's metadata.json is missing, not JSON, of another format, or malformed."""


# --- reading and writing a file --------------------------------------------------------------

def _read_json(folder: Path, name: str, error: type[RunFileError]) -> Any:
    """The JSON value of ``folder/name``; ``error`` when it is missing or unreadable."""
    try:
        text = (Path(folder) / name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(folder, f"{name} missing") from None
    except (OSError, UnicodeDecodeError) as err:
        raise error(folder, f"{name} unreadable: {err}") from None
    try:
        return json.loads(text)
    except ValueError as err:
        raise error(folder, f"{name} unreadable: {err}") from None


def _check_format(doc: dict, expected: str, folder: Path, name: str, error: type[RunFileError]) -> None:
    """Refuse a document naming a format other than ``expected`` (none named: read as it is)."""
    named = doc.get("format")
    if named is not None and named != expected:
        raise error(folder, f"{name} has format {named!r}, expected {expected!r} (not written by netloop, "
                            "or by another version of it)")


def _object(value: Any, folder: Path, name: str, error: type[RunFileError], what: str = "") -> dict:
    if not isinstance(value, dict):
        raise error(folder, f"{name} unreadable: {what}a JSON {type(value).__name__}, expected an object")
    return value


_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", float: "a number", int: "an integer",
               bool: "true or false"}


def _typed_fields(cls: type, doc: dict, folder: Path, name: str, error: type[RunFileError],
                  prefix: str = "") -> tuple[dict, dict]:
    """(the known keys of ``doc`` checked against ``cls``'s field types, the other keys)."""
    known: dict = {}
    kinds = {f.name: f.metadata.get("json") for f in dataclasses.fields(cls) if f.metadata.get("json")}
    for key, value in doc.items():
        if key not in kinds:
            continue
        kind = kinds[key]
        ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                               if kind is float else isinstance(value, kind))
        if not ok:
            raise error(folder, f"{name}: {prefix}{key!r} is a JSON {type(value).__name__}, expected "
                                f"{_JSON_TYPES[kind]}")
        known[key] = value
    return known, {k: v for k, v in doc.items() if k not in kinds}


def _key(kind: type, default: Any = None, factory: Any = None) -> Any:
    """A field holding one JSON key of type ``kind`` (None when absent, or the default)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"json": kind})
    return field(default=default, metadata={"json": kind})


def _to_json(record: Any, always: Iterable[str]) -> dict:
    """A record's keys: the ones it was read with or set, those in ``always``, the others that
    hold something; then its ``extra`` keys."""
    out = {}
    for f in dataclasses.fields(record):
        if not f.metadata.get("json"):
            continue
        value = getattr(record, f.name)
        if f.name in always or f.name in record.read_keys or value not in (None, {}, []):
            out[f.name] = value
    return out | record.extra


# --- metadata.json ---------------------------------------------------------------------------

@dataclass
class RunRecord:
    """metadata.json of one run (docs/design.md, "The run directory"): what ran, how it went.
    Mappings default to {} and lists to [], so ``record.link.get("type")`` needs no guard."""

    format: str = _key(str, RUN_FORMAT)
    records_format: str = _key(str, EVENTS_FORMAT)
    status: str | None = _key(str)              # running, complete, invalid, failed, interrupted
    error: str | None = _key(str)
    run_id: str | None = _key(str)
    start_time: str | None = _key(str)
    start_unix: float | None = _key(float)
    end_time: str | None = _key(str)
    end_unix: float | None = _key(float)
    git: dict = _key(dict, factory=dict)
    host: dict = _key(dict, factory=dict)
    ros: dict = _key(dict, factory=dict)
    experiment: dict = _key(dict, factory=dict)  # the typed model's keys for this cell, with its cell
    transport: dict = _key(dict, factory=dict)   # what ran (relays: processes, statistics files)
    link: dict = _key(dict, factory=dict)
    loop: dict = _key(dict, factory=dict)
    negotiated_transport: dict = _key(dict, factory=dict)
    node_uris: dict = _key(dict, factory=dict)
    masters: dict = _key(dict, factory=dict)
    cpu: dict = _key(dict, factory=dict)
    link_health: dict = _key(dict, factory=dict)
    cpu_steal_s: float | None = _key(float)
    phases: dict = _key(dict, factory=dict)
    exit_codes: dict = _key(dict, factory=dict)
    ros2: dict = _key(dict, factory=dict)
    faults: list = _key(list, factory=list)
    host_cpu_limits: dict = _key(dict, factory=dict)
    #: per host, its kernel's TCP/UDP counters over the run (netloop.tcp_counters), where read
    host_tcp: dict = _key(dict, factory=dict)
    extra: dict = field(default_factory=dict)     # keys this version does not know, kept
    read_keys: tuple = field(default=(), repr=False)

    ALWAYS = ("format", "records_format", "status", "start_time", "start_unix", "end_time")

    @classmethod
    def from_json(cls, doc: Any, where: str | Path = "?") -> "RunRecord":
        """The record of a metadata.json document; MetadataError naming the format or key."""
        doc = _object(doc, Path(where), METADATA, MetadataError)
        _check_format(doc, RUN_FORMAT, Path(where), METADATA, MetadataError)
        known, extra = _typed_fields(cls, doc, Path(where), METADATA, MetadataError)
        return cls(**{k: v for k, v in known.items() if v is not None}, extra=extra, read_keys=tuple(doc))

    def to_json(self) -> dict[str, Any]:
        """The metadata.json document (the keys it was read with, and what was set since)."""
        return _to_json(self, self.ALWAYS)

    def update(self, **fields: Any) -> None:
        """Set keys (a key this version does not name goes to ``extra``)."""
        names = {f.name for f in dataclasses.fields(self) if f.metadata.get("json")}
        for key, value in fields.items():
            if key in names:
                setattr(self, key, value)
                self.read_keys = self.read_keys + (key,) if key not in self.read_keys else self.read_keys
            else:
                self.extra[key] = value

    @property
    def empty(self) -> bool:
        """Nothing recorded (the record of an unusable or empty metadata.json)."""
        return self == RunRecord()

    @property
    def transport_name(self) -> str:
        """The transport the run's cell named ("?" when none is recorded)."""
        return str(self.experiment.get("transport") or self.transport.get("name") or "?")

    @property
    def loop_type(self) -> str | None:
        """``experiment.loop.type`` (None when the run recorded no loop section)."""
        return (self.experiment.get("loop") or {}).get("type")

    @property
    def cell(self) -> dict | None:
        """The cell (condition and settings) the run was, as recorded."""
        return self.experiment.get("cell")

    @property
    def link_valid(self) -> bool | None:
        """Whether the link kept real time (``link_health.valid``; None when not judged)."""
        return self.link_health.get("valid")

    @property
    def problem(self) -> str | None:
        """What the recorded status says is wrong with the run (None for a complete run)."""
        if self.status == "running":
            return "run incomplete: it never finished (killed or crashed); data up to the stop is used"
        if self.status not in (None, "complete"):
            return f"run {self.status}: {self.error}"
        return None


def load_metadata(run_dir: str | Path) -> RunRecord:
    """A run's metadata.json; MetadataError when missing, unreadable, of another format or with
    a key of the wrong type."""
    return RunRecord.from_json(_read_json(Path(run_dir), METADATA, MetadataError), run_dir)


def save_metadata(run_dir: str | Path, record: RunRecord) -> Path:
    """Write a run's metadata.json atomically; returns its path."""
    return write_json_atomic(Path(run_dir) / METADATA, record.to_json())


def has_metadata(run_dir: str | Path) -> bool:
    """Whether the directory holds a metadata.json (readable or not)."""
    return (Path(run_dir) / METADATA).is_file()


# --- campaign.json ---------------------------------------------------------------------------

@dataclass
class CampaignCell:
    """One cell of a campaign and where its run stands (``missing``: no run directory yet)."""

    run_id: str = _key(str, "")
    transport: str | None = _key(str)
    condition: str | None = _key(str)
    settings: dict = _key(dict, factory=dict)
    repetition: int | None = _key(int)
    status: str | None = _key(str)
    error: str | None = _key(str)
    invalid_attempts: int = _key(int, 0)        # attempts judged invalid and run again
    extra: dict = field(default_factory=dict)
    read_keys: tuple = field(default=(), repr=False)

    ALWAYS = ("run_id", "transport", "condition", "settings", "repetition", "status", "error",
              "invalid_attempts")

    def to_json(self) -> dict[str, Any]:
        return _to_json(self, self.ALWAYS)


@dataclass
class CampaignRecord:
    """campaign.json: the experiment's name and every cell with its status; a shard's campaign
    also ``shard`` (its index, count and split, :mod:`netloop.shards`), a merged one ``shards``
    (each shard's, with the folder it came from and its machines, :mod:`netloop.merge`)."""

    experiment: str | None = None
    cells: list[CampaignCell] = field(default_factory=list)
    format: str = CAMPAIGN_FORMAT
    shard: dict | None = None
    shards: list | None = None

    @classmethod
    def from_json(cls, doc: Any, where: str | Path = "?") -> "CampaignRecord":
        where = Path(where)
        doc = _object(doc, where, CAMPAIGN, RunFileError)
        _check_format(doc, CAMPAIGN_FORMAT, where, CAMPAIGN, RunFileError)
        cells = doc.get("cells") or []
        if not isinstance(cells, list):
            raise RunFileError(where, f"{CAMPAIGN}: 'cells' is a JSON {type(cells).__name__}, expected a list")
        out = []
        for k, cell in enumerate(cells):
            cell = _object(cell, where, CAMPAIGN, RunFileError, f"cells[{k}] is ")
            known, extra = _typed_fields(CampaignCell, cell, where, CAMPAIGN, RunFileError, f"cells[{k}].")
            out.append(CampaignCell(**{k2: v for k2, v in known.items() if v is not None}, extra=extra,
                                    read_keys=tuple(cell)))
        name = doc.get("experiment")
        shard, shards = doc.get("shard"), doc.get("shards")
        if shard is not None and not isinstance(shard, dict) or shards is not None and not isinstance(shards, list):
            raise RunFileError(where, f"{CAMPAIGN}: 'shard' must be an object and 'shards' a list")
        return cls(experiment=None if name is None else str(name), cells=out, shard=shard, shards=shards)

    def to_json(self) -> dict[str, Any]:
        doc = {"format": self.format, "experiment": self.experiment, "cells": [c.to_json() for c in self.cells]}
        doc.update({k: v for k, v in (("shard", self.shard), ("shards", self.shards)) if v is not None})
        return doc


def load_campaign(campaign_dir: str | Path) -> CampaignRecord:
    """A campaign's campaign.json; RunFileError when missing, unreadable or of another format."""
    return CampaignRecord.from_json(_read_json(Path(campaign_dir), CAMPAIGN, RunFileError), campaign_dir)


def save_campaign(campaign_dir: str | Path, record: CampaignRecord) -> Path:
    """Write campaign.json atomically; returns its path."""
    return write_json_atomic(Path(campaign_dir) / CAMPAIGN, record.to_json())


def has_campaign(campaign_dir: str | Path) -> bool:
    return (Path(campaign_dir) / CAMPAIGN).is_file()


# --- analysis.json ---------------------------------------------------------------------------

@dataclass
class AnalysisEntry:
    """One run's entry of analysis.json: the keys every entry has, typed; ``data`` is the whole
    entry (the loop's and flows' numbers, as :meth:`netloop.analysis.results.RunAnalysis.to_json`
    wrote them)."""

    run_id: str
    transport: str
    status: str | None
    cell: dict
    flows: list
    data: dict

    @property
    def settings(self) -> dict:
        """The swept keys' values of the run's cell ({} for an unswept cell)."""
        return dict(self.cell.get("settings") or {})

    def get(self, key: str, default: Any = None) -> Any:
        """Another key of the entry (``data``), e.g. ``"rtt"`` or ``"degradation"``."""
        return self.data.get(key, default)


def analysis_entry(entry: Any, where: str | Path = "?", index: int = 0) -> AnalysisEntry:
    """The typed entry of one analysis.json object; RunFileError naming the key when wrong."""
    where = Path(where)
    entry = _object(entry, where, ANALYSIS, RunFileError, f"entry {index} is ")
    _check_format(entry, ANALYSIS_FORMAT, where, ANALYSIS, RunFileError)
    for key, kind in (("run_id", str), ("transport", str), ("cell", dict), ("flows", list)):
        if entry.get(key) is not None and not isinstance(entry[key], kind):
            raise RunFileError(where, f"{ANALYSIS}: entry {index}: {key!r} is a JSON {type(entry[key]).__name__}, "
                                      f"expected {_JSON_TYPES[kind]}")
    if not entry.get("run_id"):
        raise RunFileError(where, f"{ANALYSIS}: entry {index} has no 'run_id'")
    return AnalysisEntry(run_id=entry["run_id"], transport=entry.get("transport") or "", status=entry.get("status"),
                         cell=entry.get("cell") or {}, flows=entry.get("flows") or [], data=entry)


def load_analysis(campaign_dir: str | Path) -> list[AnalysisEntry]:
    """A campaign's analysis.json, one entry per run; RunFileError when missing, unreadable,
    not a list, or an entry of another format."""
    doc = _read_json(Path(campaign_dir), ANALYSIS, RunFileError)
    if not isinstance(doc, list):
        raise RunFileError(campaign_dir, f"{ANALYSIS} unreadable: a JSON {type(doc).__name__}, expected a list")
    return [analysis_entry(e, campaign_dir, k) for k, e in enumerate(doc)]


def save_analysis(campaign_dir: str | Path, entries: Iterable[dict]) -> Path:
    """Write analysis.json atomically, each entry with ``format`` first; returns its path."""
    return write_json_atomic(Path(campaign_dir) / ANALYSIS,
                             [{"format": ANALYSIS_FORMAT} | {k: v for k, v in e.items() if k != "format"}
                              for e in entries])


def has_analysis(campaign_dir: str | Path) -> bool:
    """Whether ``netloop report`` has written the campaign's analysis.json."""
    return (Path(campaign_dir) / ANALYSIS).is_file()
