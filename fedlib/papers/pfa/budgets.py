"""The heterogeneous privacy budgets of PFA (Liu et al. 2022, Table 1).

The distributions clients' budgets are drawn from, which clients count as
"public" (the most generous budgets) and how many rounds a client is expected
to take part in, which fixes its noise multiplier.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

BUDGET_FLOOR = 0.01
"""Smallest budget a draw may take: Gaussian components can go negative, and a
budget must be positive; draws below this are raised to it."""

PARETO_SHAPE = 1.16
PARETO_SCALE = 1.0
PARETO_CAP = 10.0
"""The paper's Table 1 gives no Pareto parameters *(inferred)*: the classic
Pareto with scale 1 and the 80/20 shape 1.16, capped at 10 (the largest mean
budget of the other distributions)."""

BUDGET_DISTRIBUTIONS: dict[str, tuple[tuple[float, float, float], ...]] = {
    # name -> mixture components (weight, mean, std); "uniform" and "pareto" are special.
    "uniform": ((1.0, 1.0, 10.0),),  # (weight, low, high)
    "gauss": ((1.0, 3.0, 1.0),),
    "pareto": ((1.0, PARETO_SCALE, PARETO_SHAPE),),  # (weight, scale, shape)
    "mixgauss1": ((0.9, 0.1, 0.01), (0.1, 10.0, 0.1)),
    "mixgauss2": ((0.9, 0.5, 0.01), (0.1, 10.0, 0.1)),
    "mixgauss3": ((0.9, 1.0, 0.1), (0.1, 10.0, 0.1)),
    "mixgauss4": ((0.5, 0.1, 0.01), (0.4, 1.0, 0.1), (0.1, 10.0, 1.0)),
}
"""Table 1 of Liu et al. (2022); the second parameter of a Gaussian is its std."""


def sample_budgets(distribution: str, n_clients: int, seed: int | np.random.Generator
                   ) -> np.ndarray:
    """Draw ``n_clients`` privacy budgets from one of :data:`BUDGET_DISTRIBUTIONS`.

    Draws below :data:`BUDGET_FLOOR` are raised to it; Pareto draws are capped at
    :data:`PARETO_CAP`.
    """
    if distribution not in BUDGET_DISTRIBUTIONS:
        raise ValueError(f"unknown budget distribution {distribution!r}; use one of "
                         f"{', '.join(BUDGET_DISTRIBUTIONS)}")
    if isinstance(n_clients, bool) or not isinstance(n_clients, int) or n_clients < 1:
        raise ValueError(f"n_clients must be a positive integer, got {n_clients!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    components = BUDGET_DISTRIBUTIONS[distribution]
    if distribution == "uniform":
        (_, low, high), = components
        draws = rng.uniform(low, high, n_clients)
    elif distribution == "pareto":
        (_, scale, shape), = components
        draws = np.minimum(scale * (1.0 + rng.pareto(shape, n_clients)), PARETO_CAP)
    else:
        weights = np.array([c[0] for c in components])
        which = rng.choice(len(components), size=n_clients, p=weights / weights.sum())
        means = np.array([c[1] for c in components])[which]
        stds = np.array([c[2] for c in components])[which]
        draws = rng.normal(means, stds)
    return np.maximum(draws, BUDGET_FLOOR)


def public_clients(budgets: Sequence[float], fraction: float = 0.1) -> np.ndarray:
    """Boolean mask of the "public" clients: the top ``fraction`` by budget (at least one)."""
    budgets = np.asarray(budgets, dtype=float)
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    n_public = max(1, int(round(fraction * len(budgets))))
    order = np.argsort(-budgets, kind="stable")
    mask = np.zeros(len(budgets), dtype=bool)
    mask[order[:n_public]] = True
    return mask


def expected_rounds(rounds: int, sampled: int, n_clients: int) -> int:
    """T* = T K / M, rounded up: the rounds a client is expected to take part in."""
    if not 1 <= sampled <= n_clients:
        raise ValueError(f"need 1 <= K <= M, got K={sampled}, M={n_clients}")
    return max(1, math.ceil(rounds * sampled / n_clients))
