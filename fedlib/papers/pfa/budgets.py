"""The heterogeneous privacy budgets of PFA (Liu et al. 2022, Table 1).

The distributions clients' budgets are drawn from, which clients count as
"public" (the most generous budgets), how many rounds a client is expected
to take part in, which fixes its noise multiplier, and the two ways of fixing it:
an exact accountant (:class:`fedlib.privacy.ledger.PrivacyLedger`) or the authors'
closed form (:class:`ClosedFormLedger`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from fedlib.privacy.ledger import PrivacyLedger

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


CALIBRATIONS = ("rdp", "closed-form")
"""How a client's noise multiplier is fixed from its budget and how its spending is
counted: ``"rdp"``, the exact RDP accountant of :class:`fedlib.privacy.ledger.PrivacyLedger`;
``"closed-form"``, the authors' formula (:class:`ClosedFormLedger`)."""


def closed_form_epsilon(noise_multiplier: float, sampling_rate: float, steps: int,
                        delta: float) -> float:
    """Epsilon the authors' code counts after ``steps`` DP-SGD steps:
    ``10 q sqrt(steps log10(1/delta)) / nm`` (the moments-accountant bound of Abadi et al.
    with the constant 10 and a base-10 logarithm, as their budget accountant computes it;
    not a valid bound for every noise multiplier)."""
    if steps == 0:
        return 0.0
    if noise_multiplier <= 0:
        return math.inf
    return 10.0 * sampling_rate * math.sqrt(steps * math.log10(1.0 / delta)) / noise_multiplier


def closed_form_noise_multiplier(budget: float, sampling_rate: float, steps: int,
                                 delta: float) -> float:
    """The authors' noise multiplier: the one whose :func:`closed_form_epsilon` after
    ``steps`` steps is exactly ``budget`` (their code counts ``steps`` as all rounds times
    the local steps times the sampling ratio K/M)."""
    if not (budget > 0 and math.isfinite(budget)):
        raise ValueError(f"budget must be positive and finite, got {budget}")
    return closed_form_epsilon(1.0, sampling_rate, steps, delta) / budget


CLOSED_FORM_SLACK = 1e-9
"""Relative slack of the closed-form retirement test, so that a client can take exactly the
rounds it was calibrated for (the authors' code compares floats without one and refuses the
last planned round to about one client in ten, by rounding alone)."""


class ClosedFormLedger(PrivacyLedger):
    """The authors' accounting: per-client noise multipliers from the closed form of
    :func:`closed_form_noise_multiplier`, and the same closed form to count what a client has
    spent. A :class:`fedlib.privacy.ledger.PrivacyLedger` (same parameters) whose client is
    retired when one more round would take its closed-form epsilon past its budget, i.e.
    after its planned rounds.

    The closed form gives the small budgets several times the noise an exact accountant
    needs, and the large ones less (at the authors' defaults, epsilon = 10 spends about
    twice its budget under RDP): see the chapter's ledger table.
    """

    slack: ClassVar[float] = CLOSED_FORM_SLACK

    def calibrate(self, budget: float, sampling_rate: float, steps: int) -> float:
        return closed_form_noise_multiplier(budget, sampling_rate, steps, self.delta)

    def epsilon_after(self, noise_multiplier: float, sampling_rate: float, steps: int
                      ) -> float:
        return closed_form_epsilon(noise_multiplier, sampling_rate, steps, self.delta)



def make_ledger(calibration: str, budgets: Sequence[float], delta: float,
                sampling_rates: float | Sequence[float], steps_per_round: int,
                planned_rounds: int) -> PrivacyLedger:
    """The ledger of ``calibration`` (one of :data:`CALIBRATIONS`)."""
    if calibration == "rdp":
        return PrivacyLedger(np.asarray(budgets, dtype=float), delta,
                             np.asarray(sampling_rates, dtype=float), steps_per_round,
                             planned_rounds)
    if calibration == "closed-form":
        return ClosedFormLedger(np.asarray(budgets, dtype=float), delta,
                                np.asarray(sampling_rates, dtype=float), steps_per_round,
                                planned_rounds)
    raise ValueError(f"calibration must be one of {', '.join(CALIBRATIONS)}, "
                     f"got {calibration!r}")


AUTHORS_THRESHOLD = 1.0
"""The ``threshold`` of the authors' mixture files: their code draws all budgets again
until at least one exceeds it."""


def authors_budgets(distribution: str, n_clients: int, seed: int) -> np.ndarray:
    """The budgets the authors' code draws for a Gaussian mixture of
    :data:`BUDGET_DISTRIBUTIONS` after ``numpy.random.seed(seed)``: client by client a
    component (a one-draw multinomial) and then a normal draw, all of it again until some
    budget exceeds :data:`AUTHORS_THRESHOLD` (numpy's legacy generator, so the same seed
    gives the very budgets of their runs)."""
    components = BUDGET_DISTRIBUTIONS.get(distribution)
    if components is None or distribution in ("uniform", "pareto"):
        raise ValueError(f"the authors' draw is for the Gaussian mixtures, got "
                         f"{distribution!r}")
    weights = [c[0] for c in components]
    rng = np.random.RandomState(seed)
    while True:
        draws = []
        for _ in range(n_clients):
            which = int(np.argmax(rng.multinomial(1, weights)))
            draws.append(rng.normal(components[which][1], components[which][2]))
        budgets = np.array(draws)
        if (budgets > AUTHORS_THRESHOLD).any():
            return np.maximum(budgets, BUDGET_FLOOR)
