"""The vectorized PPSGD engine against a plain per-user loop, and the synthetic task."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.papers.ppsgd.algorithm import PPSGDConfig, draw_iteration, run_synthetic, step_sizes


def reference_ppsgd(
    task: AdditiveSyntheticTask,
    config: PPSGDConfig,
    iterations: int,
    users_per_iteration: int,
    batch_size: int,
    seed: int,
) -> np.ndarray:
    """PPSGD written the obvious way: one user at a time, numpy, float64."""
    generator = torch.Generator().manual_seed(seed)
    theta_star_t = torch.as_tensor(task.theta_star(), dtype=torch.float64)
    if config.alpha_q == 0:
        step_w, step_theta = 0.0, config.step
    elif config.alpha_q <= 1:
        step_w, step_theta = config.alpha_q * config.step, config.step
    elif math.isinf(config.alpha_q):
        step_w, step_theta = config.step, 0.0
    else:
        step_w, step_theta = config.step, config.step / config.alpha_q
    w = np.zeros(task.dim)
    thetas = np.zeros((task.n_users, task.dim))
    risks = []
    for _ in range(iterations):
        users, x, y, z = (
            a.numpy() for a in draw_iteration(
                task, theta_star_t, generator, users_per_iteration, batch_size
            )
        )
        clipped_sum = np.zeros(task.dim)
        new_thetas = thetas.copy()
        for row, user in enumerate(users):
            xu, yu = x[row], y[row]
            prediction = xu @ (w + thetas[user])
            gradient = xu.T @ (prediction - yu) / batch_size
            new_thetas[user] = thetas[user] - step_theta * gradient
            norm = np.linalg.norm(gradient)
            clipped_sum += gradient * min(1.0, config.clip / norm)
        thetas = new_thetas
        noise = config.noise_multiplier * config.clip * z / len(users)
        w = w - step_w * (clipped_sum / len(users) + noise)
        risks.append(task.excess_risk(w, thetas))
    return np.array(risks)


CONFIGS = [
    PPSGDConfig(step=0.3, alpha_q=0.0, noise_multiplier=5.0, clip=1.0),
    PPSGDConfig(step=0.3, alpha_q=0.3, noise_multiplier=2.0, clip=0.5),
    PPSGDConfig(step=0.2, alpha_q=3.0, noise_multiplier=0.0, clip=1e6),
    PPSGDConfig(step=0.5, alpha_q=math.inf, noise_multiplier=30.0, clip=2.0),
]


@pytest.mark.parametrize("users_per_iteration", [12, 5])
def test_engine_matches_per_user_reference(users_per_iteration: int) -> None:
    task = AdditiveSyntheticTask(n_users=12, dim=7, personal_coords=3, personal_scale=0.5, seed=3)
    engine = run_synthetic(
        task, CONFIGS, 25, users_per_iteration=users_per_iteration, batch_size=4, seed=11,
        dtype=torch.float64,
    )
    for row, config in enumerate(CONFIGS):
        expected = reference_ppsgd(task, config, 25, users_per_iteration, 4, seed=11)
        np.testing.assert_allclose(engine[row], expected, rtol=1e-10, atol=1e-12)


def test_grid_batching_does_not_change_a_run() -> None:
    task = AdditiveSyntheticTask(n_users=20, dim=5, seed=1)
    together = run_synthetic(task, CONFIGS, 15, seed=4, dtype=torch.float64)
    for row, config in enumerate(CONFIGS):
        alone = run_synthetic(task, [config], 15, seed=4, dtype=torch.float64)
        np.testing.assert_allclose(together[row], alone[0], rtol=1e-12)


def test_clipping_is_active_in_reference_comparison() -> None:
    """The comparison above must exercise clipping: small C must change the trajectory."""
    task = AdditiveSyntheticTask(n_users=12, dim=7, seed=3)
    tight = PPSGDConfig(step=0.3, alpha_q=math.inf, noise_multiplier=0.0, clip=0.5)
    loose = PPSGDConfig(step=0.3, alpha_q=math.inf, noise_multiplier=0.0, clip=1e9)
    risks = run_synthetic(task, [tight, loose], 10, seed=2, dtype=torch.float64)
    assert not np.allclose(risks[0], risks[1])


def test_excess_risk_closed_form_matches_monte_carlo() -> None:
    task = AdditiveSyntheticTask(n_users=3, dim=6, personal_scale=1.0, label_noise=0.3, seed=5)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(6)
    thetas = rng.standard_normal((3, 6))
    generator = torch.Generator().manual_seed(0)
    theta_star = torch.as_tensor(task.theta_star())
    x, y = task.sample(torch.arange(3), 200_000, generator, theta_star)
    predictions = torch.einsum("umd,ud->um", x, torch.as_tensor(w + thetas))
    mse = ((y - predictions) ** 2).mean().item()
    # E[(y - f(x))^2] = excess risk + tau^2 for the squared loss.
    assert mse - task.label_noise**2 == pytest.approx(task.excess_risk(w, thetas), rel=0.01)


def test_synthetic_task_matches_the_paper_generator() -> None:
    task = AdditiveSyntheticTask(seed=0)
    thetas = task.theta_star()
    assert thetas.shape == (1000, 100)
    # Coordinates 1..95 are shared by every user, 96..100 differ slightly.
    assert np.all(thetas[:, :95] == thetas[0, :95])
    spread = thetas[:, 95:].std(axis=0)
    assert np.all((spread > 0.008) & (spread < 0.012))
    assert 5 < thetas[0, :95].std() < 15
    np.testing.assert_allclose(task.feature_variances()[:3], [1.0, 0.5, 1 / 3])
    generator = torch.Generator().manual_seed(1)
    x, _ = task.sample(torch.arange(1000), 50, generator, torch.as_tensor(thetas))
    np.testing.assert_allclose(x.var(dim=(0, 1))[:4].numpy(), [1, 1 / 2, 1 / 3, 1 / 4], rtol=0.03)


@pytest.mark.parametrize(
    ("alpha_q", "expected"),
    [(0.0, (0.0, 0.5)), (0.3, (0.15, 0.5)), (1.0, (0.5, 0.5)), (4.0, (0.5, 0.125)),
     (math.inf, (0.5, 0.0))],
)
def test_step_sizes_follow_personalization_level(alpha_q, expected) -> None:
    assert step_sizes(0.5, alpha_q) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"step": 0.0, "alpha_q": 1.0, "noise_multiplier": 0.0}, "step"),
        ({"step": 0.1, "alpha_q": -1.0, "noise_multiplier": 0.0}, "alpha_q"),
        ({"step": 0.1, "alpha_q": 1.0, "noise_multiplier": -1.0}, "noise_multiplier"),
        ({"step": 0.1, "alpha_q": 1.0, "noise_multiplier": 1.0, "clip": 0.0}, "clip"),
    ],
)
def test_invalid_config_is_rejected_by_name(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        PPSGDConfig(**kwargs)
