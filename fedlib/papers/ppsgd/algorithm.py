"""Personalized-Private SGD (PPSGD), Bietti et al. (ICML 2022), as the authors' code runs it.

Additive model f_i(w, theta_i, (x, y)) = 1/2 (y - (w + theta_i)^T x)^2. Each
iteration samples Q users; each takes a fresh minibatch of m samples and
computes its mean gradient g_i (the same vector for w and for theta_i in the
additive model). Then

    theta_i <- theta_i - step_theta * g_i                      (never released)
    w       <- w - step_w * (mean_i clip_C(g_i) + sigma * C * z / Q),  z ~ N(0, I)

with (step_w, step_theta) given by the personalization level alpha*Q
(:func:`step_sizes`). Only the sequence of w is released, so the privacy cost is
that of the Gaussian mechanism with noise multiplier sigma and sampling rate
Q/N at every iteration (zero when step_w = 0).

The engine simulates every sampled user *and* every configuration of a grid in
one batch: user parameters are a tensor of shape (N, d, G) for G configurations
that share the data stream (common random numbers), and the per-user gradients
of the linear model are closed forms computed with batched matrix products.
There is no Python loop over users or configurations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fedlib.data.synthetic import AdditiveSyntheticTask


@dataclass(frozen=True)
class PPSGDConfig:
    """Hyperparameters of one PPSGD run.

    Parameters
    ----------
    step
        Base step size eta.
    alpha_q
        Personalization level alpha*Q: 0 is local only, ``math.inf`` global only.
    noise_multiplier
        sigma: the noise added to the mean clipped gradient has std sigma*C/Q.
    clip
        Clipping norm C of each user's global-model gradient.
    """

    step: float
    alpha_q: float
    noise_multiplier: float
    clip: float = 1.0

    def __post_init__(self) -> None:
        if not (self.step > 0 and math.isfinite(self.step)):
            raise ValueError(f"step must be a positive finite number, got {self.step}")
        if not self.alpha_q >= 0:
            raise ValueError(
                f"alpha_q must be >= 0 (0 = local only, math.inf = global only), got {self.alpha_q}"
            )
        if not (self.noise_multiplier >= 0 and math.isfinite(self.noise_multiplier)):
            raise ValueError(
                f"noise_multiplier must be a finite number >= 0, got {self.noise_multiplier}"
            )
        if not (self.clip > 0 and math.isfinite(self.clip)):
            raise ValueError(f"clip must be a positive finite number, got {self.clip}")


def step_sizes(step: float, alpha_q: float) -> tuple[float, float]:
    """Global and local step sizes (step_w, step_theta) for a personalization level.

    alpha*Q <= 1: step_w = alpha*Q*step, step_theta = step;
    alpha*Q > 1: step_w = step, step_theta = step/(alpha*Q); alpha*Q = inf: step_theta = 0.
    """
    if alpha_q <= 1.0:
        return alpha_q * step, step
    if math.isinf(alpha_q):
        return step, 0.0
    return step, step / alpha_q


def releases_global_model(config: PPSGDConfig) -> bool:
    """Whether the run releases anything (alpha*Q > 0); local-only runs are perfectly private."""
    return step_sizes(config.step, config.alpha_q)[0] > 0


def draw_iteration(
    task: AdditiveSyntheticTask,
    theta_star: torch.Tensor,
    generator: torch.Generator,
    users_per_iteration: int,
    batch_size: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The randomness of one iteration, in a fixed order.

    Returns the sampled users (Q,), features (Q, m, d), labels (Q, m) and the
    standard normal privacy noise z (d,). Every implementation of PPSGD that
    draws through this function with the same generator sees the same stream.
    """
    if users_per_iteration < task.n_users:
        users = torch.randperm(task.n_users, generator=generator)[:users_per_iteration]
    else:
        users = torch.arange(task.n_users)
    x, y = task.sample(users, batch_size, generator, theta_star)
    z = torch.randn(task.dim, generator=generator, dtype=theta_star.dtype)
    return users, x, y, z


def run_synthetic(
    task: AdditiveSyntheticTask,
    configs: Sequence[PPSGDConfig],
    iterations: int,
    *,
    users_per_iteration: int | None = None,
    batch_size: int = 10,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> np.ndarray:
    """Run PPSGD on the synthetic task for a grid of configurations in one pass.

    Parameters
    ----------
    task
        The synthetic task (ground truth).
    configs
        G configurations; they share the data and noise stream.
    iterations
        Number of iterations T.
    users_per_iteration
        Q (default: all N users, as in the paper's synthetic experiment).
    batch_size
        m, samples per user and iteration (paper: 10).
    seed
        Seed of the sample and noise stream. On the authors' instance
        (``task.instance == "authors"``) the samples come from the authors'
        seeded generator and ``seed`` seeds the privacy noise only; that
        instance samples every user (Q = N), as their script does.
    dtype
        Floating-point type of the computation.
    device
        Torch device of the computation; the random stream is always drawn on
        the CPU, so results do not depend on the device beyond rounding.

    Returns
    -------
    numpy.ndarray
        Excess risk after each iteration, shape (G, iterations), float64.
    """
    if not configs:
        raise ValueError("configs is empty: give at least one PPSGDConfig")
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    q = task.n_users if users_per_iteration is None else users_per_iteration
    if not 1 <= q <= task.n_users:
        raise ValueError(f"users_per_iteration must lie in [1, {task.n_users}], got {q}")
    if task.instance == "authors" and q != task.n_users:
        raise ValueError(f"the authors' instance samples every user: users_per_iteration must be "
                         f"{task.n_users} (N), got {q}")

    # Diverging runs (large steps) pass through subnormal floats, which are
    # many times slower on CPUs; flushing them to zero changes nothing visible.
    flush = torch.set_flush_denormal(True)
    try:
        return _run(task, configs, iterations, q, batch_size, seed, dtype, device)
    finally:
        if flush:
            torch.set_flush_denormal(False)


def _run(
    task: AdditiveSyntheticTask,
    configs: Sequence[PPSGDConfig],
    iterations: int,
    q: int,
    batch_size: int,
    seed: int,
    dtype: torch.dtype,
    device: str | torch.device,
) -> np.ndarray:
    theta_star = torch.as_tensor(task.theta_star(), dtype=dtype)
    if task.instance == "authors":
        stream = task.authors_stream(seed)
        all_users = torch.arange(task.n_users)

        def draw() -> tuple[torch.Tensor, ...]:
            x, y, z = stream.draw(batch_size)
            return all_users, *(torch.as_tensor(a, dtype=dtype) for a in (x, y, z))
    else:
        generator = torch.Generator().manual_seed(seed)

        def draw() -> tuple[torch.Tensor, ...]:
            return draw_iteration(task, theta_star, generator, q, batch_size)

    steps = [step_sizes(c.step, c.alpha_q) for c in configs]

    def on_device(values) -> torch.Tensor:
        return torch.as_tensor(values, dtype=dtype).to(device)

    variances = on_device(task.feature_variances())
    step_w = on_device([s[0] for s in steps])[:, None]
    step_theta = on_device([s[1] for s in steps])[:, None]
    clip = on_device([c.clip for c in configs])
    noise_std = on_device([c.noise_multiplier * c.clip / q for c in configs])

    n_configs = len(configs)
    # Layout: users first, then configurations, then coordinates (contiguous).
    w = torch.zeros((n_configs, task.dim), dtype=dtype, device=device)
    thetas = torch.zeros((task.n_users, n_configs, task.dim), dtype=dtype, device=device)
    params = torch.empty_like(thetas)
    risks = torch.empty((iterations, n_configs), dtype=torch.float64, device=device)
    theta_star_b = theta_star[:, None, :].to(device)
    for t in range(iterations):
        users, x, y, z = (a.to(device) for a in draw())
        local = thetas if q == task.n_users else thetas[users]
        model = torch.add(local, w, out=params[: len(users)])  # (Q, G, d)
        residual = torch.bmm(x, model.transpose(1, 2)).sub_(y[:, :, None])  # (Q, m, G)
        grads = torch.bmm(residual.transpose(1, 2), x).div_(batch_size)  # (Q, G, d)
        norms = torch.linalg.vector_norm(grads, dim=2)  # (Q, G)
        factors = torch.clamp(clip / norms, max=1.0)  # a zero gradient gives inf -> 1
        clipped_mean = torch.einsum("qg,qgd->gd", factors, grads) / q  # (G, d)
        if q == task.n_users:
            thetas.addcmul_(grads, step_theta, value=-1.0)
        else:
            thetas[users] = local.addcmul_(grads, step_theta, value=-1.0)
        w.sub_(step_w * (clipped_mean + noise_std[:, None] * z))
        diff = torch.add(thetas, w, out=params).sub_(theta_star_b).square_()
        risks[t] = torch.matmul(diff, variances).mean(dim=0)
    return risks.T.cpu().numpy()
