"""PADPFL read-outs and claims: labels, final losses, tables, accounting and verdicts."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.padpfl import claims as pad_claims
from fedlib.papers.padpfl import experiment as pad
from fedlib.papers.padpfl import notes as pad_notes
from fedlib.papers.padpfl import studies
from fedlib.privacy import epsilon as exact_epsilon
from fedlib.verdicts.claims import verdict_changes

CLAIM_IDS = [
    "fig2-equal-worst", "fig2-012-best", "fig3-eps20-below-eps5",
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
    # eps=5 (3.0) and equal factors at eps=20 (2.5) end above the start (2.3): diverged.
    for claim_id in ("fig3-eps20-below-eps5", "fig3-equal-eps20-worse-than-weighted-eps5",
                     "fig5-weighted-beats-equal", "fig7-135-beats-equal-eps20",
                     "fig9-eps20-below-eps5"):
        assert claims[claim_id].status == "NOT-TESTABLE", claim_id
        assert "diverged" in claims[claim_id].evidence
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
    by_id = {c.claim_id: c for c in claims}
    # '0-2-1' is best, but on an open edge of S2's ratio grid: '0-1-1' and '0-1-2' lie on
    # its line, and the ratios run on past it (toward '0-1-0'), where nothing was run.
    assert by_id["fig4-021-best"].status == "NOT-TESTABLE"
    assert "the best point 0-2-1 is on an edge of the grid" in by_id["fig4-021-best"].evidence
    others = {c.claim_id: c.status for c in claims if c.claim_id != "fig4-021-best"}
    assert set(others.values()) == {"HOLDS"}, others
    assert {c.paper for c in claims} == {"padpfl"} and {c.scale for c in claims} == {"quick"}
    assert by_id["fig2-012-best"].evidence.startswith(
        "the lowest mean is 0-1-2 (1.005), enclosed by the grid or a natural bound")
    assert ("vs 1-1-1: HOLDS (0-1-2 1.005, 1-1-1 1.805, difference -0.800 exactly (the same "
            "in all 2 paired seeds), margin 0.02)") in by_id["fig2-012-best"].evidence
    assert by_id["fig2-012-best"].evidence.endswith(
        f"; margin 0.02 nats: {pad_claims.loss_why(_small_setup(), 'S1')}")
    assert by_id["fig2-012-best"].restated.startswith("was: '0-1-2' gives a lower final loss")
    assert "optimal ratio" in by_id["fig2-012-best"].quote
    assert "optimal ratio" in by_id["fig2-012-best"].text
    assert by_id["fig9-adaptive-converges"].origin == "companion"
    assert by_id["fig9-adaptive-converges"].quote == ""
    assert {c.origin for c in claims if c.claim_id != "fig9-adaptive-converges"} == {"paper"}
    assert all(c.quote for c in claims if c.origin == "paper")
    evidence = by_id["fig3-eps20-below-eps5"].evidence
    assert evidence.startswith("judged at R=1 < T=2 (inferred, the server adds noise); mean "
                               "test accuracy at R=1: 0-1-2 eps=20 0.500")
    assert "at R=T=2 (the ablation, no server noise): HOLDS" in evidence
    assert ("difference -0.500 exactly (the same in all 2 paired seeds to 9 decimals)"
            in evidence)


def test_private_claims_are_judged_at_the_small_r_and_give_r_equal_t_as_the_ablation() -> None:
    # At R = T every private run ends above the start; at R = 1 they learn, ranked as the
    # paper says: the claims read R = 1.
    final = _as_the_paper_says()
    for key in [k for k in final if k[3] == 2]:
        final[key] = {5.0: 9.0, 20.0: 2.6}[key[2]]
    claims = _judge(final)
    for claim_id in ("fig3-eps20-below-eps5", "fig5-weighted-beats-equal",
                     "fig7-135-beats-equal-eps20", "fig9-eps20-below-eps5"):
        evidence = claims[claim_id].evidence
        assert claims[claim_id].status == "HOLDS", claim_id
        assert "at R=T=2 (the ablation, no server noise): NOT-TESTABLE" in evidence
        assert "diverged" in evidence
    table = pad_claims.exposure_table(_fake_runs(final), _small_setup())
    assert list(table.columns) == ["R=1 (judged)", "R=2 (= T, ablation)"]
    assert table.loc["fig3-eps20-below-eps5"].tolist() == ["HOLDS", "NOT-TESTABLE"]
    assert table.index[-1] == "fig9-adaptive-converges"
    assert table.loc["fig9-adaptive-converges"].tolist() == ["HOLDS", "FAILS"]
    at_t = dataclasses.replace(_small_setup(), small_exposures=2)
    only_t = pad_claims.exposure_table(_fake_runs(final), at_t)
    assert list(only_t.columns) == ["R=1", "R=2 (= T, judged)"]


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
    assert table.loc["rounds T", ""] == 30
    assert table.loc["R of the private claims (inferred)", ""] == 3
    scenarios = pad_claims.scenario_table()
    assert list(scenarios.index) == ["S1", "S2", "S3", "S4"]
    assert scenarios.loc["S4", "densities"] == "0.5 / 0.2 / 0.05 then 0.05 / 0.2 / 0.5"
    assert scenarios.loc["S3", "examples per client"] == "50 / 120 / 271"


def _judge(final: dict, seeds: tuple[int, ...] = (0, 1)) -> dict:
    runs = _fake_runs(final, seeds)
    setup = dataclasses.replace(_small_setup(), seeds=seeds)
    return {c.claim_id: c for c in pad_claims.evaluate(runs, setup, "quick")}


def test_012_claim_is_the_papers_optimal_ratio_over_the_five_assignments() -> None:
    # 0-0-1 (inferred, not named by the paper) ends below 0-1-2: '0-1-2' is not the optimal
    # ratio. 0-0-1 lies on an open edge (weight moved from the clean part to the severe
    # one leaves the grid), but whatever lies beyond, 0-0-1 already beats '0-1-2'.
    final = _as_the_paper_says()
    final[("S1", "0-0-1", None, None)] = 0.5
    claims = _judge(final)
    assert claims["fig2-012-best"].status == "FAILS"
    evidence = claims["fig2-012-best"].evidence
    assert evidence.startswith("the lowest mean is 0-0-1 (0.505); the best point 0-0-1 is on "
                               "an edge of the grid the optimum could lie beyond (weight moved "
                               "from part 3 to part 1 leaves")
    assert "0-0-1 is ahead beyond the margin" in evidence
    assert "fig2-012-best-of-five" not in claims


def test_a_tie_within_the_margin_fails_even_when_the_order_is_the_claimed_one() -> None:
    # S2: 0-2-1 < 0-1-2 < 0-1-1 by 0.001, the seeds spread 0.07 but shift every arm alike.
    final = _as_the_paper_says()
    for a, base in (("0-2-1", 0.879), ("0-1-2", 0.880), ("0-1-1", 0.881)):
        final[("S2", a, None, None)] = (base, base + 0.07, base + 0.035)
    claims = _judge(final, seeds=(0, 1, 2))
    assert claims["fig4-021-best"].status == "FAILS"
    evidence = claims["fig4-021-best"].evidence
    assert "the arms tie within the margin" in evidence
    # '0-2-1' has the lowest mean, on an open edge: the tie refutes it whatever lies beyond.
    assert "the best point 0-2-1 is on an edge of the grid" in evidence
    assert "the grid's own points already refute '0-2-1' as the best" in evidence
    assert claims["fig4-equal-poor"].status == "HOLDS"


def test_a_difference_inside_the_seeds_noise_is_inconclusive() -> None:
    final = _as_the_paper_says()
    final[("S3", "1-3-5", None, None)] = (0.80, 0.95, 0.86)
    final[("S3", "1-1-1", None, None)] = (0.90, 0.90, 0.91)
    final[("S3", "5-3-1", None, None)] = (1.50, 1.50, 1.50)
    claims = _judge(final, seeds=(0, 1, 2))
    assert claims["fig6-weight-on-large-clients"].status == "INCONCLUSIVE"


def test_private_arms_above_their_initial_loss_are_not_ranked() -> None:
    # Every private run ends above the start (2.3), at both R: a clear win of one
    # noise-dominated run over another says nothing, and the convergence finding fails.
    final = _as_the_paper_says()
    for key in [k for k in final if k[2] is not None]:
        final[key] = {5.0: 9.0, 20.0: 2.6}[key[2]] + (0.5 if key[1] == "1-1-1" else 0.0)
    claims = _judge(final)
    for claim_id in ("fig3-eps20-below-eps5", "fig3-equal-eps20-worse-than-weighted-eps5",
                     "fig5-weighted-beats-equal", "fig7-135-beats-equal-eps20",
                     "fig9-eps20-below-eps5"):
        assert claims[claim_id].status == "NOT-TESTABLE", claim_id
        assert "diverged, 0 of 2 seeds below the initial loss (2.3)" in claims[claim_id].evidence
    assert claims["fig9-adaptive-converges"].status == "FAILS"
    assert claims["fig2-equal-worst"].status == "HOLDS"  # the non-private arms learned


def test_one_seed_gives_every_claim_not_run_under_the_same_ids() -> None:
    claims = _judge(_as_the_paper_says(), seeds=(0,))
    assert list(claims) == CLAIM_IDS
    assert {c.status for c in claims.values()} == {"NOT-RUN"}
    assert "one repeat" in claims["fig2-equal-worst"].evidence



def _notes_case(shift: float = 0.0) -> tuple[list, pd.DataFrame, pad.PadpflSetup]:
    """Claims, runs and setup where the private runs at R = T end above the start and those
    at R = 1 learn (their losses shifted by ``shift``)."""
    final = _as_the_paper_says()
    for key in [k for k in final if k[3] is not None]:
        final[key] = ({5.0: 9.0, 20.0: 2.6}[key[2]] if key[3] == 2
                      else final[key] + shift)
    runs = _fake_runs(final, (0, 1, 2))
    setup = dataclasses.replace(_small_setup(), seeds=(0, 1, 2))
    return pad_claims.evaluate(runs, setup, "quick"), runs, setup


def test_verdict_change_notes_name_claims_of_the_chapter() -> None:
    claims, runs, setup = _notes_case()
    changes = pad_notes.verdict_notes(claims, runs, setup)
    assert set(changes) <= set(CLAIM_IDS)
    text = verdict_changes(claims, changes)
    assert "`fig3-eps20-below-eps5`: NOT-TESTABLE -> HOLDS: judged at R = T = 2 before" in text
    assert "`fig9-adaptive-converges`: a claim of the paper before, now a finding" in text
    assert "`fig2-012-best`: HOLDS -> HOLDS, restated" in text
    restated = sum(bool(c.restated) for c in claims)
    assert text.count("\n") + 1 == len(changes) + restated


def test_verdict_change_notes_read_every_number_from_the_runs() -> None:
    claims, runs, setup = _notes_case()
    note = pad_notes.verdict_notes(claims, runs, setup)["fig3-eps20-below-eps5"]
    # R = 1: 0-1-2 at eps=20 ends at 1.5 + 0.01 seed, at eps=5 at 2.0 + 0.01 seed.
    assert "0-1-2 eps=20 1.510 (accuracy 0.500), 0-1-2 eps=5 2.010 (0.500)" in note
    assert "initial loss 2.300" in note
    assert "0-1-2 eps=20 2.610 (accuracy 0.500), 0-1-2 eps=5 9.010 (0.500)" in note
    moved = pad_notes.verdict_notes(*_notes_case(shift=0.1))["fig3-eps20-below-eps5"]
    assert "0-1-2 eps=20 1.610 (accuracy 0.500), 0-1-2 eps=5 2.110 (0.500)" in moved
    s2 = pad_notes.verdict_notes(claims, runs, setup)["fig4-021-best"]
    assert s2.startswith("HOLDS -> NOT-TESTABLE, now with the open-edge rule: the lowest "
                         "mean final loss is '0-2-1' (1.010), on an open edge")
    # With one seed nothing is judged: no note.
    one = runs[runs["seed"] == 0]
    at_one = dataclasses.replace(setup, seeds=(0,))
    assert pad_notes.verdict_notes(pad_claims.evaluate(one, at_one, "smoke"), one,
                                   at_one) == {}


# --- The open-edge rule, R and the margins ----------------------------------------------

S1_GRID = pad.SCENARIOS["S1"].assignments
S2_GRID = pad.SCENARIOS["S2"].assignments


@pytest.mark.parametrize(("point", "grid", "edge"), [
    ("0-1-2", S1_GRID, None),  # between 0-1-1 and 0-0-1 on the face p1 = 0, 1-1-1 inside
    ("1-2-3", S1_GRID, None),  # inside the hull of 1-1-1, 0-1-1 and 0-0-1
    ("0-0-1", S1_GRID, "from part 3 to part 1"),  # toward 1-0-k, where nothing was run
    ("0-1-1", S1_GRID, "from part 3 to part 1 or from part 3 to part 2"),
    ("0-2-1", S2_GRID, "from part 3 to part 1 or from part 3 to part 2"),  # toward 0-1-0
    ("0-1-2", S2_GRID, "from part 2 to part 1 or from part 2 to part 3"),  # toward 0-0-1
    ("0-1-1", S2_GRID, None),  # between 0-2-1 and 0-1-2 on the face p1 = 0
    ("0-1-0", ("0-1-0", "0-1-1", "0-0-1"), "from part 2 to part 1"),  # the grid is a line
    ("1-0-0", ("1-0-0", "0-1-0", "0-0-1", "1-1-1"), None),  # the simplex's corners
    ("1-1-1", ("1-0-0", "0-1-0", "0-0-1", "1-1-1"), None),
])
def test_open_edge_names_how_the_ratios_leave_the_grid(point: str, grid: tuple,
                                                       edge: str | None) -> None:
    found = pad_claims.open_edge(point, list(grid))
    assert found == (None if edge is None else f"weight moved {edge}")


def test_open_edge_does_not_depend_on_how_the_ratios_are_written() -> None:
    # '0-2-4' is '0-1-2' written twice as large: the same point of the grid.
    grid = ["1-1-1", "0-2-4", "1-2-3", "0-1-1", "0-0-1"]
    assert pad_claims.open_edge("0-2-4", grid) is None
    with pytest.raises(ValueError, match="change during training"):
        pad_claims.open_edge("adaptive", ["adaptive", "0-1-2", "1-1-1"])
    with pytest.raises(ValueError, match="is not among the grid"):
        pad_claims.open_edge("0-3-1", list(S2_GRID))


def _arms(values: dict[str, float], seeds: int = 3) -> dict[str, pd.Series]:
    """Final losses per assignment, every seed shifted alike (0.05 per seed)."""
    return {a: pd.Series([v + 0.05 * s for s in range(seeds)]) .rename_axis("seed")
            for a, v in values.items()}


def test_best_setting_applies_the_open_edge_rule() -> None:
    why = "test"
    start = pad_claims.Trivial("start", 2.3, higher_is_better=False, tolerance=0.02,
                               start=True)
    s2 = {"1-1-1": 1.2, "0-2-1": 0.8, "0-1-1": 1.0, "0-1-2": 1.1, "1-2-1": 1.1}
    # The claimed point is clearly best, but on an open edge: not testable.
    verdict = pad_claims.best_setting("0-2-1", _arms(s2), why=why, trivial=start)
    assert verdict.status == "NOT-TESTABLE"
    assert verdict.evidence.startswith("the best point 0-2-1 is on an edge of the grid")
    # Clearly best and enclosed: the comparisons decide.
    s2["0-1-1"], s2["0-2-1"] = 0.8, 1.0
    verdict = pad_claims.best_setting("0-1-1", _arms(s2), why=why, trivial=start)
    assert verdict.status == "HOLDS" and "enclosed by the grid" in verdict.evidence
    # Another point, on an open edge, clearly ahead: refuted by the grid itself.
    s2["0-1-2"] = 0.6
    verdict = pad_claims.best_setting("0-1-1", _arms(s2), why=why, trivial=start)
    assert verdict.status == "FAILS"
    assert "already refute '0-1-1' as the best" in verdict.evidence
    # A claimed arm that diverged is not ranked, edge or not.
    s2["0-1-1"] = 2.6
    verdict = pad_claims.best_setting("0-1-1", _arms(s2), why=why, trivial=start)
    assert verdict.status == "NOT-TESTABLE" and "diverged" in verdict.evidence


def test_server_noise_limits_follow_eq_13() -> None:
    setup = pad.tier("quick")
    t = setup.rounds
    for scenario, assignment in pad_claims.private_arms():
        limit = pad_claims.server_noise_limit(setup, scenario, assignment)
        p = studies.scenario_impact(scenario, assignment, setup)
        ratio = max(float(np.sqrt(np.sum(q ** 2)) / q.max()) for q in p)
        assert limit == math.ceil(t / ratio) - 1  # the largest R with T > R * ratio
    # Equal factors over 60 clients: sqrt(60)/60 * R < 30 up to R = 3; '0-1-2': up to 5.
    assert pad_claims.server_noise_limit(setup, "S1", "1-1-1") == 3
    assert pad_claims.server_noise_limit(setup, "S1", "0-1-2") == 5
    table = pad_claims.server_noise_table(setup)
    assert table.loc[("S1", "1-1-1"), "largest R with server noise"] == 3
    reason = pad_claims.exposure_reason(setup)
    assert "R = 3, the largest R at which every private run gets server noise" in reason
    assert "The paper does not state R" in reason
    at_t = dataclasses.replace(setup, small_exposures=t)
    assert "R = T: the server adds no noise to any run" in pad_claims.exposure_reason(at_t)
    at_1 = dataclasses.replace(setup, small_exposures=1)
    assert "the largest such R is 3" in pad_claims.exposure_reason(at_1)
    at_10 = dataclasses.replace(setup, small_exposures=10)
    assert "some private runs get no server noise" in pad_claims.exposure_reason(at_10)


def test_margins_say_what_the_metric_resolves() -> None:
    setup = pad.tier("quick")
    assert pad_claims.evaluation_size(setup, "S1") == (60, 9000)
    assert pad_claims.evaluation_size(setup, "S3") == (60, 20 * (50 + 120 + 271))
    why = pad_claims.loss_why(setup, "S1")
    step = math.log(10) / 9000
    assert f"the {9000:,} clean training images of S1's 60 clients" in why
    assert f"{step:.1e} nats" in why and f"{0.02 / step:,.0f} such images" in why
    smoke = pad.tier("smoke")
    assert "of S1's 6 clients" in pad_claims.loss_why(smoke, "S1")
    accuracy = pad_claims.accuracy_why(setup, 0.2, "reason")
    assert accuracy == ("reason; accuracy over the 10,000 test images resolves 1.0e-04 (one "
                        "image): the margin is 2,000 images")
    verdict = pad_claims.Verdict("HOLDS", "a | b", "brief")
    said = pad_claims.margin_said(verdict, "why")
    assert said.evidence == "a | b; margin 0.02 nats: why" and said.brief == "brief"
    assert pad_claims.margin_said(pad_claims.Verdict("HOLDS", "x (why)"), "why").evidence == (
        "x (why)")
