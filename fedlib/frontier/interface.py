"""One interface for every method of the comparison: hyperparameters, outcome, fit, tune.

A method is a :class:`Method`: its ``name``, the privacy units it admits (and for each
one it does not, the reason), a frozen hyperparameter dataclass with a declared grid of
:class:`Axis` values, and ``fit(federation, unit, target, hparams, seed) -> Outcome``.
:func:`tune` picks a configuration by mean validation accuracy, extending the grid past an
open edge the choice lands on; :func:`check_fair_grid` refuses a grid that would favour or
handicap a method (see its rules).
"""

from __future__ import annotations

import itertools
import math
import time
import weakref
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
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
    tuning_epsilon,
)

__all__ = [
    "CAPACITY_FIELDS",
    "FINETUNE",
    "MAX_EXTENSIONS",
    "Axis",
    "GlobalSchedule",
    "Method",
    "Outcome",
    "Prepared",
    "Schedule",
    "Trained",
    "TuneResult",
    "UnfairGridError",
    "UnitRefusedError",
    "check_fair_grid",
    "tune",
]

MAX_EXTENSIONS = 2
"""Values :func:`tune` may add past each open end of each axis of a grid."""


class UnitRefusedError(ValueError):
    """A method asked to run in a privacy unit it cannot honour; the message says why."""


class UnfairGridError(ValueError):
    """A method's declared grid breaks a rule of the fair comparison; the message says which."""


@dataclass(frozen=True)
class Axis:
    """A hyperparameter's declared values and the closed ends of its domain.

    An end of the values that is not a closed end of the domain (``low``, ``high``; None
    for an open domain) is an open edge: a choice there may be an artefact of where the
    grid stopped, so :func:`tune` extends past it (:meth:`beyond`). A value at a closed
    end is a limit of the method (Ditto's lambda = 0 is local training) and needs none.
    """

    values: tuple[float, ...]
    low: float | None = None
    high: float | None = None
    integer: bool = False

    def __post_init__(self) -> None:
        if len(self.values) < 2 or list(self.values) != sorted(set(self.values)):
            raise ValueError(f"an axis needs at least two increasing values, got {self.values}.")
        if (self.low is not None and self.values[0] < self.low) or (
                self.high is not None and self.values[-1] > self.high):
            raise ValueError(f"values {self.values} leave the domain [{self.low}, {self.high}].")

    def beyond(self, value: float, inner: float) -> float | None:
        """The next value past ``value`` away from its neighbour ``inner``, at the grid's
        spacing there (geometric between positive values, else arithmetic), clipped to
        the domain; None where ``value`` is a closed end."""
        upward = value > inner
        end = self.high if upward else self.low
        if end is not None and value == end:
            return None
        if value > 0 and inner > 0:
            nxt = value * (value / inner)
        else:
            nxt = value + (value - inner)
        if end is not None:
            nxt = min(nxt, end) if upward else max(nxt, end)
        if self.integer:
            nxt = int(round(nxt))
            if nxt == value:
                nxt = value + (1 if upward else -1)
        return None if nxt == value else nxt

    def is_closed(self, value: float) -> bool:
        """Whether ``value`` is a closed end of the domain."""
        return value in (self.low, self.high)


STEP_SIZES = Axis((0.3, 1.0, 3.0), low=0.0)
"""Every method's step-size axis (its domain is open above; 0 is never reached)."""

FINETUNE = Axis((0.0, 0.2, 1.0), low=0.0, high=1.0)
"""The fine-tuning every global-model method gets: steps as a share of local training's
own budget (``rounds x local_steps``), from none to all of it."""

CAPACITY_FIELDS = ("rounds", "local_steps", "sample_rate", "client_rate", "clip")
"""Fields the schedule fixes for every method alike: no method's grid may vary one (a
larger batch or more steps for one method alone is more capacity, not a better method)."""


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
        Gradient norm bound: per example (EXAMPLE and SILO units), or of a client's mean
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

    GRID: ClassVar[Mapping[str, Axis]] = MappingProxyType({})
    """The declared grid: field -> axis, every combination of the axes' values taken."""
    LOCAL_LIMIT: ClassVar[Mapping[str, float]] = MappingProxyType({})
    """Values at which the method's client models reduce to local training (each must be
    in the grid: :func:`check_fair_grid`)."""

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
                     for values in itertools.product(*(a.values for a in cls.GRID.values())))

    @property
    def update_clip(self) -> float:
        """Norm bound of a client's whole update in the USER unit: ``clip * lr * local_steps``."""
        return self.clip * self.lr * self.local_steps

    @property
    def local_budget(self) -> int:
        """Local training's own steps: ``rounds x local_steps``."""
        return self.rounds * self.local_steps

    @property
    def finetune_steps(self) -> int:
        """Steps of fine-tuning after training (0 unless a :class:`GlobalSchedule`)."""
        return 0


@dataclass(frozen=True)
class GlobalSchedule(Schedule):
    """The schedule of a method that trains one global model: each client then
    fine-tunes it on its own data for ``finetune_share`` of local training's budget."""

    finetune_share: float = 0.0
    LOCAL_LIMIT: ClassVar[Mapping[str, float]] = MappingProxyType({"finetune_share": 1.0})

    def __post_init__(self) -> None:
        super().__post_init__()
        share = self.finetune_share
        if not isinstance(share, int | float) or isinstance(share, bool) or not 0 <= share <= 1:
            raise ValueError(f"finetune_share must lie in [0, 1] (a share of rounds x "
                             f"local_steps), got {share!r}.")

    @property
    def finetune_steps(self) -> int:
        return int(round(self.finetune_share * self.local_budget))


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
        :func:`fedlib.frontier.privacy.spent_epsilon`), fine-tuning not included.
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
        Per client, of the client's final (personal, fine-tuned or global) model.
    spent_epsilon
        Per client, recomputed from what was run (checked <= target).
    calibration
        The run's noise: multiplier, sampling rate, planned compositions.
    compositions
        Per client, the compositions it took part in (fine-tuning included).
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
    calibration: Calibration
    compositions: np.ndarray
    uplink_bytes_per_round: float
    cpu_seconds: float

    @property
    def noise_multiplier(self) -> float:
        """Noise standard deviation / sensitivity used (0.0 without privacy)."""
        return self.calibration.noise_multiplier

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


def _active_rows(active: Tensor) -> Tensor:
    """Indices of the clients marked in a boolean ``(C,)`` row."""
    return torch.nonzero(active, as_tuple=False).reshape(-1)


class Method(ABC):
    """A personalised-FL method adapted to the softmax model, run at a stated privacy.

    Subclasses set :attr:`name`, :attr:`hparams_type`, :attr:`refusals` (unit -> reason),
    :attr:`global_model` (one model for every client, which each client may fine-tune:
    its hyperparameters are a :class:`GlobalSchedule`), :attr:`personal_steps` where a
    round also trains a personal model on the client's data, and implement :meth:`train`.
    """

    name: ClassVar[str]
    hparams_type: ClassVar[type[Schedule]] = Schedule
    refusals: ClassVar[Mapping[PrivacyUnit, str]] = MappingProxyType({})
    global_model: ClassVar[bool] = False
    local_only: ClassVar[bool] = False

    @property
    def units(self) -> frozenset[PrivacyUnit]:
        """The privacy units this method admits."""
        return frozenset(u for u in PrivacyUnit if u not in self.refusals)

    def grid(self, **fixed: object) -> tuple[Schedule, ...]:
        """The declared hyperparameter grid."""
        return self.hparams_type.grid(**fixed)

    def personal_steps(self, hp: Schedule) -> int:
        """Steps per round a sampled client takes on its own data besides those behind
        its upload (a personal model's): DP-SGD steps in the SILO unit."""
        return 0

    def silo_steps(self, hp: Schedule) -> int:
        """Planned DP-SGD steps on a client's examples in the SILO unit (a client present
        every round): upload and personal steps of every round, then fine-tuning."""
        return (hp.local_steps + self.personal_steps(hp)) * hp.rounds + hp.finetune_steps

    def calibration(self, prepared: Prepared, unit: PrivacyUnit, target: Target,
                    hp: Schedule) -> Calibration:
        """Noise for the planned run: EXAMPLE over ``local_steps x rounds`` steps at
        ``sample_rate``; USER over ``rounds`` at ``client_rate``; SILO over
        :meth:`silo_steps` at ``sample_rate``."""
        if unit is PrivacyUnit.EXAMPLE:
            return calibrate(unit, target, hp.sample_rate, hp.local_steps * hp.rounds)
        if unit is PrivacyUnit.SILO:
            return calibrate(unit, target, hp.sample_rate, self.silo_steps(hp))
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
            hparams: Schedule | None = None, seed: int = 0,
            shared: dict | None = None) -> Outcome:
        """Train on ``federation`` at ``target`` in ``unit``; fine-tune a global model
        (:attr:`GlobalSchedule.finetune_share`); evaluate every client.

        ``shared`` (a dict a tuning passes to all its fits) keeps trained global models,
        so that configurations differing only in fine-tuning, at the same noise, train
        once: training never depends on the fine-tuning that follows (fine-tuning draws
        from streams of its own).

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
        key = None
        if self.global_model and shared is not None:
            key = (id(prepared), unit, calibration.noise_multiplier, seed,
                   replace(hp, finetune_share=0.0))
        if key is not None and key in shared:
            trained = shared[key]
        else:
            trained = self.train(prepared, unit, calibration, hp, Generators(seed), seed)
            if key is not None:
                shared[key] = trained
        models, compositions = trained.models, trained.compositions
        if hp.finetune_steps:
            models = self.local_training(models, prepared.train, unit, calibration, hp,
                                         hp.finetune_steps, Generators(seed, stream=1))
            if unit is PrivacyUnit.SILO:
                compositions = compositions + hp.finetune_steps
        spent = spent_epsilon(calibration, compositions)
        check_within_target(spent, target)
        test_acc, test_loss = evaluate(models, prepared.test)
        val_acc, val_loss = evaluate(models, prepared.val)
        return Outcome(
            method=self.name, federation=federation.name, unit=unit, target=target,
            hparams=hp, seed=seed, test_accuracy=test_acc, test_loss=test_loss,
            val_accuracy=val_acc, val_loss=val_loss, spent_epsilon=spent,
            calibration=calibration, compositions=np.asarray(compositions),
            uplink_bytes_per_round=BYTES_PER_FLOAT * trained.uplink_floats / hp.rounds,
            cpu_seconds=time.process_time() - started,
        )

    # -- building blocks shared by the methods ------------------------------------------

    @staticmethod
    def example_dp(unit: PrivacyUnit, calibration: Calibration) -> bool:
        """Whether steps on a client's examples are DP-SGD (EXAMPLE and SILO, private)."""
        return unit in (PrivacyUnit.EXAMPLE, PrivacyUnit.SILO) and calibration.private

    @classmethod
    def local_training(cls, models: Tensor, data: ClientData, unit: PrivacyUnit,
                       calibration: Calibration, hp: Schedule, steps: int,
                       gen: Generators) -> Tensor:
        """``steps`` SGD steps of every client from its model ``(C, D, K)`` on data the
        client keeps: DP-SGD in the SILO unit when private (nothing is sent: plain SGD in
        the others)."""
        silo = unit is PrivacyUnit.SILO and calibration.private
        return local_sgd(models, data, steps, hp.lr, hp.sample_rate, gen,
                         clip=hp.clip if silo else None,
                         noise_std=calibration.noise_multiplier * hp.clip if silo else 0.0)

    @classmethod
    def local_updates(cls, start: Tensor, data: ClientData, unit: PrivacyUnit,
                      calibration: Calibration, hp: Schedule, gen: Generators,
                      extra: Callable[[Tensor], Tensor] | None = None) -> Tensor:
        """The update ``(c, D, K)`` of each client of ``data`` (a round's part, see
        :meth:`round_part`) after ``local_steps`` from ``start`` (one model ``(D, K)``
        for all, or one per client): DP-SGD (per-example clip, noise ``sigma * clip``)
        in the EXAMPLE and SILO units when private, plain SGD otherwise."""
        if start.dim() == 2:
            start = start.expand(data.n_clients, *start.shape)
        dp = cls.example_dp(unit, calibration)
        end = local_sgd(start, data, hp.local_steps, hp.lr, hp.sample_rate, gen,
                        clip=hp.clip if dp else None,
                        noise_std=calibration.noise_multiplier * hp.clip if dp else 0.0,
                        extra=extra)
        return end - start

    @staticmethod
    def round_part(data: ClientData, active: Tensor) -> tuple[Tensor, ClientData]:
        """The indices of a round's clients (boolean ``(C,)``) and their part of ``data``:
        only they compute (the others' batches are still drawn, so that a run's batches do
        not depend on who takes part)."""
        rows = _active_rows(active)
        return rows, data.take(rows)

    @staticmethod
    def server_mean(updates: Tensor, rows: Tensor, n_clients: int, unit: PrivacyUnit,
                    calibration: Calibration, hp: Schedule, gen: Generators,
                    weights: Tensor | None = None, bound: float | None = None) -> Tensor:
        """The server's estimate of the (weighted) mean update from the updates ``(c, D,
        K)`` of the round's clients ``rows``: in the USER unit when private, each update
        clipped to ``bound`` (default ``hp.update_clip``) and noise
        ``sigma * bound * max(weights)`` added once to the weighted sum; divided by
        ``client_rate`` times the sum of all ``n_clients`` weights."""
        user_dp = unit is PrivacyUnit.USER and calibration.private
        bound = hp.update_clip if bound is None else bound
        w = torch.ones(n_clients, dtype=torch.float64) if weights is None else weights
        top = float(w.max())
        return aggregate(updates, w[rows], hp.client_rate, float(w.sum()), gen,
                         clip=bound if user_dp else None,
                         noise_std=calibration.noise_multiplier * bound * top if user_dp
                         else 0.0)

    def exposure(self, unit: PrivacyUnit, active: Tensor, hp: Schedule) -> np.ndarray:
        """Compositions per client, fine-tuning aside: EXAMPLE, the local steps of the
        rounds it took part in; SILO, those and its personal steps; USER, every round run
        (the subsampled mechanism covers absent clients too)."""
        taken = active.sum(dim=0).numpy().astype(np.int64)
        if unit is PrivacyUnit.EXAMPLE:
            return hp.local_steps * taken
        if unit is PrivacyUnit.SILO:
            return (hp.local_steps + self.personal_steps(hp)) * taken
        return np.full(active.shape[1], active.shape[0], dtype=np.int64)


def check_fair_grid(method: Method) -> None:
    """Refuse a grid that breaks a rule of the fair comparison.

    * Every method tunes its step size on the same axis (:data:`STEP_SIZES`' values).
    * No method varies a capacity field (:data:`CAPACITY_FIELDS`): the schedule's batch,
      steps and clipping are the same for all.
    * A method whose client models have a local limit (Ditto's lambda = 0, PPSGD's
      alpha = 0, the multi-task coupling at 0) has that limit in its grid
      (``LOCAL_LIMIT``), so local training is one of its choices.
    * A global-model method has the shared fine-tuning option (:data:`FINETUNE`), up to
      local training's own budget.

    Raises
    ------
    UnfairGridError
        Naming the method, the rule and the fix.
    """
    grid = method.hparams_type.GRID
    if "lr" not in grid or grid["lr"].values != STEP_SIZES.values:
        raise UnfairGridError(f"{method.name}: every method tunes lr over {STEP_SIZES.values}; "
                              "declare GRID['lr'] = STEP_SIZES.")
    varied = sorted(set(grid) & set(CAPACITY_FIELDS))
    if varied:
        raise UnfairGridError(f"{method.name}: its grid varies {', '.join(varied)}, which the "
                              "schedule fixes for every method alike; drop the axis.")
    if method.local_only:
        return
    if method.global_model:
        if not issubclass(method.hparams_type, GlobalSchedule) or grid.get("finetune_share") \
                != FINETUNE:
            raise UnfairGridError(f"{method.name} trains one global model but lacks the shared "
                                  "fine-tuning option: its hyperparameters must be a "
                                  "GlobalSchedule with GRID['finetune_share'] = FINETUNE.")
    limit = method.hparams_type.LOCAL_LIMIT
    if not limit:
        raise UnfairGridError(f"{method.name}: no local limit declared (LOCAL_LIMIT): say "
                              "which value of which field makes its models local training.")
    for name, value in limit.items():
        if name not in grid or value not in grid[name].values:
            raise UnfairGridError(f"{method.name}: its grid lacks its local limit {name} = "
                                  f"{value:g}; add it to GRID[{name!r}].")


@dataclass(frozen=True, eq=False)
class TuneResult:
    """The configuration :func:`tune` chose, its outcome on each seed tuned over (in the
    seeds' order; :attr:`outcome` is the first), every configuration's validation
    accuracy averaged over those seeds (in the order fitted), the axes whose chosen value
    stays on an open edge after :data:`MAX_EXTENSIONS` extensions (``"lr high"``), and
    the epsilon of the whole tuning (every fit on every seed composed,
    :func:`tuning_epsilon`)."""

    best: Schedule
    outcomes: tuple[Outcome, ...]
    scores: tuple[tuple[Schedule, float], ...]
    open_edges: tuple[str, ...] = ()
    tuning_epsilon: float = math.nan

    @property
    def outcome(self) -> Outcome:
        return self.outcomes[0]


def _rank(score: float) -> float:
    return score if math.isfinite(score) else -math.inf  # a diverged run never wins


def _line(fitted: Mapping[Schedule, object], best: Schedule, name: str) -> list[float]:
    """The values of axis ``name`` fitted with every other field as in ``best``."""
    others = {f.name: getattr(best, f.name) for f in fields(best) if f.name != name}
    return sorted({getattr(hp, name) for hp in fitted
                   if all(getattr(hp, k) == v for k, v in others.items())})


def _edges(axis: Axis, line: list[float], value: float) -> list[tuple[str, float]]:
    """The open edges ``value`` sits on along ``line``: (side, next value past it)."""
    out = []
    if len(line) < 2:
        return out
    for side, end, inner in (("low", line[0], line[1]), ("high", line[-1], line[-2])):
        if value == end:
            nxt = axis.beyond(value, inner)
            if nxt is not None:
                out.append((side, nxt))
    return out


def tune(method: Method, federation: Federation | tuple[Federation, ...], unit: PrivacyUnit,
         target: Target, seed: int | tuple[int, ...] = 0, **fixed: object) -> TuneResult:
    """Fit every configuration of ``method``'s grid on each (federation, seed) pair; keep
    the best validation accuracy averaged over the pairs, extending the grid past an open
    edge the choice lands on.

    ``federation`` and ``seed`` are one each, or tuples of equal length (a federation is
    split by its seed). Each configuration runs at ``target``; ties go to the first
    fitted. While the best configuration sits on an open edge of an axis (along the line
    of configurations that differ from it in that axis only), the next value past that
    edge is fitted, at most :data:`MAX_EXTENSIONS` per edge; the edges still open at the
    end are named in the result. ``fixed`` overrides fields the grid does not vary (e.g.
    ``rounds=10``).

    The privacy cost of tuning itself (choosing among the fits on the clients' validation
    data) is NOT in a run's epsilon: the result states it apart
    (:attr:`TuneResult.tuning_epsilon`, every fit's release composed).
    """
    federations = federation if isinstance(federation, tuple) else (federation,)
    seeds = seed if isinstance(seed, tuple) else (seed,)
    if len(federations) != len(seeds) or not seeds:
        raise ValueError(f"tune needs one seed per federation, got {len(seeds)} seeds for "
                         f"{len(federations)} federations.")
    method.check_unit(unit)
    check_fair_grid(method)
    axes = method.hparams_type.GRID
    shared: dict = {}
    fitted: dict[Schedule, tuple[Outcome, ...]] = {}
    score: dict[Schedule, float] = {}

    def fit(hp: Schedule) -> None:
        if hp not in fitted:
            fitted[hp] = tuple(method.fit(f, unit, target, hp, s, shared)
                               for f, s in zip(federations, seeds, strict=True))
            score[hp] = float(np.mean([o.mean_val_accuracy for o in fitted[hp]]))

    def best() -> Schedule:
        return max(fitted, key=lambda hp: _rank(score[hp]))  # first of equals wins

    for hp in method.grid(**fixed):
        fit(hp)
    used: Counter[tuple[str, str]] = Counter()
    while True:
        chosen = best()
        added = False
        for name, axis in axes.items():
            for side, nxt in _edges(axis, _line(fitted, chosen, name), getattr(chosen, name)):
                if used[name, side] < MAX_EXTENSIONS:
                    used[name, side] += 1
                    fit(replace(chosen, **{name: nxt}))
                    added = True
        if not added:
            break
    chosen = best()
    open_edges = tuple(f"{name} {side}" for name, axis in axes.items()
                       for side, _ in _edges(axis, _line(fitted, chosen, name),
                                             getattr(chosen, name)))
    outcomes = [o for runs in fitted.values() for o in runs]
    spent = tuning_epsilon([o.calibration for o in outcomes],
                           [int(o.compositions.max()) for o in outcomes]) \
        if target.private else math.inf
    return TuneResult(chosen, fitted[chosen], tuple(score.items()), open_edges, spent)
