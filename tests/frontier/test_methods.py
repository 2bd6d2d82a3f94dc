"""Every method: epsilon = inf equals its plain non-private reference; a private run meets
its target with noise from the exact accountant; refusals give their reason."""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest
from frontier import reference

from fedlib.frontier.engine import Generators, participation
from fedlib.frontier.interface import (
    MAX_EXTENSIONS,
    STEP_SIZES,
    Axis,
    GlobalSchedule,
    Method,
    Schedule,
    Trained,
    UnfairGridError,
    UnitRefusedError,
    check_fair_grid,
    tune,
)
from fedlib.frontier.methods import METHODS, method
from fedlib.frontier.privacy import (
    CALIBRATION_TOLERANCE,
    BudgetExceededError,
    PrivacyUnit,
    Target,
)
from fedlib.privacy.accounting import epsilon

SMALL = {"rounds": 4, "local_steps": 2, "sample_rate": 0.5, "client_rate": 0.7, "lr": 0.5}
EXTRA = {"pfa": {"public_fraction": 0.4, "k": 2, "finetune_share": 0.25},
         "pfa+": {"public_fraction": 0.4, "k": 2},
         "hu-mtl": {"omega_every": 2, "lam": 0.5}, "dp-fedavg-ft": {"finetune_share": 0.5},
         "padpfl": {"mu": 0.1, "finetune_share": 0.25}, "ppsgd": {"alpha": 0.5},
         "dp-ditto": {"lam": 0.3}}
SEED = 3
NAMES = [m.name for m in METHODS]


def small(m: Method):
    return m.hparams_type(**SMALL, **EXTRA.get(m.name, {}))


@pytest.mark.parametrize("name", NAMES)
def test_infinite_epsilon_equals_the_non_private_reference(name, federation):
    m = method(name)
    hp = small(m)
    expected = reference.run(name, federation, hp, SEED)
    for unit in m.units:
        out = m.fit(federation, unit, Target(math.inf, 1e-5), hp, SEED)
        assert out.noise_multiplier == 0.0
        np.testing.assert_allclose(out.test_loss, expected, rtol=1e-9, atol=1e-12)
    other = m.fit(federation, next(iter(m.units)), Target(math.inf), hp, SEED + 1)
    assert not np.allclose(other.test_loss, expected)  # the seed draws the batches


@pytest.mark.parametrize("name", NAMES)
def test_private_run_meets_its_target_with_calibrated_noise(name, federation):
    m = method(name)
    hp = small(m)
    target = Target(3.0, 1e-5)
    free = reference.run(name, federation, hp, SEED)
    for unit in m.units:
        out = m.fit(federation, unit, target, hp, SEED)
        assert np.all(out.spent_epsilon <= target.epsilon)
        if name == "local" and unit is not PrivacyUnit.SILO:
            assert out.noise_multiplier == 0.0 and np.all(out.spent_epsilon == 0)
            assert out.uplink_bytes_per_round == 0
            continue
        rate, steps = {PrivacyUnit.EXAMPLE: (hp.sample_rate, hp.local_steps * hp.rounds),
                       PrivacyUnit.USER: (hp.client_rate, hp.rounds),
                       PrivacyUnit.SILO: (hp.sample_rate, m.silo_steps(hp))}[unit]
        sigma = out.noise_multiplier
        assert epsilon(sigma, rate, steps, target.delta, "pld") <= target.epsilon
        assert epsilon(sigma / (1 + CALIBRATION_TOLERANCE), rate, steps,
                       target.delta, "pld") > target.epsilon
        assert out.spent_epsilon.max() > 0.5 * target.epsilon
        assert not np.allclose(out.test_loss, free)  # noise (and clipping) changed the run
        assert out.cpu_seconds > 0
        assert (out.uplink_bytes_per_round > 0) == (name != "local")


def test_example_unit_accounts_each_client_over_the_rounds_it_took_part_in(federation):
    m = method("dp-fedavg-ft")
    hp = small(m)
    out = m.fit(federation, PrivacyUnit.EXAMPLE, Target(3.0), hp, SEED)
    active = participation(federation.n_clients, hp.rounds, hp.client_rate, Generators(SEED))
    steps = hp.local_steps * active.sum(dim=0).numpy()
    assert len(set(steps)) > 1  # participation differs between clients
    expected = [epsilon(out.noise_multiplier, hp.sample_rate, int(s), 1e-5, "pld")
                for s in steps]
    np.testing.assert_allclose(out.spent_epsilon, expected, rtol=1e-9)
    user = m.fit(federation, PrivacyUnit.USER, Target(3.0), hp, SEED)
    assert np.ptp(user.spent_epsilon) == 0  # one mechanism per round covers everyone


REFUSED = [("ppsgd", PrivacyUnit.EXAMPLE, "theta_i"), ("pfa", PrivacyUnit.USER, "project"),
           ("pfa+", PrivacyUnit.USER, "project"), ("hu-mtl", PrivacyUnit.USER, "Omega")]


@pytest.mark.parametrize("name, unit, reason", REFUSED)
def test_a_method_refuses_a_unit_it_cannot_honour_with_the_reason(name, unit, reason,
                                                                  federation):
    m = method(name)
    assert unit not in m.units and reason in m.refusals[unit]
    with pytest.raises(UnitRefusedError, match=f"does not run in the {unit.value} unit.*{reason}"):
        m.fit(federation, unit, Target(1.0), small(m), SEED)
    with pytest.raises(UnitRefusedError):
        tune(m, federation, unit, Target(1.0))


def test_every_other_method_admits_every_unit():
    refused = {(name, unit) for name, unit, _ in REFUSED}
    for m in METHODS:
        for unit in PrivacyUnit:
            assert (unit in m.units) == ((m.name, unit) not in refused)


def test_every_grid_is_fair_and_holds_its_local_limit():
    for m in METHODS:
        check_fair_grid(m)
        grid = m.grid()
        assert len(grid) == len(set(grid)) and all(type(hp) is m.hparams_type for hp in grid)
        assert {hp.lr for hp in grid} == {0.3, 1.0, 3.0}
        for field, value in m.hparams_type.LOCAL_LIMIT.items():
            assert any(getattr(hp, field) == value for hp in grid), m.name
        with pytest.raises(AttributeError):
            grid[0].lr = 2.0  # frozen
    assert {m.name for m in METHODS if m.global_model} == {"dp-fedavg-ft", "pfa", "pfa+",
                                                           "padpfl"}


@pytest.mark.parametrize("name", ["dp-ditto", "ppsgd", "hu-mtl"])
def test_the_local_limit_trains_each_client_alone(name, federation):
    """At its local limit a personalised method's client models are local training's:
    the same batches, the same steps (client_rate 1 so that every round trains)."""
    m = method(name)
    base = dict(SMALL, client_rate=1.0)
    hp = m.hparams_type(**base, **{k: v for k, v in EXTRA.get(name, {}).items()
                                   if k not in m.hparams_type.LOCAL_LIMIT},
                        **m.hparams_type.LOCAL_LIMIT)
    out = m.fit(federation, PrivacyUnit.USER if name != "hu-mtl" else PrivacyUnit.EXAMPLE,
                Target(math.inf), hp, SEED)
    alone = reference.alone(federation, hp, SEED, draws_before=name == "dp-ditto")
    np.testing.assert_allclose(out.test_loss, alone, rtol=1e-9, atol=1e-12)


class _NoLimit(Method):
    name = "no-limit"
    hparams_type = type("NoLimitParams", (Schedule,), {
        "__annotations__": {}, "GRID": MappingProxyType({"lr": STEP_SIZES,
                                                         "lam": Axis((0.1, 0.5), low=0.0)}),
        "LOCAL_LIMIT": MappingProxyType({"lam": 0.0})})

    def train(self, prepared, unit, calibration, hp, gen, seed):
        raise AssertionError("never trained: the grid is refused first")


class _NoFineTune(_NoLimit):
    name = "no-finetune"
    global_model = True
    hparams_type = type("NoFineTuneParams", (GlobalSchedule,), {
        "__annotations__": {}, "GRID": MappingProxyType({"lr": STEP_SIZES})})


class _BiggerBatch(_NoLimit):
    name = "bigger-batch"
    hparams_type = type("BiggerBatchParams", (Schedule,), {
        "__annotations__": {}, "GRID": MappingProxyType({
            "lr": STEP_SIZES, "sample_rate": Axis((0.1, 0.3), low=0.0, high=1.0),
            "lam": Axis((0.0, 0.5), low=0.0)}),
        "LOCAL_LIMIT": MappingProxyType({"lam": 0.0})})


@pytest.mark.parametrize("cls, reason", [
    (_NoLimit, "lacks its local limit lam = 0"),
    (_NoFineTune, "lacks the shared fine-tuning option"),
    (_BiggerBatch, "varies sample_rate"),
])
def test_an_unfair_grid_is_refused_before_anything_runs(cls, reason, federation):
    with pytest.raises(UnfairGridError, match=reason):
        check_fair_grid(cls())
    with pytest.raises(UnfairGridError, match=reason):
        tune(cls(), federation, PrivacyUnit.USER, Target(1.0), seed=SEED)


def test_axis_extends_past_open_edges_only():
    lr = Axis((0.3, 1.0, 3.0), low=0.0)
    assert lr.beyond(3.0, 1.0) == pytest.approx(9.0)
    assert lr.beyond(0.3, 1.0) == pytest.approx(0.09)
    lam = Axis((0.0, 0.1, 0.5), low=0.0, high=1.0)
    assert lam.beyond(0.0, 0.1) is None  # the local limit is a closed end
    assert lam.beyond(0.5, 0.1) == 1.0  # clipped to the domain
    assert lam.beyond(1.0, 0.5) is None
    k = Axis((1, 3), low=1, integer=True)
    assert k.beyond(3, 1) == 9 and k.beyond(1, 3) is None
    with pytest.raises(ValueError, match="increasing"):
        Axis((1.0, 0.5))


def test_tune_picks_the_best_mean_validation_accuracy(federation):
    result = tune(method("local"), federation, PrivacyUnit.USER, Target(1.0), seed=SEED,
                  rounds=2, local_steps=2)
    scores = [score for _, score in result.scores]
    assert len(scores) >= 3 and len(set(scores)) > 1
    assert result.outcome.mean_val_accuracy == max(scores)
    assert result.best == result.scores[int(np.argmax(scores))][0]
    row = result.outcome.summary()
    assert row["method"] == "local" and row["unit"] == "user" and row["epsilon"] == 1.0
    assert row["hp_lr"] == result.best.lr and row["val_accuracy"] == max(scores)
    assert result.tuning_epsilon == 0.0  # local training releases nothing in this unit
    assert "NOT in a run's epsilon" in tune.__doc__


def test_tune_extends_an_open_edge_until_the_choice_is_interior(federation):
    """With two steps of two rounds every local model is still learning: the largest step
    wins, so the step axis is extended past 3 (to 9, 27) and, still on the edge after
    the allowed extensions, named as an open edge."""
    result = tune(method("local"), federation, PrivacyUnit.USER, Target(1.0), seed=SEED,
                  rounds=1, local_steps=1)
    tried = sorted(hp.lr for hp, _ in result.scores)
    best = result.best.lr
    if best == max(tried):
        assert len(tried) == 3 + MAX_EXTENSIONS and result.open_edges == ("lr high",)
    else:
        assert min(tried) < best < max(tried) and result.open_edges == ()
        assert len(tried) > 3 or best == 1.0


def test_tuning_epsilon_composes_every_fit(federation):
    m = method("dp-fedavg-ft")
    target = Target(2.0)
    result = tune(m, federation, PrivacyUnit.USER, target, seed=SEED, rounds=3,
                  local_steps=1, client_rate=0.5)
    fits = len(result.scores)
    sigma = result.outcome.noise_multiplier
    # every fit ran the same mechanism (fine-tuning is free in this unit): fits x rounds
    assert result.tuning_epsilon == pytest.approx(
        epsilon(sigma, 0.5, 3 * fits, target.delta), rel=1e-9)
    assert result.tuning_epsilon > target.epsilon


def test_fit_rejects_foreign_hyperparameters_and_bad_values(federation):
    with pytest.raises(ValueError, match="takes DittoParams"):
        method("dp-ditto").fit(federation, PrivacyUnit.USER, Target(1.0),
                               method("local").hparams_type(), 0)
    with pytest.raises(ValueError, match="lam must lie in"):
        method("dp-ditto").hparams_type(lam=1.5)
    with pytest.raises(ValueError, match="sample_rate"):
        replace(small(method("local")), sample_rate=0.0)
    with pytest.raises(ValueError, match="finetune_share must lie"):
        method("pfa").hparams_type(finetune_share=1.5)
    with pytest.raises(ValueError, match="varied by the grid"):
        method("local").grid(lr=0.1)


class _Overspending(Method):
    """Reports more compositions than were calibrated for: fit must catch it."""

    name = "overspending"

    def train(self, prepared, unit, calibration, hp, gen, seed):
        models = prepared.zeros(prepared.n_clients)
        return Trained(models, np.full(prepared.n_clients, 2 * calibration.compositions), 0)


def test_fit_raises_when_a_client_spends_more_than_the_target(federation):
    with pytest.raises(BudgetExceededError, match="spent more than epsilon=3"):
        _Overspending().fit(federation, PrivacyUnit.USER, Target(3.0), Schedule(**SMALL), SEED)
