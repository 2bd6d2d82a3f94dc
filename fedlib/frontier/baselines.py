"""Two reference points of the comparison: local-only training and DP-FedAvg with local
fine-tuning."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from torch import Tensor

from fedlib.frontier.engine import Generators, participation
from fedlib.frontier.interface import (
    FINETUNE,
    STEP_SIZES,
    Axis,
    GlobalSchedule,
    Method,
    Prepared,
    Schedule,
    Trained,
)
from fedlib.frontier.privacy import Calibration, PrivacyUnit, Target, calibrate

__all__ = ["DPFedAvgFineTune", "FineTuneParams", "LocalOnly", "LocalParams", "fedavg_rounds"]


@dataclass(frozen=True)
class LocalParams(Schedule):
    """Local-only training: ``rounds x local_steps`` SGD steps on the client's own data;
    its grid is the step size alone (the batch is the schedule's, as for every method)."""

    GRID: ClassVar[Mapping[str, Axis]] = MappingProxyType({"lr": STEP_SIZES})


class LocalOnly(Method):
    """Every client trains its own softmax model alone. In the EXAMPLE and USER units
    nothing is sent, so nothing is spent (epsilon 0 at any target): the floor
    personalisation must beat. In the SILO unit the model itself must be private: its
    ``rounds x local_steps`` steps are DP-SGD, calibrated to the target.
    """

    name = "local"
    hparams_type = LocalParams
    local_only = True

    def calibration(self, prepared: Prepared, unit: PrivacyUnit, target: Target,
                    hp: Schedule) -> Calibration:
        """SILO: DP-SGD over ``rounds x local_steps``; otherwise no release, no noise."""
        steps = hp.local_budget if unit is PrivacyUnit.SILO else 0
        return calibrate(unit, target, hp.sample_rate, steps)

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: Schedule, gen: Generators, seed: int) -> Trained:
        models = self.local_training(prepared.zeros(prepared.n_clients), prepared.train, unit,
                                     calibration, hp, hp.local_budget, gen)
        steps = hp.local_budget if unit is PrivacyUnit.SILO else 0
        return Trained(models, np.full(prepared.n_clients, steps, dtype=np.int64), 0)


@dataclass(frozen=True)
class FineTuneParams(GlobalSchedule):
    """DP-FedAvg, then fine-tuning (the shared option of every global-model method)."""

    GRID: ClassVar[Mapping[str, Axis]] = MappingProxyType(
        {"lr": STEP_SIZES, "finetune_share": FINETUNE})


def fedavg_rounds(method: Method, prepared: Prepared, unit: PrivacyUnit,
                  calibration: Calibration, hp: Schedule, gen: Generators
                  ) -> tuple[Tensor, Tensor, int]:
    """DP-FedAvg's global model: (model ``(D, K)``, participation ``(rounds, C)``, floats sent).

    Each round the sampled clients run ``local_steps`` from the global model (DP-SGD in
    the EXAMPLE and SILO units) and the server adds the mean update (clipped and noised
    once in the USER unit).
    """
    n = prepared.n_clients
    active = participation(n, hp.rounds, hp.client_rate, gen)
    w = prepared.zeros()
    floats = 0
    for t in range(hp.rounds):
        rows, part = method.round_part(prepared.train, active[t])
        updates = method.local_updates(w, part, unit, calibration, hp, gen)
        w = w + method.server_mean(updates, rows, n, unit, calibration, hp, gen)
        floats += len(rows) * prepared.n_params
    return w, active, floats


class DPFedAvgFineTune(Method):
    """DP-FedAvg (McMahan et al. 2018 in the USER unit; local DP-SGD uploads in the
    EXAMPLE and SILO units), each client then fine-tuning the released global model on its
    own data (free in the EXAMPLE and USER units: never sent; DP-SGD in the SILO unit).
    The baseline every paper's personalisation is measured against.
    """

    name = "dp-fedavg-ft"
    hparams_type = FineTuneParams
    global_model = True

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: FineTuneParams, gen: Generators, seed: int) -> Trained:
        w, active, floats = fedavg_rounds(self, prepared, unit, calibration, hp, gen)
        return Trained(w.expand(prepared.n_clients, *w.shape), self.exposure(unit, active, hp),
                       floats)
