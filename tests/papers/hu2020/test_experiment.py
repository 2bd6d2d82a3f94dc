"""Hu et al. 2020 on HAR: tiers, the configs of every stage, folds and the stage decisions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.hu2020 import experiment as hu


def _tasks(sizes=(20, 23, 17)):
    rng = np.random.default_rng(0)
    return tuple((rng.normal(size=(n, 3)), np.where(rng.random(n) < 0.5, -1.0, 1.0))
                 for n in sizes)


def test_cv_folds_partition_each_task() -> None:
    train = _tasks()
    for index, (x, _) in enumerate(train):
        held_rows = []
        for fold in range(5):
            fit, held = hu.cv_split(train, 5, fold, seed=3)
            assert len(fit[index][1]) + len(held[index][1]) == len(x)
            held_rows.append(held[index][0])
        # Every row is held out exactly once over the folds.
        stacked = np.concatenate(held_rows)
        assert len(stacked) == len(x)
        assert {tuple(r) for r in stacked} == {tuple(r) for r in x}


def test_hyperparameters_minimise_the_mean_validation_error() -> None:
    cv = pd.DataFrame({"lam": [0.1, 0.1, 1.0, 1.0], "xi": ["1", "1", "1/m", "1/m"],
                       "error": [0.3, 0.1, 0.15, 0.16]})
    lam, xi, table = hu.choose_hyperparameters(cv)
    assert (lam, xi) == (1.0, "1/m")  # mean 0.155 beats 0.2
    assert hu.xi_value("1/m", 30) == pytest.approx(1 / 30) and hu.xi_value("0.5", 30) == 0.5


def test_best_drop_is_the_private_minimum_of_figure_4() -> None:
    last = pd.DataFrame({
        "figure": ["fig4"] * 8 + ["fig3", "fig3"],
        "p_drop": [0.0, 0.0, 0.2, 0.2, 0.5, 0.5, 0.0, 0.0, 0.9, 0.9],
        # Private means: 0.0 -> 0.3, 0.2 -> 0.25, 0.5 -> 0.2; counting the non-private
        # rows (nan epsilon) would pick 0.0, counting the Figure 3 rows 0.9.
        "epsilon": [8.0, 8.0, 8.0, 8.0, 8.0, 8.0, np.nan, np.nan, 8.0, 8.0],
        "error": [0.3, 0.3, 0.1, 0.4, 0.25, 0.15, 0.01, 0.02, 0.0, 0.0],
    })
    best = hu.best_drop_probability(last)
    assert best == 0.5 and isinstance(best, float)
    assert hu.best_drop_probability(last.assign(error=last["error"] + [0.0, 0.0, 1.0, 1.0, 1.0,
                                                                    1.0, 0, 0, 0, 0])) == 0.0


def test_smoke_configs_of_every_stage() -> None:
    setup = hu.tier("smoke")
    cv = hu.configs(setup, 0)
    assert cv == hu.configs(setup, 0, stage="cv", features="auto")
    assert len(cv) == setup.folds * len(setup.lams) * len(setup.xis)
    assert cv[0] == {"experiment": "hu2020-har", "features": "auto", "split_seed": 0,
                     "inner_rounds": 5, "outer_rounds": 2, "n_min": 10, "records": 5,
                     "delta": 1e-3, "figure": "cv", "folds": 2, "fold": 0, "lam": 1e-2,
                     "xi": "1/m", "tau": 0.0, "p_drop": 0.0, "epsilon": None, "repeat": 0,
                     "dual": "as-written"}

    figures = hu.configs(setup, 3, stage="figures", features="uci-561", lam=0.1, xi="1")
    per_point = 2 * setup.repeats  # private and non-private
    projected = len(hu.FIG2_SETTINGS) * setup.repeats  # Figure 2's private variant
    assert len(figures) == per_point * (len(hu.FIG2_SETTINGS) + len(setup.taus)
                                        + len(setup.drops)) + projected
    assert sum(c["dual"] == "projected" for c in figures) == projected
    assert all(c["figure"].startswith("fig2") and c["epsilon"] == hu.EPSILON
               for c in figures if c["dual"] == "projected")
    assert {c["figure"] for c in figures} == {"fig2a", "fig2b", "fig2c", "fig3", "fig4"}
    assert figures[0] == {"experiment": "hu2020-har", "features": "uci-561", "split_seed": 3,
                          "inner_rounds": 5, "outer_rounds": 2, "n_min": 10, "records": 5,
                          "delta": 1e-3, "fold": None, "lam": 0.1, "xi": "1", "figure": "fig2a",
                          "tau": 0.0, "p_drop": 0.0, "epsilon": hu.EPSILON, "repeat": 0,
                          "dual": "as-written"}
    assert [c["p_drop"] for c in figures if c["figure"] == "fig4"] == [
        d for d in setup.drops for _ in range(per_point)]

    fig5 = hu.configs(setup, 3, stage="fig5", lam=0.1, xi="1", best_drop=0.2)
    assert [c["epsilon"] for c in fig5] == [e for e in setup.epsilons for _ in range(2)]
    assert [c["dual"] for c in fig5[:2]] == ["as-written", "projected"]
    assert all(c["figure"] == "fig5" and c["p_drop"] == 0.2 and c["tau"] == 1.0 for c in fig5)
    for stage in (cv, figures, fig5):
        json.dumps(stage)
        assert all(set(hu.BATCHED) <= set(c) for c in stage)


def test_configs_say_what_a_stage_needs() -> None:
    setup = hu.tier("smoke")
    with pytest.raises(ValueError, match="stage='figures' needs lam and xi"):
        hu.configs(setup, 0, stage="figures", lam=0.1)
    with pytest.raises(ValueError, match="needs best_drop"):
        hu.configs(setup, 0, stage="fig5", lam=0.1, xi="1")
    with pytest.raises(ValueError, match="do not pass lam"):
        hu.configs(setup, 0, lam=0.1)
    with pytest.raises(ValueError, match="stage='fig5' only"):
        hu.configs(setup, 0, stage="figures", lam=0.1, xi="1", best_drop=0.2)
    with pytest.raises(ValueError, match="stage='fig6' is not a stage"):
        hu.configs(setup, 0, stage="fig6")


@pytest.mark.parametrize("features", ["uci", "", None, 561])
def test_an_unknown_feature_source_is_refused_by_name(features) -> None:
    with pytest.raises(ValueError, match=r"features=.*'auto', 'uci-561', 'hapt-561'"):
        hu.check_features(features)
    with pytest.raises(ValueError, match="features="):
        hu.configs(hu.tier("smoke"), 0, features=features)
    with pytest.raises(ValueError, match="features="):
        hu.har_tasks(features, 0)
    assert [hu.check_features(f) for f in hu.FEATURES] == list(hu.FEATURES)


def test_a_group_must_share_its_data() -> None:
    cv = hu.configs(hu.tier("smoke"), 0)
    folds = [c for c in cv if c["fold"] == 0][:1] + [c for c in cv if c["fold"] == 1][:1]
    with pytest.raises(ValueError, match="differ only in.*these differ in fold"):
        hu.run_group(folds)


def test_task_sizes() -> None:
    assert hu.task_sizes(_tasks()).tolist() == [20, 23, 17]
