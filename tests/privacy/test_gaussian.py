"""The exact epsilon of a Gaussian mechanism composed without subsampling, against an
independent numerical integral of its privacy loss and against the PLD accountant."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from fedlib.privacy.accounting import epsilon as accounted_epsilon
from fedlib.privacy.gaussian import gaussian_delta, gaussian_epsilon, gaussian_mu


def _delta_by_integration(eps: float, mu: float) -> float:
    """delta(eps) = E[(1 - exp(eps - L))_+] under P, where the privacy loss of one draw
    x ~ N(mu, 1) against N(0, 1) is L = mu x - mu^2 / 2 (no closed form used)."""
    def integrand(x: float) -> float:
        loss = mu * x - mu * mu / 2
        return max(0.0, 1.0 - math.exp(eps - loss)) * stats.norm.pdf(x, loc=mu)

    start = (eps + mu * mu / 2) / mu  # below it the loss is under eps: nothing
    value, _ = integrate.quad(integrand, start, np.inf, epsabs=1e-14, epsrel=1e-10)
    return value


@pytest.mark.parametrize(("eps", "mu"), [(0.5, 0.3), (1.0, 1.0), (3.0, 2.5), (10.0, 4.0)])
def test_delta_is_the_integral_of_the_privacy_loss(eps, mu) -> None:
    assert gaussian_delta(eps, mu) == pytest.approx(_delta_by_integration(eps, mu), rel=1e-6)


def test_epsilon_inverts_delta_and_composes_as_one_mechanism() -> None:
    for sigma, steps, delta in ((1.0, 1, 1e-5), (3.0, 300, 1e-4), (0.1, 300, 1e-4)):
        eps = gaussian_epsilon(sigma, steps, delta)
        assert gaussian_delta(eps, gaussian_mu(sigma, steps)) == pytest.approx(delta,
                                                                                rel=1e-6)
        # T releases at sigma are one release at sigma / sqrt(T).
        assert eps == pytest.approx(gaussian_epsilon(sigma / math.sqrt(steps), 1, delta),
                                    rel=1e-9)
    # Far past where exp(epsilon) overflows a float.
    assert 1e4 < gaussian_epsilon(0.1, 300, 1e-4) < 2e4


@pytest.mark.parametrize(("sigma", "steps"), [(1.0, 300), (3.0, 300), (10.0, 300),
                                              (2.0, 10)])
def test_the_pld_accountant_converges_to_it_from_above(sigma, steps) -> None:
    exact = gaussian_epsilon(sigma, steps, 1e-4)
    pld = accounted_epsilon(sigma, 1.0, steps, 1e-4, accountant="pld")
    assert exact <= pld * (1 + 1e-9)  # PLD is a valid (pessimistic) upper bound
    assert pld == pytest.approx(exact, rel=2e-3)


def test_edges_and_bad_input() -> None:
    assert gaussian_epsilon(0.0, 5, 1e-5) == math.inf  # no noise, no privacy
    assert gaussian_epsilon(1e6, 1, 0.5) == 0.0        # delta alone covers it
    with pytest.raises(ValueError, match="delta"):
        gaussian_epsilon(1.0, 10, 0.0)
    with pytest.raises(ValueError, match="steps"):
        gaussian_epsilon(1.0, 0, 1e-5)
    with pytest.raises(ValueError, match="noise_multiplier"):
        gaussian_epsilon(-1.0, 10, 1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_delta(-1.0, 1.0)


@pytest.mark.parametrize(("sigma", "delta"), [(3e4, 1e-6), (2e4, 1e-10), (1e5, 1e-6)])
def test_tiny_mu_where_delta_alone_almost_covers_it(sigma, delta) -> None:
    # delta(0) = Phi(mu / 2) - Phi(-mu / 2), about mu / sqrt(2 pi) for small mu.
    mu = gaussian_mu(sigma, 1)
    assert gaussian_delta(0.0, mu) == pytest.approx(mu / math.sqrt(2 * math.pi), rel=1e-6)
    eps = gaussian_epsilon(sigma, 1, delta)
    assert 0 < eps < 1e-3
    assert gaussian_delta(eps, mu) == pytest.approx(delta, rel=1e-6)
