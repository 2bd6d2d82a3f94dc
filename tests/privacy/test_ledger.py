"""Per-client calibration and the ledger's retirement."""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dp_rdp

from fedlib.privacy import epsilon
from fedlib.privacy.ledger import (
    CALIBRATION_TOLERANCE,
    INTEGER_ORDERS,
    PrivacyLedger,
    calibrated_noise_multiplier,
    ledger_epsilon,
)


@pytest.mark.parametrize(("nm", "q", "steps"), [(0.8, 0.01, 100), (3.5, 8 / 1200, 480),
                                                (1.2, 1.0, 10), (20.0, 0.05, 2000)])
def test_ledger_epsilon_equals_dp_accounting_over_the_same_orders(nm, q, steps) -> None:
    orders = list(INTEGER_ORDERS)
    rdp = dp_rdp._compute_rdp_poisson_subsampled_gaussian(q, nm, orders) * steps
    expected, _ = dp_rdp.compute_epsilon(orders, rdp, 1e-5)
    assert ledger_epsilon(nm, q, steps, 1e-5) == pytest.approx(expected, rel=1e-9)
    # A valid bound: never below the tighter PLD accountant.
    assert ledger_epsilon(nm, q, steps, 1e-5) >= epsilon(nm, q, steps, 1e-5, "pld") * 0.999


def test_calibration_is_tight_and_meets_the_budget() -> None:
    for budget in (0.1, 1.0, 10.0):
        nm = calibrated_noise_multiplier(budget, 8 / 1200, 480, 1e-5)
        assert ledger_epsilon(nm, 8 / 1200, 480, 1e-5) <= budget
        assert ledger_epsilon(nm / (1 + 2 * CALIBRATION_TOLERANCE), 8 / 1200, 480,
                              1e-5) > budget
    with pytest.raises(ValueError, match="budget must be positive"):
        calibrated_noise_multiplier(0.0, 0.1, 10, 1e-5)


def test_ledger_retires_a_client_before_it_exceeds_its_budget() -> None:
    budgets = np.array([0.1, 0.5, 2.0, 10.0])
    ledger = PrivacyLedger(budgets, 1e-5, 8 / 1200, steps_per_round=20, planned_rounds=5)
    rng = np.random.default_rng(0)
    for _ in range(40):
        allowed = ledger.can_take_part()
        chosen = [m for m in np.flatnonzero(allowed) if rng.random() < 0.9]
        ledger.record(chosen)
        assert np.all(ledger.spent() <= budgets)
    # Calibrated for five rounds: every client is retired after its fifth.
    assert list(ledger.rounds_taken) == [5, 5, 5, 5]
    assert not ledger.can_take_part().any()
    with pytest.raises(ValueError, match="no budget left"):
        ledger.record([0])
    # ... having spent nearly all of its budget (the calibration is tight).
    np.testing.assert_allclose(ledger.spent(), budgets, rtol=0.02)


def test_ledger_rejects_bad_budgets() -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        PrivacyLedger(np.array([1.0, 0.0]), 1e-5, 0.01, 10, 5)
    with pytest.raises(ValueError, match="delta"):
        PrivacyLedger(np.array([1.0]), 1.5, 0.01, 10, 5)
