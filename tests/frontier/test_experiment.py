"""The frontier grid: its configs per tier, runs through the sweep (cached, resumable), and
the privacy target enforced before a run is stored."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import require_datasets

from fedlib.frontier import experiment as fx
from fedlib.frontier.figures import run_cpu_seconds
from fedlib.frontier.interface import TuneResult
from fedlib.frontier.methods import METHODS, method
from fedlib.frontier.privacy import BudgetExceededError, PrivacyUnit
from fedlib.runs.cache import ResultStore
from fedlib.runs.keys import run_key

NOT_USER = {"pfa", "pfa+", "hu-mtl"}
NOT_EXAMPLE = {"ppsgd"}


def test_methods_in_each_unit_are_those_that_admit_it():
    assert set(fx.methods_in("example")) == {m.name for m in METHODS} - NOT_EXAMPLE
    assert set(fx.methods_in("user")) == {m.name for m in METHODS} - NOT_USER
    assert set(fx.methods_in("silo")) == {m.name for m in METHODS}
    assert fx.methods_in(PrivacyUnit.USER) == fx.methods_in("user")


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
def test_every_config_is_a_method_in_a_unit_it_admits_and_every_run_differs(scale):
    setup = fx.tier(scale)
    configs = fx.configs(setup, seed=4)
    for config in configs:
        assert PrivacyUnit(config["unit"]) in method(config["method"]).units
        assert config["seeds"] == list(range(4, 4 + setup.seeds))
        assert config["stage"] == "choose" and config["delta"] == fx.DELTA
    keys = {json.dumps(c, sort_keys=True) for c in configs}
    assert len(keys) == len(configs)
    cells = sum(len(s.epsilons) for s in setup.slices) * sum(
        len(fx.methods_in(u)) for u in setup.units)
    assert len(configs) == cells
    testing = fx.run_seeds(setup, 4, "test")
    assert set(testing).isdisjoint(fx.run_seeds(setup, 4)) and len(testing) == setup.seeds


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_the_tiers_span_the_targets_federations_and_units_the_chapter_compares(scale):
    setup = fx.tier(scale)
    for part in setup.slices:
        finite = [e for e in part.epsilons if e is not None]
        assert len(finite) >= 5 and None in part.epsilons
    assert setup.seeds >= 3 and set(setup.units) == {"example", "user", "silo"}
    assert len(fx.methods_in("example")) >= 6
    assert setup.datasets == ("har-subjects", "femnist-writers", "mnist-shards",
                              "mnist-users", "femnist-all-writers")
    many = setup.slice("mnist-users")
    assert many.rounds >= 100 and 0.05 <= many.client_rate <= 0.1
    assert dict(many.options).get("max_clients") is None
    if scale == "paper":
        assert dict(many.options).get("n_users", 1200) >= 1000  # the deployed regime


def test_configs_keep_the_datasets_asked_for_and_refuse_an_unknown_one():
    setup = fx.tier("smoke")
    assert {c["dataset"] for c in fx.configs(setup, 0, datasets=["mnist-users"])} == {
        "mnist-users"}
    with pytest.raises(ValueError, match="no 'cifar'"):
        fx.configs(setup, 0, datasets=["cifar"])


def test_worst_decile_is_the_mean_of_the_worst_tenth_of_clients():
    accuracy = np.array([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.6, 0.4, 1.0, 0.05, 0.95])
    assert fx.worst_decile(accuracy) == pytest.approx((0.05 + 0.1) / 2)  # ceil(1.2) = 2
    assert fx.worst_decile(np.array([0.4, 0.2, 0.9])) == pytest.approx(0.2)


TINY = fx.FrontierSetup(slices=(fx.Slice("synthetic", (), (2.0, None), 2, 1),), seeds=1,
                        units=("example", "user", "silo"))


@pytest.fixture
def synthetic(monkeypatch, federation):
    """The sweep's federation loader answers with the small synthetic federation."""
    monkeypatch.setattr(fx, "_federation", lambda dataset, options, seed: federation)
    return federation


def _all_configs():
    return fx.configs(TINY, 0)


def test_a_run_through_the_sweep_is_cached_and_a_second_call_computes_nothing(
        synthetic, monkeypatch):
    first = fx.run(TINY, 0, workers=1, progress=False)
    assert len(first) == 2 * len(_all_configs())  # each choosing run has its testing run
    assert set(first["stage"]) == {"choose", "test"}
    private = first[np.isfinite(first["epsilon"])]
    assert (private["spent_epsilon_max"] <= private["epsilon"]).all()
    spending = private[(private["method"] != "local") | (private["unit"] == "silo")]
    assert (spending["spent_epsilon_max"] > 0.9 * spending["epsilon"]).all()
    free = first[(first["method"] == "local") & (first["unit"] != "silo")]
    assert (free["spent_epsilon_max"] == 0).all()
    chosen = first[first["stage"] == "choose"]
    assert (chosen["configs_tried"] >= [len(method(m).grid()) for m in chosen["method"]]).all()
    tested = first[first["stage"] == "test"].set_index(["unit", "method", "epsilon"])
    for _, row in chosen.iterrows():
        twin = tested.loc[(row["unit"], row["method"], row["epsilon"])]
        assert twin["hparams"] == row["hparams"]  # one choosing seed: its choice is tested
        assert twin["configs_tried"] == 1 and twin["seed"] != row["seed"]
    for _, row in first.iterrows():
        clients = [float(v) for v in row["client_test_accuracy"].split(",")]
        assert len(clients) == synthetic.n_clients
        assert row["test_accuracy"] == pytest.approx(np.mean(clients), abs=1e-6)
        assert row["worst_decile_accuracy"] == pytest.approx(fx.worst_decile(clients),
                                                             abs=1e-6)
        assert row["test_loss_variance"] == pytest.approx(
            np.var([float(v) for v in row["client_test_loss"].split(",")]), rel=1e-4,
            abs=1e-9)
    store = ResultStore(fx.EXPERIMENT)
    keys = [run_key(c, fx.run_group.__module__) for c in _all_configs()]
    assert all(store.has(k) for k in keys)
    assert all(store.provenance(k)["group_size"] == 1 for k in keys)  # one run per call
    cpu = run_cpu_seconds(first)
    assert list(cpu) == [store.provenance(k)["group_cpu_seconds"] for k in first["run_key"]]
    assert (cpu > 0).all()

    def computing(*args, **kwargs):
        raise AssertionError("a cached run was computed again")

    monkeypatch.setattr(fx, "tune", computing)
    again = fx.run(TINY, 0, workers=1, progress=False)
    assert again.equals(first)


def test_an_interrupted_sweep_resumes_with_the_runs_it_lacks(synthetic, monkeypatch):
    configs = _all_configs()
    keys = [run_key(c, fx.run_group.__module__) for c in configs]
    fx.run(TINY, 0, workers=1, progress=False)
    store = ResultStore(fx.EXPERIMENT)
    store.path(keys[3]).unlink()
    calls = []
    original = fx.tune

    def counting(*args, **kwargs):
        calls.append(args[0].name)
        return original(*args, **kwargs)

    monkeypatch.setattr(fx, "tune", counting)
    fx.run(TINY, 0, workers=1, progress=False)
    assert calls == [configs[3]["method"]]  # the testing runs, their choice unchanged, neither
    assert store.has(keys[3])


def test_a_run_that_overspends_its_target_is_refused_and_not_stored(synthetic, monkeypatch):
    real = fx.tune

    def overspending(*args, **kwargs) -> TuneResult:
        result = real(*args, **kwargs)
        spent = result.outcome.spent_epsilon.copy()
        if math.isfinite(result.outcome.target.epsilon):
            spent[-1] = result.outcome.target.epsilon * 1.001
        object.__setattr__(result.outcome, "spent_epsilon", spent)
        return result

    monkeypatch.setattr(fx, "tune", overspending)
    config = next(c for c in _all_configs() if c["epsilon"] == 2.0
                  and c["method"] == "dp-fedavg-ft")
    with pytest.raises(BudgetExceededError, match="spent more than epsilon=2"):
        fx.run_group([config])
    with pytest.raises(BudgetExceededError):
        fx.run(TINY, 0, workers=1, progress=False)
    key = run_key(config, fx.run_group.__module__)
    assert not ResultStore(fx.EXPERIMENT).has(key)


def test_the_smoke_tier_runs_on_the_real_federations():
    require_datasets("hapt")
    setup = fx.FrontierSetup(slices=(fx.tier("smoke").slice("har-subjects"),), seeds=1)
    runs = fx.run(setup, 0, workers=1, progress=False)
    assert len(runs) == 2 * len(fx.configs(setup, 0))
    assert set(runs["n_clients"]) == {5}
    private = runs[np.isfinite(runs["epsilon"])]
    assert (private["spent_epsilon_max"] <= private["epsilon"]).all()
    assert ((runs["test_accuracy"] >= 0) & (runs["test_accuracy"] <= 1)).all()


def test_tuning_over_seeds_chooses_by_the_mean_and_the_testing_runs_take_the_choice(
        synthetic):
    from fedlib.frontier.privacy import Target

    m = method("dp-ditto")
    result = fx.tune(m, (synthetic, synthetic), PrivacyUnit.USER, Target(2.0), (0, 1),
                     rounds=2, local_steps=1)
    assert [o.seed for o in result.outcomes] == [0, 1]
    for hp, score in result.scores[:3]:
        each = [m.fit(synthetic, PrivacyUnit.USER, Target(2.0), hp, s).mean_val_accuracy
                for s in (0, 1)]
        assert score == pytest.approx(np.mean(each))
    assert dict(result.scores)[result.best] == max(dict(result.scores).values())
    setup = fx.FrontierSetup(slices=(fx.Slice("synthetic", (), (2.0,), 2, 1),), seeds=2,
                             units=("user",))
    runs = fx.run(setup, 0, workers=1, progress=False)
    chosen = runs[(runs["stage"] == "choose") & (runs["method"] == "dp-ditto")]
    assert sorted(chosen["seed"]) == [0, 1] and chosen["hparams"].nunique() == 1
    tested = runs[(runs["stage"] == "test") & (runs["method"] == "dp-ditto")]
    assert sorted(tested["seed"]) == [2, 3]
    assert set(tested["hparams"]) == set(chosen["hparams"])
    assert set(tested["open_edges"]) == set(chosen["open_edges"])
