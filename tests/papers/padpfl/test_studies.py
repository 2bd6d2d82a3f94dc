"""PADPFL studies and size bounds: the regime search's points, the equal-total-noise
scaling against its closed form, the ablation's runs and verdicts, and the setup's
bounds on every size."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.padpfl import claims as pad_claims
from fedlib.papers.padpfl import experiment as pad
from fedlib.papers.padpfl import studies
from fedlib.privacy.calibration import classic_gaussian_c
from fedlib.verdicts.compare import FAILS, HOLDS

PAPER = pad.TIERS["paper"]


# --- size bounds ---------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value", "message"), [
    ("rounds", 10**6, r"rounds=1,000,000 is above 100,000.*LIMITS\['rounds'\]"),
    ("local_steps", 10**7, r"local_steps=10,000,000 is above"),
    ("hidden", 2 * 10**6, r"hidden: dim=2,000,000 is above 1,000,000"),
    ("test_examples", 2 * 10**7, r"test_examples: n_test=20,000,000 is above"),
    ("test_examples", 10_001, r"more than the 10,000 MNIST test images; pass at most"),
    ("seeds", tuple(range(10_001)), r"seeds \(their number\): repeats=10,001 is above"),
])
def test_setup_refuses_sizes_beyond_their_bound(name: str, value: object,
                                                message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(PAPER, **{name: value})


@pytest.mark.parametrize(("name", "value"), [
    ("lr", math.inf), ("lr", 0.0), ("clip", math.nan), ("clip", -1.0), ("mu", math.inf),
    ("mu", -0.1),
])
def test_setup_refuses_non_finite_or_out_of_range_settings(name: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"{name} must be a finite number"):
        dataclasses.replace(PAPER, **{name: value})


@pytest.mark.parametrize("name", ["client_divisor", "sample_divisor", "small_exposures"])
def test_setup_refuses_counts_below_one(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        dataclasses.replace(PAPER, **{name: 0})


def test_setup_refuses_bad_seeds() -> None:
    with pytest.raises(ValueError, match="non-empty tuple"):
        dataclasses.replace(PAPER, seeds=())
    with pytest.raises(ValueError, match="non-negative integer"):
        dataclasses.replace(PAPER, seeds=(0, -1))


def test_paper_tier_has_five_seeds_and_bounds_accept_every_tier() -> None:
    assert PAPER.seeds == (0, 1, 2, 3, 4)
    for setup in pad.TIERS.values():
        assert dataclasses.replace(setup) == setup


def test_noise_scale_defaults_to_one_and_is_checked() -> None:
    assert pad.noise_scale({}) == 1.0
    assert pad.noise_scale({"noise_scale": 2.5}) == 2.5
    with pytest.raises(ValueError, match="noise_scale must be a finite number"):
        pad.noise_scale({"noise_scale": -1.0})


# --- equal total noise -----------------------------------------------------------------

def _a(setup: pad.PadpflSetup, scenario: str, epsilon: float) -> float:
    """2 B c / (min_j m_j eps): sigma_C per exposed upload."""
    m = min(pad.SCENARIOS[scenario].samples)
    return 2 * setup.clip * classic_gaussian_c(pad.DELTA) / (m * epsilon)


def test_total_noise_variance_adds_client_and_server_noise() -> None:
    p = np.array([0.5, 0.25, 0.25])
    assert studies.total_noise_variance(p, 2.0, 0.0) == pytest.approx(4 * 0.375)
    assert studies.total_noise_variance(p, 2.0, 3.0) == pytest.approx(4 * 0.375 + 9)


def test_equal_noise_scale_without_server_noise_is_sqrt_n_sum_p_squared() -> None:
    # R = T: no server noise, total = sigma_C^2 sum p^2, uniform sum p^2 = 1/N.
    for scenario in ("S1", "S2", "S3"):
        weighted = pad.SCENARIOS[scenario].private_assignment
        p = studies.scenario_impact(scenario, weighted, PAPER)[0]
        expected = math.sqrt(len(p) * float(np.sum(p ** 2)))
        k = studies.equal_noise_scale(scenario, weighted, pad.EQUAL, PAPER, 20.0, PAPER.rounds)
        assert k == pytest.approx(expected, rel=1e-12)
        assert k > 1.0
    # S1 "0-1-2": sum p^2 = 20/3600 + 20/900 = 1/36, N = 60: k = sqrt(5/3).
    assert studies.equal_noise_scale("S1", "0-1-2", pad.EQUAL, PAPER, 5.0,
                                     PAPER.rounds) == pytest.approx(math.sqrt(5 / 3))


def test_equal_noise_scale_with_server_noise_follows_the_largest_factor() -> None:
    # Small R with server noise on for both: total = (a T max p)^2, so k = N max p_w.
    r = PAPER.small_exposures
    k = studies.equal_noise_scale("S1", "0-1-2", pad.EQUAL, PAPER, 20.0, r)
    assert k == pytest.approx(60 * (1 / 30), rel=1e-12)  # = 2
    p = studies.scenario_impact("S1", "0-1-2", PAPER)[0]
    a = _a(PAPER, "S1", 20.0)
    total = studies.total_noise_variance(
        p, a * r, a * math.sqrt(PAPER.rounds ** 2 * p.max() ** 2 - r ** 2 * np.sum(p ** 2)))
    assert total == pytest.approx((a * PAPER.rounds * p.max()) ** 2, rel=1e-12)


def test_ablation_configs_give_each_seed_four_arms_at_equal_total_noise() -> None:
    setup = pad.TIERS["quick"]
    runs = studies.ablation_configs(setup, 0)
    assert len(runs) == len(studies.ABLATION_SCENARIOS) * len(setup.seeds) * 4
    assert {c["epsilon"] for c in runs} == {studies.ABLATION_EPSILON}
    assert {c["exposures"] for c in runs} == {setup.small_exposures}
    s1 = [c for c in runs if c["scenario"] == "S1" and c["seed"] == 0]
    scales = {(c["assignment"], round(c["noise_scale"], 9)) for c in s1}
    assert scales == {("0-1-2", 1.0), ("1-1-1", 1.0), ("1-1-1", 2.0), ("0-1-2", 0.5)}
    # the four arms share their data: one runner call per scenario and seed
    from fedlib.sweeps import plan_groups
    assert len(plan_groups(runs, pad.BATCHED)) == len(studies.ABLATION_SCENARIOS) * 3


# --- regime search -------------------------------------------------------------------

def test_regime_points_move_one_factor_at_a_time_around_the_tier() -> None:
    points = studies.regime_points(PAPER)
    assert points[0] == {"hidden": 128, "local_steps": 10, "clip": 10.0}
    grid = studies.REGIME_GRID
    assert len(points) == 1 + sum(len(v) - 1 for v in grid.values())
    for point in points[1:]:
        moved = [k for k in grid if point[k] != points[0][k]]
        assert len(moved) == 1
    assert len({tuple(p.values()) for p in points}) == len(points)


def test_regime_configs_are_the_private_runs_at_r_equal_t_and_one_reference() -> None:
    point = {"hidden": 8, "local_steps": 40, "clip": 3.0}
    runs = studies.regime_configs(PAPER, point, [0, 1])
    assert len(runs) == 2 * 4
    assert {(c["hidden"], c["local_steps"], c["clip"]) for c in runs} == {(8, 40, 3.0)}
    private = [c for c in runs if c["epsilon"] is not None]
    assert {c["exposures"] for c in private} == {PAPER.rounds}
    assert [c["assignment"] for c in runs if c["epsilon"] is None] == ["0-1-2", "0-1-2"]


def test_combined_point_takes_each_factor_at_its_best_value() -> None:
    centre = {"hidden": 128, "local_steps": 10, "clip": 10.0}
    rows = [dict(centre, score=0.1), dict(centre, hidden=8, score=0.3),
            dict(centre, hidden=32, score=0.2), dict(centre, local_steps=40, score=0.15),
            dict(centre, clip=1.0, score=0.05)]
    scored = pd.DataFrame(rows)
    assert studies.combined_point(scored, centre) == {"hidden": 8, "local_steps": 40,
                                                      "clip": 10.0}
    assert studies.best_point(scored) == {"hidden": 8, "local_steps": 10, "clip": 10.0}


# --- ablation verdicts -----------------------------------------------------------------

def _ablation(losses: dict[str, list[float]], start: float = 2.3) -> pd.DataFrame:
    rows = []
    for scenario in studies.ABLATION_SCENARIOS:
        for arm, values in losses.items():
            for seed, loss in enumerate(values):
                rows += [{"scenario": scenario, "arm": arm, "seed": seed, "round": 0,
                          "train_loss": start, "assignment": "x", "noise_scale": 1.0,
                          "test_accuracy": 0.1},
                         {"scenario": scenario, "arm": arm, "seed": seed, "round": 30,
                          "train_loss": loss, "assignment": "x", "noise_scale": 1.0,
                          "test_accuracy": 0.5}]
    return pd.DataFrame(rows)


def test_ablation_holds_when_the_gap_closes_at_equal_noise() -> None:
    frame = _ablation({"weighted": [2.0, 2.05, 1.98, 2.02, 2.01],
                       "uniform": [1.6, 1.66, 1.57, 1.62, 1.6],
                       "uniform at weighted noise": [2.01, 2.05, 1.99, 2.03, 2.0],
                       "weighted at uniform noise": [1.5] * 5})
    claims = pad_claims.ablation_claims(frame, PAPER, "paper")
    assert [c.status for c in claims] == [HOLDS] * 3
    assert all(c.origin == "companion" for c in claims)


def test_ablation_fails_when_the_gap_stays_at_equal_noise() -> None:
    frame = _ablation({"weighted": [2.0, 2.05, 1.98, 2.02, 2.01],
                       "uniform": [1.6, 1.66, 1.57, 1.62, 1.6],
                       "uniform at weighted noise": [1.61, 1.65, 1.58, 1.62, 1.61],
                       "weighted at uniform noise": [1.9] * 5})
    claims = pad_claims.ablation_claims(frame, PAPER, "paper")
    assert [c.status for c in claims] == [FAILS] * 3


# --- read-outs of the studies ------------------------------------------------------------

def test_ablation_figure_draws_one_bar_per_arm_at_its_mean() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fedlib.papers.padpfl import figures as pad_figures

    losses = {"weighted": [2.0, 2.1], "uniform": [1.5, 1.7],
              "uniform at weighted noise": [2.2, 2.0], "weighted at uniform noise": [1.2, 1.4]}
    fig = pad_figures.ablation_figure(_ablation(losses), pad_claims.ABLATION_ARMS)
    try:
        axes = fig.axes
        assert [ax.get_title() for ax in axes] == list(studies.ABLATION_SCENARIOS)
        heights = [round(p.get_height(), 9) for p in axes[0].patches]
        assert heights == [2.05, 1.6, 2.1, 1.3]
    finally:
        plt.close(fig)


def test_regime_table_marks_the_tiers_setting_and_repeats_table_gives_intervals() -> None:
    scored = pd.DataFrame([{"hidden": 128, "local_steps": 10, "clip": 10.0,
                            "stage": "one factor", "score": 0.08},
                           {"hidden": 8, "local_steps": 10, "clip": 10.0,
                            "stage": "one factor", "score": 0.15}])
    table = pad_claims.regime_table(scored, PAPER)
    assert table["stage"].tolist() == ["the tier's setting", "one factor"]
    rows = []
    for seed, (loss, acc) in enumerate([(2.0, 0.4), (2.2, 0.3), (2.1, 0.35)]):
        for rnd, value, accuracy in [(0, 2.3, 0.1), (30, loss, acc)]:
            rows.append({"scenario": "S1", "seed": seed, "assignment": "1-1-1",
                         "epsilon": 20.0, "exposures": 30, "round": rnd,
                         "train_loss": value, "test_accuracy": accuracy})
    repeats = pad_claims.regime_repeats_table(pd.DataFrame(rows))
    assert repeats.loc["1-1-1, eps=20", "seeds"] == 3
    assert repeats.loc["1-1-1, eps=20", "final loss"].startswith("2.100 [")
    assert repeats.loc["initial model", "final loss"].startswith("2.300")


def test_bounds_table_lists_each_bounded_setting_with_this_builds_value() -> None:
    table = pad_claims.bounds_table(PAPER)
    assert table.loc["rounds", "bound"] == "100,000"
    assert table.loc["hidden", "this build"] == "128"
    assert table.loc["seeds (their number)", "this build"] == "5"
    assert table.loc["test_examples", "bound"].startswith("10,000")


# --- sensitivity over R ------------------------------------------------------------------

def test_regime_open_edges_name_the_factors_at_an_end_of_their_values() -> None:
    assert studies.regime_open_edges({"hidden": 8, "local_steps": 40, "clip": 10.0}) == [
        "hidden width 8 (the smallest tried)", "local steps 40 (the largest tried)"]
    assert studies.regime_open_edges({"hidden": 32, "local_steps": 20, "clip": 3.0}) == []


def test_sensitivity_exposures_keep_those_up_to_t_with_the_tiers_r_and_t() -> None:
    assert studies.sensitivity_exposures(PAPER) == [1, 3, 10, 30]
    assert studies.sensitivity_exposures(pad.TIERS["smoke"]) == [1, 3]
    assert studies.sensitivity_exposures(dataclasses.replace(PAPER, small_exposures=5)) == [
        1, 3, 5, 10, 30]


def test_exposure_configs_are_the_chapters_own_runs_at_its_r_and_at_t() -> None:
    setup = pad.TIERS["quick"]
    own = [c for c in pad.configs(setup, 0) if c["epsilon"] is not None]
    for r in (setup.small_exposures, setup.rounds):
        assert studies.exposure_configs(setup, 0, r) == [c for c in own if c["exposures"] == r]
    other = studies.exposure_configs(setup, 0, 10)
    assert len(other) == len(own) // 2 and {c["exposures"] for c in other} == {10}
    assert {(c["scenario"], c["assignment"], c["epsilon"]) for c in other} == {
        (c["scenario"], c["assignment"], c["epsilon"]) for c in own}


class _Store:
    """A stand-in for the published store: its runs' manifest entries."""

    def __init__(self, entries: dict) -> None:
        self.entries = entries

    def runs(self) -> dict:
        return self.entries


def test_exposure_cost_sums_the_mean_cpu_time_of_like_runs_per_scenario() -> None:
    setup = pad.TIERS["quick"]
    model = {f: getattr(setup, f) for f in ("rounds", "hidden", "client_divisor",
                                            "sample_divisor", "test_examples", "lr",
                                            "local_steps", "mu", "clip")}
    entries = {}
    seconds = {"S1": (2.0, 4.0), "S2": (3.0, 3.0), "S3": (6.0, 6.0), "S4": (1.0, 1.0)}
    for scenario, values in seconds.items():
        for k, cpu in enumerate(values):
            entries[f"{scenario}{k}"] = {"config": {**model, "scenario": scenario,
                                                    "epsilon": 20.0, "exposures": 30},
                                         "cpu_seconds": cpu}
    # Not like the runs to estimate: non-private, another width, an ablation arm.
    entries["np"] = {"config": {**model, "scenario": "S1", "epsilon": None}, "cpu_seconds": 99}
    entries["wide"] = {"config": {**model, "hidden": 128, "scenario": "S1", "epsilon": 5.0},
                       "cpu_seconds": 99}
    entries["abl"] = {"config": {**model, "scenario": "S1", "epsilon": 20.0,
                                 "noise_scale": 2.0}, "cpu_seconds": 99}
    runs, cost = studies.exposure_cost(setup, 0, 10, store=_Store(entries))
    per_run = {"S1": 3.0, "S2": 3.0, "S3": 6.0, "S4": 1.0}
    configs = studies.exposure_configs(setup, 0, 10)
    assert runs == len(configs)
    assert cost == pytest.approx(sum(per_run[c["scenario"]] for c in configs))
    del entries["S40"], entries["S41"]
    assert studies.exposure_cost(setup, 0, 10, store=_Store(entries)) == (len(configs), None)
