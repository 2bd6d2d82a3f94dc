"""The local cache of finished runs: one Parquet table a run, written atomically, with
its provenance; and the context a sweep runs in (tier label, stored runs only)."""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from fedlib import paths
from fedlib.runs.keys import content_digest

STORE_LAYOUT = "fedlib-run/1"
"""Layout tag written into every cached run: a file of another layout is set aside."""


_METADATA_KEY = b"fedlib"


class MissingRunsError(RuntimeError):
    """Runs that are neither cached nor published (or published but damaged), where
    computing is not allowed (``FEDLIB_COMPUTE=0``)."""


class DamagedRunError(RuntimeError):
    """A cached or published run that cannot be trusted (unreadable, other layout, content
    changed)."""


class ResultStore:
    """Parquet files of finished runs, one per run key, under ``root/experiment``.

    Every file carries its layout tag, its key and a digest of its content; a
    file that fails any of these checks is moved to ``.damaged/`` beside it with a
    warning and its run is computed again, never merged as found.
    """

    def __init__(self, experiment: str, root: Path | None = None) -> None:
        if not experiment or any(c in experiment for c in "/\\") or experiment.startswith("."):
            raise ValueError(f"experiment name {experiment!r} must be a plain folder name")
        self.folder = (root or paths.results_dir()) / experiment

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.parquet"

    def has(self, key: str) -> bool:
        return self.path(key).is_file()

    def load(self, key: str) -> pd.DataFrame:
        """The run stored under ``key``; :class:`DamagedRunError` if it cannot be trusted."""
        path = self.path(key)
        try:
            stored = pq.read_table(path)
            table = stored.to_pandas()
        except Exception as error:  # any reader failure: truncated, empty, not Parquet
            raise DamagedRunError(f"{path.name} cannot be read ({error})") from error
        raw = (stored.schema.metadata or {}).get(_METADATA_KEY)
        try:
            meta = json.loads(raw) if raw else {}
        except ValueError:
            meta = {}
        if meta.get("layout") != STORE_LAYOUT or meta.get("key") != key:
            raise DamagedRunError(
                f"{path.name} is not a run of this layout ({STORE_LAYOUT}) and key")
        if content_digest(table) != meta.get("sha256"):
            raise DamagedRunError(f"{path.name} does not match its content digest")
        return table

    def provenance(self, key: str) -> dict[str, Any]:
        """Where the run under ``key`` comes from (empty for files written without it)."""
        raw = (pq.read_schema(self.path(key)).metadata or {}).get(_METADATA_KEY)
        return dict(json.loads(raw).get("provenance") or {}) if raw else {}

    def read(self, key: str) -> pd.DataFrame | None:
        """The run under ``key``, or None when there is none or it was damaged (then
        it is moved to ``.damaged/`` with a warning, so that it is computed again)."""
        if not self.has(key):
            return None
        try:
            return self.load(key)
        except DamagedRunError as error:
            aside = self.set_aside(key)
            warnings.warn(f"cached run {error}; moved to {aside.relative_to(self.folder)} and "
                          "computed again", RuntimeWarning, stacklevel=2)
            return None

    def set_aside(self, key: str) -> Path:
        """Move the file of ``key`` to ``.damaged/`` (kept for inspection, never read)."""
        folder = self.folder / ".damaged"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{key}.{time.strftime('%Y%m%dT%H%M%S')}.{os.getpid()}.parquet"
        os.replace(self.path(key), target)
        return target

    def save(self, key: str, table: pd.DataFrame, provenance: dict[str, Any] | None = None
             ) -> None:
        """Write atomically (a temporary file in the same folder, then a rename), with
        the layout tag, the key and the content digest of what a reader will get back,
        and where the run comes from (``provenance``, read back by :meth:`provenance`:
        its config, runner module, tier, timing and machine, as :func:`sweep` records
        them)."""
        arrow = pa.Table.from_pandas(table, preserve_index=False)
        meta = {"layout": STORE_LAYOUT, "key": key,
                "sha256": content_digest(arrow.to_pandas()), "provenance": provenance or {}}
        arrow = arrow.replace_schema_metadata(
            {**(arrow.schema.metadata or {}), _METADATA_KEY: json.dumps(meta).encode()})
        with paths.atomic_path(self.path(key)) as tmp:
            pq.write_table(arrow, tmp)


_TIER_LABEL: ContextVar[str] = ContextVar("fedlib_tier", default="")


_STORED_ONLY: ContextVar[bool] = ContextVar("fedlib_stored_only", default=False)


@contextmanager
def stored_only() -> Iterator[None]:
    """Inside the block, sweeps use cached and published runs only and raise
    :class:`MissingRunsError` instead of computing (what ``FEDLIB_COMPUTE=0`` does for
    the whole process)."""
    token = _STORED_ONLY.set(True)
    try:
        yield
    finally:
        _STORED_ONLY.reset(token)


@contextmanager
def reading_tier(scale: str) -> Iterator[None]:
    """Inside the block, sweeps read the stored runs of tier ``scale`` (another tier's,
    which a chapter quotes beside its own) and compute nothing, as in
    :func:`stored_only`; a run they cannot find is another tier's gap, and is recorded as
    such (:mod:`fedlib.runs.gaps`)."""
    token = _TIER_LABEL.set(scale)
    try:
        with stored_only():
            yield
    finally:
        _TIER_LABEL.reset(token)


_SWEPT: ContextVar[dict[str, list[str]] | None] = ContextVar("fedlib_swept", default=None)


def record_swept_runs() -> dict[str, list[str]]:
    """Start recording the run keys every :func:`sweep` returns from now on (in this
    context); the returned dict maps each experiment to its keys, in first-seen order
    (a chapter shows where the runs behind its page come from)."""
    swept: dict[str, list[str]] = {}
    _SWEPT.set(swept)
    return swept


def set_tier_label(scale: str) -> None:
    """Label every run computed from now on (in this context) with ``scale`` (a chapter
    sets its tier once, at its start)."""
    _TIER_LABEL.set(scale)
