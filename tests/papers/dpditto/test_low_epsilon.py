"""The method comparison and Figure 6 read at eps = 1, the inferred-settings table and the
chapter's noise probe."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.dpditto import claims as dc
from fedlib.papers.dpditto import experiment as dd
from fedlib.papers.dpditto import noise_probe
from fedlib.papers.dpditto import readouts as dc_readouts
from fedlib.papers.dpditto.paper_tier import (
    LOW_EPSILON_PLAN,
    PAPER_GRID,
    REPEAT_ROUNDS,
    REPEAT_SEEDS,
    low_epsilon_panel,
    low_epsilon_setup,
    repeat_setup,
)
from fedlib.papers.dpditto.settings import settings_table

BOUND = {1.0: (10, np.ones(200)), 10.0: (20, np.ones(200)), 100.0: (30, np.ones(200))}


def _low(scale: str) -> dd.DittoSetup:
    return low_epsilon_setup(PAPER_GRID.tier(scale), scale)


def test_the_low_epsilon_setup_only_plans_configs_at_eps_1() -> None:
    """The eps=1 section changes which runs are planned, never what a run is: every config
    it shares with the chapter's own setup is identical, and the new ones are at eps=1."""
    setup = PAPER_GRID.tier("quick")
    low = low_epsilon_setup(setup, "quick")
    assert low.compare_epsilons == (1.0, 10.0) and low.fig6_epsilon == 1.0
    panel = low_epsilon_panel(low)
    assert panel == "mnist-mlr"
    ours = dd.configs(setup, 0, panels=(panel,))
    theirs = dd.configs(low, 0, panels=(panel,))
    new = [c for c in theirs if c not in ours]
    assert new and all(c["epsilon"] == 1.0 for c in new)
    assert {c["method"] for c in new} == {"DP-Ditto", *dd.BASELINES}
    assert low_epsilon_panel(_low("paper")) == "mnist-dnn"


def test_low_epsilon_claims_have_the_same_ids_at_every_tier(make_runs) -> None:
    ids = {}
    for scale in ("smoke", "quick", "paper"):
        low = _low(scale)
        runs = make_runs(low, seeds=(0,))
        ids[scale] = [c.claim_id for c in dc.low_epsilon_claims(runs, low, scale)]
    assert ids["smoke"] == ids["quick"] == ids["paper"]
    assert all(i.endswith(("-eps1", "-eps1-vs-10")) for i in ids["quick"])
    main = {c.claim_id for c in dc.evaluate(make_runs(dd.tier("smoke"), seeds=(0,)),
                                            dd.tier("smoke"), "smoke", BOUND, 200)}
    assert not main & set(ids["quick"])


def test_the_paper_tier_plans_eps_1_on_the_t_its_three_seeds_share() -> None:
    """At the paper tier the eps=1 runs are the DNN's at the T its repeats share, and at
    T = 5 below them, on the chapter's seed and the repeats' seeds: every config at a
    shared T also planned by the tier or its repeats is identical, and every other one
    there is at eps=1; the T below the grid are new at every budget."""
    setup = PAPER_GRID.tier("paper")
    low = _low("paper")
    panel = low_epsilon_panel(low)
    planned = dd.configs(low, 0, panels=(panel,))
    rounds, offsets = LOW_EPSILON_PLAN["paper"]
    assert {(c["seed"], c["rounds"]) for c in planned} == {
        (s, t) for s in offsets for t in rounds}
    below = {t for t in rounds if t < min(setup.rounds)}
    assert below == {5}
    assert set(rounds) - below <= set(REPEAT_ROUNDS)
    assert set(offsets) == {0, *REPEAT_SEEDS["paper"]}
    known = dd.configs(setup, 0, panels=(panel,)) + dd.configs(repeat_setup(setup, "paper"), 0)
    shared = [c for c in planned if c["rounds"] not in below]
    new = [c for c in shared if c not in known]
    assert new and all(c["epsilon"] == 1.0 for c in new)
    assert {c["seed"] for c in new} == set(offsets)
    assert not [c for c in planned if c["rounds"] in below and c in known]


def test_low_epsilon_claims_not_run_say_why() -> None:
    reason = "not run in this build: 54 of 81 runs of dpditto are neither cached nor published"
    claims = dc.low_epsilon_claims(None, _low("paper"), "paper", reason)
    assert claims and all(c.status == "NOT-RUN" and c.evidence == reason for c in claims)
    with pytest.raises(ValueError, match="reason"):
        dc.low_epsilon_claims(None, _low("paper"), "paper")


def test_a_baseline_that_wins_only_at_eps_1_moves_the_verdict(make_runs) -> None:
    """DP-Ditto is the most accurate at the inferred budgets; make DP-FedAMP the most
    accurate at eps=1 only: the eps=1 claim fails, the claim it re-reads still holds, and
    the effect table says the verdict moved."""
    setup = dd.tier("smoke")
    low = low_epsilon_setup(setup, "smoke")
    seeds = (0, 1, 2)
    runs = pd.concat([make_runs(low, seeds=seeds), make_runs(setup, seeds=seeds)])
    runs = runs.drop_duplicates(["panel", "seed", "rounds", "method", "epsilon", "lam"])
    amp = (runs["method"] == "FedAMP") & (runs["epsilon"] == 1.0)
    runs.loc[amp, "accuracy"] = 0.99
    main = dc.evaluate(runs, setup, "smoke", BOUND, 200)
    low_claims = dc.low_epsilon_claims(runs, low, "smoke")
    status = {c.claim_id: c.status for c in [*main, *low_claims]}
    assert status["fig3-4-mnist-dnn-ditto-best-accuracy"] == "HOLDS"
    assert status["fig3-4-mnist-dnn-ditto-best-accuracy-eps1"] == "FAILS"
    effect = dc.low_epsilon_effect(main, low_claims).set_index("claim at eps=1")
    row = effect.loc["fig3-4-mnist-dnn-ditto-best-accuracy-eps1"]
    assert row["claim at the inferred budgets"] == "fig3-4-mnist-dnn-ditto-best-accuracy"
    assert row["verdict there"] == "HOLDS" and bool(row["moved"])
    pair = effect.loc["fig3-4-mnist-dnn-baselines-degrade-eps1-vs-10"]
    assert pair["claim at the inferred budgets"] == "fig3-4-mnist-dnn-baselines-degrade"
    summary = dc.low_epsilon_summary(effect.reset_index(), runs, low)
    assert "goes from HOLDS to FAILS" in summary and "DP-FedAvg" in summary


def test_method_table_gives_every_compared_method_with_its_interval(make_runs) -> None:
    low = _low("smoke")
    runs = make_runs(low, seeds=(0, 1, 2))
    table = dc_readouts.method_table(runs, low_epsilon_panel(low), 1.0).set_index("method")
    assert {"DP-FedAvg", "Local", *dd.BASELINES} <= set(table.index)
    assert (table["seeds"] == 3).all()
    fedamp = runs[(runs["method"] == "FedAMP") & (runs["epsilon"] == 1.0)]
    assert table.loc["FedAMP", "accuracy"] == pytest.approx(
        fedamp.groupby("seed")["accuracy"].mean().mean())


def test_settings_table_marks_what_the_text_does_not_give() -> None:
    table = settings_table(PAPER_GRID.tier("paper")).set_index("setting")
    assert set(table["from"]) == {"paper", "inferred"}
    assert (table["where it comes from"].str.len() > 10).all()
    for setting in ("number of clients N", "privacy delta", "partition", "privacy budgets eps",
                    "lambda grid", "batch size", "sensitivity Delta S", "clipping threshold C",
                    "eps of Figures 3 and 4", "eps of Figures 6 and 7", "rounds T"):
        assert table.loc[setting, "from"] == "inferred", setting
    assert table.loc["number of clients N", "value"] == "20"
    assert table.loc["privacy delta", "value"] == str(dd.DELTA)
    assert table.loc["participation", "from"] == "paper"


SMALL = noise_probe.Probe(features=150)


def test_noise_probe_finds_dp_dittos_noise_in_every_method() -> None:
    measured = noise_probe.measure_all(SMALL, seeds=(0, 1, 2))
    summary = noise_probe.summary(measured).set_index("method")
    assert list(summary.index) == list(noise_probe.METHODS)
    assert summary["sigma handed = DP-Ditto's"].all()
    assert (summary["noisy uploads per client and run"] == SMALL.rounds).all()
    assert noise_probe.verdict(measured).status == "HOLDS"


def test_noise_probe_catches_a_baseline_with_other_noise(monkeypatch) -> None:
    """A baseline whose calibration counted T + 1 rounds (sqrt(4/3) more noise) fails."""
    from fedlib.papers.dpditto import baselines

    real = baselines.noise_sigmas
    monkeypatch.setattr(baselines, "noise_sigmas",
                        lambda eps, n, clip, delta, rounds: real(eps, n, clip, delta, rounds + 1))
    measured = noise_probe.measure_all(SMALL, seeds=(0, 1, 2))
    summary = noise_probe.summary(measured).set_index("method")
    assert summary.loc["DP-Ditto", "sigma handed = DP-Ditto's"]
    assert not summary.loc["FedAMP", "sigma handed = DP-Ditto's"]
    verdict = noise_probe.verdict(measured)
    assert verdict.status == "FAILS" and "FedAMP: FAILS" in verdict.evidence
    claim = dc.noise_claim(verdict, "smoke")
    assert claim.origin == "companion" and "not at equal privacy" in dc.noise_sentence(claim)


def test_budget_sensitivity_reads_the_accuracy_moves(make_runs) -> None:
    """The fake runs lose 0.1 / eps of accuracy: 0.01 - 0.001 = 0.009 between eps 10 and 100
    for every method; the local models (no noise) reach 0.7 + 0.01 T on average."""
    setup = dd.tier("smoke")
    text = dc.budget_sensitivity(make_runs(setup, seeds=(0, 1, 2)), setup)
    assert "by at most 0.0090" in text and "by 0.0090" in text
    assert "eps = 100 to 10" in text and "reach 0.732" in text
