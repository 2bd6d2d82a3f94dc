"""The authors' problem instance: our engine against curves of the authors' own script.

``fixtures/authors_synthetic.json`` holds excess-risk and epsilon curves computed by
running the authors' ``main_synthetic.py`` unmodified (provenance in the file and in
``fixtures/README.md``). Fed the same configuration, the engine must give the same
curves to rounding: the same ground truth, samples and noise, drawn in the same order,
and the same update rule.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from fedlib.data.synthetic import AUTHORS_SEED, AdditiveSyntheticTask
from fedlib.papers.ppsgd import experiment
from fedlib.papers.ppsgd.algorithm import PPSGDConfig, run_synthetic
from fedlib.privacy import epsilon_curve

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "authors_synthetic.json").read_text())
RUNS = FIXTURE["runs"]
SETTINGS = sorted({(r["d"], r["local_weight"]) for r in RUNS})


@pytest.fixture(autouse=True)
def one_thread():
    """The problems are small: one torch thread is fastest, and immune to a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _config(run: dict) -> PPSGDConfig:
    alpha_q = math.inf if run["alpha"] == -1 else run["alpha"]  # the script's -1 is infinity
    return PPSGDConfig(step=run["step"], alpha_q=alpha_q, noise_multiplier=run["noise_mult"],
                       clip=run["C"])


def test_the_fixture_says_where_it_comes_from() -> None:
    provenance = FIXTURE["provenance"]
    assert provenance["repository"].endswith("albietz/ppsgd")
    assert len(provenance["commit"]) == 40
    assert {"numpy", "opacus", "date", "how"} <= set(provenance)
    assert all(r["command"].startswith("python run_seeded.py") for r in RUNS)
    assert SETTINGS == [(20, 0.1), (100, 0.01)]  # the script's defaults, the paper's text


@pytest.mark.parametrize(("dim", "heterogeneity"), SETTINGS)
def test_engine_reproduces_the_authors_script(dim: int, heterogeneity: float) -> None:
    runs = [r for r in RUNS if (r["d"], r["local_weight"]) == (dim, heterogeneity)]
    first = runs[0]
    assert {(r["n_users"], r["batch_size"], r["niter"], r["noise_seed"]) for r in runs} == {
        (first["n_users"], first["batch_size"], first["niter"], first["noise_seed"])}
    task = AdditiveSyntheticTask(n_users=first["n_users"], dim=dim,
                                 personal_scale=heterogeneity, instance="authors")
    ours = run_synthetic(task, [_config(r) for r in runs], first["niter"],
                         batch_size=first["batch_size"], seed=first["noise_seed"],
                         dtype=torch.float64)
    theirs = np.array([r["excess_risk"] for r in runs])
    # The script averages the excess risk over the d coordinates too.
    relative = np.abs(ours / dim - theirs) / np.abs(theirs)
    assert relative.max() <= 1e-8, relative.max()


def test_epsilon_matches_the_authors_accountant() -> None:
    for run in RUNS:
        eps = np.array(run["epsilon"])
        if run["alpha"] == 0:
            assert (eps == 0).all()  # the script never steps its accountant: nothing released
        elif run["noise_mult"] == 0:
            assert np.isinf(eps).all()
        else:
            ours = epsilon_curve(run["noise_mult"], 1.0, run["niter"], 1e-4,
                                 accountant="opacus-rdp")
            np.testing.assert_allclose(ours, eps, rtol=1e-8)


def test_authors_ground_truth_and_stream_come_in_their_order() -> None:
    task = AdditiveSyntheticTask(n_users=6, dim=8, personal_coords=3, personal_scale=0.5,
                                 instance="authors", seed=123)  # the seed is theirs, not ours
    normals = np.random.RandomState(AUTHORS_SEED).standard_normal(8 + 6 * 8 + 2 * 6 * 8 + 2 * 6)
    theta0, deviations = 10.0 * normals[:8], normals[8:56].reshape(6, 8)
    theta_star = task.theta_star()
    np.testing.assert_array_equal(theta_star[:, :5], np.broadcast_to(theta0[:5], (6, 5)))
    np.testing.assert_allclose(theta_star[:, 5:], theta0[5:] + 0.5 * deviations[:, 5:])

    stream = task.authors_stream(noise_seed=4)
    x, y, z = stream.draw(batch_size=2)
    features = normals[56:152].reshape(2, 6, 8) * np.sqrt(1.0 / np.arange(1, 9))
    np.testing.assert_array_equal(x, features.transpose(1, 0, 2))  # (users, samples, d)
    labels = np.einsum("mnd,nd->nm", features, theta_star) + 0.01 * normals[152:].reshape(2, 6).T
    np.testing.assert_allclose(y, labels, rtol=1e-12)
    np.testing.assert_array_equal(z, np.random.RandomState(4).standard_normal(8))


def test_authors_instance_samples_every_user() -> None:
    task = AdditiveSyntheticTask(n_users=5, dim=8, instance="authors")
    with pytest.raises(ValueError, match="samples every user"):
        run_synthetic(task, [PPSGDConfig(0.1, 1.0, 0.0)], 2, users_per_iteration=2)
    with pytest.raises(ValueError, match="instance='authors'"):
        AdditiveSyntheticTask(n_users=5, dim=8).authors_stream(0)
    with pytest.raises(ValueError, match="not a draw of the synthetic task"):
        AdditiveSyntheticTask(instance="paper")


def test_figure_1a_runs_on_the_authors_instance_by_default() -> None:
    setup = experiment.tier("smoke")
    default = experiment.configs(setup, 0, figure="1a")
    assert {c["instance"] for c in default} == {"authors"}
    assert {c["heterogeneity"] for c in default} == {0.01}
    own = experiment.configs(setup, 0, figure="1a", instance="fedlib")
    assert [{**c, "instance": "authors"} for c in own] == default
    with pytest.raises(ValueError, match="not a draw"):
        experiment.configs(setup, 0, figure="1a", instance="mine")
    # The authors' draw ignores the chapter's seed (theirs is fixed); ours follows it.
    grid = setup.synthetic
    np.testing.assert_array_equal(experiment.synthetic_task(grid, 0).theta_star(),
                                  experiment.synthetic_task(grid, 5).theta_star())
    assert not np.array_equal(experiment.synthetic_task(grid, 0, "fedlib").theta_star(),
                              experiment.synthetic_task(grid, 5, "fedlib").theta_star())
    tables = experiment.run_group([c for c in default if c["step"] == 0.7 and c["clip"] == 1.0
                                   and c["noise_multiplier"] == 0])
    for table in tables:
        assert set(table["instance"]) == {"authors"} and np.isfinite(table["excess_risk"]).all()


def test_settings_sweep_covers_the_paper_the_script_and_the_grid() -> None:
    setup = experiment.tier("smoke")
    grids = experiment.setting_grids(setup)
    found = {(i, g.dim, g.heterogeneity) for i, g in grids}
    assert found == {("authors", 100, 0.01), ("authors", 100, 0.1), ("authors", 100, 1.0),
                     ("authors", 20, 0.1), ("fedlib", 100, 0.01)}
    assert all(g.clips == experiment.SETTING_CLIPS for i, g in grids if i == "authors")
    configs = experiment.setting_configs(setup, 0)
    per_grid = len(setup.synthetic.steps) * len(setup.synthetic.alpha_q) * len(
        setup.synthetic.sigmas)
    assert len(configs) == per_grid * (4 * len(experiment.SETTING_CLIPS) + 1)
    # The paper's setting at the tier's clipping norms is the chapter's own Figure 1a run
    # (same configs, so the sweep's cache shares them) at the quick tier.
    quick = experiment.tier("quick")
    main = experiment.configs(quick, 0, figure="1a")
    keys = {json.dumps(c, sort_keys=True) for c in experiment.setting_configs(quick, 0)}
    assert all(json.dumps(c, sort_keys=True) in keys for c in main)
