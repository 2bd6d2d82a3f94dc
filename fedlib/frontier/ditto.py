"""DP-Ditto adapted to the softmax model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import torch

from fedlib.checks import check_non_negative
from fedlib.frontier.engine import Generators, gradient_estimate, participation
from fedlib.frontier.interface import Method, Prepared, Schedule, Trained
from fedlib.frontier.privacy import Calibration, PrivacyUnit

__all__ = ["DPDitto", "DittoParams"]


@dataclass(frozen=True)
class DittoParams(Schedule):
    """``lam`` in [0, 1]: the personal objective's weight on ``||v - w||^2 / 2`` (0:
    local only, 1: the global model)."""

    lam: float = 0.5
    GRID: ClassVar[Mapping[str, tuple]] = MappingProxyType(
        {"lr": (0.3, 1.0, 3.0), "lam": (0.1, 0.5)})

    def __post_init__(self) -> None:
        super().__post_init__()
        if check_non_negative(self.lam, "lam") > 1:
            raise ValueError(f"lam must lie in [0, 1] (0: local, 1: global), got {self.lam!r}.")


class DPDitto(Method):
    """DP-Ditto (the paper's personal objective ``(1 - lam) F_i(v) + lam/2 ||v - w||^2``).

    Adaptation: the global model is DP-FedAvg on the softmax model (the paper clips and
    noises each uploaded model with a closed-form example-level sensitivity; here the
    upload is made DP by local DP-SGD in the EXAMPLE unit, the paper's unit, or by
    clipping and noising the aggregate in the USER unit, both calibrated exactly). Each
    client sampled in a round also takes ``local_steps`` personal steps
    ``v <- v - lr [(1 - lam) g(v) + lam (v - w)]`` from the broadcast global model ``w``;
    ``v`` is never sent and never enters an upload, so it costs nothing in either unit.
    """

    name = "dp-ditto"
    hparams_type = DittoParams

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: DittoParams, gen: Generators, seed: int) -> Trained:
        data = prepared.train
        active = participation(prepared.n_clients, hp.rounds, hp.client_rate, gen)
        w = prepared.zeros()
        v = prepared.zeros(prepared.n_clients)
        floats = 0
        for t in range(hp.rounds):
            updates = self.local_updates(w, data, unit, calibration, hp, gen)
            personal = v
            for _ in range(hp.local_steps):
                g = gradient_estimate(personal, data, hp.sample_rate, gen)
                personal = personal - hp.lr * ((1.0 - hp.lam) * g + hp.lam * (personal - w))
            v = torch.where(active[t][:, None, None], personal, v)
            w = w + self.server_mean(updates, active[t], unit, calibration, hp, gen)
            floats += int(active[t].sum()) * prepared.n_params
        return Trained(v, self.exposure(unit, active, hp), floats)
