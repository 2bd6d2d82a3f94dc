"""DP-Ditto experiment: tiers and their overrides, the run configs, and the runner's
grouping."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from fedlib.papers.dpditto import experiment as dd
from fedlib.sweeps import plan_groups


def test_configs_group_by_panel_seed_and_rounds() -> None:
    setup = dd.tier("quick")
    configs = dd.configs(setup, 0, panels=("mnist-mlr",))
    assert {c["panel"] for c in configs} == {"mnist-mlr"}
    groups = plan_groups(configs, dd.BATCHED)
    assert len(groups) == len(setup.seeds) * len(setup.rounds)
    methods = {c["method"] for c in configs}
    assert methods == {"DP-Ditto", "FedAMP", "pFedMe", "APPLE", "FedALA"}
    lams = {c["lam"] for c in configs if c["method"] == "DP-Ditto"}
    assert lams == set(dd.LAMBDAS)
    assert all(set(dd.BATCHED) <= set(c) for c in configs)
    json.dumps(configs)


def test_configs_count_seeds_from_the_chapter_seed() -> None:
    setup = dd.tier("quick")
    base = dd.configs(setup, 0)
    shifted = dd.configs(setup, 7)
    assert len(base) == len(shifted)
    for a, b in zip(base, shifted, strict=True):
        assert b["seed"] == a["seed"] + 7
        assert {k: v for k, v in a.items() if k != "seed"} == {
            k: v for k, v in b.items() if k != "seed"}
    assert dd.run_seeds(setup, 7) == (7, 8, 9)
    assert dd.run_seeds(setup, 7, "fmnist-cnn") == (7,)  # the panel's own seeds, shifted
    assert {c["seed"] for c in shifted if c["panel"] == "mnist-dnn"} == {7}


def test_configs_cover_every_panel_and_the_compared_epsilons() -> None:
    setup = dd.tier("smoke")
    configs = dd.configs(setup, 0)
    assert [p for p in dict.fromkeys(c["panel"] for c in configs)] == list(setup.panels)
    baselines = [c for c in configs if c["method"] != "DP-Ditto"]
    assert {c["panel"] for c in baselines} == set(setup.compare_panels)
    assert {c["epsilon"] for c in baselines} == set(setup.compare_epsilons)
    local = [c for c in configs if c["method"] == "DP-Ditto" and c["lam"] == 0.0]
    assert local and all(math.isinf(c["epsilon"]) for c in local)
    assert dd.panels_not_run(setup) == ["cifar10-cnn"]


def test_tier_applies_overrides_and_none_keeps_the_tiers_value() -> None:
    assert dd.tier("smoke", clip=None, fig5_lambda=None) == dd.TIERS["smoke"]
    setup = dd.tier("quick", clip=3.0, fig6_epsilon=100.0, compare_epsilons=[1.0, 100.0])
    assert setup == dataclasses.replace(dd.TIERS["quick"], clip=3.0, fig6_epsilon=100.0,
                                        compare_epsilons=(1.0, 100.0))
    assert {c["clip"] for c in dd.configs(setup, 0)} == {3.0}


@pytest.mark.parametrize("override, message", [
    ({"fig5_lambda": 0.3}, "fig5_lambda"),
    ({"fig6_epsilon": 7.0}, "fig6_epsilon"),
    ({"compare_epsilons": (0.0, 10.0)}, "epsilon must be > 0"),
    ({"compare_epsilons": (10.0,)}, "compare_epsilons must be two different budgets"),
    ({"compare_epsilons": (10.0, 10.0)}, "compare_epsilons must be two different budgets"),
    ({"compare_epsilons": (1.0, 10.0, 100.0)}, "compare_epsilons must be two different"),
])
def test_tier_rejects_values_off_its_grids(override: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dd.tier("smoke", **override)
    with pytest.raises(ValueError, match="not a run tier"):
        dd.tier("huge", **override)


def test_run_group_refuses_configs_that_cannot_share_clients() -> None:
    configs = dd.configs(dd.tier("smoke"), 0, panels=("mnist-mlr",))
    mixed = [c for c in configs if c["rounds"] == 2][:1] + [
        c for c in configs if c["rounds"] == 4][:1]
    with pytest.raises(ValueError, match="differ only in method, epsilon, lam; these differ "
                                         "in rounds"):
        dd.run_group(mixed)


@pytest.mark.parametrize("field, value", [
    ("compare_panels", ("mnist-mlr", "cifar10-cnn")),
    ("lambda_panels", ("fmnist-cnn",)),
    ("panel_seeds", {"cifar10-cnn": (0,)}),
])
def test_a_setup_refuses_panel_settings_for_panels_it_does_not_run(field: str, value) -> None:
    with pytest.raises(ValueError, match=f"{field} names panels the setup does not run"):
        dataclasses.replace(dd.TIERS["paper"], **{
            "panels": ("mnist-dnn", "mnist-mlr"), "compare_panels": ("mnist-dnn",),
            "lambda_panels": ("mnist-dnn",), field: value})


@pytest.mark.parametrize("override, message", [
    ({"rounds": (10**12,)}, r"rounds=1,000,000,000,000 is above 100,000"),
    ({"local_steps": 10**9}, r"local_steps=1,000,000,000 is above"),
    ({"pfedme_inner": 10**9}, r"pfedme_inner=1,000,000,000 is above .*LIMITS\['local_steps'\]"),
    ({"ala_steps": 0}, r"ala_steps must be a >= 1 integer"),
    ({"n_clients": 10**8}, r"n_clients=100,000,000 is above"),
    ({"batch_size": -1}, r"batch_size must be a >= 1 integer"),
    ({"test_examples": -1}, r"test_examples must be a >= 1 integer"),
    ({"eval_examples": 10**9}, r"eval_examples=1,000,000,000 is above .*LIMITS\['n_test'\]"),
    ({"train_cap": {"mnist-dnn": 10**9}}, r"train_cap\['mnist-dnn'\]=1,000,000,000 is above"),
    ({"seeds": (2**63,)}, r"seed=9223372036854775808 is outside \[0, 2\*\*63\)"),
    ({"lr": math.nan}, r"lr must be a finite number > 0, got nan"),
])
def test_a_setup_refuses_sizes_past_the_bounds_naming_the_argument(override: dict,
                                                                  message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(dd.TIERS["smoke"], **override)


def test_the_paper_tiers_dnn_repeats_are_the_tiers_own_runs_at_later_seeds() -> None:
    from fedlib.papers.dpditto.paper_tier import (
        PAPER_GRID,
        REPEAT_ROUNDS,
        REPEAT_SEEDS,
        repeat_setup,
        run_repeats,
    )

    setup = PAPER_GRID.tier("paper")
    repeat = repeat_setup(setup, "paper")
    first = dd.configs(setup, 0, panels=("mnist-dnn",))
    found = dd.configs(repeat, 0)
    assert {c["seed"] for c in found} == set(REPEAT_SEEDS["paper"])
    assert {c["rounds"] for c in found} == set(REPEAT_ROUNDS)
    same = [c for c in first if c["rounds"] in REPEAT_ROUNDS]
    assert len(found) == len(REPEAT_SEEDS["paper"]) * len(same)
    assert all({**c, "seed": 0} in first for c in found)
    assert repeat_setup(PAPER_GRID.tier("quick"), "quick") is None
    none, left_out = run_repeats(PAPER_GRID.tier("quick"), 0, "quick")
    assert none.empty and left_out == {}


def test_repeats_not_stored_are_left_out_saying_so(monkeypatch) -> None:
    from fedlib.papers.dpditto import paper_tier
    from fedlib.runs.cache import MissingRunsError

    def missing(*_, **__):
        raise MissingRunsError("216 of 216 runs of dpditto are neither cached nor published. "
                               "Run make publish")

    monkeypatch.setattr(dd, "run", missing)
    runs, left_out = paper_tier.run_repeats(paper_tier.PAPER_GRID.tier("paper"), 0, "paper")
    assert runs.empty
    assert left_out == {paper_tier.REPEATS_PART:
                        "216 of 216 runs of dpditto are neither cached nor published"}
