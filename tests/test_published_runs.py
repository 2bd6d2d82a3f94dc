"""The project's published runs are what its code computes today: for every published
experiment, the cheapest group of current runs is computed again (one of its runs on its
own, where a run's result does not depend on the runs it is batched with) and compared
with what is published, and a store whose runs are all stale fails, naming what
changed."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
import torch

from fedlib import paths
from fedlib.data.errors import DatasetUnavailableError
from fedlib.published import PublishedStore, config_of, status_table
from fedlib.sweeps import run_key

BATCH_DEPENDENT = {
    "pfa-heterogeneous": "the aggregators of a setting draw their noise from one stream, "
                         "so a run's noise depends on the aggregators trained with it",
}
"""Experiments whose runs are computed again as the whole group they were published in."""

EXPERIMENTS = sorted(p.name for p in paths.published_dir().glob("*")
                     if (p / "manifest.json").is_file())


def _cheapest_current_group(store: PublishedStore) -> list[str]:
    runs = store.runs()
    groups = {tuple(entry["group"]) for entry in runs.values()}
    current = [g for g in groups
               if all(k in runs and run_key(runs[k]["config"], runs[k]["module"]) == k
                      for k in g)]
    if not current:
        return []
    return list(min(current, key=lambda g: (sum(runs[k]["cpu_seconds"] or 0 for k in g), g)))


def _assert_same_run(computed: pd.DataFrame, published: pd.DataFrame, key: str) -> None:
    assert list(computed.columns) == list(published.columns), key
    for column in computed.columns:
        if pd.api.types.is_float_dtype(computed[column]):
            # Float32 training on another machine may round differently in the last bits;
            # accuracies over 10,000 test examples move in steps of 1e-4.
            np.testing.assert_allclose(computed[column].to_numpy(), published[column].to_numpy(),
                                       rtol=1e-4, atol=5e-4, equal_nan=True,
                                       err_msg=f"run {key}, column {column}")
        else:
            assert computed[column].tolist() == published[column].tolist(), (key, column)


@pytest.mark.slow
@pytest.mark.skipif(not EXPERIMENTS, reason="nothing is published in this checkout")
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_a_run_of_the_cheapest_published_group_is_computed_again_equal(experiment: str
                                                                      ) -> None:
    store = PublishedStore(experiment)
    group = _cheapest_current_group(store)
    if not group:
        status = status_table()
        row = status[status["experiment"] == experiment]
        pytest.fail(f"every published run of {experiment} is stale (changed since: "
                    f"{', '.join(row['changed since'])}): compute them again and export "
                    "them (python -m fedlib.published export), or remove them")
    runs = store.runs()
    first = runs[group[0]]
    runner = getattr(importlib.import_module(first["module"]), first["runner"])
    threads = torch.get_num_threads()
    torch.set_num_threads(first.get("torch_threads") or threads)
    try:
        if experiment not in BATCH_DEPENDENT:
            group = group[:1]
        tables = runner([config_of(runs[k]) for k in group])
    except DatasetUnavailableError as error:
        pytest.skip(f"the data of {experiment} is not available offline: {error}")
    finally:
        torch.set_num_threads(threads)
    for key, table in zip(group, tables, strict=True):
        _assert_same_run(table.reset_index(drop=True), store.load(key), key)
