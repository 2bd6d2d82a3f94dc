"""The runs of Figures 1a, 1c and 1d: grids per tier, configs, the sweep runner and its
privacy column, and the sweep of one figure."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fedlib.checks import check_device, check_seed
from fedlib.data.federated import split_per_user
from fedlib.papers.ppsgd import experiment
from fedlib.privacy import epsilon, epsilon_curve
from fedlib.tiers import check_scale

INF = math.inf


def synthetic_configs(scale: str) -> list[dict]:
    return experiment.configs(experiment.tier(scale), 0, figure="1a")


def _config_keys(found) -> set[str]:
    """Configs as comparable strings."""
    return {json.dumps(c, sort_keys=True, default=str) for c in found}


def test_quick_tier_is_the_papers_problem_with_the_upper_step_grid() -> None:
    quick = experiment.tier("quick").synthetic
    assert (quick.n_users, quick.dim, quick.iterations, quick.batch_size) == (1000, 100, 300, 10)
    assert quick.steps == (0.2, 0.4, 0.7, 1.0, 1.2, 1.5, 1.8)
    assert set(quick.steps) <= set(experiment.PAPER_SYNTHETIC_STEPS)
    assert set(experiment.SYNTHETIC_FIGURE_ALPHA_Q) <= set(quick.alpha_q)
    assert experiment.FIGURE_CLIP in quick.clips
    paper = experiment.tier("paper").synthetic
    n_runs = len(synthetic_configs("paper"))
    assert n_runs == len(paper.steps) * len(paper.alpha_q) * len(paper.sigmas) * len(paper.clips)
    assert n_runs == 11 * 9 * 10 * 4


def test_paper_tier_has_the_appendix_grids_and_twenty_epochs() -> None:
    setup = experiment.tier("paper")
    linear, cnn = setup.emnist("linear"), setup.emnist("cnn")
    assert (linear, cnn) == (setup.linear, setup.cnn)
    assert linear.steps == (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01)
    assert linear.sigmas == (0, 0.1, 0.3, 1, 2, 3, 5, 10, 20, 30, 50, 100)
    assert cnn.steps == (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    assert cnn.sigmas == (0, 0.1, 0.3, 1, 3, 10, 30, 100)
    for g in (linear, cnn):
        assert g.alpha_q == (0, 0.1, 0.3, 1, 3, 10, 30, 100, INF)
        assert (g.epochs, g.users_per_iteration, g.batch_size) == (20, 10, 10)
    quick = experiment.tier("quick").linear
    assert set(experiment.EMNIST_FIGURE_ALPHA_Q) <= set(quick.alpha_q)
    assert set(quick.steps) <= set(linear.steps)
    with pytest.raises(ValueError, match="not an EMNIST model"):
        setup.emnist("resnet")


def test_configs_of_all_figures_are_those_of_each_figure_in_order() -> None:
    setup = experiment.tier("smoke")
    by_figure = {f: experiment.configs(setup, 0, figure=f) for f in experiment.FIGURES}
    assert experiment.configs(setup, 0) == [*by_figure["1a"], *by_figure["1c"], *by_figure["1d"]]
    assert {c["experiment"] for c in by_figure["1a"]} == {"ppsgd-synthetic"}
    assert {c["experiment"] for c in by_figure["1c"]} == {"ppsgd-emnist-linear"}
    assert {c["experiment"] for c in by_figure["1d"]} == {"ppsgd-emnist-cnn"}
    assert all(c["source"] == "tff" and c["device"] == "meta"
               for c in experiment.configs(setup, 0, figure="1c", device="meta", source="tff"))
    with pytest.raises(ValueError, match="no runs of its own"):
        experiment.configs(setup, 0, figure="2")
    with pytest.raises(ValueError, match="not an EMNIST source"):
        experiment.configs(setup, 0, figure="1d", source="mnist")


def test_local_only_runs_once_since_it_releases_nothing() -> None:
    setup = experiment.tier("quick")
    configs = experiment.configs(setup, 0, figure="1c")
    g = setup.linear
    local = [c for c in configs if c["alpha_q"] == 0]
    assert len(local) == len(g.steps) and all(c["noise_multiplier"] == 0 for c in local)
    assert len(configs) == len(g.steps) * (1 + (len(g.alpha_q) - 1) * len(g.sigmas))


def test_run_group_records_risk_and_the_accountants_epsilon() -> None:
    configs = [c for c in synthetic_configs("smoke") if c["step"] == 0.1 and c["clip"] == 1.0]
    tables = experiment.run_group(configs)
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
            final = epsilon(config["noise_multiplier"], 1.0, config["iterations"],
                            experiment.DELTA)
            assert eps[-1] == pytest.approx(final)
            assert np.all(np.diff(eps) >= 0)


def test_run_group_refuses_configs_that_cannot_share_a_pass() -> None:
    configs = synthetic_configs("smoke")[:2]
    configs[1] = {**configs[1], "seed": 5}
    with pytest.raises(ValueError, match="differ only in"):
        experiment.run_group(configs)
    with pytest.raises(ValueError, match="not a PPSGD experiment"):
        experiment.run_group([{**configs[0], "experiment": "ppsgd-other"}])


def test_learning_reduces_the_excess_risk() -> None:
    configs = [c for c in synthetic_configs("smoke")
               if c["noise_multiplier"] == 0 and c["step"] == 0.7 and c["clip"] == 1.0
               and not math.isinf(c["alpha_q"])]
    for table in experiment.run_group(configs):
        assert table["excess_risk"].iloc[-1] < 0.5 * table["excess_risk"].iloc[0]


def toy(model: str, *_args) -> object:
    rng = np.random.default_rng(0)
    n = 12 * 30
    shape = (n, 784) if model == "linear" else (n, 1, 28, 28)
    return split_per_user(rng.random(shape).astype(np.float32), rng.integers(0, 10, n),
                          np.repeat(np.arange(12), 30), 10, test_fraction=0.2, seed=0)


@pytest.mark.parametrize("figure", ["1c", "1d"])
def test_run_group_records_accuracy_and_the_accountants_epsilon(figure, monkeypatch) -> None:
    monkeypatch.setattr(experiment, "load_data", toy)
    configs = experiment.configs(experiment.tier("smoke"), 0, figure=figure)[:4]
    tables = experiment.run_group(configs)
    for config, table in zip(configs, tables, strict=True):
        assert table["iteration"].iloc[0] == 0 and table["accuracy"].between(0, 1).all()
        iterations = int(table["iterations"].iloc[0])
        if config["alpha_q"] == 0:
            assert (table["epsilon"] == 0).all()
        elif config["noise_multiplier"] > 0:
            expected = epsilon_curve(config["noise_multiplier"],
                                     config["users_per_iteration"] / 12, iterations,
                                     experiment.DELTA, at=list(table["iteration"]))
            np.testing.assert_allclose(table["epsilon"], expected)


def test_run_sweeps_one_figure_into_its_own_folder(monkeypatch) -> None:
    calls = []

    def fake_sweep(name, configs, runner, **options):
        calls.append((name, configs, runner, options))

    monkeypatch.setattr(experiment, "sweep", fake_sweep)
    setup = experiment.tier("quick")
    experiment.run(setup, 0, figure="1a", progress=False)
    experiment.run(setup, 0, figure="1c", workers=2, progress=False)
    experiment.run(experiment.tier("smoke"), 0, figure="1d", workers=2, progress=False)
    experiment.run(setup, 0, figure="1d", workers=1, max_group_size=3, progress=False)
    names = [name for name, *_ in calls]
    assert names == ["ppsgd-synthetic", "ppsgd-emnist-linear", "ppsgd-emnist-cnn",
                     "ppsgd-emnist-cnn"]
    assert all(runner is experiment.run_group and options["batched"] == experiment.BATCHED
               for _, _, runner, options in calls)
    sizes = [options["max_group_size"] for *_, options in calls]
    n_linear = len(experiment.configs(setup, 0, figure="1c"))
    n_cnn_smoke = len(experiment.configs(experiment.tier("smoke"), 0, figure="1d"))
    assert sizes == [120, min(48, -(-n_linear // 2)), min(48, n_cnn_smoke), 3]
    assert calls[0][1] == experiment.configs(setup, 0, figure="1a")


def test_unknown_source_is_refused() -> None:
    with pytest.raises(ValueError, match="not an EMNIST source"):
        experiment.load_data("linear", None, 0.1, 0, "mnist")
    with pytest.raises(ValueError, match="not an EMNIST source"):
        experiment.check_source("mnist")
    assert experiment.check_source("tff") == "tff"


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


def test_local_only_runs_are_simulated_once_whatever_their_noise_and_clip() -> None:
    local = [c for c in synthetic_configs("smoke") if c["alpha_q"] == 0 and c["step"] == 0.7]
    assert len({(c["noise_multiplier"], c["clip"]) for c in local}) == 4
    tables = experiment.run_group(local)
    for table in tables[1:]:
        np.testing.assert_array_equal(table["excess_risk"], tables[0]["excess_risk"])
    alone = experiment.run_group(local[-1:])[0]
    np.testing.assert_allclose(alone["excess_risk"], tables[0]["excess_risk"], rtol=1e-5)


def test_figure1d_small_step_runs_are_new_runs_of_the_papers_grid() -> None:

    from fedlib.papers.ppsgd.paper_tier import (
        PAPER_GRID,
        SMALL_STEPS,
        SMALL_STEPS_PART,
        SMALL_STEPS_SIGMAS,
        run_small_steps,
        small_steps_setup,
    )

    book = PAPER_GRID.tier("paper")
    small = _config_keys(experiment.configs(small_steps_setup(book), 0, figure="1d"))
    whole = _config_keys(experiment.configs(experiment.tier("paper"), 0, figure="1d"))
    main = _config_keys(experiment.configs(book, 0, figure="1d"))
    levels = [a for a in experiment.EMNIST_FIGURE_ALPHA_Q if a > 0]
    assert len(small) == len(SMALL_STEPS_SIGMAS) * len(SMALL_STEPS) * len(levels)
    assert small < whole and not small & main
    runs, left_out = run_small_steps(book, 0, "quick")  # the quick tier runs none
    assert runs.empty and "paper tier only" in left_out[SMALL_STEPS_PART]


def test_figure1d_small_step_runs_not_stored_are_left_out_saying_so(monkeypatch) -> None:
    from fedlib.papers.ppsgd import paper_tier
    from fedlib.runs.cache import MissingRunsError

    def missing(*_, **__):
        raise MissingRunsError("40 of 40 runs of ppsgd-emnist-cnn are neither cached nor "
                               "published. Run make publish")

    monkeypatch.setattr(experiment, "run", missing)
    runs, left_out = paper_tier.run_small_steps(paper_tier.PAPER_GRID.tier("paper"), 0, "paper")
    assert runs.empty
    assert left_out == {paper_tier.SMALL_STEPS_PART:
                        "40 of 40 runs of ppsgd-emnist-cnn are neither cached nor published"}


def test_figure1d_smallest_step_runs_are_the_nine_runs_at_sigma_10_with_step_0_05() -> None:
    from dataclasses import replace

    from fedlib.papers.ppsgd.paper_tier import (
        PAPER_GRID,
        SMALL_STEPS_SIGMAS,
        smallest_step_setup,
    )

    book = PAPER_GRID.tier("paper")
    # The call the runs were computed with, for seeds 0 to 2.
    computed = replace(book, cnn=replace(book.cnn, sigmas=(10.0,), panel_sigmas=(10.0,),
                                         steps=(0.05,), alpha_q=(0.1, 0.3, INF)))
    assert smallest_step_setup(book) == computed
    found = [c for seed in range(3) for c in experiment.configs(
        smallest_step_setup(book), seed, figure="1d", device="cpu", source="leaf-sample")]
    assert len(_config_keys(found)) == 9
    assert {(c["noise_multiplier"], c["step"]) for c in found} == {(10.0, 0.05)}
    assert {c["epochs"] for c in found} == {20.0}
    whole = _config_keys(experiment.configs(experiment.tier("paper"), 0, figure="1d"))
    main = _config_keys(experiment.configs(book, 0, figure="1d"))
    first = _config_keys(experiment.configs(smallest_step_setup(book), 0, figure="1d"))
    assert first < whole and not first & main and 10.0 not in SMALL_STEPS_SIGMAS


def test_figure1d_smallest_step_runs_are_read_from_stored_runs_only(monkeypatch) -> None:
    from fedlib.papers.ppsgd import paper_tier
    from fedlib.runs import cache
    from fedlib.runs.cache import MissingRunsError

    book = paper_tier.PAPER_GRID.tier("paper")
    runs, left_out = paper_tier.stored_smallest_step(book, 0, "quick")  # the paper tier's
    assert runs.empty and "paper tier only" in left_out[paper_tier.SMALLEST_STEP_PART]
    sentence = paper_tier.smallest_step_absent(left_out)
    assert "paper tier only" in sentence and "about 11 CPU-minutes" in sentence

    seen = []

    def missing(setup, seed, **kwargs):
        seen.append((seed, cache._STORED_ONLY.get(), kwargs.get("figure")))
        raise MissingRunsError("9 of 9 runs of ppsgd-emnist-cnn are neither cached nor "
                               "published. Run make publish")

    monkeypatch.setattr(experiment, "run", missing)
    runs, left_out = paper_tier.stored_smallest_step(book, 0, "paper", device="cpu")
    assert runs.empty and seen == [(0, True, "1d")]  # read only, never computed
    assert left_out == {paper_tier.SMALLEST_STEP_PART: "not all stored (9 of 9 runs of "
                        "ppsgd-emnist-cnn are neither cached nor published)"}
    sentence = paper_tier.smallest_step_absent(left_out)
    assert "are not shown here: not all stored (9 of 9 runs" in sentence
    assert "9 runs of 20 epochs" in sentence
