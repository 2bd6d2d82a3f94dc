"""PADPFL experiment: tiers and overrides, impact factors, noise levels, configs, data."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from conftest import require_datasets

from fedlib.papers.padpfl import experiment as pad
from fedlib.sweeps import plan_groups


def _parts(counts: tuple[int, int, int]) -> np.ndarray:
    return np.repeat(np.arange(3), counts)


def test_paper_impact_factors_are_reproduced() -> None:
    # S1 "0-1-2": (0, 1/60, 1/30); S2 "0-2-1": (0, 8/(5N), 4/(5N)); S3 "1-3-5": (1/180, 1/60, 1/36)
    for counts, name, expected in [
        ((20, 20, 20), "0-1-2", (0.0, 1 / 60, 1 / 30)),
        ((20, 35, 5), "0-2-1", (0.0, 8 / 300, 4 / 300)),
        ((20, 20, 20), "1-3-5", (1 / 180, 1 / 60, 1 / 36)),
        ((20, 20, 20), "1-1-1", (1 / 60, 1 / 60, 1 / 60)),
    ]:
        parts = _parts(counts)
        p = pad.impact_factors(name, parts, rounds=4)
        assert p.shape == (4, 60)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
        for part in range(3):
            np.testing.assert_allclose(p[:, parts == part], expected[part], rtol=1e-12)


def test_adaptive_factors_switch_after_a_third_of_the_rounds() -> None:
    parts = _parts((20, 20, 20))
    p = pad.impact_factors("adaptive", parts, rounds=30)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    first, second = p[:10], p[10:]  # rounds 1-10, then 11-30
    np.testing.assert_allclose(first[:, parts == 0], 0.0)
    np.testing.assert_allclose(first[:, parts == 2], 1 / 30)
    np.testing.assert_allclose(second[:, parts == 0], 1 / 30)
    np.testing.assert_allclose(second[:, parts == 2], 0.0)
    assert pad.switch_round(30) == 11


@pytest.mark.parametrize("name", ["0-1", "a-b-c", "0-0-0", "1--1-2"])
def test_bad_assignment_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError, match="ratios"):
        pad.impact_factors(name, _parts((2, 2, 2)), rounds=3)


def test_noise_levels_follow_the_paper_and_vanish_at_r_equal_t() -> None:
    parts = _parts((20, 20, 20))
    p = pad.impact_factors("0-1-2", parts, rounds=30)
    c = math.sqrt(2 * math.log(1.25 / 0.01))
    sigma_c, sigma_s = pad.noise_levels(p, 150, 5.0, 30, clip=10.0)
    assert sigma_c == pytest.approx(2 * 10 * 30 * c / (150 * 5))
    np.testing.assert_array_equal(sigma_s, 0.0)  # R = T: the condition never holds
    sigma_c, sigma_s = pad.noise_levels(p, 150, 5.0, 3, clip=10.0)
    radicand = 30**2 * (1 / 30) ** 2 - 3**2 * (20 / 60**2 + 20 / 30**2)
    np.testing.assert_allclose(sigma_s, 2 * 10 * c * math.sqrt(radicand) / (150 * 5))
    assert pad.noise_levels(p, 150, None, None, clip=10.0)[0] == 0.0


def test_configs_cover_every_figure_and_group_by_scenario_and_seed() -> None:
    setup = pad.tier("quick")
    configs = pad.configs(setup, 0, scenarios=("S1",))
    # 5 non-private + 2 values of R x (2 epsilons + equal at 20), per seed
    assert len(configs) == len(setup.seeds) * (5 + 2 * 3)
    groups = plan_groups(configs, pad.BATCHED)
    assert len(groups) == len(setup.seeds)
    assert [{c["seed"] for c in g} for g in groups] == [{0}, {1}, {2}]
    assert all(len({c["scenario"] for c in g}) == 1 for g in groups)
    with pytest.raises(ValueError, match="must not exceed"):
        pad.PadpflSetup(rounds=3, hidden=4, seeds=(0,), client_divisor=1, sample_divisor=1,
                        small_exposures=5, test_examples=10)


def test_scenario_data_has_the_papers_groups(mirror) -> None:
    require_datasets("mnist")
    data = pad.scenario_data("S2", seed=0, rounds=30)
    assert np.bincount(data.parts).tolist() == [20, 35, 5]
    assert data.phases[0].shape == (60, 150, 784) and len(data.phases) == 1
    assert int(data.mask.sum()) == 60 * 150 == len(data.clean_y)
    # Corruption per part: the fraction of pure black/white pixels rises with density.
    x = data.phases[0].numpy()
    clean = data.clean_x.numpy().reshape(60, 150, 784)
    changed = [(x[data.parts == k] != clean[data.parts == k]).mean() for k in range(3)]
    assert changed[2] == 0.0  # the clean part
    assert changed[0] > changed[1] > 0.0
    s4 = pad.scenario_data("S4", seed=0, rounds=30)
    assert len(s4.phases) == 2 and s4.switch == 11
    s3 = pad.scenario_data("S3", seed=0, rounds=30)
    assert sorted(set(s3.sizes.tolist())) == [50, 120, 271]
    again = pad.scenario_data("S2", seed=0, rounds=30)
    np.testing.assert_array_equal(again.phases[0].numpy(), x)


def test_configs_cover_every_scenario_in_order_and_shift_the_seeds() -> None:
    setup = pad.tier("smoke")
    every = pad.configs(setup, 0)
    assert list(dict.fromkeys(c["scenario"] for c in every)) == list(pad.SCENARIOS)
    per_scenario = {s: len(spec.assignments) + 2 * 3 for s, spec in pad.SCENARIOS.items()}
    assert len(every) == sum(per_scenario.values())
    assert {c["seed"] for c in every} == {0}
    shifted = pad.configs(pad.tier("quick"), 5, scenarios=["S3"])
    assert [c["seed"] for c in shifted][:: per_scenario["S3"]] == [5, 6, 7]
    # Apart from the seed, a shifted run is the same run.
    base = pad.configs(pad.tier("quick"), 0, scenarios=["S3"])
    assert [{**c, "seed": 0} for c in shifted] == [{**c, "seed": 0} for c in base]
    with pytest.raises(ValueError, match="unknown scenarios"):
        pad.configs(setup, 0, scenarios=("S5",))


def test_private_configs_use_r_equal_t_and_the_small_r() -> None:
    setup = pad.tier("quick")
    private = [c for c in pad.configs(setup, 0, scenarios=("S2",)) if c["epsilon"] is not None]
    assert {c["exposures"] for c in private} == {setup.rounds, setup.small_exposures}
    assert {(c["assignment"], c["epsilon"]) for c in private} == {
        ("0-2-1", 5.0), ("0-2-1", 20.0), ("1-1-1", 20.0)}
    # noise_scale is optional: absent, a run has the paper's noise
    assert all(set(pad.BATCHED) - {"noise_scale"} <= set(c) for c in private)


def test_tier_overrides_keep_or_replace_the_tiers_values() -> None:
    quick = pad.tier("quick")
    assert pad.tier("quick", hidden=0, small_r=0) == quick
    assert pad.tier("quick", hidden=None, clip_bound=None) is pad.TIERS["quick"]
    notebook_defaults = pad.tier("quick", hidden=0, small_r=0, clip_bound=10.0, mu=0.01,
                                 local_steps=10, lr=0.02)
    assert notebook_defaults == quick
    changed = pad.tier("smoke", hidden=16, small_r=2, clip_bound=5.0, mu=0.1, local_steps=3,
                       lr=0.05)
    assert changed == dataclasses.replace(pad.TIERS["smoke"], hidden=16, small_exposures=2,
                                          clip=5.0, mu=0.1, local_steps=3, lr=0.05)


@pytest.mark.parametrize("name, value", [("hidden", -1), ("hidden", 2.0), ("small_r", True),
                                         ("small_r", "3")])
def test_tier_rejects_bad_hidden_and_small_r(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"{name}=.* must be an integer >= 0 \(0 keeps"):
        pad.tier("quick", **{name: value})


def test_tier_rejects_a_small_r_above_the_rounds() -> None:
    with pytest.raises(ValueError, match="must not exceed"):
        pad.tier("smoke", small_r=4)


def test_run_group_refuses_configs_of_different_scenarios_before_loading_data() -> None:
    setup = pad.tier("smoke")
    s1 = pad.configs(setup, 0, scenarios=("S1",))[0]
    s2 = pad.configs(setup, 0, scenarios=("S2",))[0]
    with pytest.raises(ValueError, match="differ in scenario"):
        pad.run_group([s1, s2])


def test_validation_rows_avoid_every_clients_image_and_are_reproducible() -> None:
    held = np.random.default_rng(0).choice(1_000, size=600, replace=False)
    rows = pad.validation_rows("S1", 3, held, 200, total=1_000)
    assert len(rows) == len(set(rows.tolist())) == 200
    assert not set(rows.tolist()) & set(held.tolist())
    np.testing.assert_array_equal(rows, pad.validation_rows("S1", 3, held, 200, total=1_000))
    assert set(rows.tolist()) != set(pad.validation_rows("S1", 4, held, 200, 1_000).tolist())
    with pytest.raises(ValueError, match=r"n_validation=401 is more than the 400 of 1,000 "
                                         r"rows that no client holds; pass at most 400"):
        pad.validation_rows("S1", 3, held, 401, total=1_000)


def test_a_validation_set_adds_its_accuracy_and_changes_no_other_value(mirror) -> None:
    require_datasets("mnist")
    smoke = pad.tier("smoke")
    private = [c for c in pad.configs(smoke, 0, scenarios=["S1"]) if c["epsilon"] is not None
               and c["exposures"] == smoke.rounds]
    plain = pad.run_group(private)
    scored = pad.run_group([{**c, "n_validation": 300} for c in private])
    for a, b in zip(plain, scored, strict=True):
        assert "val_accuracy" not in a.columns
        pd.testing.assert_frame_equal(a, b.drop(columns="val_accuracy"))
        # A 300-image set: every accuracy is a whole number of its images.
        counts = b["val_accuracy"].to_numpy() * 300
        np.testing.assert_allclose(counts, np.round(counts), atol=1e-6)
    data = pad.scenario_data("S1", 0, smoke.rounds, smoke.client_divisor, smoke.sample_divisor)
    x, y = pad.validation_images("S1", 0, data.rows, 300)
    train_x, train_y = pad.mnist_images("train")
    rows = pad.validation_rows("S1", 0, data.rows, 300, len(train_y))
    np.testing.assert_array_equal(x.numpy(), train_x[rows])
    np.testing.assert_array_equal(y.numpy(), train_y[rows])
