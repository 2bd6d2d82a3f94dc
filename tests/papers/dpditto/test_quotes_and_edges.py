"""DP-Ditto: every claim of the paper quotes the paper's own words, every accuracy margin
says what the metric resolves (from the clients' test sets), an optimum on an open edge
of its grid decides nothing, and the verdict-change notes read every number from the
claims."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from quotes import not_in_paper, passages

from fedlib.papers.dpditto import claims as dc
from fedlib.papers.dpditto import experiment as dd
from fedlib.papers.dpditto import notes as dc_notes
from fedlib.papers.dpditto.paper_tier import low_epsilon_setup
from fedlib.verdicts.claims import Claim
from fedlib.verdicts.compare import Comparison

BOUND = {1.0: (10, np.ones(200)), 10.0: (20, np.ones(200)), 100.0: (30, np.ones(200))}

def _smoke_claims(runs: pd.DataFrame, sizes: dict | None = None) -> list[Claim]:
    setup = dd.tier("smoke")
    claims = dc.evaluate(runs, setup, "smoke", BOUND, 200, sizes)
    low = low_epsilon_setup(setup, "smoke")
    return claims + dc.low_epsilon_claims(runs, low, "smoke", test_sizes=sizes)


def test_every_claim_of_the_paper_quotes_it_and_a_finding_quotes_nothing(
        smoke_runs: pd.DataFrame) -> None:
    claims = _smoke_claims(smoke_runs)
    for claim in claims:
        if claim.origin == "paper":
            assert passages(claim.quote), claim.claim_id
            assert "Section" in claim.quote or "Abstract" in claim.quote, claim.quote
        else:
            assert claim.quote == "", claim.claim_id
    # pFedMe is named on the CNN panel only, as the paper names it
    by_id = {c.claim_id: c for c in claims}
    assert "pFedMe" in by_id["fig3-4-fmnist-cnn-baselines-fall-in-T"].quote
    assert "pFedMe" not in by_id["fig3-4-mnist-dnn-baselines-fall-in-T"].quote


def test_every_quote_is_the_papers_words(smoke_runs: pd.DataFrame) -> None:
    assert not_in_paper("dp-ditto.txt", [(c.claim_id, c.quote)
                                         for c in _smoke_claims(smoke_runs)]) == []


def test_accuracy_resolution_is_read_from_the_test_sets() -> None:
    assert dc.accuracy_resolution([875] * 20).startswith(
        "one of a client's 875 test examples moves its accuracy by 1/875 and the mean over "
        "the 20 clients by 1/17,500 = 0.000057;")
    assert dc.accuracy_resolution([300] * 20) == (
        "one of a client's 300 test examples moves its accuracy by 1/300 and the mean over "
        "the 20 clients by 1/6,000 = 0.00017; a compared value averages that over T and "
        "the seeds")
    uneven = dc.accuracy_resolution([100, 200])
    assert "100 to 200 test examples" in uneven and "0.0025 to 0.005" in uneven
    assert "not given" in dc.accuracy_resolution(None)


def test_accuracy_claims_say_what_the_metric_resolves(smoke_runs: pd.DataFrame) -> None:
    sizes = {"mnist-mlr": [20] * 4, "mnist-dnn": [20] * 4, "fmnist-cnn": [3] * 4}
    claims = {c.claim_id: c for c in _smoke_claims(smoke_runs, sizes)}
    resolves = "one of a client's 20 test examples moves its accuracy by 1/20"
    for claim_id in ("fig3-4-mnist-dnn-ditto-best-accuracy", "fig3-4-mnist-dnn-baselines-degrade",
                     "fig6-mnist-dnn-small-lambda-rises",
                     "fig3-4-mnist-dnn-ditto-best-accuracy-eps1"):
        assert resolves in claims[claim_id].evidence, claim_id
    # a claim on the spread of losses says nothing of the test sets
    assert "test examples" not in claims["fig3-4-mnist-dnn-ditto-best-fairness"].evidence
    assert not any("{resolution}" in c.evidence for c in claims.values())
    # without the sizes, the evidence says they were not given
    plain = {c.claim_id: c for c in _smoke_claims(smoke_runs)}
    assert "were not given" in plain["fig3-4-mnist-dnn-ditto-best-accuracy"].evidence


def _lambda_runs(accuracy: dict[float, dict[float, float]], seeds=(0, 1, 2)) -> pd.DataFrame:
    """DP-Ditto runs of a panel ``p`` at one T: per epsilon, the accuracy at each lambda."""
    rows = [{"panel": "p", "seed": seed, "rounds": 5, "method": "DP-Ditto", "epsilon": eps,
             "lam": lam, "accuracy": acc + 0.001 * seed, "fairness": 0.1, "loss": 0.2}
            for eps, by_lam in accuracy.items() for lam, acc in by_lam.items()
            for seed in seeds]
    return pd.DataFrame(rows)


GRID = (0.01, 0.05, 0.1, 0.5, 0.8)


def _peak(at: float) -> dict[float, float]:
    return {lam: 0.9 - abs(GRID.index(lam) - GRID.index(at)) * 0.01 for lam in GRID}


def test_a_tuned_lambda_inside_the_grid_is_compared() -> None:
    runs = _lambda_runs({10.0: _peak(0.05), 100.0: _peak(0.5)})
    assert dc.smaller_lambda(runs, "p", 10.0, 100.0).status == "HOLDS"
    runs = _lambda_runs({10.0: _peak(0.1), 100.0: _peak(0.1)})
    assert dc.smaller_lambda(runs, "p", 10.0, 100.0).status == "FAILS"


@pytest.mark.parametrize(("low", "high", "edge"), [
    (0.01, 0.5, "lambda=0.01, the grid's lowest (an open low edge), on seeds 0, 1, 2"),
    (0.05, 0.8, "lambda=0.8, the grid's highest (an open high edge), on seeds 0, 1, 2")])
def test_a_tuned_lambda_on_an_open_edge_is_not_testable(low: float, high: float,
                                                       edge: str) -> None:
    """The lowest lambda of the grid in (0, 1) leaves the limit lambda -> 0 out, and the
    highest could go on before 1: a tuned lambda there is not an optimum, even where the
    comparison would hold."""
    verdict = dc.smaller_lambda(_lambda_runs({10.0: _peak(low), 100.0: _peak(high)}), "p",
                                10.0, 100.0)
    assert verdict.status == "NOT-TESTABLE"
    assert edge in verdict.evidence and "the optimum may lie beyond the grid" in verdict.evidence


def _fig7_runs(fairness: dict[int, float], loss: dict[float, int],
               rounds: tuple[int, ...]) -> pd.DataFrame:
    """DP-Ditto runs over a lambda grid in (0, 1] and T grid ``rounds``: at each T the std
    is lowest at lambda ``fairness[T]``, and for each lambda the loss lowest at T
    ``loss[lambda]``."""
    lams = (0.01, 0.05, 0.1, 0.5, 1.0)
    rows = []
    for seed in (0, 1, 2):
        for t in rounds:
            for lam in lams:
                rows.append({"panel": "p", "seed": seed, "rounds": t, "method": "DP-Ditto",
                             "epsilon": 10.0, "lam": lam, "accuracy": 0.9,
                             "fairness": 0.1 + abs(lam - fairness[t]) + 0.001 * seed,
                             "loss": 0.2 + abs(t - loss[lam]) * 0.01 + 0.001 * seed})
    return pd.DataFrame(rows)


def test_the_fairness_optimal_lambda_may_sit_at_the_bound_one() -> None:
    falls = _fig7_runs({10: 1.0, 20: 0.5, 40: 0.05}, dict.fromkeys((0.01, 0.05, 0.1, 0.5, 1.0),
                                                                   20), (10, 20, 40))
    assert dc.optimal_lambda_falls(falls, "p", 10.0).status == "HOLDS"
    edge = _fig7_runs({10: 1.0, 20: 0.5, 40: 0.01}, dict.fromkeys((0.01, 0.05, 0.1, 0.5, 1.0),
                                                                  20), (10, 20, 40))
    verdict = dc.optimal_lambda_falls(edge, "p", 10.0)
    # the first-to-last part and the last step read T=40's optimum, on the open edge
    assert verdict.status == "INCONCLUSIVE" and "part untested (2 of 3" in verdict.evidence
    assert "at T=40 the fairness-optimal lambda sits at lambda=0.01" in verdict.evidence


def test_the_loss_optimal_t_may_sit_at_the_bound_t_one() -> None:
    lams = (0.01, 0.05, 0.1, 0.5, 1.0)
    rises = _fig7_runs(dict.fromkeys((1, 2, 4, 8), 0.5),
                       {0.01: 4, 0.05: 4, 0.1: 2, 0.5: 1, 1.0: 1}, (1, 2, 4, 8))
    assert dc.optimal_rounds_rise(rises, "p", 10.0).status == "HOLDS"
    shifted = _fig7_runs(dict.fromkeys((2, 4, 8, 16), 0.5),
                         {0.01: 8, 0.05: 8, 0.1: 4, 0.5: 2, 1.0: 2}, (2, 4, 8, 16))
    verdict = dc.optimal_rounds_rise(shifted, "p", 10.0)
    # T = 2 is the grid's smallest but not the bound T = 1: an open edge
    assert "at lambda=0.5 the loss-optimal T sits at T=2, the grid's lowest" in verdict.evidence
    assert verdict.status == "INCONCLUSIVE"
    at_top = _fig7_runs(dict.fromkeys((1, 2, 4), 0.5), dict.fromkeys(lams, 4), (1, 2, 4))
    assert dc.optimal_rounds_rise(at_top, "p", 10.0).status == "NOT-TESTABLE"


def test_a_bound_optimum_at_the_end_of_the_search_is_not_testable(
        smoke_runs: pd.DataFrame) -> None:
    setup = dd.tier("smoke")
    edge = {**BOUND, 100.0: (200, np.ones(200))}
    claim = next(c for c in dc.evaluate(smoke_runs, setup, "smoke", edge, 200)
                 if c.claim_id == "fig2-interior-optimum")
    assert claim.status == "NOT-TESTABLE" and "at eps=100" in claim.evidence
    start = {**BOUND, 1.0: (1, np.ones(200))}
    claim = next(c for c in dc.evaluate(smoke_runs, setup, "smoke", start, 200)
                 if c.claim_id == "fig2-interior-optimum")
    assert claim.status == "FAILS"  # T = 1 is a bound: an optimum there is not interior


MEASURED = re.compile(r"\d\.\d|\d%|\[-?\d")
"""A measured number as the old notes wrote them: a decimal, a percentage, an interval."""


def test_the_history_quotes_no_measured_number() -> None:
    for claim_id, tiers in dc_notes.HISTORY.items():
        for history, reasons in tiers.values():
            for text in (history, *reasons.values()):
                assert not MEASURED.search(text), (claim_id, text)
    for claim_id, note in dc_notes.TIER_NOTES.items():
        # the places of the numbers read from the claims ({quick}, {margin:.0%}) aside
        assert not MEASURED.search(re.sub(r"\{[^}]*\}", "", note)), claim_id


def _claim(claim_id: str, scale: str, gap: list[float]) -> Claim:
    verdict = Comparison("mean |loss - loss(eps=inf)| over T", "eps=100", "eps=1", "less",
                         0.002, "1% of the loss").judge([0.0] * len(gap), gap)
    return Claim("dpditto", claim_id, verdict.status, "t", verdict.evidence, scale=scale)


def test_notes_read_the_verdict_and_its_numbers_from_the_claims() -> None:
    claim_id = "fig5-mnist-mlr-approaches-noiseless"
    quick = _claim(claim_id, "quick", [0.0004, 0.0005, 0.0006])
    paper = _claim(claim_id, "paper", [0.010, 0.011, 0.012])
    assert (quick.status, paper.status) == ("FAILS", "HOLDS")
    note = dc_notes.verdict_changes_notes([quick], [paper])[claim_id]
    assert "quick tier: HOLDS on the old" in note and "-> now FAILS: every gap" in note
    assert "-> now HOLDS: the gap at the smallest budget clears the margin" in note
    # the numbers are read from the claims' evidence
    assert "measured" in dc_notes._numbers(quick) and "measured" in dc_notes._numbers(paper)
    assert dc_notes._numbers(quick) in note and dc_notes._numbers(paper) in note
    # a verdict the history gives no reason for is stated with its numbers alone
    moved = _claim(claim_id, "paper", [0.0004, 0.0005, 0.0006])
    note = dc_notes.verdict_changes_notes([quick], [moved])[claim_id]
    assert note.endswith(f"-> now FAILS ({dc_notes._numbers(moved)}).")
    # a tier the page does not show is said to be missing, not guessed
    alone = dc_notes.verdict_changes_notes([quick])[claim_id]
    assert "this page shows no paper-tier verdict of it" in alone
    tier = dc_notes.tier_notes([quick], [paper])[claim_id]
    assert f"({math.floor(dc.LOSS_MARGIN * 100)}% of the loss)" in tier
    assert "quick tier FAILS: measured" in tier and "paper tier HOLDS: measured" in tier
