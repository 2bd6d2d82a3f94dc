"""Hu et al. 2020 on HAR: tiers, the configs of every stage, folds and the stage decisions."""

from __future__ import annotations

import dataclasses
import json
import math

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
        "figure": ["fig4"] * 8 + ["fig3", "fig3", "fig4"],
        "p_drop": [0.0, 0.0, 0.2, 0.2, 0.5, 0.5, 0.0, 0.0, 0.9, 0.9, 0.9],
        # Private means: 0.0 -> 0.3, 0.2 -> 0.25, 0.5 -> 0.2; counting the non-private
        # rows (nan epsilon) would pick 0.0, counting the Figure 3 rows or the projected
        # variant 0.9.
        "epsilon": [8.0, 8.0, 8.0, 8.0, 8.0, 8.0, np.nan, np.nan, 8.0, 8.0, 8.0],
        "dual": ["as-written"] * 10 + ["projected"],
        "error": [0.3, 0.3, 0.1, 0.4, 0.25, 0.15, 0.01, 0.02, 0.0, 0.0, 0.0],
    })
    best = hu.best_drop_probability(last)
    assert best == 0.5 and isinstance(best, float)
    assert hu.best_drop_probability(last.assign(error=last["error"] + [0.0, 0.0, 1.0, 1.0, 1.0,
                                                                    1.0, 0, 0, 0, 0, 0])) == 0.0


def test_smoke_configs_of_every_stage() -> None:
    setup = hu.tier("smoke")
    cv = hu.configs(setup, 0)
    assert cv == hu.configs(setup, 0, stage="cv", features="auto")
    assert len(cv) == setup.folds * len(setup.lams) * len(setup.xis)
    assert cv[0] == {"experiment": "hu2020-har", "features": "auto", "split_seed": 0,
                     "inner_rounds": 5, "outer_rounds": 2, "n_min": 10, "records": 5,
                     "delta": 1e-3, "folds": 2, "fold": 0, "lam": 1e-2,
                     "xi": "1/m", "tau": 0.0, "p_drop": 0.0, "epsilon": None, "repeat": 0,
                     "dual": "as-written", "noise_scale": 1.0}

    figures = hu.configs(setup, 3, stage="figures", features="uci-561", lam=0.1, xi="1")
    plan = hu.figure_plan(setup)
    settings = {(tau, p, eps, dual) for _, tau, p, eps, dual in plan}
    # Every setting is run once per repeat, however many figures read it.
    assert len(figures) == len(settings) * setup.repeats < len(plan) * setup.repeats
    assert {(c["tau"], c["p_drop"], c["epsilon"], c["dual"]) for c in figures} == settings
    assert {f for f, *_ in plan} == {"fig2a", "fig2b", "fig2c", "fig3", "fig4"}
    assert all(tau == hu.FIG4_TAU for f, tau, *_ in plan if f == "fig4")
    assert all(eps == hu.EPSILON for *_, eps, dual in plan if dual == "projected")
    assert figures[0] == {"experiment": "hu2020-har", "features": "uci-561", "split_seed": 3,
                          "inner_rounds": 5, "outer_rounds": 2, "n_min": 10, "records": 5,
                          "delta": 1e-3, "fold": None, "lam": 0.1, "xi": "1",
                          "tau": 0.0, "p_drop": 0.0, "epsilon": hu.EPSILON, "repeat": 0,
                          "dual": "as-written", "noise_scale": 1.0}

    fig5 = hu.configs(setup, 3, stage="fig5", lam=0.1, xi="1", best_drop=0.2)
    assert [c["epsilon"] for c in fig5] == [e for e in setup.epsilons for _ in range(2)]
    assert [c["dual"] for c in fig5[:2]] == ["as-written", "projected"]
    assert all(c["p_drop"] == 0.2 and c["tau"] == hu.FIG5_TAU for c in fig5)

    probe = hu.configs(setup, 3, stage="probe", lam=0.05, xi="1")
    points = {(c["lam"], c["n_min"], c["noise_scale"]) for c in probe}
    assert points == ({(lam, 10, 1.0) for lam in setup.probe_lams}
                      | {(0.05, hu.MIN_LOCAL, 1.0)}
                      | {(0.05, 10, s) for s in setup.noise_scales})
    assert all(c["epsilon"] == hu.EPSILON and (c["tau"], c["p_drop"]) == hu.PROBE_SETTING
               for c in probe)
    for stage in (cv, figures, fig5, probe):
        json.dumps(stage)
        assert all(set(hu.BATCHED) <= set(c) for c in stage)


def test_figure_labels_repeat_a_shared_run_under_every_figure() -> None:
    setup = hu.tier("smoke")
    runs = pd.DataFrame([{**c, "run_key": str(i), "round": 1, "error": 0.1}
                         for i, c in enumerate(hu.configs(setup, 0, stage="figures", lam=0.1,
                                                          xi="1"))])
    runs["epsilon"] = runs["epsilon"].astype(float)
    labelled = hu.label_figures(runs, setup)
    # Figure 2(a) (tau 0, P_drop 0) is also Figure 3's tau = 0.
    shared = labelled[(labelled["tau"] == 0.0) & (labelled["p_drop"] == 0.0)
                      & (labelled["dual"] == "as-written")]
    assert set(shared["figure"]) == {"fig2a", "fig3"}
    assert len(shared) == 2 * 2 * setup.repeats  # two figures x (private, non-private)
    per_figure = labelled.groupby("figure").size().to_dict()
    assert per_figure["fig4"] == 2 * len(setup.drops) * setup.repeats
    assert per_figure["fig2c"] == 3 * setup.repeats  # private, non-private, projected
    assert set(labelled.loc[labelled["figure"] == "fig4", "tau"]) == {hu.FIG4_TAU}


def test_a_tie_goes_to_the_largest_lambda_then_the_largest_xi() -> None:
    cv = pd.DataFrame({"lam": [1e-5, 1e-4, 1e-3, 1e-3, 1e-3, 1e-2],
                       "xi": ["0.5", "1", "1/m", "0.5", "1", "1"],
                       "error": [0.0109, 0.0109, 0.0109, 0.0109, 0.0109, 0.0122]})
    lam, xi, table = hu.choose_hyperparameters(cv)
    assert (lam, xi) == (1e-3, "1")
    assert len(hu.tied_hyperparameters(table)) == 5
    # Without the tie the lowest error wins whatever its lambda.
    lam, xi, _ = hu.choose_hyperparameters(cv.assign(error=cv["error"] - [0.001, 0, 0, 0, 0, 0]))
    assert (lam, xi) == (1e-5, "0.5")


def test_n_min_as_the_paper_defines_it_is_the_smallest_device() -> None:
    tasks = _tasks((20, 23, 17))
    assert hu.resolve_n_min(hu.MIN_LOCAL, list(tasks)) == 17
    assert hu.resolve_n_min(12, list(tasks)) == 12


@pytest.mark.parametrize(("field", "value", "message"), [
    ("inner_rounds", 10**6, r"rounds=1,000,000 is above 100,000"),
    ("outer_rounds", 0, r"rounds must be"),
    ("n_min", 10**7, r"local_steps=10,000,000 is above"),
    ("n_min", "smallest", r"local_steps must be"),
    ("repeats", 10**5, r"repeats=100,000 is above"),
    ("probe_repeats", 0, r"repeats must be"),
    ("folds", 1, r"k must be"),
    ("records", 10**6, r"n_evals=1,000,000 is above"),
    ("lams", (0.0,), r"lams must be a finite number > 0"),
    ("taus", (1.5,), r"taus holds \[1.5\]"),
    ("drops", (1.0,), r"drops holds \[1.0\]"),
    ("epsilons", (math.inf,), r"epsilons must be a finite number"),
    ("noise_scales", (-1.0,), r"noise_scales must be a finite number >= 0"),
    ("probe_lams", tuple(range(1, 2000)), r"probe_lams must be a tuple of 1 to 1,000"),
    ("xis", ("2",), r"xi='2' is not an aggregation parameter"),
    ("xis", (), r"xis must be a tuple of 1 to"),
    ("projected", "yes", r"projected must be True or False"),
])
def test_setup_sizes_are_bounded_and_name_the_argument(field, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(hu.tier("smoke"), **{field: value})


def test_the_rounds_together_are_bounded() -> None:
    with pytest.raises(ValueError, match="inner_rounds x outer_rounds = 200,000 rounds"):
        dataclasses.replace(hu.tier("smoke"), inner_rounds=20_000, outer_rounds=10)


def test_a_tier_without_epsilons_has_no_figure_5() -> None:
    setup = dataclasses.replace(hu.tier("smoke"), epsilons=())
    assert hu.configs(setup, 0, stage="fig5", lam=0.1, xi="1", best_drop=0.2) == []
    empty = hu.run(setup, 0, stage="fig5", features="hapt-561", lam=0.1, xi="1",
                   best_drop=0.2, progress=False)
    assert empty.empty and {"error", "epsilon", "figure"} <= set(empty.columns)


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
    with pytest.raises(ValueError, match="stage='probe' takes no best_drop"):
        hu.configs(setup, 0, stage="probe", lam=0.1, xi="1", best_drop=0.2)
    with pytest.raises(ValueError, match="xi='3' is not an aggregation parameter"):
        hu.configs(setup, 0, stage="probe", lam=0.1, xi="3")
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
