"""PADPFL (Talaei & Izadi) adapted to the softmax model."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
import torch
from torch import Tensor

from fedlib.checks import check_non_negative, check_probability
from fedlib.frontier import interface as fi
from fedlib.frontier.engine import Generators, aggregate, clip_updates, participation
from fedlib.frontier.privacy import Calibration, PrivacyUnit

__all__ = ["PADPFL", "PADPFLParams", "impact_factors", "noise_split"]


@dataclass(frozen=True)
class PADPFLParams(fi.GlobalSchedule):
    """``mu``: FedProx pull (the paper's 0.01); ``weight_power``: impact factors
    ``p_i ~ n_i ** weight_power`` (0: equal, 1: by size); ``client_noise_share``: share
    of the aggregate's noise variance the clients add themselves (USER unit); the shared
    fine-tuning."""

    mu: float = 0.01
    weight_power: float = 1.0
    client_noise_share: float = 0.5
    GRID: ClassVar[Mapping[str, fi.Axis]] = MappingProxyType(
        {"lr": fi.STEP_SIZES, "weight_power": fi.Axis((0.0, 1.0), low=0.0, high=1.0),
         "finetune_share": fi.FINETUNE})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_non_negative(self.mu, "mu")
        check_non_negative(self.weight_power, "weight_power")
        check_probability(self.client_noise_share, "client_noise_share")


def impact_factors(sizes: np.ndarray, power: float) -> np.ndarray:
    """``p_i = n_i^power / sum_j n_j^power``: a probability vector over clients."""
    raw = np.asarray(sizes, dtype=float) ** power
    return raw / raw.sum()


def noise_split(total_std: float, p: Tensor, active: Tensor, share: float
                ) -> tuple[float, float]:
    """(client std, server std) whose sum of noise on ``sum_active p_i (u_i + n_i) + n_s``
    has standard deviation exactly ``total_std``.

    Each client adds ``N(0, c^2)`` with ``c^2 = share total_std^2 / sum_all p_i^2`` (so
    even with every client present the clients' part is at most ``share`` of the
    variance); the server adds the remainder for the clients actually present, as
    PADPFL's server noise tops up the clients' (its sigma_S formula).
    """
    c2 = share * total_std**2 / float((p**2).sum())
    present = float((p[active] ** 2).sum())
    return math.sqrt(c2), math.sqrt(max(0.0, total_std**2 - c2 * present))


class PADPFL(fi.Method):
    """Impact-factor weighted federated averaging with FedProx local training, noise
    split between clients and server.

    Adaptation: the paper weights clients by data quality and size with hand-set impact
    factors; with the softmax model on these federations (no corrupted groups) the
    factors follow client size, ``p_i ~ n_i ** weight_power`` (its scenario 3: more
    weight to larger clients), the roster's sizes treated as public. Local training is
    the paper's FedProx objective ``l_i(x) + mu/2 ||x - x_global||^2`` by minibatch SGD.
    The paper's noise calibration (a closed form with an invalid sensitivity argument) is
    replaced by exact accounting:

    * USER unit: updates clipped to ``update_clip``; the weighted sum
      ``sum p_i clip(u_i)`` has sensitivity ``max p * update_clip``; the noise it needs,
      ``sigma max p update_clip``, is split: each client adds its share to its clipped
      update and the server tops up (:func:`noise_split`), so the total is exactly the
      calibrated Gaussian whoever takes part.
    * EXAMPLE and SILO units (the paper's example-level sensitivity): the FedProx local
      solver is DP-SGD, so every upload is DP on its own; noise added by the server cannot
      protect an upload from the server itself, so the server's share is 0 in these units.
    """

    name = "padpfl"
    hparams_type = PADPFLParams
    global_model = True

    def train(self, prepared: fi.Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: PADPFLParams, gen: Generators, seed: int) -> fi.Trained:
        n = prepared.n_clients
        p = torch.as_tensor(impact_factors(prepared.train.counts.numpy(), hp.weight_power))
        active = participation(n, hp.rounds, hp.client_rate, gen)
        user_dp = unit is PrivacyUnit.USER and calibration.private
        w = prepared.zeros()
        floats = 0
        total_weight = float(p.sum())
        for t in range(hp.rounds):
            anchor = w
            rows, part = self.round_part(prepared.train, active[t])
            updates = self.local_updates(w, part, unit, calibration, hp, gen,
                                         extra=lambda x, a=anchor: hp.mu * (x - a))
            if user_dp:
                total = calibration.noise_multiplier * hp.update_clip * float(p.max())
                client_std, server_std = noise_split(total, p, active[t],
                                                     hp.client_noise_share)
                noisy = clip_updates(updates, hp.update_clip)
                noisy = noisy + gen.gaussian(noisy.shape, client_std)
                mean = aggregate(noisy, p[rows], hp.client_rate, total_weight, gen,
                                 noise_std=server_std)
            else:
                mean = aggregate(updates, p[rows], hp.client_rate, total_weight, gen)
            w = w + mean
            floats += len(rows) * prepared.n_params
        return fi.Trained(w.expand(n, *w.shape), self.exposure(unit, active, hp), floats)
