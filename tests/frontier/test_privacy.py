"""Targets, calibration by the exact accountant, spent epsilon and the budget check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedlib.frontier.privacy import (
    ACCOUNTANT,
    CALIBRATION_TOLERANCE,
    BudgetExceededError,
    PrivacyUnit,
    Target,
    calibrate,
    check_within_target,
    spent_epsilon,
    tuning_epsilon,
)
from fedlib.privacy.accounting import epsilon


@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), "1", None, True])
def test_target_rejects_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon must be a number > 0 or math.inf"):
        Target(eps, 1e-5)


@pytest.mark.parametrize("delta", [0, 1, 1.5, -1e-5, float("nan"), math.inf])
def test_target_rejects_bad_delta(delta):
    with pytest.raises(ValueError, match="0 < delta < 1"):
        Target(1.0, delta)


def test_infinite_target_is_not_private_and_needs_no_noise():
    target = Target(math.inf, 1e-5)
    assert not target.private
    assert calibrate(PrivacyUnit.USER, target, 0.5, 10).noise_multiplier == 0.0


@pytest.mark.parametrize("unit, rate, steps", [(PrivacyUnit.EXAMPLE, 0.2, 40),
                                               (PrivacyUnit.USER, 1.0, 12),
                                               (PrivacyUnit.SILO, 0.1, 30)])
def test_calibrated_noise_meets_the_target_to_the_accountants_tolerance(unit, rate, steps):
    target = Target(1.5, 1e-5)
    cal = calibrate(unit, target, rate, steps)
    assert cal.accountant == ACCOUNTANT == "pld"
    sigma = cal.noise_multiplier
    assert epsilon(sigma, rate, steps, target.delta, "pld") <= target.epsilon
    assert epsilon(sigma / (1 + CALIBRATION_TOLERANCE), rate, steps, target.delta,
                   "pld") > target.epsilon
    # the tighter accountant needs less noise than Renyi DP for the same target
    assert sigma < calibrate(unit, target, rate, steps, "rdp").noise_multiplier


def test_spent_epsilon_follows_each_clients_compositions():
    target = Target(2.0, 1e-5)
    cal = calibrate(PrivacyUnit.EXAMPLE, target, 0.3, 20)
    spent = spent_epsilon(cal, np.array([20, 0, 10, 20]))
    assert spent[1] == 0.0
    assert spent[0] == spent[3] <= target.epsilon
    assert spent[0] == pytest.approx(target.epsilon, rel=0.01)
    assert 0 < spent[2] < spent[0]
    assert spent[2] == pytest.approx(epsilon(cal.noise_multiplier, 0.3, 10, 1e-5, "pld"),
                                     rel=1e-9)
    check_within_target(spent, target)


def test_spent_without_privacy_is_infinite_for_exposed_clients():
    cal = calibrate(PrivacyUnit.USER, Target(math.inf), 0.5, 5)
    assert spent_epsilon(cal, np.array([5, 0])).tolist() == [math.inf, 0.0]


def test_budget_check_raises_for_any_client_over_target():
    with pytest.raises(BudgetExceededError, match="client 2"):
        check_within_target(np.array([0.5, 1.0, 1.2]), Target(1.0))
    with pytest.raises(BudgetExceededError):
        check_within_target(np.array([0.5, float("nan")]), Target(1.0))
    check_within_target(np.array([math.inf]), Target(math.inf))


def test_tuning_epsilon_is_the_composition_of_every_fit():
    target = Target(1.0, 1e-5)
    a = calibrate(PrivacyUnit.EXAMPLE, target, 0.2, 40)
    b = calibrate(PrivacyUnit.EXAMPLE, target, 0.2, 20)
    # two fits of the same mechanism: 80 steps of it
    assert tuning_epsilon([a, a], [40, 40]) == pytest.approx(
        epsilon(a.noise_multiplier, 0.2, 80, 1e-5, "rdp"), rel=1e-9)
    assert tuning_epsilon([a], [40]) >= target.epsilon  # RDP is looser than PLD's target
    both = tuning_epsilon([a, b], [40, 20])
    assert both > max(tuning_epsilon([a], [40]), tuning_epsilon([b], [20]))
    assert tuning_epsilon([a], [0]) == 0.0
    assert tuning_epsilon([calibrate(PrivacyUnit.USER, Target(math.inf), 1.0, 3)], [3]) \
        == math.inf
    with pytest.raises(ValueError, match="one composition count per calibration"):
        tuning_epsilon([a], [])


def test_units_state_their_threat_models():
    doc = " ".join(PrivacyUnit.__doc__.split())
    assert "against an honest-but-curious server" in doc
    assert "with a trusted aggregator" in doc
    assert "its personal model included" in doc and "not the person" in doc
    with pytest.raises(ValueError, match="PrivacyUnit"):
        calibrate("user", Target(1.0), 0.5, 3)
