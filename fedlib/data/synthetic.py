"""The synthetic additive-model task of Bietti et al. (2022), section 6.

N users share d-dimensional linear ground truths that agree on every coordinate
but the last few:

    theta_0 ~ N(0, 10^2 I_d)
    theta*_i = theta_0, plus N(0, 0.01^2) on coordinates d-4..d (1-based 96..100)
    x ~ N(0, diag(1/k)), k = 1..d;   y = theta*_i^T x + N(0, 0.01^2)

Every iteration draws fresh samples, so the excess risk of a model
(w, theta_1..N) has the closed form (1/N) sum_i ||w + theta_i - theta*_i||^2_Sigma.

Two draws of this task exist (:data:`INSTANCES`). ``fedlib`` draws the ground
truth with numpy's ``default_rng(seed)`` and the samples from a torch
generator. ``authors`` is the instance of the authors' code (``albietz/ppsgd``,
``main_synthetic.py``): one legacy numpy ``RandomState(42)`` draws, in this
order, theta_0 (d normals, times 10), a full N x d matrix of normals of which
only the personal coordinates are kept (times the heterogeneity), then at every
iteration the features of all users as an (m, N, d) array and the label noise
as an (m, N) array. Their privacy noise comes from numpy's global generator,
which the script never seeds; here it is a second ``RandomState(seed)`` that
draws d normals per iteration, so that a run of the script with the global
generator seeded that way is reproduced draw for draw (:class:`AuthorsStream`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

INSTANCES = ("fedlib", "authors")
"""``fedlib``: this library's draw; ``authors``: the draw of the authors' script."""
AUTHORS_SEED = 42
"""The seed of the authors' ``RandomState`` (ground truth and samples)."""


def check_instance(instance: str) -> str:
    """Return ``instance`` if it names a draw of the task (:data:`INSTANCES`), else raise."""
    if instance not in INSTANCES:
        raise ValueError(f"instance={instance!r} is not a draw of the synthetic task; "
                         f"use one of {INSTANCES}")
    return instance


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
        Seed of the ground truth (the samples have their own stream). The
        authors' draw always uses theirs, :data:`AUTHORS_SEED`.
    instance
        Which draw (:data:`INSTANCES`): ``fedlib`` (default) or ``authors``.
    """

    n_users: int = 1000
    dim: int = 100
    shared_scale: float = 10.0
    personal_coords: int = 5
    personal_scale: float = 0.01
    label_noise: float = 0.01
    seed: int = 0
    instance: str = "fedlib"

    def __post_init__(self) -> None:
        check_instance(self.instance)
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
        if self.instance == "authors":
            return self._authors_theta_star(np.random.RandomState(AUTHORS_SEED))
        rng = np.random.default_rng(self.seed)
        theta0 = self.shared_scale * rng.standard_normal(self.dim)
        thetas = np.repeat(theta0[None, :], self.n_users, axis=0)
        if self.personal_coords:
            deviation = self.personal_scale * rng.standard_normal(
                (self.n_users, self.personal_coords)
            )
            thetas[:, self.dim - self.personal_coords :] += deviation
        return thetas

    def _authors_theta_star(self, rng: np.random.RandomState) -> np.ndarray:
        """The authors' ground truth, drawn from ``rng`` (which then stands where their
        sample stream starts)."""
        theta0 = self.shared_scale * rng.standard_normal(self.dim)
        deviations = rng.standard_normal((self.n_users, self.dim))  # all d drawn, few kept
        thetas = np.repeat(theta0[None, :], self.n_users, axis=0)
        if self.personal_coords:
            personal = slice(self.dim - self.personal_coords, self.dim)
            thetas[:, personal] += self.personal_scale * deviations[:, personal]
        return thetas

    def authors_stream(self, noise_seed: int) -> AuthorsStream:
        """The sample and noise stream of the authors' instance (see :class:`AuthorsStream`)."""
        if self.instance != "authors":
            raise ValueError("authors_stream() needs instance='authors', "
                             f"this task is instance={self.instance!r}")
        return AuthorsStream(self, noise_seed)

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
        """Fresh samples for the given users (the ``fedlib`` draw).

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


class AuthorsStream:
    """Samples and privacy noise of the authors' instance, draw for draw.

    The sample generator is ``RandomState(AUTHORS_SEED)`` after the ground truth
    (as in the authors' script, where one generator does both); the privacy
    noise is ``RandomState(noise_seed)``. Each :meth:`draw` is one iteration
    over all N users. The script runs every configuration of a process on one
    continuing stream; a fresh stream matches the first configuration of a
    process, which is every configuration when the script runs one per task.
    """

    def __init__(self, task: AdditiveSyntheticTask, noise_seed: int) -> None:
        self.task = task
        self._samples = np.random.RandomState(AUTHORS_SEED)
        self.theta_star = task._authors_theta_star(self._samples)
        self._noise = np.random.RandomState(noise_seed)
        self._scale = np.sqrt(task.feature_variances())

    def draw(self, batch_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One iteration: features (N, m, d), labels (N, m), standard normal noise z (d,).

        The features are drawn sample-major, (m, N, d), as the authors do, and
        returned user-major; all float64.
        """
        n, d = self.task.n_users, self.task.dim
        x = self._samples.standard_normal((batch_size, n, d)) * self._scale
        clean = (x * self.theta_star[None, :, :]).sum(axis=2)
        y = clean + self.task.label_noise * self._samples.standard_normal((batch_size, n))
        z = self._noise.standard_normal(d)
        return np.ascontiguousarray(x.transpose(1, 0, 2)), np.ascontiguousarray(y.T), z
