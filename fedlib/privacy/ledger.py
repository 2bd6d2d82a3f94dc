"""Heterogeneous privacy budgets: their distributions, per-client calibration and a ledger.

Each client m of PFA (Liu et al. 2022) has its own budget (epsilon_m, delta).
Its DP-SGD noise multiplier is fixed once from that budget with an exact
accountant (the Poisson-subsampled Gaussian mechanism at sampling rate
q_m = B / N_m over the steps the client is expected to take), so that all
clients run out at about the same time. The :class:`PrivacyLedger` records what
each client has spent after every round it took part in and retires a client
whose next round would exceed its budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.special import gammaln, logsumexp

from fedlib.privacy.accounting import rdp_to_epsilon

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


CALIBRATION_TOLERANCE = 1e-3
"""Relative precision of a calibrated noise multiplier (it always meets its budget)."""

INTEGER_ORDERS = np.arange(2, 513, dtype=float)
"""RDP orders of the ledger's accountant: every integer from 2 to 512 (a finer grid of
large orders than ``dp_accounting``'s default, without its fractional orders)."""
_K = np.arange(INTEGER_ORDERS.max() + 1)
_LOG_BINOMIAL = np.where(
    _K[None, :] <= INTEGER_ORDERS[:, None],
    gammaln(INTEGER_ORDERS[:, None] + 1) - gammaln(_K[None, :] + 1)
    - gammaln(np.maximum(INTEGER_ORDERS[:, None] - _K[None, :], 0) + 1),
    -np.inf)


@lru_cache(maxsize=65536)
def _integer_order_rdp(noise_multiplier: float, sampling_rate: float) -> np.ndarray:
    """RDP of one step of the Poisson-subsampled Gaussian mechanism at every integer
    order alpha of :data:`INTEGER_ORDERS`, exactly (Mironov, Talwar & Zhang 2019):
    log A_alpha / (alpha - 1), A_alpha = sum_k C(alpha, k) (1-q)^(alpha-k) q^k
    exp((k^2 - k) / (2 sigma^2)), summed in log space for all orders at once."""
    q, sigma = sampling_rate, noise_multiplier
    if q == 1.0:
        return INTEGER_ORDERS / (2 * sigma**2)
    # (alpha - k) log(1-q) + k log q = alpha log(1-q) + k log(q / (1-q))
    per_k = _K * (math.log(q) - math.log1p(-q)) + (_K * _K - _K) / (2 * sigma**2)
    log_a = logsumexp(_LOG_BINOMIAL + per_k[None, :], axis=1) + INTEGER_ORDERS * math.log1p(-q)
    return log_a / (INTEGER_ORDERS - 1)


def ledger_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float
                   ) -> float:
    """Epsilon of ``steps`` subsampled Gaussian steps from the integer-order RDP bound.

    The same RDP-to-(epsilon, delta) conversion as the ``"rdp"`` accountant of
    :func:`fedlib.privacy.epsilon`, over integer orders only: a valid bound, at most
    slightly above that accountant's (which also uses fractional orders), and a
    thousand times faster, so that the ledger can be consulted every round.
    """
    if steps == 0:
        return 0.0
    if noise_multiplier <= 0:
        return math.inf
    rdp = steps * _integer_order_rdp(float(noise_multiplier), float(sampling_rate))
    return float(rdp_to_epsilon(INTEGER_ORDERS, rdp, delta))


@lru_cache(maxsize=4096)
def calibrated_noise_multiplier(budget: float, sampling_rate: float, steps: int, delta: float
                                ) -> float:
    """Smallest noise multiplier (to :data:`CALIBRATION_TOLERANCE`, relative) whose
    :func:`ledger_epsilon` after ``steps`` steps is within ``budget`` (cached)."""
    if not (budget > 0 and math.isfinite(budget)):
        raise ValueError(f"budget must be positive and finite, got {budget}")
    low, high = 0.0, 1.0
    while ledger_epsilon(high, sampling_rate, steps, delta) > budget:
        low, high = high, 2 * high
        if high > 1e6:
            raise ValueError(f"budget {budget} cannot be met at sampling rate "
                             f"{sampling_rate} over {steps} steps with delta {delta}")
    if low == 0.0:
        low = high / 2
        while low > 1e-3 and ledger_epsilon(low, sampling_rate, steps, delta) <= budget:
            low, high = low / 2, low
    while high / low > 1 + CALIBRATION_TOLERANCE:
        middle = math.sqrt(low * high)
        if ledger_epsilon(middle, sampling_rate, steps, delta) <= budget:
            high = middle
        else:
            low = middle
    return high


@dataclass
class PrivacyLedger:
    """Per-client noise multipliers calibrated to budgets, and the epsilon each has spent.

    Parameters
    ----------
    budgets
        epsilon_m per client.
    delta
        delta, shared by all clients.
    sampling_rates
        q_m = B / N_m per client.
    steps_per_round
        tau, the DP-SGD steps of one participation.
    planned_rounds
        Participations the noise is calibrated for (:func:`expected_rounds`).

    Calibration and spending use :func:`ledger_epsilon` (RDP over integer orders);
    what a client spent can be checked with any accountant of
    :func:`fedlib.privacy.epsilon`.
    """

    budgets: np.ndarray
    delta: float
    sampling_rates: np.ndarray
    steps_per_round: int
    planned_rounds: int
    noise_multipliers: np.ndarray = field(init=False)
    rounds_taken: np.ndarray = field(init=False)
    _cache: dict[tuple[float, float, int], float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.budgets = np.asarray(self.budgets, dtype=float)
        self.sampling_rates = np.broadcast_to(
            np.asarray(self.sampling_rates, dtype=float), self.budgets.shape).copy()
        if not (np.all(np.isfinite(self.budgets)) and np.all(self.budgets > 0)):
            raise ValueError("every budget epsilon_m must be positive and finite")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")
        if self.steps_per_round < 1 or self.planned_rounds < 1:
            raise ValueError("steps_per_round and planned_rounds must be >= 1")
        self._cache = {}
        steps = self.steps_per_round * self.planned_rounds
        self.noise_multipliers = np.array([
            calibrated_noise_multiplier(float(budget), float(q), steps, self.delta)
            for budget, q in zip(self.budgets, self.sampling_rates, strict=True)])
        self.rounds_taken = np.zeros(len(self.budgets), dtype=int)

    def spent_after(self, client: int, rounds: int) -> float:
        """Epsilon of ``client`` after ``rounds`` participations."""
        key = (float(self.noise_multipliers[client]), float(self.sampling_rates[client]), rounds)
        if key not in self._cache:
            self._cache[key] = ledger_epsilon(key[0], key[1], rounds * self.steps_per_round,
                                              self.delta)
        return self._cache[key]

    def spent(self) -> np.ndarray:
        """Epsilon spent so far by every client."""
        return np.array([self.spent_after(m, int(r)) for m, r in enumerate(self.rounds_taken)])

    def can_take_part(self) -> np.ndarray:
        """Mask of the clients whose next round keeps them within their budget."""
        return np.array([self.spent_after(m, int(r) + 1) <= self.budgets[m]
                         for m, r in enumerate(self.rounds_taken)])

    def record(self, clients: Sequence[int]) -> None:
        """Charge one round to each of ``clients``; refuses a client over its budget."""
        clients = np.asarray(clients, dtype=int)
        allowed = self.can_take_part()
        if not np.all(allowed[clients]):
            raise ValueError(f"clients {clients[~allowed[clients]].tolist()} have no budget "
                             "left for another round")
        np.add.at(self.rounds_taken, clients, 1)
