"""Hand-made DP-Ditto runs: every run of the smoke tier (two seeds) with metrics set by
formula, so that read-outs, claims and figures can be checked without training."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.dpditto import experiment as dd


def metrics(config: dict) -> dict[str, float]:
    """Accuracy, fairness and loss of one run, by formula.

    DP-Ditto with lambda in (0, 1) is the most accurate and the fairest, more so at
    smaller lambda; DP-FedAvg (lambda = 1) and the local models (lambda = 0) come
    next, the baselines last. Accuracy rises with T and with epsilon, fairness
    worsens with lambda, the loss falls with T and grows with the noise (1/epsilon).
    """
    eps, lam, t, seed = config["epsilon"], config["lam"], config["rounds"], config["seed"]
    noise = 0.0 if math.isinf(eps) else 1.0 / eps
    if config["method"] == "DP-Ditto":
        base = 0.7 if lam == 0 else 0.6 if lam == 1 else 0.8
        fairness = 0.05 + 0.1 * lam + 0.001 * seed + 0.001 * t
    else:
        base = 0.5 + 0.01 * list(dd.METHODS).index(config["method"])
        fairness = 0.3
        lam = 0.0
    return {"accuracy": base + 0.01 * t + 0.002 * seed - 0.1 * noise - 0.01 * lam,
            "fairness": fairness,
            "loss": 0.5 + 0.01 * lam + noise + 0.01 * seed - 0.01 * t}


def fake_runs(setup: dd.DittoSetup, seeds: tuple[int, ...] = (0, 1)) -> pd.DataFrame:
    """One row per run of ``setup`` (its seeds shifted by each of ``seeds``), as
    :func:`fedlib.papers.dpditto.experiment.run` returns them."""
    rows = []
    for seed in seeds:
        for config in dd.configs(setup, seed):
            rows.append({"panel": config["panel"], "seed": config["seed"],
                         "rounds": config["rounds"], "method": config["method"],
                         "epsilon": config["epsilon"],
                         "lam": np.nan if config["lam"] is None else config["lam"],
                         **metrics(config), "sigma": 0.0})
    return pd.DataFrame(rows)


@pytest.fixture
def make_runs():
    """:func:`fake_runs`, for runs of another setup or other seeds."""
    return fake_runs


@pytest.fixture
def smoke_runs() -> pd.DataFrame:
    """Every run of the smoke tier, seeds 0 and 1."""
    return fake_runs(dd.tier("smoke"))
