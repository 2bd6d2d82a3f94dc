"""PADPFL scenarios: impact factors, noise levels, data, claims and accounting."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import require_datasets

from fedlib.papers.padpfl import experiment as pad
from fedlib.privacy import epsilon as exact_epsilon


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
    configs = pad.scenario_configs("S1", setup)
    # 5 non-private + 2 values of R x (2 epsilons + equal at 20), per seed
    assert len(configs) == len(setup.seeds) * (5 + 2 * 3)
    groups = {pad.group_key(c) for c in configs}
    assert len(groups) == len(setup.seeds)
    with pytest.raises(ValueError, match="must not exceed"):
        pad.PadpflSetup(rounds=3, hidden=4, seeds=(0,), client_divisor=1, sample_divisor=1,
                        small_exposures=5, test_examples=10)


def _fake_runs(final: dict[tuple[str, str, float | None, int | None], float]) -> pd.DataFrame:
    rows = []
    for (scenario, assignment, eps, exposures), value in final.items():
        for seed in (0, 1):
            for rnd, loss in ((0, 2.3), (1, 2.3), (2, value + 0.01 * seed)):
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
    claims = {c.claim_id: c for c in pad.evaluate_claims(_fake_runs(final), setup, "smoke")}
    # S1 lists 1-1-1 first: it is the best here, so "equal worst" and "0-1-2 best" fail.
    assert claims["fig2-equal-worst"].status == "FAILS"
    assert claims["fig2-012-best"].status == "FAILS"
    assert claims["fig3-eps20-below-eps5"].status == "HOLDS"
    assert claims["fig3-equal-eps20-worse-than-weighted-eps5"].status == "FAILS"  # 2.5 < 3
    assert claims["fig5-weighted-beats-equal"].status == "HOLDS"
    # S3 lists 5-3-1, 1-1-1, 1-3-5: the reverse of the claimed order.
    assert claims["fig6-weight-on-large-clients"].status == "FAILS"
    assert claims["fig8-adaptive-best"].status == "FAILS"  # adaptive is listed last
    # eps=5 ends at 3.0, above the start 2.3: not converging.
    assert claims["fig9-adaptive-converges"].status == "FAILS"
    assert "start 2.300" in claims["fig9-adaptive-converges"].evidence


def test_accounting_matches_the_noise_multiplier() -> None:
    setup = pad.tier("quick")
    table = pad.accounting_table("S3", setup, exposures=30, epsilon=5.0)
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
