"""PFA: every claim of the paper quotes the paper's own words, every margin's rationale
says what the metric resolves (read from the runs), and Figure 6(a)'s best k obeys the
open-edge rule."""

from __future__ import annotations

import re
from dataclasses import replace

import pandas as pd
import pytest
from quotes import not_in_paper, passages

from fedlib.papers.pfa import claims as pfa_claims
from fedlib.papers.pfa import experiment as pfa
from fedlib.verdicts.claims import RESOLUTION


def test_every_claim_of_the_paper_quotes_it_and_a_finding_quotes_nothing() -> None:
    for claim_id, statement in pfa_claims.STATEMENTS.items():
        if statement.origin == "paper":
            assert passages(statement.quote), claim_id
            assert re.search(r"(Section|Remark) \d", statement.quote), claim_id
        else:
            assert statement.quote == "", claim_id


def test_every_quote_is_the_papers_words() -> None:
    assert not_in_paper("pfa-liu2022.txt", [(claim_id, statement.quote) for claim_id, statement
                                            in pfa_claims.STATEMENTS.items()]) == []


ACCURACY_WHYS = ("MARGIN_WHY", "CLOSE_WHY", "SIMILAR_WHY", "COLLAPSE_WHY", "FAR_ABOVE_WHY",
                 "RANDOM_GAP_WHY", "NEAR_CHANCE_WHY")


@pytest.mark.parametrize("name", ACCURACY_WHYS)
def test_every_accuracy_margin_says_what_the_metric_resolves(name: str) -> None:
    """Each rationale keeps its value in the paper's terms and says so, and leaves what
    the accuracy resolves to the runs (the mark the sheet fills in)."""
    why = getattr(pfa_claims, name)
    assert RESOLUTION in why
    assert "paper" in why and "resolve" in why


def _final(n_test: int, accuracies: list[float], figure: str = "fig3",
           seeds: tuple[int, ...] = (0, 1, 2)) -> pd.DataFrame:
    return pd.DataFrame([{"figure": figure, "accuracy": acc, "n_test": n_test, "seed": seed}
                         for seed in seeds for acc in accuracies])


def test_accuracy_resolution_is_read_from_the_runs() -> None:
    runs = _final(2000, [0.5, 0.8215, 0.1])
    assert pfa_claims.accuracy_resolution(runs, ("fig3",)) == (
        "one of 2,000 test examples moves an evaluation's accuracy by 1/2,000 = 0.0005 "
        "(each recorded accuracy is a whole number of them), and a compared value averages "
        "the last evaluations of each run over 3 seeds")
    mixed = pd.concat([runs, _final(2000, [0.5], "fig8", seeds=(0,))])
    assert "over 1 to 3 seeds" in pfa_claims.accuracy_resolution(mixed, ("fig3", "fig8"))
    # two settings of one figure read over different seeds: the count is each arm's, not
    # the union of the figure's seeds
    settings = pd.concat([_final(2000, [0.5], "fig4", seeds=(0, 1, 2)).assign(
                              distribution="uniform"),
                          _final(2000, [0.5], "fig4", seeds=(2, 3)).assign(
                              distribution="gauss")])
    assert pfa_claims.accuracy_resolution(settings, ("fig4",)).endswith("over 2 to 3 seeds")
    # an accuracy that is no whole number of the examples the runs name is not read as one
    odd = _final(2000, [0.12345])
    assert "not whole numbers of them" in pfa_claims.accuracy_resolution(odd, ("fig3",))
    assert "no run of the claim's settings" in pfa_claims.accuracy_resolution(runs, ("fig4",))


def test_claims_on_accuracy_carry_the_resolution_and_fig13_does_not() -> None:
    setup = replace(pfa.tier("smoke"), repeats=3, authors=None, lr_grid=())
    rows = []
    for i, config in enumerate(pfa.configs(setup, 0)):
        accuracy = 0.9 if config["aggregator"] in ("pfa", "pfa+", "np-fedavg") else 0.7
        for r in range(3):
            rows.append({"run_key": f"run{i}", "round": r, "accuracy": accuracy,
                         "uplink_bytes": 1000, "clients": 8, "public": 1,
                         "spectrum": "0.9,0.1" if r == 1 else "", "data": "MNIST", **config})
    claims = {c.claim_id: c for c in pfa_claims.evaluate(pd.DataFrame(rows), "smoke", 1)}
    resolves = f"one of {setup.n_test:,} test examples"
    assert resolves in claims["fig3-ordering"].evidence
    assert resolves in claims["fig3-pfa-plus-matches-pfa"].evidence
    assert "test examples" not in claims["fig13-few-directions"].evidence
    assert not any(RESOLUTION in c.evidence for c in claims.values())
    assert claims["fig3-ordering"].quote.startswith("\u201cFrom Fig. 3, compared with WeiAvg")
    assert claims["fig6b-random-projection-centred"].quote == ""


def _plus(means: dict[int, float]) -> dict[int, pd.Series]:
    """PFA+'s final accuracy per seed at each k (seeds 0 to 2, a small spread)."""
    return {k: pd.Series([m - 0.002, m, m + 0.002], index=[0, 1, 2]) for k, m in means.items()}


def test_small_k_best_at_the_bound_or_inside_is_judged() -> None:
    at_bound = pfa_claims.small_k_best(_plus({1: 0.80, 2: 0.79, 5: 0.78, 10: 0.70, 64: 0.60}))
    assert at_bound.status == "HOLDS" and "best k of the grid by mean: 1 (the bound k = 1)" \
        in at_bound.evidence
    inside = pfa_claims.small_k_best(_plus({1: 0.78, 2: 0.80, 5: 0.79, 10: 0.70, 64: 0.60}))
    assert inside.status == "HOLDS" and "2 (inside the grid)" in inside.evidence
    larger = pfa_claims.small_k_best(_plus({1: 0.70, 2: 0.71, 5: 0.72, 10: 0.80, 64: 0.60}))
    assert larger.status == "FAILS"  # k = 10, inside the grid, beats every small k


def test_small_k_best_on_an_open_edge_is_not_testable() -> None:
    top = pfa_claims.small_k_best(_plus({1: 0.70, 2: 0.71, 5: 0.72, 10: 0.75, 64: 0.80}))
    assert top.status == "NOT-TESTABLE"
    assert "the best k by mean, 64, is the grid's largest (an open edge" in top.evidence
    low = pfa_claims.small_k_best(_plus({2: 0.80, 5: 0.78, 10: 0.70, 64: 0.60}))
    assert low.status == "NOT-TESTABLE"  # k = 2 is the grid's smallest, not the bound k = 1
    assert "above the bound k = 1" in low.evidence
