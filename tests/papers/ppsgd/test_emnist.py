"""PPSGD on per-user classification: batched engines against independent per-user loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedlib.data.federated import FederatedClassification, split_per_user
from fedlib.papers.ppsgd.algorithm import PPSGDConfig, step_sizes
from fedlib.papers.ppsgd.emnist import (
    FEATURES,
    TARGET_OFFSET,
    Representation,
    draw_schedule,
    init_cnn,
    iterations_for_epochs,
    run_cnn,
    run_linear,
)


def toy_data(n_users: int = 6, per_user: int = 24, d: int = 12, k: int = 3, image: bool = False,
             seed: int = 0) -> FederatedClassification:
    rng = np.random.default_rng(seed)
    n = n_users * per_user
    shape = (n, 1, 28, 28) if image else (n, d)
    x = rng.random(shape).astype(np.float32)
    y = rng.integers(0, k, n)
    user = np.repeat(np.arange(n_users), per_user)
    return split_per_user(x, y, user, k, test_fraction=0.2, seed=seed)


CONFIGS = [
    PPSGDConfig(step=0.05, alpha_q=0.0, noise_multiplier=0.0, clip=1.0),
    PPSGDConfig(step=0.05, alpha_q=0.3, noise_multiplier=2.0, clip=0.2),
    PPSGDConfig(step=0.02, alpha_q=3.0, noise_multiplier=0.5, clip=1e6),
    PPSGDConfig(step=0.08, alpha_q=math.inf, noise_multiplier=5.0, clip=0.5),
]


def reference_linear(data, schedule, config, noise_seed):
    """Linear PPSGD one user at a time, numpy float64."""
    d, k = data.x_train.shape[1], data.n_classes
    step_w, step_theta = step_sizes(config.step, config.alpha_q)
    w = np.zeros((d, k))
    thetas = np.zeros((data.n_users, d, k))
    generator = torch.Generator().manual_seed(noise_seed)
    q = schedule.users.shape[1]
    for t in range(schedule.iterations):
        clipped = np.zeros((d, k))
        updated = thetas.copy()
        for j, user in enumerate(schedule.users[t]):
            rows = schedule.examples[t, j]
            x = data.x_train[rows].astype(np.float64)
            target = np.eye(k)[data.y_train[rows]] - TARGET_OFFSET
            gradient = x.T @ (x @ (w + thetas[user]) - target) / len(rows)
            updated[user] = thetas[user] - step_theta * gradient
            clipped += gradient * min(1.0, config.clip / np.linalg.norm(gradient))
        z = torch.randn((d, k), generator=generator, dtype=torch.float64).numpy()
        thetas = updated
        w = w - step_w * (clipped / q + config.noise_multiplier * config.clip * z / q)
    return w, thetas


def test_linear_engine_matches_per_user_reference() -> None:
    data = toy_data()
    schedule = draw_schedule(data, 15, 3, 4, seed=1)
    result = run_linear(data, schedule, CONFIGS, noise_seed=7, dtype=torch.float64)
    for g, config in enumerate(CONFIGS):
        w, thetas = reference_linear(data, schedule, config, noise_seed=7)
        np.testing.assert_allclose(result.w[g], w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(result.thetas[:, g], thetas, rtol=1e-10, atol=1e-12)


def test_linear_grid_batching_equals_one_by_one() -> None:
    data = toy_data(seed=3)
    schedule = draw_schedule(data, 20, 4, 5, seed=2)
    together = run_linear(data, schedule, CONFIGS, eval_at=[0, 10, 20], noise_seed=1,
                          dtype=torch.float64)
    for g, config in enumerate(CONFIGS):
        alone = run_linear(data, schedule, [config], eval_at=[0, 10, 20], noise_seed=1,
                           dtype=torch.float64)
        np.testing.assert_allclose(together.w[g], alone.w[0], rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(together.thetas[:, g], alone.thetas[:, 0], rtol=1e-10,
                                   atol=1e-13)
        np.testing.assert_array_equal(together.accuracy[g], alone.accuracy[0])


def test_linear_accuracy_is_the_pooled_test_accuracy() -> None:
    data = toy_data(seed=4)
    schedule = draw_schedule(data, 10, 3, 4, seed=0)
    result = run_linear(data, schedule, CONFIGS[:2], eval_at=[10], dtype=torch.float64)
    for g in range(2):
        scores = np.einsum("nd,ndk->nk", data.x_test,
                           result.w[g][None] + result.thetas[data.user_test, g])
        assert result.accuracy[g, 0] == pytest.approx(np.mean(scores.argmax(1) == data.y_test))


def _reference_cnn_step(net, params, w, thetas, data, users, rows, config, generator, q,
                        theta_scale, per_example=False):
    """One CNN PPSGD iteration with plain autograd, one user (or example) at a time."""
    step_w, step_theta = step_sizes(config.step, config.alpha_q)
    names = list(params)
    clipped = [torch.zeros_like(params[k]) for k in names] + [torch.zeros_like(w)]
    new_thetas = thetas.clone()
    for j, user in enumerate(users):
        x = torch.as_tensor(data.x_train[rows[j]], dtype=torch.float64)
        target = torch.nn.functional.one_hot(
            torch.as_tensor(data.y_train[rows[j]]), data.n_classes).double() - TARGET_OFFSET
        units = [slice(i, i + 1) for i in range(len(x))] if per_example else [slice(None)]
        for unit in units:
            leaves = [params[k].clone().requires_grad_(True) for k in names]
            w_leaf = w.clone().requires_grad_(True)
            theta_leaf = thetas[user].clone().requires_grad_(True)
            with torch.no_grad():
                for (_, p), leaf in zip(net.named_parameters(), leaves, strict=True):
                    p.copy_(leaf)
            net.zero_grad()
            out = net(x[unit]) @ (w_leaf + theta_leaf)
            loss = ((out - target[unit]) ** 2).mean()
            loss.backward()
            shared = [p.grad.detach().clone() for p in net.parameters()] + [w_leaf.grad]
            norm = torch.sqrt(sum((g**2).sum() for g in shared))
            factor = min(1.0, config.clip / norm.item()) / len(units)
            for acc, g in zip(clipped, shared, strict=True):
                acc += factor * g
            if unit == units[0]:
                new_thetas[user] = thetas[user] - theta_scale * step_theta * theta_leaf.grad
    noise = [torch.randn(p.shape, generator=generator, dtype=torch.float64) for p in clipped]
    sd = config.noise_multiplier * config.clip / q
    new_params = {k: params[k] - step_w * (clipped[i] / q + sd * noise[i])
                  for i, k in enumerate(names)}
    new_w = w - step_w * (clipped[-1] / q + sd * noise[-1])
    return new_params, new_w, new_thetas


def _reference_cnn(data, schedule, config, noise_seed, init_seed, theta_scale,
                   per_example=False):
    net, params, w = init_cnn(init_seed, data.n_classes, torch.float64)
    thetas = torch.zeros((data.n_users, FEATURES, data.n_classes), dtype=torch.float64)
    generator = torch.Generator().manual_seed(noise_seed)
    q = schedule.users.shape[1]
    for t in range(schedule.iterations):
        params, w, thetas = _reference_cnn_step(
            net, params, w, thetas, data, schedule.users[t], schedule.examples[t], config,
            generator, q, theta_scale, per_example)
    return params, w, thetas


CNN_CONFIGS = [
    PPSGDConfig(step=0.5, alpha_q=0.3, noise_multiplier=1.0, clip=0.05),
    PPSGDConfig(step=0.2, alpha_q=math.inf, noise_multiplier=0.0, clip=0.02),
    PPSGDConfig(step=0.3, alpha_q=3.0, noise_multiplier=0.5, clip=100.0),
]


def test_cnn_engine_clips_each_users_mean_gradient() -> None:
    data = toy_data(n_users=4, per_user=10, k=10, image=True, seed=5)
    schedule = draw_schedule(data, 2, 3, 3, seed=0)
    result = run_cnn(data, schedule, CNN_CONFIGS, noise_seed=3, init_seed=4, theta_step_scale=3,
                     dtype=torch.float64)
    for g, config in enumerate(CNN_CONFIGS):
        params, w, thetas = _reference_cnn(data, schedule, config, 3, 4, 3)
        for k, value in params.items():
            np.testing.assert_allclose(result.params[k][g], value.numpy(), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(result.w[g], w.numpy(), rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(result.thetas[:, g], thetas.numpy(), rtol=1e-9, atol=1e-11)


def test_cnn_reference_distinguishes_per_user_from_per_example_clipping() -> None:
    """The comparison above can fail: clipping each example instead gives other parameters."""
    data = toy_data(n_users=4, per_user=10, k=10, image=True, seed=5)
    schedule = draw_schedule(data, 1, 3, 3, seed=0)
    result = run_cnn(data, schedule, CNN_CONFIGS[:1], noise_seed=3, init_seed=4,
                     dtype=torch.float64)
    _, w_user, _ = _reference_cnn(data, schedule, CNN_CONFIGS[0], 3, 4, 1.0)
    _, w_example, _ = _reference_cnn(data, schedule, CNN_CONFIGS[0], 3, 4, 1.0, per_example=True)
    np.testing.assert_allclose(result.w[0], w_user.numpy(), rtol=1e-9, atol=1e-11)
    assert not np.allclose(w_user.numpy(), w_example.numpy(), rtol=1e-6, atol=1e-9)


def test_representation_has_the_authors_shapes() -> None:
    net = Representation()
    shapes = {k: tuple(v.shape) for k, v in net.named_parameters()}
    assert shapes == {"conv1.weight": (16, 1, 8, 8), "conv1.bias": (16,),
                      "conv2.weight": (32, 16, 4, 4), "conv2.bias": (32,),
                      "fc.weight": (FEATURES, 512), "fc.bias": (FEATURES,)}
    assert net(torch.zeros(2, 1, 28, 28)).shape == (2, FEATURES)


def test_schedule_samples_distinct_users_and_fresh_minibatches() -> None:
    data = toy_data(n_users=5, per_user=25)
    counts = data.train_counts()
    schedule = draw_schedule(data, 30, 3, 4, seed=9)
    assert schedule.users.shape == (30, 3) and schedule.examples.shape == (30, 3, 4)
    for t in range(30):
        assert len(set(schedule.users[t])) == 3
        for j, user in enumerate(schedule.users[t]):
            assert np.all(data.user_train[schedule.examples[t, j]] == user)
    for user in range(data.n_users):
        batches = [schedule.examples[t, j] for t in range(30) for j in range(3)
                   if schedule.users[t, j] == user]
        per_pass = counts[user] // 4
        first_pass = np.concatenate(batches[:per_pass]) if len(batches) >= per_pass else None
        if first_pass is not None:
            assert len(np.unique(first_pass)) == len(first_pass)
    assert iterations_for_epochs(counts, 3, 4, 2.0) == round(2 * np.sum(counts // 4) / 3)


def test_schedule_refuses_users_smaller_than_a_minibatch() -> None:
    data = toy_data(n_users=3, per_user=6)
    with pytest.raises(ValueError, match="batch_size"):
        draw_schedule(data, 3, 2, 10, seed=0)
