"""The machine description, and the comparison of a run computed again with the published one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedlib.runs import machine
from fedlib.runs.machine import ROUNDING, SPREAD_FACTOR, compare_runs, same_machine, seed_spread


def _run(accuracy: list[float], clients: list[int] | None = None,
         spectrum: list[str] | None = None) -> pd.DataFrame:
    n = len(accuracy)
    return pd.DataFrame({"round": np.arange(n), "accuracy": accuracy,
                         "clients": clients or [3] * n, "spectrum": spectrum or ["1,2"] * n})


def test_seed_spread_is_the_median_of_the_standard_deviations_across_seeds() -> None:
    runs = [_run([0.1, 0.5, 0.9]), _run([0.3, 0.5, 0.7]), _run([0.2, 0.8, 0.8])]
    spread = seed_spread(runs)
    stds = [np.std([0.1, 0.3, 0.2], ddof=1), np.std([0.5, 0.5, 0.8], ddof=1),
            np.std([0.9, 0.7, 0.8], ddof=1)]
    assert spread["accuracy"] == pytest.approx(np.median(stds))
    assert spread["spectrum"] == 0.0  # "1,2" at every seed
    assert "clients" not in spread and "round" not in spread  # integers are exact
    assert seed_spread(runs[:1]) == {}


def test_seed_spread_leaves_out_columns_that_do_not_line_up() -> None:
    runs = [_run([0.1, 0.5]), _run([0.3, 0.5], spectrum=["1,2,3", "1"])]
    assert "spectrum" not in seed_spread(runs)


def test_the_same_machine_holds_numbers_to_rounding() -> None:
    published = _run([0.5, 0.6, 0.7])
    close = _run([0.5, 0.6, 0.7 + ROUNDING["atol"] / 2])
    far = _run([0.5, 0.6, 0.7 + 4 * ROUNDING["atol"]])
    assert compare_runs(close, published, same_kind=True, spread={}).same
    comparison = compare_runs(far, published, same_kind=True, spread={"accuracy": 0.1})
    assert not comparison.same
    assert comparison.differences[0].startswith("accuracy: 1 of 3 values differ")
    assert "same kind of machine" in comparison.rule


def test_another_machine_reads_a_difference_against_the_seed_spread() -> None:
    published = _run([0.5, 0.6, 0.7])
    spread = {"accuracy": 0.01}
    within = _run([0.5, 0.6, 0.7 + 0.9 * SPREAD_FACTOR * 0.01])
    beyond = _run([0.5, 0.6, 0.7 + 1.2 * SPREAD_FACTOR * 0.01])
    assert compare_runs(within, published, same_kind=False, spread=spread).same
    assert not compare_runs(beyond, published, same_kind=False, spread=spread).same
    # With no spread to go by, another machine is held to rounding, never waved through.
    assert not compare_runs(within, published, same_kind=False, spread={}).same


def test_integers_text_and_special_values_are_compared_exactly() -> None:
    published = _run([np.inf, np.nan, 0.7])
    assert compare_runs(_run([np.inf, np.nan, 0.7]), published, same_kind=True,
                        spread={}).same
    assert not compare_runs(_run([np.inf, 0.5, 0.7]), published, same_kind=False,
                            spread={"accuracy": 10.0}).same
    assert not compare_runs(_run([np.inf, np.nan, 0.7], clients=[3, 3, 4]), published,
                            same_kind=False, spread={}).same
    assert not compare_runs(_run([np.inf, np.nan, 0.7], spectrum=["1,2", "1,2", "1"]),
                            published, same_kind=False, spread={}).same
    assert not compare_runs(_run([0.5, 0.6]), _run([0.5, 0.6, 0.7]), same_kind=True,
                            spread={}).same


def test_the_machine_is_described_by_processor_model_and_vector_extensions() -> None:
    described = machine.machine_description()
    assert "extensions" in described and "torch kernels" in described
    assert same_machine(described)
    # A description from before models and extensions were recorded names too little.
    assert not same_machine(described.split(", extensions")[0] + ", 2 logical cores")
    assert not same_machine(None)


def test_processors_that_differ_in_an_extension_are_told_apart(monkeypatch) -> None:
    info = {"model name": "AMD EPYC", "cpu family": "25", "model": "17", "stepping": "1",
            "flags": "fpu sse4_2 avx avx2 fma avx512f"}
    monkeypatch.setattr(machine, "_cpuinfo", lambda: dict(info))
    first = machine.machine_description()
    assert "AMD EPYC (cpu family 25, model 17, stepping 1)" in first
    assert "extensions sse4_2 avx avx2 fma avx512f," in first
    info["flags"] += " avx512_bf16"
    assert machine.machine_description() != first
