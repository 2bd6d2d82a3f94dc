"""PPSGD (Bietti et al. 2022) adapted to the softmax model."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import torch

from fedlib.checks import check_positive
from fedlib.frontier.engine import Generators, gradient_estimate, participation
from fedlib.frontier.interface import Method, Prepared, Schedule, Trained
from fedlib.frontier.privacy import Calibration, PrivacyUnit

__all__ = ["PPSGD", "PPSGDParams", "step_sizes"]


@dataclass(frozen=True)
class PPSGDParams(Schedule):
    """``alpha``: the personalisation level (the paper's alpha Q), > 0 and finite."""

    alpha: float = 1.0
    GRID: ClassVar[Mapping[str, tuple]] = MappingProxyType(
        {"lr": (0.3, 1.0, 3.0), "alpha": (0.3, 3.0)})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self.alpha, "alpha")


def step_sizes(lr: float, alpha: float) -> tuple[float, float]:
    """(global step, personal step) of personalisation level ``alpha`` (the paper's rule):
    ``alpha <= 1``: (alpha lr, lr); ``alpha > 1``: (lr, lr / alpha)."""
    if not alpha > 0 or not math.isfinite(alpha):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}.")
    return (alpha * lr, lr) if alpha <= 1 else (lr, lr / alpha)


class PPSGD(Method):
    """Personalized-private SGD: a global model ``w`` plus a never-released personal
    additive model ``theta_i``; client i predicts with ``w + theta_i``.

    Adaptation (from the paper's user-level, joint-DP unit): the squared loss on
    one-vs-all targets becomes the softmax cross-entropy; each sampled client takes
    ``local_steps`` joint steps ``w_i -= step_w g``, ``theta_i -= step_theta g`` (g the
    minibatch gradient at ``w_i + theta_i``; with ``local_steps = 1`` this is the paper's
    iteration exactly), uploads ``w_i - w``, and the server adds the mean of the uploads,
    each clipped to ``clip * step_w * local_steps``, with the noise added once (USER).
    """

    name = "ppsgd"
    hparams_type = PPSGDParams
    refusals = MappingProxyType({
        PrivacyUnit.EXAMPLE: (
            "the personal model theta_i is trained on the client's examples without "
            "clipping or noise and enters every gradient the client uploads, so one "
            "example can change every upload by an unbounded amount: per-example clipping "
            "does not bound the uploads' sensitivity, and example-level DP of the uploads "
            "would need theta_i itself trained privately, which PPSGD does not do (its "
            "guarantee is user-level joint DP of the global model: use PrivacyUnit.USER)."),
    })

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: PPSGDParams, gen: Generators, seed: int) -> Trained:
        data = prepared.train
        step_w, step_theta = step_sizes(hp.lr, hp.alpha)
        active = participation(prepared.n_clients, hp.rounds, hp.client_rate, gen)
        w = prepared.zeros()
        theta = prepared.zeros(prepared.n_clients)
        floats = 0
        for t in range(hp.rounds):
            local_w = w.expand(prepared.n_clients, *w.shape)
            local_theta = theta
            for _ in range(hp.local_steps):
                g = gradient_estimate(local_w, data, hp.sample_rate, gen, offset=local_theta)
                local_w = local_w - step_w * g
                local_theta = local_theta - step_theta * g
            theta = torch.where(active[t][:, None, None], local_theta, theta)
            bound = hp.clip * step_w * hp.local_steps
            w = w + self.server_mean(local_w - w, active[t], unit, calibration, hp, gen,
                                     bound=bound)
            floats += int(active[t].sum()) * prepared.n_params
        return Trained(w + theta, self.exposure(unit, active, hp), floats)
