"""PPSGD (Bietti et al. 2022) adapted to the softmax model."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

from fedlib.checks import check_non_negative
from fedlib.frontier.engine import Generators, gradient_estimate, participation
from fedlib.frontier.interface import STEP_SIZES, Axis, Method, Prepared, Schedule, Trained
from fedlib.frontier.privacy import Calibration, PrivacyUnit

__all__ = ["PPSGD", "PPSGDParams", "step_sizes"]


@dataclass(frozen=True)
class PPSGDParams(Schedule):
    """``alpha``: the personalisation level (the paper's alpha Q), >= 0 and finite; 0 is
    its local limit (the global model never moves, each client trains its personal
    model alone)."""

    alpha: float = 1.0
    GRID: ClassVar[Mapping[str, Axis]] = MappingProxyType(
        {"lr": STEP_SIZES, "alpha": Axis((0.0, 0.03, 0.3, 3.0), low=0.0)})
    LOCAL_LIMIT: ClassVar[Mapping[str, float]] = MappingProxyType({"alpha": 0.0})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_non_negative(self.alpha, "alpha")
        if not math.isfinite(self.alpha):
            raise ValueError(f"alpha must be finite, got {self.alpha!r}.")


def step_sizes(lr: float, alpha: float) -> tuple[float, float]:
    """(global step, personal step) of personalisation level ``alpha`` (the paper's rule):
    ``alpha <= 1``: (alpha lr, lr); ``alpha > 1``: (lr, lr / alpha). ``alpha = 0``: the
    global model stands still (local training of the personal models)."""
    if not alpha >= 0 or not math.isfinite(alpha):
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}.")
    return (alpha * lr, lr) if alpha <= 1 else (lr, lr / alpha)


class PPSGD(Method):
    """Personalized-private SGD: a global model ``w`` plus a personal additive model
    ``theta_i``; client i predicts with ``w + theta_i``.

    Adaptation (from the paper's user-level, joint-DP unit): the squared loss on
    one-vs-all targets becomes the softmax cross-entropy; each sampled client takes
    ``local_steps`` joint steps ``w_i -= step_w g``, ``theta_i -= step_theta g`` (g the
    minibatch gradient at ``w_i + theta_i``; with ``local_steps = 1`` this is the paper's
    iteration exactly), uploads ``w_i - w``, and the server adds the mean of the uploads.
    USER unit: each upload clipped to ``clip * step_w * local_steps``, the noise added
    once. SILO unit: g is DP-SGD's (per-example clip, noise), so both models and every
    upload are DP for one example.
    """

    name = "ppsgd"
    hparams_type = PPSGDParams
    refusals = MappingProxyType({
        PrivacyUnit.EXAMPLE: (
            "the personal model theta_i is trained on the client's examples without "
            "clipping or noise and enters every gradient the client uploads, so one "
            "example can change every upload by an unbounded amount: per-example clipping "
            "does not bound the uploads' sensitivity; with theta_i trained by DP-SGD too "
            "it runs in the SILO unit, and its paper's guarantee is user-level joint DP "
            "of the global model (PrivacyUnit.USER)."),
    })

    def train(self, prepared: Prepared, unit: PrivacyUnit, calibration: Calibration,
              hp: PPSGDParams, gen: Generators, seed: int) -> Trained:
        n = prepared.n_clients
        step_w, step_theta = step_sizes(hp.lr, hp.alpha)
        active = participation(n, hp.rounds, hp.client_rate, gen)
        silo = unit is PrivacyUnit.SILO and calibration.private
        w = prepared.zeros()
        theta = prepared.zeros(n)
        floats = 0
        for t in range(hp.rounds):
            rows, part = self.round_part(prepared.train, active[t])
            local_w = w.expand(len(rows), *w.shape)
            local_theta = theta[rows]
            for _ in range(hp.local_steps):
                g = gradient_estimate(local_w, part, hp.sample_rate, gen, offset=local_theta,
                                      clip=hp.clip if silo else None,
                                      noise_std=calibration.noise_multiplier * hp.clip
                                      if silo else 0.0)
                local_w = local_w - step_w * g
                local_theta = local_theta - step_theta * g
            theta = theta.index_copy(0, rows, local_theta)
            bound = hp.clip * max(step_w, 1e-300) * hp.local_steps
            w = w + self.server_mean(local_w - w, rows, n, unit, calibration, hp, gen,
                                     bound=bound)
            floats += len(rows) * prepared.n_params
        return Trained(w + theta, self.exposure(unit, active, hp), floats)
