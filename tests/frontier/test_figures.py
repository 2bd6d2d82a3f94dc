"""The frontier's presentation: the best-method table's tie rule, the figures' numbers
against the tables they are drawn from, and the findings on the scorecard and landing
page."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from fedlib.frontier import claims as fr_claims
from fedlib.frontier import figures as ff
from fedlib.render.findings import findings_markdown
from fedlib.render.glue import figure_table
from fedlib.render.markdown import markdown_text
from fedlib.render.scorecard import scorecard_markdown
from fedlib.verdicts.claims import Claim, ClaimSheet, checked_claims, write_claims
from fedlib.verdicts.compare import HOLDS, INCONCLUSIVE


@pytest.fixture(autouse=True)
def _close_figures():
    """Every figure a test draws is closed after it (other tests count open figures)."""
    yield
    plt.close("all")


def _frame(values: dict[tuple[str, str, float], list[float]], dataset: str = "har-subjects",
           testing: dict[tuple[str, str, float], list[float]] | None = None) -> pd.DataFrame:
    """Runs by hand: (unit, method, epsilon) -> test accuracy per choosing seed 0, 1, 2,
    ... and per testing seed 10, 11, ... (``testing``, by default the same values)."""
    rows = []
    stages = (("choose", 0, values), ("test", 10, values if testing is None else testing))
    for stage, first, table in stages:
        for (unit, name, eps), accs in table.items():
            for seed, acc in enumerate(accs, start=first):
                rows.append(_row(dataset, unit, name, eps, seed - first, acc, stage, seed))
    return pd.DataFrame(rows)


def _row(dataset, unit, name, eps, k, acc, stage, seed):
    return {"dataset": dataset, "unit": unit, "method": name, "epsilon": eps,
            "seed": seed, "stage": stage, "test_accuracy": acc, "open_edges": "",
            "n_clients": 30, "client_test_examples_min": 10, "noise_to_signal": 1.0,
            "tuning_epsilon": 3.0 * min(eps, 1e9),
            "worst_decile_accuracy": acc - 0.2,
            "test_loss_variance": 0.01 * (1 + k),
            "uplink_bytes_per_round": 0.0 if name == "local" else 4000.0,
            "cpu_seconds": 0.5 + k + (9.0 if k == 0 and eps == 1.0 else 0.0),
            "spent_epsilon_max": 0.0 if name == "local" else min(eps, 1e9),
            "noise_multiplier": 1.0}


HAND = _frame({
    # at epsilon 1: a beats b on every seed by 0.10, 0.12, 0.08: a leads
    ("example", "a", 1.0): [0.80, 0.82, 0.78],
    ("example", "b", 1.0): [0.70, 0.70, 0.70],
    ("example", "c", 1.0): [0.50, 0.55, 0.60],
    # at epsilon 4: a is ahead on average, but not on every seed: a tie
    ("example", "a", 4.0): [0.90, 0.70, 0.86],
    ("example", "b", 4.0): [0.70, 0.80, 0.84],
    ("example", "c", 4.0): [0.10, 0.10, 0.10],
    ("example", "a", math.inf): [0.95, 0.95, 0.95],
    ("example", "b", math.inf): [0.90, 0.91, 0.92],
})


def _t_interval(diffs: list[float]) -> tuple[float, float, float]:
    d = np.asarray(diffs)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half


def test_best_method_table_names_the_leader_and_calls_a_tie_a_tie():
    table = ff.best_method_table(HAND).set_index("epsilon")
    lead = table.loc[1.0]
    assert (lead["best"], lead["runner-up"], lead["verdict"]) == ("a", "b", "leads")
    mean, low, high = _t_interval([0.10, 0.12, 0.08])
    assert (lead["margin"], lead["margin low"], lead["margin high"]) == pytest.approx(
        (mean, low, high))
    tie = table.loc[4.0]
    mean, low, high = _t_interval([0.20, -0.10, 0.02])
    assert low < 0 < high
    assert (tie["best"], tie["runner-up"], tie["verdict"]) == ("a", "b", "tie")
    assert (tie["margin"], tie["margin low"], tie["margin high"]) == pytest.approx(
        (mean, low, high))
    assert table.loc[math.inf, "verdict"] == "leads"


def test_local_training_left_out_leaves_the_federated_methods_ranked():
    with_local = pd.concat([HAND, _frame({("example", "local", 1.0): [0.99, 0.99, 0.98],
                                          ("example", "local", 4.0): [0.99, 0.99, 0.98]})])
    assert list(ff.best_method_table(with_local)["best"][:2]) == ["local", "local"]
    federated = ff.best_method_table(with_local, exclude=("local",))
    assert federated.equals(ff.best_method_table(HAND))
    found = {c.claim_id: c for c in fr_claims.findings(with_local, "quick")}
    assert found["leader-har-subjects-example-smallest-eps"].text.count("local") == 1
    theirs = found["federated-leader-har-subjects-example-smallest-eps"]
    assert theirs.status == HOLDS and "a has the highest" in theirs.text
    assert "of the 3 federated methods (local training left out)" in theirs.text


def test_one_seed_is_always_a_tie():
    one = HAND[HAND["seed"].isin([0, 10])]
    assert set(ff.best_method_table(one)["verdict"]) == {"tie"}


def test_the_leader_is_chosen_on_the_choosing_seeds_and_judged_on_the_others():
    """b leads on the choosing seeds; on the testing seeds a is ahead: the table names b
    (chosen) and reports its margin where it was measured, negative."""
    runs = _frame({("user", "a", 1.0): [0.5, 0.5, 0.5], ("user", "b", 1.0): [0.6, 0.6, 0.6]},
                  testing={("user", "a", 1.0): [0.70, 0.72, 0.71],
                           ("user", "b", 1.0): [0.60, 0.60, 0.60]})
    row = ff.best_method_table(runs).iloc[0]
    assert (row["best"], row["runner-up"], row["verdict"]) == ("b", "a", "tie")
    assert row["margin"] == pytest.approx(-0.11) and row["best mean"] == pytest.approx(0.6)
    claim = fr_claims.findings(runs, "quick")[0]
    assert claim.status == "FAILS"  # chosen on other seeds, it does not survive


def test_headroom_is_the_best_federated_method_without_privacy_minus_local():
    runs = _frame({("user", "local", math.inf): [0.70, 0.72, 0.74],
                   ("user", "a", math.inf): [0.80, 0.80, 0.80],
                   ("silo", "a", math.inf): [0.80, 0.80, 0.80],
                   ("silo", "c", math.inf): [0.90, 0.10, 0.10],
                   ("silo", "local", math.inf): [0.70, 0.72, 0.74],
                   ("user", "a", 1.0): [0.99, 0.99, 0.99]})
    row = ff.headroom_table(runs).iloc[0]
    assert row["best federated"] == "a" and row["headroom"] == pytest.approx(0.08)
    mean, low, high = _t_interval([0.10, 0.08, 0.06])
    assert (row["low"], row["high"]) == pytest.approx((low, high))


def test_the_accuracy_figure_plots_the_means_and_interval_ends_of_the_points_table():
    plotted = figure_table(ff.accuracy_figure(HAND))
    expected = ff.points(ff.tested(HAND))
    where = {1.0: 1.0, 4.0: 4.0, math.inf: 8.0}
    for _, row in expected.iterrows():
        x = where[row["epsilon"]]
        for series, value in ((row["method"], row["mean"]),
                              (f"{row['method']} 95% low", row["low"]),
                              (f"{row['method']} 95% high", row["high"])):
            hit = plotted[(plotted["series"] == series) & np.isclose(plotted["x"], x)]
            assert len(hit) == 1, (series, x)
            assert hit["y"].iloc[0] == pytest.approx(value)
    assert len(plotted) == 3 * len(expected)
    assert expected.loc[(expected["method"] == "a") & (expected["epsilon"] == 1.0),
                        "mean"].iloc[0] == pytest.approx(0.80)


def test_the_fairness_and_cost_figures_plot_their_tables(tmp_path):
    plotted = figure_table(ff.fairness_figure(HAND))
    table = ff.points(ff.tested(HAND), "worst_decile_accuracy")
    for _, row in table.iterrows():
        for series, value in ((row["method"], row["mean"]),
                              (f"{row['method']} 95% low", row["low"]),
                              (f"{row['method']} 95% high", row["high"])):
            assert (np.isclose(plotted.loc[plotted["series"] == series, "y"], value)).any()
    assert len(plotted) == 3 * len(table)  # every point has its error bar
    costs = figure_table(ff.cost_figure(HAND))
    cost_table = ff.cost_points(HAND)
    uplink = costs[(costs["y label"] == "uplink bytes per round")
                   & (costs["series"] == "example")]
    assert sorted(uplink["y"]) == sorted(cost_table["uplink_bytes_per_round"])
    cpu = costs[(costs["y label"] == "CPU seconds per run") & (costs["series"] == "example")]
    assert sorted(cpu["y"]) == pytest.approx(sorted(cost_table["cpu_seconds"]))
    whiskers = costs[(costs["y label"] == "CPU seconds per run")
                     & (costs["series"] == "example largest")]
    assert sorted(whiskers["y"]) == pytest.approx(sorted(cost_table["cpu_seconds_high"]))
    # method a: 9.5, 1.5, 2.5 at epsilon 1 (the first run paid a load), 0.5 ... 2.5 at 4
    # and without privacy: the median is 1.5, untouched by the outlier
    assert cost_table.set_index("method").loc["a", "cpu_seconds"] == pytest.approx(1.5)
    assert cost_table.set_index("method").loc["a", "cpu_seconds_high"] == pytest.approx(9.5)


def test_the_csv_next_to_a_figure_holds_its_plotted_numbers(tmp_path):
    pytest.importorskip("myst_nb")
    from fedlib.render.glue import glue_figure, keep_figure_data

    keep_figure_data(tmp_path)
    try:
        glue_figure("frontier_accuracy", ff.accuracy_figure(HAND))
    finally:
        keep_figure_data(None)
    written = pd.read_csv(tmp_path / "frontier_accuracy.csv")
    expected = ff.points(ff.tested(HAND))
    means = written[written["series"] == "a"].sort_values("x")["y"].to_numpy()
    assert means == pytest.approx(expected[expected["method"] == "a"]
                                  .sort_values("epsilon")["mean"].to_numpy())


def test_findings_say_lead_or_tie_and_are_the_companions():
    found = {c.claim_id: c for c in fr_claims.findings(HAND, "quick")}
    small = found["leader-har-subjects-example-smallest-eps"]
    assert small.status == HOLDS and small.origin == "companion" and small.paper == "frontier"
    assert "at epsilon = 1: a has the highest mean client test accuracy" in small.text
    assert "ahead of b" in small.text
    assert found["leader-har-subjects-example-no-privacy"].status == HOLDS
    tie = fr_claims.findings(HAND[HAND["epsilon"] != 1.0], "quick")[0]
    assert tie.status == INCONCLUSIVE and "epsilon = 4" in tie.text
    assert "ahead of b by more than 0.01" in small.text
    assert "chosen on 3 seeds, margin measured on 3 others" in small.evidence


def test_a_frontier_claim_must_be_a_finding_of_the_companion():
    with pytest.raises(ValueError, match="findings of the companion"):
        Claim("frontier", "x", HOLDS, "t", "e", scale="quick")
    with pytest.raises(ValueError, match="unknown paper id"):
        ClaimSheet("elsewhere", "quick")


def _paper_claims(folder):
    from fedlib.verdicts.claims import PAPERS

    for paper in PAPERS:
        sheet = ClaimSheet(paper, "quick")
        sheet.exact("a", True, f"{paper} claim", "1.0")
        write_claims(folder / f"{paper}.json", sheet.claims)


def test_the_scorecard_and_the_landing_page_list_the_frontiers_findings(tmp_path):
    _paper_claims(tmp_path)
    assert len(checked_claims(tmp_path)) == 5  # the frontier's file is not required
    write_claims(tmp_path / "frontier.json", fr_claims.findings(HAND, "quick"))
    claims = checked_claims(tmp_path)
    assert sum(c.paper == "frontier" for c in claims) == 3
    page = scorecard_markdown(claims)
    assert "## The methods side by side (the frontier)" in page
    assert 'id="claim-frontier-leader-har-subjects-example-smallest-eps"' in page
    landing = findings_markdown(claims)
    section = landing.split("### The methods side by side (the frontier)", 1)[1]
    assert "a has the highest mean client test accuracy" in section
    _, low, high = _t_interval([0.10, 0.12, 0.08])
    assert markdown_text(f"0.100 [{low:.3f}, {high:.3f}]") in section  # escaped


def test_a_federation_left_out_is_named_with_its_reason_as_written():
    from hostile import HOSTILE, rendered, shown_as_written, text_of

    from fedlib.frontier.claims import left_out_markdown

    assert left_out_markdown({}) == ""
    text = left_out_markdown({"mnist-shards": "72 of 216 runs are neither cached nor "
                                              "published", "femnist-writers": HOSTILE})
    assert text_of(rendered(text)).startswith(
        "Not on this page: MNIST (label shards) (72 of 216 runs are")
    assert shown_as_written(rendered(text))
