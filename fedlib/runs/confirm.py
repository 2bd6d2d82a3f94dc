"""Published runs carried over a code change that leaves their results as they were.

A run's key covers the source of every fedlib module it computes with, so any edit of
those files (a new check of an argument, a clearer error message, a cache that verifies
what it reads) makes every published run of the experiment stale, and computing them all
again can take many CPU-hours. For an edit meant to change no result, :func:`confirm`
tests that it does not, on every code path the stale runs take: it sorts the stale runs of
each class (one tier, one recorded version of the code) into *strata*, one per
combination of values of the config fields that choose code paths (the method, model,
dataset, unit, device; :func:`strata_fields`), and computes again with this checkout's
code the cheapest group of each stratum (the same configs in the same groups, on the
number of threads they were computed with), then a few more groups drawn at random where
the CPU-hours allow. Each recomputed table is compared with the published one:

- runs recorded on this kind of machine (:func:`fedlib.runs.machine.same_machine`),
  digest against digest (or value against value within ``--rtol`` for floats);
- runs recorded on another machine, whose float32 sums round otherwise, by the rule the
  test suite reads recomputed published runs with (:func:`fedlib.runs.machine.compare_runs`:
  each number within twice the seed-to-seed spread of its column, and rounding).

When every one agrees, the stale runs of the strata checked are entered again under the
keys this checkout gives them, keeping their provenance (machine, date, commit, CPU time)
and adding a ``confirmed`` note that says how many of the class's strata were computed
again, which stratum the run is of, with which code and how the tables were compared; a
stratum whose cheapest group does not fit the CPU-hours is left stale, and named. When a
table differs, nothing is written and the run is named with its stratum.

The check is one group a stratum: an edit that changes results only in configurations of
a stratum that its computed group does not reach goes unnoticed. It is meant for edits
that should not change any result; after any other edit the runs are computed again
(``make publish``). The whole confirmation holds the experiment's lock
(:meth:`fedlib.runs.published.PublishedStore.holding`): a second command writing the same
experiment meanwhile is refused, saying so.

``python -m fedlib.runs confirm EXPERIMENT [--groups N] [--cpu-hours H] [--rtol R]``.
"""

from __future__ import annotations

import importlib
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from fedlib import paths
from fedlib.runs import published
from fedlib.runs.errors import ConfirmationError
from fedlib.runs.keys import code_fingerprint, content_digest, run_key
from fedlib.runs.machine import SPREAD_FACTOR, compare_runs, same_machine, seed_spread
from fedlib.runs.published import checked_phrase
from fedlib.runs.rows import kept_rows

__all__ = ["ConfirmationError", "Confirmation", "confirm", "difference", "strata_fields",
           "summary_line", "checked_phrase"]

SAMPLE_GROUPS = 3
"""Groups recomputed per class of stale runs (same tier, same recorded code) at least, by
default, where they fit the CPU-hours: the strata's groups first, then groups drawn at
random."""

SAMPLE_CPU_HOURS = 0.5
"""CPU-hours (as the runs recorded them) the groups of a class may cost by default; the
strata whose cheapest group does not fit are left stale (the cheapest stratum is always
checked)."""

STRATA: dict[str, tuple[str, ...]] = {
    "dpditto": ("method", "panel"),
    "frontier": ("method", "dataset", "unit"),
    "hu2020-har": ("dual", "xi", "features"),
    "padpfl": ("scenario",),
    "pfa-heterogeneous": ("aggregator", "model", "dataset", "projection", "calibration",
                          "device"),
    "pfa-tuning": ("aggregator", "model", "dataset", "projection", "calibration"),
    "ppsgd-emnist-cnn": ("model", "device", "source"),
    "ppsgd-emnist-linear": ("model", "device", "source"),
    "ppsgd-synthetic": ("instance", "device"),
}
"""Per experiment (a sweep's name), the config fields whose values choose the code a run
takes: the method or aggregator, the model, the dataset or panel, the unit of privacy, the
device, a paper's variant of an update. The values of the other fields (a step size, a
noise level, a seed) go through the same code. An experiment not named here is
stratified by its config's text fields of few values (:func:`strata_fields`)."""

MAX_STRATUM_VALUES = 12
"""A text field of an experiment not in :data:`STRATA` chooses code paths when it takes
from 2 to this many values among the stale runs (more: a name or a label, not a path)."""


@dataclass(frozen=True)
class Confirmation:
    """What :func:`confirm` did for one experiment."""

    stale: int
    """Published runs that were stale before (runs whose recorded config does not give
    their key are damaged, not stale, and left alone)."""
    confirmed: int
    """Of those, runs entered again under their current keys."""
    recomputed: list[list[str]]
    """The groups computed again (old keys), every one agreeing with its published runs."""
    cpu_seconds: float
    """CPU seconds the recomputation took here."""
    strata: int = 0
    """Strata of the classes of stale runs that were sampled (a class of GPU runs where
    torch sees no GPU is not)."""
    checked: int = 0
    """Of those strata, the ones a group was computed again of."""
    compared: tuple[str, ...] = ()
    """How the recomputed tables were compared (one phrase per rule used)."""
    left_stale: dict[str, int] = field(default_factory=dict)
    """Runs left as they were (stale, or damaged), how many per reason in a phrase."""


def strata_fields(experiment: str, configs: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The config fields whose values choose the code paths of ``experiment``'s runs
    (``configs``): those :data:`STRATA` declares that the configs hold; for an experiment it
    does not declare, every field whose values are text and take from 2 to
    :data:`MAX_STRATUM_VALUES` values (a seed field never)."""
    held = set().union(*(config.keys() for config in configs)) if configs else set()
    declared = STRATA.get(experiment)
    if declared is not None:
        return tuple(name for name in declared if name in held)
    chosen = []
    for name in sorted(held - set(published.SEED_FIELDS)):
        values = [config.get(name) for config in configs]  # None: a config without it
        if (all(value is None or isinstance(value, str) for value in values)
                and any(isinstance(value, str) for value in values)
                and 2 <= len(set(values)) <= MAX_STRATUM_VALUES):
            chosen.append(name)
    return tuple(chosen)


Stratum = tuple[str, ...]
"""A stratum: the canonical JSON of the value of each strata field (``absent`` where a
config lacks it)."""

_ABSENT = "absent"


def _stratum(config: Mapping[str, Any], fields: Sequence[str]) -> Stratum:
    return tuple(published.canonical_json(config[name]) if name in config else _ABSENT
                 for name in fields)


def stratum_label(stratum: Stratum, fields: Sequence[str]) -> str:
    """A stratum in words: ``method="pfa", dataset="mnist"`` (``all runs`` when the runs
    have no field that chooses code paths)."""
    if not fields:
        return "all runs alike"
    return ", ".join(f"{name} {value}" if value == _ABSENT else f"{name}={value}"
                     for name, value in zip(fields, stratum, strict=True))


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


def _cover(candidates: list[list[str]], strata_of: Callable[[list[str]], set[Stratum]],
           cost: Callable[[list[str]], float], cpu_seconds: float
           ) -> tuple[list[list[str]], set[Stratum]]:
    """The groups that check the strata of ``candidates``: per stratum, cheapest first, its
    cheapest group, unless a group chosen already holds a run of it or the group would take
    the sum of their recorded costs past ``cpu_seconds`` (the cheapest stratum's group is
    always chosen); and the strata they check."""
    cheapest: dict[Stratum, list[str]] = {}
    for group in sorted(candidates):
        for stratum in strata_of(group):
            if stratum not in cheapest or cost(group) < cost(cheapest[stratum]):
                cheapest[stratum] = group
    chosen: list[list[str]] = []
    covered: set[Stratum] = set()
    spent = 0.0
    for stratum in sorted(cheapest, key=lambda s: (cost(cheapest[s]), s)):
        if stratum in covered:
            continue
        group = cheapest[stratum]
        if chosen and spent + cost(group) > cpu_seconds:
            continue
        chosen.append(group)
        covered |= strata_of(group)
        spent += cost(group)
    return chosen, covered


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


EXACTLY = "exactly (recorded on this kind of machine: digest against digest)"
ANOTHER_MACHINE = (f"within the tolerance for another machine (each number within "
                   f"{SPREAD_FACTOR:g} seed-to-seed standard deviations of its column, and "
                   "rounding)")
"""The phrases that say how a recomputed table was compared with the published one."""


def _within_rtol(rtol: float) -> str:
    return (f"to a relative {rtol:g} in float values (recorded on this kind of machine)")


def _compared(key: str, computed: pd.DataFrame, published_rows: pd.DataFrame,
              runs: dict[str, dict[str, Any]], store: published.PublishedStore, rtol: float
              ) -> tuple[str, str | None]:
    """How run ``key`` computed again was compared with its published rows, and how it
    differs (None when it agrees): on the kind of machine it was recorded on, exactly (or
    within ``rtol``); else within the tolerance for another machine
    (:func:`fedlib.runs.machine.compare_runs`, reading the spread of its published runs of
    the same setting at other seeds)."""
    if same_machine(runs[key].get("machine")):
        how = EXACTLY if rtol == 0 else _within_rtol(rtol)
        return how, difference(published_rows, computed, rtol)
    siblings, _ = store.find(published.seed_siblings(runs, key))
    comparison = compare_runs(computed, published_rows, same_kind=False,
                              spread=seed_spread(list(siblings.values())))
    return ANOTHER_MACHINE, "; ".join(comparison.differences) or None


def _runner(experiment: str, key: str, entry: dict[str, Any], store: published.PublishedStore
            ) -> Callable[[list[dict[str, Any]]], list[pd.DataFrame]]:
    """The function that computed run ``key`` (``entry``'s module and runner), or a
    :class:`ConfirmationError` naming the manifest, the run, the field and what to do when
    it can no longer be had."""
    module, name = entry["module"], entry["runner"]
    where = f"{paths.shown(store.manifest_path)}: runs.{key}"
    advice = ("its runs cannot be computed again to confirm them; compute them with "
              f"this checkout's code and export them (make publish), then remove the stale "
              f"ones (python -m fedlib.runs prune {experiment})")
    if module == "__main__" or not name:
        raise ConfirmationError(
            f"{where}.{'module' if module == '__main__' else 'runner'} names no importable "
            f"function (module {module!r}, runner {name!r}: computed from a script): "
            + advice)
    try:
        found = importlib.import_module(module)
    except ImportError as error:
        raise ConfirmationError(f"{where}.module {module!r} cannot be imported ({error}): "
                                "it was renamed or removed since the runs were computed; "
                                + advice) from None
    runner = getattr(found, name, None)
    if not callable(runner):
        raise ConfirmationError(f"{where}.runner {name!r}: module {module} has no function "
                                f"{name!r} (renamed or removed since the runs were "
                                "computed); " + advice)
    return runner


def _recomputed(experiment: str, group: list[str], runs: dict[str, dict[str, Any]],
                store: published.PublishedStore, rtol: float,
                runner: Callable[[list[dict[str, Any]]], list[pd.DataFrame]]
                ) -> tuple[set[str], dict[str, str]]:
    """Compute ``group`` again with this checkout's code; how its tables were compared
    with their published rows (as the store keeps them), and how each that differs
    differs."""
    first = runs[group[0]]
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
    how_compared: set[str] = set()
    found = {}
    for key, table in zip(group, tables, strict=True):
        stored = pa.Table.from_pandas(table, preserve_index=False).to_pandas()
        kept = kept_rows(experiment, stored, runs[key]["config"], runs[key]["tier"])
        how, differs = _compared(key, kept.reset_index(drop=True), rows[key], runs, store,
                                 rtol)
        how_compared.add(how)
        if differs is not None:
            found[key] = f"{differs}, compared {how}"
    return how_compared, found


def _gpu_here() -> bool:
    """Whether torch sees a CUDA device here (runs made on one are checked only there)."""
    import torch

    return torch.cuda.is_available()


@dataclass
class _Class:
    """The stale runs of one tier and recorded code (GPU runs apart): its groups, the
    fields that choose its code paths, and the strata they form."""

    tier: str
    fingerprint: str
    on_gpu: bool
    groups: list[list[str]] = field(default_factory=list)
    fields: tuple[str, ...] = ()
    strata: dict[str, Stratum] = field(default_factory=dict)
    """Per run key, its stratum."""

    def strata_of(self, group: list[str]) -> set[Stratum]:
        return {self.strata[key] for key in group}


def _classes(experiment: str, runs: dict[str, dict[str, Any]], stale: set[str]
             ) -> dict[tuple[str, str, str, bool], _Class]:
    """The stale groups of ``runs`` sorted into classes (tier, recorded code, module, GPU)."""
    classes: dict[tuple[str, str, str, bool], _Class] = {}
    for key in sorted(stale):
        entry = runs[key]
        group = entry["group"]
        if group[0] != key or not all(member in stale for member in group):
            continue  # a group is listed once (by its first run), whole
        if any(run_key(runs[m]["config"], runs[m]["module"]) in runs for m in group):
            continue  # computed again and published already: prune removes the old ones
        on_gpu = any(runs[member]["config"].get("device") == "cuda" for member in group)
        label = (entry["tier"], entry["code_fingerprint"], entry["module"], on_gpu)
        classes.setdefault(label, _Class(entry["tier"], entry["code_fingerprint"], on_gpu)
                           ).groups.append(group)
    for found in classes.values():
        members = [key for group in found.groups for key in group]
        found.fields = strata_fields(experiment, [runs[key]["config"] for key in members])
        found.strata = {key: _stratum(runs[key]["config"], found.fields) for key in members}
    return classes


def _listed(labels: Iterable[str], limit: int = 4) -> str:
    labels = sorted(labels)
    shown = "; ".join(labels[:limit])
    return shown + (f"; and {len(labels) - limit} more" if len(labels) > limit else "")


def confirm(experiment: str, *, groups: int = SAMPLE_GROUPS,
            cpu_hours: float = SAMPLE_CPU_HOURS, rtol: float = 0.0, root: Path | None = None,
            log: Callable[[str], None] = print) -> Confirmation:
    """Check the stale published runs of ``experiment`` against this checkout's code,
    stratum by stratum, and enter the stale runs of the strata checked again under their
    current keys (see the module's text).

    A class is the stale runs of one tier computed with one version of the code (one
    recorded fingerprint, the runs computed on a GPU apart from the others; a class of GPU
    runs is left stale, and said so, where torch sees none). In each class the cheapest
    group of every stratum (:func:`strata_fields`) is computed again, cheapest stratum
    first, while the groups' recorded costs stay within ``cpu_hours`` (the strata past it
    are left stale and named); then groups drawn at random up to ``groups`` in all, within
    the same cost. A table recorded on this kind of machine must be identical to the
    published one (with ``rtol`` 0) or agree within ``rtol`` in float values; one recorded
    on another machine must agree within the tolerance for another machine. Raises
    :class:`ConfirmationError` naming the first run whose table differs, and its stratum
    (nothing is written then), or a runner that no longer exists;
    :class:`fedlib.runs.errors.StoreBusyError` when another command holds the store.
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
    with store.holding(wait=False, command=f"confirm of {experiment}"):
        return _confirm(experiment, store, groups, cpu_hours, rtol, log)


def _confirm(experiment: str, store: published.PublishedStore, groups: int,
             cpu_hours: float, rtol: float, log: Callable[[str], None]) -> Confirmation:
    """:func:`confirm`, under the experiment's lock."""
    runs = store.runs()
    edited = {key for key, entry in runs.items() if published.config_edited(key, entry)}
    stale = {key for key, entry in runs.items()
             if not published.is_current(key, entry) and key not in edited}
    left: dict[str, int] = {}
    if edited:
        left["damaged: the config recorded does not give the run's key (restore the "
             f"manifest from git: git checkout -- {paths.shown(store.manifest_path)})"] = \
            len(edited)
        log(f"{experiment}: {len(edited)} runs left alone: the config the manifest records "
            "for them does not give their key with the code they record (the manifest was "
            "edited after the export); they are damaged, not stale: restore the manifest "
            f"from git (git checkout -- {paths.shown(store.manifest_path)})")
    damaged = {key: why for key, why in store.damaged().items() if key in stale}
    if damaged:
        raise ConfirmationError(f"{len(damaged)} stale published runs of {experiment} are "
                                f"damaged ({'; '.join(sorted(set(damaged.values())))}): "
                                "restore them from git before confirming; nothing was "
                                "computed or written")
    classes = _classes(experiment, runs, stale)

    def cost(group: list[str]) -> float:
        return sum(runs[key].get("cpu_seconds") or 0.0 for key in group)

    plans: list[tuple[_Class, list[list[str]], set[Stratum]]] = []
    runners = {}
    for label, found in sorted(classes.items()):
        count = sum(map(len, found.groups))
        if found.on_gpu and not _gpu_here():
            log(f"{experiment}: {count} stale {found.tier}-tier runs left stale: they were "
                "computed on a GPU (config device = 'cuda'), which torch does not see here; "
                "confirm them on a machine with a CUDA device")
            left["computed on a GPU, which torch does not see here"] = \
                left.get("computed on a GPU, which torch does not see here", 0) + count
            continue
        module = label[2]
        if module not in runners:
            first = found.groups[0][0]
            runners[module] = _runner(experiment, first, runs[first], store)
        budget = cpu_hours * 3600
        chosen, covered = _cover(found.groups, found.strata_of, cost, budget)
        spent = sum(map(cost, chosen))
        others = [group for group in found.groups if group not in chosen]
        if len(chosen) < groups and others:
            extra = _sample(others, cost, f"{experiment}/{found.tier}/{found.fingerprint}",
                            groups - len(chosen), budget - spent)
            if sum(map(cost, extra)) > budget - spent:
                extra = []  # none fits (the sample's fallback, its cheapest group)
            chosen += extra
            for group in extra:
                covered |= found.strata_of(group)
        every = set(found.strata.values())
        unchecked = every - covered
        if unchecked:
            runs_left = [key for key in found.strata if found.strata[key] in unchecked]
            need = spent + sum(min(cost(g) for g in found.groups
                                   if stratum in found.strata_of(g)) for stratum in unchecked)
            log(f"{experiment}: {len(runs_left)} stale {found.tier}-tier runs of "
                f"{len(unchecked)} of the {len(every)} strata left stale: their cheapest "
                f"groups do not fit --cpu-hours {cpu_hours:g} as recorded ("
                + _listed(stratum_label(s, found.fields) for s in unchecked)
                + f"); --cpu-hours {math.ceil(need / 36) / 100:.2f} checks them all")
        plans.append((found, chosen, covered))

    recomputed: list[list[str]] = []
    spent_here = 0.0
    compared: list[set[str]] = [set() for _ in plans]
    for index, (found, chosen, _covered) in enumerate(plans):
        for group in chosen:
            strata = _listed(stratum_label(s, found.fields) for s in found.strata_of(group))
            log(f"{experiment}: computing again group {group[0]} ({found.tier}, "
                f"{len(group)} runs, {cost(group) / 60:.1f} CPU-minutes as recorded; "
                f"stratum {strata})")
            start = time.process_time()
            how, differing = _recomputed(experiment, group, runs, store, rtol,
                                         runners[runs[group[0]]["module"]])
            spent_here += time.process_time() - start
            if differing:
                key, difference_ = next(iter(differing.items()))
                raise ConfirmationError(
                    f"run {key} of {experiment} ({found.tier} tier, stratum "
                    f"{stratum_label(found.strata[key], found.fields)}) computed with this "
                    f"checkout's code gives {difference_}: the change alters results, so its "
                    "runs are computed again (make publish); nothing was written")
            log(f"{experiment}: group {group[0]} agrees, compared {' and '.join(sorted(how))}")
            compared[index] |= how
            recomputed.append(group)

    renames: dict[str, str] = {}
    notes: dict[str, str] = {}
    strata_total = checked_total = 0
    commit = published.commit_description()[:12]
    for (found, chosen, covered), how_compared in zip(plans, compared, strict=True):
        every = set(found.strata.values())
        strata_total += len(every)
        checked_total += len(covered)
        how = " and ".join(sorted(how_compared))
        for group in found.groups:
            if not found.strata_of(group) <= covered:
                left[f"strata not checked within --cpu-hours {cpu_hours:g}"] = left.get(
                    f"strata not checked within --cpu-hours {cpu_hours:g}", 0) + len(group)
                continue
            for key in group:
                module = runs[key]["module"]
                renames[key] = run_key(runs[key]["config"], module)
                notes[key] = (
                    f"{time.strftime('%Y-%m-%d')}: "
                    f"{published.strata_checked(len(covered), len(every))} (its stratum: "
                    f"{stratum_label(found.strata[key], found.fields)}; {len(chosen)} groups "
                    f"in all) with code {code_fingerprint(module)[:12]} (commit {commit}), "
                    f"compared {how}")
    if renames:
        store.carry_over(renames, notes)
    return Confirmation(len(stale), len(renames), recomputed, spent_here, strata_total,
                        checked_total, tuple(sorted(set().union(*compared))),
                        left)


def summary_line(done: Confirmation) -> str:
    """What a confirmation did, in one line (the command line prints it)."""
    if not done.stale:
        line = "no stale runs to confirm"
    else:
        line = (f"{done.confirmed} of {done.stale} stale runs confirmed and entered under "
                f"their current keys, checked by computing {done.checked} of their "
                f"{done.strata} strata again ({len(done.recomputed)} groups, "
                f"{done.cpu_seconds / 60:.1f} CPU-minutes)")
        if done.compared:
            line += f", compared {' and '.join(done.compared)}"
    for why, count in sorted(done.left_stale.items()):
        line += f"; {count} left: {why}"
    return line
