"""The synthetic additive-model task of Bietti et al. (2022), section 6.

N users share d-dimensional linear ground truths that agree on every coordinate
but the last few:

    theta_0 ~ N(0, 10^2 I_d)
    theta*_i = theta_0, plus N(0, 0.01^2) on coordinates d-4..d (1-based 96..100)
    x ~ N(0, diag(1/k)), k = 1..d;   y = theta*_i^T x + N(0, 0.01^2)

Every iteration draws fresh samples, so the excess risk of a model
(w, theta_1..N) has the closed form (1/N) sum_i ||w + theta_i - theta*_i||^2_Sigma.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class AdditiveSyntheticTask:
    """Ground truth and sampler of the PPSGD synthetic regression task.

    Parameters
    ----------
    n_users, dim
        N and d (the paper: 1000 and 100).
    shared_scale
        Standard deviation of the shared parameter theta_0 (paper: 10).
    personal_coords
        Number of trailing coordinates that differ across users (paper: 5).
    personal_scale
        Standard deviation of the per-user deviation on those coordinates (paper: 0.01).
    label_noise
        Standard deviation tau of the label noise (paper: 0.01).
    seed
        Seed of the ground truth (the samples have their own stream).
    """

    n_users: int = 1000
    dim: int = 100
    shared_scale: float = 10.0
    personal_coords: int = 5
    personal_scale: float = 0.01
    label_noise: float = 0.01
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_users < 1 or self.dim < 1:
            raise ValueError(
                f"n_users and dim must be positive, got n_users={self.n_users}, dim={self.dim}"
            )
        if not 0 <= self.personal_coords <= self.dim:
            raise ValueError(
                f"personal_coords={self.personal_coords} must lie in [0, dim={self.dim}]"
            )

    def theta_star(self) -> np.ndarray:
        """Per-user optimal parameters, shape (N, d), float64."""
        rng = np.random.default_rng(self.seed)
        theta0 = self.shared_scale * rng.standard_normal(self.dim)
        thetas = np.repeat(theta0[None, :], self.n_users, axis=0)
        if self.personal_coords:
            deviation = self.personal_scale * rng.standard_normal(
                (self.n_users, self.personal_coords)
            )
            thetas[:, self.dim - self.personal_coords :] += deviation
        return thetas

    def feature_variances(self) -> np.ndarray:
        """Diagonal of Sigma: 1/k for k = 1..d."""
        return 1.0 / np.arange(1, self.dim + 1, dtype=np.float64)

    def sample(
        self,
        users: torch.Tensor,
        batch_size: int,
        generator: torch.Generator,
        theta_star: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh samples for the given users.

        Returns ``x`` of shape (len(users), batch_size, d) and ``y`` of shape
        (len(users), batch_size), in the dtype of ``theta_star``.
        """
        dtype = theta_star.dtype
        scale = torch.as_tensor(np.sqrt(self.feature_variances()), dtype=dtype)
        n = users.shape[0]
        x = torch.randn((n, batch_size, self.dim), generator=generator, dtype=dtype) * scale
        noise = torch.randn((n, batch_size), generator=generator, dtype=dtype)
        y = torch.einsum("umd,ud->um", x, theta_star[users]) + self.label_noise * noise
        return x, y

    def excess_risk(self, w: np.ndarray, thetas: np.ndarray) -> float:
        """Closed-form excess risk (1/N) sum_i ||w + theta_i - theta*_i||^2_Sigma."""
        diff = np.asarray(w)[None, :] + np.asarray(thetas) - self.theta_star()
        return float(np.mean(np.sum(self.feature_variances()[None, :] * diff**2, axis=1)))
