"""PADPFL read-outs and claims: labels, final losses, tables, accounting and verdicts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.padpfl import claims as pad_claims
from fedlib.papers.padpfl import experiment as pad
from fedlib.privacy import epsilon as exact_epsilon
from fedlib.verdicts.claims import verdict_changes

CLAIM_IDS = [
    "fig2-equal-worst", "fig2-012-best", "fig2-012-best-of-five", "fig3-eps20-below-eps5",
    "fig3-equal-eps20-worse-than-weighted-eps5", "fig4-021-best", "fig4-equal-poor",
    "fig5-weighted-beats-equal", "fig6-weight-on-large-clients", "fig7-135-beats-equal-eps20",
    "fig8-adaptive-best", "fig9-eps20-below-eps5", "fig9-adaptive-converges",
]


Final = float | tuple[float, ...]
"""A run's final loss: one value (seed s then ends at value + 0.01 s) or one per seed."""


def _fake_runs(final: dict[tuple[str, str, float | None, int | None], Final],
               seeds: tuple[int, ...] = (0, 1), start: float = 2.3) -> pd.DataFrame:
    rows = []
    for (scenario, assignment, eps, exposures), value in final.items():
        for k, seed in enumerate(seeds):
            last = value[k] if isinstance(value, tuple) else value + 0.01 * seed
            for rnd, loss in ((0, start), (1, start), (2, last)):
                rows.append({"scenario": scenario, "seed": seed, "assignment": assignment,
                             "epsilon": np.nan if eps is None else eps,
                             "exposures": np.nan if exposures is None else exposures,
                             "round": rnd, "train_loss": loss, "test_accuracy": 0.5})
    return pd.DataFrame(rows)


def test_claims_follow_the_measured_ranking() -> None:
    setup = pad.PadpflSetup(rounds=2, hidden=4, seeds=(0, 1), client_divisor=1,
                            sample_divisor=1, small_exposures=1, test_examples=10)
    final: dict = {}
    for name, spec in pad.SCENARIOS.items():
        for rank, a in enumerate(spec.assignments):
            final[(name, a, None, None)] = 1.0 + rank  # listed order = ranking
        for exposures in (2, 1):
            final[(name, spec.private_assignment, 5.0, exposures)] = 3.0
            final[(name, spec.private_assignment, 20.0, exposures)] = 2.0
            final[(name, "1-1-1", 20.0, exposures)] = 2.5
    claims = {c.claim_id: c for c in pad_claims.evaluate(_fake_runs(final), setup, "smoke")}
    # S1 lists 1-1-1 first: it is the best here, so "equal worst" and "0-1-2 best" fail.
    assert claims["fig2-equal-worst"].status == "FAILS"
    assert claims["fig2-012-best"].status == "FAILS"
    assert claims["fig3-eps20-below-eps5"].status == "HOLDS"
    # Equal at eps=20 (2.5) and 0-1-2 at eps=5 (3.0) both end above the start (2.3).
    assert claims["fig3-equal-eps20-worse-than-weighted-eps5"].status == "NOT-TESTABLE"
    assert claims["fig5-weighted-beats-equal"].status == "HOLDS"
    # S3 lists 5-3-1, 1-1-1, 1-3-5: the reverse of the claimed order.
    assert claims["fig6-weight-on-large-clients"].status == "FAILS"
    assert claims["fig8-adaptive-best"].status == "FAILS"  # adaptive is listed last
    # eps=5 ends at 3.0, above the start 2.3: not converging.
    assert claims["fig9-adaptive-converges"].status == "FAILS"
    assert "initial loss 2.300" in claims["fig9-adaptive-converges"].evidence


def test_accounting_matches_the_noise_multiplier() -> None:
    setup = pad.tier("quick")
    table = pad_claims.accounting_table("S3", setup, exposures=30, epsilon=5.0)
    assert list(table["examples per client"]) == [50, 120, 271]
    sigma_c = table["sigma_C"].iloc[0]
    np.testing.assert_allclose(table["noise multiplier"], sigma_c * table["examples per client"]
                               / 20.0)
    # The smallest clients' paper epsilon is the budget itself: 30 uploads at 5/30 each.
    assert table["paper: eps (R uploads, linear)"].iloc[0] == pytest.approx(5.0)
    z = table["noise multiplier"].iloc[0]
    assert table["PLD: eps over R=30"].iloc[0] == pytest.approx(
        exact_epsilon(z, 1.0, 30, 0.01, accountant="pld"))
    # Larger clients get the same noise for a smaller sensitivity: smaller epsilon.
    assert table["PLD: eps over R=30"].is_monotonic_decreasing


def _small_setup() -> pad.PadpflSetup:
    return pad.PadpflSetup(rounds=2, hidden=4, seeds=(0, 1), client_divisor=1,
                           sample_divisor=1, small_exposures=1, test_examples=10)


def _as_the_paper_says() -> dict:
    """Final losses ranked as the paper says, every arm below the start (2.3)."""
    final: dict = {}
    best = {"S1": ["0-1-2", "0-1-1", "1-2-3", "0-0-1", "1-1-1"],
            "S2": ["0-2-1", "0-1-2", "0-1-1", "1-1-1", "1-2-1"],
            "S3": ["1-3-5", "1-1-1", "5-3-1"],
            "S4": ["adaptive", "0-1-2", "1-1-1"]}
    for name, spec in pad.SCENARIOS.items():
        assert sorted(best[name]) == sorted(spec.assignments)
        for rank, a in enumerate(best[name]):
            final[(name, a, None, None)] = 1.0 + 0.2 * rank
        for exposures in (2, 1):
            final[(name, spec.private_assignment, 5.0, exposures)] = 2.0
            final[(name, spec.private_assignment, 20.0, exposures)] = 1.5
            final[(name, "1-1-1", 20.0, exposures)] = 2.2
    return final


def test_claims_hold_when_the_runs_rank_as_the_paper_says() -> None:
    final = _as_the_paper_says()
    claims = pad_claims.evaluate(_fake_runs(final), _small_setup(), "quick")
    assert [c.claim_id for c in claims] == CLAIM_IDS
    assert {c.status for c in claims} == {"HOLDS"}, [c.claim_id for c in claims
                                                     if c.status != "HOLDS"]
    assert {c.paper for c in claims} == {"padpfl"} and {c.scale for c in claims} == {"quick"}
    by_id = {c.claim_id: c for c in claims}
    assert by_id["fig2-012-best"].evidence.startswith(
        "vs 1-1-1: HOLDS (0-1-2 1.005, 1-1-1 1.805, difference -0.800 [-0.800, -0.800] "
        "(n=2 paired seeds, 95% interval), margin 0.02)")
    assert by_id["fig2-012-best"].restated.startswith("was: '0-1-2' gives the lowest")
    assert by_id["fig2-012-best-of-five"].origin == "companion"
    evidence = by_id["fig3-eps20-below-eps5"].evidence
    assert evidence.startswith("judged at R=T=2; mean test accuracy at R=2: 0-1-2 eps=20 0.500")
    assert "at the small R=1 (server noise on): HOLDS" in evidence
    assert "difference -0.500 [-0.500, -0.500] (n=2 paired seeds" in evidence


def test_evaluate_reports_missing_runs() -> None:
    final = {("S1", a, None, None): 1.0 for a in pad.SCENARIOS["S1"].assignments}
    with pytest.raises(KeyError, match="no runs for S1 0-1-2 eps=20.0 R=2"):
        pad_claims.evaluate(_fake_runs(final), _small_setup(), "smoke")


def test_curve_labels_and_final_losses() -> None:
    runs = _fake_runs({("S1", "0-1-2", None, None): 1.0, ("S1", "0-1-2", 5.0, 2): 3.0})
    assert pad_claims.curve_label(runs.iloc[0]) == "0-1-2, non-private"
    assert pad_claims.curve_label(runs.iloc[-1]) == "0-1-2, eps=5"
    finals = pad_claims.final_losses(runs)
    assert len(finals) == 4 and "round" not in finals
    np.testing.assert_allclose(sorted(finals["train_loss"]), [1.0, 1.01, 3.0, 3.01])


def test_summary_table_gives_mean_and_range_over_seeds() -> None:
    runs = _fake_runs({("S1", "0-1-2", None, None): 1.0, ("S1", "0-1-2", 5.0, 2): 3.0})
    table = pad_claims.summary_table(runs)
    assert list(table.index) == [("S1", "-", "0-1-2, non-private"), ("S1", "2", "0-1-2, eps=5")]
    assert list(table.columns) == ["final_loss", "spread", "test_accuracy"]
    np.testing.assert_allclose(table["final_loss"], [1.005, 3.005])
    np.testing.assert_allclose(table["spread"], [0.01, 0.01])
    np.testing.assert_allclose(table["test_accuracy"], [0.5, 0.5])


def test_noise_table_lists_the_private_runs_at_round_one() -> None:
    runs = _fake_runs({("S1", "0-1-2", None, None): 1.0, ("S1", "0-1-2", 5.0, 2): 3.0,
                       ("S1", "0-1-2", 5.0, 1): 3.0})
    runs["client_sigma"] = np.where(runs["exposures"] == 2, 0.4, 0.2)
    runs["server_sigma"] = np.where(runs["exposures"] == 1, 0.7, 0.0)
    table = pad_claims.noise_table(runs)
    assert list(table.columns) == ["scenario", "R", "assignment", "epsilon", "sigma_C",
                                   "sigma_S (round 1)"]
    assert table["R"].tolist() == [1, 2] and table["R"].dtype.kind == "i"
    assert table["sigma_C"].tolist() == [0.2, 0.4]
    assert table["sigma_S (round 1)"].tolist() == [0.7, 0.0]


def test_accounting_stacks_both_r_and_both_epsilons() -> None:
    setup = pad.tier("quick")
    table = pad_claims.accounting(setup)
    assert list(dict.fromkeys(zip(table["R"], table["epsilon"], strict=True))) == [
        (30, 5.0), (30, 20.0), (3, 5.0), (3, 20.0)]
    assert len(table) == 4 * 3
    first = table[(table["R"] == 3) & (table["epsilon"] == 20.0)].drop(columns=["R", "epsilon"])
    expected = pad_claims.accounting_table("S3", setup, 3, 20.0)
    np.testing.assert_allclose(first["sigma_C"], expected["sigma_C"])
    note = pad_claims.accounting_note(table)
    # The smallest clients' per-upload budget is epsilon / R.
    assert "R=30, eps=5: 0.17; R=30, eps=20: 0.67; R=3, eps=5: 1.67; R=3, eps=20: 6.67" in note


def test_setup_and_scenario_tables() -> None:
    setup = pad.tier("quick")
    table = pad_claims.setup_table(setup, "quick", 4)
    assert table.loc["seeds", ""] == "4, 5, 6"
    assert table.loc["rounds T", ""] == 30 and table.loc["small R (inferred)", ""] == 3
    scenarios = pad_claims.scenario_table()
    assert list(scenarios.index) == ["S1", "S2", "S3", "S4"]
    assert scenarios.loc["S4", "densities"] == "0.5 / 0.2 / 0.05 then 0.05 / 0.2 / 0.5"
    assert scenarios.loc["S3", "examples per client"] == "50 / 120 / 271"


def _judge(final: dict, seeds: tuple[int, ...] = (0, 1)) -> dict:
    runs = _fake_runs(final, seeds)
    setup = dataclasses.replace(_small_setup(), seeds=seeds)
    return {c.claim_id: c for c in pad_claims.evaluate(runs, setup, "quick")}


def test_restated_012_claim_reads_the_assignments_the_paper_names() -> None:
    # 0-0-1 (inferred, not named by the paper) ends below 0-1-2: the old statement, best of
    # the five, fails; the restated one (0-1-2 against equal factors) holds.
    final = _as_the_paper_says()
    final[("S1", "0-0-1", None, None)] = 0.5
    claims = _judge(final)
    assert claims["fig2-012-best"].status == "HOLDS"
    assert claims["fig2-012-best-of-five"].status == "FAILS"
    assert "0-0-1 is ahead beyond the margin" in claims["fig2-012-best-of-five"].evidence


def test_a_tie_within_the_margin_fails_even_when_the_order_is_the_claimed_one() -> None:
    # S2: 0-2-1 < 0-1-2 < 0-1-1 by 0.001, the seeds spread 0.07 but shift every arm alike.
    final = _as_the_paper_says()
    for a, base in (("0-2-1", 0.879), ("0-1-2", 0.880), ("0-1-1", 0.881)):
        final[("S2", a, None, None)] = (base, base + 0.07, base + 0.035)
    claims = _judge(final, seeds=(0, 1, 2))
    assert claims["fig4-021-best"].status == "FAILS"
    assert "the arms tie within the margin" in claims["fig4-021-best"].evidence
    assert claims["fig4-equal-poor"].status == "HOLDS"


def test_a_difference_inside_the_seeds_noise_is_inconclusive() -> None:
    final = _as_the_paper_says()
    final[("S3", "1-3-5", None, None)] = (0.80, 0.95, 0.86)
    final[("S3", "1-1-1", None, None)] = (0.90, 0.90, 0.91)
    final[("S3", "5-3-1", None, None)] = (1.50, 1.50, 1.50)
    claims = _judge(final, seeds=(0, 1, 2))
    assert claims["fig6-weight-on-large-clients"].status == "INCONCLUSIVE"


def test_private_arms_above_their_initial_loss_are_not_ranked() -> None:
    # Every private run ends above the start (2.3): a clear win of one noise-dominated run
    # over another says nothing, and the convergence claim fails.
    final = _as_the_paper_says()
    for key in [k for k in final if k[2] is not None]:
        final[key] = {5.0: 9.0, 20.0: 2.6}[key[2]] + (0.5 if key[1] == "1-1-1" else 0.0)
    claims = _judge(final)
    for claim_id in ("fig3-eps20-below-eps5", "fig3-equal-eps20-worse-than-weighted-eps5",
                     "fig5-weighted-beats-equal", "fig7-135-beats-equal-eps20",
                     "fig9-eps20-below-eps5"):
        assert claims[claim_id].status == "NOT-TESTABLE", claim_id
        assert "within noise of the initial loss (2.3)" in claims[claim_id].evidence
    assert claims["fig9-adaptive-converges"].status == "FAILS"
    assert claims["fig2-equal-worst"].status == "HOLDS"  # the non-private arms learned


def test_one_seed_gives_every_claim_not_run_under_the_same_ids() -> None:
    claims = _judge(_as_the_paper_says(), seeds=(0,))
    assert list(claims) == CLAIM_IDS
    assert {c.status for c in claims.values()} == {"NOT-RUN"}
    assert "one repeat" in claims["fig2-equal-worst"].evidence



def test_verdict_change_notes_name_claims_of_the_chapter() -> None:
    claims = list(_judge(_as_the_paper_says()).values())
    text = verdict_changes(claims, pad_claims.VERDICT_CHANGES)
    assert set(pad_claims.VERDICT_CHANGES) <= set(CLAIM_IDS)
    assert "`fig2-012-best`: FAILS -> HOLDS" in text
    restated = sum(bool(c.restated) for c in claims)
    assert text.count("\n") + 1 == len(pad_claims.VERDICT_CHANGES) + restated
