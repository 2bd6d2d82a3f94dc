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
from fedlib.frontier.interface import GRID_SIZE, TuneResult
from fedlib.frontier.methods import METHODS, method
from fedlib.frontier.privacy import BudgetExceededError, PrivacyUnit
from fedlib.runs.cache import ResultStore
from fedlib.runs.keys import run_key

EXAMPLE_ONLY = {"pfa", "pfa+", "hu-mtl"}
USER_ONLY = {"ppsgd"}


def test_methods_in_each_unit_are_those_that_admit_it():
    assert set(fx.methods_in("example")) == {m.name for m in METHODS} - USER_ONLY
    assert set(fx.methods_in("user")) == {m.name for m in METHODS} - EXAMPLE_ONLY
    assert fx.methods_in(PrivacyUnit.USER) == fx.methods_in("user")


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
def test_every_config_is_a_method_in_a_unit_it_admits_and_every_run_differs(scale):
    setup = fx.tier(scale)
    configs = fx.configs(setup, seed=4)
    for config in configs:
        assert PrivacyUnit(config["unit"]) in method(config["method"]).units
        assert config["seed"] in range(4, 4 + setup.seeds)
        assert config["delta"] == fx.DELTA
    keys = {json.dumps(c, sort_keys=True) for c in configs}
    assert len(keys) == len(configs)
    per_seed = sum(len(s.epsilons) for s in setup.slices) * (
        len(fx.methods_in("example")) + len(fx.methods_in("user")))
    assert len(configs) == setup.seeds * per_seed


def test_the_quick_tier_spans_the_targets_the_chapter_compares():
    setup = fx.tier("quick")
    har = setup.slice("har-subjects")
    finite = [e for e in har.epsilons if e is not None]
    assert len(finite) >= 5 and min(finite) >= 0.5 and max(finite) <= 8
    assert None in har.epsilons
    assert setup.seeds >= 3 and set(setup.units) == {"example", "user"}
    assert len(fx.methods_in("example")) >= 6
    assert setup.datasets == ("har-subjects", "femnist-writers", "mnist-shards")
    for part in setup.slices:
        assert None in part.epsilons and any(e is not None for e in part.epsilons)


def test_configs_keep_the_datasets_asked_for_and_refuse_an_unknown_one():
    setup = fx.tier("smoke")
    assert {c["dataset"] for c in fx.configs(setup, 0, datasets=["mnist-shards"])} == {
        "mnist-shards"}
    with pytest.raises(ValueError, match="no 'cifar'"):
        fx.configs(setup, 0, datasets=["cifar"])


def test_worst_decile_is_the_mean_of_the_worst_tenth_of_clients():
    accuracy = np.array([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.6, 0.4, 1.0, 0.05, 0.95])
    assert fx.worst_decile(accuracy) == pytest.approx((0.05 + 0.1) / 2)  # ceil(1.2) = 2
    assert fx.worst_decile(np.array([0.4, 0.2, 0.9])) == pytest.approx(0.2)


TINY = fx.FrontierSetup(slices=(fx.Slice("synthetic", (), (2.0, None), 2, 1),), seeds=1,
                        units=("example", "user"))


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
    assert len(first) == len(_all_configs())
    private = first[np.isfinite(first["epsilon"])]
    assert (private["spent_epsilon_max"] <= private["epsilon"]).all()
    federated = private[private["method"] != "local"]
    assert (federated["spent_epsilon_max"] > 0.9 * federated["epsilon"]).all()
    assert (first.loc[first["method"] == "local", "spent_epsilon_max"] == 0).all()
    assert (first["configs_tried"] == GRID_SIZE).all()
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
    assert calls == [configs[3]["method"]]
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
    assert len(runs) == len(fx.configs(setup, 0))
    assert set(runs["n_clients"]) == {5}
    private = runs[np.isfinite(runs["epsilon"])]
    assert (private["spent_epsilon_max"] <= private["epsilon"]).all()
    assert ((runs["test_accuracy"] >= 0) & (runs["test_accuracy"] <= 1)).all()
