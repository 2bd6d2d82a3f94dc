"""The tuning step (fedlib.runs.tuning): choices read validation scores only, the search
covers the paper's grid and then the choice's neighbours, and an optimum on an edge the
grid's extensions cannot close is reported as such."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fedlib.runs.tuning import Axis, TuningBudget, choose_one, next_points, open_edges

LR = Axis("lr", (0.1, 0.05, 0.025, 0.01), factor=2.0, max_extensions=2)
K = Axis("k", (1, 2, 5, 10), factor=2.0, lowest=1, max_extensions=1)


def table(points: list[dict], score) -> pd.DataFrame:
    """Tuning runs at ``points`` (one seed) scored by ``score(point)``; the test column
    holds the opposite ranking, so a choice that read it would be wrong."""
    rows = [{**p, "seed": 0, "val_accuracy": score(p), "accuracy": -score(p)} for p in points]
    return pd.DataFrame(rows)


def search(axes, score, start) -> tuple[pd.DataFrame, int]:
    """Run :func:`next_points` to its end on a closed-form score; the steps taken."""
    runs = pd.DataFrame()
    for step in range(30):
        points = next_points(runs, axes, start)
        if not points:
            return runs, step
        runs = pd.concat([runs, table(points, score)], ignore_index=True)
    raise AssertionError("the search did not end")


def test_the_choice_reads_the_validation_column_only():
    runs = table([{"lr": v} for v in LR.values], lambda p: -abs(math.log(p["lr"] / 0.025)))
    chosen = choose_one(runs, (LR,))
    assert chosen["lr"] == 0.025  # the test column ranks 0.1 first
    with pytest.raises(ValueError, match="validation data only"):
        choose_one(runs, (LR,), metric="accuracy")


def test_an_interior_optimum_is_found_and_called_interior():
    runs, _ = search((LR,), lambda p: -abs(math.log(p["lr"] / 0.025)), {"lr": 0.1})
    chosen = choose_one(runs, (LR,))
    assert chosen["lr"] == 0.025 and chosen["lr_edge"] == ""
    assert chosen["lr_position"] == "2nd of 4 (interior)"
    assert len(runs) == 4  # the grid, and no extension: both neighbours were run
    assert open_edges(chosen, (LR,)) == []


def test_an_optimum_on_the_edge_extends_the_grid_until_it_is_interior():
    # The best rate is 0.3, past the grid's top (0.1): the search runs 0.2, then 0.4.
    runs, _ = search((LR,), lambda p: -abs(math.log(p["lr"] / 0.3)), {"lr": 0.1})
    chosen = choose_one(runs, (LR,))
    assert sorted(runs["lr"]) == [0.01, 0.025, 0.05, 0.1, 0.2, 0.4]
    assert chosen["lr"] in (0.2, 0.4)
    assert chosen["lr"] == 0.4 or chosen["lr_edge"] == ""


def test_an_edge_the_extensions_cannot_close_is_open_and_named():
    runs, _ = search((LR,), lambda p: p["lr"], {"lr": 0.1})  # always larger is better
    chosen = choose_one(runs, (LR,))
    assert chosen["lr"] == 0.4 and chosen["lr_edge"] == "open"
    assert "high edge, open" in chosen["lr_position"]
    assert open_edges(chosen, (LR,)) == ["lr"]


def test_an_optimum_at_a_bound_of_the_hyperparameter_is_one():
    runs, _ = search((K,), lambda p: -p["k"], {"k": 1})
    chosen = choose_one(runs, (K,))
    assert chosen["k"] == 1 and chosen["k_edge"] == "bound"
    assert chosen["k_position"] == "1st of 4 (at the bound k >= 1)"
    assert open_edges(chosen, (K,)) == []


def test_a_joint_search_covers_each_grid_then_the_neighbours_of_the_choice():
    def score(p):
        return -abs(math.log(p["lr"] / 0.05)) - abs(math.log(p["k"] / 5)) - 0.3 * (p["k"] > 5)
    runs, _ = search((LR, K), score, {"lr": 0.1, "k": 1})
    chosen = choose_one(runs, (LR, K))
    assert (chosen["lr"], chosen["k"]) == (0.05, 5)
    assert chosen["lr_edge"] == "" and chosen["k_edge"] == ""
    # Every run is on the lr line at k = 1, or on a line through the choice.
    assert all(r["k"] == 1 or r["lr"] == 0.05 or r["k"] == 5 for _, r in runs.iterrows())


def test_a_diverged_run_never_wins():
    runs = table([{"lr": v} for v in LR.values], lambda p: math.nan if p["lr"] == 0.1 else
                 -p["lr"])
    assert choose_one(runs, (LR,))["lr"] == 0.01


def test_the_budget_names_its_rounds_and_refuses_nonsense():
    budget = TuningBudget(round_share=0.3, seeds=(100,), n_validation=5000)
    assert budget.rounds(100) == 30 and budget.rounds(3) == 1
    assert "the first 30 of 100 rounds" in budget.describe(100)
    assert "test set is not read" in budget.describe(100)
    for bad in (0, 1.5, math.nan):
        with pytest.raises(ValueError, match="round_share"):
            TuningBudget(round_share=bad, seeds=(1,), n_validation=10)
    with pytest.raises(ValueError, match="seeds"):
        TuningBudget(round_share=0.5, seeds=(), n_validation=10)


def test_an_axis_refuses_a_value_it_does_not_have():
    with pytest.raises(ValueError, match="not a value of the axis"):
        LR.neighbours(0.3)
    assert K.ladder() == [1, 2, 5, 10, 20]
    assert LR.ladder()[:2] == [0.0025, 0.005]


def test_an_extension_that_would_cross_a_bound_lands_on_it_and_stops_there():
    # k's natural top is the largest layer (here 30): past 10 come 20, then 30, not 40.
    capped = Axis("k", (1, 2, 5, 10), factor=2.0, lowest=1, highest=30, max_extensions=4)
    assert capped.ladder() == [1, 2, 5, 10, 20, 30]
    assert capped.beyond(20, "high") == 30 and capped.beyond(30, "high") is None
    assert Axis("lr", (0.4, 0.8), lowest=0.3).beyond(0.4, "low") == 0.3
    runs, _ = search((capped,), lambda p: p["k"], {"k": 1})  # always larger is better
    chosen = choose_one(runs, (capped,))
    assert chosen["k"] == 30 and chosen["k_edge"] == "bound"
    assert chosen["k_position"] == "6th of 6 (at the bound k <= 30)"
    assert open_edges(chosen, (capped,)) == []
