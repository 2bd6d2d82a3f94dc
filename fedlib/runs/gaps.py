"""The runs a render from stored runs could not find, as data.

A chapter rendered from stored runs leaves out a part whose runs are not all stored and
says so on its page. What it left out is also written here, one JSON line per sweep that
could not be had, to the file named by :data:`GAPS_LOG` (the renderer sets it for the
notebook's kernel): the experiment, the tier the runs belong to (the page's own, or
another tier's that the page quotes), how many runs the sweep reads, how many are absent
and how many damaged. The site's checks and the
status page read these records instead of the pages' sentences.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from fedlib.runs.cache import _TIER_LABEL

__all__ = ["FIELDS", "GAPS_LOG", "GAPS_SUFFIX", "read_gaps", "record_gap", "tier_gaps",
           "unrecorded"]

GAPS_LOG = "FEDLIB_GAPS_LOG"
"""The environment variable naming the file the records are appended to (none: nothing
is recorded)."""

GAPS_SUFFIX = ".gaps.jsonl"
"""The file beside a render's claims that holds its records: ``<chapter>.gaps.jsonl``."""

FIELDS = ("experiment", "tier", "runs", "absent", "damaged")
"""The fields of a record."""


_RECORDING: ContextVar[bool] = ContextVar("fedlib_gaps_recording", default=True)


@contextmanager
def unrecorded() -> Iterator[None]:
    """Inside the block no gap is recorded: for sweeps that probe, run by run, which runs
    of a gap already recorded are stored (each would record a part of it again)."""
    token = _RECORDING.set(False)
    try:
        yield
    finally:
        _RECORDING.reset(token)


def record_gap(experiment: str, runs: int, absent: int, damaged: int) -> None:
    """Append a record of a sweep whose runs are not all stored to the file of
    :data:`GAPS_LOG`, if it is set and not inside :func:`unrecorded`; the tier is the one
    runs are labelled with where the sweep runs (:func:`fedlib.runs.cache.set_tier_label`,
    or :func:`fedlib.runs.cache.reading_tier` for another tier's runs; empty where none
    was set)."""
    target = os.environ.get(GAPS_LOG)
    if not target or not _RECORDING.get():
        return
    record = {"experiment": experiment, "tier": _TIER_LABEL.get(), "runs": int(runs),
              "absent": int(absent), "damaged": int(damaged)}
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as log:  # one short line: appended whole
        log.write(json.dumps(record, sort_keys=True) + "\n")


def read_gaps(path: Path) -> list[dict[str, Any]]:
    """The records of ``path`` (none where it does not exist); a ValueError naming the file
    and line where a record is not one :func:`record_gap` writes."""
    if not path.is_file():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {number}: not a JSON record ({error.msg}); "
                             "render the chapter again to write it anew") from None
        if not isinstance(record, dict) or set(record) != set(FIELDS):
            raise ValueError(f"{path}, line {number}: a record holds the fields "
                             f"{', '.join(FIELDS)}; render the chapter again to write it "
                             "anew")
        records.append(record)
    return records


def tier_gaps(paths: Iterable[Path], tier: str) -> dict[str, list[dict[str, Any]]]:
    """Per file (its name without the suffixes), the records of ``paths`` at ``tier``;
    files with none are left out."""
    found = {}
    for path in sorted(paths):
        records = [r for r in read_gaps(path) if r["tier"] == tier]
        if records:
            found[path.name.split(".", 1)[0]] = records
    return found
