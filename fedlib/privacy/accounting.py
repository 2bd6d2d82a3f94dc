"""Exact privacy accountants for the Poisson-subsampled Gaussian mechanism.

One step releases ``f(batch) + N(0, (noise_multiplier * sensitivity)^2)`` where
each record enters the batch independently with probability ``sampling_rate``
(add/remove-one adjacency). The functions give the epsilon of ``steps`` such
releases at a target delta under three accountants:

``"rdp"``
    Google ``dp_accounting`` Renyi-DP accountant: RDP of the subsampled Gaussian
    (Mironov, Talwar & Zhang 2019) over ``dp_accounting``'s default orders,
    converted with the bound of Canonne, Kamath & Steinke (2020, Prop. 12) /
    Balle et al. (2020, Thm. 21), plus a KL bound for tiny RDP values.
``"pld"``
    Google ``dp_accounting`` privacy-loss-distribution accountant (connect-the-dots,
    pessimistic discretisation: an upper bound that converges to the exact
    epsilon). The discretisation is refined until epsilon moves by less than
    :data:`PLD_RELATIVE_ACCURACY` (relative) or :data:`PLD_ABSOLUTE_ACCURACY`.
``"opacus-rdp"``
    Opacus RDP analysis (same conversion without the KL bound, fewer orders: 1.1
    to 10.9 and 12 to 63), kept as an independent cross-check.

PLD is the tightest; RDP is an upper bound that is typically 5-30 % above it.

Known differences between the two RDP accountants: without subsampling they
compute identical RDP values and ``"rdp"`` is never looser (more orders). With
subsampling, ``dp_accounting`` 0.6 sums the absolute values of the
fractional-order series of A_alpha and drops orders where that sum fails to
converge (logged as "_compute_log_a_frac failed to converge"), so its RDP at
fractional orders is an over-estimate (a valid but looser bound) and Opacus can
come out slightly tighter (about 0.1 % in typical DP-SGD settings, much more at
epsilon in the hundreds). Both RDP conversions have a floor: epsilon never
drops below about ln(1/delta) / (largest order - 1), i.e. ~0.004 for ``"rdp"``
and ~0.1 for ``"opacus-rdp"`` at delta = 1e-5.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from numbers import Real

import dp_accounting
import numpy as np
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from fedlib.checks import (
    check_count,
    check_delta,
    check_epsilon,
    check_probability,
    is_real,
)

__all__ = [
    "ACCOUNTANTS",
    "MIN_TOLERANCE",
    "PLD_ABSOLUTE_ACCURACY",
    "PLD_MIN_NOISE",
    "PLD_RELATIVE_ACCURACY",
    "TINY_NOISE_MULTIPLIER",
    "epsilon",
    "epsilon_curve",
    "noise_multiplier_for_epsilon",
    "rdp_to_epsilon",
]

ACCOUNTANTS = ("rdp", "pld", "opacus-rdp")
"""Names accepted by the ``accountant`` argument."""

PLD_RELATIVE_ACCURACY = 1e-3
"""The PLD discretisation is refined until epsilon changes by less than this fraction."""

PLD_ABSOLUTE_ACCURACY = 1e-5
"""... or by less than this absolute amount (for epsilons near zero)."""

_PLD_FIRST_INTERVAL = 1e-2
_PLD_REFINEMENT = 3.0
_PLD_FINEST_INTERVAL = 1e-5

_PLD_TIME_BUDGET_S = 60.0
"""Wall-clock budget of the PLD refinement: past it, the finest (still pessimistic,
hence valid) value computed so far is returned, with a warning."""

PLD_MIN_NOISE = {"subsampled": 0.05, "full": 0.01}
"""Smallest noise multiplier the PLD accountant takes, with subsampling (q < 1) and
without (q = 1): below it the discretised privacy loss spreads over so many buckets
that the computation runs for minutes or exhausts memory (at 0.001 without
subsampling it asks for 75 GiB); epsilon is above 1,000 there anyway, and the RDP
accountant gives a valid upper bound at once."""

TINY_NOISE_MULTIPLIER = 1e-3
"""Below this noise multiplier one step alone costs an epsilon above 10^5 at any
delta of interest, and the accountants lose their precision (squared multipliers
underflow, series diverge): every accountant then reports ``math.inf``, the valid
statement that such noise guarantees nothing."""

_CURVE_CHUNK = 4096
"""Rows of step counts converted at once by the vectorized RDP conversion."""

MIN_TOLERANCE = 1e-12
"""Smallest relative tolerance :func:`noise_multiplier_for_epsilon` takes: a float's
relative spacing is 2.2e-16, so a bracket cannot shrink much below this."""

_BRACKET_LIMITS = (1e-6, 1e6)
"""Noise multipliers searched by :func:`noise_multiplier_for_epsilon`."""


# ---------------------------------------------------------------------------
# Input checks
# ---------------------------------------------------------------------------


def _check_accountant(accountant: str) -> str:
    if accountant not in ACCOUNTANTS:
        valid = ", ".join(repr(name) for name in ACCOUNTANTS)
        raise ValueError(f"accountant must be one of {valid}, got {accountant!r}.")
    return accountant


def _check_noise_multiplier(value: float) -> float:
    if not is_real(value):
        raise ValueError(f"noise_multiplier must be a number >= 0, got {value!r}.")
    if math.isnan(value) or value < 0:
        raise ValueError(
            f"noise_multiplier must be >= 0 (noise standard deviation / sensitivity), "
            f"got {value!r}."
        )
    return float(value)


def _check_sampling_rate(value: float) -> float:
    return check_probability(value, "sampling_rate")


# ---------------------------------------------------------------------------
# Events and the single-count accountants
# ---------------------------------------------------------------------------


def _event(noise_multiplier: float, sampling_rate: float, steps: int) -> dp_accounting.DpEvent:
    """``steps`` self-compositions of the (Poisson-subsampled) Gaussian mechanism.

    Without subsampling the plain Gaussian event is used: both libraries treat
    it exactly (the PLD accountant then composes analytically, sigma / sqrt(steps)).
    """
    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    step = (
        gaussian
        if sampling_rate == 1.0
        else dp_accounting.PoissonSampledDpEvent(sampling_rate, gaussian)
    )
    return dp_accounting.SelfComposedDpEvent(step, steps)


@contextlib.contextmanager
def _quiet_series_warnings() -> Iterator[None]:
    """Silence ``dp_accounting``'s log line for a fractional RDP order whose series
    does not converge: the library then drops that order, which keeps the bound
    valid (only possibly looser), so the message is noise on every page."""
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _rdp_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    accountant = RdpAccountant()
    with _quiet_series_warnings():
        accountant.compose(_event(noise_multiplier, sampling_rate, steps))
    return float(accountant.get_epsilon(delta))


def _pld_epsilon_at(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float, interval: float
) -> float:
    accountant = PLDAccountant(value_discretization_interval=interval)
    accountant.compose(_event(noise_multiplier, sampling_rate, steps))
    return float(accountant.get_epsilon(delta))


def _pld_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """PLD epsilon, refining the discretisation until it has converged.

    Every value computed is a pessimistic (valid upper-bound) estimate; the
    finest one is returned.
    """
    interval = _PLD_FIRST_INTERVAL
    started = time.monotonic()
    previous = _pld_epsilon_at(noise_multiplier, sampling_rate, steps, delta, interval)
    while interval > _PLD_FINEST_INTERVAL and math.isfinite(previous):
        if time.monotonic() - started > _PLD_TIME_BUDGET_S:
            warnings.warn(
                f"PLD accountant: stopped refining after {_PLD_TIME_BUDGET_S:.0f} s at "
                f"discretisation {interval:g}; epsilon={previous:.6g} is a valid upper bound "
                "that may be looser than the converged value", RuntimeWarning, stacklevel=3)
            return previous
        interval /= _PLD_REFINEMENT
        current = _pld_epsilon_at(noise_multiplier, sampling_rate, steps, delta, interval)
        change = previous - current
        if change <= max(PLD_RELATIVE_ACCURACY * current, PLD_ABSOLUTE_ACCURACY):
            return current
        previous = current
    return previous


def _opacus_orders() -> list[float]:
    from opacus.accountants import RDPAccountant

    return list(RDPAccountant.DEFAULT_ALPHAS)


def _opacus_epsilon(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float
) -> float:
    """Opacus' RDP accountant with its default orders, as Opacus users get it.

    At large noise the best order can be the largest of Opacus' grid, where its
    bound is looser than with a wider grid; Opacus warns about it, the value is
    still a valid upper bound, and the cross-check reports it as is.
    """
    from opacus.accountants.analysis import rdp as opacus_rdp

    orders = _opacus_orders()
    rdp = opacus_rdp.compute_rdp(
        q=sampling_rate, noise_multiplier=noise_multiplier, steps=steps, orders=orders
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        eps, _ = opacus_rdp.get_privacy_spent(orders=orders, rdp=rdp, delta=delta)
    return max(0.0, float(eps))


_EPSILON: dict[str, Callable[[float, float, int, float], float]] = {
    "rdp": _rdp_epsilon,
    "pld": _pld_epsilon,
    "opacus-rdp": _opacus_epsilon,
}


def _trivial_epsilon(noise_multiplier: float, steps: int) -> float | None:
    """Epsilon where no accountant is needed: no steps, infinite noise (0), no noise
    or noise too small to guarantee anything (inf, see :data:`TINY_NOISE_MULTIPLIER`)."""
    if steps == 0 or math.isinf(noise_multiplier):
        return 0.0
    if noise_multiplier < TINY_NOISE_MULTIPLIER:
        return math.inf
    return None


def _check_pld_range(noise_multiplier: float, sampling_rate: float) -> None:
    kind = "subsampled" if sampling_rate < 1.0 else "full"
    floor = PLD_MIN_NOISE[kind]
    if noise_multiplier < floor:
        raise ValueError(
            f"noise_multiplier={noise_multiplier!r} with sampling_rate={sampling_rate!r} is "
            f"below what the PLD accountant can compute (>= {floor} "
            f"{'with' if kind == 'subsampled' else 'without'} subsampling): use "
            "accountant='rdp', a valid upper bound (epsilon is above 1,000 at such noise)."
        )


_RDP_ROUNDING = 1e-14
"""Allowance per step for the rounding of a one-step RDP value near zero (its logarithm
of a sum of terms near 1 is exact to a few units of 1e-16): a zero epsilon is trusted
only if it still follows with this much more RDP per step."""


def _certified_zero(noise_multiplier: float, sampling_rate: float, steps: int,
                    delta: float) -> bool:
    """Whether (0, delta)-DP follows for these steps: the KL divergence (at most the RDP
    at the smallest order) is so small that the total variation distance, at most
    sqrt(1 - exp(-KL)) (Bretagnolle-Huber), is at most delta. This is the bound the
    ``rdp`` accountant applies itself; here it is checked with a rounding allowance."""
    orders, per_step = _per_step_rdp(noise_multiplier, sampling_rate, "rdp")
    smallest = per_step[int(np.argmin(orders))]
    if not math.isfinite(smallest) or smallest < 0:
        return False
    total = steps * (smallest + _RDP_ROUNDING)
    return delta ** 2 + math.expm1(-total) > 0


def _checked_result(value: float, noise_multiplier: float, sampling_rate: float, steps: int,
                    delta: float, accountant: str) -> float:
    """An accountant's epsilon, or a valid replacement where the library broke down.

    A positive epsilon is returned as is, and so is zero where it is a valid answer:
    the PLD accountant's estimate is pessimistic and Opacus' conversion is a bound, so
    their zero means (0, delta)-DP holds; the ``rdp`` accountant's zero comes from its
    KL shortcut, trusted where :func:`_certified_zero` confirms it with a rounding
    allowance and replaced otherwise by the order-by-order conversion without the
    shortcut (a valid bound, continuous in the steps). A NaN or a negative value means
    the library lost its precision: epsilon grows with the sampling rate, so the
    accountant is then asked at twice the rate, and so on up to no subsampling (the
    first valid value is an upper bound, and the closest to the true one this way).
    """
    if math.isfinite(value) and value > 0 or value == math.inf:
        return value
    if value == 0:
        if accountant != "rdp" or _certified_zero(noise_multiplier, sampling_rate, steps,
                                                  delta):
            return 0.0
        orders, per_step = _per_step_rdp(noise_multiplier, sampling_rate, "rdp")
        return float(rdp_to_epsilon(orders, steps * per_step, delta, kl_bound=False))
    if sampling_rate < 1.0:
        higher = min(1.0, 2.0 * sampling_rate)
        return _checked_result(_EPSILON[accountant](noise_multiplier, higher, steps, delta),
                               noise_multiplier, higher, steps, delta, accountant)
    return math.inf


# ---------------------------------------------------------------------------
# Vectorized RDP -> (epsilon, delta) conversions
# ---------------------------------------------------------------------------


def rdp_to_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float,
                   kl_bound: bool = True) -> np.ndarray:
    """Convert RDP curves to epsilon exactly as ``dp_accounting`` does, vectorized.

    Row by row this is ``dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon``:
    for each order a > 1.01, ``eps = rdp + log1p(-1/a) - log(delta a) / (a - 1)``
    (Canonne, Kamath & Steinke 2020, Prop. 12; Balle et al. 2020, Thm. 21);
    epsilon 0 where ``delta^2 + expm1(-rdp) > 0`` (KL bound) or the RDP is
    negative; minimum over orders, clipped at 0.

    Parameters
    ----------
    orders : numpy.ndarray
        RDP orders, shape (k,), all >= 1.
    rdp : numpy.ndarray
        RDP values, shape (n, k) (or (k,)).
    delta : float
        Target delta, 0 < delta < 1.
    kl_bound : bool, optional
        Apply the KL bound (epsilon 0 for tiny RDP), as ``dp_accounting`` does (default).

    Returns
    -------
    numpy.ndarray
        Epsilons, shape (n,) (or a 0-d array for 1-D ``rdp``).
    """
    delta = check_delta(delta)
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        eps = r + np.log1p(-1.0 / a) - np.log(delta * a) / (a - 1.0)
        eps = np.where(a > 1.01, eps, np.inf)
        if kl_bound:
            eps = np.where(delta**2 + np.expm1(-r) > 0, 0.0, eps)
    eps = np.where(r < 0, 0.0, eps)
    return np.maximum(0.0, eps.min(axis=-1))


def _opacus_rdp_to_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float) -> np.ndarray:
    """Opacus's ``get_privacy_spent`` conversion, vectorized over rows of ``rdp``."""
    a = np.asarray(orders, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        eps = rdp - (np.log(delta) + np.log(a)) / (a - 1) + np.log((a - 1) / a)
    all_nan = np.isnan(eps).all(axis=-1)
    eps = np.where(np.isnan(eps), np.inf, eps).min(axis=-1)
    return np.maximum(0.0, np.where(all_nan, np.inf, eps))


def _per_step_rdp(
    noise_multiplier: float, sampling_rate: float, accountant: str
) -> tuple[np.ndarray, np.ndarray]:
    """Orders and RDP of one step, from the accountant's own library."""
    if accountant == "rdp":
        library = RdpAccountant()
        with _quiet_series_warnings():
            library.compose(_event(noise_multiplier, sampling_rate, 1))
        return library.orders, library.rdp
    from opacus.accountants.analysis import rdp as opacus_rdp

    orders = _opacus_orders()
    rdp = opacus_rdp.compute_rdp(
        q=sampling_rate, noise_multiplier=noise_multiplier, steps=1, orders=orders
    )
    return np.asarray(orders, dtype=float), np.asarray(rdp, dtype=float)


def _rdp_curve(
    noise_multiplier: float, sampling_rate: float, counts: np.ndarray, delta: float, accountant: str
) -> np.ndarray:
    """Epsilon after each of ``counts`` steps: RDP is additive, so t * (one-step RDP)."""
    orders, per_step = _per_step_rdp(noise_multiplier, sampling_rate, accountant)
    convert = rdp_to_epsilon if accountant == "rdp" else _opacus_rdp_to_epsilon
    out = np.empty(len(counts), dtype=float)
    for start in range(0, len(counts), _CURVE_CHUNK):
        block = counts[start : start + _CURVE_CHUNK]
        # An order the library dropped has infinite RDP; after 0 steps every order is 0.
        with np.errstate(invalid="ignore"):  # 0 x inf, replaced by 0 here
            rdp = np.where(block[:, None] == 0, 0.0, block[:, None] * per_step[None, :])
        out[start : start + len(block)] = convert(orders, rdp, delta)
    return out


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def epsilon(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    accountant: str = "rdp",
) -> float:
    """Epsilon of ``steps`` compositions of the Poisson-subsampled Gaussian mechanism.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation divided by the L2 sensitivity, >= 0.
    sampling_rate : float
        Probability that a record takes part in a step, 0 < q <= 1.
    steps : int
        Number of compositions, >= 0.
    delta : float
        Target delta, 0 < delta < 1.
    accountant : {"rdp", "pld", "opacus-rdp"}, optional
        Which accountant to use (default ``"rdp"``).

    Returns
    -------
    float
        The epsilon; 0.0 for ``steps == 0``, ``math.inf`` for a noise multiplier
        below :data:`TINY_NOISE_MULTIPLIER` (0 included) with ``steps > 0``.

    Raises
    ------
    ValueError
        If an argument is out of range or the accountant is unknown.
    """
    noise_multiplier = _check_noise_multiplier(noise_multiplier)
    sampling_rate = _check_sampling_rate(sampling_rate)
    steps = check_count(steps, "steps")
    delta = check_delta(delta)
    accountant = _check_accountant(accountant)
    trivial = _trivial_epsilon(noise_multiplier, steps)
    if trivial is not None:
        return trivial
    if accountant == "pld":
        _check_pld_range(noise_multiplier, sampling_rate)
    value = _EPSILON[accountant](noise_multiplier, sampling_rate, steps, delta)
    return _checked_result(value, noise_multiplier, sampling_rate, steps, delta, accountant)


def _curve_counts(steps: int, at: Sequence[int] | None) -> np.ndarray:
    if at is None:
        return np.arange(1, steps + 1, dtype=np.int64)
    counts = np.array([check_count(t, "at") for t in at], dtype=np.int64)
    if counts.size and counts.max() > steps:
        raise ValueError(
            f"at must hold step counts between 0 and steps={steps}, got {int(counts.max())}; "
            f"raise steps or drop the larger counts."
        )
    return counts


def epsilon_curve(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    accountant: str = "rdp",
    at: Sequence[int] | None = None,
) -> np.ndarray:
    """Epsilon after 1, 2, ..., ``steps`` steps (or after the counts in ``at``).

    For the RDP accountants the one-step RDP vector is computed once and
    ``t * rdp`` is converted for all t at once (RDP composes additively); the
    values equal :func:`epsilon` up to floating-point rounding. The PLD
    accountant composes each count separately: pass ``at`` to keep it cheap.

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation divided by the L2 sensitivity, >= 0.
    sampling_rate : float
        Probability that a record takes part in a step, 0 < q <= 1.
    steps : int
        Number of steps of the run, >= 0.
    delta : float
        Target delta, 0 < delta < 1.
    accountant : {"rdp", "pld", "opacus-rdp"}, optional
        Which accountant to use (default ``"rdp"``).
    at : sequence of int, optional
        Step counts (each between 0 and ``steps``) at which to evaluate; default
        all of 1..steps.

    Returns
    -------
    numpy.ndarray
        Float array of length ``steps`` (or ``len(at)``), non-decreasing in the
        step count.
    """
    noise_multiplier = _check_noise_multiplier(noise_multiplier)
    sampling_rate = _check_sampling_rate(sampling_rate)
    steps = check_count(steps, "steps")
    delta = check_delta(delta)
    accountant = _check_accountant(accountant)
    counts = _curve_counts(steps, at)
    if math.isinf(noise_multiplier):
        return np.zeros(len(counts))
    if noise_multiplier < TINY_NOISE_MULTIPLIER:
        return np.where(counts > 0, math.inf, 0.0)
    if accountant == "pld":
        _check_pld_range(noise_multiplier, sampling_rate)
        return np.array(
            [
                _pld_epsilon(noise_multiplier, sampling_rate, int(t), delta) if t > 0 else 0.0
                for t in counts
            ],
            dtype=float,
        )
    curve = _rdp_curve(noise_multiplier, sampling_rate, counts, delta, accountant)
    broken = (counts > 0) & ~((curve > 0) & ~np.isnan(curve))
    for i in np.flatnonzero(broken):  # the library lost its precision: see _checked_result
        curve[i] = _checked_result(curve[i], noise_multiplier, sampling_rate, int(counts[i]),
                                   delta, accountant)
    return np.where(counts > 0, curve, 0.0)


def noise_multiplier_for_epsilon(
    target_epsilon: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    accountant: str = "rdp",
    tol: float = 1e-4,
) -> float:
    """Smallest noise multiplier whose epsilon after ``steps`` steps is <= ``target_epsilon``.

    Epsilon decreases as the noise multiplier grows, so the answer is bracketed
    by doubling/halving from 1 and then bisected on a log scale until the
    bracket's upper end is within a factor ``1 + tol`` of its lower end. The
    upper end is returned, so ``epsilon(result, ...) <= target_epsilon`` always.

    Parameters
    ----------
    target_epsilon : float
        Privacy budget to meet, > 0.
    sampling_rate : float
        Probability that a record takes part in a step, 0 < q <= 1.
    steps : int
        Number of steps, >= 0 (0 needs no noise: returns 0.0).
    delta : float
        Target delta, 0 < delta < 1.
    accountant : {"rdp", "pld", "opacus-rdp"}, optional
        Which accountant to use (default ``"rdp"``).
    tol : float, optional
        Relative tolerance on the noise multiplier, :data:`MIN_TOLERANCE` <= tol < 1
        (default 1e-4).

    Returns
    -------
    float
        The noise multiplier.

    Raises
    ------
    ValueError
        If an argument is out of range, or the accountant cannot certify
        ``target_epsilon`` with any noise multiplier up to 1e6 (RDP conversions
        have a floor of about ln(1/delta) / (largest order - 1)).
    """
    target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
    sampling_rate = _check_sampling_rate(sampling_rate)
    steps = check_count(steps, "steps")
    delta = check_delta(delta)
    accountant = _check_accountant(accountant)
    if isinstance(tol, bool) or not isinstance(tol, Real) or not MIN_TOLERANCE <= tol < 1:
        raise ValueError(f"tol must satisfy {MIN_TOLERANCE:g} <= tol < 1 (a relative "
                         f"tolerance; floats resolve no finer), got {tol!r}.")
    if steps == 0:
        return 0.0

    @cache
    def eps(sigma: float) -> float:
        try:
            return epsilon(sigma, sampling_rate, steps, delta, accountant)
        except ValueError as error:
            raise ValueError(
                f"target_epsilon={target_epsilon!r} needs a noise multiplier below {sigma:.3g}, "
                f"outside the range of accountant {accountant!r} ({error}); lower "
                "target_epsilon or use accountant='rdp'."
            ) from error

    low, high = _bracket(eps, target_epsilon, accountant)
    while high / low > 1.0 + tol:
        middle = math.sqrt(low * high)
        if not low < middle < high:  # adjacent floats: nothing left to bisect
            break
        if eps(middle) <= target_epsilon:
            high = middle
        else:
            low = middle
    return high


def _bracket(
    eps: Callable[[float], float], target_epsilon: float, accountant: str
) -> tuple[float, float]:
    """Noise multipliers ``low < high`` with eps(low) > target >= eps(high)."""
    smallest, largest = _BRACKET_LIMITS
    sigma = 1.0
    if eps(sigma) <= target_epsilon:
        while eps(sigma / 2.0) <= target_epsilon:
            sigma /= 2.0
            if sigma < smallest:
                raise ValueError(
                    f"target_epsilon={target_epsilon!r} is met even with noise_multiplier "
                    f"{sigma:.3g}; lower target_epsilon, or use noise_multiplier=0 "
                    f"(no privacy)."
                )
        return sigma / 2.0, sigma
    while eps(sigma * 2.0) > target_epsilon:
        sigma *= 2.0
        if sigma > largest:
            raise ValueError(
                f"target_epsilon={target_epsilon!r} cannot be certified by accountant "
                f"{accountant!r} with any noise_multiplier up to {largest:g} (epsilon stays at "
                f"{eps(sigma):.4g}); raise target_epsilon or delta, or use accountant='pld'."
            )
    return sigma, sigma * 2.0
