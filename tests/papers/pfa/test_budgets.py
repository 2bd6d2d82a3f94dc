"""PFA's budget distributions (Table 1), public clients and expected participation."""

from __future__ import annotations

import numpy as np
import pytest

from fedlib.papers.pfa.budgets import (
    BUDGET_FLOOR,
    PARETO_CAP,
    ClosedFormLedger,
    authors_budgets,
    closed_form_epsilon,
    closed_form_noise_multiplier,
    expected_rounds,
    make_ledger,
    public_clients,
    sample_budgets,
)
from fedlib.privacy.ledger import PrivacyLedger, ledger_epsilon


def test_budget_distributions_follow_table_1() -> None:
    mix = sample_budgets("mixgauss1", 20000, 0)
    high = mix > 5
    assert abs(high.mean() - 0.1) < 0.01
    assert abs(mix[~high].mean() - 0.1) < 0.002 and abs(mix[high].mean() - 10) < 0.01
    uniform = sample_budgets("uniform", 5000, 1)
    assert uniform.min() >= 1 and uniform.max() <= 10 and abs(uniform.mean() - 5.5) < 0.1
    gauss = sample_budgets("gauss", 5000, 2)
    assert abs(np.median(gauss) - 3) < 0.1 and gauss.min() >= BUDGET_FLOOR
    pareto = sample_budgets("pareto", 5000, 3)
    assert pareto.min() >= 1 and pareto.max() <= PARETO_CAP
    four = sample_budgets("mixgauss4", 20000, 4)
    assert abs((four < 0.5).mean() - 0.5) < 0.02 and abs((four > 5).mean() - 0.1) < 0.01
    with pytest.raises(ValueError, match="unknown budget distribution 'zipf'"):
        sample_budgets("zipf", 3, 0)


def test_public_clients_are_the_top_tenth_by_budget() -> None:
    budgets = np.array([0.1, 9.0, 0.2, 10.0, 0.1, 0.3, 0.1, 0.1, 0.2, 0.1,
                        0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 8.0])
    assert list(np.flatnonzero(public_clients(budgets))) == [1, 3]
    assert public_clients(budgets[:3]).sum() == 1  # at least one
    assert expected_rounds(100, 24, 30) == 80


# The authors' defaults at N = 30: q = 4 / 2,000, 100 rounds of 100 steps at sampling ratio
# 0.8 (T* = 8,000 steps), delta = 1e-5, so 10 q sqrt(T* log10(1/delta)) = 4.
Q, PLANNED, STEPS, DELTA = 4 / 2000, 80, 100, 1e-5


def test_closed_form_is_the_authors_noise_multiplier_and_accountant() -> None:
    for budget in (0.1, 0.5, 10.0):
        nm = closed_form_noise_multiplier(budget, Q, PLANNED * STEPS, DELTA)
        assert nm == pytest.approx(4 / budget, rel=1e-12)
        assert closed_form_epsilon(nm, Q, PLANNED * STEPS, DELTA) == pytest.approx(budget)
        assert closed_form_epsilon(nm, Q, PLANNED * STEPS // 4, DELTA) == pytest.approx(
            budget / 2)
    # Not an upper bound: an exact accountant finds the large budget overspent and the
    # small ones far from spent.
    assert ledger_epsilon(4 / 10.0, Q, PLANNED * STEPS, DELTA) > 20
    assert ledger_epsilon(4 / 0.1, Q, PLANNED * STEPS, DELTA) < 0.02
    with pytest.raises(ValueError, match="budget must be positive"):
        closed_form_noise_multiplier(0.0, Q, 10, DELTA)


def test_closed_form_ledger_retires_a_client_after_its_planned_rounds() -> None:
    budgets = np.array([0.487, 0.1, 10.07])
    ledger = ClosedFormLedger(budgets, DELTA, Q, STEPS, PLANNED)
    np.testing.assert_allclose(ledger.noise_multipliers, 4 / budgets)
    for _ in range(PLANNED):
        assert ledger.can_take_part().all()
        ledger.record([0, 1, 2])
    assert not ledger.can_take_part().any()
    np.testing.assert_allclose(ledger.spent(), budgets)
    with pytest.raises(ValueError, match="no budget left"):
        ledger.record([1])
    assert isinstance(make_ledger("rdp", budgets, DELTA, Q, STEPS, 2), PrivacyLedger)
    assert isinstance(make_ledger("closed-form", budgets, DELTA, Q, STEPS, 2),
                      ClosedFormLedger)
    with pytest.raises(ValueError, match="calibration must be one of"):
        make_ledger("moments", budgets, DELTA, Q, STEPS, 2)


def test_authors_budgets_are_the_draws_of_their_code() -> None:
    # The first budgets their code printed for epsfiles/mixgauss1.txt at seed 1.
    np.testing.assert_allclose(authors_budgets("mixgauss2", 30, 1)[:10], [
        0.49197827, 0.49551122, 0.48894065, 0.48345485, 0.48982986, 0.50637362,
        0.49140093, 0.51772608, 0.50564345, 9.94334898], atol=1e-8)
    # The same component draws for both mixtures; only the low component's mean differs.
    low, high = authors_budgets("mixgauss1", 30, 10), authors_budgets("mixgauss2", 30, 10)
    np.testing.assert_array_equal(low > 1, high > 1)
    assert (low > 1).sum() == 4  # seed 10, which their modules set at import
    with pytest.raises(ValueError, match="Gaussian mixtures"):
        authors_budgets("uniform", 3, 0)
