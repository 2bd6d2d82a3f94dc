"""PFA's budget distributions (Table 1), public clients and expected participation."""

from __future__ import annotations

import numpy as np
import pytest

from fedlib.papers.pfa.budgets import (
    BUDGET_FLOOR,
    PARETO_CAP,
    expected_rounds,
    public_clients,
    sample_budgets,
)


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
