"""Every method: epsilon = inf equals its plain non-private reference; a private run meets
its target with noise from the exact accountant; refusals give their reason."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from frontier import reference

from fedlib.frontier.engine import Generators, participation
from fedlib.frontier.interface import (
    GRID_SIZE,
    Method,
    Schedule,
    Trained,
    UnitRefusedError,
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
EXTRA = {"pfa": {"public_fraction": 0.4, "k": 2}, "pfa+": {"public_fraction": 0.4, "k": 2},
         "hu-mtl": {"omega_every": 2, "lam": 0.5}, "dp-fedavg-ft": {"finetune_steps": 3},
         "padpfl": {"mu": 0.1}, "ppsgd": {"alpha": 0.5}, "dp-ditto": {"lam": 0.3}}
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
        if name == "local":
            assert out.noise_multiplier == 0.0 and np.all(out.spent_epsilon == 0)
            assert out.uplink_bytes_per_round == 0
            continue
        rate, steps = ((hp.sample_rate, hp.local_steps * hp.rounds)
                       if unit is PrivacyUnit.EXAMPLE else (hp.client_rate, hp.rounds))
        sigma = out.noise_multiplier
        assert epsilon(sigma, rate, steps, target.delta) <= target.epsilon
        assert epsilon(sigma / (1 + CALIBRATION_TOLERANCE), rate, steps,
                       target.delta) > target.epsilon
        assert out.spent_epsilon.max() > 0.5 * target.epsilon
        assert not np.allclose(out.test_loss, free)  # noise (and clipping) changed the run
        assert out.uplink_bytes_per_round > 0 and out.cpu_seconds > 0


def test_example_unit_accounts_each_client_over_the_rounds_it_took_part_in(federation):
    m = method("dp-fedavg-ft")
    hp = small(m)
    out = m.fit(federation, PrivacyUnit.EXAMPLE, Target(3.0), hp, SEED)
    active = participation(federation.n_clients, hp.rounds, hp.client_rate, Generators(SEED))
    steps = hp.local_steps * active.sum(dim=0).numpy()
    assert len(set(steps)) > 1  # participation differs between clients
    expected = [epsilon(out.noise_multiplier, hp.sample_rate, int(s), 1e-5) for s in steps]
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


def test_every_other_method_admits_both_units():
    refused = {(name, unit) for name, unit, _ in REFUSED}
    for m in METHODS:
        for unit in PrivacyUnit:
            assert (unit in m.units) == ((m.name, unit) not in refused)


def test_every_method_declares_a_grid_of_the_same_size():
    for m in METHODS:
        grid = m.grid()
        assert len(grid) == GRID_SIZE == len(set(grid)), m.name
        assert all(type(hp) is m.hparams_type for hp in grid)
        with pytest.raises(AttributeError):
            grid[0].lr = 2.0  # frozen


def test_tune_picks_the_best_mean_validation_accuracy(federation):
    result = tune(method("local"), federation, PrivacyUnit.USER, Target(1.0), seed=SEED,
                  rounds=2, local_steps=2)
    scores = [score for _, score in result.scores]
    assert len(scores) == GRID_SIZE and len(set(scores)) > 1
    assert result.outcome.mean_val_accuracy == max(scores)
    assert result.best == result.scores[int(np.argmax(scores))][0]
    row = result.outcome.summary()
    assert row["method"] == "local" and row["unit"] == "user" and row["epsilon"] == 1.0
    assert row["hp_lr"] == result.best.lr and row["val_accuracy"] == max(scores)
    assert "NOT accounted" in tune.__doc__


def test_fit_rejects_foreign_hyperparameters_and_bad_values(federation):
    with pytest.raises(ValueError, match="takes DittoParams"):
        method("dp-ditto").fit(federation, PrivacyUnit.USER, Target(1.0),
                               method("local").hparams_type(), 0)
    with pytest.raises(ValueError, match="lam must lie in"):
        method("dp-ditto").hparams_type(lam=1.5)
    with pytest.raises(ValueError, match="sample_rate"):
        replace(small(method("local")), sample_rate=0.0)
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
