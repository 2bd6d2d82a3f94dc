"""DP-Ditto engine and DP baselines: references, special cases and convergence."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from lbfgs_reference import lbfgs_minimum

from fedlib.nn.models import Cifar10CNN, n_parameters
from fedlib.papers.dpditto.algorithm import (
    Clients,
    Hyper,
    Model,
    check_lambda,
    clip_models,
    noise_sigmas,
    pad_clients,
    run_ditto,
    sgd_step,
)
from fedlib.papers.dpditto.baselines import (
    FedAlaConfig,
    FedAmpConfig,
    PFedMeConfig,
    fedamp_weights,
    run_fedala,
    run_pfedme,
)
from fedlib.privacy.calibration import dpditto_sigma


def _clients(n: int = 3, m: int = 40, d: int = 5, k: int = 3, seed: int = 0) -> Clients:
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(n):
        x = rng.normal(size=(m, d)).astype(np.float64)
        y = rng.integers(0, k, size=m)
        parts.append((x, y, x[:10], y[:10]))
    return pad_clients(parts, dtype=torch.float64)


def _reference_loss_grad(model: Model, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor):
    """Per-row autograd loop with plain torch layers (independent of the batched code)."""
    grads = []
    for b in range(theta.shape[0]):
        t = theta[b].clone().requires_grad_(True)
        p = model.unflatten(t[None])
        if model.kind == "mlr":
            logits = x[b] @ p[0][0] + p[1][0]
        else:
            logits = torch.relu(x[b] @ p[0][0] + p[1][0]) @ p[2][0] + p[3][0]
        loss = torch.nn.functional.cross_entropy(logits, y[b])
        (g,) = torch.autograd.grad(loss, t)
        grads.append(g)
    return torch.stack(grads)


@pytest.mark.parametrize("kind", ["mlr", "dnn"])
def test_batched_gradients_match_a_per_client_autograd_loop(kind: str) -> None:
    torch.manual_seed(0)
    model = Model(kind, (7,), 4, hidden=6)
    theta = torch.randn(5, model.n_params, dtype=torch.float64)
    x = torch.randn(5, 9, 7, dtype=torch.float64)
    y = torch.randint(0, 4, (5, 9))
    _, grad = model.loss_grad(theta, x, y)
    torch.testing.assert_close(grad, _reference_loss_grad(model, theta, x, y), atol=1e-10,
                               rtol=0)
    anchor = torch.randn_like(theta)
    w, mu = torch.rand(5, dtype=torch.float64), torch.rand(5, dtype=torch.float64)
    out = sgd_step(model, theta.clone(), x, y, 0.1, weight=w, mu=mu, anchor=anchor)
    ref = theta - 0.1 * (w[:, None] * grad + mu[:, None] * (theta - anchor))
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)


def test_cnn_gradient_matches_torch_layers() -> None:
    torch.manual_seed(1)
    model = Model("cnn", (1, 28, 28), 10)
    theta = model.init(torch.Generator().manual_seed(0), torch.float64).expand(2, -1).clone()
    theta[1] += 0.01 * torch.randn(model.n_params, dtype=torch.float64)
    x = torch.rand(2, 3, 1, 28, 28, dtype=torch.float64)
    y = torch.randint(0, 10, (2, 3))
    _, grad = model.loss_grad(theta, x, y)
    for b in range(2):
        t = theta[b].clone().requires_grad_(True)
        p = model.unflatten(t[None])
        f = torch.nn.functional
        z = f.max_pool2d(f.relu(f.conv2d(x[b], p[0][0], p[1][0])), 2)
        z = f.max_pool2d(f.relu(f.conv2d(z, p[2][0], p[3][0])), 2).flatten(1)
        logits = f.relu(z @ p[4][0] + p[5][0]) @ p[6][0] + p[7][0]
        (g,) = torch.autograd.grad(f.cross_entropy(logits, y[b]), t)
        torch.testing.assert_close(grad[b], g, atol=1e-10, rtol=0)


def test_cnn_on_cifar_inputs_is_the_pfa_cifar10_module() -> None:
    """The batched CNN over 3x32x32 inputs computes the same network as ``Cifar10CNN``."""
    torch.manual_seed(2)
    module = Cifar10CNN().double()
    model = Model("cnn", (3, 32, 32), 10)
    assert model.n_params == n_parameters(module)
    convs = [layer for layer in module if isinstance(layer, torch.nn.Conv2d)]
    dense = [layer for layer in module if isinstance(layer, torch.nn.Linear)]
    parts = []
    for conv in convs:
        parts += [conv.weight.detach().reshape(-1), conv.bias.detach()]
    for linear in dense:  # stored (in, out) here, (out, in) in torch.nn.Linear
        parts += [linear.weight.detach().T.reshape(-1), linear.bias.detach()]
    theta = torch.cat(parts)[None]
    x = torch.rand(1, 4, 3, 32, 32, dtype=torch.float64)
    with torch.no_grad():
        expected = module(x[0])
    torch.testing.assert_close(model.logits(theta, x)[0], expected, atol=1e-10, rtol=0)


def test_clipping_and_sigma_follow_the_spec() -> None:
    theta = torch.tensor([[3.0, 4.0], [0.3, 0.4]], dtype=torch.float64)
    torch.testing.assert_close(clip_models(theta, 1.0),
                               torch.tensor([[0.6, 0.8], [0.3, 0.4]], dtype=torch.float64))
    sig = noise_sigmas([2.0, math.inf], torch.tensor([100, 50]), 10.0, 0.01, 30)
    expected = 2 * 10 / 100 * math.sqrt(2 * 30 * math.log(100)) / 2.0
    assert sig[0, 0].item() == pytest.approx(expected)
    assert sig[0, 1].item() == pytest.approx(dpditto_sigma(10.0, 50, 2.0, 0.01, 30))
    assert sig[1].abs().max().item() == 0.0


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True])
def test_bad_lambda_is_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="lambda"):
        check_lambda(bad)


def test_bad_epsilon_is_rejected() -> None:
    clients = _clients()
    with pytest.raises(ValueError, match="epsilon"):
        run_ditto(Model("mlr", (5,), 3), clients, [0.0], [(0, 0.5)], 2)


def test_lambda_one_is_the_global_model_and_lambda_zero_never_sees_noise() -> None:
    clients = _clients()
    model = Model("mlr", (5,), 3)
    hyper = Hyper(lr=0.1, personal_lr=0.1, local_steps=2, personal_steps=2, batch_size=4)
    noisy = run_ditto(model, clients, [0.5, math.inf], [(0, 1.0), (0, 0.0), (1, 0.0)], 3,
                      hyper, seed=0)
    # lambda = 1: evaluated personal models equal the (noisy) global model exactly
    from fedlib.papers.dpditto.algorithm import evaluate_personal
    direct = evaluate_personal(model, noisy.global_model[0].expand(3, -1).clone(), clients)
    np.testing.assert_array_equal(noisy.personal.train_loss[0], direct.train_loss[0])
    # lambda = 0 with heavy noise and without noise: identical local models
    np.testing.assert_array_equal(noisy.personal.train_loss[1], noisy.personal.train_loss[2])
    assert noisy.sigmas[0].min() > 0


def _full_batch(clients: Clients) -> Hyper:
    return Hyper(lr=0.5, personal_lr=0.5, local_steps=1, personal_steps=1,
                 batch_size=int(clients.n_train.max()), clip=1e6)


def _objective(theta: torch.Tensor, clients: Clients, model: Model, i: int) -> torch.Tensor:
    x, y = clients.x_train[i:i + 1], clients.y_train[i:i + 1]
    loss, _ = model.loss_grad(theta[None], x, y)
    return loss[0]


def test_noiseless_ditto_converges_to_the_global_and_personal_optima() -> None:
    """Full-batch steps from uniform sampling with replacement are not full batch, so we
    check the personal optimum of lambda = 0.5 against L-BFGS on clients whose batch is
    their whole (distinct) data: with batch = n the sampled batch is a resample, so we
    compare with a loose tolerance on the loss value instead of the point."""
    clients = _clients(n=2, m=30)
    model = Model("mlr", (5,), 3)
    out = run_ditto(model, clients, [math.inf], [(0, 0.0), (0, 1.0)], 300,
                    Hyper(lr=0.2, personal_lr=0.2, local_steps=1, personal_steps=1,
                          batch_size=30, clip=1e6), seed=0)
    # local models: their training loss approaches each client's minimal loss
    for i in range(2):
        best = lbfgs_minimum(lambda t, i=i: _objective(t, clients, model, i),
                             torch.zeros(model.n_params, dtype=torch.float64))
        assert out.personal.train_loss[0, i] == pytest.approx(
            float(_objective(best, clients, model, i)), abs=0.02)


def test_fedamp_weights_are_convex_and_self_weighted_under_noise() -> None:
    uploads = torch.randn(6, 50, dtype=torch.float64) * 10
    xi = fedamp_weights(uploads, 3, FedAmpConfig())
    torch.testing.assert_close(xi.sum(dim=2), torch.ones(2, 3, dtype=torch.float64))
    torch.testing.assert_close(xi, torch.eye(3, dtype=torch.float64).expand(2, 3, 3))


def test_pfedme_and_fedala_run_and_learn() -> None:
    clients = _clients(n=3, m=30)
    model = Model("mlr", (5,), 3)
    hyper = Hyper(lr=0.1, personal_lr=0.1, local_steps=3, personal_steps=3, batch_size=10)
    start = run_ditto(model, clients, [math.inf], [(0, 1.0)], 1, hyper).personal.mean_loss
    p = run_pfedme(model, clients, [math.inf], 20, hyper, config=PFedMeConfig(inner_steps=2))
    a = run_fedala(model, clients, [math.inf], 20, hyper, config=FedAlaConfig(steps=2))
    assert p.mean_loss[0] < start[0] and a.mean_loss[0] < start[0]
