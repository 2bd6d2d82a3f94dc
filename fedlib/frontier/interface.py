"""One interface for every method of the comparison: hyperparameters, outcome, fit, tune.

A method is a :class:`Method`: its ``name``, the privacy units it admits (and for each
one it does not, the reason), a frozen hyperparameter dataclass with a small declared
grid, and ``fit(federation, unit, target, hparams, seed) -> Outcome``. :func:`tune`
picks a configuration of the grid by mean validation accuracy.
"""

from __future__ import annotations

import itertools
import math
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import ClassVar

import numpy as np
import torch
from torch import Tensor

from fedlib.checks import check_count, check_positive, check_probability, check_seed
from fedlib.frontier.engine import (
    BYTES_PER_FLOAT,
    ClientData,
    Generators,
    aggregate,
    evaluate,
    local_sgd,
)
from fedlib.frontier.federations import Federation
from fedlib.frontier.privacy import (
    Calibration,
    PrivacyUnit,
    Target,
    calibrate,
    check_within_target,
    spent_epsilon,
)

__all__ = [
    "GRID_SIZE",
    "Method",
    "Outcome",
    "Prepared",
    "Schedule",
    "Trained",
    "TuneResult",
    "UnitRefusedError",
    "tune",
]

GRID_SIZE = 6
"""Configurations in every method's declared grid (the same for all, a fair tuning)."""


class UnitRefusedError(ValueError):
    """A method asked to run in a privacy unit it cannot honour; the message says why."""


@dataclass(frozen=True)
class Schedule:
    """Hyperparameters every method shares; each method's own dataclass extends it.

    Attributes
    ----------
    rounds
        Communication rounds.
    local_steps
        Local SGD steps per round (for local-only training: per round of the same
        schedule, so every method sees as many gradient steps).
    sample_rate
        Poisson rate of an example in a local step (expected batch ``rate * n_i``).
    client_rate
        Poisson rate of a client in a round (1.0: every client every round).
    clip
        Gradient norm bound: per example (EXAMPLE unit), or of a client's mean
        gradient over the round, i.e. of its update divided by ``lr * local_steps``
        (USER unit).
    lr
        Local step size.
    """

    rounds: int = 30
    local_steps: int = 5
    sample_rate: float = 0.1
    client_rate: float = 1.0
    clip: float = 1.0
    lr: float = 1.0

    GRID: ClassVar[Mapping[str, tuple]] = MappingProxyType({})
    """The declared grid: field -> values, every combination taken (:data:`GRID_SIZE`)."""

    def __post_init__(self) -> None:
        check_count(self.rounds, "rounds", minimum=1)
        check_count(self.local_steps, "local_steps", minimum=1)
        check_probability(self.sample_rate, "sample_rate")
        check_probability(self.client_rate, "client_rate")
        check_positive(self.clip, "clip")
        check_positive(self.lr, "lr")

    @classmethod
    def grid(cls, **fixed: object) -> tuple[Schedule, ...]:
        """The declared grid (:attr:`GRID`), other fields at their defaults or ``fixed``."""
        names = list(cls.GRID)
        known = {f.name for f in fields(cls)}
        unknown = set(fixed) - known
        if unknown:
            raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}; "
                             f"fields: {sorted(known)}.")
        clash = set(fixed) & set(names)
        if clash:
            raise ValueError(f"{sorted(clash)} are varied by the grid; do not fix them.")
        return tuple(cls(**fixed, **dict(zip(names, values, strict=True)))
                     for values in itertools.product(*cls.GRID.values()))

    @property
    def update_clip(self) -> float:
        """Norm bound of a client's whole update in the USER unit: ``clip * lr * local_steps``."""
        return self.clip * self.lr * self.local_steps


@dataclass(frozen=True)
class Prepared:
    """A federation's train, validation and test parts as padded tensors."""

    train: ClientData
    val: ClientData
    test: ClientData
    n_classes: int

    @classmethod
    def of(cls, federation: Federation) -> Prepared:
        """The padded tensors of ``federation``, built once per federation object (no
        method writes into them)."""
        if federation not in _PREPARED:
            _PREPARED[federation] = cls(
                ClientData.pad(federation.x_train, federation.y_train),
                ClientData.pad(federation.x_val, federation.y_val),
                ClientData.pad(federation.x_test, federation.y_test),
                federation.n_classes)
        return _PREPARED[federation]

    @property
    def n_clients(self) -> int:
        return self.train.n_clients

    @property
    def n_params(self) -> int:
        return self.train.x.shape[-1] * self.n_classes

    def zeros(self, *lead: int) -> Tensor:
        """Zero model(s) of shape ``(*lead, D, K)``."""
        return torch.zeros((*lead, self.train.x.shape[-1], self.n_classes), dtype=torch.float64)


_PREPARED: weakref.WeakKeyDictionary[Federation, Prepared] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Trained:
    """What a method's training returns to :meth:`Method.fit`.

    Attributes
    ----------
    models
        Every client's model for evaluation, ``(C, D, K)``.
    compositions
        Per client, the compositions it was exposed to (see
        :func:`fedlib.frontier.privacy.spent_epsilon`).
    uplink_floats
        Floats sent by all clients over the whole run.
    """

    models: Tensor
    compositions: np.ndarray
    uplink_floats: int


@dataclass(frozen=True, eq=False)
class Outcome:
    """The result of one fit.

    Attributes
    ----------
    method, federation, unit, target, hparams, seed
        What was run.
    test_accuracy, test_loss, val_accuracy, val_loss
        Per client, of the client's final (personal or global) model.
    spent_epsilon
        Per client, recomputed from what was run (checked <= target).
    noise_multiplier
        Noise standard deviation / sensitivity used (0.0 without privacy).
    uplink_bytes_per_round
        Bytes all clients sent per round, averaged over the rounds (4 per float).
    cpu_seconds
        Process CPU time of the fit (calibration, training and evaluation).
    """

    method: str
    federation: str
    unit: PrivacyUnit
    target: Target
    hparams: Schedule
    seed: int
    test_accuracy: np.ndarray
    test_loss: np.ndarray
    val_accuracy: np.ndarray
    val_loss: np.ndarray
    spent_epsilon: np.ndarray
    noise_multiplier: float
    uplink_bytes_per_round: float
    cpu_seconds: float

    @property
    def mean_test_accuracy(self) -> float:
        return float(np.mean(self.test_accuracy))

    @property
    def mean_val_accuracy(self) -> float:
        return float(np.mean(self.val_accuracy))

    def summary(self) -> dict[str, object]:
        """One flat row for a tidy table: what was run, the hyperparameters, and the
        per-client results summarised (mean accuracy and loss, spread of accuracy across
        clients, the largest spent epsilon)."""
        row: dict[str, object] = {
            "method": self.method, "federation": self.federation, "unit": self.unit.value,
            "epsilon": self.target.epsilon, "delta": self.target.delta, "seed": self.seed,
        }
        row.update({f"hp_{f.name}": getattr(self.hparams, f.name) for f in fields(self.hparams)})
        row.update({
            "test_accuracy": self.mean_test_accuracy,
            "test_accuracy_std": float(np.std(self.test_accuracy)),
            "test_loss": float(np.mean(self.test_loss)),
            "val_accuracy": self.mean_val_accuracy,
            "spent_epsilon_max": float(np.max(self.spent_epsilon)),
            "noise_multiplier": self.noise_multiplier,
            "uplink_bytes_per_round": self.uplink_bytes_per_round,
            "cpu_seconds": self.cpu_seconds,
        })
        return row


class Method(ABC):
    """A personalised-FL method adapted to the softmax model, run at a stated privacy.

    Subclasses set :attr:`name`, :attr:`hparams_type`, :attr:`refusals` (unit -> reason)
    and implement :meth:`train`.
    """

    name: ClassVar[str]
    hparams_type: ClassVar[type[Schedule]] = Schedule
    refusals: ClassVar[Mapping[PrivacyUnit, str]] = MappingProxyType({})

    @property
    def units(self) -> frozenset[PrivacyUnit]:
        """The privacy units this method admits."""
        return frozenset(u for u in PrivacyUnit if u not in self.refusals)

    def grid(self, **fixed: object) -> tuple[Schedule, ...]:
        """The declared hyperparameter grid (:data:`GRID_SIZE` configurations)."""
        return self.hparams_type.grid(**fixed)

    def calibration(self, prepared: Prepared, unit: PrivacyUnit, target: Target,
                    hp: Schedule) -> Calibration:
        """Noise for the planned run: EXAMPLE over ``local_steps x rounds`` steps at
        ``sample_rate``; USER over ``rounds`` at ``client_rate``."""
        if unit is PrivacyUnit.EXAMPLE:
            return calibrate(unit, target, hp.sample_rate, hp.local_steps * hp.rounds)
        return calibrate(unit, target, hp.client_rate, hp.rounds)

    @abstractmethod
    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: Schedule, gen: Generators, seed: int) -> Trained:
        """Run the method; return the models to evaluate and what was exposed."""

    def check_unit(self, unit: PrivacyUnit) -> None:
        """Raise :class:`UnitRefusedError` with the reason if ``unit`` is not admitted."""
        if not isinstance(unit, PrivacyUnit):
            raise ValueError(f"unit must be a PrivacyUnit, got {unit!r}.")
        if unit in self.refusals:
            raise UnitRefusedError(f"{self.name} does not run in the {unit.value} unit: "
                                   f"{self.refusals[unit]}")

    def fit(self, federation: Federation, unit: PrivacyUnit, target: Target,
            hparams: Schedule | None = None, seed: int = 0) -> Outcome:
        """Train on ``federation`` at ``target`` in ``unit``; evaluate every client.

        Raises
        ------
        UnitRefusedError
            If the method cannot honour ``unit``.
        fedlib.frontier.privacy.BudgetExceededError
            If a client's recomputed epsilon exceeds the target (never expected).
        """
        started = time.process_time()
        self.check_unit(unit)
        if not isinstance(target, Target):
            raise ValueError(f"target must be a Target(epsilon, delta), got {target!r}.")
        hp = self.hparams_type() if hparams is None else hparams
        if type(hp) is not self.hparams_type:
            raise ValueError(f"{self.name} takes {self.hparams_type.__name__} hyperparameters, "
                             f"got {type(hp).__name__}.")
        check_seed(seed)
        prepared = Prepared.of(federation)
        calibration = self.calibration(prepared, unit, target, hp)
        trained = self.train(prepared, unit, calibration, hp, Generators(seed), seed)
        spent = spent_epsilon(calibration, trained.compositions)
        check_within_target(spent, target)
        test_acc, test_loss = evaluate(trained.models, prepared.test)
        val_acc, val_loss = evaluate(trained.models, prepared.val)
        return Outcome(
            method=self.name, federation=federation.name, unit=unit, target=target,
            hparams=hp, seed=seed, test_accuracy=test_acc, test_loss=test_loss,
            val_accuracy=val_acc, val_loss=val_loss, spent_epsilon=spent,
            noise_multiplier=calibration.noise_multiplier,
            uplink_bytes_per_round=BYTES_PER_FLOAT * trained.uplink_floats / hp.rounds,
            cpu_seconds=time.process_time() - started,
        )

    # -- building blocks shared by the federated methods --------------------------------

    @staticmethod
    def local_updates(start: Tensor, data: ClientData, unit: PrivacyUnit,
                      calibration: Calibration, hp: Schedule, gen: Generators,
                      extra: Callable[[Tensor], Tensor] | None = None) -> Tensor:
        """Every client's update ``(C, D, K)`` after ``local_steps`` from ``start`` (one
        model ``(D, K)`` for all, or one per client): DP-SGD (per-example clip, noise
        ``sigma * clip``) in the EXAMPLE unit when private, plain SGD otherwise."""
        if start.dim() == 2:
            start = start.expand(data.n_clients, *start.shape)
        example_dp = unit is PrivacyUnit.EXAMPLE and calibration.private
        end = local_sgd(start, data, hp.local_steps, hp.lr, hp.sample_rate, gen,
                        clip=hp.clip if example_dp else None,
                        noise_std=calibration.noise_multiplier * hp.clip if example_dp else 0.0,
                        extra=extra)
        return end - start

    @staticmethod
    def server_mean(updates: Tensor, active: Tensor, unit: PrivacyUnit,
                    calibration: Calibration, hp: Schedule, gen: Generators,
                    weights: Tensor | None = None, bound: float | None = None) -> Tensor:
        """The server's estimate of the (weighted) mean update: in the USER unit when
        private, each update clipped to ``bound`` (default ``hp.update_clip``) and noise
        ``sigma * bound * max(weights)`` added once to the weighted sum."""
        user_dp = unit is PrivacyUnit.USER and calibration.private
        bound = hp.update_clip if bound is None else bound
        top = 1.0 if weights is None else float(weights.max())
        return aggregate(updates, active, hp.client_rate, gen, weights=weights,
                         clip=bound if user_dp else None,
                         noise_std=calibration.noise_multiplier * bound * top if user_dp else 0.0)

    @staticmethod
    def exposure(unit: PrivacyUnit, active: Tensor, hp: Schedule) -> np.ndarray:
        """Compositions per client: EXAMPLE, local steps of the rounds it took part in;
        USER, every round run (the subsampled mechanism covers absent clients too)."""
        if unit is PrivacyUnit.EXAMPLE:
            return hp.local_steps * active.sum(dim=0).numpy().astype(np.int64)
        return np.full(active.shape[1], active.shape[0], dtype=np.int64)


@dataclass(frozen=True, eq=False)
class TuneResult:
    """The configuration :func:`tune` chose, its outcome, and every configuration's
    mean validation accuracy (in grid order)."""

    best: Schedule
    outcome: Outcome
    scores: tuple[tuple[Schedule, float], ...]


def tune(method: Method, federation: Federation, unit: PrivacyUnit, target: Target,
         seed: int = 0, **fixed: object) -> TuneResult:
    """Fit every configuration of ``method``'s grid; keep the best mean validation accuracy.

    Each configuration runs at ``target``; ties go to the first in grid order. The
    privacy cost of tuning itself (choosing among the grid's runs on the clients'
    validation data) is NOT accounted: the reported epsilon is that of the chosen run
    alone, as in the papers, and is an underestimate of the whole procedure's.
    ``fixed`` overrides fields the grid does not vary (e.g. ``rounds=10``).
    """
    method.check_unit(unit)
    best: tuple[float, Schedule, Outcome] | None = None
    scores = []
    for hp in method.grid(**fixed):
        outcome = method.fit(federation, unit, target, hp, seed)
        score = outcome.mean_val_accuracy
        scores.append((hp, score))
        rank = score if math.isfinite(score) else -math.inf  # a diverged run never wins
        if best is None or rank > best[0]:
            best = (rank, hp, outcome)
    assert best is not None
    return TuneResult(best[1], best[2], tuple(scores))
