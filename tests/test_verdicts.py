"""The verdict vocabulary against constructed cases, every status, and the intervals
against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedlib.verdicts.compare import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_RUN,
    NOT_TESTABLE,
    Comparison,
    Trivial,
    Verdict,
    any_of,
    at_least,
    best_of,
    combine,
    difference,
    estimate,
    interior_optimum,
    near_value,
    per_seed,
)

SEEDS = [0, 1, 2, 3, 4]


def _arm(values: list[float]) -> pd.Series:
    return pd.Series(values, index=SEEDS[: len(values)], dtype=float)


ACC = Comparison("final accuracy", "A", "B", "greater", 0.02, "two points")


def test_estimate_is_the_student_t_interval() -> None:
    values = [0.1, 0.4, 0.2, 0.35]
    e = estimate(values)
    half = stats.t.ppf(0.975, 3) * np.std(values, ddof=1) / 2
    assert e.n == 4 and e.mean == pytest.approx(0.2625)
    assert (e.low, e.high) == pytest.approx((0.2625 - half, 0.2625 + half))


def test_one_repeat_has_no_interval() -> None:
    e = estimate([0.5])
    assert e.n == 1 and math.isinf(e.low) and math.isinf(e.high)
    assert "no interval" in e.text()


def test_an_interval_narrower_than_its_digits_is_written_with_the_digits_that_part_it(
        ) -> None:
    tiny = estimate([-0.31021, -0.31019, -0.31020])
    assert tiny.low != tiny.high
    # At three decimals both ends read -0.310: the text adds decimals until they differ.
    assert tiny.text().startswith("-0.31020 [-0.31022, -0.31018] (n=3 runs")
    assert estimate([0.1, 0.4, 0.2]).text().startswith("0.233 [")
    assert estimate([0.25, 0.25, 0.25]).text() == "0.250 exactly (the same in all 3 runs)"
    # Rounding noise alone: the same to every decimal the text would show.
    rounding = estimate([0.1 + 0.2, 0.3, 0.3])
    assert rounding.low != rounding.high
    assert rounding.text() == "0.300 exactly (the same in all 3 runs to 9 decimals)"


def test_seed_keyed_arms_are_paired_and_sequences_are_not() -> None:
    a, b = _arm([0.50, 0.60, 0.70]), _arm([0.49, 0.59, 0.69])
    paired = difference(a, b)
    assert paired.paired and paired.mean == pytest.approx(0.01)
    assert paired.high - paired.low == pytest.approx(0.0, abs=1e-12)  # constant shift
    welch = difference(a.tolist(), b.tolist())
    assert not welch.paired and welch.high - welch.low > 0.1


def test_welch_interval_matches_scipy() -> None:
    a, b = [1.0, 2.0, 4.0, 3.0], [0.0, 0.5, 0.2]
    d = difference(a, b)
    va, vb = np.var(a, ddof=1) / 4, np.var(b, ddof=1) / 3
    df = (va + vb) ** 2 / (va ** 2 / 3 + vb ** 2 / 2)
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    assert d.mean == pytest.approx(2.5 - 0.7 / 3)
    assert d.high - d.mean == pytest.approx(half)


def test_a_clear_win_holds() -> None:
    v = ACC.judge(_arm([0.80, 0.82, 0.81]), _arm([0.70, 0.71, 0.69]))
    assert v.status == HOLDS
    for part in ("n=3 paired seeds", "margin 0.02", "95% interval", "A 0.810"):
        assert part in v.evidence


def test_a_clear_loss_fails_saying_the_other_arm_is_ahead() -> None:
    v = ACC.judge(_arm([0.60, 0.61, 0.62]), _arm([0.70, 0.71, 0.72]))
    assert v.status == FAILS and "B is ahead" in v.evidence


def test_a_tight_tie_fails_as_a_tie() -> None:
    v = ACC.judge(_arm([0.700, 0.710, 0.720]), _arm([0.701, 0.709, 0.721]))
    assert v.status == FAILS and "tie within the margin" in v.evidence


def test_a_difference_inside_the_noise_is_inconclusive() -> None:
    # PADPFL's case: final losses 0.879 / 0.880 while seeds spread by about 0.07.
    loss = Comparison("final loss", "0-2-1", "1-1-1", "less", 0.01)
    a = _arm([0.84, 0.91, 0.88, 0.85, 0.92])
    b = _arm([0.90, 0.85, 0.87, 0.92, 0.86])
    v = loss.judge(a, b)
    assert v.status == INCONCLUSIVE and "contains the margin" in v.evidence


def test_direction_less_holds_for_a_lower_loss() -> None:
    loss = Comparison("final loss", "A", "B", "less", 0.01)
    assert loss.judge(_arm([0.5, 0.51, 0.52]), _arm([0.6, 0.61, 0.62])).status == HOLDS
    assert loss.judge(_arm([0.6, 0.61, 0.62]), _arm([0.5, 0.51, 0.52])).status == FAILS


def test_arms_at_chance_are_not_testable_even_when_they_differ() -> None:
    chance = Trivial("chance", 0.1, higher_is_better=True, tolerance=0.02)
    v = ACC.judge(_arm([0.115, 0.112, 0.118]), _arm([0.100, 0.101, 0.099]), trivial=chance)
    assert v.status == NOT_TESTABLE and "chance" in v.evidence
    # Without the baseline the same numbers would be read as a (meaningless) result.
    assert ACC.judge(_arm([0.115, 0.112, 0.118]), _arm([0.100, 0.101, 0.099])).status != \
        NOT_TESTABLE


def test_one_arm_above_chance_keeps_the_comparison_testable() -> None:
    chance = Trivial("chance", 0.1, tolerance=0.02)
    v = ACC.judge(_arm([0.60, 0.62, 0.61]), _arm([0.10, 0.11, 0.10]), trivial=chance)
    assert v.status == HOLDS


def test_lower_is_better_baseline_names_worse_than_trivial() -> None:
    majority = Trivial("the majority class", 0.17, higher_is_better=False, tolerance=0.01)
    err = Comparison("error", "A", "B", "less", 0.01)
    v = err.judge(_arm([0.46, 0.47, 0.48]), _arm([0.49, 0.50, 0.51]), trivial=majority)
    assert v.status == NOT_TESTABLE
    assert v.brief == "A worse than trivial, B worse than trivial"
    assert "0 of 3 seeds below the majority class (0.17)" in v.evidence


def test_each_condition_of_the_gate_fires_and_is_named() -> None:
    chance = Trivial("chance", 0.1, tolerance=0.05)
    assert chance.condition([0.10, 0.11, 0.09]) == "not learned"
    assert chance.condition([0.88, 0.10, 0.88, 0.10, 0.87]) == "seed spread"
    assert chance.condition([0.88, float("nan"), 0.87]) == "diverged"
    assert chance.condition([0.03, 0.02, 0.04]) == "worse than trivial"
    assert chance.condition([0.16, 0.17, 0.9]) == ""
    start = Trivial("the initial loss", 2.3, higher_is_better=False, tolerance=0.01,
                    start=True)
    assert start.condition([2.9, 3.1]) == "diverged"
    assert start.condition([2.3, 2.295]) == "not learned"
    # Seed spread against a learned arm: the arm at the edge of divergence decides
    # nothing, though its mean (0.565) would otherwise be read as a loss.
    v = ACC.judge(_arm([0.88, 0.10, 0.88, 0.10, 0.87]), _arm([0.80, 0.81, 0.80, 0.79, 0.80]),
                  trivial=chance)
    assert v.status == NOT_TESTABLE and v.brief == "A seed spread"
    assert "3 of 5 seeds above chance (0.1) by more than 0.05" in v.evidence
    # A diverged arm (NaN) is named, not refused.
    v = ACC.judge(_arm([0.9, float("nan"), 0.9]), _arm([0.8, 0.8, 0.8]), trivial=chance)
    assert v.status == NOT_TESTABLE and v.brief == "A diverged"


def test_an_exact_quantity_is_reported_as_exact() -> None:
    same = ACC.judge(_arm([0.5, 0.5, 0.5]), _arm([0.5, 0.5, 0.5]))
    assert "0.000 exactly (the same in all 3 paired seeds)" in same.evidence
    assert "[" not in same.evidence.split("difference ")[1].split(";")[0]


def test_a_single_repeat_is_not_run() -> None:
    v = ACC.judge(_arm([0.9]), _arm([0.1]))
    assert v.status == NOT_RUN and "one repeat" in v.evidence


def test_missing_arm_is_not_run() -> None:
    v = ACC.judge(_arm([0.9, 0.8]), pd.Series(dtype=float))
    assert v.status == NOT_RUN and "no runs of B" in v.evidence


def test_nan_values_are_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        ACC.judge(_arm([0.9, float("nan")]), _arm([0.1, 0.2]))


@pytest.mark.parametrize("margin", [-0.1, float("nan"), float("inf")])
def test_bad_margins_are_refused(margin: float) -> None:
    with pytest.raises(ValueError, match="margin"):
        Comparison("q", "A", "B", "greater", margin)


def test_combine_rules() -> None:
    h, f = Verdict(HOLDS, "h"), Verdict(FAILS, "f")
    i, t, r = Verdict(INCONCLUSIVE, "i"), Verdict(NOT_TESTABLE, "t"), Verdict(NOT_RUN, "r")
    assert combine([("a", h), ("b", h)]).status == HOLDS
    assert combine([("a", h), ("b", f), ("c", r)]).status == FAILS
    assert combine([("a", h), ("b", r)]).status == NOT_RUN
    half = combine([("mnist", h), ("fmnist", t)])
    assert half.status == INCONCLUSIVE
    assert half.evidence.startswith("part untested (1 of 2: fmnist)")
    assert combine([("a", t), ("b", t)]).status == NOT_TESTABLE
    assert combine([("a", h), ("b", i)]).status == INCONCLUSIVE
    with pytest.raises(ValueError):
        combine([])


def test_best_of_needs_a_win_against_every_other_arm() -> None:
    arms = {"A": _arm([0.9, 0.91, 0.92]), "B": _arm([0.8, 0.8, 0.81]),
            "C": _arm([0.88, 0.93, 0.90])}
    v = best_of("accuracy", "A", arms, direction="greater", margin=0.01)
    assert v.status == INCONCLUSIVE and "vs B: HOLDS" in v.evidence
    arms["C"] = _arm([0.7, 0.7, 0.71])
    assert best_of("accuracy", "A", arms, direction="greater", margin=0.01).status == HOLDS


def test_interior_optimum_cases() -> None:
    def grid(*means: float, spread: float = 0.001) -> dict[float, pd.Series]:
        return {x: _arm([m - spread, m, m + spread]) for x, m in zip((0.0, 0.1, 0.5, 0.9),
                                                                      means, strict=True)}

    kw = {"lower_is_better": True, "margin": 0.01}
    assert interior_optimum("error", grid(0.3, 0.1, 0.2, 0.4), **kw).status == HOLDS
    # The best point on an open edge: the optimum could lie beyond the grid.
    assert interior_optimum("error", grid(0.05, 0.1, 0.2, 0.4), **kw).status == NOT_TESTABLE
    # On a closed edge it beats every inside point: the claim fails.
    closed = interior_optimum("error", grid(0.05, 0.1, 0.2, 0.4), open_edges=(False, True), **kw)
    assert closed.status == FAILS
    # An inside minimum that ties an edge within the margin: a tie fails.
    assert interior_optimum("error", grid(0.105, 0.1, 0.2, 0.4), **kw).status == FAILS
    # Everything at the majority-class error: nothing to read.
    majority = Trivial("the majority class", 0.17, higher_is_better=False)
    assert interior_optimum("error", grid(0.48, 0.46, 0.47, 0.5), trivial=majority,
                            **kw).status == NOT_TESTABLE
    single = {x: _arm([m]) for x, m in zip((0.0, 0.1, 0.5), (0.48, 0.46, 0.5), strict=True)}
    one = interior_optimum("error", single, trivial=majority, **kw)
    assert one.status == NOT_RUN and "one repeat" in one.evidence
    with pytest.raises(ValueError, match="at least 3"):
        interior_optimum("error", {0.0: _arm([1, 2]), 1.0: _arm([1, 2])}, **kw)


def test_per_seed_matches_floats_and_missing_values() -> None:
    frame = pd.DataFrame({"seed": [0, 0, 1, 1, 0], "eps": [0.1 + 0.2, 1.0, 0.3, 1.0, None],
                          "acc": [0.5, 0.6, 0.7, 0.8, 0.9]})
    assert per_seed(frame, "acc", where={"eps": 0.3}).to_dict() == {0: 0.5, 1: 0.7}
    assert per_seed(frame, "acc", where={"eps": None}).to_dict() == {0: 0.9}


def test_near_value_reads_the_whole_interval() -> None:
    assert near_value("error", _arm([0.095, 0.1, 0.098]), 0.097, 0.03).status == HOLDS
    assert near_value("error", _arm([0.46, 0.47, 0.45]), 0.097, 0.03).status == FAILS
    assert near_value("error", _arm([0.05, 0.2, 0.1]), 0.097, 0.03).status == INCONCLUSIVE
    assert near_value("error", _arm([0.1]), 0.097, 0.03).status == NOT_RUN


def test_a_combined_claim_lists_its_parts_briefly_with_their_numbers() -> None:
    arms = {"A": _arm([0.9, 0.91, 0.92]), "B": _arm([0.8, 0.8, 0.81]),
            "C": _arm([0.95, 0.96, 0.97])}
    v = best_of("accuracy", "A", arms, direction="greater", margin=0.01)
    assert v.status == FAILS
    parts = v.evidence.split(" | ")
    assert parts[0].startswith("vs B: HOLDS (A 0.910, B 0.803, difference 0.107 [")
    assert parts[1].startswith("vs C: FAILS (C is ahead beyond the margin: A 0.910, C 0.960")
    assert all("margin 0.01" in p for p in parts) and "claim A - B" not in v.evidence


def test_at_least_counts_holding_parts() -> None:
    held, tie, unsure = (Verdict("HOLDS", "h"), Verdict("FAILS", "f"),
                         Verdict("INCONCLUSIVE", "i"))
    assert at_least(2, [("a", held), ("b", held), ("c", tie)]).status == "HOLDS"
    assert at_least(2, [("a", held), ("b", tie), ("c", tie)]).status == "FAILS"
    assert at_least(2, [("a", held), ("b", unsure), ("c", tie)]).status == (
        "INCONCLUSIVE")
    assert at_least(1, [("a", Verdict("NOT-RUN", "n"))]).status == "NOT-RUN"
    assert at_least(1, [("a", Verdict("NOT-TESTABLE", "t"))]).status == (
        "NOT-TESTABLE")


def test_any_of_holds_when_one_part_holds() -> None:
    from fedlib.verdicts.compare import Verdict

    hold, fail, tie = Verdict("HOLDS", "h"), Verdict("FAILS", "f"), Verdict("INCONCLUSIVE", "i")
    assert any_of([("a", fail), ("b", hold)]).status == "HOLDS"
    assert any_of([("a", fail), ("b", fail)]).status == "FAILS"
    assert any_of([("a", fail), ("b", tie)]).status == "INCONCLUSIVE"
    assert any_of([("a", fail), ("b", Verdict("NOT-TESTABLE", "t"))]).status == "FAILS"
