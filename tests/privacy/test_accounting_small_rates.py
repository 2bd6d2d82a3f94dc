"""The accountants at small sampling rates: monotone in the rate and in the steps, tight
(a zero epsilon where (0, delta)-DP provably holds, never the unsubsampled bound where a
subsampled one exists), and a calibration that always ends."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from fedlib.privacy.accounting import (
    MIN_TOLERANCE,
    _per_step_rdp,
    epsilon,
    epsilon_curve,
)

RATES = np.logspace(-8, 0, 25)


@pytest.mark.parametrize("accountant", ["rdp", "opacus-rdp"])
@pytest.mark.parametrize("steps", [1, 100, 10_000])
def test_rdp_epsilon_grows_with_the_sampling_rate(accountant: str, steps: int) -> None:
    values = [epsilon(1.1, float(q), steps, 1e-5, accountant) for q in RATES]
    assert all(math.isfinite(v) for v in values)
    assert np.all(np.diff(values) >= -1e-12), list(zip(RATES, values, strict=True))


def test_pld_epsilon_grows_with_the_sampling_rate() -> None:
    rates = np.logspace(-8, 0, 9)
    values = [epsilon(1.1, float(q), 100, 1e-5, "pld") for q in rates]
    # The PLD estimate is refined to a relative accuracy of 1e-3.
    assert np.all(np.diff(values) >= -1e-3 * np.maximum(values[1:], 1e-5)), values


@pytest.mark.parametrize("rate", [1e-8, 1e-6, 1e-4, 1e-2])
def test_rdp_curve_grows_with_the_steps(rate: float) -> None:
    curve = epsilon_curve(1.1, rate, 400, 1e-5)
    assert np.all(np.diff(curve) >= 0), curve
    assert curve[-1] < 10  # never the unsubsampled bound (83 at 100 steps)


def test_a_tiny_rate_gets_a_subsampled_bound_not_the_unsubsampled_one() -> None:
    unsubsampled = epsilon(1.1, 1.0, 100, 1e-5)
    assert unsubsampled > 80
    for accountant in ("rdp", "pld"):
        tiny = epsilon(1.1, 1e-6, 100, 1e-5, accountant)
        assert tiny <= epsilon(1.1, 2e-6, 100, 1e-5, accountant) <= 0.3
    # At q = 1e-6 and 100 steps the zero is the KL bound's: the RDP at the smallest order
    # (at least the KL divergence) gives a total variation of at most
    # sqrt(1 - exp(-KL)) <= delta (Bretagnolle-Huber), that is (0, delta)-DP.
    orders, per_step = _per_step_rdp(1.1, 1e-6, "rdp")
    kl = 100 * per_step[int(np.argmin(orders))]
    assert math.sqrt(-math.expm1(-kl)) <= 1e-5
    assert epsilon(1.1, 1e-6, 100, 1e-5) == 0.0


def test_just_past_the_kl_bound_the_order_conversion_takes_over() -> None:
    orders, per_step = _per_step_rdp(1.1, 1e-6, "rdp")
    smallest = per_step[int(np.argmin(orders))]
    steps = math.ceil(-math.log1p(-1e-10) / smallest) + 1  # KL past delta^2
    value = epsilon(1.1, 1e-6, steps, 1e-5)
    assert 0 < value < 0.25
    assert value == pytest.approx(epsilon(1.1, 1e-6, steps, 1e-5, "opacus-rdp"), rel=0.05)


@pytest.mark.parametrize("tol", [1e-17, 1e-13, 0.0])
def test_a_tolerance_floats_cannot_resolve_is_refused(tol: float) -> None:
    # In a process of its own with a time limit: such a tolerance once bisected forever.
    code = ("from fedlib.privacy.accounting import noise_multiplier_for_epsilon as n\n"
            "try:\n"
            f"    n(1.0, 0.01, 100, 1e-5, tol={tol!r})\n"
            "except ValueError as error:\n"
            "    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert "tol must satisfy 1e-12 <= tol < 1" in done.stdout, done.stdout + done.stderr


def test_the_finest_tolerance_ends() -> None:
    code = ("from fedlib.privacy.accounting import noise_multiplier_for_epsilon as n;"
            f"print(n(1.0, 0.01, 100, 1e-5, tol={MIN_TOLERANCE!r}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    sigma = float(done.stdout)
    assert epsilon(sigma, 0.01, 100, 1e-5) <= 1.0 < epsilon(sigma * (1 - 1e-9), 0.01, 100,
                                                             1e-5)
