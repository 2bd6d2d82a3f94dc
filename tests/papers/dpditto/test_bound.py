"""The reconstructed convergence bound of Figure 2: exact for its linear case, with an
interior optimum T*."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedlib.papers.dpditto import bound
from fedlib.privacy.calibration import dpditto_sigma


def test_linear_bound_matches_a_monte_carlo_simulation() -> None:
    case = bound.LinearCase(a=1.0, lr=0.1, local_steps=3, personal_lr=0.1, personal_steps=3,
                            n_clients=4, dim=1, dataset_size=50, dist_global=1.0,
                            dist_personal=0.5)
    eps, lam, rounds = 5.0, 0.4, 6
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
    assert bound.linear_bound(case, eps, lam, rounds) == pytest.approx(np.mean(ev**2), rel=0.02)


def test_bound_has_an_interior_optimum_that_grows_with_epsilon() -> None:
    case = bound.LinearCase()
    optima = [bound.optimal_rounds(case, eps, 0.5, 200)[0] for eps in (1.0, 10.0, 100.0)]
    assert all(1 < t < 200 for t in optima)
    assert optima == sorted(optima)
    # lambda = 0 never sees the noise: the bound only falls
    _, curve = bound.optimal_rounds(case, 1.0, 0.0, 50)
    assert np.all(np.diff(curve) <= 0)


def test_bound_curves_are_the_optimal_rounds_of_each_epsilon() -> None:
    case = bound.LinearCase()
    curves = bound.bound_curves(case, (1.0, 10.0), 0.5, 60)
    assert list(curves) == [1.0, 10.0]
    for eps, (t_star, curve) in curves.items():
        assert len(curve) == 60
        assert curve[t_star - 1] == curve.min()
        assert curve[9] == bound.linear_bound(case, eps, 0.5, 10)
