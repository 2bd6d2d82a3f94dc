"""Privacy units, targets and the exact calibration of the comparison.

The five papers state their guarantees in different units and calibrate noise with
closed forms. Here every method is run in one of three stated units, with a noise
multiplier found by the project's privacy-loss-distribution accountant
(:func:`fedlib.privacy.accounting.noise_multiplier_for_epsilon` with ``"pld"``, tighter
than Renyi DP), and every client's spent epsilon is recomputed from what was actually run
and checked against the target. :func:`tuning_epsilon` states what choosing among a
grid's fits spends on top.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from fedlib.checks import check_count, check_probability, is_real
from fedlib.privacy.accounting import (
    ACCOUNTANTS,
    epsilon_curve,
    noise_multiplier_for_epsilon,
    rdp_to_epsilon,
)

__all__ = [
    "CALIBRATION_TOLERANCE",
    "BudgetExceededError",
    "Calibration",
    "PrivacyUnit",
    "Target",
    "calibrate",
    "check_within_target",
    "spent_epsilon",
    "tuning_epsilon",
]

CALIBRATION_TOLERANCE = 1e-4
"""Relative tolerance of the noise multiplier found by the accountant's bisection."""

ACCOUNTANT = "pld"
"""The accountant that calibrates every run and recomputes every client's epsilon: the
privacy loss distribution of the Poisson-subsampled Gaussian (tighter than Renyi DP,
which leaves 7 to 14 % of the target unspent at these settings)."""


class PrivacyUnit(Enum):
    """What is protected, against whom, and how it is accounted.

    EXAMPLE
        Example-level DP of everything a client sends, against an honest-but-curious
        server (and anyone who sees the uploads). Each client clips every example's
        gradient to norm ``clip`` and adds Gaussian noise to each local step's sum
        before it leaves the device; examples enter a step by Poisson sampling with
        rate ``sample_rate``. A client is accounted over all its local steps of all the
        rounds it took part in (``local_steps x participations`` compositions of the
        subsampled Gaussian mechanism). The server needs no trust; what it computes
        from the uploads is post-processing.
    USER
        User-level DP of what the server releases (the global model), with a trusted
        aggregator. Each client's whole update is clipped; the server adds Gaussian
        noise once to the sum of the clipped updates of the clients sampled (Poisson,
        rate ``client_rate``) that round. Every client is accounted over the rounds run,
        one composition per round, with the client sampling rate. What a client keeps
        for itself (a personal model) is not released and not covered (joint DP,
        billboard model).
    SILO
        Silo-specific example-level DP (Liu et al. 2022, "On privacy and personalization
        in cross-silo federated learning"): everything computed from a client's
        examples, its personal model included, is DP for one example. Every step that
        reads the client's examples -- local training, fine-tuning, personal steps, the
        steps behind each upload -- is DP-SGD (per-example clipping, Gaussian noise), and
        a client is accounted over all of them. Nothing is free: local training spends
        the target too.

    On a federation of people (HAR volunteers, FEMNIST writers) the example units protect
    one recording or one digit, not the person: a person's many examples add up, and
    only the USER unit protects the person.
    """

    EXAMPLE = "example"
    USER = "user"
    SILO = "silo"


class BudgetExceededError(RuntimeError):
    """A client spent more privacy than the target allows."""


@dataclass(frozen=True)
class Target:
    """A privacy target (epsilon, delta); ``epsilon = math.inf`` asks for no privacy.

    Raises
    ------
    ValueError
        If epsilon is not > 0 (a number or inf) or delta not in (0, 1).
    """

    epsilon: float
    delta: float = 1e-5

    def __post_init__(self) -> None:
        eps, delta = self.epsilon, self.delta
        if not is_real(eps) or math.isnan(eps) or eps <= 0:
            raise ValueError(
                f"Target epsilon must be a number > 0 or math.inf (no privacy), got {eps!r}; "
                "e.g. Target(epsilon=1.0, delta=1e-5)."
            )
        if not is_real(delta) or not math.isfinite(delta) or not 0 < delta < 1:
            raise ValueError(
                f"Target delta must satisfy 0 < delta < 1, got {delta!r}; use a value well "
                "below 1/n for n protected records, e.g. delta=1e-5."
            )
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "delta", float(delta))

    @property
    def private(self) -> bool:
        """Whether the target asks for privacy (a finite epsilon)."""
        return math.isfinite(self.epsilon)


@dataclass(frozen=True)
class Calibration:
    """The noise of one run: the multiplier the accountant gives for the planned run.

    Attributes
    ----------
    unit, target
        The privacy unit and target.
    noise_multiplier
        Noise standard deviation / L2 sensitivity (0.0 for no privacy).
    sampling_rate
        Poisson rate of the protected record per composition: ``sample_rate`` (EXAMPLE)
        or ``client_rate`` (USER).
    compositions
        Planned compositions of the most exposed client (EXAMPLE: local steps x rounds;
        USER: rounds).
    accountant
        Accountant name (see :data:`fedlib.privacy.accounting.ACCOUNTANTS`).
    """

    unit: PrivacyUnit
    target: Target
    noise_multiplier: float
    sampling_rate: float
    compositions: int
    accountant: str = ACCOUNTANT

    @property
    def private(self) -> bool:
        return self.target.private


def _check_unit(unit: PrivacyUnit) -> PrivacyUnit:
    if not isinstance(unit, PrivacyUnit):
        raise ValueError(
            "unit must be a PrivacyUnit (PrivacyUnit.EXAMPLE, PrivacyUnit.USER or "
            f"PrivacyUnit.SILO), got {unit!r}."
        )
    return unit


def _check_accountant(accountant: str) -> str:
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}.")
    return accountant


def calibrate(unit: PrivacyUnit, target: Target, sampling_rate: float, compositions: int,
              accountant: str = ACCOUNTANT) -> Calibration:
    """The smallest noise multiplier whose epsilon after ``compositions`` Poisson-subsampled
    Gaussian steps at ``sampling_rate`` is at most ``target.epsilon`` (exact accountant).

    For ``target.epsilon == inf`` the multiplier is 0 (no clipping, no noise).
    """
    _check_unit(unit)
    if not isinstance(target, Target):
        raise ValueError(f"target must be a Target(epsilon, delta), got {target!r}.")
    rate = check_probability(sampling_rate, "sampling_rate")
    steps = check_count(compositions, "compositions")
    _check_accountant(accountant)
    if not target.private or steps == 0:
        sigma = 0.0
    else:
        sigma = _noise_multiplier(target.epsilon, rate, steps, target.delta, accountant)
    return Calibration(unit, target, sigma, rate, steps, accountant)


_CACHE: dict[tuple[float, float, int, float, str], float] = {}


def _noise_multiplier(eps: float, rate: float, steps: int, delta: float, accountant: str
                      ) -> float:
    """Cached :func:`noise_multiplier_for_epsilon` (tuning calibrates the same run often)."""
    key = (eps, rate, steps, delta, accountant)
    if key not in _CACHE:
        _CACHE[key] = noise_multiplier_for_epsilon(eps, rate, steps, delta, accountant,
                                                   tol=CALIBRATION_TOLERANCE)
    return _CACHE[key]


def spent_epsilon(calibration: Calibration, compositions: np.ndarray) -> np.ndarray:
    """Each client's epsilon after the compositions it actually took part in.

    Parameters
    ----------
    calibration
        The run's calibration.
    compositions
        Per client, the number of compositions it was exposed to (EXAMPLE: its local
        DP steps; USER: the rounds run).

    Returns
    -------
    numpy.ndarray
        float ``(n_clients,)``; ``inf`` for a client exposed without noise, 0 for a
        client never exposed.
    """
    counts = np.asarray(compositions, dtype=np.int64)
    if counts.ndim != 1 or (counts < 0).any():
        raise ValueError("compositions must be a 1-D array of non-negative counts per client.")
    if not calibration.private:
        return np.where(counts > 0, math.inf, 0.0)
    distinct = np.unique(counts)
    curve = np.array([_epsilon_after(calibration.noise_multiplier, calibration.sampling_rate,
                                     int(c), calibration.target.delta, calibration.accountant)
                      for c in distinct])
    return curve[np.searchsorted(distinct, counts)]


_SPENT: dict[tuple[float, float, int, float, str], float] = {}


def _epsilon_after(sigma: float, rate: float, count: int, delta: float, accountant: str
                   ) -> float:
    """Cached epsilon after ``count`` compositions (a tuning's fits share their counts)."""
    key = (sigma, rate, count, delta, accountant)
    if key not in _SPENT:
        _SPENT[key] = (0.0 if count == 0 else
                       float(epsilon_curve(sigma, rate, count, delta, accountant,
                                           at=[count])[0]))
    return _SPENT[key]


def check_within_target(spent: np.ndarray, target: Target) -> None:
    """Raise :class:`BudgetExceededError` unless every client's spent epsilon <= target."""
    spent = np.asarray(spent, dtype=float)
    if not target.private:
        return
    over = np.flatnonzero(~(spent <= target.epsilon))
    if len(over):
        worst = int(over[np.argmax(spent[over])])
        raise BudgetExceededError(
            f"{len(over)} client(s) spent more than epsilon={target.epsilon:g} (client {worst}: "
            f"{spent[worst]:.6g}); the run does not meet its target and its result must not be "
            "used: check the calibration's planned compositions against the run."
        )


def tuning_epsilon(calibrations: list[Calibration], compositions: list[int]) -> float:
    """Epsilon of releasing every fit of a tuning at once (the scores it chose from): the
    composition of each fit's mechanism (its noise multiplier and sampling rate, over
    ``compositions`` of it, the most any client took part in), by Renyi DP (a valid upper
    bound; RDP adds up over the fits, each step's curve computed once per noise and
    rate), at the common target's delta. ``inf`` if any fit ran without noise; 0.0 if
    none touched the data.
    """
    if len(calibrations) != len(compositions) or not calibrations:
        raise ValueError("tuning_epsilon needs one composition count per calibration (>= 1).")
    total = None
    for calibration, count in zip(calibrations, compositions, strict=True):
        if count == 0:
            continue
        if not calibration.private or calibration.noise_multiplier == 0:
            return math.inf
        orders, per_step = _step_rdp(calibration.noise_multiplier, calibration.sampling_rate)
        total = count * per_step if total is None else total + count * per_step
    if total is None:
        return 0.0
    return float(rdp_to_epsilon(orders, total, calibrations[0].target.delta))


@functools.lru_cache(maxsize=256)
def _step_rdp(sigma: float, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Orders and RDP of one Poisson-subsampled Gaussian step (cached)."""
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    step = dp_accounting.GaussianDpEvent(sigma)
    if rate < 1.0:
        step = dp_accounting.PoissonSampledDpEvent(rate, step)
    accountant = RdpAccountant()
    # The library logs each fractional order whose series does not converge and drops
    # it, which keeps the bound valid (only possibly looser): not a reader's concern.
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        accountant.compose(step)
    finally:
        logger.setLevel(level)
    return np.asarray(accountant.orders, dtype=float), np.asarray(accountant.rdp, dtype=float)
