"""Tests of fedlib.privacy: accountants against independent closed forms, and the
papers' calibration formulas against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import log_ndtr, logsumexp

from fedlib.privacy import (
    ACCOUNTANTS,
    classic_gaussian_c,
    classic_gaussian_sigma,
    classic_gaussian_valid,
    dpditto_sigma,
    dpditto_sigma_alternative,
    epsilon,
    epsilon_curve,
    hu2020_sensitivities,
    hu2020_sigma,
    noise_multiplier_for_epsilon,
    padpfl_client_sigma,
    padpfl_server_noise_threshold,
    padpfl_server_sigma,
    rdp_to_epsilon,
)

# dp_accounting's default RDP orders, written out (not imported from the code under test).
DP_ACCOUNTING_ORDERS = np.array(
    [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024],
    dtype=float,
)
# Opacus's default orders: no 11, nothing above 63.
OPACUS_ORDERS = np.array([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)), dtype=float)


# ---------------------------------------------------------------------------
# Independent closed forms
# ---------------------------------------------------------------------------


def exact_gaussian_epsilon(sigma: float, steps: int, delta: float) -> float:
    """Exact epsilon of `steps` Gaussian mechanisms with multiplier sigma (no subsampling).

    They compose to one Gaussian mechanism with mu = sqrt(steps) / sigma, whose
    privacy curve is delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
    (Balle & Wang 2018, Theorem 8); solve it for eps.
    """
    mu = math.sqrt(steps) / sigma

    def excess_delta(eps: float) -> float:
        first = math.exp(log_ndtr(-eps / mu + mu / 2))
        second = math.exp(eps + log_ndtr(-eps / mu - mu / 2))
        return first - second - delta

    return brentq(excess_delta, 0.0, mu * mu + 20 * mu + 10, xtol=1e-13, rtol=1e-13)


def rdp_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float) -> float:
    """eps = min_alpha rdp + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1).

    Balle et al. 2020, Theorem 21; Canonne, Kamath & Steinke 2020, Proposition 12.
    """
    eps = rdp + np.log((orders - 1) / orders) - (np.log(delta) + np.log(orders)) / (orders - 1)
    return float(eps.min())


def gaussian_rdp_epsilon(orders: np.ndarray, sigma: float, steps: int, delta: float) -> float:
    """RDP of the Gaussian mechanism, steps * alpha / (2 sigma^2), converted to epsilon."""
    return rdp_epsilon(orders, steps * orders / (2 * sigma**2), delta)


def subsampled_gaussian_rdp(orders: np.ndarray, sigma: float, q: float) -> np.ndarray:
    """RDP of one Poisson-subsampled Gaussian step by numerical integration.

    RDP_alpha = log(A_alpha) / (alpha - 1) with
    A_alpha = E_{z ~ N(0, sigma^2)} [((1 - q) + q exp((2z - 1) / (2 sigma^2)))^alpha]
    (Mironov, Talwar & Zhang 2019), as a Riemann sum in log space: the integrand
    is a smooth bump around z in [0, alpha], so a 2e-3 grid is exact to ~1e-9.
    """
    step = 2e-3
    out = []
    for alpha in orders:
        z = np.arange(-40.0, alpha + 40.0, step)
        log_ratio = np.logaddexp(np.log1p(-q), np.log(q) + (2 * z - 1) / (2 * sigma**2))
        log_integrand = -(z**2) / (2 * sigma**2) - math.log(sigma * math.sqrt(2 * math.pi))
        log_a = logsumexp(log_integrand + alpha * log_ratio) + math.log(step)
        out.append(log_a / (alpha - 1))
    return np.array(out)


# ---------------------------------------------------------------------------
# Accountants
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sigma", "steps", "delta"),
    [(10.0, 300, 1e-4), (2.0, 50, 1e-5), (1.0, 10, 1e-3), (30.0, 1000, 1e-5)],
)
def test_unsubsampled_pld_is_exact_and_rdp_is_an_upper_bound(sigma, steps, delta):
    exact = exact_gaussian_epsilon(sigma, steps, delta)
    pld = epsilon(sigma, 1.0, steps, delta, accountant="pld")
    rdp = epsilon(sigma, 1.0, steps, delta, accountant="rdp")
    # PLD is pessimistic (never below the truth) and accurate to ~1e-3.
    assert exact * (1 - 1e-9) <= pld <= exact * 1.002
    # RDP is a valid but looser bound.
    assert exact <= rdp <= exact * 1.3


def test_reference_numbers_sigma10_steps300():
    """sigma = 10, 300 steps, q = 1, delta = 1e-4 under every accountant."""
    exact = exact_gaussian_epsilon(10.0, 300, 1e-4)
    values = {name: epsilon(10.0, 1.0, 300, 1e-4, accountant=name) for name in ACCOUNTANTS}
    assert exact == pytest.approx(7.41131, abs=1e-5)
    assert values["pld"] == pytest.approx(exact, rel=1e-5)
    assert values["rdp"] == pytest.approx(8.07439, abs=1e-5)
    # The optimal order is in both order sets, so the two RDP accountants coincide.
    assert values["opacus-rdp"] == pytest.approx(values["rdp"], rel=1e-12)


@pytest.mark.parametrize(("sigma", "steps", "delta"), [(10.0, 300, 1e-4), (0.7, 5, 1e-5)])
def test_rdp_without_subsampling_matches_gaussian_rdp(sigma, steps, delta):
    dp_accounting_eps = epsilon(sigma, 1.0, steps, delta, accountant="rdp")
    opacus_eps = epsilon(sigma, 1.0, steps, delta, accountant="opacus-rdp")
    expected_dp = gaussian_rdp_epsilon(DP_ACCOUNTING_ORDERS, sigma, steps, delta)
    expected_opacus = gaussian_rdp_epsilon(OPACUS_ORDERS, sigma, steps, delta)
    assert dp_accounting_eps == pytest.approx(expected_dp, rel=1e-6)
    assert opacus_eps == pytest.approx(expected_opacus, rel=1e-6)
    # And the improved conversion beats the classic one, min rdp + log(1/delta)/(alpha-1).
    classic = steps * DP_ACCOUNTING_ORDERS / (2 * sigma**2) - math.log(delta) / (
        DP_ACCOUNTING_ORDERS - 1
    )
    assert dp_accounting_eps < classic.min()


@pytest.mark.parametrize(
    ("sigma", "q", "steps"),
    [(1.0, 0.01, 1000), (0.8, 0.05, 200), (2.0, 0.1, 100), (5.0, 1.0, 50)],
)
def test_dp_accounting_and_opacus_rdp_agree(sigma, q, steps):
    delta = 1e-5
    google = epsilon(sigma, q, steps, delta, accountant="rdp")
    meta = epsilon(sigma, q, steps, delta, accountant="opacus-rdp")
    # Same conversion; dp_accounting searches more orders (up to 1024) but overestimates
    # the RDP at fractional orders when q < 1 (see the next test), so either may be tighter.
    assert google == pytest.approx(meta, rel=0.02)
    if q == 1.0:
        assert google <= meta * (1 + 1e-12)


def test_subsampled_rdp_against_numerical_integration():
    sigma, q, steps, delta = 0.8, 0.05, 200, 1e-5
    exact_opacus = rdp_epsilon(
        OPACUS_ORDERS, steps * subsampled_gaussian_rdp(OPACUS_ORDERS, sigma, q), delta
    )
    exact_dp = rdp_epsilon(
        DP_ACCOUNTING_ORDERS, steps * subsampled_gaussian_rdp(DP_ACCOUNTING_ORDERS, sigma, q), delta
    )
    # Opacus computes the RDP of the subsampled Gaussian exactly at every order.
    assert epsilon(sigma, q, steps, delta, "opacus-rdp") == pytest.approx(exact_opacus, rel=1e-6)
    # dp_accounting 0.6 sums |terms| of the fractional-order series (and drops orders
    # where that fails to converge): a valid upper bound, here ~0.1 % loose.
    google = epsilon(sigma, q, steps, delta, "rdp")
    assert exact_dp * (1 - 1e-9) <= google <= exact_dp * 1.01


def test_pld_is_tighter_than_rdp_with_subsampling():
    pld = epsilon(1.0, 0.02, 200, 1e-5, accountant="pld")
    rdp = epsilon(1.0, 0.02, 200, 1e-5, accountant="rdp")
    assert 0.5 * rdp < pld < rdp


def test_vectorized_conversion_matches_dp_accounting():
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    rng = np.random.default_rng(0)
    rdp = rng.uniform(0, 5, size=(5, DP_ACCOUNTING_ORDERS.size)) * DP_ACCOUNTING_ORDERS / 50
    rdp[0] = 1e-14  # below the KL bound: epsilon 0
    ours = rdp_to_epsilon(DP_ACCOUNTING_ORDERS, rdp, 1e-5)
    theirs = [compute_epsilon(DP_ACCOUNTING_ORDERS, row, 1e-5)[0] for row in rdp]
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert ours[0] == 0.0


@pytest.mark.parametrize("accountant", ["rdp", "opacus-rdp"])
def test_rdp_curve_is_monotone_and_ends_at_epsilon(accountant):
    sigma, q, steps, delta = 1.1, 0.01, 400, 1e-5
    curve = epsilon_curve(sigma, q, steps, delta, accountant=accountant)
    assert curve.shape == (steps,)
    assert np.all(np.diff(curve) >= 0)
    assert curve[-1] == pytest.approx(epsilon(sigma, q, steps, delta, accountant), rel=1e-12)
    assert curve[49] == pytest.approx(epsilon(sigma, q, 50, delta, accountant), rel=1e-12)
    picked = epsilon_curve(sigma, q, steps, delta, accountant=accountant, at=[0, 10, 400])
    np.testing.assert_array_equal(picked, [0.0, curve[9], curve[399]])


def test_pld_curve_at_selected_steps():
    curve = epsilon_curve(3.0, 1.0, 100, 1e-5, accountant="pld", at=[1, 25, 100])
    assert np.all(np.diff(curve) > 0)
    assert curve[-1] == epsilon(3.0, 1.0, 100, 1e-5, accountant="pld")
    assert curve[1] == pytest.approx(exact_gaussian_epsilon(3.0, 25, 1e-5), rel=2e-3)


def test_curve_rejects_counts_beyond_steps():
    with pytest.raises(ValueError, match="at"):
        epsilon_curve(1.0, 0.1, 10, 1e-5, at=[5, 11])


@pytest.mark.parametrize("accountant", ACCOUNTANTS)
def test_edge_cases(accountant):
    assert epsilon(1.0, 0.1, 0, 1e-5, accountant) == 0.0
    assert epsilon(0.0, 0.1, 3, 1e-5, accountant) == math.inf
    assert epsilon(math.inf, 0.1, 3, 1e-5, accountant) == 0.0
    assert epsilon_curve(1.0, 0.1, 0, 1e-5, accountant).shape == (0,)
    np.testing.assert_array_equal(epsilon_curve(0.0, 0.5, 2, 1e-5, accountant), [math.inf] * 2)
    # Integral floats (as sweep tables store them) are accepted as step counts.
    assert epsilon(5.0, 1.0, 30.0, 1e-5, accountant) == epsilon(5.0, 1.0, 30, 1e-5, accountant)


def test_noise_multiplier_round_trip_rdp():
    target, q, steps, delta = 2.0, 0.01, 1000, 1e-5
    sigma = noise_multiplier_for_epsilon(target, q, steps, delta, accountant="rdp")
    assert epsilon(sigma, q, steps, delta, "rdp") <= target
    assert epsilon(sigma * 0.99, q, steps, delta, "rdp") > target


@pytest.mark.parametrize("accountant", ["pld", "opacus-rdp"])
def test_noise_multiplier_round_trip_without_subsampling(accountant):
    target, steps, delta = 1.0, 100, 1e-5
    sigma = noise_multiplier_for_epsilon(target, 1.0, steps, delta, accountant=accountant)
    assert epsilon(sigma, 1.0, steps, delta, accountant) <= target
    assert epsilon(sigma * 0.99, 1.0, steps, delta, accountant) > target
    if accountant == "pld":
        # The exact noise solves exact_gaussian_epsilon(sigma, steps, delta) = target.
        exact_sigma = brentq(lambda s: exact_gaussian_epsilon(s, steps, delta) - target, 1, 1e3)
        assert sigma == pytest.approx(exact_sigma, rel=2e-3)


@pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha")
def test_noise_multiplier_below_the_rdp_floor_raises():
    # Opacus's largest order is 63: epsilon never drops below about ln(1/delta)/62.
    with pytest.raises(ValueError, match="target_epsilon"):
        noise_multiplier_for_epsilon(0.05, 1.0, 10, 1e-5, accountant="opacus-rdp")


def test_noise_multiplier_for_zero_steps_is_zero():
    assert noise_multiplier_for_epsilon(1.0, 0.1, 0, 1e-5) == 0.0


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": float("nan")}, "delta"),
        ({"sampling_rate": 0.0}, "sampling_rate"),
        ({"sampling_rate": 1.5}, "sampling_rate"),
        ({"steps": -1}, "steps"),
        ({"steps": 2.5}, "steps"),
        ({"noise_multiplier": -0.1}, "noise_multiplier"),
        ({"accountant": "moments"}, "accountant"),
    ],
)
def test_accountant_validation(kwargs, name):
    arguments = {
        "noise_multiplier": 1.0,
        "sampling_rate": 0.1,
        "steps": 10,
        "delta": 1e-5,
        "accountant": "rdp",
    } | kwargs
    with pytest.raises(ValueError, match=name):
        epsilon(**arguments)
    with pytest.raises(ValueError, match=name):
        epsilon_curve(**arguments)


def test_validation_messages_say_how_to_fix():
    with pytest.raises(ValueError, match=r"'rdp', 'pld', 'opacus-rdp'"):
        epsilon(1.0, 0.1, 10, 1e-5, accountant="RDP ")
    with pytest.raises(ValueError, match=r"1/n"):
        epsilon(1.0, 0.1, 10, 2.0)


@pytest.mark.parametrize("target", [0.0, -1.0, math.inf, float("nan")])
def test_target_epsilon_validation(target):
    with pytest.raises(ValueError, match="target_epsilon"):
        noise_multiplier_for_epsilon(target, 0.1, 10, 1e-5)


def test_calibration_validation():
    with pytest.raises(ValueError, match="epsilon"):
        classic_gaussian_sigma(1.0, 0.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        dpditto_sigma(1.0, 100, 1.0, 1.5, 10)
    with pytest.raises(ValueError, match="dataset_size"):
        dpditto_sigma(1.0, 0, 1.0, 1e-2, 10)
    with pytest.raises(ValueError, match="q"):
        hu2020_sigma(1.0, 1e-3, q=0.0, p=0.5, K=10)


# ---------------------------------------------------------------------------
# Calibration formulas, by hand
# ---------------------------------------------------------------------------


def test_classic_gaussian():
    # ln(1.25 / 1e-5) = ln(125000) = 11.7360690; c = sqrt(23.4721380) = 4.8448053
    assert classic_gaussian_c(1e-5) == pytest.approx(4.8448053, rel=1e-7)
    # sigma = 2 * 4.8448053 / 0.5 = 19.3792211
    assert classic_gaussian_sigma(2.0, 0.5, 1e-5) == pytest.approx(19.3792211, rel=1e-7)
    assert classic_gaussian_valid(0.5)
    assert not classic_gaussian_valid(1.0)
    assert not classic_gaussian_valid(8.0)
    # Outside the validity range it still returns the papers' value (no exception).
    assert classic_gaussian_sigma(1.0, 8.0, 1e-5) == pytest.approx(4.8448053 / 8, rel=1e-7)


def test_hu2020():
    # s1 = (8 * 0.1 + 15) / (15 * 200) = 15.8 / 3000 = 0.00526667; s2 = 2 * 0.5 * 3 = 3
    s1, s2 = hu2020_sensitivities(lam=0.1, beta=15.0, n_t=200, xi=0.5, delta_alpha_norm=3.0)
    assert s1 == pytest.approx(15.8 / 3000, rel=1e-12)
    assert s2 == pytest.approx(3.0, rel=1e-12)
    # (q^2 + r^2) K ln(1.25/delta) = (0.01 + 1) * 2000 * ln(1250) = 1.01 * 2000 * 7.1308988
    #   = 14404.4156; sqrt = 120.018397; sigma1 = sqrt(2) * 0.8 * 120.018397 / 8 = 16.9731645
    sigma1, sigma2 = hu2020_sigma(epsilon=8.0, delta=1e-3, q=0.1, p=0.8, K=2000)
    assert sigma1 == pytest.approx(16.9731645, rel=1e-7)
    assert sigma2 == sigma1
    # r = 2: (0.01 + 4) * 2000 * 7.1308988 = 57189.8086; sqrt = 239.143908;
    # sigma1 = sqrt(2) * 0.8 * 239.143908 / 8 = 33.8200558, sigma2 = sigma1 / 2
    sigma1, sigma2 = hu2020_sigma(epsilon=8.0, delta=1e-3, q=0.1, p=0.8, K=2000, r=2.0)
    assert sigma1 == pytest.approx(33.8200558, rel=1e-7)
    assert sigma2 == pytest.approx(sigma1 / 2, rel=1e-12)


def test_dpditto():
    # Delta S = 2 * 1 / 500 = 0.004; sqrt(2 * 1 * 100 * ln(100)) = sqrt(921.034037) = 30.3485426
    # sigma = 0.004 * 30.3485426 / 10 = 0.0121394170
    assert dpditto_sigma(1.0, 500, 10.0, 0.01, 100) == pytest.approx(0.0121394170, rel=1e-8)
    # q = 0.5: sqrt(100 * ln(100)) = 21.4596603; sigma = 0.004 * 21.4596603 / 10 = 0.00858386
    assert dpditto_sigma(1.0, 500, 10.0, 0.01, 100, q=0.5) == pytest.approx(0.00858386411, rel=1e-8)
    # c = sqrt(2 ln(125)) = sqrt(9.6566275) = 3.1075115; sigma = 3.1075115 * 100 * 0.004 / 10
    assert dpditto_sigma_alternative(1.0, 500, 10.0, 0.01, 100) == pytest.approx(
        0.124300458, rel=1e-8
    )


def test_padpfl_client_sigma():
    # 2 * 10 * 3 * 3.1075115 / (150 * 5) = 186.450688 / 750 = 0.248600917
    assert padpfl_client_sigma(10.0, 3, 150, 5.0, 0.01) == pytest.approx(0.248600917, rel=1e-8)


def test_padpfl_server_sigma_threshold():
    p = [0.25, 0.25, 0.25, 0.25]
    # threshold = R sqrt(sum p^2) / max p = 3 * sqrt(0.25) / 0.25 = 6
    assert padpfl_server_noise_threshold(3, p) == 6.0
    assert padpfl_server_sigma(10.0, 6, 3, p, 150, 5.0, 0.01) == 0.0  # at the threshold
    assert padpfl_server_sigma(10.0, 5, 3, p, 150, 5.0, 0.01) == 0.0  # below
    # T = 7: 49 * 0.0625 - 9 * 0.25 = 0.8125; sqrt = 0.90138782
    # sigma = 2 * 10 * 3.1075115 * 0.90138782 / (150 * 5) = 0.0746952794
    above = padpfl_server_sigma(10.0, 7, 3, p, 150, 5.0, 0.01)
    assert above == pytest.approx(0.0746952794, rel=1e-8)
    # R = T: never any server noise, whatever the weights (sum p^2 >= max(p)^2).
    weighted = [0.0] * 20 + [1 / 60] * 20 + [1 / 30] * 20
    assert padpfl_server_sigma(10.0, 30, 30, weighted, 150, 20.0, 0.01) == 0.0


@pytest.mark.parametrize(
    "p", [[0.5, 0.4], [0.6, 0.6, -0.2], [], [0.5, float("nan")], [0.5, 0.5 + 1e-6]]
)
def test_padpfl_invalid_impact_factors(p):
    with pytest.raises(ValueError, match="p"):
        padpfl_server_sigma(10.0, 30, 3, p, 150, 5.0, 0.01)


def test_dropped_rdp_orders_leave_no_log_line_and_no_warning(caplog, recwarn) -> None:
    # dp_accounting drops fractional orders whose series does not converge here and logs
    # it; the bound stays valid, and pages built from notebooks must stay clean.
    import logging

    from fedlib.privacy import epsilon_curve
    from fedlib.privacy.accounting import _rdp_curve

    with caplog.at_level(logging.WARNING):
        curve = epsilon_curve(3.0, 1 / 3, 6, 1e-4)
        single = epsilon(3.0, 1 / 3, 6, 1e-4)
        from_zero = _rdp_curve(3.0, 1 / 3, np.arange(0, 7), 1e-4, "rdp")
    assert not [r for r in caplog.records if "failed to converge" in r.getMessage()]
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert curve[-1] == pytest.approx(single)
    assert from_zero[0] == 0.0 and from_zero[-1] == pytest.approx(single)


@pytest.mark.parametrize("accountant", ["rdp", "opacus-rdp", "pld"])
@pytest.mark.parametrize("noise", [1e-300, 1e-152, 1e-10, 9e-4])
def test_noise_too_small_to_guarantee_anything_gives_infinite_epsilon(accountant, noise) -> None:
    # Before: 0.0 (perfect privacy) for "rdp" at 1e-152, NaN curves, ZeroDivisionError, hangs.
    assert epsilon(noise, 0.01, 100, 1e-5, accountant=accountant) == math.inf
    assert list(epsilon_curve(noise, 0.01, 3, 1e-5, accountant=accountant)) == [math.inf] * 3
    assert epsilon(noise, 0.01, 0, 1e-5, accountant=accountant) == 0.0


def test_epsilon_grows_as_noise_shrinks_down_to_the_floor() -> None:
    values = [epsilon(s, 0.01, 100, 1e-5) for s in (0.5, 0.1, 0.01, 0.0011)]
    assert all(a < b for a, b in zip(values, values[1:], strict=False))
    assert all(math.isfinite(v) and v > 0 for v in values)


@pytest.mark.parametrize(("noise", "q"), [(0.001, 0.01), (0.04, 0.01), (0.005, 1.0)])
def test_pld_refuses_noise_it_cannot_compute_instead_of_hanging(noise, q) -> None:
    with pytest.raises(ValueError, match="below what the PLD accountant can compute.*'rdp'"):
        epsilon(noise, q, 100, 1e-5, accountant="pld")
    with pytest.raises(ValueError, match="PLD accountant"):
        epsilon_curve(noise, q, 10, 1e-5, accountant="pld", at=[10])


def test_calibration_to_a_huge_target_under_pld_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="target_epsilon=1000000.0 needs a noise multiplier"):
        noise_multiplier_for_epsilon(1e6, 0.01, 100, 1e-5, accountant="pld")
