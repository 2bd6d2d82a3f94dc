"""The numbers the PFA chapter's paragraphs quote, on constructed run tables whose answers
are known in closed form."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedlib.papers.pfa import readings
from fedlib.papers.pfa.readings import (
    NONE,
    UNSTORED,
    authors_hundred,
    between,
    by_top_count,
    cnn_beside,
    cnn_peak_and_end,
    fedavg_spread_under_gauss,
    figure_3_across_tiers,
    figure_4_paper_tier,
    figure_6b_largest_gaps,
    figure_6b_linear,
    method,
    parenthesised,
    pfa_against_weiavg,
    private_cnn,
    projection_adds_little,
    public_budgets_reading,
    public_budgets_shown,
    public_count,
    public_range,
    published_authors,
    seeds_text,
    span,
    stored_final,
    text_against_code,
    text_settings,
    tier_runs,
    tuned_rates,
)
from fedlib.papers.pfa.readouts import TOP_COLUMN
from fedlib.render.prose import NOT_RUN, Missing, prose

T_975_2 = stats.t.ppf(0.975, 2)
"""Student's t quantile of a 95% interval over three paired seeds."""

DEFAULTS: dict[str, Any] = {
    "figure": "fig3", "dataset": "mnist", "model": "logr", "partition": "iid",
    "distribution": "mixgauss1", "calibration": "rdp", "aggregator": "pfa", "k": 1,
    "projection": "public", "lr": 0.1, "seed": 0, "rounds": 30, "local_steps": 20,
    "untuned": "",
}


def _final(*rows: dict[str, Any]) -> pd.DataFrame:
    """A final-accuracy table (one row per run), every unnamed column at its default."""
    return pd.DataFrame([{**DEFAULTS, **row} for row in rows])


def _arm(accuracies: list[float], **columns: Any) -> list[dict[str, Any]]:
    """One row per seed (0, 1, ...) of one arm."""
    return [{**columns, "seed": seed, "accuracy": accuracy}
            for seed, accuracy in enumerate(accuracies)]


def _runs(curves: dict[tuple, list[float]], **columns: Any) -> pd.DataFrame:
    """Runs, one row per run and round: each key of ``curves`` is a run's columns (a
    tuple of ``(column, value)`` pairs over :data:`DEFAULTS` and ``columns``), its value
    the accuracy of rounds 1, 2, ... (every round evaluated)."""
    rows = []
    for key, accuracy in curves.items():
        config = {**DEFAULTS, **columns, **dict(key)}
        run_key = "-".join(f"{v}" for v in config.values())
        rows += [{**config, "run_key": run_key, "round": r + 1, "eval_every": 1,
                  "accuracy": a} for r, a in enumerate(accuracy)]
    return pd.DataFrame(rows)


def _half(values: list[float]) -> float:
    """Half-width of the 95% t-interval of the mean of three values."""
    return T_975_2 * float(np.std(values, ddof=1)) / math.sqrt(3)


# The vocabulary.


def test_method_selects_an_aggregator_and_its_projection() -> None:
    assert method("weiavg") == {"aggregator": "weiavg", "projection": "public"}
    assert method("pfa", "random-text") == {"aggregator": "pfa", "projection": "random-text"}


def test_span_skips_missing_values_and_says_when_none_is_left() -> None:
    assert span([0.3, Missing(), 0.1, 0.7]) == (0.1, 0.7)
    assert span([Missing()]) == (UNSTORED, UNSTORED)
    gone = Missing("gone")
    assert span([], gone) == (gone, gone)


def test_between_gives_a_range_or_the_one_value_it_rounds_to() -> None:
    assert between([0.123, 0.456]) == "0.12 to 0.46"
    assert between([0.121, 0.124, Missing()]) == "0.12"
    assert between([]) == NONE.reason
    assert between(pd.Series(dtype=float), UNSTORED) == UNSTORED.reason


def test_parenthesised_names_and_seeds_text() -> None:
    assert parenthesised([]) == ""
    assert parenthesised(["a", "b c"]) == " (a; b c)"
    assert seeds_text(pd.DataFrame({"seed": [2, 2]})) == "seed 2"
    assert seeds_text(pd.DataFrame({"seed": [3, 0, 1]})) == "seeds 0, 1 and 3"


# Where the runs come from.


def test_tier_runs_reads_the_page_at_its_tier_and_the_store_at_another(
        monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _final({"figure": "fig3", "accuracy": 0.5}, {"figure": "fig4", "accuracy": 0.6})
    own = tier_runs("quick", "fig4", scale="quick", seed=0, runs=runs, left_out={})
    assert list(own["accuracy"]) == [0.6]
    assert tier_runs("quick", "fig4", scale="quick", seed=0, runs=runs,
                     left_out={"fig4": "not stored"}) is None
    asked = []
    stored = _final({"figure": "fig3", "accuracy": 0.9})
    monkeypatch.setattr(readings, "stored_figure_runs",
                        lambda tier, seed, figure: asked.append((tier, seed, figure)) or stored)
    assert tier_runs("paper", "fig3", scale="quick", seed=7, runs=runs,
                     left_out={"fig3": "x"}) is stored
    assert asked == [("paper", 7, "fig3")]


def test_stored_final_is_none_without_runs() -> None:
    assert stored_final(None) is None
    assert stored_final(pd.DataFrame()) is None
    runs = _runs({(("seed", 0),): [0.1, 0.2, 0.3, 0.4]})
    assert stored_final(runs)["accuracy"].iloc[0] == pytest.approx(0.3)
    assert stored_final(runs, last=2)["accuracy"].iloc[0] == pytest.approx(0.35)


def test_published_authors_reads_the_store_only_beside_another_tier(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []

    def stored(runner: Any, setup: Any, seed: int, **kwargs: Any) -> str:
        asked.append((runner, setup.rounds, seed, kwargs))
        return "stored"

    monkeypatch.setattr(readings, "stored_runs", stored)
    assert published_authors("paper", 0) is None
    assert asked == []
    assert published_authors("quick", 3) == "stored"
    [(runner, rounds, seed, kwargs)] = asked
    assert runner is readings.run_experiment and rounds == 100 and seed == 3
    assert kwargs == {"of_tier": "paper", "figures": ("authors",), "progress": False}


# Figure 6b, Algorithm 3 and the tuned rates.


def test_figure_6b_linear_at_the_smallest_k() -> None:
    public, random = [0.50, 0.51, 0.52], [0.30, 0.32, 0.34]
    final = _final(*_arm(public, figure="fig6", k=2, projection="public-text"),
                   *_arm(random, figure="fig6", k=2, projection="random-text"),
                   *_arm([0.9] * 3, figure="fig6", k=5, projection="public-text"),
                   *_arm([0.1] * 3, figure="fig6", k=5, projection="random-text"),
                   *_arm([0.0] * 3, figure="fig3", k=1, projection="public-text"))
    reading = figure_6b_linear(final)
    assert reading is not None
    assert reading["seeds"] == 3 and reading["k"] == 2
    assert reading["public"] == pytest.approx(0.51)
    assert reading["random"] == pytest.approx(0.32)
    gaps = [100 * (p - r) for p, r in zip(public, random, strict=True)]  # 20, 19, 18
    assert reading["gap"].mean == pytest.approx(19.0)
    assert reading["gap"].low == pytest.approx(19.0 - _half(gaps))
    assert reading["gap"].high == pytest.approx(19.0 + _half(gaps))
    assert figure_6b_linear(final[final["figure"] == "fig3"]) is None


def test_figure_6b_largest_gaps_up_to_k_10() -> None:
    rows = []
    for k, centred, linear in ((1, -0.03, 0.01), (10, 0.02, -0.05), (64, 0.4, 0.4)):
        rows += _arm([0.5] * 3, figure="fig6", k=k, projection="public")
        rows += _arm([0.5 - centred] * 3, figure="fig6", k=k, projection="random")
        rows += _arm([0.5] * 3, figure="fig6", k=k, projection="public-text")
        rows += _arm([0.5 - linear] * 3, figure="fig6", k=k, projection="random-text")
    gaps = figure_6b_largest_gaps(_final(*rows))
    assert gaps["centred"] == pytest.approx(3.0)
    assert gaps["linear"] == pytest.approx(5.0)
    # k = 64 is past the bound; without any dimension both forms are missing.
    assert figure_6b_largest_gaps(_final(*rows[:12]))["linear"] == pytest.approx(1.0)
    empty = figure_6b_largest_gaps(_final(*_arm([0.5], figure="fig3")))
    assert isinstance(empty["centred"], Missing) and isinstance(empty["linear"], Missing)


def _text_rows(text: list[float], code: list[float], weiavg: list[float],
               **columns: Any) -> list[dict[str, Any]]:
    return [*_arm(text, projection="public-text", **columns),
            *_arm(code, **columns), *_arm(weiavg, aggregator="weiavg", **columns)]


def test_text_settings_are_named_and_ordered_as_the_prose_names_them() -> None:
    final = _final(
        *_text_rows([0.5] * 3, [0.5] * 3, [0.5] * 3, dataset="mnist", model="logr"),
        *_text_rows([0.5] * 3, [0.5] * 3, [0.5] * 3, dataset="fashion-mnist", model="cnn"),
        *_arm([0.5] * 3, dataset="mnist", model="cnn"),  # no text arm: left out
        *_text_rows([0.5] * 3, [0.5] * 3, [0.5] * 3, figure="authors",
                    model="logr-authors", distribution="mixgauss2"),
        *_text_rows([0.5] * 3, [0.5] * 3, [0.5] * 3, figure="authors",
                    model="logr-authors", distribution="mixgauss1",
                    calibration="closed-form"))  # not the accountant: left out
    assert [name for name, _ in text_settings(final)] == [
        "Figure 3, fashion-mnist-cnn", "Figure 3, mnist-logr",
        "the authors' defaults, logr-authors, mixgauss2"]


def test_text_against_code_ranges_and_counts() -> None:
    # mnist-logr: text - code = +1 point in every seed, text - WeiAvg = -9, -11, -9 (its
    # interval below zero); mnist-cnn: text - code = -3.9, -4, -4.1 (an interval that
    # excludes zero), text - WeiAvg = +3 in every seed.
    final = _final(
        *_text_rows([0.51, 0.52, 0.53], [0.50, 0.51, 0.52], [0.60, 0.63, 0.62],
                    model="logr"),
        *_text_rows([0.40, 0.40, 0.40], [0.439, 0.44, 0.441], [0.37, 0.37, 0.37],
                    model="cnn"))
    reading = text_against_code(final)
    assert reading["n"] == 2
    assert reading["code_lo"] == pytest.approx(-4.0)
    assert reading["code_hi"] == pytest.approx(1.0)
    assert reading["code_zero"] == 0
    assert reading["weiavg_lo"] == pytest.approx(100 * (np.mean([0.51, 0.52, 0.53])
                                                        - np.mean([0.60, 0.63, 0.62])))
    assert reading["weiavg_hi"] == pytest.approx(3.0)
    assert reading["n_below"] == 1 and reading["below"] == " (Figure 3, mnist-logr)"
    # A difference with an interval about zero is counted there.
    wide = _final(*_text_rows([0.50, 0.52, 0.48], [0.50, 0.50, 0.50], [0.5] * 3))
    assert text_against_code(wide)["code_zero"] == 1
    nothing = text_against_code(_final(*_arm([0.5] * 3)))
    assert nothing["n"] == 0 and nothing["below"] == ""
    assert all(isinstance(nothing[k], Missing) for k in
               ("code_lo", "code_hi", "code_zero", "weiavg_lo", "weiavg_hi", "n_below"))


def test_authors_hundred_reads_the_longest_runs_of_the_accountant() -> None:
    columns = {"figure": "authors", "model": "logr-authors", "distribution": "mixgauss2"}
    curves = {}
    for seed, shift in ((0, 0.0), (2, 0.1)):
        # 12 rounds: the last 10 evaluations average (3 + ... + 12) / 100 = 0.075.
        base = [r / 100 for r in range(1, 13)]
        for (aggregator, projection), offset in ((("pfa", "public-text"), 0.5),
                                                 (("pfa", "public"), 0.4),
                                                 (("weiavg", "public"), 0.3),
                                                 (("pfa", "random-text"), 0.2)):
            curves[(("aggregator", aggregator), ("projection", projection), ("seed", seed),
                    ("rounds", 12))] = [a + offset + shift for a in base]
    shorter = _runs({(("seed", 0), ("rounds", 5)): [0.99] * 5}, **columns)
    closed = _runs({(("seed", 0), ("rounds", 12), ("calibration", "closed-form")):
                    [0.99] * 12}, **columns)
    runs = pd.concat([_runs(curves, **columns), shorter, closed], ignore_index=True)
    reading = authors_hundred(runs)
    assert reading is not None
    assert reading["seeds"] == [0, 2]
    for name, offset in (("text", 0.5), ("code", 0.4), ("weiavg", 0.3), ("random", 0.2)):
        assert reading[name] == pytest.approx(0.075 + offset + 0.05), name
    assert authors_hundred(None) is None
    assert authors_hundred(runs.iloc[:0]) is None
    other = _runs({(("seed", 0),): [0.5] * 3}, figure="authors", model="logr",
                  distribution="mixgauss2")
    assert authors_hundred(other) is None


def test_tuned_rates_compare_each_method_at_its_own_rate() -> None:
    chosen = pd.DataFrame({
        "aggregator": ["pfa", "pfa+", "weiavg", "fedavg", "minimum"],
        "projection": ["public"] * 5,
        "method": ["PFA", "PFA+", "WeiAvg", "FedAvg", "Minimum"],
        "lr": [0.1, 0.1, 0.05, 0.01, 0.05]})
    rows = []
    for aggregator, lr, accuracy in (("pfa", 0.1, 0.60), ("pfa", 0.05, 0.99),
                                     ("pfa+", 0.1, 0.58), ("weiavg", 0.05, 0.55),
                                     ("weiavg", 0.1, 0.0), ("fedavg", 0.01, 0.40),
                                     ("minimum", 0.05, 0.35)):
        rows += _arm([accuracy] * 3, figure="lr", aggregator=aggregator, lr=lr)
    reading = tuned_rates(_final(*rows), chosen)
    assert reading is not None
    assert reading["rates"] == "0.1 for PFA, PFA+; 0.05 for WeiAvg, Minimum; 0.01 for FedAvg"
    for name, expected in (("pfa", 5.0), ("plus", 3.0), ("fedavg", 15.0), ("minimum", 20.0)):
        assert reading[name].mean == pytest.approx(expected), name
        assert reading[name].low == pytest.approx(expected)  # the same in every seed
    assert tuned_rates(_final(*rows), chosen.iloc[:0]) is None
    # A method no rate was chosen for has no arm.
    assert isinstance(tuned_rates(_final(*rows), chosen.iloc[:3])["fedavg"], Missing)


# Reading the verdicts.


def test_pfa_against_weiavg_counts_the_settings_beyond_their_interval() -> None:
    rows = [
        # Figure 3, mnist-cnn: PFA ahead by 5 points exactly.
        *_arm([0.60] * 3, model="cnn"), *_arm([0.55] * 3, model="cnn", aggregator="weiavg"),
        *_arm([0.10, 0.12, 0.14], model="cnn", aggregator="fedavg"),
        *_arm([0.11] * 3, model="cnn", aggregator="minimum"),
        # Figure 3, fashion-mnist-cnn: PFA behind by 2 points exactly.
        *_arm([0.40] * 3, model="cnn", dataset="fashion-mnist"),
        *_arm([0.42] * 3, model="cnn", dataset="fashion-mnist", aggregator="weiavg"),
        *_arm([0.20] * 3, model="cnn", dataset="fashion-mnist", aggregator="fedavg"),
        # Figure 4, uniform: within the interval; gauss: no WeiAvg, not measured.
        *_arm([0.50, 0.60, 0.40], figure="fig4", distribution="uniform"),
        *_arm([0.50] * 3, figure="fig4", distribution="uniform", aggregator="weiavg"),
        *_arm([0.30] * 3, figure="fig4", distribution="uniform", aggregator="fedavg"),
        *_arm([0.33] * 3, figure="fig4", distribution="uniform", aggregator="minimum"),
        *_arm([0.50] * 2, figure="fig4", distribution="gauss"),
        *_arm([0.25] * 2, figure="fig4", distribution="gauss", aggregator="fedavg"),
    ]
    reading = pfa_against_weiavg(_final(*rows))
    assert (reading["fedavg_lo"], reading["fedavg_hi"]) == pytest.approx((0.12, 0.20))
    assert reading["minimum_lo"] == pytest.approx(0.11)
    assert reading["minimum_hi"] == pytest.approx(0.11)
    assert (reading["fedavg4_lo"], reading["fedavg4_hi"]) == pytest.approx((0.25, 0.30))
    assert (reading["minimum4_lo"], reading["minimum4_hi"]) == pytest.approx((0.33, 0.33))
    assert reading["model4"] == "logr"
    assert reading["seeds3"] == 3 and reading["seeds4"] == 3
    assert reading["n"] == 3
    assert reading["n_ahead"] == 1 and reading["ahead"] == " (Figure 3, mnist-cnn)"
    assert reading["n_behind"] == 1 and reading["behind"] == " (Figure 3, fashion-mnist-cnn)"
    empty = pfa_against_weiavg(_final(*_arm([0.5], figure="fig6")))
    assert empty["n"] == 0 and empty["ahead"] == ""
    assert all(isinstance(empty[k], Missing) for k in
               ("fedavg_lo", "minimum4_hi", "model4", "seeds3", "seeds4"))


def test_projection_adds_little_reads_the_alike_budgets_and_figure_6b() -> None:
    final = _final(
        *_arm([0.30, 0.32, 0.34], figure="fig4", distribution="uniform", aggregator="fedavg"),
        *_arm([0.20] * 3, figure="fig4", distribution="gauss", aggregator="fedavg"),
        *_arm([0.10] * 3, figure="fig4", distribution="uniform"),
        *_arm([0.50] * 3, figure="fig6", k=1), *_arm([0.46] * 3, figure="fig6", k=1,
                                                    projection="random"))
    reading = projection_adds_little(final)
    assert reading["fedavg_u"] == pytest.approx(0.32)
    assert reading["fedavg_g"] == pytest.approx(0.20)
    assert reading["pfa_u"] == pytest.approx(0.10)
    assert isinstance(reading["pfa_g"], Missing)
    assert reading["centred"] == pytest.approx(4.0)
    assert isinstance(reading["linear"], Missing)
    assert set(reading) == {"fedavg_u", "fedavg_g", "pfa_u", "pfa_g", "centred", "linear"}


# The paper tier beside the page's.


def _cnn_curves(end: float, peak: float, seeds: int = 2, **columns: Any) -> dict:
    """CNN curves of WeiAvg, PFA and PFA+ that reach ``peak`` at round 5 and end at
    ``end`` (rounds 28 to 30), plus their seed number in hundredths."""
    curves = {}
    for aggregator in ("weiavg", "pfa", "pfa+"):
        for seed in range(seeds):
            curve = [0.1] * 30
            curve[4] = peak + seed / 100
            curve[25] = 0.99  # after the early rounds: not a peak
            curve[27:] = [end + seed / 100] * 3
            curves[(("aggregator", aggregator), ("seed", seed), ("model", "cnn"),
                    *columns.items())] = curve
    return curves


def test_cnn_peak_and_end_average_the_seeds_per_panel_and_aggregator() -> None:
    runs = _runs({**_cnn_curves(0.3, 0.6), **_cnn_curves(0.2, 0.5, dataset="fashion-mnist"),
                  (("aggregator", "fedavg"), ("model", "cnn")): [0.9] * 30,
                  (("model", "logr"),): [0.9] * 30})
    final = stored_final(runs)
    peaks, ends = cnn_peak_and_end(runs, final)
    assert peaks == pytest.approx([0.505] * 3 + [0.605] * 3)
    assert ends == pytest.approx([0.205] * 3 + [0.305] * 3)
    later, _ = cnn_peak_and_end(runs, final, early=26)
    assert later == pytest.approx([0.99] * 6)


def test_private_cnn_and_figure_3_across_tiers() -> None:
    def tier(shift: float) -> pd.DataFrame:
        curves = {(("aggregator", a), ("model", "cnn"), ("seed", 0)): [0.4 + shift] * 30
                  for a in ("fedavg", "weiavg", "pfa", "pfa+", "minimum", "maximum")}
        curves[(("aggregator", "pfa"), ("model", "cnn"), ("seed", 1))] = [0.6 + shift] * 30
        curves[(("aggregator", "fedavg"), ("model", "logr"), ("seed", 0))] = [0.7] * 30
        curves[(("aggregator", "pfa"), ("model", "logr"), ("seed", 0))] = [0.8] * 30
        return _runs(curves)

    paper = tier(0.0)
    quick = tier(0.1).query("not (aggregator == 'minimum')")
    cnn = private_cnn(stored_final(paper))
    assert dict(cnn) == pytest.approx({("mnist", "fedavg"): 0.4, ("mnist", "minimum"): 0.4,
                                       ("mnist", "pfa"): 0.5, ("mnist", "pfa+"): 0.4,
                                       ("mnist", "weiavg"): 0.4})
    reading = figure_3_across_tiers(quick, paper)
    assert reading is not None
    assert (reading["logr_lo"], reading["logr_hi"]) == pytest.approx((0.7, 0.8))
    assert (reading["peak_lo"], reading["peak_hi"]) == pytest.approx((0.4, 0.5))
    assert (reading["end_lo"], reading["end_hi"]) == pytest.approx((0.4, 0.5))
    # Minimum has no quick-tier arm: four of the five end below theirs.
    assert reading["n_cnn"] == 5 and reading["below"] == 4
    assert (reading["paper_lo"], reading["paper_hi"]) == pytest.approx((0.4, 0.5))
    assert (reading["quick_lo"], reading["quick_hi"]) == pytest.approx((0.5, 0.6))
    alone = figure_3_across_tiers(None, paper)
    assert alone["below"] is UNSTORED and alone["quick_lo"] is UNSTORED
    assert figure_3_across_tiers(quick, None) is None
    assert figure_3_across_tiers(quick, paper.iloc[:0]) is None


def test_figure_4_paper_tier() -> None:
    rows = []
    for d, base in (("uniform", 0.5), ("gauss", 0.4)):
        for i, a in enumerate(("fedavg", "weiavg", "pfa", "pfa+")):
            rows += _arm([base + i / 100] * 3, figure="fig4", distribution=d, aggregator=a)
    for d, base in (("mixgauss1", 0.1), ("mixgauss2", 0.2), ("mixgauss4", 0.3)):
        for a in ("fedavg", "weiavg", "pfa", "pfa+"):
            rows += _arm([base, base + 0.02, base + 0.04], figure="fig4", distribution=d,
                         aggregator=a)
        rows += _arm([base + 0.5], figure="fig4", distribution=d, aggregator="minimum")
        rows += _arm([0.70], figure="fig4", distribution=d, aggregator="np-fedavg")
    rows += _arm([0.99], figure="fig4", distribution="mixgauss1", aggregator="pfa",
                 projection="random")
    reading = figure_4_paper_tier(_final(*rows))
    assert reading["model"] == "logr"
    assert reading["seeds_main"] == 3 and reading["seeds_rest"] == 1
    for d, base in (("u", 0.5), ("g", 0.4)):
        for i, name in enumerate(("fedavg", "weiavg", "pfa", "plus")):
            assert reading[f"{name}_{d}"] == pytest.approx(base + i / 100)
    for name in ("fedavg", "weiavg", "pfa", "plus"):
        assert reading[f"{name}_m"] == "0.12 to 0.32"  # the random projection is not PFA
    assert reading["minimum_m"] == "0.60 to 0.80"
    assert reading["np_m"] == "0.70"
    assert reading["maximum_m"] == UNSTORED.reason


# The public clients' budgets.


def _budgets_table() -> pd.DataFrame:
    """A public-budgets table: three public clients per setting; under the mixtures
    seeds 0 and 2 have three clients from the top component, seed 1 two."""
    rows = [
        ("uniform", 0, "5.00, 6.00, 9.50", 5.0, pd.NA, 0.30, 0.50, 0.40, 0.41, 0.45),
        ("uniform", 1, "4.00, 8.00, 9.00", 4.0, pd.NA, 0.20, 0.52, 0.46, 0.44, 0.47),
        ("gauss", 0, "2.00, 3.00, 3.50", 2.0, pd.NA, 0.05, 0.30, 0.20, 0.22, 0.25),
        ("gauss", 1, "2.50, 2.60, 4.10", 2.5, pd.NA, 0.15, 0.50, 0.30, 0.26, 0.27),
        ("gauss", 2, "1.90, 2.20, 2.90", 1.9, pd.NA, 0.10, 0.40, 0.25, 0.24, 0.21),
        ("mixgauss1", 0, "9.90, 10.00, 10.10", 9.9, 3, 0.09, 0.20, 0.60, 0.80, 0.81),
        ("mixgauss1", 1, "0.12, 9.95, 10.05", 0.12, 2, 0.09, 0.21, 0.40, 0.30, 0.33),
        ("mixgauss2", 2, "9.80, 10.00, 10.20", 9.8, 4, 0.49, 0.23, 0.70, 0.84, 0.85),
    ]
    columns = ["distribution", "seed", "public budgets", "smallest public budget",
               TOP_COLUMN, "smallest budget", "FedAvg", "WeiAvg", "PFA", "PFA+"]
    table = pd.DataFrame(rows, columns=columns).astype({TOP_COLUMN: "Int64"})
    return table.assign(figure="fig4", dataset="mnist", **{"others' median budget": 0.1})


def test_public_count_range_and_the_shown_table() -> None:
    table = _budgets_table()
    assert public_count(table) == 3
    assert public_range(table[table["distribution"] == "gauss"]) == (1.9, 4.1)
    assert public_range(table.iloc[:0]) == (NONE, NONE)
    shown = public_budgets_shown(table)
    assert "figure" not in shown and "dataset" not in shown
    assert list(shown[TOP_COLUMN]) == ["not a mixture"] * 5 + ["3", "2", "4"]
    assert shown["others' median budget"].iloc[0] == 0.1


def test_public_budgets_reading() -> None:
    reading = public_budgets_reading(_budgets_table(), 30)
    assert reading["n_public"] == 3 and reading["n_mix"] == 3
    assert reading["n_full"] == 2 and reading["n_short"] == 1
    assert reading["seeds_full"] == "seeds 0 and 2" and reading["seeds_short"] == "seed 1"
    assert reading["pfa_full"] == "0.80 to 0.84" and reading["fedavg_full"] == "0.20 to 0.23"
    assert reading["pfa_short"] == "0.30" and reading["fedavg_short"] == "0.21"
    assert reading["low_budgets"] == "0.12"
    assert reading["n_clients"] == 30
    # MixGauss1: weight 0.1 on the component at 10; fewer than 3 of 30 clients draw it.
    chance = sum(math.comb(30, i) * 0.1 ** i * 0.9 ** (30 - i) for i in range(3))
    assert reading["chance"] == pytest.approx(chance)
    assert (reading["gauss_low"], reading["gauss_high"]) == (1.9, 4.1)
    assert (reading["uniform_low"], reading["uniform_high"]) == (4.0, 9.5)
    assert reading["pfa_gauss"] == "0.22 to 0.26" and reading["pfa_uniform"] == "0.41 to 0.44"


def test_by_top_count_lists_the_mixtures_by_their_count() -> None:
    assert by_top_count(_budgets_table()) == (
        "2 (seed 1): WeiAvg 0.40, PFA 0.30; 3 (seed 0): WeiAvg 0.60, PFA 0.80; "
        "4 (seed 2): WeiAvg 0.70, PFA 0.84")


def test_fedavg_spread_under_gauss() -> None:
    table = _budgets_table()
    spread = fedavg_spread_under_gauss(table)
    assert spread["by_seed"] == ("0.30 at seed 0 (smallest budget 0.05); 0.50 at seed 1 "
                                 "(smallest budget 0.15); 0.40 at seed 2 (smallest budget "
                                 "0.10)")
    # FedAvg's accuracy has the order of the smallest budget: a rank correlation of 1.
    assert spread["n"] == 3 and spread["rank"] == pytest.approx(1.0)
    assert spread["p_value"] == pytest.approx(0.0, abs=1e-9) and spread["correlated"]
    assert spread["weiavg"] == "0.20 to 0.30"
    # Ranks (1, 3, 2) against (3, 2, 1): rho = 1 - 6 * (4 + 1 + 1) / (3 * 8) = -0.5, and
    # its p-value from t = rho * sqrt((n - 2) / (1 - rho^2)) on n - 2 degrees of freedom.
    reversed_ = table.assign(**{"smallest budget": [0.3, 0.2, 0.15, 0.10, 0.05, 0, 0, 0]})
    against = fedavg_spread_under_gauss(reversed_)
    assert against["rank"] == pytest.approx(-0.5)
    t = 0.5 * math.sqrt(1 / 0.75)
    assert against["p_value"] == pytest.approx(2 * stats.t.sf(t, 1))
    assert not against["correlated"]
    few = fedavg_spread_under_gauss(table[table["seed"] < 2])
    assert few["rank"] is None and few["n"] == 2


def test_cnn_beside_splits_figures_3_and_8_by_their_public_clients(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []

    def table(runs: pd.DataFrame, figures: tuple[str, ...]) -> pd.DataFrame:
        asked.append((sorted(set(runs["figure"])), figures))
        return _budgets_table()

    monkeypatch.setattr(readings, "public_budgets_table", table)
    fig3, fig8 = _final({"figure": "fig3"}), _final({"figure": "fig8"})
    reading = cnn_beside([fig3, None, fig8.iloc[:0], fig8])
    assert asked == [(["fig3", "fig8"], ("fig3", "fig8"))]
    assert reading == {"n_seeds": 3, "pfa_full": "0.80 to 0.84", "seeds_full": "seeds 0 and 2",
                       "pfa_short": "0.30", "seeds_short": "seed 1",
                       "fedavg": "0.20 to 0.23"}
    assert cnn_beside([None, fig8.iloc[:0]]) is None


def test_readings_fill_the_chapters_templates() -> None:
    """A reading's missing values read as their phrases in prose."""
    reading = figure_6b_largest_gaps(_final(*_arm([0.5], figure="fig3")))
    assert prose("{centred:.1f} and {linear:.1f}", **reading) == f"{NOT_RUN} and {NOT_RUN}"
    assert prose("{a}", a=between([])) == "none"
