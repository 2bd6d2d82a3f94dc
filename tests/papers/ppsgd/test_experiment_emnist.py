"""Figures 1c, 1d and 2: grids per tier, the sweep runner, the curves and the claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.ppsgd import experiment_emnist as emnist
from fedlib.papers.ppsgd.emnist import split_per_user
from fedlib.privacy import epsilon_curve

INF = math.inf


def test_paper_tier_has_the_appendix_grids_and_twenty_epochs() -> None:
    linear, cnn = emnist.grid("paper", "linear"), emnist.grid("paper", "cnn")
    assert linear.steps == (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01)
    assert linear.sigmas == (0, 0.1, 0.3, 1, 2, 3, 5, 10, 20, 30, 50, 100)
    assert cnn.steps == (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    assert cnn.sigmas == (0, 0.1, 0.3, 1, 3, 10, 30, 100)
    for g in (linear, cnn):
        assert g.alpha_q == (0, 0.1, 0.3, 1, 3, 10, 30, 100, INF)
        assert (g.epochs, g.users_per_iteration, g.batch_size) == (20, 10, 10)
    quick = emnist.grid("quick", "linear")
    assert set(emnist.FIGURE_ALPHA_Q) <= set(quick.alpha_q)
    assert set(quick.steps) <= set(linear.steps)
    with pytest.raises(ValueError, match="not an EMNIST model"):
        emnist.grid("quick", "resnet")


def test_local_only_runs_once_since_it_releases_nothing() -> None:
    configs = emnist.figure_configs("quick", "linear", 0)
    g = emnist.grid("quick", "linear")
    local = [c for c in configs if c["alpha_q"] == 0]
    assert len(local) == len(g.steps) and all(c["noise_multiplier"] == 0 for c in local)
    assert len(configs) == len(g.steps) * (1 + (len(g.alpha_q) - 1) * len(g.sigmas))


def toy(model: str, *_args) -> object:
    rng = np.random.default_rng(0)
    n = 12 * 30
    shape = (n, 784) if model == "linear" else (n, 1, 28, 28)
    return split_per_user(rng.random(shape).astype(np.float32), rng.integers(0, 10, n),
                          np.repeat(np.arange(12), 30), 10, test_fraction=0.2, seed=0)


@pytest.mark.parametrize("model", ["linear", "cnn"])
def test_run_group_records_accuracy_and_the_accountants_epsilon(model, monkeypatch) -> None:
    monkeypatch.setattr(emnist, "load_data", toy)
    configs = emnist.figure_configs("smoke", model, 0)[:4]
    tables = emnist.run_group(configs)
    for config, table in zip(configs, tables, strict=True):
        assert table["iteration"].iloc[0] == 0 and table["accuracy"].between(0, 1).all()
        iterations = int(table["iterations"].iloc[0])
        if config["alpha_q"] == 0:
            assert (table["epsilon"] == 0).all()
        elif config["noise_multiplier"] > 0:
            expected = epsilon_curve(config["noise_multiplier"],
                                     config["users_per_iteration"] / 12, iterations,
                                     emnist.DELTA, at=list(table["iteration"]))
            np.testing.assert_allclose(table["epsilon"], expected)


def runs_table(values: dict[tuple[float, float, float], float]) -> pd.DataFrame:
    """(sigma, alpha, step) -> final accuracy, at iterations 0 and 10."""
    rows = []
    for (sigma, alpha, step), acc in values.items():
        eps = 0.0 if alpha == 0 else (INF if sigma == 0 else 1.0 / sigma)
        rows += [{"noise_multiplier": sigma, "alpha_q": alpha, "step": step, "iteration": it,
                  "accuracy": a, "epsilon": e}
                 for it, a, e in ((0, 0.1, 0.0), (10, acc, eps))]
    return pd.DataFrame(rows)


def test_best_over_steps_takes_the_best_step_and_repeats_local_for_every_sigma() -> None:
    runs = runs_table({(0, 0, 0.1): 0.3, (0, 0, 0.2): 0.4, (2, 1, 0.1): 0.5, (2, 1, 0.2): 0.45})
    curves = emnist.best_over_steps(runs)
    end = emnist.final(curves)
    assert set(zip(end["noise_multiplier"], end["alpha_q"], strict=True)) == {
        (0, 0), (2, 0), (2, 1)}
    assert end[(end["noise_multiplier"] == 2) & (end["alpha_q"] == 0)]["accuracy"].item() == 0.4
    assert end[end["alpha_q"] == 1]["best_step"].item() == 0.1


def _end(values: dict[tuple[float, float], float]) -> pd.DataFrame:
    return pd.DataFrame([
        {"noise_multiplier": s, "alpha_q": a, "accuracy": v,
         "epsilon": 0.0 if a == 0 else (INF if s == 0 else 1.0 / s)}
        for (s, a), v in values.items()
    ])


def test_envelope_claim_holds_only_when_personalization_wins_at_every_noise_level() -> None:
    good = _end({(s, a): v for s in (1, 3) for a, v in
                 ((0, 0.5), (0.3, 0.7 - 0.01 * s), (1, 0.65), (INF, 0.6 - 0.1 * s))})
    table = emnist.tradeoff(good, "accuracy", higher_is_better=True)
    assert table["envelope"].tolist() == pytest.approx([0.69, 0.67])
    assert table["best_alpha_q"].tolist() == [0.3, 0.3]
    assert emnist.envelope_claim(table, "x", "toy", "accuracy", True, "smoke").status == "HOLDS"
    bad = good.copy()
    bad.loc[(bad["noise_multiplier"] == 1) & (bad["alpha_q"] == INF), "accuracy"] = 0.9
    claim = emnist.envelope_claim(emnist.tradeoff(bad, "accuracy", True), "x", "toy", "accuracy",
                                  True, "smoke")
    assert claim.status == "FAILS" and claim.evidence.startswith("1/2")
    risk = good.rename(columns={"accuracy": "excess_risk"})
    risk["excess_risk"] = 1 - risk["excess_risk"]  # lower is better
    table = emnist.tradeoff(risk, "excess_risk", higher_is_better=False)
    assert emnist.envelope_claim(table, "x", "toy", "risk", False, "smoke").status == "HOLDS"


def test_figure1_claims_read_the_final_accuracies() -> None:
    levels = {0: 0.1, 0.1: 0.5, 1: 0.7, 10: 0.8, INF: 0.75}
    noisy = {0: 0.1, 0.1: 0.4, 1: 0.45, 10: 0.3, INF: 0.2}
    end = _end({**{(0, a): v for a, v in levels.items()}, **{(3, a): v for a, v in noisy.items()}})
    curves = end.assign(iteration=10, best_step=0.1)
    linear = {c.claim_id: c.status for c in emnist.figure1_claims(curves, "linear", (0, 3), "s")}
    assert linear == {"fig1c-local-poor": "HOLDS", "fig1c-small-alpha-small-eps": "HOLDS"}
    cnn = {c.claim_id: c.status for c in emnist.figure1_claims(curves, "cnn", (0, 3), "s")}
    assert cnn == {"fig1d-local-very-poor": "HOLDS", "fig1d-small-alpha-small-eps": "HOLDS",
                   "fig1d-large-alpha-low-privacy": "HOLDS"}
    flipped = curves.copy()
    flipped.loc[(flipped["noise_multiplier"] == 3) & (flipped["alpha_q"] == INF), "accuracy"] = 0.9
    statuses = {c.claim_id: c.status for c in emnist.figure1_claims(flipped, "cnn", (0, 3), "s")}
    assert statuses["fig1d-small-alpha-small-eps"] == "FAILS"


def test_unknown_source_is_refused() -> None:
    with pytest.raises(ValueError, match="not an EMNIST source"):
        emnist.load_data("linear", None, 0.1, 0, "mnist")
