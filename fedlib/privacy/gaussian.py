"""The exact privacy of a Gaussian mechanism composed without subsampling.

``steps`` releases of a sensitivity-1 query, each with Gaussian noise of standard
deviation ``noise_multiplier``, are together exactly one Gaussian mechanism with
``mu = sqrt(steps) / noise_multiplier`` (mu-Gaussian differential privacy; Dong, Roth and
Su 2019, Corollary 3.3). Its tight (epsilon, delta) curve has a closed form (Balle and
Wang 2018, Theorem 8)::

    delta(epsilon) = Phi(-epsilon / mu + mu / 2) - exp(epsilon) Phi(-epsilon / mu - mu / 2)

:func:`gaussian_epsilon` inverts it. It is what a PLD accountant converges to for such a
mechanism, computed in microseconds at any epsilon (a PLD accountant needs seconds where
epsilon is in the thousands), and it does not depend on a discretisation.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr

from fedlib.checks import check_count, check_delta, check_non_negative

__all__ = ["gaussian_delta", "gaussian_epsilon", "gaussian_mu"]


def gaussian_mu(noise_multiplier: float, steps: int) -> float:
    """The mu of ``steps`` Gaussian releases of noise multiplier ``noise_multiplier``."""
    check_non_negative(noise_multiplier, "noise_multiplier")
    check_count(steps, "steps", minimum=1)
    if noise_multiplier == 0:
        return math.inf
    return math.sqrt(steps) / noise_multiplier


def _log_delta(epsilon: float, mu: float) -> float:
    """log delta(epsilon) of a mu-Gaussian mechanism, in log space (exp(epsilon) alone
    overflows past epsilon = 709)."""
    upper = float(log_ndtr(-epsilon / mu + mu / 2))
    lower = float(epsilon + log_ndtr(-epsilon / mu - mu / 2))
    if lower >= upper:  # equal to rounding: delta is below what a float resolves
        return -math.inf
    return upper + math.log1p(-math.exp(lower - upper))


def gaussian_delta(epsilon: float, mu: float) -> float:
    """The smallest delta for which a mu-Gaussian mechanism is (epsilon, delta)-DP."""
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if not mu > 0:
        raise ValueError(f"mu must be > 0, got {mu!r}")
    return math.exp(_log_delta(epsilon, mu))


def gaussian_epsilon(noise_multiplier: float, steps: int, delta: float) -> float:
    """The smallest epsilon for which ``steps`` Gaussian releases of sensitivity-1 queries
    with noise multiplier ``noise_multiplier`` (no subsampling) are (epsilon, delta)-DP:
    0 where delta alone covers them, infinity without noise."""
    check_delta(delta)
    mu = gaussian_mu(noise_multiplier, steps)
    if math.isinf(mu):
        return math.inf
    target = math.log(delta)
    if _log_delta(0.0, mu) <= target:
        return 0.0
    # delta(epsilon) <= Phi(mu / 2 - epsilon / mu) <= exp(-(epsilon / mu - mu / 2)^2 / 2) / 2
    # past mu^2 / 2 (a Gaussian tail bound), so delta(high) <= delta / 2: the answer lies
    # below high.
    high = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta))
    floor = -1e300  # brentq needs finite values where delta underflows

    def gap(e: float) -> float:
        return max(_log_delta(e, mu), floor) - target

    return float(brentq(gap, 0.0, high, xtol=1e-12, rtol=1e-12, maxiter=500))
