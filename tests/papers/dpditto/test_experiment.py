"""DP-Ditto experiment: the reconstructed bound, configs and the headline arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.dpditto import experiment as dd


def test_linear_bound_matches_a_monte_carlo_simulation() -> None:
    case = dd.LinearCase(a=1.0, lr=0.1, local_steps=3, personal_lr=0.1, personal_steps=3,
                         n_clients=4, dim=1, dataset_size=50, dist_global=1.0,
                         dist_personal=0.5)
    eps, lam, rounds = 5.0, 0.4, 6
    from fedlib.privacy.calibration import dpditto_sigma
    sigma = dpditto_sigma(case.clip, case.dataset_size, eps, case.delta, rounds)
    rng = np.random.default_rng(0)
    reps = 200_000
    ew = np.full(reps, case.dist_global)
    ev = np.full(reps, case.dist_personal)
    beta = (1 - case.lr * case.a) ** case.local_steps
    rate = (1 - lam) * case.a + lam
    gamma = (1 - case.personal_lr * rate) ** case.personal_steps
    kappa = lam / rate
    for _ in range(rounds):
        ev = gamma * ev + (1 - gamma) * kappa * ew
        ew = beta * ew + rng.normal(0, sigma / math.sqrt(case.n_clients), reps)
    assert dd.linear_bound(case, eps, lam, rounds) == pytest.approx(np.mean(ev**2), rel=0.02)


def test_bound_has_an_interior_optimum_that_grows_with_epsilon() -> None:
    case = dd.LinearCase()
    optima = [dd.optimal_rounds(case, eps, 0.5, 200)[0] for eps in (1.0, 10.0, 100.0)]
    assert all(1 < t < 200 for t in optima)
    assert optima == sorted(optima)
    # lambda = 0 never sees the noise: the bound only falls
    _, curve = dd.optimal_rounds(case, 1.0, 0.0, 50)
    assert np.all(np.diff(curve) <= 0)


def test_configs_group_by_panel_seed_and_rounds() -> None:
    setup = dd.tier("quick")
    configs = dd.panel_configs("mnist-mlr", setup)
    groups = {dd.group_key(c) for c in configs}
    assert len(groups) == len(setup.seeds) * len(setup.rounds)
    methods = {c["method"] for c in configs}
    assert methods == {"DP-Ditto", "FedAMP", "pFedMe", "APPLE", "FedALA"}
    lams = {c["lam"] for c in configs if c["method"] == "DP-Ditto"}
    assert lams == set(dd.LAMBDAS)


def test_headline_gains_are_relative_improvements() -> None:
    rows = []
    for t in (5, 10):
        for lam, acc, std in ((0.1, 0.9, 0.05), (0.5, 0.8, 0.08), (1.0, 0.6, 0.2),
                              (0.0, 0.85, 0.06)):
            rows.append({"panel": "p", "seed": 0, "rounds": t, "method": "DP-Ditto",
                         "epsilon": 10.0 if lam > 0 else math.inf, "lam": lam,
                         "accuracy": acc, "fairness": std, "loss": 0.1})
        rows.append({"panel": "p", "seed": 0, "rounds": t, "method": "FedAMP", "epsilon": 10.0,
                     "lam": np.nan, "accuracy": 0.75, "fairness": 0.1, "loss": 0.1})
    table = dd.headline_table(pd.DataFrame(rows), "p", (10.0,))
    amp = table[table["baseline"] == "FedAMP"].iloc[0]
    assert amp["fairness gain %"] == pytest.approx(50.0)
    assert amp["accuracy gain %"] == pytest.approx(20.0)
    assert dd.tuned_lambda(pd.DataFrame(rows), "p", 10.0) == 0.1


def test_privacy_table_accounts_t_uploads_as_one_gaussian():
    """T Gaussian mechanisms with noise multiplier z compose exactly into one with
    z / sqrt(T): the table's PLD epsilon must match that single mechanism's."""
    from fedlib.papers.dpditto.experiment import privacy_table, privacy_verdict
    from fedlib.privacy.accounting import epsilon

    table = privacy_table(10.0, 2625, (10, 100), (1.0, 10.0), delta=0.01)
    for row in table.itertuples(index=False):
        t, target = row[0], row[1]
        z = math.sqrt(2 * t * math.log(1 / 0.01)) / target
        assert row[4] == pytest.approx(z, rel=1e-12)
        single = epsilon(z / math.sqrt(t), 1.0, 1, 0.01, "pld")
        assert row[5] == pytest.approx(single, rel=0.02)
    spent = table["epsilon spent, PLD (used)"]
    assert (spent[table["target epsilon"] == 1.0] < 1.0).all()
    assert (spent[table["target epsilon"] == 10.0] > 10.0).all()
    assert "only up to epsilon = 1" in privacy_verdict(table)
