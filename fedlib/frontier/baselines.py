"""Two reference points of the comparison: local-only training and DP-FedAvg with local
fine-tuning."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from torch import Tensor

from fedlib.checks import check_count
from fedlib.frontier.engine import Generators, local_sgd, participation
from fedlib.frontier.interface import Method, Prepared, Schedule, Trained
from fedlib.frontier.privacy import Calibration, PrivacyUnit, Target, calibrate

__all__ = ["DPFedAvgFineTune", "FineTuneParams", "LocalOnly", "LocalParams"]


@dataclass(frozen=True)
class LocalParams(Schedule):
    """Local-only training: ``rounds x local_steps`` SGD steps on the client's own data
    (its grid varies the batch, through ``sample_rate``, where the others vary their own
    parameter)."""

    GRID: ClassVar[Mapping[str, tuple]] = MappingProxyType(
        {"lr": (0.3, 1.0, 3.0), "sample_rate": (0.1, 0.3)})


class LocalOnly(Method):
    """Every client trains its own softmax model alone; nothing is sent, so nothing is
    spent in either unit (epsilon 0 at any target). The floor personalisation must beat.
    """

    name = "local"
    hparams_type = LocalParams

    def calibration(self, prepared: Prepared, unit: PrivacyUnit, target: Target,
                    hp: Schedule) -> Calibration:
        """No release: zero compositions, no noise."""
        return calibrate(unit, target, hp.sample_rate, 0)

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: Schedule, gen: Generators, seed: int) -> Trained:
        models = local_sgd(prepared.zeros(prepared.n_clients), prepared.train,
                           hp.rounds * hp.local_steps, hp.lr, hp.sample_rate, gen)
        return Trained(models, np.zeros(prepared.n_clients, dtype=np.int64), 0)


@dataclass(frozen=True)
class FineTuneParams(Schedule):
    """DP-FedAvg, then ``finetune_steps`` local SGD steps from the global model."""

    finetune_steps: int = 10
    GRID: ClassVar[Mapping[str, tuple]] = MappingProxyType(
        {"lr": (0.3, 1.0, 3.0), "finetune_steps": (5, 25)})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_count(self.finetune_steps, "finetune_steps")


def fedavg_rounds(method: Method, prepared: Prepared, unit: PrivacyUnit,
                  calibration: Calibration, hp: Schedule, gen: Generators
                  ) -> tuple[Tensor, Tensor, int]:
    """DP-FedAvg's global model: (model ``(D, K)``, participation ``(rounds, C)``, floats sent).

    Each round the sampled clients run ``local_steps`` from the global model (DP-SGD in
    the EXAMPLE unit) and the server adds the mean update (clipped and noised once in
    the USER unit).
    """
    active = participation(prepared.n_clients, hp.rounds, hp.client_rate, gen)
    w = prepared.zeros()
    floats = 0
    for t in range(hp.rounds):
        updates = method.local_updates(w, prepared.train, unit, calibration, hp, gen)
        w = w + method.server_mean(updates, active[t], unit, calibration, hp, gen)
        floats += int(active[t].sum()) * prepared.n_params
    return w, active, floats


class DPFedAvgFineTune(Method):
    """DP-FedAvg (McMahan et al. 2018 in the USER unit; local DP-SGD uploads in the
    EXAMPLE unit), each client then fine-tuning the released global model on its own
    data (never sent: post-processing plus local data, no privacy cost). The baseline
    every paper's personalisation is measured against. Admits both units.
    """

    name = "dp-fedavg-ft"
    hparams_type = FineTuneParams

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: FineTuneParams, gen: Generators, seed: int) -> Trained:
        w, active, floats = fedavg_rounds(self, prepared, unit, calibration, hp, gen)
        start = w.expand(prepared.n_clients, *w.shape)
        personal = local_sgd(start, prepared.train, hp.finetune_steps, hp.lr,
                             hp.sample_rate, gen)
        return Trained(personal, self.exposure(unit, active, hp), floats)
