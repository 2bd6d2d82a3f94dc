"""Hu et al. (2020)'s federated multi-task learning adapted to the softmax model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import torch
from torch import Tensor

from fedlib.checks import check_count, check_non_negative
from fedlib.frontier.engine import Generators, participation
from fedlib.frontier.interface import STEP_SIZES, Axis, Method, Prepared, Schedule, Trained
from fedlib.frontier.privacy import Calibration, PrivacyUnit

__all__ = ["EIGENVALUE_FLOOR", "FederatedMultiTask", "MultiTaskParams", "relationship",
           "relationship_prox"]

EIGENVALUE_FLOOR = 1e-7
"""Eigenvalues of ``W^T W`` are clipped at this before the square root (as MOCHA does)."""


@dataclass(frozen=True)
class MultiTaskParams(Schedule):
    """``lam``: weight of the relationship regulariser ``lam/m tr(W Omega^-1 W^T)`` (0:
    no coupling, every client trains alone: the local limit); ``omega_every``: rounds
    between updates of Omega (the paper's inner rounds K)."""

    lam: float = 0.001
    omega_every: int = 5
    GRID: ClassVar[Mapping[str, Axis]] = MappingProxyType(
        {"lr": STEP_SIZES, "lam": Axis((0.0, 0.001, 0.01, 0.1), low=0.0)})
    LOCAL_LIMIT: ClassVar[Mapping[str, float]] = MappingProxyType({"lam": 0.0})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_non_negative(self.lam, "lam")
        check_count(self.omega_every, "omega_every", minimum=1)


def relationship(models: Tensor) -> Tensor:
    """``Omega = (W^T W)^(1/2) / tr((W^T W)^(1/2))`` for models ``(m, D, K)`` (W's columns
    are the flattened models), eigenvalues of ``W^T W`` clipped at :data:`EIGENVALUE_FLOOR`."""
    flat = models.reshape(len(models), -1)
    values, vectors = torch.linalg.eigh(flat @ flat.T)
    root = (vectors * values.clamp_min(EIGENVALUE_FLOOR).sqrt()) @ vectors.T
    return root / torch.trace(root)


def relationship_prox(models: Tensor, omega: Tensor, strength: float) -> Tensor:
    """Proximal step of ``strength/2 tr(W Omega^-1 W^T)``: ``W <- W Omega (Omega + strength I)^-1``
    (no inverse of Omega is formed, so a nearly singular Omega is harmless)."""
    m = len(models)
    mix = torch.linalg.solve(omega + strength * torch.eye(m, dtype=omega.dtype), omega)
    # W has the flattened models as columns: W mix, i.e. model_s <- sum_t model_t mix[t, s].
    return torch.einsum("tdk,ts->sdk", models, mix)


class FederatedMultiTask(Method):
    """Federated multi-task learning with a learned task-relationship matrix Omega.

    Adaptation of Hu et al.'s private MOCHA (linear SVMs solved in the dual; one model
    per device, coupled by ``lam tr(W Omega^-1 W^T)``, Omega updated between outer
    rounds) to the softmax model, in the primal: the server holds one model per client
    (as MOCHA's server computes every w_t); each round the sampled clients run
    ``local_steps`` of SGD on their own loss from their model and upload the update
    (DP-SGD in the EXAMPLE unit, the paper's unit: it noises each device's upload and its
    local state for one example); the server applies the update and then the exact
    proximal step of the relationship regulariser (:func:`relationship_prox`, strength
    ``2 lr local_steps lam / m``), a forward-backward split of the same objective; every
    ``omega_every`` rounds Omega is recomputed in closed form (:func:`relationship`).
    Everything the server computes is post-processing of the DP uploads, so the SILO unit
    is the EXAMPLE unit here: the client models are the server's.
    """

    name = "hu-mtl"
    hparams_type = MultiTaskParams
    refusals = MappingProxyType({
        PrivacyUnit.USER: (
            "the server keeps one model per client and mixes them through the learned "
            "relationship matrix Omega, so what it releases is a set of per-client models, "
            "each a function of one client's whole data, not one aggregate on which noise "
            "can be added once; the paper protects each device's examples (noise on its "
            "local variables and on its upload): use PrivacyUnit.EXAMPLE."),
    })

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: MultiTaskParams, gen: Generators, seed: int) -> Trained:
        m = prepared.n_clients
        active = participation(m, hp.rounds, hp.client_rate, gen)
        models = prepared.zeros(m)
        omega = torch.eye(m, dtype=torch.float64) / m
        strength = 2.0 * hp.lr * hp.local_steps * hp.lam / m
        floats = 0
        for t in range(hp.rounds):
            rows, part = self.round_part(prepared.train, active[t])
            updates = self.local_updates(models[rows], part, unit, calibration, hp, gen)
            models = models.index_add(0, rows, updates)
            if strength > 0:
                models = relationship_prox(models, omega, strength)
            if (t + 1) % hp.omega_every == 0:
                omega = relationship(models)
            floats += len(rows) * prepared.n_params
        return Trained(models, self.exposure(unit, active, hp), floats)
