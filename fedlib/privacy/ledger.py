"""Per-client privacy budgets: calibration with an exact accountant, and a ledger.

Each client m of a federation may have its own budget (epsilon_m, delta) (the
setting of PFA, Liu et al. 2022, whose budget distributions live in
:mod:`fedlib.papers.pfa.budgets`). Its DP-SGD noise multiplier is fixed once from that
budget with an exact accountant (the Poisson-subsampled Gaussian mechanism at sampling rate
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
from typing import ClassVar

import numpy as np
from scipy.special import gammaln, logsumexp

from fedlib.privacy.accounting import rdp_to_epsilon

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
    :func:`fedlib.privacy.epsilon`. A subclass changes both by overriding
    :meth:`calibrate` and :meth:`epsilon_after`.
    """

    budgets: np.ndarray
    delta: float
    sampling_rates: np.ndarray
    steps_per_round: int
    planned_rounds: int
    noise_multipliers: np.ndarray = field(init=False)
    rounds_taken: np.ndarray = field(init=False)
    _cache: dict[tuple[float, float, int], float] = field(init=False, repr=False)
    slack: ClassVar[float] = 0.0
    """Relative slack of the retirement test (none: the accountant's epsilon is exact)."""

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
            self.calibrate(float(budget), float(q), steps)
            for budget, q in zip(self.budgets, self.sampling_rates, strict=True)])
        self.rounds_taken = np.zeros(len(self.budgets), dtype=int)

    def calibrate(self, budget: float, sampling_rate: float, steps: int) -> float:
        """Noise multiplier of a client with ``budget`` over ``steps`` steps."""
        return calibrated_noise_multiplier(budget, sampling_rate, steps, self.delta)

    def epsilon_after(self, noise_multiplier: float, sampling_rate: float, steps: int
                      ) -> float:
        """Epsilon a client has spent after ``steps`` steps."""
        return ledger_epsilon(noise_multiplier, sampling_rate, steps, self.delta)

    def spent_after(self, client: int, rounds: int) -> float:
        """Epsilon of ``client`` after ``rounds`` participations."""
        key = (float(self.noise_multipliers[client]), float(self.sampling_rates[client]), rounds)
        if key not in self._cache:
            self._cache[key] = self.epsilon_after(key[0], key[1], rounds * self.steps_per_round)
        return self._cache[key]

    def spent(self) -> np.ndarray:
        """Epsilon spent so far by every client."""
        return np.array([self.spent_after(m, int(r)) for m, r in enumerate(self.rounds_taken)])

    def can_take_part(self) -> np.ndarray:
        """Mask of the clients whose next round keeps them within their budget."""
        limits = self.budgets * (1 + self.slack)
        return np.array([self.spent_after(m, int(r) + 1) <= limits[m]
                         for m, r in enumerate(self.rounds_taken)])

    def record(self, clients: Sequence[int]) -> None:
        """Charge one round to each of ``clients``; refuses a client over its budget."""
        clients = np.asarray(clients, dtype=int)
        allowed = self.can_take_part()
        if not np.all(allowed[clients]):
            raise ValueError(f"clients {clients[~allowed[clients]].tolist()} have no budget "
                             "left for another round")
        np.add.at(self.rounds_taken, clients, 1)
