"""Plain per-client reference implementations of the frontier methods without privacy.

Each loops over clients, takes gradients by autograd on the client's own rows and
aggregates with plain sums: the non-private version each batched method must equal at
epsilon = inf. Random draws (participation, Poisson batches) come from the engine's
generators in the methods' order, so the same seed gives the same batches.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from fedlib.frontier.engine import ClientData, Generators, participation, poisson_batch
from fedlib.frontier.federations import Federation
from fedlib.frontier.interface import Prepared
from fedlib.frontier.padpfl import impact_factors
from fedlib.frontier.pfa import public_clients
from fedlib.frontier.ppsgd import step_sizes
from fedlib.papers.pfa.aggregation import pfa_plus_average, projected_average, public_subspace


def rows(data: ClientData, i: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = int(data.counts[i])
    return data.x[i, :n], data.y[i, :n]


def gradient(w: torch.Tensor, data: ClientData, i: int, batch: torch.Tensor, rate: float
             ) -> torch.Tensor:
    """Autograd gradient of (sum of the batch's cross-entropies) / (rate n_i)."""
    x, y = rows(data, i)
    chosen = batch[i, : len(y)] > 0
    w = w.detach().clone().requires_grad_(True)
    loss = F.cross_entropy(x[chosen] @ w, y[chosen], reduction="sum") / (rate * len(y))
    (g,) = torch.autograd.grad(loss, w)
    return g


def local_steps(models, data, steps, lr, rate, gen, pull=None):
    """``steps`` SGD steps of every client (one batch draw for all clients per step)."""
    models = [m.clone() for m in models]
    for _ in range(steps):
        batch = poisson_batch(data, rate, gen)
        for i, m in enumerate(models):
            g = gradient(m, data, i, batch, rate)
            if pull is not None:
                g = g + pull(i, m)
            models[i] = m - lr * g
    return models


def test_losses(models, data: ClientData) -> np.ndarray:
    out = []
    for i, m in enumerate(models):
        x, y = rows(data, i)
        out.append(float(F.cross_entropy(x @ m, y)))
    return np.array(out)


def _fedavg(prep, hp, gen, pull=None, weights=None):
    c = prep.n_clients
    active = participation(c, hp.rounds, hp.client_rate, gen)
    weights = [1.0] * c if weights is None else list(weights)
    w = prep.zeros()
    for t in range(hp.rounds):
        local = local_steps([w] * c, prep.train, hp.local_steps, hp.lr, hp.sample_rate, gen,
                            None if pull is None else (lambda i, m, a=w: pull(m, a)))
        total = sum(weights[i] * (local[i] - w) for i in range(c) if active[t, i])
        w = w + total / (hp.client_rate * sum(weights))
    return w


def run(name: str, federation: Federation, hp, seed: int) -> np.ndarray:
    """Per-client test losses of method ``name`` run without privacy."""
    prep = Prepared.of(federation)
    gen = Generators(seed)
    c = prep.n_clients
    data = prep.train
    if name == "local":
        models = local_steps([prep.zeros()] * c, data, hp.rounds * hp.local_steps, hp.lr,
                             hp.sample_rate, gen)
    elif name == "dp-fedavg-ft":
        models = [_fedavg(prep, hp, gen)] * c
    elif name == "padpfl":
        p = impact_factors(data.counts.numpy(), hp.weight_power)
        w = _fedavg(prep, hp, gen, pull=lambda m, a: hp.mu * (m - a), weights=p)
        models = [w] * c
    elif name == "dp-ditto":
        active = participation(c, hp.rounds, hp.client_rate, gen)
        w, v = prep.zeros(), [prep.zeros()] * c
        for t in range(hp.rounds):
            local = local_steps([w] * c, data, hp.local_steps, hp.lr, hp.sample_rate, gen)
            personal = list(v)
            for _ in range(hp.local_steps):
                batch = poisson_batch(data, hp.sample_rate, gen)
                personal = [u - hp.lr * ((1 - hp.lam) * gradient(u, data, i, batch,
                                                                 hp.sample_rate)
                                         + hp.lam * (u - w))
                            for i, u in enumerate(personal)]
            v = [personal[i] if active[t, i] else v[i] for i in range(c)]
            w = w + sum(local[i] - w for i in range(c) if active[t, i]) / (hp.client_rate * c)
        models = v
    elif name == "ppsgd":
        step_w, step_theta = step_sizes(hp.lr, hp.alpha)
        active = participation(c, hp.rounds, hp.client_rate, gen)
        w, theta = prep.zeros(), [prep.zeros()] * c
        for t in range(hp.rounds):
            lw, lt = [w] * c, list(theta)
            for _ in range(hp.local_steps):
                batch = poisson_batch(data, hp.sample_rate, gen)
                grads = [gradient(lw[i] + lt[i], data, i, batch, hp.sample_rate)
                         for i in range(c)]
                lw = [lw[i] - step_w * grads[i] for i in range(c)]
                lt = [lt[i] - step_theta * grads[i] for i in range(c)]
            theta = [lt[i] if active[t, i] else theta[i] for i in range(c)]
            w = w + sum(lw[i] - w for i in range(c) if active[t, i]) / (hp.client_rate * c)
        models = [w + th for th in theta]
    elif name in ("pfa", "pfa+"):
        public = torch.as_tensor(public_clients(c, hp.public_fraction, seed))
        active = participation(c, hp.rounds, hp.client_rate, gen) | public
        basis_gen = torch.Generator().manual_seed(seed)
        w, previous = prep.zeros(), None
        for t in range(hp.rounds):
            local = local_steps([w] * c, data, hp.local_steps, hp.lr, hp.sample_rate, gen)
            ups = torch.stack([(m - w).reshape(-1) for m in local])
            act = active[t]
            pub, priv = act & public, act & ~public
            ones = torch.ones(c, dtype=torch.float64)
            subspace = public_subspace(ups[pub], min(hp.k, ups.shape[1]), generator=basis_gen)
            if name == "pfa+" and previous is not None:
                mean = pfa_plus_average(ups[pub], previous.coefficients(ups[priv]), ones[pub],
                                        ones[priv], previous)
            else:
                mean = projected_average(ups[act], ones[act], public[act], subspace)
            previous = subspace
            w = w + mean.reshape(w.shape)
        models = [w] * c
    elif name == "hu-mtl":
        active = participation(c, hp.rounds, hp.client_rate, gen)
        models = [prep.zeros()] * c
        omega = np.eye(c) / c
        strength = 2.0 * hp.lr * hp.local_steps * hp.lam / c
        for t in range(hp.rounds):
            local = local_steps(models, data, hp.local_steps, hp.lr, hp.sample_rate, gen)
            models = [local[i] if active[t, i] else models[i] for i in range(c)]
            flat = np.stack([m.reshape(-1).numpy() for m in models], axis=1)  # (P, m)
            flat = flat @ np.linalg.inv(np.eye(c) + strength * np.linalg.inv(omega))
            models = [torch.as_tensor(flat[:, i]).reshape(models[0].shape) for i in range(c)]
            if (t + 1) % hp.omega_every == 0:
                values, vectors = np.linalg.eigh(flat.T @ flat)
                root = vectors @ np.diag(np.sqrt(np.maximum(values, 1e-7))) @ vectors.T
                omega = root / np.trace(root)
    else:
        raise ValueError(f"no reference for {name!r}")
    if hp.finetune_steps:  # a global model's fine-tuning: streams of its own
        models = local_steps(models, data, hp.finetune_steps, hp.lr, hp.sample_rate,
                             Generators(seed, stream=1))
    return test_losses(models, prep.test)


def alone(federation: Federation, hp, seed: int, draws_before: bool = False) -> np.ndarray:
    """Per-client test losses of every client training alone for ``rounds x local_steps``
    steps of the method's own batches: ``draws_before`` skips, each round, the
    ``local_steps`` batch draws of an upload computed before the personal steps
    (Ditto's order)."""
    prep = Prepared.of(federation)
    gen = Generators(seed)
    models = [prep.zeros()] * prep.n_clients
    for _ in range(hp.rounds):
        if draws_before:
            for _ in range(hp.local_steps):
                poisson_batch(prep.train, hp.sample_rate, gen)
        models = local_steps(models, prep.train, hp.local_steps, hp.lr, hp.sample_rate, gen)
    return test_losses(models, prep.test)
