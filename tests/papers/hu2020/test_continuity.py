"""Hu et al. (2020) Algorithm 1 with its noise scaled: zero noise is the non-private
solver, and the noise grows with the factor."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedlib.papers.hu2020.algorithm import Hu2020Config, run_mocha_dp


def _tasks(m: int = 4, d: int = 6, n: int = 12, seed: int = 1):
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal(d)
    tasks = []
    for _ in range(m):
        x = rng.standard_normal((n, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        y = np.where(x @ (shared + 0.3 * rng.standard_normal(d)) >= 0, 1.0, -1.0)
        tasks.append((x, y))
    return tasks


@pytest.mark.parametrize(("tau", "p_drop", "project"), [(0.0, 0.0, False), (0.5, 0.3, False),
                                                        (1.0, 0.2, True)])
def test_private_path_with_noise_multiplier_zero_is_the_non_private_solver(tau, p_drop,
                                                                          project) -> None:
    tasks = _tasks()
    plain = Hu2020Config(lam=0.05, xi=0.5, tau=tau, p_drop=p_drop)
    zero = Hu2020Config(lam=0.05, xi=0.5, tau=tau, p_drop=p_drop, epsilon=8.0,
                        noise_scale=0.0, project_dual=project)
    result = run_mocha_dp(tasks, [plain, zero], 6, 3, 5, seed=4, run_indices=[2, 2])
    assert result.sigma1[1] == 0.0 and result.sigma2[1] == 0.0
    # The private path adds exact zeros: the iterates agree up to float rounding.
    np.testing.assert_allclose(result.W[1], result.W[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.alpha[1], result.alpha[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.primal[1], result.primal[0], rtol=1e-12)


def test_noise_scale_multiplies_both_multipliers_and_moves_the_iterates() -> None:
    tasks = _tasks()
    configs = [Hu2020Config(lam=0.05, xi=0.5, epsilon=8.0, noise_scale=s)
               for s in (1.0, 0.5, 1e-6)]
    result = run_mocha_dp(tasks, configs, 6, 2, 5, seed=4, run_indices=[0, 0, 0])
    assert result.sigma1[1] == pytest.approx(0.5 * result.sigma1[0])
    assert result.sigma2[2] == pytest.approx(1e-6 * result.sigma2[0])
    plain = run_mocha_dp(tasks, [Hu2020Config(lam=0.05, xi=0.5)], 6, 2, 5, seed=4)
    far = np.abs(result.W - plain.W[0]).max(axis=(1, 2))
    # A tiny factor stays close to the non-private iterates; Theorem 5's noise does not.
    assert far[2] < 1e-3 < far[0]


@pytest.mark.parametrize("scale", [-0.1, math.inf, math.nan, "1"])
def test_a_bad_noise_scale_is_refused_by_name(scale) -> None:
    with pytest.raises(ValueError, match="noise_scale must be a finite number >= 0"):
        Hu2020Config(lam=0.1, xi=1.0, epsilon=8.0, noise_scale=scale)
