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
from fedlib.runs.keys import run_key
from fedlib.runs.tuning import choose_one
from fedlib.verdicts.compare import FAILS, HOLDS, NOT_TESTABLE

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

def test_regime_tuning_configs_are_s1_private_runs_on_seeds_no_verdict_reads() -> None:
    point = {"hidden": 8, "local_steps": 40, "clip": 3.0}
    runs = studies.regime_tuning_configs(PAPER, point, seed=0)
    assert len(runs) == 3 * len(studies.REGIME_BUDGET.seeds)
    assert {(c["hidden"], c["local_steps"], c["clip"]) for c in runs} == {(8, 40, 3.0)}
    assert {c["scenario"] for c in runs} == {"S1"}
    assert {c["exposures"] for c in runs} == {PAPER.rounds}
    assert all(c["epsilon"] is not None for c in runs)
    assert {c["n_validation"] for c in runs} == {studies.REGIME_BUDGET.n_validation}
    seeds = {c["seed"] for c in runs}
    assert seeds == {100, 101, 102}
    assert not seeds & set(pad.run_seeds(PAPER, 0))


def _fake_sweep(score, asked: list[dict]):
    """A stand-in for the cached sweep: each run's validation accuracy is ``score`` of its
    factors (a hair apart per seed), its test accuracy a constant the search must not read."""
    def fake(cfgs: list[dict], sweep_args: dict) -> pd.DataFrame:
        asked.extend(cfgs)
        rows = []
        for c in cfgs:
            key = run_key(c, pad.run_group.__module__)
            value = score(c["hidden"], c["local_steps"], c["clip"]) + 1e-4 * (c["seed"] - 101)
            for r in range(c["rounds"] + 1):
                rows.append({"run_key": key, "scenario": c["scenario"], "seed": c["seed"],
                             "assignment": c["assignment"], "epsilon": c["epsilon"],
                             "round": r, "val_accuracy": value if r else 0.1,
                             "test_accuracy": 0.5})
        return pd.DataFrame(rows)
    return fake


def _peaked(hidden: float, steps: float, clip: float) -> float:
    return 0.5 - math.log2(hidden / 8) ** 2 / 50 - math.log2(steps / 20) ** 2 / 50 \
        - math.log(clip / 3, 3) ** 2 / 50


def test_regime_search_finds_an_interior_optimum_on_validation_data(monkeypatch) -> None:
    asked: list[dict] = []
    monkeypatch.setattr(studies, "_sweep", _fake_sweep(_peaked, asked))
    found = studies.regime_search(PAPER, 0, {})
    assert found.best == {"hidden": 8, "local_steps": 20, "clip": 3.0}
    assert found.open_edges() == []
    assert found.choice["val_accuracy"] == pytest.approx(0.5)
    assert all(c["n_validation"] and c["seed"] >= 100 for c in asked)
    points = found.points()
    assert set(points["seeds"]) == {3}
    # Every combination of the declared values is run (36); the choice's width, 8, is the
    # end of its list, so its neighbour past the end (2) is run too, and nothing else.
    grid = {tuple(p.values()) for p in studies.regime_grid()}
    tried = set(points[["hidden", "local_steps", "clip"]].itertuples(index=False, name=None))
    assert len(grid) == 36 and tried - grid == {(2, 20, 3.0)} and grid <= tried
    # The choice is reproducible from the stored table alone.
    again = choose_one(found.table, studies.REGIME_AXES)
    assert {a.name: again[a.name] for a in studies.REGIME_AXES} == found.best


def test_regime_search_extends_an_edge_and_names_it_open_when_extensions_run_out(
        monkeypatch) -> None:
    def rising(hidden: float, steps: float, clip: float) -> float:
        return math.log(steps) / 10 - math.log2(hidden / 8) ** 2 / 50 \
            - math.log(clip / 3, 3) ** 2 / 50
    monkeypatch.setattr(studies, "_sweep", _fake_sweep(rising, []))
    found = studies.regime_search(PAPER, 0, {})
    assert found.best["local_steps"] == 160  # two doublings past 40, the most allowed
    edges = found.open_edges()
    assert len(edges) == 1 and edges[0].startswith("local steps 160, ")
    assert "(high edge, open: the grid's extensions ran out)" in edges[0]


def test_regime_search_stops_at_the_width_bound(monkeypatch) -> None:
    def narrow(hidden: float, steps: float, clip: float) -> float:
        return -hidden / 100 - math.log2(steps / 20) ** 2 / 50 - math.log(clip / 3, 3) ** 2 / 50
    monkeypatch.setattr(studies, "_sweep", _fake_sweep(narrow, []))
    found = studies.regime_search(PAPER, 0, {})
    assert found.best["hidden"] == 1
    assert found.open_edges() == []
    assert found.choice["hidden_position"].endswith("(at the bound hidden >= 1)")


def _regime_frame(final_loss: float, final_accuracy: float) -> pd.DataFrame:
    """Private runs at R = T of every scenario over five seeds, all ending alike."""
    rows = []
    for scenario, spec in pad.SCENARIOS.items():
        arms = [(spec.private_assignment, e) for e in pad.EPSILONS] + [(pad.EQUAL, 20.0)]
        for seed in range(5):
            for assignment, epsilon in arms:
                for rnd, loss, accuracy in [(0, 2.3, 0.1), (30, final_loss + 0.001 * seed,
                                                            final_accuracy)]:
                    rows.append({"scenario": scenario, "seed": seed,
                                 "assignment": assignment, "epsilon": epsilon,
                                 "exposures": 30.0, "round": rnd, "train_loss": loss,
                                 "test_accuracy": accuracy + 0.001 * seed,
                                 "client_sigma": 1.0, "server_sigma": 0.0,
                                 "noise_scale": 1.0})
    return pd.DataFrame(rows)


def _search(choice_steps: int, edge: str) -> studies.RegimeSearch:
    choice = {"hidden": 8, "local_steps": choice_steps, "clip": 3.0, "val_accuracy": 0.2,
              "runs": 9, "hidden_edge": "", "local_steps_edge": edge, "clip_edge": "",
              "hidden_position": "2nd of 3 (interior)", "clip_position": "2nd of 4 (interior)",
              "local_steps_position": "5th of 5 (high edge, open: the grid's extensions ran "
                                      "out)" if edge else "3rd of 5 (interior)"}
    return studies.RegimeSearch(pd.DataFrame(), choice)


@pytest.mark.parametrize(("edge", "loss", "accuracy", "status"), [
    ("open", 2.31, 0.1, NOT_TESTABLE),  # not learning on an open edge decides nothing
    ("", 2.31, 0.1, FAILS),             # ... at an optimum it fails
    ("open", 1.5, 0.6, HOLDS),          # learning holds wherever it is shown
])
def test_regime_learns_claims_read_an_open_edge_only_where_it_matters(
        edge: str, loss: float, accuracy: float, status: str) -> None:
    search = _search(160 if edge else 40, edge)
    claims = pad_claims.regime_claims(_regime_frame(loss, accuracy), PAPER, search, "paper")
    learns = {c.claim_id: c for c in claims if c.claim_id.startswith("regime-private-learns")}
    assert {c.status for c in learns.values()} == {status}
    if edge:
        assert "local steps 160, 5th of 5" in learns["regime-private-learns-eps20"].evidence


def test_regime_table_marks_the_tiers_setting_and_the_choice() -> None:
    rows = [{"hidden": h, "local_steps": 10, "clip": 10.0, "seed": s, "assignment": "0-1-2",
             "epsilon": 20.0, "val_accuracy": v + 0.01 * (s - 100)}
            for h, v in [(128, 0.1), (32, 0.2), (8, 0.15)] for s in (100, 101, 102)]
    table = pd.DataFrame(rows)
    search = studies.RegimeSearch(table, choose_one(table, studies.REGIME_AXES))
    shown = pad_claims.regime_table(search, PAPER).set_index("hidden")
    assert shown.loc[128, "point"] == "the tier's setting"
    assert shown.loc[32, "point"] == "chosen"
    assert shown.loc[32, "mean private validation accuracy"] == pytest.approx(0.21)
    assert shown.loc[8, "seeds"] == 3
    assert shown.loc[8, "B"] == "10"


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


def test_bounds_table_lists_each_bounded_setting_with_this_builds_value() -> None:
    table = pad_claims.bounds_table(PAPER)
    assert table.loc["rounds", "bound"] == "100,000"
    assert table.loc["hidden", "this build"] == "128"
    assert table.loc["seeds (their number)", "this build"] == "5"
    assert table.loc["test_examples", "bound"].startswith("10,000")


# --- sensitivity over R ------------------------------------------------------------------

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


def test_regime_notes_read_the_choice_and_its_edges_from_the_search() -> None:
    from fedlib.papers.padpfl import notes as pad_notes

    search = _search(160, "open")
    claims = pad_claims.regime_claims(_regime_frame(2.31, 0.1), PAPER, search, "paper")
    notes = pad_notes.regime_notes(claims, search)
    decided = {c.claim_id: c.status for c in claims}
    assert set(notes) == {i for i in decided if i.startswith("regime-private-learns")
                          or i.endswith("-in-regime")}
    assert any(i.endswith("-in-regime") for i in notes)
    assert all(notes[i].startswith(f"{decided[i]} now, ") for i in notes)
    text = notes["regime-private-learns-eps5"]
    assert "hidden width 8, 160 local steps, B = 3" in text
    assert "accuracy 0.200" in text and "open edge (local steps 160, 5th of 5" in text
    inside = pad_notes.regime_notes(claims, _search(40, ""))["regime-private-learns-eps20"]
    assert "every factor an optimum along its axis" in inside and "40 local steps" in inside
