"""PFA and PFA+ (Liu et al. 2022) adapted to the softmax model at one common budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
import torch

from fedlib.checks import check_count, check_probability
from fedlib.frontier import interface as fi
from fedlib.frontier.engine import Generators, participation
from fedlib.frontier.privacy import Calibration, PrivacyUnit
from fedlib.papers.pfa.aggregation import (
    Subspace,
    pfa_plus_average,
    projected_average,
    public_subspace,
)

__all__ = ["PFA", "PFAParams", "PFAPlus", "public_clients"]


@dataclass(frozen=True)
class PFAParams(fi.GlobalSchedule):
    """``k``: dimension of the public subspace; ``public_fraction``: share of clients
    acting as public (the paper's top 10 %); the shared fine-tuning."""

    k: int = 1
    public_fraction: float = 0.1
    GRID: ClassVar[Mapping[str, fi.Axis]] = MappingProxyType(
        {"lr": fi.STEP_SIZES, "k": fi.Axis((1, 3), low=1, integer=True),
         "finetune_share": fi.FINETUNE})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_count(self.k, "k", minimum=1)
        check_probability(self.public_fraction, "public_fraction")


def public_clients(n_clients: int, fraction: float, seed: int) -> np.ndarray:
    """Boolean ``(n_clients,)``: a seeded random ``fraction`` of the clients (at least one)."""
    count = max(1, int(round(fraction * n_clients)))
    chosen = np.random.default_rng(seed).choice(n_clients, size=count, replace=False)
    mask = np.zeros(n_clients, dtype=bool)
    mask[chosen] = True
    return mask


class PFA(fi.Method):
    """Projected federated averaging: the mean of the private clients' noisy updates is
    projected onto the top-k subspace of the public clients' updates
    (:func:`fedlib.papers.pfa.aggregation.projected_average`, reused).

    Adaptation: the paper's unit is example-level local DP (each client runs DP-SGD and
    uploads its noisy update to an untrusted server), kept here (EXAMPLE). Its public
    clients are the 10 % with the largest budgets; with one common target there is no
    budget to rank by, so a seeded random ``public_fraction`` of the clients (at least
    one) act as public: they take part in every round (in the SILO unit, their accounting
    covers every round), spend the same target as every
    client (their updates are as noisy) and the epsilon weights of the paper's means are
    all equal. PFA's projection then acts only as a denoiser of the private mean through
    the public updates' subspace; the advantage the paper draws from heterogeneous
    budgets is absent by construction. The whole softmax model is one layer.
    """

    name = "pfa"
    hparams_type = PFAParams
    global_model = True
    plus: ClassVar[bool] = False
    refusals = MappingProxyType({
        PrivacyUnit.USER: (
            "PFA projects each private client's individually noised update onto the "
            "subspace of the public clients' updates and weights clients by their own "
            "budgets; under user-level DP with a trusted aggregator the noise is added once "
            "to the aggregate, so there is no per-client noisy update to project and no "
            "per-client budget that makes a client public (the paper's guarantee is "
            "example-level local DP per client: use PrivacyUnit.EXAMPLE)."),
    })

    def train(self, prepared: fi.Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: PFAParams, gen: Generators, seed: int) -> fi.Trained:
        n, p = prepared.n_clients, prepared.n_params
        public = torch.as_tensor(public_clients(n, hp.public_fraction, seed))
        active = participation(n, hp.rounds, hp.client_rate, gen) | public
        basis_gen = torch.Generator().manual_seed(seed)
        k = min(hp.k, p)
        budgets = torch.ones(n, dtype=torch.float64)  # one common target: equal weights
        w = prepared.zeros()
        previous: Subspace | None = None
        floats = 0
        for t in range(hp.rounds):
            rows, part = self.round_part(prepared.train, active[t])
            flat = self.local_updates(w, part, unit, calibration, hp, gen).reshape(len(rows), p)
            pub = public[rows]
            subspace = public_subspace(flat[pub], k, generator=basis_gen)
            if self.plus and previous is not None:
                coefficients = previous.coefficients(flat[~pub])  # what a private client sends
                mean = pfa_plus_average(flat[pub], coefficients, budgets[rows][pub],
                                        budgets[rows][~pub], previous)
                floats += int(pub.sum()) * p + int((~pub).sum()) * k
            else:
                mean = projected_average(flat, budgets[rows], pub, subspace)
                floats += len(rows) * p
            previous = subspace
            w = w + mean.reshape(w.shape)
        return fi.Trained(w.expand(n, *w.shape), self.exposure(unit, active, hp), floats)


class PFAPlus(PFA):
    """PFA+: after the first (plain PFA) round, private clients project their own update
    on the previous round's public subspace and upload only its k coefficients
    (:func:`fedlib.papers.pfa.aggregation.pfa_plus_average`); same adaptation and unit
    as :class:`PFA`. The coefficients are post-processing of the client's DP update."""

    name = "pfa+"
    plus = True
