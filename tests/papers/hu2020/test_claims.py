"""Hu et al. 2020 on HAR: read-outs, tables, claims logic and accounting."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.hu2020 import claims as hu_claims
from fedlib.papers.hu2020 import experiment as hu
from fedlib.privacy import epsilon as exact_epsilon
from fedlib.privacy import hu2020_sigma


def _runs(private_curve, plain_curve, fig3, fig4):
    rows = []
    for panel in hu.FIG2_SETTINGS:
        for eps, curve in ((8.0, private_curve), (np.nan, plain_curve)):
            for r, value in enumerate(curve):
                rows.append({"run_key": f"2{panel}{eps}", "figure": "fig2" + panel,
                             "epsilon": eps, "round": r, "primal": value, "error": 0.1,
                             "tau": 0.0, "p_drop": 0.0, "dual": "as-written"})
        for r in range(len(private_curve)):  # the variant: never read by the claims
            rows.append({"run_key": f"2{panel}projected", "figure": "fig2" + panel,
                         "epsilon": 8.0, "round": r, "primal": 1e9 * (r + 1), "error": 0.05,
                         "tau": 0.0, "p_drop": 0.0, "dual": "projected"})
    for figure, column, values in (("fig3", "tau", fig3), ("fig4", "p_drop", fig4)):
        for eps, errors in values.items():
            for x, e in errors.items():
                rows.append({"run_key": f"{figure}{eps}{x}", "figure": figure, "epsilon": eps,
                             "round": 0, "primal": 1.0, "error": e,
                             "tau": x if column == "tau" else 1.0,
                             "p_drop": x if column == "p_drop" else 0.0,
                             "dual": "as-written"})
    return pd.DataFrame(rows)


def test_claims_follow_the_numbers() -> None:
    fig3 = {8.0: {0.0: 0.30, 0.5: 0.31, 1.0: 0.30}, np.nan: {0.0: 0.1, 0.5: 0.2, 1.0: 0.3}}
    fig4 = {8.0: {0.0: 0.3, 0.2: 0.2, 0.5: 0.4}, np.nan: {0.0: 0.1, 0.2: 0.15, 0.5: 0.3}}
    fig5 = pd.DataFrame({"epsilon": [0.1, 1.0, 10.0] * 2, "error": [0.5, 0.4, 0.2, 0.1, 0.3, 0.9],
                         "dual": ["as-written"] * 3 + ["projected"] * 3})
    settled = _runs([10, 5, 4, 4.1], [10, 3, 2, 1], fig3, fig4)
    evaluated = hu_claims.evaluate(settled, fig5, "smoke")
    assert [c.claim_id for c in evaluated] == [
        "fig2-private-plateaus-above", "fig3-private-flat", "fig4-private-interior-minimum",
        "fig4-nonprivate-rises", "fig5-error-falls-with-epsilon"]
    assert {(c.paper, c.scale) for c in evaluated} == {("hu2020", "smoke")}
    claims = {c.claim_id: c for c in evaluated}
    assert claims["fig2-private-plateaus-above"].status == "HOLDS"
    assert claims["fig3-private-flat"].status == "HOLDS"
    assert claims["fig4-private-interior-minimum"].status == "HOLDS"
    assert "P_drop=0.2" in claims["fig4-private-interior-minimum"].evidence
    assert claims["fig4-private-interior-minimum"].paper_value == "minimum 0.097 at P_drop=0.2"
    assert claims["fig4-nonprivate-rises"].status == "HOLDS"
    assert claims["fig5-error-falls-with-epsilon"].status == "HOLDS"
    assert claims["fig5-error-falls-with-epsilon"].evidence == (
        "rho=-1.00; eps=0.1: 0.500, eps=1: 0.400, eps=10: 0.200")

    fig4_edge = {8.0: {0.0: 0.1, 0.2: 0.2, 0.5: 0.4}, np.nan: {0.0: 0.3, 0.2: 0.2, 0.5: 0.1}}
    diverging = _runs([10, 5, 40, 400], [10, 3, 2, 1], fig3, fig4_edge)
    rising = fig5.assign(error=[0.2, 0.4, 0.5, 0.5, 0.4, 0.2])
    claims = {c.claim_id: c for c in hu_claims.evaluate(diverging, rising, "smoke")}
    assert claims["fig2-private-plateaus-above"].status == "FAILS"
    assert claims["fig4-private-interior-minimum"].status == "FAILS"
    assert claims["fig4-nonprivate-rises"].status == "FAILS"
    assert claims["fig5-error-falls-with-epsilon"].status == "FAILS"


def test_finals_keep_the_last_round_of_every_run() -> None:
    runs = pd.DataFrame({"run_key": ["a", "a", "a", "b", "b"], "round": [0, 5, 10, 0, 3],
                         "error": [0.5, 0.4, 0.3, 0.9, 0.8]})
    last = hu_claims.finals(runs)
    assert last["run_key"].tolist() == ["a", "b"]
    assert last["round"].tolist() == [10, 3] and last["error"].tolist() == [0.3, 0.8]
    assert last.index.tolist() == [0, 1]


def test_data_table_describes_the_tasks() -> None:
    train = [(np.zeros((4, 7)), np.array([1.0, -1.0, -1.0, -1.0])),
             (np.zeros((6, 7)), np.array([1.0, 1.0, -1.0, -1.0, -1.0, -1.0]))]
    table = hu_claims.data_table("hapt-561", train)
    assert table[""].to_dict() == {
        "feature source": "hapt-561", "features": 7, "tasks (subjects)": 2,
        "training examples per task": "4-6", "positive (sitting) share": "0.300"}


def test_cv_error_grid_puts_lambda_down_and_xi_across() -> None:
    table = pd.DataFrame({"lam": [0.1, 0.1, 1.0, 1.0], "xi": ["1", "1/m", "1", "1/m"],
                          "error": [0.2, 0.3, 0.4, 0.5]})
    grid = hu_claims.cv_error_grid(table)
    assert grid.index.tolist() == [0.1, 1.0] and grid.columns.tolist() == ["1", "1/m"]
    assert grid.loc[1.0, "1/m"] == 0.5 and grid.loc[0.1, "1"] == 0.2


def test_accounting_combines_the_two_releases_of_a_round() -> None:
    setup = hu.tier("smoke")
    n_train = np.array([40, 50, 60])
    table = hu_claims.accounting_table(setup, n_train, (8.0,), tau=0.0, p_drop=0.2)
    ours = table[table["rounds accounted"].str.startswith("K H")].iloc[0]
    q = setup.n_min / 40  # tau = 0: n_iter = n_min; the smallest device's rate
    s1, s2 = hu2020_sigma(8.0, hu.DELTA, q, 0.8, setup.inner_rounds * setup.outer_rounds)
    assert ours["sigma1"] == pytest.approx(s1) and ours["sigma2"] == pytest.approx(s2)
    z = 1 / math.sqrt(1 / s1**2 + 1 / s2**2)
    assert ours["combined multiplier"] == pytest.approx(z)
    assert ours["RDP epsilon over K H rounds"] == pytest.approx(
        exact_epsilon(z, 0.8 * q, setup.inner_rounds * setup.outer_rounds, hu.DELTA,
                      accountant="rdp"))
    paper = table[table["rounds accounted"].str.startswith("K (")].iloc[0]
    assert paper["sigma1"] < ours["sigma1"]  # fewer rounds accounted, less noise


def test_projection_table_sets_the_variant_beside_the_algorithm_as_written() -> None:
    fig3 = {8.0: {0.0: 0.3}, np.nan: {0.0: 0.1}}
    runs = _runs([10, 5, 4, 4.1], [10, 3, 2, 1], fig3, fig3)
    fig5 = pd.DataFrame({"epsilon": [1.0, 1.0, 1.0, 1.0], "error": [0.4, 0.5, 0.2, 0.3],
                         "dual": ["as-written", "as-written", "projected", "projected"]})
    table = hu_claims.projection_table(runs, fig5)
    first = table.loc["Figure 2a: tau=0, P_drop=0"]
    assert first["primal, as written"] == 4.1 and first["primal, non-private"] == 1
    assert first["primal, projected"] == 4e9 and first["test error, projected"] == 0.05
    assert table.loc["Figure 5: epsilon=1", "test error, as written"] == pytest.approx(0.45)
    assert table.loc["Figure 5: epsilon=1", "test error, projected"] == pytest.approx(0.25)


def test_projection_note_says_which_noise_drives_the_growth() -> None:
    index = ["Figure 2a: x", "Figure 2b: x", "Figure 5: epsilon=1"]
    table = pd.DataFrame({"primal, as written": [1e10, 2e10, np.nan],
                          "primal, projected": [9e9, 1.8e10, np.nan],
                          "primal, non-private": [700.0, 800.0, np.nan],
                          "test error, as written": [0.47, 0.48, 0.4],
                          "test error, projected": [0.46, 0.47, 0.4]}, index=index)
    assert "does not rescue" in hu_claims.projection_note(table)
    assert "0.90 times" in hu_claims.projection_note(table)
    rescued = table.assign(**{"primal, projected": [1e3, 2e3, np.nan]})
    assert "infeasible duals drive the growth" in hu_claims.projection_note(rescued)
