"""Published runs carried over a code change that leaves their results as they were.

A run's key covers the source of every fedlib module it computes with, so any edit of
those files (a new check of an argument, a clearer error message, a cache that verifies
what it reads) makes every published run of the experiment stale, and computing them all
again can take many CPU-hours. For an edit meant to change no result, :func:`confirm`
tests that it does not: it computes again a sample of the stale runs' groups with this
checkout's code (the same configs in the same groups, on the number of threads they were
computed with) and compares each table with the published one, digest against digest
(or, for runs computed on another processor, value against value within a stated relative
tolerance for floating-point columns). When every one agrees, the stale runs of the
sampled classes are entered again under the keys this checkout gives them, keeping their
provenance (machine, date, commit, CPU time) and adding a ``confirmed`` note that says
which code they were checked against and how; when one differs, nothing is written and
the run is named.

The check is a sample: an edit that changes the results of configurations the sample does
not draw goes unnoticed. It is meant for edits that should not change any result; after
any other edit the runs are computed again (``make publish``).

``python -m fedlib.runs confirm EXPERIMENT [--groups N] [--cpu-hours H] [--rtol R]``.
"""

from __future__ import annotations

import importlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from fedlib.runs import published
from fedlib.runs.keys import code_fingerprint, content_digest, run_key
from fedlib.runs.rows import kept_rows

SAMPLE_GROUPS = 3
"""Groups recomputed per class of stale runs (same tier, same recorded code) by default."""

SAMPLE_CPU_HOURS = 0.1
"""CPU-hours (as the runs recorded them) the sample of a class may cost by default; the
class's cheapest group is recomputed when no drawn group fits."""


class ConfirmationError(RuntimeError):
    """A recomputed run differs from its published table: the edit changes results."""


@dataclass(frozen=True)
class Confirmation:
    """What :func:`confirm` did for one experiment."""

    stale: int
    """Published runs that were stale before."""
    confirmed: int
    """Of those, runs entered again under their current keys."""
    recomputed: list[list[str]]
    """The groups computed again (old keys), every one identical to its published runs."""
    cpu_seconds: float
    """CPU seconds the recomputation took here."""


def _sample(groups: list[list[str]], cost: Callable[[list[str]], float], seed: str,
            size: int, cpu_seconds: float) -> list[list[str]]:
    """Up to ``size`` of ``groups`` drawn at random (seeded by ``seed``) whose recorded costs
    add up to at most ``cpu_seconds``; the cheapest group when none fits."""
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    chosen, spent = [], 0.0
    for group in order:
        if len(chosen) == size:
            break
        if spent + cost(group) <= cpu_seconds:
            chosen.append(group)
            spent += cost(group)
    return chosen or [min(order, key=cost)]


TEXT_DIGITS_RTOL = 1e-5
"""The least relative tolerance for numbers written as text (PFA's spectra keep six
significant digits): a last digit that rounds the other way differs by up to this much."""


def _number_lists(column: pd.Series) -> list[list[float]] | None:
    """The values of a text column as lists of numbers ("" is an empty list), or None when
    some value is not a comma-separated list of numbers."""
    try:
        return [[float(x) for x in str(v).split(",")] if v != "" else [] for v in column]
    except ValueError:
        return None


def _is_text(column: pd.Series) -> bool:
    """Whether every value of ``column`` is a string."""
    return all(isinstance(v, str) for v in column)


def _numbers_differ(got: list[list[float]], want: list[list[float]], rtol: float
                    ) -> int | None:
    """The first row where two columns of number lists differ beyond ``rtol`` (at least
    :data:`TEXT_DIGITS_RTOL`), None where none does."""
    tol = max(rtol, TEXT_DIGITS_RTOL)
    for row, (a, b) in enumerate(zip(got, want, strict=True)):
        if len(a) != len(b) or not np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
            return row
    return None


def difference(published_rows: pd.DataFrame, computed: pd.DataFrame, rtol: float
               ) -> str | None:
    """How ``computed`` differs from ``published_rows`` (None when it does not): with
    ``rtol`` 0, any difference in columns, types or values; else floating-point values may
    differ by ``rtol`` times their size (at least ``rtol``), text columns of numbers (a
    spectrum written "44.5432,42.7465") likewise with at least :data:`TEXT_DIGITS_RTOL`,
    and everything else not."""
    if list(computed.columns) != list(published_rows.columns):
        return (f"columns {list(computed.columns)} where the published table has "
                f"{list(published_rows.columns)}")
    if len(computed) != len(published_rows):
        return f"{len(computed)} rows where the published table has {len(published_rows)}"
    if rtol == 0:
        same = content_digest(computed) == content_digest(published_rows)
        return None if same else "a table whose digest differs from the published one"
    for column in computed.columns:
        got, want = computed[column].to_numpy(), published_rows[column].to_numpy()
        if got.dtype.kind == "f" and want.dtype.kind == "f":
            off = ~np.isclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
            if off.any():
                row = int(np.argmax(off))
                return (f"{column} = {float(got[row])!r} in row {row} where the published table "
                        f"has {float(want[row])!r} (beyond the relative tolerance {rtol:g})")
        elif computed[column].equals(published_rows[column]):
            continue
        elif _is_text(computed[column]) and _is_text(published_rows[column]) and (
                numbers := _number_lists(computed[column])) is not None and (
                other := _number_lists(published_rows[column])) is not None:
            row = _numbers_differ(numbers, other, rtol)
            if row is not None:
                return (f"{column} = {computed[column].iloc[row]!r} in row {row} where the "
                        f"published table has {published_rows[column].iloc[row]!r} (beyond "
                        f"the relative tolerance {max(rtol, TEXT_DIGITS_RTOL):g})")
        else:
            return f"other values of {column} than the published table"
    return None


def _recomputed(experiment: str, group: list[str], runs: dict[str, dict[str, Any]],
                store: published.PublishedStore, rtol: float) -> dict[str, str]:
    """Compute ``group`` again with this checkout's code; how each run whose table differs
    from its published rows (as the store keeps them) differs."""
    first = runs[group[0]]
    runner = getattr(importlib.import_module(first["module"]), first["runner"])
    configs = [published.config_of(runs[key]) for key in group]
    import torch

    threads = torch.get_num_threads()
    if first.get("torch_threads"):
        torch.set_num_threads(int(first["torch_threads"]))
    try:
        tables = runner(configs)
    finally:
        torch.set_num_threads(threads)
    if len(tables) != len(group):
        raise ConfirmationError(f"the runner of {experiment} returned {len(tables)} tables "
                                f"for the {len(group)} runs of group {group[0]}")
    rows, damaged = store.find(group)
    if damaged:
        raise ConfirmationError(f"published runs of {experiment} are damaged "
                                f"({'; '.join(sorted(set(damaged.values())))}): restore them "
                                "from git before confirming")
    found = {}
    for key, table in zip(group, tables, strict=True):
        stored = pa.Table.from_pandas(table, preserve_index=False).to_pandas()
        kept = kept_rows(experiment, stored, runs[key]["config"], runs[key]["tier"])
        if (how := difference(rows[key], kept.reset_index(drop=True), rtol)) is not None:
            found[key] = how
    return found


def _gpu_here() -> bool:
    """Whether torch sees a CUDA device here (runs made on one are checked only there)."""
    import torch

    return torch.cuda.is_available()


def confirm(experiment: str, *, groups: int = SAMPLE_GROUPS,
            cpu_hours: float = SAMPLE_CPU_HOURS, rtol: float = 0.0, root: Path | None = None,
            log: Callable[[str], None] = print) -> Confirmation:
    """Check a sample of the stale published runs of ``experiment`` against this checkout's
    code and, when every sampled table is identical, enter every stale run of the sampled
    classes again under its current key (see the module's text).

    A class is the stale runs of one tier computed with one version of the code (one
    recorded fingerprint, the runs computed on a GPU apart from the others); each class is
    sampled on its own (a class of runs computed on a GPU is left stale, and said so, where
    torch sees none), ``groups`` groups at most,
    costing ``cpu_hours`` at most as recorded. With ``rtol`` 0 every recomputed table must
    be identical to the published one; a positive ``rtol`` lets floating-point values
    differ by that relative amount (runs computed on another processor, whose float32
    sums round otherwise) and the note says so. Raises :class:`ConfirmationError` naming the
    first run whose table differs (nothing is written then).
    """
    if groups < 1:
        raise ValueError(f"groups must be at least 1 (got {groups})")
    if not cpu_hours > 0:
        raise ValueError(f"cpu_hours must be positive (got {cpu_hours})")
    if not 0 <= rtol < 0.01:
        raise ValueError(f"rtol must lie in [0, 0.01) (got {rtol}): a confirmation allows "
                         "rounding, not other results")
    store = published.PublishedStore(experiment, root)
    if not store.manifest_path.is_file():
        raise published.PublishedStoreError(f"nothing is published for {experiment!r} (no "
                                            f"{store.manifest_path})")
    runs = store.runs()
    stale = {key for key, entry in runs.items() if not published.is_current(key, entry)}
    classes: dict[tuple[str, str, str, bool], list[list[str]]] = {}
    for key in sorted(stale):
        entry = runs[key]
        group = entry["group"]
        if group[0] != key or not all(member in stale for member in group):
            continue  # a group is listed once (by its first run), whole
        if any(run_key(runs[m]["config"], runs[m]["module"]) in runs for m in group):
            continue  # computed again and published already: prune removes the old ones
        on_gpu = any(runs[member]["config"].get("device") == "cuda" for member in group)
        label = (entry["tier"], entry["code_fingerprint"], entry["module"], on_gpu)
        classes.setdefault(label, []).append(group)

    def cost(group: list[str]) -> float:
        return sum(runs[key].get("cpu_seconds") or 0.0 for key in group)

    recomputed, spent = [], 0.0
    for label, candidates in sorted(classes.items()):
        tier, fingerprint, _module, on_gpu = label
        if on_gpu and not _gpu_here():
            log(f"{experiment}: {sum(map(len, candidates))} stale {tier}-tier runs left "
                "stale: they were computed on a GPU (config device = 'cuda'), which torch "
                "does not see here; confirm them on a machine with a CUDA device (with a "
                "positive --rtol: its float sums round otherwise)")
            del classes[label]
            continue
        sample = _sample(candidates, cost, f"{experiment}/{tier}/{fingerprint}", groups,
                         cpu_hours * 3600)
        for group in sample:
            log(f"{experiment}: computing again group {group[0]} ({tier}, {len(group)} runs, "
                f"{cost(group) / 60:.1f} CPU-minutes as recorded)")
            start = time.process_time()
            differing = _recomputed(experiment, group, runs, store, rtol)
            spent += time.process_time() - start
            if differing:
                key, how = next(iter(differing.items()))
                raise ConfirmationError(
                    f"run {key} of {experiment} ({tier} tier) computed with this checkout's "
                    f"code gives {how}: the change alters results, so its runs are computed "
                    "again (make publish); nothing was written")
            recomputed.append(group)
    carried = {key for groups_ in classes.values() for group in groups_ for key in group}
    if carried:
        modules = sorted({runs[key]["module"] for key in carried})
        fingerprints = ", ".join(code_fingerprint(module)[:12] for module in modules)
        note = (f"{time.strftime('%Y-%m-%d')}: {len(recomputed)} sampled groups computed "
                f"again with code {fingerprints} (commit "
                f"{published.commit_description()[:12]}) gave these tables "
                + ("exactly" if rtol == 0 else f"up to a relative {rtol:g} in float values"))
        store.carry_over({key: run_key(runs[key]["config"], runs[key]["module"])
                          for key in carried}, note)
    return Confirmation(len(stale), len(carried), recomputed, spent)
