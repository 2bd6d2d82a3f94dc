"""Published results: finished runs of a tier, committed with the project.

Runs that take hours (the ``paper`` tier) are computed once and exported here, so that a
build, a test or a reader's laptop can use them without computing them again. The store
is read like the dataset mirror: :func:`fedlib.sweeps.sweep` looks a run up here when its
own cache lacks it, and uses it only if the run's key matches, that is, only if the
config and the source of every fedlib module the run computes with are those it was
computed with. When that code changes, the run's key changes: the published run is then
*stale*, reported as such (:func:`status_table`, the book's status page) and never used.

Layout, one folder per experiment (the sweep's name)::

    data/published/<experiment>/manifest.json     what every run is and where it comes from
    data/published/<experiment>/<tier>.parquet    the runs' tables, one ``run_key`` column

The manifest records, per run: its tier, config, runner module, the fingerprint of the
code it ran with, the fedlib version and commit, the machine, the date it finished, its
wall-clock and CPU seconds, and the digest of its table (checked on every read: a table
that does not match is not used). What many runs share is written once and named by the
runs: the digest of every file of a runner module (``modules``), the runs computed
together (``groups``, named by their first run), the columns of a table (``schemas``,
named by a digest) and, since layout ``fedlib-published/3``, their provenance
(``provenance``: one record per set of runs computed together with the same code,
commit and machine, holding every field those runs agree on, the config settings they
agree on included, named by 12 hex digits of its digest). A run's entry names its
record (``from``) and holds its table's digest and what else is its own (the settings
of its config that differ, say); read back, a run is its record's fields and then its
own, so that readers see every field of every run written out
(:meth:`PublishedStore.manifest`). Manifests of layout ``fedlib-published/2`` (every
run written out in full) are still read; every write (export, prune, ``compact``)
writes this layout. One run per line, so that a new export is a readable diff.

A published run keeps the rows its experiment declares (:mod:`fedlib.runs.rows`):
where no figure or claim reads every row (PPSGD's synthetic runs, 300 iterations each),
the export keeps the steps they read and the last, with the full run's values; the
digest and the row count are those of the kept rows.

Every name a manifest gives (tier, run key, group, schema, module, source file, provenance
record) is checked on read against what it can be, and so are its sections, fields and
their types, in a provenance record as in a run: a manifest that fails is refused with a
:class:`PublishedStoreError` naming the file, the field and the value (a run naming a
record that does not exist: the run), never followed to a path outside its folder. A run whose table
cannot be read or does not match its digest is *damaged*: it is computed instead, or,
where computing is off, reported apart from the runs that are not published at all. So is
a run whose recorded config does not give its key although it records this checkout's
code (:func:`config_edited`: the manifest was edited after the export, and the rows under
the key may be any config's); status and builds alike count it damaged, never stale.

Every write (:meth:`PublishedStore.add`, :meth:`~PublishedStore.prune`,
:meth:`~PublishedStore.compact`, :meth:`~PublishedStore.carry_over`, and a confirmation
from start to end) holds an exclusive lock on the experiment's folder
(``<experiment>/.lock``, which names the command holding it) from reading the store to
writing it, so that two exports at once both keep their runs (an export waits for the
lock; a confirmation, which holds it while it computes, is refused while another command
holds it). Each write replaces one file atomically, in an order such that a write killed
between two of them leaves no manifest entry naming rows that do not match it: at worst,
table rows that no entry names. Under the lock, every write first removes what an
interrupted one left (its temporary files, and those rows: :meth:`PublishedStore.repair`);
until then ``status`` reports them (:func:`leftover_lines`). Git ignores the lock and the
temporary files.

``python -m fedlib.runs export --tier paper [EXPERIMENT ...]`` exports the runs of a
tier that are in the local cache and current; ``python -m fedlib.runs status``
lists what is published and whether it is current; ``python -m fedlib.runs prune
[EXPERIMENT ...]`` removes the stale runs once their replacements are exported;
``python -m fedlib.runs compact [EXPERIMENT ...]`` writes a manifest of an older
layout again in this one, changing no run; ``python -m fedlib.runs confirm
EXPERIMENT`` enters stale runs again under their current keys after an edit meant to
change no result, when one group of each stratum of them (each value of the config
fields that choose code paths) computed again agrees (:mod:`fedlib.runs.confirm`). Every
command ends a known error with one line (:mod:`fedlib.runs.cli`).
"""


from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import fedlib
from fedlib import paths
from fedlib.runs import keys as run_keys
from fedlib.runs.cache import (
    DamagedRunError,
    MissingRunsError,
    ResultStore,
    reading_tier,
    stored_only,
)
from fedlib.runs.errors import PublishedStoreError, StoreBusyError
from fedlib.runs.keys import (
    RUN_KEY_LENGTH,
    code_files,
    code_fingerprint,
    content_digest,
    content_digests,
    is_run_key,
    run_key,
)
from fedlib.runs.rows import kept_rows
from fedlib.tiers import SCALES

PUBLISHED_LAYOUT = "fedlib-published/3"
"""Layout tag of the manifests this fedlib writes (runs name shared provenance records)."""

FILE_BYTES_LIMIT = 5_000_000
"""The most bytes one committed file of the store may hold (a tier's table, a manifest)."""

STORE_BYTES_LIMIT = 25_000_000
"""The most bytes the committed store may hold in all: it travels with every clone, so it
keeps what the figures and claims read, not every iteration of every run."""

READ_LAYOUTS = (PUBLISHED_LAYOUT, "fedlib-published/2")
"""Layouts this fedlib reads (``/2``: every run entry written out in full); a manifest of
another layout is refused, never guessed. The next write of a store rewrites its manifest
in :data:`PUBLISHED_LAYOUT`."""

LOCK_NAME = ".lock"
"""File in an experiment's folder that every write locks (never a run, never committed)."""

CONFIG_DEPTH = 32
"""How deeply a published config may nest (a run's config is a flat dict of settings)."""


# What a manifest may hold --------------------------------------------------------------

_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", re.ASCII)
_SCHEMA_NAME = re.compile(r"[0-9a-f]{12}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SOURCE_FILE = re.compile(r"\w+(/\w+)*\.py", re.ASCII)
_RUN_KEY_FORM = f"a run key ({RUN_KEY_LENGTH} hex digits)"
_LONGEST_NAME = 200
_SECTIONS = ("modules", "schemas", "groups", "runs")
_RECORDS = "provenance"
"""Section of the shared provenance records (a run names its record in ``from``)."""
_RECORD_NAME = re.compile(r"[0-9a-f]{12}")
_FROM = "from"
_TEXT_FIELDS = ("code_fingerprint", "fedlib_version", "commit", "machine", "finished")
_RUN_FIELDS = ("tier", "config", "module", "runner", "group", "columns", "sha256", "rows",
               "wall_seconds", "cpu_seconds", "torch_threads", *_TEXT_FIELDS)
_OPTIONAL_FIELDS = ("confirmed", "environment")
"""Fields a run may hold: ``confirmed``, how a run computed with earlier code was checked
against the code of its key (:mod:`fedlib.runs.confirm`); ``environment``, the lock its
packages were installed from (:func:`fedlib.runs.environment.environment_description`; runs
computed before the environment was locked have none)."""
_SHARED_BY = ("tier", "module", "runner", "group", "columns", "code_fingerprint",
              "fedlib_version", "commit", "machine", "environment", "torch_threads")
"""The fields that sort runs into provenance records: the runs of one record agree on
these (and the record holds whatever else they all agree on, config settings included)."""
_OWN_FIELDS = ("sha256",)
"""Fields a run always writes itself (never shared)."""


class _ManifestProblem(Exception):
    """What is wrong with a manifest (the caller says which file, and what to do)."""


def _quoted(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut short when long (a hostile value may be huge)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fail(problem: str) -> NoReturn:
    raise _ManifestProblem(problem)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _fail(f"{where} is {_quoted(value)}, not a JSON object")
    return value


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        _fail(f"{where} is {_quoted(value)}, not a JSON list")
    return value


def _named(value: Any, where: str, pattern: re.Pattern[str], what: str) -> str:
    if (not isinstance(value, str) or len(value) > _LONGEST_NAME
            or pattern.fullmatch(value) is None):
        _fail(f"{where} {_quoted(value)} is not {what}")
    return value


def _run_key_named(value: Any, where: str) -> str:
    if not is_run_key(value):
        _fail(f"{where} {_quoted(value)} is not {_RUN_KEY_FORM}")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        _fail(f"{where} {_quoted(value)} is not text")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: Any, where: str) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        _fail(f"{where} {_quoted(value)} is not a count (an integer, 0 or more)")


def _seconds(value: Any, where: str) -> None:
    if value is not None and not (_is_number(value) and math.isfinite(value) and value >= 0):
        _fail(f"{where} {_quoted(value)} is not a number of seconds (finite, 0 or more, "
              "or null)")


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) has lists or objects nested deeper than ``limit``."""
    pending = [(value, 1)] if isinstance(value, dict | list) else []
    while pending:
        item, depth = pending.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        pending.extend((child, depth + 1) for child in children
                       if isinstance(child, dict | list))
    return False


@cache
def _is_dtype(name: str) -> bool:
    try:
        pd.api.types.pandas_dtype(name)
    except (TypeError, ValueError):
        return False
    return True


def _check_modules(modules: dict[str, Any]) -> None:
    for name, module in modules.items():
        _named(name, "modules: module name", _MODULE_NAME, "a dotted module name")
        where = f"modules.{name}"
        _object(module, where)
        for part in ("fingerprint", "files"):
            if part not in module:
                _fail(f"{where}.{part} is missing")
        _text(module["fingerprint"], f"{where}.fingerprint")
        for file, digest in _object(module["files"], f"{where}.files").items():
            _named(file, f"{where}.files: file name", _SOURCE_FILE,
                   "a source file of the package (such as nn/dpsgd.py)")
            _text(digest, f"{where}.files.{file}")


def _check_schemas(schemas: dict[str, Any]) -> None:
    for name, columns in schemas.items():
        _named(name, "schemas: schema name", _SCHEMA_NAME, "a schema name (12 hex digits)")
        where = f"schemas.{name}"
        seen: set[str] = set()
        for pair in _array(columns, where):
            if not (isinstance(pair, list) and len(pair) == 2
                    and all(isinstance(part, str) for part in pair)):
                _fail(f"{where}: column {_quoted(pair)} is not a [name, dtype] pair of text")
            column, dtype = pair
            if column in seen or column == "run_key":
                _fail(f"{where}: column name {column!r} is reserved or given twice")
            seen.add(column)
            if not _is_dtype(dtype):
                _fail(f"{where}: dtype {_quoted(dtype)} of column {column!r} is not a pandas "
                      "dtype")


def _check_groups(groups: dict[str, Any]) -> None:
    for name, members in groups.items():
        _run_key_named(name, "groups: group name")
        if not _array(members, f"groups.{name}"):
            _fail(f"groups.{name} is empty, not a list of the runs computed together")
        for member in members:
            _run_key_named(member, f"groups.{name} member")


def _check_run(key: Any, entry: Any, manifest: dict[str, Any], missing: str = "") -> None:
    """Check a run's entry, every field written out (``missing``: what to add to the
    message of a missing field)."""
    _run_key_named(key, "runs: run key")
    where = f"runs.{key}"
    _object(entry, where)
    for name in _RUN_FIELDS:
        if name not in entry:
            _fail(f"{where}.{name} is missing{missing}")
    _check_fields(entry, where, manifest)


def _check_fields(entry: dict[str, Any], where: str, manifest: dict[str, Any]) -> None:
    """Check the fields of a run that ``entry`` holds (a run's entry, or a provenance
    record holding some of them)."""
    if "tier" in entry and entry["tier"] not in SCALES:
        _fail(f"{where}.tier {_quoted(entry['tier'])} is not a run tier (one of "
              f"{', '.join(SCALES)})")
    if "config" in entry and _nests_deeper(_object(entry["config"], f"{where}.config"),
                                           CONFIG_DEPTH):
        _fail(f"{where}.config nests deeper than {CONFIG_DEPTH} levels")
    if "module" in entry:
        _named(entry["module"], f"{where}.module", _MODULE_NAME, "a dotted module name")
    if entry.get("runner", "") != "":
        _named(entry["runner"], f"{where}.runner", _MODULE_NAME,
               "the name of a function (or empty)")
    if ("group" in entry and _run_key_named(entry["group"], f"{where}.group")
            not in manifest["groups"]):
        _fail(f"{where}.group {entry['group']!r} names no group of the manifest")
    if "columns" in entry:
        schema = _named(entry["columns"], f"{where}.columns", _SCHEMA_NAME,
                        "a schema name (12 hex digits)")
        if schema not in manifest["schemas"]:
            _fail(f"{where}.columns {schema!r} names no schema of the manifest")
    if "sha256" in entry:
        _named(entry["sha256"], f"{where}.sha256", _SHA256,
               "a SHA-256 digest (64 hex digits)")
    if "rows" in entry:
        _count(entry["rows"], f"{where}.rows")
    for name in ("wall_seconds", "cpu_seconds"):
        if name in entry:
            _seconds(entry[name], f"{where}.{name}")
    if entry.get("torch_threads") is not None:
        _count(entry["torch_threads"], f"{where}.torch_threads")
    for name in (*_TEXT_FIELDS, *_OPTIONAL_FIELDS):
        if name in entry:
            _text(entry[name], f"{where}.{name}")


_CHECKED_KEPT = 64
"""How many manifests' checked texts a process keeps (:func:`_checked_manifest_text`)."""


_CHECKED_TEXTS: dict[tuple[str, str], str] = {}


def _checked_manifest_text(text: str, path: str) -> str:
    """The manifest ``text`` read from ``path``, checked and every run entry written out
    (:func:`check_manifest`), as JSON text. The check reads the text alone, so its result
    is kept for the same text (by digest): a process that reads the same manifest many
    times (a page's status, a chapter's sweeps) checks it once, and each read parses a
    fresh copy."""
    key = (path, hashlib.sha256(text.encode()).hexdigest())
    if key not in _CHECKED_TEXTS:
        try:
            manifest = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise PublishedStoreError(
                f"{path} is not valid JSON ({_first_clause(error)}); "
                f"{_repair_advice(Path(path))}") from error
        checked = json.dumps(check_manifest(manifest, Path(path)))
        if len(_CHECKED_TEXTS) >= _CHECKED_KEPT:
            _CHECKED_TEXTS.pop(next(iter(_CHECKED_TEXTS)))
        _CHECKED_TEXTS[key] = checked
    return _CHECKED_TEXTS[key]


def check_manifest(manifest: Any, path: Path) -> dict[str, Any]:
    """``manifest`` (parsed JSON of a layout of :data:`READ_LAYOUTS`), every run entry
    written out in full (its provenance record's fields with its own), if its structure
    and every name in it are what its layout writes; else a :class:`PublishedStoreError`
    naming ``path``, the field (the run, for a run naming a record that does not exist),
    the value and what to do."""
    try:
        _object(manifest, "the manifest")
    except _ManifestProblem as problem:
        raise _store_error(path, problem) from None
    if manifest.get("layout") not in READ_LAYOUTS:
        raise _layout_error(path, manifest.get("layout"))
    try:
        if manifest["layout"] == PUBLISHED_LAYOUT:
            return _expanded(manifest)
        _check_structure(manifest)
    except _ManifestProblem as problem:
        raise _store_error(path, problem) from None
    return {**manifest, "layout": PUBLISHED_LAYOUT}


def _expanded(manifest: dict[str, Any]) -> dict[str, Any]:
    """A manifest of :data:`PUBLISHED_LAYOUT` with every run entry written out (its
    record's fields, then its own); a :class:`_ManifestProblem` at the first thing that
    is wrong."""
    _check_sections(manifest, (*_SECTIONS, _RECORDS))
    records = manifest[_RECORDS]
    for name, record in records.items():
        _named(name, f"{_RECORDS}: record name", _RECORD_NAME,
               "a record name (12 hex digits)")
        where = f"{_RECORDS}.{name}"
        _only_run_fields(_object(record, where), where)
        _check_fields(record, where, manifest)
    runs = {}
    for key, entry in manifest["runs"].items():
        where = f"runs.{_run_key_named(key, 'runs: run key')}"
        _object(entry, where)
        if _FROM not in entry:
            _fail(f"{where}.{_FROM} is missing (the provenance record of the run)")
        record = _named(entry[_FROM], f"{where}.{_FROM}", _RECORD_NAME,
                        "a record name (12 hex digits)")
        if record not in records:
            _fail(f"{where}.{_FROM} {record!r} names no record of the manifest's "
                  f"{_RECORDS!r} section")
        own = {name: value for name, value in entry.items() if name != _FROM}
        _only_run_fields(own, where)
        _check_fields(own, where, manifest)
        runs[key] = _merged(records[record], own)
        _check_run(key, runs[key], manifest,
                   f" (neither the run nor its record {record!r} gives it)")
    return {**{name: manifest[name] for name in manifest if name != _RECORDS},
            "layout": PUBLISHED_LAYOUT, "runs": runs}


def _only_run_fields(entry: dict[str, Any], where: str) -> None:
    for name in entry:
        if name not in _RUN_FIELDS and name not in _OPTIONAL_FIELDS:
            _fail(f"{where}: {_quoted(name)} is not a field of a run (one of "
                  f"{', '.join((*_RUN_FIELDS, *_OPTIONAL_FIELDS))})")


def _merged(record: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """A run's entry written out: its record's fields, then its own (its config: the
    record's settings, then its own)."""
    entry = {**record, **own}
    if "config" in record and "config" in own:
        entry["config"] = {**record["config"], **own["config"]}
    elif "config" in entry:
        entry["config"] = dict(entry["config"])
    return entry


def _check_structure(manifest: dict[str, Any]) -> None:
    """Raise a :class:`_ManifestProblem` at the first thing of ``manifest`` that is wrong."""
    _check_sections(manifest, _SECTIONS)
    for key, entry in manifest["runs"].items():
        _check_run(key, entry, manifest)


def _check_sections(manifest: dict[str, Any], sections: Sequence[str]) -> None:
    """Check the experiment's name, that every section is there, and the sections runs
    name (modules, schemas, groups)."""
    if not isinstance(manifest.get("experiment", ""), str):
        _fail(f"experiment {_quoted(manifest['experiment'])} is not text")
    for section in sections:
        if section not in manifest:
            _fail(f"section {section!r} is missing")
        _object(manifest[section], f"section {section!r}")
    _check_modules(manifest["modules"])
    _check_schemas(manifest["schemas"])
    _check_groups(manifest["groups"])


_LAYOUT_FORM = re.compile(r"fedlib-published/([0-9]{1,6})")


def _layout_number(layout: str) -> int:
    found = _LAYOUT_FORM.fullmatch(layout)
    assert found is not None, layout
    return int(found[1])


def _layout_error(path: Path, layout: Any) -> PublishedStoreError:
    """Why a manifest of ``layout`` (not one of :data:`READ_LAYOUTS`) is refused, and what
    to do: a layout of a newer fedlib needs that fedlib; anything else is a damaged file."""
    reads = " and ".join(map(repr, READ_LAYOUTS))
    found = _LAYOUT_FORM.fullmatch(layout) if isinstance(layout, str) else None
    if found is not None and int(found[1]) > max(map(_layout_number, READ_LAYOUTS)):
        return PublishedStoreError(
            f"{path} is written in layout {layout!r}, which a newer fedlib writes (this one "
            f"reads {reads}): update this checkout to the fedlib that wrote it (git pull, "
            "then make install); nothing here can read or write it until then")
    return _store_error(path, f"layout {_quoted(layout)} is not a layout of the published "
                              f"store (this fedlib reads {reads})")


def _repair_advice(path: Path) -> str:
    """What to do about a manifest that cannot be read: restore it, or start the
    experiment's folder afresh (an export refuses to write over a manifest it cannot
    read, since that would lose the runs it names)."""
    folder = paths.shown(path.parent)
    return (f"restore it from git (git checkout -- {paths.shown(path)}); where git holds no "
            f"readable copy, remove the experiment's folder (rm -r {folder}) and export its "
            f"runs again from a cache that holds them (python -m fedlib.runs export --tier "
            f"<tier> {path.parent.name})")


def _store_error(path: Path, problem: Exception | str) -> PublishedStoreError:
    return PublishedStoreError(f"{path}: {problem}; {_repair_advice(path)}")


def _first_clause(error: BaseException) -> str:
    """The start of an error's text, up to its first sentence's end (a message that
    quotes it keeps its own first sentence whole)."""
    return str(error).split(". ", 1)[0].strip().rstrip(".")


def _file_digests(module: str) -> dict[str, str]:
    root = Path(fedlib.__file__).resolve().parent
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest()[:16]
            for name in code_files(module)}


def commit_description() -> str:
    """``git describe``-like name of the checkout's commit (``unknown`` outside git), with
    ``+changes`` when fedlib's tracked sources differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.PROJECT_ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fedlib"],
                               cwd=paths.PROJECT_ROOT, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


@dataclass(frozen=True)
class _TierTable:
    """A tier's table of runs and, per run key, the positions of its rows."""

    frame: pd.DataFrame
    positions: dict[str, np.ndarray]


_NO_ROWS = np.array([], dtype=np.intp)


def _grouped(keys: Iterable[str], by: Callable[[str], Hashable]) -> dict[Hashable, list[str]]:
    groups: dict[Hashable, list[str]] = {}
    for key in keys:
        groups.setdefault(by(key), []).append(key)
    return groups


class PublishedStore:
    """The published runs of one experiment (read-only for sweeps; :meth:`add` exports)."""

    def __init__(self, experiment: str, root: Path | None = None) -> None:
        if not experiment or any(c in experiment for c in "/\\") or experiment.startswith("."):
            raise ValueError(f"experiment name {experiment!r} must be a plain folder name")
        self.experiment = experiment
        self.folder = (root or paths.published_dir()) / experiment
        self._tables: dict[str, _TierTable | DamagedRunError] = {}
        self._lock: Any = None  # the open lock file while this store holds the lock
        # What reading found, kept while the files read are unchanged (:meth:`_stamp`).
        self._read_stamp: tuple[Any, ...] | None = None
        self._read_runs: dict[str, dict[str, Any]] | None = None
        self._found: dict[str, pd.DataFrame] = {}

    @property
    def manifest_path(self) -> Path:
        return self.folder / "manifest.json"

    def table_path(self, tier: str) -> Path:
        if tier not in SCALES:
            raise ValueError(f"tier {tier!r} is not a run tier; use one of {', '.join(SCALES)}")
        return self.folder / f"{tier}.parquet"

    def manifest(self) -> dict[str, Any]:
        """The manifest (an empty one when nothing is published), checked, with every
        run entry written out whatever the layout it is stored in
        (:func:`check_manifest`)."""
        if not self.manifest_path.is_file():
            return {"layout": PUBLISHED_LAYOUT, "experiment": self.experiment, "runs": {},
                    "modules": {}, "groups": {}, "schemas": {}}
        text = self.manifest_path.read_text()
        return json.loads(_checked_manifest_text(text, str(self.manifest_path)))

    def runs(self, manifest: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """Every published run's manifest entry, with its ``group`` (the keys of the runs
        computed with it) and ``columns`` (``[name, dtype]`` pairs) written out (of
        ``manifest``, when the caller has read it already)."""
        manifest = manifest if manifest is not None else self.manifest()
        groups, schemas = manifest["groups"], manifest["schemas"]
        return {key: {**entry, "group": groups[entry["group"]],
                      "columns": schemas[entry["columns"]]}
                for key, entry in manifest["runs"].items()}

    def _table(self, tier: str) -> _TierTable:
        """The tier's table (read once per store until the next write);
        :class:`DamagedRunError` naming the file when it is missing or unreadable."""
        if tier not in self._tables:
            self._tables[tier] = self._read_table(tier)
        table = self._tables[tier]
        if isinstance(table, DamagedRunError):
            raise table
        return table

    def _read_table(self, tier: str) -> _TierTable | DamagedRunError:
        path = self.table_path(tier)
        if not path.is_file():
            return DamagedRunError(f"{path} is missing")
        try:
            frame = pq.read_table(path).to_pandas()
        except Exception as error:  # any reader failure: truncated, empty, not Parquet
            warnings.warn(f"{path} cannot be read as Parquet ({_first_clause(error)}): its "
                          "runs are treated as damaged; restore it from git (git checkout -- "
                          f"{paths.shown(path)})", RuntimeWarning, stacklevel=4)
            return DamagedRunError(f"{path} cannot be read as Parquet")
        if "run_key" not in frame.columns:
            return DamagedRunError(f"{path} has no run_key column")
        return _TierTable(frame, frame.groupby("run_key", sort=False).indices)

    def find(self, keys: Iterable[str]) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
        """The published runs among ``keys``, each checked against its digest, and the
        damaged ones, each with what is wrong (the file, and why).

        A run found is kept, with the manifest read, while the manifest and the tables
        are the same files (:meth:`_stamp`): a chapter's many sweeps over the same runs
        read and check each once. Each call returns copies."""
        self._unchanged_or_forget()
        keys = list(dict.fromkeys(keys))
        rest = [key for key in keys if key not in self._found]
        found, damaged = (self._verified(rest, keep_rows=True, manifest=None, cached=True)
                          if rest else ({}, {}))
        self._found.update({key: rows for key, rows in found.items() if rows is not None})
        return ({key: self._found[key].copy() for key in keys if key in self._found},
                damaged)

    def _stamp(self) -> tuple[Any, ...]:
        """What tells the files a read used from their next versions: the manifest's and
        each tier table's inode, size and time of change (a write replaces a file whole,
        so any write changes it)."""
        stamp = []
        for path in (self.manifest_path, *(self.table_path(t) for t in SCALES)):
            try:
                stat = path.stat()
            except FileNotFoundError:
                stamp.append(None)
                continue
            stamp.append((stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))
        return tuple(stamp)

    def _unchanged_or_forget(self) -> None:
        """Forget what reading found (and the tables read) when a file changed since."""
        stamp = self._stamp()
        if stamp != self._read_stamp:
            self._read_stamp, self._read_runs = stamp, None
            self._found.clear()
            self._tables.clear()

    def damaged(self, manifest: dict[str, Any] | None = None) -> dict[str, str]:
        """The damaged published runs (table unreadable or digest mismatch), with why (of
        ``manifest``, when the caller has read it already)."""
        manifest = manifest if manifest is not None else self.manifest()
        return self._verified(manifest["runs"], keep_rows=False, manifest=manifest)[1]

    def _verified(self, keys: Iterable[str], keep_rows: bool,
                  manifest: dict[str, Any] | None = None, cached: bool = False
                  ) -> tuple[dict[str, pd.DataFrame | None], dict[str, str]]:
        """The published runs among ``keys`` that match their digests (their rows, or
        None without ``keep_rows``) and the damaged ones, with why (``cached``: the
        manifest's entries as :meth:`find` last read them, while the files are the same)."""
        if manifest is None and not self.manifest_path.is_file():
            return {}, {}
        if cached and manifest is None:
            if self._read_runs is None:
                self._read_runs = self.runs()
            published = self._read_runs
        else:
            published = self.runs(manifest)
        wanted = [key for key in dict.fromkeys(keys) if key in published]
        found: dict[str, pd.DataFrame | None] = {}
        damaged: dict[str, str] = {
            key: f"{self.manifest_path} records for a run a config that does not give its "
                 "key with the code it records (edited after the export)"
            for key in wanted if config_edited(key, published[key])}
        wanted = [key for key in wanted if key not in damaged]
        for tier, tier_keys in _grouped(wanted, lambda k: published[k]["tier"]).items():
            try:
                table = self._table(str(tier))
            except DamagedRunError as error:
                damaged.update(dict.fromkeys(tier_keys, str(error)))
                continue
            by_schema = _grouped(tier_keys, lambda k: json.dumps(published[k]["columns"]))
            for schema_keys in by_schema.values():
                runs = {key: published[key] for key in schema_keys}
                _verify_runs(table, runs, self.table_path(str(tier)), keep_rows, found,
                             damaged)
        return found, damaged

    def load(self, key: str) -> pd.DataFrame:
        """The published table of ``key``, checked against its digest
        (:class:`fedlib.runs.cache.DamagedRunError` when it does not match)."""
        if key not in self.runs():
            raise KeyError(f"run {key} is not published for {self.experiment}")
        found, damaged = self.find([key])
        if key in damaged:
            raise DamagedRunError(
                f"published run {key} of {self.experiment} is damaged ({damaged[key]}); "
                f"restore it from git (git checkout -- {paths.shown(self.folder)}) or export "
                "it again")
        return found[key]

    def lookup(self, keys: Iterable[str]) -> dict[str, pd.DataFrame]:
        """The published tables of those ``keys`` that are published (the damaged ones
        are left out with a warning, and computed instead)."""
        found, damaged = self.find(keys)
        if damaged:
            warnings.warn(
                f"{len(damaged)} published runs of {self.experiment} are damaged ("
                f"{'; '.join(sorted(set(damaged.values())))}): computing them instead",
                RuntimeWarning, stacklevel=2)
        return found

    @contextmanager
    def holding(self, wait: bool = True, command: str = "") -> Iterator[None]:
        """Hold the experiment's lock for the block, reading everything again under it.

        First, under it, remove what an interrupted write left behind (no other write
        runs meanwhile): its temporary files, and the table rows no manifest entry names
        (:meth:`repair`). ``wait``: wait for another command that holds the lock (an
        export waits for another export, saying so on stderr); else raise
        :class:`StoreBusyError` naming it. ``command`` names this one to others. Holding
        it already, this store takes it again at once (a write inside a confirmation)."""
        if self._lock is not None:
            self._tables.clear()
            yield
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / LOCK_NAME, "a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(lock)
                if not wait:
                    raise StoreBusyError(
                        f"another command holds the published store of {self.experiment} "
                        f"({holder}; its lock is {paths.shown(self.folder / LOCK_NAME)}): "
                        "wait for it to finish, then run this one again") from None
                print(f"{self.experiment}: waiting for another command that holds the "
                      f"published store ({holder})", file=sys.stderr)
                fcntl.flock(lock, fcntl.LOCK_EX)
            self._lock = lock
            try:
                _record_holder(lock, command)
                self._tables.clear()
                for leftover in paths.temporaries(self.folder):
                    leftover.unlink(missing_ok=True)
                self.repair()
                yield
            finally:
                self._lock = None
                self._tables.clear()
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _writing(self, command: str) -> Any:
        """:meth:`holding`, waiting for another command (every write holds it)."""
        return self.holding(wait=True, command=f"{command} of {self.experiment}")

    def unnamed_rows(self, manifest: dict[str, Any] | None = None) -> dict[str, dict[str, int]]:
        """Per tier, the run keys of rows in its table that no manifest entry of the tier
        names, with their row counts (tables that cannot be read are left out: they are
        damaged). Such rows are what a write killed between its table and manifest writes
        leaves; nothing reads them, and the next write removes them (:meth:`repair`)."""
        manifest = manifest if manifest is not None else self.manifest()
        named: dict[str, set[str]] = {}
        for key, entry in manifest["runs"].items():
            named.setdefault(entry["tier"], set()).add(key)
        found: dict[str, dict[str, int]] = {}
        for tier in SCALES:
            path = self.table_path(tier)
            if not path.is_file():
                continue
            try:
                keys = pq.read_table(path, columns=["run_key"]).column("run_key").to_pylist()
            except Exception:  # noqa: BLE001 - any reader failure: a damaged table
                continue
            unnamed = Counter(key for key in keys if key not in named.get(tier, set()))
            if unnamed:
                found[tier] = dict(unnamed)
        return found

    def repair(self, manifest: dict[str, Any] | None = None) -> int:
        """Remove the rows of every tier's table that no manifest entry names (a table left
        with none is removed); how many rows. Called under the lock: by every write first
        (what an interrupted one left), and by a write itself once its manifest is
        written (the rows of the runs it removed)."""
        if manifest is None and not self.manifest_path.is_file():
            tables = [self.table_path(t) for t in SCALES if self.table_path(t).is_file()]
            if tables:
                raise PublishedStoreError(
                    f"{paths.shown(self.folder)} holds {', '.join(t.name for t in tables)} "
                    "but no manifest.json, so no row of them can be told from a leftover: "
                    f"restore it (git checkout -- {paths.shown(self.manifest_path)}), or "
                    "remove the folder and export the runs again; nothing was removed")
        unnamed = self.unnamed_rows(manifest)
        removed = 0
        for tier, keys in unnamed.items():
            frame = self._frame_for_writing(tier)
            kept = frame[~frame["run_key"].isin(list(keys))].reset_index(drop=True)
            if kept.empty:
                _remove_file(self.table_path(tier))
            else:
                _write_table(self.table_path(tier), kept)
            removed += len(frame) - len(kept)
        self._tables.clear()
        return removed

    def _frame_for_writing(self, tier: str) -> pd.DataFrame:
        """The tier's table as it stands, to be rewritten (empty when there is none); a
        :class:`PublishedStoreError` when it cannot be read (rewriting would lose runs)."""
        if not self.table_path(tier).is_file():
            return pd.DataFrame({"run_key": pd.Series(dtype=str)})
        try:
            return self._table(tier).frame
        except DamagedRunError as error:
            raise PublishedStoreError(
                f"{error}: writing it again would lose the runs published in it; restore it "
                f"from git (git checkout -- {paths.shown(self.table_path(tier))}), or delete "
                f"{paths.shown(self.folder)} and export all its runs again") from error

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        """Write ``manifest`` (every run entry written out) in :data:`PUBLISHED_LAYOUT`,
        atomically, having checked that reading it back gives ``manifest``."""
        text = manifest_text(manifest)
        try:
            back = check_manifest(json.loads(text), self.manifest_path)
        except PublishedStoreError as error:
            raise ValueError(f"the manifest to write could not be read back ({error}); "
                             "nothing was written") from None
        if back["runs"] != manifest["runs"]:
            raise ValueError(f"the manifest to write for {self.experiment} would not read "
                             "back as the same runs; nothing was written")
        with paths.atomic_path(self.manifest_path) as tmp:
            tmp.write_text(text)

    def _rewrite_if_other(self, manifest: dict[str, Any]) -> bool:
        """Write ``manifest`` again where its file is not what the writer writes (a
        manifest of an older layout); whether it did."""
        if (not self.manifest_path.is_file()
                or self.manifest_path.read_text() == manifest_text(manifest)):
            return False
        self._write_manifest(manifest)
        return True

    def compact(self) -> tuple[int, int, bool]:
        """Write the manifest again in :data:`PUBLISHED_LAYOUT` (atomically, under the
        experiment's lock), runs and tables unchanged, where it is not written so
        already; its size in bytes before and after, and whether it was written."""
        if not self.manifest_path.is_file():
            raise PublishedStoreError(f"nothing is published for {self.experiment!r} (no "
                                      f"{paths.shown(self.manifest_path)})")
        with self._writing("compact"):
            before = self.manifest_path.stat().st_size
            written = self._rewrite_if_other(self.manifest())
            return before, self.manifest_path.stat().st_size, written

    def add(self, tier: str, runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]]
            ) -> int:
        """Publish ``runs`` (key, table, provenance as :meth:`ResultStore.provenance`
        gives it) under ``tier``, replacing a published run of the same key; the tier's
        table and the manifest are each written atomically, under the experiment's lock.
        Each run keeps the rows its experiment's rule keeps
        (:func:`fedlib.runs.rows.kept_rows`; every row without a rule), and its
        digest is theirs. Returns how many were new."""
        if tier not in SCALES:
            raise ValueError(f"tier {tier!r} is not a run tier; use one of {', '.join(SCALES)}")
        runs = [(key, kept_rows(self.experiment, run, provenance.get("config"), tier),
                 provenance) for key, run, provenance in runs]
        with self._writing("export"):
            manifest = self.manifest()
            runs = self._changed(tier, runs, manifest)
            if not runs:
                self._rewrite_if_other(manifest)
                return 0
            before = copy.deepcopy(manifest)
            frame = self._frame_for_writing(tier)
            commit = commit_description()
            new = sum(key not in manifest["runs"] for key, _, _ in runs)
            described: dict[str, dict[str, Any]] = {}  # per module, once per export
            for key, run, provenance in runs:
                _enter(manifest, tier, key, run, provenance, commit, described)
            _drop_unnamed(manifest)
            _check_before_writing(manifest)
            replaced = [key for key, _, _ in runs if key in before["runs"]]
            if replaced:
                # Runs published before whose rows change: the manifest first drops them, so
                # that no entry names rows that do not match its digest.
                dropped = {**before, "runs": {k: v for k, v in before["runs"].items()
                                              if k not in replaced}}
                _drop_unnamed(dropped)
                self._write_manifest(dropped)
            kept = frame[~frame["run_key"].isin([key for key, _, _ in runs])]
            frames = ([kept] if len(kept) else []) + [run.assign(run_key=key)
                                                      for key, run, _ in runs]
            _write_table(self.table_path(tier), pd.concat(frames, ignore_index=True))
            self._write_manifest(manifest)
            self.repair(manifest)  # a run exported before under another tier: its old rows
            return new

    def carry_over(self, renames: dict[str, str], notes: dict[str, str] | str) -> None:
        """Enter the published runs ``renames`` names (old key -> new key) under their new
        keys, their rows and provenance unchanged but for the code's fingerprint and a
        ``confirmed`` note (``notes``: per old key, or one for all), added to those of
        earlier confirmations (:func:`fedlib.runs.confirm.confirm` decides which runs);
        under the experiment's lock. The tables first gain the rows under the new keys,
        then the manifest names them, then the old rows go: a reader never finds a named
        run without its rows, and a write killed in between leaves only rows no entry
        names, which the next write removes (:meth:`repair`)."""
        with self._writing("confirm"):
            manifest = self.manifest()
            missing = sorted(set(renames) - set(manifest["runs"]))
            taken = sorted(set(renames.values()) & set(manifest["runs"]))
            if missing or taken:
                raise PublishedStoreError(
                    f"runs {', '.join((missing or taken)[:3])} of {self.experiment} are "
                    f"{'no longer' if missing else 'already'} published; nothing was "
                    "carried over")
            tiers = sorted({manifest["runs"][old]["tier"] for old in renames})
            for tier in tiers:
                frame = self._frame_for_writing(tier)
                moved = frame[frame["run_key"].isin(renames)]
                _write_table(self.table_path(tier), pd.concat(
                    [frame, moved.assign(run_key=moved["run_key"].map(renames))],
                    ignore_index=True))
            described: dict[str, dict[str, Any]] = {}
            for old, new in renames.items():
                entry = manifest["runs"].pop(old)
                module = entry["module"]
                if module not in described:
                    described[module] = {"fingerprint": code_fingerprint(module),
                                         "files": _file_digests(module)}
                manifest["modules"][module] = described[module]
                earlier = f"{entry['confirmed']}; " if "confirmed" in entry else ""
                note = notes if isinstance(notes, str) else notes[old]
                manifest["runs"][new] = {**entry, "code_fingerprint": code_fingerprint(module),
                                         "confirmed": earlier + note}
            groups = {}
            for name, members in manifest["groups"].items():
                members = [renames.get(member, member) for member in members]
                groups[renames.get(name, name)] = members
            manifest["groups"] = groups
            for entry in manifest["runs"].values():
                entry["group"] = renames.get(entry["group"], entry["group"])
            _drop_unnamed(manifest)
            _check_before_writing(manifest)
            self._tables.clear()
            self._write_manifest(manifest)
            self.repair(manifest)

    def _changed(self, tier: str, runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]],
                 manifest: dict[str, Any]) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
        """The runs to write: a run published before with the same rows keeps its entry
        (exporting again must not rewrite when and with which commit it was published),
        unless its published rows are damaged."""
        def same(key: str, run: pd.DataFrame) -> bool:
            entry = manifest["runs"].get(key, {})
            return entry.get("tier") == tier and entry.get("sha256") == content_digest(run)

        unchanged = {key for key, run, _ in runs if same(key, run)}
        unchanged -= set(self._verified(unchanged, keep_rows=False, manifest=manifest)[1])
        return [(key, run, provenance) for key, run, provenance in runs
                if key not in unchanged]

    def prune(self) -> int:
        """Remove the stale runs (those whose key is no longer what the checkout's code
        gives their config), typically once their replacements are exported; tables and
        manifest are each written atomically, under the experiment's lock. Returns how
        many were removed."""
        if not self.folder.is_dir():
            return 0
        with self._writing("prune"):
            manifest = self.manifest()
            stale = {key for key, entry in manifest["runs"].items()
                     if not is_current(key, entry) and not config_edited(key, entry)}
            if not stale:
                self._rewrite_if_other(manifest)
                return 0
            for tier in sorted({manifest["runs"][key]["tier"] for key in stale}):
                self._frame_for_writing(tier)  # refused before anything is written
            for key in stale:
                del manifest["runs"][key]
            _drop_unnamed(manifest)
            modules = {entry["module"] for entry in manifest["runs"].values()}
            manifest["modules"] = {k: v for k, v in manifest["modules"].items()
                                   if k in modules}
            # The manifest first: rows no run names are never read (and the next write
            # removes them, were this one killed now), a named run without rows would read
            # as damaged.
            self._write_manifest(manifest)
            self.repair(manifest)
            return len(stale)


def _check_before_writing(manifest: dict[str, Any]) -> None:
    """Refuse to write a manifest that would be refused on reading it back (a run whose
    provenance holds what no manifest may)."""
    try:
        _check_structure(manifest)
    except _ManifestProblem as problem:
        raise ValueError(f"the runs to publish would make a manifest that cannot be read "
                         f"back ({problem}); nothing was written") from None


def _verify_runs(table: _TierTable, runs: dict[str, dict[str, Any]], path: Path,
                 keep_rows: bool, found: dict[str, pd.DataFrame | None],
                 damaged: dict[str, str]) -> None:
    """Check the rows of ``runs`` (entries of one schema) against their digests, all in
    one pass; a run that fails is checked again on its own before it is called damaged."""
    keys = list(runs)
    columns = dict(runs[keys[0]]["columns"])  # [name, dtype] pairs, in the runs' order
    positions = [table.positions.get(key, _NO_ROWS) for key in keys]
    try:
        # One table holds runs of different columns: each run gets its own dtypes back.
        rows = (table.frame.iloc[np.concatenate(positions)][list(columns)]
                .astype(columns).reset_index(drop=True))
        digests: list[str | None] = list(content_digests(rows, [len(p) for p in positions]))
    except (KeyError, ValueError, TypeError, OverflowError):
        digests = [None] * len(keys)
    start = 0
    for key, where, digest in zip(keys, positions, digests, strict=True):
        stop = start + len(where)
        if digest == runs[key]["sha256"]:
            found[key] = rows.iloc[start:stop].reset_index(drop=True) if keep_rows else None
        else:
            try:
                found[key] = _run_rows(table, key, runs[key], path)
            except DamagedRunError as error:
                damaged[key] = str(error)
        start = stop


def _run_rows(table: _TierTable, key: str, entry: dict[str, Any], path: Path
              ) -> pd.DataFrame:
    """The rows of one run, with its own columns and dtypes, checked against its digest."""
    rows = table.frame.iloc[table.positions.get(key, _NO_ROWS)]
    columns = dict(entry["columns"])
    try:
        rows = rows[list(columns)].astype(columns).reset_index(drop=True)
    except (KeyError, ValueError, TypeError, OverflowError) as error:
        raise DamagedRunError(f"{path} does not hold the columns its manifest names") from error
    if content_digest(rows) != entry["sha256"]:
        raise DamagedRunError(f"{path} does not match its digest")
    return rows


def _group_of(key: str, provenance: dict[str, Any]) -> list[str]:
    """The keys of the runs computed together with ``key`` (just ``key`` when the
    provenance does not say, or says it in another form)."""
    group = provenance.get("group")
    if isinstance(group, list) and group and all(is_run_key(k) for k in group):
        return list(group)
    return [key]


def _enter(manifest: dict[str, Any], tier: str, key: str, run: pd.DataFrame,
           provenance: dict[str, Any], commit: str,
           described: dict[str, dict[str, Any]] | None = None) -> None:
    """Write the entry of one run (and what it shares with others) into ``manifest``
    (``described``: the module entries already made by this export, reused)."""
    module = provenance["module"]
    if run_key(provenance["config"], module) != key:
        raise ValueError(f"run {key} was computed with other code or config than "
                         "the checkout's: it cannot be published as current")
    described = {} if described is None else described
    if module not in described:
        described[module] = {"fingerprint": code_fingerprint(module),
                             "files": _file_digests(module)}
    manifest["modules"][module] = described[module]
    group = _group_of(key, provenance)
    manifest["groups"][group[0]] = group
    columns = [[str(c), str(t)] for c, t in run.dtypes.items()]
    schema = hashlib.sha256(json.dumps(columns).encode()).hexdigest()[:12]
    manifest["schemas"][schema] = columns
    manifest["runs"][key] = {
        "tier": tier, "config": provenance["config"], "module": module,
        "runner": provenance.get("runner", ""), "group": group[0],
        "code_fingerprint": code_fingerprint(module),
        "fedlib_version": fedlib.__version__, "commit": commit,
        "machine": provenance.get("machine", "unknown"),
        "finished": provenance.get("finished", "unknown"),
        "wall_seconds": _share(provenance, "group_wall_seconds"),
        "cpu_seconds": _share(provenance, "group_cpu_seconds"),
        "torch_threads": provenance.get("torch_threads"),
        "rows": len(run), "columns": schema, "sha256": content_digest(run)}
    if isinstance(provenance.get("environment"), str):
        manifest["runs"][key]["environment"] = provenance["environment"]


def is_current(key: str, entry: dict[str, Any]) -> bool:
    """Whether a published run is what this checkout's code computes for its config."""
    return run_key(entry["config"], entry["module"]) == key


def config_edited(key: str, entry: dict[str, Any]) -> bool:
    """Whether a published run's entry contradicts itself: it records this checkout's code
    (its code's fingerprint is the current one), yet its config does not give its key. An
    export checks that they do, so the manifest was edited since: such a run is damaged,
    not stale. Neither a build nor a confirmation uses it, and a prune keeps it (restore
    the manifest from git, or export the run again)."""
    # The fingerprint the key is made with (run_key's own), whatever this module imported.
    return (entry.get("code_fingerprint") == run_keys.code_fingerprint(entry["module"])
            and not is_current(key, entry))


SEED_FIELDS = ("seed", "repeat", "split_seed")
"""The config fields that name a run's draw of randomness (not its setting)."""


def _setting(entry: dict[str, Any]) -> tuple[Any, ...]:
    """A run's tier, code and config without the fields that name its seed."""
    config = {k: v for k, v in entry["config"].items() if k not in SEED_FIELDS}
    return entry.get("tier"), entry.get("module"), _canonical_json(config)


def seed_sibling_sets(runs: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """For every run of ``runs`` (a manifest's entries), the published runs of the same
    tier, code and setting at every seed, itself among them: their spread is what a draw
    of randomness alone changes. One pass over the manifest: a caller asking for many
    runs asks once."""
    by_setting: dict[tuple[Any, ...], list[str]] = {}
    for k, entry in runs.items():
        by_setting.setdefault(_setting(entry), []).append(k)
    return {k: sorted(keys) for keys in by_setting.values() for k in keys}


def seed_siblings(runs: dict[str, dict[str, Any]], key: str) -> list[str]:
    """:func:`seed_sibling_sets` of the run ``key`` alone."""
    return seed_sibling_sets(runs)[key]


def published_experiments(root: Path | None = None) -> list[str]:
    """The experiments with a manifest in the store, sorted."""
    root = root or paths.published_dir()
    return sorted(p.name for p in root.glob("*") if (p / "manifest.json").is_file())


_ROOT_VARIABLE = "FEDLIB_PUBLISHED_DIR"


def published_root(root: Path | None = None) -> Path:
    """The folder of the published experiments (``root``, else ``$FEDLIB_PUBLISHED_DIR``,
    else ``data/published``), once it is known to be one: a :class:`PublishedStoreError`
    naming it (and the variable that chose it) when it is a file, or when the variable
    names a folder that does not exist. An absent ``data/published`` is an empty store."""
    chosen = root or paths.published_dir()
    set_by = f" ({_ROOT_VARIABLE})" if root is None and os.environ.get(
        _ROOT_VARIABLE, "").strip() else ""
    fix = (f"unset {_ROOT_VARIABLE} to read the checkout's data/published, or set it to the "
           "folder that holds the published experiments (one folder each, with its "
           "manifest.json)") if set_by else "restore it from git (git checkout -- " \
        f"{paths.shown(chosen)})"
    if chosen.exists() and not chosen.is_dir():
        raise PublishedStoreError(f"the published store {chosen}{set_by} is a file, not a "
                                  f"folder: {fix}")
    if set_by and not chosen.exists():
        raise PublishedStoreError(f"the published store {chosen}{set_by} does not exist: "
                                  f"{fix}")
    return chosen


def require_published(experiment: str | None, root: Path | None = None) -> Any:
    """``experiment`` when ``root`` (:func:`published_root`) has a manifest of it, else a
    :class:`PublishedStoreError` naming the folder, what it holds and the variable that
    chose it; with None, the published experiments (every one)."""
    root = published_root(root)
    if experiment is None:
        return published_experiments(root)
    store = PublishedStore(experiment, root)
    if store.manifest_path.is_file():
        return experiment
    there = published_experiments(root)
    held = (f"published there: {', '.join(there)}" if there
            else "nothing is published there")
    variable = os.environ.get(_ROOT_VARIABLE, "").strip()
    chosen = (f"; {_ROOT_VARIABLE}={variable!r} chose this folder" if variable
              else "")
    raise PublishedStoreError(f"nothing is published for {experiment!r} in "
                              f"{paths.shown(root)} (no {experiment}/manifest.json; {held}"
                              f"{chosen})")


def _being_written(folder: Path) -> bool:
    """Whether a write holds the lock of an experiment's folder right now."""
    lock = folder / LOCK_NAME
    if not lock.is_file():
        return False
    with open(lock, "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def leftovers(root: Path | None = None) -> dict[str, list[Path]]:
    """Per experiment folder, the temporary files an interrupted export left behind
    (never those of an export running now); the next write to the folder removes them."""
    root = root or paths.published_dir()
    found = {}
    for folder in sorted(p for p in root.glob("*") if p.is_dir()):
        if (files := paths.temporaries(folder)) and not _being_written(folder):
            found[folder.name] = files
    return found


def unnamed_rows(root: Path | None = None) -> dict[str, dict[str, dict[str, int]]]:
    """Per experiment folder and tier, the rows of its tables that no manifest entry names
    (run key -> rows): what a write killed between its table and manifest writes leaves
    (never those of a write running now). The next write to the folder removes them
    (:meth:`PublishedStore.repair`). A folder whose manifest cannot be read is left out
    (that is reported on its own)."""
    root = root or paths.published_dir()
    found = {}
    for folder in sorted(p for p in root.glob("*") if p.is_dir()):
        if folder.name.startswith(".") or _being_written(folder):
            continue
        try:
            unnamed = PublishedStore(folder.name, root).unnamed_rows()
        except PublishedStoreError:
            continue
        if unnamed:
            found[folder.name] = unnamed
    return found


def leftover_lines(root: Path | None = None) -> list[str]:
    """One line per experiment folder with leftovers of an interrupted write: temporary
    files, and table rows that no manifest entry names."""
    lines = []
    for name, files in leftovers(root).items():
        them = "it" if len(files) == 1 else "them"
        lines.append(f"{name}: {_plural(len(files), 'file')} left by an interrupted export "
                     f"({', '.join(p.name for p in files)}): the next export or prune of "
                     f"{name} removes {them}, or delete {them}")
    for name, tiers in unnamed_rows(root).items():
        for tier, keys in sorted(tiers.items()):
            lines.append(f"{name}: {tier}.parquet holds {_plural(sum(keys.values()), 'row')} "
                         f"of {_plural(len(keys), 'run')} that no manifest entry names, left "
                         "by an interrupted write: the next export, prune, compact or "
                         f"confirm of {name} removes them")
    return lines


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _write_table(path: Path, frame: pd.DataFrame) -> None:
    """Write a tier's table of runs atomically (Parquet, zstd)."""
    with paths.atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp,
                       compression="zstd")


def _remove_file(path: Path) -> None:
    """Remove a tier's table that holds no run any more (one step, like a write)."""
    path.unlink(missing_ok=True)


def _holder(lock: Any, patience: float = 1.0) -> str:
    """Who holds a lock, as the lock file records it (the command and its process); the
    holder writes it just after taking the lock, so an empty file is read again for up to
    ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while True:
        try:
            lock.seek(0)
            text = " ".join(lock.read(500).split())
        except OSError:
            text = ""
        if text or time.monotonic() > deadline:
            return text or "a command that does not say which"
        time.sleep(0.05)


def _record_holder(lock: Any, command: str) -> None:
    """Write into the lock file which command holds it (another one names it)."""
    try:
        lock.seek(0)
        lock.truncate()
        lock.write(f"{command or 'a write'}, process {os.getpid()}, since "
                   f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        lock.flush()
    except OSError:
        pass  # a lock file that cannot be written still locks


_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def config_of(entry: dict[str, Any]) -> dict[str, Any]:
    """The config of a published run as its runner takes it: the manifest writes the
    non-finite floats of a config as ``"inf"``, ``"-inf"`` and ``"nan"`` (JSON has no
    such numbers; the run key reads them the same way), here read back as floats."""
    def decoded(value: Any) -> Any:
        if isinstance(value, str) and value in _NON_FINITE:
            return _NON_FINITE[value]
        if isinstance(value, dict):
            return {k: decoded(v) for k, v in value.items()}
        if isinstance(value, list):
            return [decoded(v) for v in value]
        return value

    return decoded(entry["config"])


def _drop_unnamed(manifest: dict[str, Any]) -> None:
    """Remove the groups and schemas no run names any more (runs exported again)."""
    runs = manifest["runs"].values()
    for section, name in (("groups", "group"), ("schemas", "columns")):
        named = {entry[name] for entry in runs}
        manifest[section] = {k: v for k, v in manifest[section].items() if k in named}


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


canonical_json = _canonical_json
"""A JSON value as one canonical text (keys sorted, no spaces): equal values, equal text."""


def manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest (every run entry written out, as :meth:`PublishedStore.manifest`
    gives it) as JSON of :data:`PUBLISHED_LAYOUT` (:func:`compacted`), with one entry of
    each section per line (sorted)."""
    parts = []
    written = compacted(manifest)
    for name in sorted(written):
        value = written[name]
        if isinstance(value, dict) and value:
            body = ",\n".join(f"  {json.dumps(k)}: {_canonical_json(v)}"
                              for k, v in sorted(value.items()))
            parts.append(f" {json.dumps(name)}: {{\n{body}\n }}")
        else:
            parts.append(f" {json.dumps(name)}: {_canonical_json(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def compacted(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest (every run entry written out) as :data:`PUBLISHED_LAYOUT` stores
    it: the runs that agree on the fields of ``_SHARED_BY`` (computed together, with
    the same code, commit and machine) share one provenance record, which holds those
    fields, every other field they all agree on and the config settings they all agree
    on; each run holds the name of its record (``from``, 12 hex digits of the record's
    digest), its digest and whatever else is its own."""
    classes: dict[str, list[str]] = {}
    for key, entry in manifest["runs"].items():
        shared = _canonical_json([entry.get(name) for name in _SHARED_BY])
        classes.setdefault(shared, []).append(key)
    records: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}
    for keys in classes.values():
        entries = [manifest["runs"][key] for key in keys]
        record = _agreed(entries, skip=(*_OWN_FIELDS, "config"))
        if all(isinstance(e.get("config"), dict) for e in entries):
            record["config"] = _agreed([e["config"] for e in entries], skip=())
        name = hashlib.sha256(_canonical_json(record).encode()).hexdigest()[:12]
        if name in records and records[name] != record:
            raise ValueError(f"two provenance records share the name {name}")
        records[name] = record
        for key, entry in zip(keys, entries, strict=True):
            runs[key] = {_FROM: name, **_own(entry, record)}
    written = {name: value for name, value in manifest.items() if name != "runs"}
    return {**written, "layout": PUBLISHED_LAYOUT, _RECORDS: records, "runs": runs}


def _agreed(entries: list[dict[str, Any]], skip: Sequence[str]) -> dict[str, Any]:
    """The fields (but ``skip``) that every one of ``entries`` holds, with one value."""
    first = entries[0]
    texts = {name: _canonical_json(value) for name, value in first.items()
             if name not in skip}
    for entry in entries[1:]:
        texts = {name: text for name, text in texts.items()
                 if name in entry and _canonical_json(entry[name]) == text}
    return {name: first[name] for name in first if name in texts}


def _own(entry: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """What a run's entry holds beyond its provenance record."""
    own = {name: value for name, value in entry.items()
           if name != "config" and name not in record}
    if "config" in entry:
        config = entry["config"]
        if "config" in record:
            config = {k: v for k, v in config.items() if k not in record["config"]}
        if config or "config" not in record:
            own["config"] = config
    return own


def _share(provenance: dict[str, Any], name: str) -> float | None:
    """A run's share of its group's seconds (the runs of a group are computed together);
    None when the provenance does not say, or says something that is not a duration."""
    total, size = provenance.get(name), provenance.get("group_size")
    if not (_is_number(total) and math.isfinite(total) and total >= 0):
        return None
    if not (isinstance(size, int) and not isinstance(size, bool) and size > 0):
        return None
    return round(total / size, 3)


# Exporting from the local cache ------------------------------------------------------

@dataclass
class CachedRuns:
    """What the local cache of an experiment holds for an export of one tier."""

    current: list[tuple[str, pd.DataFrame, dict[str, Any]]] = field(default_factory=list)
    """The runs of the tier whose key is what this checkout's code gives their config."""
    stale: int = 0
    """Runs of the tier computed with other code or config (left out)."""
    other_tiers: Counter[str] = field(default_factory=Counter)
    """Runs of other tiers, by tier ("" for runs computed without one; left out)."""
    unreadable: list[Path] = field(default_factory=list)
    """Cache files that cannot be read (left out, each with a warning)."""


class ExportReport(NamedTuple):
    """What :func:`export` did: runs exported, of which new, and what it left out."""

    exported: int
    new: int
    stale: int
    other_tiers: dict[str, int]
    unreadable: list[Path]


def cached_runs(experiment: str, tier: str, cache: Path | None = None) -> CachedRuns:
    """The runs of ``tier`` in the local cache of ``experiment`` that are current (their
    key is what this checkout's code gives their config), and what was left out: stale
    runs of the tier, runs of other tiers (or of none), files that cannot be read (each
    with a warning naming it)."""
    store = ResultStore(experiment, cache)
    runs = CachedRuns()
    for path in sorted(store.folder.glob("*.parquet")):
        try:
            _take_cached(store, path.stem, tier, runs)
        except (DamagedRunError, OSError, ValueError, KeyError, TypeError, AttributeError,
                pa.ArrowException) as error:
            warnings.warn(f"cached run {path} cannot be read ({_first_clause(error)}): not "
                          "exported; delete it (the run is computed again when next needed)",
                          RuntimeWarning, stacklevel=2)
            runs.unreadable.append(path)
    return runs


def _take_cached(store: ResultStore, key: str, tier: str, runs: CachedRuns) -> None:
    """Sort the cached run ``key`` into ``runs`` (raises when its file cannot be read)."""
    provenance = store.provenance(key)
    run_tier = provenance.get("tier") or ""
    if run_tier != tier:
        runs.other_tiers[str(run_tier)] += 1
    elif run_key(provenance["config"], provenance["module"]) != key:
        runs.stale += 1
    else:
        runs.current.append((key, store.load(key), provenance))


def export(experiment: str, tier: str, *, cache: Path | None = None,
           root: Path | None = None) -> ExportReport:
    """Publish every current run of ``tier`` in the local cache of ``experiment``.
    Returns the runs exported, of which new, and what was left out (stale runs of the
    tier, runs of other tiers or of none, unreadable cache files)."""
    runs = cached_runs(experiment, tier, cache)
    store = PublishedStore(experiment, root)
    if runs.current:
        new = store.add(tier, runs.current)
    else:
        new = 0
        if store.folder.is_dir():
            with store.holding(command=f"export of {experiment}"):
                # repairs what an interrupted write left; writes nothing else
                pass
    return ExportReport(len(runs.current), new, runs.stale, dict(runs.other_tiers),
                        runs.unreadable)


def left_out_lines(report: ExportReport) -> list[str]:
    """What an export left out besides stale runs, and why, one line each."""
    lines = []
    for tier, count in sorted(report.other_tiers.items()):
        runs = _plural(count, "cached run")
        if tier == "":
            lines.append(f"{runs} {'has' if count == 1 else 'have'} no tier (computed through "
                         "the Python API without a tier): not exported; compute them through "
                         "their chapter, or call fedlib.runs.cache.set_tier_label(<tier>) before "
                         "sweeping")
        elif tier in SCALES:
            lines.append(f"{runs} {'is' if count == 1 else 'are'} of the {tier} tier: not "
                         f"exported (use --tier {tier})")
        else:
            lines.append(f"{runs} {'is' if count == 1 else 'are'} labelled {tier!r}, which "
                         f"is not a run tier ({', '.join(SCALES)}): not exported")
    if report.unreadable:
        lines.append(f"{_plural(len(report.unreadable), 'cached file')} cannot be read: not "
                     "exported (the warnings name them; delete them, they are computed "
                     "again when next needed)")
    return lines


# Reporting ------------------------------------------------------------------------------

@cache
def _stale_files(module: str, recorded: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    now = _file_digests(module)
    before = dict(recorded)
    return tuple(sorted(name for name in set(now) | set(before)
                        if now.get(name) != before.get(name)))


def status_table(root: Path | None = None) -> pd.DataFrame:
    """One row per published experiment and tier: runs, how many are current, stale and
    damaged (table unreadable or digest mismatch), how many were carried over an edit by a
    confirmation (:mod:`fedlib.runs.confirm`), the files whose change made the stale
    ones stale, CPU hours, the machines and dates, and size."""
    root = root or paths.published_dir()
    rows = []
    for name in published_experiments(root):
        store = PublishedStore(name, root)
        manifest = store.manifest()
        damaged = store.damaged(manifest)
        by_tier: dict[str, list[str]] = {}
        for key, entry in manifest["runs"].items():
            by_tier.setdefault(entry["tier"], []).append(key)
        for tier, keys in sorted(by_tier.items(), key=lambda item: SCALES.index(item[0])):
            entries = [manifest["runs"][key] for key in keys]
            rows.append({"experiment": name, "tier": tier,
                         **_tier_status(manifest, keys, damaged),
                         **_tier_provenance(entries),
                         "size (kB)": round(store.table_path(tier).stat().st_size / 1024, 1)
                         if store.table_path(tier).is_file() else 0.0})
    return pd.DataFrame(rows)


def _tier_status(manifest: dict[str, Any], keys: list[str], damaged: dict[str, str]
                 ) -> dict[str, Any]:
    """Runs of one tier: how many, current, stale, damaged, and what made them stale."""
    changed: set[str] = set()
    current = stale = 0
    for key in keys:
        entry = manifest["runs"][key]
        if key in damaged:
            continue
        if is_current(key, entry):
            current += 1
            continue
        stale += 1
        recorded = manifest["modules"].get(entry["module"], {}).get("files", {})
        changed |= set(_stale_files(entry["module"], tuple(sorted(recorded.items()))))
    return {"runs": len(keys), "current": current, "stale": stale,
            "damaged": sum(key in damaged for key in keys),
            "confirmed": _confirmed(manifest["runs"][key].get("confirmed") for key in keys),
            "changed since": ", ".join(sorted(changed))}


def strata_checked(checked: int, strata: int) -> str:
    """How a confirmation checked the runs it carried over, in the words of its
    ``confirmed`` note (:mod:`fedlib.runs.confirm`), which :func:`checked_phrase` reads."""
    return f"checked by computing {checked} of its {strata} strata again"


_CHECKED = re.compile(r"checked by computing (\d+) of its (\d+) strata again")
_SAMPLED = re.compile(r"(\d+) sampled groups computed again")


def _latest_check(note: str) -> str:
    """How the latest confirmation in a run's ``confirmed`` note (confirmations joined by
    "; ", oldest first) checked it, as the words that follow "checked by computing"."""
    found = [(match.start(), f"{match[1]} of its {match[2]} strata again")
             for match in _CHECKED.finditer(note)]
    found += [(match.start(), f"{match[1]} group{'' if match[1] == '1' else 's'} drawn at "
               "random again (not by strata)") for match in _SAMPLED.finditer(note)]
    return max(found)[1] if found else "what its note says"


def checked_phrase(notes: Iterable[str]) -> str:
    """How the runs whose ``confirmed`` notes these are were checked (each by its latest
    confirmation), in words: ``checked by computing 5 of its 6 strata again``, with how
    many runs each way where they differ; a confirmation made before runs were stratified
    says how many groups it drew instead. Never more than the notes say."""
    counts: dict[str, int] = {}
    for note in notes:
        phrase = _latest_check(note)
        counts[phrase] = counts.get(phrase, 0) + 1
    if len(counts) == 1:
        return f"checked by computing {next(iter(counts))}"
    return "checked by computing " + "; ".join(
        f"{phrase} ({count} runs)" for phrase, count in sorted(counts.items()))


def _confirmed(notes: Iterable[str | None]) -> str:
    """The status of the confirmed runs of a tier: how many, and how they were checked."""
    found = [note for note in notes if note is not None]
    return f"{len(found)}, {checked_phrase(found)}" if found else "0"


UNLOCKED = "not recorded (computed before the environment was locked)"
"""What the status page says of a run that records no environment."""


def _tier_provenance(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the runs of one tier come from: CPU hours, machines, dates, commits."""
    seconds = [e["cpu_seconds"] for e in entries if e.get("cpu_seconds")]
    dates = sorted(str(e["finished"])[:10] for e in entries)
    return {"CPU hours": round(sum(seconds) / 3600, 2),
            "machines": "; ".join(sorted({e["machine"] for e in entries})),
            "environments": "; ".join(sorted({e.get("environment", UNLOCKED) for e in entries})),
            "finished": f"{dates[0]} to {dates[-1]}" if dates else "",
            "commits": ", ".join(sorted({e["commit"][:12] for e in entries}))}


def stored_runs(run: Callable[..., pd.DataFrame], *args: Any, of_tier: str | None = None,
                **kwargs: Any) -> pd.DataFrame | None:
    """``run(*args, **kwargs)`` (a paper's ``run``) from cached and published runs only,
    computing nothing; None when some of its runs are neither (a chapter shows another
    tier's runs this way when they are published: ``of_tier`` names that tier, so that
    runs it cannot find are recorded as that tier's, :func:`fedlib.runs.cache.reading_tier`)."""
    with reading_tier(of_tier) if of_tier is not None else stored_only():
        try:
            return run(*args, **kwargs)
        except MissingRunsError:
            return None


def provenance_line(experiment: str, keys: Iterable[str]) -> str:
    """Where the runs of ``keys`` come from, in one line for a chapter: how many are
    published (tier, machine, dates, commit, CPU hours) and how many were computed by
    this build or its cache."""
    keys = list(dict.fromkeys(keys))
    runs = PublishedStore(experiment).runs() if keys else {}
    mine = [runs[k] for k in keys if k in runs]
    local = len(keys) - len(mine)
    if not mine:
        return f"All {len(keys)} runs were computed by this build (or its local cache)."
    tiers = ", ".join(sorted({e["tier"] for e in mine}))
    machines = "; ".join(sorted({e["machine"] for e in mine}))
    dates = sorted(str(e["finished"])[:10] for e in mine)
    commits = ", ".join(sorted({e["commit"][:10] for e in mine}))
    hours = sum(e.get("cpu_seconds") or 0 for e in mine) / 3600
    notes = [e["confirmed"] for e in mine if "confirmed" in e]
    line = (f"{len(mine)} of {len(keys)} runs come from the published {tiers} tier "
            f"(computed on {machines}, {dates[0]} to {dates[-1]}, fedlib commit {commits}, "
            f"{hours:.1f} CPU hours"
            + (f"; {len(notes)} of them carried over a later edit of the code that changes "
               f"no result, {checked_phrase(notes)}" if notes else "") + ")")
    return line + (f"; {local} were computed by this build." if local else ".")
