"""The reconstructed convergence bound of DP-Ditto's personal models (Figure 2).

The paper's bound lost its equations; this is an exact recursion for the
linear-regression (quadratic) case of its analysis, every constant a parameter,
and the optimal number of aggregations T* found by one-dimensional search.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from fedlib.papers.dpditto.experiment import DELTA
from fedlib.privacy.calibration import dpditto_sigma


@dataclass(frozen=True)
class LinearCase:
    """The linear-regression case of the analysis, every constant reconstructed.

    Client i's loss is ``(a/2)||w - u_i||^2`` in ``dim`` coordinates (curvature
    ``a``); E local GD steps of rate ``lr`` contract the global error by
    ``beta = (1 - lr a)^E``; E_p personal steps of rate ``personal_lr`` contract the
    personal error by ``gamma = (1 - personal_lr ((1-lam) a + lam))^E_p``, and the
    personal optimum moves by ``kappa = lam / ((1-lam) a + lam)`` times the global
    error. ``dist_global`` / ``dist_personal`` are the initial distances per
    coordinate. Noise: the DP-Ditto sigma with ``clip`` and ``dataset_size``.
    """

    a: float = 1.0
    lr: float = 0.005
    local_steps: int = 50
    personal_lr: float = 0.005
    personal_steps: int = 50
    n_clients: int = 20
    dim: int = 7850
    clip: float = 10.0
    dataset_size: int = 2625
    delta: float = DELTA
    dist_global: float = 0.1
    dist_personal: float = 0.1


def linear_bound(case: LinearCase, epsilon: float, lam: float, rounds: int) -> float:
    """Expected squared distance of a personal model to its optimum after T = ``rounds``
    aggregations, exact for :class:`LinearCase` (hence also an upper bound).

    Second moments of the per-coordinate errors (global e_w, personal e_v):
    ``S' = beta^2 S + s2``, ``X' = gamma beta X + (1-gamma) kappa beta S``,
    ``V' = gamma^2 V + 2 gamma (1-gamma) kappa X + (1-gamma)^2 kappa^2 S``, with
    ``s2 = sigma(T)^2 / N`` the variance of the averaged noise per coordinate.
    """
    sigma = 0.0 if math.isinf(epsilon) else dpditto_sigma(
        case.clip, case.dataset_size, epsilon, case.delta, rounds)
    s2 = sigma**2 / case.n_clients
    beta = (1 - case.lr * case.a) ** case.local_steps
    rate = (1 - lam) * case.a + lam
    gamma = (1 - case.personal_lr * rate) ** case.personal_steps
    kappa = lam / rate
    S, X, V = case.dist_global**2, case.dist_personal * case.dist_global, case.dist_personal**2
    for _ in range(rounds):
        # the personal step uses the broadcast of this round (the current S, X)
        V = gamma**2 * V + 2 * gamma * (1 - gamma) * kappa * X + (1 - gamma) ** 2 * kappa**2 * S
        X = gamma * beta * X + (1 - gamma) * kappa * beta * S
        S = beta**2 * S + s2
    return case.dim * V


def optimal_rounds(case: LinearCase, epsilon: float, lam: float, max_rounds: int
                   ) -> tuple[int, np.ndarray]:
    """T* by one-dimensional search with step 1 over 1..max_rounds, and the bound curve."""
    curve = np.array([linear_bound(case, epsilon, lam, t) for t in range(1, max_rounds + 1)])
    return int(np.argmin(curve)) + 1, curve


def bound_curves(case: LinearCase, epsilons: Iterable[float], lam: float, max_rounds: int
                 ) -> dict[float, tuple[int, np.ndarray]]:
    """For each epsilon, T* and the bound curve over T = 1..max_rounds (:func:`optimal_rounds`)."""
    return {eps: optimal_rounds(case, eps, lam, max_rounds) for eps in epsilons}
