"""The Figure 1a experiment: grids per tier, the sweep runner and its privacy column."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedlib.checks import check_device, check_seed
from fedlib.papers.ppsgd import experiment as fig1a
from fedlib.privacy import epsilon
from fedlib.tiers import check_scale


def test_quick_tier_is_the_papers_problem_with_the_upper_step_grid() -> None:
    quick = fig1a.grid("quick")
    assert (quick.n_users, quick.dim, quick.iterations, quick.batch_size) == (1000, 100, 300, 10)
    assert quick.steps == (0.2, 0.4, 0.7, 1.0, 1.2, 1.5, 1.8)
    assert set(quick.steps) <= set(fig1a.PAPER_STEPS)
    assert set(fig1a.FIGURE_ALPHA_Q) <= set(quick.alpha_q)
    assert fig1a.FIGURE_CLIP in quick.clips
    paper = fig1a.grid("paper")
    n_runs = len(fig1a.figure1a_configs("paper", 0))
    assert n_runs == len(paper.steps) * len(paper.alpha_q) * len(paper.sigmas) * len(paper.clips)
    assert n_runs == 11 * 9 * 10 * 4


def test_run_group_records_risk_and_the_accountants_epsilon() -> None:
    configs = [c for c in fig1a.figure1a_configs("smoke", 0)
               if c["step"] == 0.1 and c["clip"] == 1.0]
    tables = fig1a.run_group(configs)
    assert len(tables) == len(configs)
    for config, table in zip(configs, tables, strict=True):
        assert list(table["iteration"]) == list(range(1, config["iterations"] + 1))
        assert np.isfinite(table["excess_risk"]).all()
        eps = table["epsilon"].to_numpy()
        if config["alpha_q"] == 0:
            assert (eps == 0).all()  # local learning releases nothing
        elif config["noise_multiplier"] == 0:
            assert np.isinf(eps).all()
        else:
            final = epsilon(config["noise_multiplier"], 1.0, config["iterations"], fig1a.DELTA)
            assert eps[-1] == pytest.approx(final)
            assert np.all(np.diff(eps) >= 0)


def test_run_group_refuses_configs_that_cannot_share_a_pass() -> None:
    configs = fig1a.figure1a_configs("smoke", 0)[:2]
    configs[1] = {**configs[1], "seed": 5}
    with pytest.raises(ValueError, match="differ only in"):
        fig1a.run_group(configs)


def test_learning_reduces_the_excess_risk() -> None:
    configs = [c for c in fig1a.figure1a_configs("smoke", 0)
               if c["noise_multiplier"] == 0 and c["step"] == 0.7 and c["clip"] == 1.0
               and not math.isinf(c["alpha_q"])]
    for table in fig1a.run_group(configs):
        assert table["excess_risk"].iloc[-1] < 0.5 * table["excess_risk"].iloc[0]


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [(check_scale, "huge", "not a run tier"), (check_seed, -1, "non-negative"),
     (check_seed, 1.5, "integer"), (check_device, "meta", "not supported"),
     (check_device, "nonsense", "not a torch device")],
)
def test_notebook_parameter_checks_name_the_problem(check, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        check(value)


@pytest.mark.parametrize("workers", [-1, 1.5, True, "2"])
def test_bad_worker_counts_are_rejected(workers) -> None:
    from fedlib.checks import check_workers

    with pytest.raises(ValueError, match="workers"):
        check_workers(workers)
    assert check_workers(0) == 0 and check_workers(3) == 3
