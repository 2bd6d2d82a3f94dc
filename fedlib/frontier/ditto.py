"""DP-Ditto adapted to the softmax model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

from fedlib.checks import check_non_negative
from fedlib.frontier.engine import Generators, gradient_estimate, participation
from fedlib.frontier.interface import STEP_SIZES, Axis, Method, Prepared, Schedule, Trained
from fedlib.frontier.privacy import Calibration, PrivacyUnit

__all__ = ["DPDitto", "DittoParams"]


@dataclass(frozen=True)
class DittoParams(Schedule):
    """``lam`` in [0, 1]: the personal objective's weight on ``||v - w||^2 / 2`` (0:
    local only, 1: the global model)."""

    lam: float = 0.5
    GRID: ClassVar[Mapping[str, Axis]] = MappingProxyType(
        {"lr": STEP_SIZES, "lam": Axis((0.0, 0.03, 0.1, 0.5), low=0.0, high=1.0)})
    LOCAL_LIMIT: ClassVar[Mapping[str, float]] = MappingProxyType({"lam": 0.0})

    def __post_init__(self) -> None:
        super().__post_init__()
        if check_non_negative(self.lam, "lam") > 1:
            raise ValueError(f"lam must lie in [0, 1] (0: local, 1: global), got {self.lam!r}.")


class DPDitto(Method):
    """DP-Ditto (the paper's personal objective ``(1 - lam) F_i(v) + lam/2 ||v - w||^2``).

    Adaptation: the global model is DP-FedAvg on the softmax model (the paper clips and
    noises each uploaded model with a closed-form example-level sensitivity; here the
    upload is made DP by local DP-SGD in the EXAMPLE unit, the paper's, or by clipping
    and noising the aggregate in the USER unit, both calibrated exactly). Each client
    sampled in a round also takes ``local_steps`` personal steps
    ``v <- v - lr [(1 - lam) g(v) + lam (v - w)]`` from the broadcast global model ``w``;
    ``v`` is never sent and costs nothing in the EXAMPLE and USER units; in the SILO unit
    its gradients are DP-SGD's too and are accounted (:meth:`personal_steps`).
    """

    name = "dp-ditto"
    hparams_type = DittoParams

    def personal_steps(self, hp: Schedule) -> int:
        return hp.local_steps

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: DittoParams, gen: Generators, seed: int) -> Trained:
        n = prepared.n_clients
        active = participation(n, hp.rounds, hp.client_rate, gen)
        silo = unit is PrivacyUnit.SILO and calibration.private
        w = prepared.zeros()
        v = prepared.zeros(n)
        floats = 0
        for t in range(hp.rounds):
            rows, part = self.round_part(prepared.train, active[t])
            updates = self.local_updates(w, part, unit, calibration, hp, gen)
            personal = v[rows]
            for _ in range(hp.local_steps):
                g = gradient_estimate(personal, part, hp.sample_rate, gen,
                                      clip=hp.clip if silo else None,
                                      noise_std=calibration.noise_multiplier * hp.clip
                                      if silo else 0.0)
                personal = personal - hp.lr * ((1.0 - hp.lam) * g + hp.lam * (personal - w))
            v = v.index_copy(0, rows, personal)
            w = w + self.server_mean(updates, rows, n, unit, calibration, hp, gen)
            floats += len(rows) * prepared.n_params
        return Trained(v, self.exposure(unit, active, hp), floats)
