"""Each method's learning rate chosen from the paper's grid on validation data: the choice
on constructed tables, the held-out validation examples and the runs the setting plans."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedlib.data.holdout import unheld_rows
from fedlib.papers.pfa import experiment as pfa
from fedlib.papers.pfa.claims import evaluate
from fedlib.papers.pfa.paper_tier import PAPER_GRID
from fedlib.papers.pfa.readouts import chosen_rates, final_validation, lr_grid_table


def _validation(values: dict[tuple[str, str], dict[float, list[float]]]) -> pd.DataFrame:
    rows = [{"aggregator": a, "projection": p, "lr": lr, "seed": seed, "val_accuracy": v}
            for (a, p), grid in values.items() for lr, per_seed in grid.items()
            for seed, v in enumerate(per_seed)]
    return pd.DataFrame(rows)


def test_each_method_gets_the_rate_with_the_best_mean_validation_accuracy() -> None:
    table = _validation({
        ("fedavg", "public"): {0.1: [0.2, 0.3, 0.1], 0.01: [0.5, 0.4, 0.6]},
        ("weiavg", "public"): {0.1: [0.8, 0.7, 0.9], 0.01: [0.6, 0.95, 0.6]},
        # One seed is best at 0.01, but the mean over seeds is best at 0.1.
        ("pfa", "public-text"): {0.1: [0.7, 0.7, 0.7], 0.01: [0.9, 0.5, 0.5]},
    })
    chosen = chosen_rates(table).set_index(["aggregator", "projection"])
    assert chosen.loc[("fedavg", "public"), "lr"] == 0.01
    assert chosen.loc[("weiavg", "public"), "lr"] == 0.1
    assert chosen.loc[("pfa", "public-text"), "lr"] == 0.1
    np.testing.assert_allclose(chosen.loc[("fedavg", "public"), "val_accuracy"], 0.5)
    assert set(chosen["rates"]) == {2}
    assert chosen.loc[("pfa", "public-text"), "method"] == "PFA as written (Alg. 3)"


def test_ties_go_to_the_larger_rate_and_diverged_runs_lose() -> None:
    table = _validation({
        ("fedavg", "public"): {0.1: [0.5, 0.5], 0.05: [0.5, 0.5], 0.01: [0.4, 0.4]},
        ("np-fedavg", "public"): {0.1: [np.nan, np.nan], 0.05: [0.3, 0.2],
                                  0.01: [0.1, 0.1]},
    })
    chosen = chosen_rates(table).set_index("aggregator")["lr"]
    assert chosen["fedavg"] == 0.1
    assert chosen["np-fedavg"] == 0.05


def test_methods_must_share_the_grid() -> None:
    table = _validation({("fedavg", "public"): {0.1: [0.5], 0.01: [0.4]},
                         ("weiavg", "public"): {0.1: [0.6]}})
    with pytest.raises(ValueError, match="same learning rates"):
        chosen_rates(table)
    assert chosen_rates(table.iloc[:0]).empty


def test_validation_examples_are_held_by_no_client() -> None:
    labels = np.repeat(np.arange(10), 30)
    idx = pfa.client_indices(labels, 4, "iid", seed=3, per_client=40)
    val = pfa.validation_indices(len(labels), idx, 50)
    assert len(val) == 50 and len(set(val)) == 50 and np.all(np.diff(val) > 0)
    assert not set(val) & set(idx.ravel())
    np.testing.assert_array_equal(val, pfa.validation_indices(len(labels), idx, 50))
    with pytest.raises(ValueError, match="held by no client"):
        pfa.validation_indices(len(labels), idx, 141)


def test_validation_examples_are_the_shared_held_out_draw_in_index_order() -> None:
    """PFA's validation set is the draw of :func:`fedlib.data.holdout.unheld_rows` (which
    PADPFL's validation images use), sorted: the two cannot drift apart."""
    labels = np.repeat(np.arange(10), 300)
    idx = pfa.client_indices(labels, 5, "iid", seed=1, per_client=400)
    np.testing.assert_array_equal(
        pfa.validation_indices(len(labels), idx, 700),
        np.sort(unheld_rows(len(labels), idx, 700,
                            np.random.default_rng(pfa.VALIDATION_SEED))))


def test_the_quick_tier_tries_every_rate_of_the_paper_grid_for_every_method() -> None:
    setup = PAPER_GRID.tier("quick")
    planned = pfa.configs(setup, 0, figures=("lr",))
    assert setup.lr_grid == pfa.PAPER_LR_GRID
    per_method: dict[tuple[str, str], set[float]] = {}
    for c in planned:
        per_method.setdefault((c["aggregator"], c["projection"]), set()).add(c["lr"])
        assert c["n_validation"] == setup.n_validation
        assert (c["dataset"], c["model"], c["distribution"]) == ("mnist", "logr", "mixgauss1")
    assert set(per_method) == {(a, "public") for a in pfa.LR_AGGREGATORS} | {
        ("pfa", "public-text")}
    assert all(rates == set(pfa.PAPER_LR_GRID) for rates in per_method.values())
    assert {c["seed"] for c in planned} == {0, 1, 2}
    with pytest.raises(ValueError, match="n_validation"):
        pfa.tier("quick", n_validation=0)


def test_text_projection_runs_beside_the_code_under_the_accountant_only() -> None:
    setup = pfa.tier("quick")
    authors = pfa.configs(setup, 0, figures=("authors",))
    text = [c for c in authors if c["projection"] in ("public-text", "random-text")]
    assert text and {c["calibration"] for c in text} == {"rdp"}
    fig3 = pfa.configs(setup, 0, figures=("fig3",))
    assert {c["projection"] for c in fig3} == {"public", "public-text"}
    fig6 = pfa.configs(setup, 0, figures=("fig6",))
    for projection in ("public-text", "random-text"):
        assert {c["k"] for c in fig6 if c["projection"] == projection} == set(setup.k_grid)


def test_tuned_ordering_reads_each_method_at_its_chosen_rate() -> None:
    """On constructed runs: PFA and PFA+ ahead only at their own best rate, which the
    validation accuracy picks; the claim then holds."""
    rows = []
    rng = np.random.default_rng(0)
    best = {"pfa": 0.05, "pfa+": 0.05, "weiavg": 0.1, "fedavg": 0.01, "minimum": 0.01}
    level = {"pfa": 0.85, "pfa+": 0.84, "weiavg": 0.7, "fedavg": 0.5, "minimum": 0.45}
    for aggregator in pfa.LR_AGGREGATORS:
        for lr in (0.1, 0.05, 0.01):
            for seed in range(4):
                top = level.get(aggregator, 0.9)
                acc = top if lr == best.get(aggregator, 0.1) else top - 0.3
                acc += rng.normal(0, 0.005)
                for r in (28, 30):
                    rows.append({"run_key": f"{aggregator}{lr}{seed}", "figure": "lr",
                                 "dataset": "mnist", "model": "logr", "partition": "iid",
                                 "distribution": "mixgauss1", "calibration": "rdp",
                                 "aggregator": aggregator, "k": 1, "projection": "public",
                                 "lr": lr, "seed": seed, "rounds": 30, "local_steps": 20,
                                 "round": r, "accuracy": acc, "val_accuracy": acc + 0.01})
    runs = pd.DataFrame(rows)
    validation = final_validation(runs)
    chosen = chosen_rates(validation).set_index("aggregator")["lr"]
    for aggregator, lr in best.items():
        assert chosen[aggregator] == lr
    claims = {c.claim_id: c for c in evaluate(runs, "quick", 1,
                                              {f: "absent" for f in pfa.FIGURES if f != "lr"})}
    assert claims["fig3-ordering-tuned-lr"].status == "HOLDS"
    table = lr_grid_table(
        runs.groupby(["figure", "aggregator", "projection", "lr", "seed"], as_index=False)[
            "accuracy"].mean(), validation)
    assert table.loc["PFA", "chosen rate"] == 0.05
