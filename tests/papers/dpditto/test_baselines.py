"""Without noise each personalized baseline converges to the optimum of its own objective.

The problem is convex per client: multinomial logistic regression on three small
clients. Minibatches are drawn with replacement, so each step uses 600 draws of a
client's 30 examples: the stochastic gradient is within about 4% of the full one.
Every reference optimum is computed independently here (plain torch cross-entropy
and L-BFGS, or scipy's bounded L-BFGS-B), never with the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from lbfgs_reference import lbfgs_minimum
from scipy.optimize import minimize

from fedlib.papers.dpditto.algorithm import Batches, Clients, Hyper, Model, pad_clients
from fedlib.papers.dpditto.baselines import (
    AppleConfig,
    FedAlaConfig,
    FedAmpConfig,
    PFedMeConfig,
    ala_initialise,
    run_apple,
    run_fedala,
    run_fedamp,
    run_pfedme,
)

D, K, N, M = 5, 3, 3, 30
MODEL = Model("mlr", (D,), K)
NO_NOISE = [math.inf]


def _clients(seed: int = 0, same_data: bool = False) -> Clients:
    rng = np.random.default_rng(seed)
    parts = []
    shared = None
    for i in range(N):
        if same_data and shared is not None:
            parts.append(shared)
            continue
        # Each client has its own label rule (non-IID) plus label noise: convex, and
        # no client's data is separable, so every optimum is finite.
        x = rng.normal(size=(M, D))
        w = rng.normal(size=(D, K)) * 0.5
        y = (x @ w + rng.gumbel(size=(M, K)) * 1.5).argmax(axis=1)
        parts.append(shared := (x, y, x[:10], y[:10]))
        del i
    return pad_clients(parts, eval_examples=None, dtype=torch.float64)


def _ce(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the MLR parameters theta = (W (D x K) row-major, b (K))."""
    w, b = theta[:D * K].view(D, K), theta[D * K:]
    return torch.nn.functional.cross_entropy(x @ w + b, y)


def _losses(clients: Clients, thetas: torch.Tensor) -> np.ndarray:
    return np.array([float(_ce(thetas[i], clients.x_train[i], clients.y_train[i]))
                     for i in range(N)])


def _local_optima(clients: Clients) -> torch.Tensor:
    p = MODEL.n_params
    return torch.stack([
        lbfgs_minimum(lambda t, i=i: _ce(t, clients.x_train[i], clients.y_train[i]),
                      torch.zeros(p, dtype=torch.float64)) for i in range(N)])


HYPER = dict(personal_lr=0.1, personal_steps=1, batch_size=600, clip=1e9)


def test_fedamp_reaches_the_stationary_point_of_its_objective():
    """FedAMP minimises sum_i F_i(v_i) + (lam/2) sum_{i<j} A(||v_i - v_j||^2) with
    A(x) = 1 - exp(-x / sigma): its fixed point has grad F_i(v_i) + lam sum_j
    A'(d_ij) (v_i - v_j) = 0."""
    clients = _clients(1)
    config = FedAmpConfig(alpha_k=1.0, lam=2.0, sigma=20.0)
    out = run_fedamp(MODEL, clients, NO_NOISE, 300,
                     Hyper(lr=0.1, local_steps=5, **HYPER), seed=0, config=config)
    p = MODEL.n_params

    def objective(flat: torch.Tensor) -> torch.Tensor:
        v = flat.view(N, p)
        total = sum(_ce(v[i], clients.x_train[i], clients.y_train[i]) for i in range(N))
        for i in range(N):
            for j in range(i + 1, N):
                dist = (v[i] - v[j]).square().sum()
                total = total + config.lam / 2 * (1 - torch.exp(-dist / config.sigma))
        return total

    optimum = lbfgs_minimum(objective, torch.zeros(N * p, dtype=torch.float64)).view(N, p)
    expected = _losses(clients, optimum)
    local = _losses(clients, _local_optima(clients))
    # The coupling matters: the reference is well away from the clients' own optima.
    assert np.abs(expected - local).max() > 0.05
    np.testing.assert_allclose(out.train_loss[0], expected, atol=0.01)


def test_pfedme_personal_models_reach_the_moreau_envelope_optimum():
    """pFedMe minimises sum_i min_theta_i F_i(theta_i) + (lam/2)||theta_i - w||^2 over w;
    jointly over (w, theta) this is one convex problem."""
    clients = _clients(2)
    config = PFedMeConfig(lam=1.0, inner_steps=10, personal_lr=0.1, beta=1.0)
    out = run_pfedme(MODEL, clients, NO_NOISE, 400,
                     Hyper(lr=0.5, local_steps=1, **HYPER), seed=0, config=config)
    p = MODEL.n_params

    def objective(flat: torch.Tensor) -> torch.Tensor:
        w, theta = flat[:p], flat[p:].view(N, p)
        return sum(_ce(theta[i], clients.x_train[i], clients.y_train[i])
                   + config.lam / 2 * (theta[i] - w).square().sum() for i in range(N))

    optimum = lbfgs_minimum(objective, torch.zeros((N + 1) * p, dtype=torch.float64))
    expected = _losses(clients, optimum[p:].view(N, p))
    local = _losses(clients, _local_optima(clients))
    assert np.abs(expected - local).max() > 0.05
    np.testing.assert_allclose(out.train_loss[0], expected, atol=0.01)


def test_apple_personal_models_reach_each_clients_optimum():
    """Client i trains its core c_i (weighted by p_ii) on F_i(sum_j p_ij c_j): without
    noise, once the proximal pull on p has decayed, the fixed point has
    grad F_i(v_i) = 0, the client's own optimum."""
    clients = _clients(3)
    out = run_apple(MODEL, clients, NO_NOISE, 300, Hyper(lr=0.3, local_steps=5, **HYPER),
                    seed=0, config=AppleConfig(p_lr=0.01, mu=0.1, decay_fraction=0.2))
    expected = _losses(clients, _local_optima(clients))
    assert expected.min() > 0.1  # finite optima: no client's data is separable
    np.testing.assert_allclose(out.train_loss[0], expected, atol=0.01)


def test_fedala_with_identical_clients_reaches_the_common_optimum():
    """With every client holding the same data, FedAvg's fixed point is that data's
    optimum, and the adaptive local aggregation of two equal models changes nothing."""
    clients = _clients(4, same_data=True)
    out = run_fedala(MODEL, clients, NO_NOISE, 200, Hyper(lr=0.3, local_steps=5, **HYPER),
                     seed=0, config=FedAlaConfig(steps=5, first_steps=20))
    expected = _losses(clients, _local_optima(clients))
    assert np.ptp(expected) == pytest.approx(0, abs=1e-12)
    np.testing.assert_allclose(out.train_loss[0], expected, atol=0.01)


def test_ala_weights_solve_the_box_constrained_mix():
    """FedALA's weights W minimise F_i(old + (global - old) * W) over W in [0, 1]^P;
    compare with scipy's L-BFGS-B on the same objective."""
    clients = _clients(5)
    generator = torch.Generator().manual_seed(0)
    p = MODEL.n_params
    old = torch.randn(N, p, generator=generator, dtype=torch.float64)
    broadcast = torch.randn(N, p, generator=generator, dtype=torch.float64)
    weights = torch.ones(N, p, dtype=torch.float64)
    batches = Batches(clients.n_train, 4000, seed=0)
    mixed = ala_initialise(MODEL, clients, old, broadcast, weights, 3000, batches, 1,
                           FedAlaConfig(eta=0.5, layers=2))
    got = _losses(clients, mixed)
    for i in range(N):
        x, y = clients.x_train[i], clients.y_train[i]

        def fun(w: np.ndarray, i=i, x=x, y=y) -> tuple[float, np.ndarray]:
            wt = torch.tensor(w, requires_grad=True)
            value = _ce(old[i] + (broadcast[i] - old[i]) * wt, x, y)
            (g,) = torch.autograd.grad(value, wt)
            return float(value.detach()), g.numpy()

        best = minimize(fun, np.ones(p), jac=True, method="L-BFGS-B", bounds=[(0, 1)] * p,
                        options={"maxiter": 5000, "ftol": 1e-14, "gtol": 1e-10})
        ends = (float(_ce(old[i], x, y)), float(_ce(broadcast[i], x, y)))
        assert best.fun < min(ends) - 0.05  # the mix beats both endpoints
        assert got[i] == pytest.approx(best.fun, abs=0.01)
