"""DP-Ditto read-outs and claims: the privacy table, the headline arithmetic and the
verdicts of every claim on hand-made runs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.dpditto import claims as dc
from fedlib.papers.dpditto import experiment as dd

BOUND = {1.0: (10, np.ones(200)), 10.0: (20, np.ones(200)), 100.0: (30, np.ones(200))}
"""T* and the bound curve per epsilon (only T* is judged)."""


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
    table = dc.headline_table(pd.DataFrame(rows), "p", (10.0,))
    amp = table[table["baseline"] == "FedAMP"].iloc[0]
    assert amp["fairness gain %"] == pytest.approx(50.0)
    assert amp["accuracy gain %"] == pytest.approx(20.0)
    assert dc.tuned_lambda(pd.DataFrame(rows), "p", 10.0) == 0.1


def test_privacy_table_accounts_t_uploads_as_one_gaussian():
    """T Gaussian mechanisms with noise multiplier z compose exactly into one with
    z / sqrt(T): the table's PLD epsilon must match that single mechanism's."""
    from fedlib.privacy.accounting import epsilon

    table = dc.privacy_table(10.0, 2625, (10, 100), (1.0, 10.0), delta=0.01)
    for row in table.itertuples(index=False):
        t, target = row[0], row[1]
        z = math.sqrt(2 * t * math.log(1 / 0.01)) / target
        assert row[4] == pytest.approx(z, rel=1e-12)
        single = epsilon(z / math.sqrt(t), 1.0, 1, 0.01, "pld")
        assert row[5] == pytest.approx(single, rel=0.02)
    spent = table["epsilon spent, PLD (used)"]
    assert (spent[table["target epsilon"] == 1.0] < 1.0).all()
    assert (spent[table["target epsilon"] == 10.0] > 10.0).all()
    assert "only up to epsilon = 1" in dc.privacy_verdict(table)


def test_every_claim_of_the_smoke_tier_and_its_verdict(smoke_runs: pd.DataFrame) -> None:
    setup = dd.tier("smoke")
    claims = dc.evaluate(smoke_runs, setup, "smoke", BOUND, 200)
    assert all(c.paper == "dpditto" and c.scale == "smoke" and c.evidence for c in claims)
    status = {c.claim_id: c.status for c in claims}
    assert status == {
        "fig2-interior-optimum": "HOLDS",
        "fig3-4-mnist-mlr-ditto-best-accuracy": "HOLDS",
        "fig3-4-mnist-mlr-ditto-best-fairness": "HOLDS",
        "fig3-4-mnist-mlr-smaller-lambda-at-smaller-eps": "HOLDS",
        "fig3-4-mnist-mlr-baselines-degrade": "HOLDS",
        "headline-mnist-mlr-gains": "HOLDS",
        **{f"fig5-{p}-approaches-noiseless": "HOLDS" for p in setup.panels},
        # two values of T cannot show a minimum inside the range
        **{f"fig5-{p}-critical-T": "NOT-RUN" for p in setup.panels},
        "fig6-mnist-mlr-small-lambda-rises": "HOLDS",
        "fig6-mnist-mlr-large-lambda-peaks": "FAILS",
        "fig6-mnist-mlr-smaller-lambda-fairer": "HOLDS",
        "fig7-mnist-mlr-optimal-lambda-falls": "FAILS",
        "fig7-mnist-mlr-optimal-T-rises": "FAILS",
        "fig3-6-cifar10-cnn": "NOT-RUN",
    }
    text = {c.claim_id: c for c in claims}
    assert text["fig2-interior-optimum"].evidence == (
        "T* per epsilon (search over 1..200): eps=1: 10, eps=10: 20, eps=100: 30")
    assert text["fig3-4-mnist-mlr-smaller-lambda-at-smaller-eps"].evidence == (
        "tuned lambda: eps=10: 0.01, eps=100: 0.01")
    assert text["headline-mnist-mlr-gains"].paper_value == (
        "over 32.71% (fairness), 9.66% (accuracy)")
    assert text["fig5-mnist-mlr-approaches-noiseless"].evidence == (
        "lambda=0.05; mean |loss - loss(eps=inf)| over T: eps=1: 1.0000, eps=10: 0.1000, "
        "eps=100: 0.0100")


def test_claims_fail_when_a_baseline_wins(smoke_runs: pd.DataFrame) -> None:
    runs = smoke_runs.copy()
    amp = runs["method"] == "FedAMP"
    runs.loc[amp, "accuracy"] = 0.99
    runs.loc[amp, "fairness"] = 0.01
    status = {c.claim_id: c.status
              for c in dc.evaluate(runs, dd.tier("smoke"), "smoke", BOUND, 200)}
    assert status["fig3-4-mnist-mlr-ditto-best-accuracy"] == "FAILS"
    assert status["fig3-4-mnist-mlr-ditto-best-fairness"] == "FAILS"
    assert status["headline-mnist-mlr-gains"] == "FAILS"
    shrinking = {1.0: (30, np.ones(200)), 10.0: (20, np.ones(200)), 100.0: (10, np.ones(200))}
    status = {c.claim_id: c.status
              for c in dc.evaluate(runs, dd.tier("smoke"), "smoke", shrinking, 200)}
    assert status["fig2-interior-optimum"] == "FAILS"


def test_read_outs_of_figures_5_to_7(smoke_runs: pd.DataFrame) -> None:
    curve = dc.loss_by_rounds(smoke_runs, "mnist-dnn", 10.0, 0.05)
    # loss = 0.5 + 0.01 lam + 1/eps + 0.01 seed - 0.01 T, averaged over seeds 0 and 1
    expected = [0.5 + 0.0005 + 0.1 + 0.005 - 0.01 * t for t in (2, 4)]
    assert list(curve.index) == [2, 4]
    assert curve.to_numpy() == pytest.approx(expected)
    grid = dc.lambda_grid(smoke_runs, "mnist-mlr", 10.0)
    assert sorted(grid.index.get_level_values("lam").unique()) == list(dd.LAMBDAS)
    assert list(grid.columns) == ["accuracy", "fairness", "loss"]
    counts = dc.run_counts(smoke_runs)
    assert counts.loc[("mnist-mlr", "FedAMP"), "runs"] == 2 * 2 * 2  # seeds, T, epsilons
    headlines = dc.headlines(smoke_runs, dd.tier("smoke"))
    assert set(headlines["panel"]) == {"mnist-mlr"}
    assert set(headlines["baseline"]) == {"FedAMP", "pFedMe", "APPLE", "FedALA", "DP-FedAvg"}


def test_near_chance_methods_are_named(smoke_runs: pd.DataFrame) -> None:
    setup = dd.tier("smoke")
    assert dc.near_chance(smoke_runs, setup) == []
    assert dc.near_chance_note(smoke_runs, setup) == ""
    runs = smoke_runs.copy()
    runs.loc[runs["method"] == "APPLE", "accuracy"] = 0.1
    assert dc.near_chance(runs, setup) == [("APPLE", "mnist-mlr")]
    note = dc.near_chance_note(runs, setup, str.upper)
    assert note.startswith("Near chance accuracy (below 0.2 with ten classes) at the larger "
                           "epsilon: APPLE on MNIST-MLR. ")


def test_fake_runs_follow_the_configs(make_runs) -> None:
    runs = make_runs(dd.tier("smoke"), seeds=(3,))
    assert set(runs["seed"]) == {3}
    assert len(runs) == len(dd.configs(dd.tier("smoke"), 3))
