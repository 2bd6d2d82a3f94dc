"""Noise calibration formulas exactly as each paper states them.

Each function returns the standard deviation (or noise multiplier) that a paper
prescribes for its Gaussian noise, written the way the paper (or, where marked
*inferred*, the authors' code or the reproduction specification) writes it. None
of these formulas is an exact privacy guarantee: the exact epsilon of the noise
actually used comes from :mod:`fedlib.privacy.accounting`.

Most of them rest on the classic Gaussian mechanism of Dwork & Roth (2014,
Theorem A.1): adding N(0, sigma^2) noise to a query of L2 sensitivity Delta with
sigma = Delta * sqrt(2 ln(1.25/delta)) / epsilon is (epsilon, delta)-DP **for
epsilon < 1 only**. Several papers use it at epsilon >= 1; the functions do not
raise there (the reproduction must use the papers' numbers), and
:func:`classic_gaussian_valid` lets callers flag it.

The module is pure ``math``/``numpy``; its argument checks live in :mod:`fedlib.checks`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedlib.checks import (
    check_count,
    check_delta,
    check_epsilon,
    check_impact_factors,
    check_non_negative,
    check_positive,
    check_probability,
    is_real,
)

__all__ = [
    "classic_gaussian_c",
    "classic_gaussian_sigma",
    "classic_gaussian_valid",
    "dpditto_sensitivity",
    "dpditto_sigma",
    "dpditto_sigma_alternative",
    "hu2020_sensitivities",
    "hu2020_sigma",
    "padpfl_client_sigma",
    "padpfl_server_sigma",
    "padpfl_server_noise_threshold",
]



# ---------------------------------------------------------------------------
# Classic Gaussian mechanism (Dwork & Roth 2014, Theorem A.1)
# ---------------------------------------------------------------------------


def classic_gaussian_c(delta: float) -> float:
    """The constant ``c = sqrt(2 ln(1.25/delta))`` of the classic Gaussian mechanism.

    Parameters
    ----------
    delta : float
        Target delta, 0 < delta < 1.

    Returns
    -------
    float
        ``sqrt(2 ln(1.25 / delta))``.
    """
    delta = check_delta(delta)
    return math.sqrt(2.0 * math.log(1.25 / delta))


def classic_gaussian_valid(epsilon: float) -> bool:
    """Whether the classic Gaussian mechanism bound holds at ``epsilon``.

    Dwork & Roth (2014), Theorem A.1, prove the bound only for 0 < epsilon < 1.

    Parameters
    ----------
    epsilon : float
        Privacy budget.

    Returns
    -------
    bool
        ``True`` when 0 < epsilon < 1, ``False`` otherwise.
    """
    return is_real(epsilon) and 0 < epsilon < 1


def classic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Noise standard deviation of the classic Gaussian mechanism.

    ``sigma = sensitivity * sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth
    2014, Theorem A.1). The guarantee is proven only for epsilon < 1; the
    function does not raise for epsilon >= 1 because the reproduced papers use
    it there: check :func:`classic_gaussian_valid` to say so.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity of the released quantity, > 0.
    epsilon : float
        Privacy budget, > 0.
    delta : float
        Target delta, 0 < delta < 1.

    Returns
    -------
    float
        The noise standard deviation.
    """
    sensitivity = check_positive(sensitivity, "sensitivity")
    epsilon = check_epsilon(epsilon)
    return sensitivity * classic_gaussian_c(delta) / epsilon


# ---------------------------------------------------------------------------
# Hu et al. 2020, "Personalized Federated Learning with Differential Privacy"
# ---------------------------------------------------------------------------


def hu2020_sensitivities(
    lam: float, beta: float, n_t: int, xi: float, delta_alpha_norm: float
) -> tuple[float, float]:
    """Sensitivities of the two noisy releases of Hu et al. (2020), Algorithm 1.

    ``s1 = (8 lam + beta) / (beta n_t)`` for the noise b_t on the dual variables
    (line 6) and ``s2 = 2 xi ||Delta alpha_t||_2`` for the noise p_t on the upload
    (line 7). ``s2`` is data dependent, as in the paper.

    Parameters
    ----------
    lam : float
        Regularisation strength lambda, > 0.
    beta : float
        Subproblem parameter beta (the paper sets beta = xi m), > 0.
    n_t : int
        Number of training examples of device t, >= 1.
    xi : float
        Aggregation parameter xi, > 0.
    delta_alpha_norm : float
        ``||Delta alpha_t||_2`` of the current local update, >= 0.

    Returns
    -------
    tuple of float
        ``(s1, s2)``.
    """
    lam = check_positive(lam, "lam")
    beta = check_positive(beta, "beta")
    n_t = check_count(n_t, "n_t", minimum=1)
    xi = check_positive(xi, "xi")
    delta_alpha_norm = check_non_negative(delta_alpha_norm, "delta_alpha_norm")
    s1 = (8.0 * lam + beta) / (beta * n_t)
    s2 = 2.0 * xi * delta_alpha_norm
    return s1, s2


def hu2020_sigma(
    epsilon: float, delta: float, q: float, p: float, K: int, r: float = 1.0
) -> tuple[float, float]:
    """Noise multipliers of Hu et al. (2020), Theorem 5 (end-to-end privacy loss).

    The paper states ``sigma1 >= c2 p sqrt((q^2 + r^2) K log(1/delta)) / epsilon``
    and ``sigma2 >= sigma1 / r`` with an unspecified constant c2. Following the
    reproduction specification (section 1), c2 = sqrt(2) and the logarithm is
    ``ln(1.25/delta)`` *(inferred)*: both come from the classic Gaussian
    mechanism ``sigma = sqrt(2 ln(1.25/delta)) / epsilon`` that the paper plugs
    into its Corollary 4. So::

        sigma1 = sqrt(2) * p * sqrt((q^2 + r^2) * K * ln(1.25/delta)) / epsilon
        sigma2 = sigma1 / r

    The noise standard deviations are then ``s1 * sigma1`` and ``s2 * sigma2``
    (:func:`hu2020_sensitivities`). The theorem requires epsilon < c1 p^2 K for
    another unspecified constant c1; that condition is not checked.

    Parameters
    ----------
    epsilon : float
        Total privacy budget, > 0.
    delta : float
        Target delta, 0 < delta < 1.
    q : float
        Sampling rate n_iter / n_t, 0 < q <= 1.
    p : float
        Probability that a device is active in a round (1 - P_drop), 0 < p <= 1.
    K : int
        Number of rounds accounted for, >= 1.
    r : float, optional
        Budget ratio epsilon2 / epsilon1 of the two releases, > 0 (default 1).

    Returns
    -------
    tuple of float
        ``(sigma1, sigma2)``.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    q = check_probability(q, "q")
    p = check_probability(p, "p")
    K = check_count(K, "K", minimum=1)
    r = check_positive(r, "r")
    c2 = math.sqrt(2.0)
    sigma1 = c2 * p * math.sqrt((q**2 + r**2) * K * math.log(1.25 / delta)) / epsilon
    return sigma1, sigma1 / r


# ---------------------------------------------------------------------------
# DP-Ditto
# ---------------------------------------------------------------------------


def dpditto_sensitivity(C: float, dataset_size: int) -> float:
    """Sensitivity ``Delta S = 2 C / |D_i|`` of a clipped model upload (DP-Ditto).

    Parameters
    ----------
    C : float
        Model clipping norm, > 0.
    dataset_size : int
        Number of local examples |D_i|, >= 1.

    Returns
    -------
    float
        ``2 C / |D_i|``.
    """
    C = check_positive(C, "C")
    dataset_size = check_count(dataset_size, "dataset_size", minimum=1)
    return 2.0 * C / dataset_size


def dpditto_sigma(
    C: float, dataset_size: int, epsilon: float, delta: float, T: int, q: float = 1.0
) -> float:
    """Noise standard deviation of DP-Ditto (reproduction specification, section 2).

    ``sigma = Delta S * sqrt(2 q T ln(1/delta)) / epsilon`` with
    ``Delta S = 2 C / |D_i|`` and q = 1 *(inferred from the NbAFL code the paper
    cites; the paper's text lost its equations)*.

    Parameters
    ----------
    C : float
        Model clipping norm, > 0.
    dataset_size : int
        Number of local examples |D_i|, >= 1.
    epsilon : float
        Total privacy budget over the T rounds, > 0.
    delta : float
        Target delta, 0 < delta < 1.
    T : int
        Number of communication rounds, >= 1.
    q : float, optional
        Client sampling rate, 0 < q <= 1 (default 1: full participation).

    Returns
    -------
    float
        The noise standard deviation added to each upload.
    """
    sensitivity = dpditto_sensitivity(C, dataset_size)
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    T = check_count(T, "T", minimum=1)
    q = check_probability(q, "q")
    return sensitivity * math.sqrt(2.0 * q * T * math.log(1.0 / delta)) / epsilon


def dpditto_sigma_alternative(
    C: float, dataset_size: int, epsilon: float, delta: float, T: int
) -> float:
    """Alternative DP-Ditto noise by linear composition of the classic Gaussian mechanism.

    ``sigma = c T Delta S / epsilon`` with ``c = sqrt(2 ln(1.25/delta))`` and
    ``Delta S = 2 C / |D_i|``: each of the T rounds gets epsilon / T (shown in a
    note of the DP-Ditto chapter; reproduction specification, section 2).

    Parameters
    ----------
    C : float
        Model clipping norm, > 0.
    dataset_size : int
        Number of local examples |D_i|, >= 1.
    epsilon : float
        Total privacy budget over the T rounds, > 0.
    delta : float
        Target delta, 0 < delta < 1.
    T : int
        Number of communication rounds, >= 1.

    Returns
    -------
    float
        The noise standard deviation added to each upload.
    """
    sensitivity = dpditto_sensitivity(C, dataset_size)
    epsilon = check_epsilon(epsilon)
    T = check_count(T, "T", minimum=1)
    return classic_gaussian_c(delta) * T * sensitivity / epsilon


# ---------------------------------------------------------------------------
# Talaei & Izadi, PADPFL
# ---------------------------------------------------------------------------


def padpfl_client_sigma(B: float, R: int, min_m: int, epsilon: float, delta: float) -> float:
    """Client noise standard deviation of PADPFL (Talaei & Izadi).

    ``sigma_C = 2 B R c / (min_j m_j epsilon)`` with ``c = sqrt(2 ln(1.25/delta))``.

    Parameters
    ----------
    B : float
        Weight clipping bound, > 0.
    R : int
        Maximum number of uploads exposed per client, >= 1.
    min_m : int
        Smallest local dataset size min_j m_j, >= 1.
    epsilon : float
        Privacy budget, > 0.
    delta : float
        Target delta, 0 < delta < 1.

    Returns
    -------
    float
        The standard deviation of the noise each client adds to its upload.
    """
    B = check_positive(B, "B")
    R = check_count(R, "R", minimum=1)
    min_m = check_count(min_m, "min_m", minimum=1)
    epsilon = check_epsilon(epsilon)
    return 2.0 * B * R * classic_gaussian_c(delta) / (min_m * epsilon)


def padpfl_server_noise_threshold(R: int, p: Sequence[float] | np.ndarray) -> float:
    """Number of rounds above which PADPFL's server adds noise: ``R sqrt(sum p_i^2) / max p``.

    Parameters
    ----------
    R : int
        Maximum number of uploads exposed per client, >= 1.
    p : sequence of float
        Client impact factors, non-negative, summing to 1.

    Returns
    -------
    float
        The threshold on T; the server noise is zero for T at or below it.
    """
    R = check_count(R, "R", minimum=1)
    weights = check_impact_factors(p)
    return R * math.sqrt(float(np.sum(weights**2))) / float(weights.max())


def padpfl_server_sigma(
    B: float,
    T: int,
    R: int,
    p: Sequence[float] | np.ndarray,
    min_m: int,
    epsilon: float,
    delta: float,
) -> float:
    """Server noise standard deviation of PADPFL (Talaei & Izadi).

    ``sigma_S = 2 B c sqrt(T^2 max(p)^2 - R^2 sum p_i^2) / (min_m epsilon)`` if
    ``T > R sqrt(sum p_i^2) / max(p)``, else 0, with ``c = sqrt(2 ln(1.25/delta))``.
    With R = T the condition never holds (sum p_i^2 >= max(p)^2), so the server
    adds no noise.

    Parameters
    ----------
    B : float
        Weight clipping bound, > 0.
    T : int
        Number of communication rounds, >= 1.
    R : int
        Maximum number of uploads exposed per client, >= 1.
    p : sequence of float
        Client impact factors, non-negative, summing to 1 (within 1e-9).
    min_m : int
        Smallest local dataset size, >= 1.
    epsilon : float
        Privacy budget, > 0.
    delta : float
        Target delta, 0 < delta < 1.

    Returns
    -------
    float
        The standard deviation of the noise the server adds to the aggregate
        (0.0 at or below the threshold).
    """
    B = check_positive(B, "B")
    T = check_count(T, "T", minimum=1)
    min_m = check_count(min_m, "min_m", minimum=1)
    epsilon = check_epsilon(epsilon)
    c = classic_gaussian_c(delta)
    weights = check_impact_factors(p)
    if not T > padpfl_server_noise_threshold(R, weights):
        return 0.0
    radicand = T**2 * float(weights.max()) ** 2 - R**2 * float(np.sum(weights**2))
    if radicand <= 0:
        return 0.0
    return 2.0 * B * c * math.sqrt(radicand) / (min_m * epsilon)
