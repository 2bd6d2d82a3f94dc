"""The project's published runs are what its code computes today: for every chapter,
the cheapest of its published runs is computed again on its own (a run's result does not
depend on the runs batched with it) and compared with what is published (on the rows a
published run keeps, :mod:`fedlib.published_rows`); an experiment
whose published runs are all stale fails, naming what changed."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
import torch

from fedlib.data.errors import DatasetUnavailableError
from fedlib.published import (
    PublishedStore,
    config_of,
    is_current,
    published_experiments,
    status_table,
)
from fedlib.published_rows import kept_rows
from fedlib.sweeps import machine_description

EXPERIMENTS = published_experiments()


def _chapter(store: PublishedStore) -> str:
    """The chapter (paper id) whose runner computed the experiment's runs."""
    modules = {entry["module"] for entry in store.runs().values()}
    parts = min(modules).split(".")
    return parts[2] if parts[:2] == ["fedlib", "papers"] and len(parts) > 2 else min(modules)


CHAPTERS: dict[str, list[str]] = {}
for _name in EXPERIMENTS:
    CHAPTERS.setdefault(_chapter(PublishedStore(_name)), []).append(_name)


def _cheapest_current_runs(experiments: list[str]) -> tuple[str, list[str]] | None:
    """Of these experiments' current groups, the one whose first run (computed again on
    its own) took the least CPU time: (experiment, [run key]); None when no run is current."""
    best = None
    for experiment in experiments:
        runs = PublishedStore(experiment).runs()
        for group in {tuple(entry["group"]) for entry in runs.values()}:
            if not all(k in runs and is_current(k, runs[k])
                       for k in group):
                continue
            keys = list(group[:1])
            cost = (sum(runs[k]["cpu_seconds"] or 0 for k in keys), experiment, keys)
            best = min(best, cost) if best else cost
    return (best[1], best[2]) if best else None


def _number_lists(column: pd.Series) -> list[list[float]] | None:
    """The values of a text column as lists of numbers ("" is an empty list), or None
    when some value is not a comma-separated list of numbers."""
    try:
        return [[float(x) for x in str(v).split(",")] if v != "" else [] for v in column]
    except ValueError:
        return None


SAME_MACHINE = {"rtol": 1e-4, "atol": 5e-4}
"""Float tolerance when the run is computed again on the kind of machine that published it:
float32 training may round differently in the last bits; accuracies over 10,000 test
examples move in steps of 1e-4."""
OTHER_MACHINE = {"rtol": 1e-4, "atol": 1e-2}
"""Float tolerance on another processor, whose kernels add in another order: over PFA's
100 rounds of 100 float32 SGD steps the rounding grows to accuracy differences of 0.004
(measured: a run published on an Intel Xeon, computed again on an AMD EPYC). A change of
the algorithm moves results by more than this; a change of the last digits needs the
same machine to be seen."""


def _tolerance(entry: dict) -> dict[str, float]:
    return SAME_MACHINE if entry.get("machine") == machine_description() else OTHER_MACHINE


def _assert_same_run(computed: pd.DataFrame, published: pd.DataFrame, key: str,
                     tolerance: dict[str, float]) -> None:
    assert list(computed.columns) == list(published.columns), key
    for column in computed.columns:
        if pd.api.types.is_float_dtype(computed[column]):
            np.testing.assert_allclose(computed[column].to_numpy(), published[column].to_numpy(),
                                       **tolerance, equal_nan=True,
                                       err_msg=f"run {key}, column {column}")
        elif (numbers := _number_lists(computed[column])) is not None and (
                other := _number_lists(published[column])) is not None:
            # Text columns of numbers (PFA's spectra, "44.5432,42.7465"): compared as
            # numbers, with the same tolerance.
            assert [len(v) for v in numbers] == [len(v) for v in other], (key, column)
            np.testing.assert_allclose(np.concatenate([[], *numbers]),
                                       np.concatenate([[], *other]), **tolerance,
                                       err_msg=f"run {key}, column {column}")
        else:
            assert computed[column].tolist() == published[column].tolist(), (key, column)


@pytest.mark.skipif(not EXPERIMENTS, reason="nothing is published in this checkout")
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_published_experiment_has_current_runs(experiment: str) -> None:
    if _cheapest_current_runs([experiment]) is None:
        status = status_table()
        row = status[status["experiment"] == experiment]
        pytest.fail(f"every published run of {experiment} is stale (changed since: "
                    f"{', '.join(row['changed since'])}): compute them again and export "
                    "them (python -m fedlib.published export), or remove them")


@pytest.mark.slow
@pytest.mark.skipif(not EXPERIMENTS, reason="nothing is published in this checkout")
@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_the_cheapest_published_runs_of_each_chapter_are_computed_again_equal(chapter: str
                                                                            ) -> None:
    found = _cheapest_current_runs(CHAPTERS[chapter])
    if found is None:
        pytest.fail(f"every published run of the {chapter} chapter is stale; see "
                    "test_every_published_experiment_has_current_runs")
    experiment, keys = found
    store = PublishedStore(experiment)
    runs = store.runs()
    first = runs[keys[0]]
    runner = getattr(importlib.import_module(first["module"]), first["runner"])
    threads = torch.get_num_threads()
    torch.set_num_threads(first.get("torch_threads") or threads)
    try:
        tables = runner([config_of(runs[k]) for k in keys])
    except DatasetUnavailableError as error:
        pytest.skip(f"the data of {experiment} is not available offline: {error}")
    finally:
        torch.set_num_threads(threads)
    for key, table in zip(keys, tables, strict=True):
        # A published run keeps the rows its experiment's rule keeps: compared on those.
        kept = kept_rows(experiment, table.reset_index(drop=True), runs[key]["config"],
                         runs[key]["tier"])
        assert len(kept) == runs[key]["rows"], key
        _assert_same_run(kept, store.load(key), key, _tolerance(runs[key]))
