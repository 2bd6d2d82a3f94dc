"""DP versions of the personalized-FL baselines DP-Ditto is compared with, batched.

Each baseline follows its own paper's update rules; privacy is added the same
way as in DP-Ditto: whatever a client uploads is clipped to norm C and gets
Gaussian noise of the DP-Ditto standard deviation, and the personal models are
built from the aggregated noisy models. All functions simulate one run per
epsilon (a batch of runs x clients rows, see :mod:`fedlib.papers.dpditto.algorithm`) and return
the personal models' per-client training loss and test accuracy.

* FedAMP (Huang et al., 2021): personal models with a proximal pull towards a
  personalized cloud model, which the server forms per client by attentive
  message passing, ``u_i = sum_j xi_ij w_j`` with ``xi_ij = alpha_k A'(||w_i -
  w_j||^2)`` (j != i), ``A'(x) = exp(-x / s) / s`` and ``xi_ii = 1 - sum_j xi_ij``.
* pFedMe (Dinh et al., 2020): Moreau envelopes; per local step the personal
  model theta approximately solves ``min F_i(theta) + (lambda/2)||theta - w||^2``
  (K gradient steps), then ``w <- w - eta lambda (w - theta)``; the server mixes
  ``w~ <- (1 - beta) w~ + beta mean_i(w_i)``.
* APPLE (Luo & Wu, 2022): each client's personal model is ``sum_j p_ij c_j``
  of the clients' core models with learned directed-relationship weights p_i;
  a client trains its own core and p_i, with ``(lambda(r) mu / 2)||p_i - p0||^2``
  (cosine-decayed lambda(r)) and uploads its core.
* FedALA (Zhang et al., 2023): adaptive local aggregation; the client's new
  model is the global one in the lower layers and
  ``theta_old + (w~ - theta_old) * W`` in the last layers, with element-wise
  weights W in [0, 1] learned on local data, then trained and uploaded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedlib.papers.dpditto.algorithm import (
    Batches,
    Clients,
    Hyper,
    Model,
    Noise,
    PersonalResult,
    average_clients,
    check_epsilons,
    evaluate_personal,
    gather_batch,
    noise_sigmas,
    private_upload,
    sgd_step,
)


@dataclass(frozen=True)
class FedAmpConfig:
    """FedAMP's hyperparameters (inferred: PFLlib defaults)."""

    alpha_k: float = 1.0
    lam: float = 1.0
    sigma: float = 0.1


@dataclass(frozen=True)
class PFedMeConfig:
    """pFedMe's hyperparameters (inferred: the pFedMe paper's MNIST setting)."""

    lam: float = 15.0
    inner_steps: int = 5
    personal_lr: float = 0.01
    beta: float = 1.0


@dataclass(frozen=True)
class AppleConfig:
    """APPLE's hyperparameters (inferred): p's learning rate, mu and the decay length L
    (a fraction of the rounds)."""

    p_lr: float = 0.01
    mu: float = 0.1
    decay_fraction: float = 0.2


@dataclass(frozen=True)
class FedAlaConfig:
    """FedALA's hyperparameters (inferred: its paper's defaults): the weights'
    learning rate, the number of last layers adapted (2: the last layer's weight and
    bias), ALA steps per round (later rounds) and in the first round that adapts."""

    eta: float = 1.0
    layers: int = 2
    steps: int = 5
    first_steps: int = 20


def _setup(model: Model, clients: Clients, epsilons: Sequence[float], rounds: int,
           hyper: Hyper, seed: int, init: torch.Tensor | None):
    epsilons = check_epsilons(epsilons)
    hyper = hyper or Hyper()
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds (T) must be an integer >= 1, got {rounds!r}")
    dtype = clients.x_train.dtype
    if init is None:
        init = model.init(torch.Generator().manual_seed(int(seed)), dtype)
    sigma = noise_sigmas(epsilons, clients.n_train, hyper.clip, hyper.delta, rounds)
    return len(epsilons), init, sigma, Batches(clients.n_train, hyper.batch_size, seed)


def fedamp_weights(uploads: torch.Tensor, n_clients: int, config: FedAmpConfig) -> torch.Tensor:
    """FedAMP's message-passing weights xi (G, N, N) from the (noisy) uploads (G N, P).

    Off-diagonal ``alpha_k exp(-||w_i - w_j||^2 / s) / s``; the diagonal makes each
    row sum to one. Where the off-diagonal weights sum above 1 they are rescaled to
    sum to 1 (zero self-weight), which keeps every cloud model a convex combination.
    """
    w = uploads.view(-1, n_clients, uploads.shape[1]).double()
    sq = (w * w).sum(dim=2)
    dist = (sq[:, :, None] + sq[:, None, :] - 2 * torch.bmm(w, w.transpose(1, 2))).clamp_min(0)
    xi = config.alpha_k * torch.exp(-dist / config.sigma) / config.sigma
    eye = torch.eye(n_clients, dtype=xi.dtype)
    xi = xi * (1 - eye)
    off = xi.sum(dim=2, keepdim=True)
    xi = torch.where(off > 1, xi / off, xi)
    xi = xi + eye * (1 - xi.sum(dim=2, keepdim=True))
    return xi.to(uploads.dtype)


def run_fedamp(
    model: Model, clients: Clients, epsilons: Sequence[float], rounds: int,
    hyper: Hyper | None = None, seed: int = 0, init: torch.Tensor | None = None,
    config: FedAmpConfig | None = None,
) -> PersonalResult:
    """DP-FedAMP: personal models ``v_i`` trained on ``F_i(v) + lam/(2 alpha_k)||v - u_i||^2``."""
    config = config or FedAmpConfig()
    hyper = hyper or Hyper()
    G, init, sigma, batches = _setup(model, clients, epsilons, rounds, hyper, seed, init)
    n = clients.n_clients
    noise = Noise(seed, stream=1)
    personal = init.expand(G * n, -1).clone()
    cloud = personal.clone()
    mu = config.lam / config.alpha_k
    for _ in range(rounds):
        for _ in range(hyper.local_steps):
            x, y = gather_batch(clients, batches.draw(), G)
            sgd_step(model, personal, x, y, hyper.lr, mu=mu, anchor=cloud)
        uploads = private_upload(personal, hyper.clip, sigma, noise, n)
        xi = fedamp_weights(uploads, n, config)
        cloud = torch.bmm(xi, uploads.view(G, n, -1)).reshape(G * n, -1)
    return evaluate_personal(model, personal, clients)


def run_pfedme(
    model: Model, clients: Clients, epsilons: Sequence[float], rounds: int,
    hyper: Hyper | None = None, seed: int = 0, init: torch.Tensor | None = None,
    config: PFedMeConfig | None = None,
) -> PersonalResult:
    """DP-pFedMe: the clients' local models ``w_i`` are uploaded; ``theta_i`` is personal."""
    config = config or PFedMeConfig()
    hyper = hyper or Hyper()
    G, init, sigma, batches = _setup(model, clients, epsilons, rounds, hyper, seed, init)
    n = clients.n_clients
    noise = Noise(seed, stream=2)
    global_w = init.expand(G, -1).clone()
    theta = init.expand(G * n, -1).clone()
    for _ in range(rounds):
        local = global_w.repeat_interleave(n, dim=0)
        for _ in range(hyper.local_steps):
            x, y = gather_batch(clients, batches.draw(), G)
            for _ in range(config.inner_steps):
                sgd_step(model, theta, x, y, config.personal_lr, mu=config.lam, anchor=local)
            local.sub_(local - theta, alpha=hyper.lr * config.lam)
        uploads = private_upload(local, hyper.clip, sigma, noise, n)
        global_w = (1 - config.beta) * global_w + config.beta * average_clients(uploads, n)
    return evaluate_personal(model, theta, clients)


def apple_personal(cores: torch.Tensor, downloaded: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """APPLE personal models: ``v_i = p_ii c_i + sum_{j != i} p_ij c~_j``.

    ``cores`` (G, N, P) the clients' own cores, ``downloaded`` (G, N, P) the cores
    received from the server, ``p`` (G, N, N) the directed-relationship weights.
    """
    n = p.shape[1]
    eye = torch.eye(n, dtype=p.dtype)
    mixed = torch.bmm(p * (1 - eye), downloaded)
    return mixed + torch.diagonal(p, dim1=1, dim2=2)[:, :, None] * cores


def run_apple(
    model: Model, clients: Clients, epsilons: Sequence[float], rounds: int,
    hyper: Hyper | None = None, seed: int = 0, init: torch.Tensor | None = None,
    config: AppleConfig | None = None,
) -> PersonalResult:
    """DP-APPLE: clients upload their core models; personal models mix downloaded cores."""
    config = config or AppleConfig()
    hyper = hyper or Hyper()
    G, init, sigma, batches = _setup(model, clients, epsilons, rounds, hyper, seed, init)
    n = clients.n_clients
    noise = Noise(seed, stream=3)
    dtype = init.dtype
    cores = init.expand(G, n, -1).clone()
    downloaded = cores.clone()
    p0 = torch.full((n,), 1.0 / n, dtype=dtype)
    p = p0.expand(G, n, n).clone()
    eye = torch.eye(n, dtype=dtype)
    decay_rounds = max(1, round(config.decay_fraction * rounds))
    for r in range(rounds):
        lam_r = (math.cos(r * math.pi / decay_rounds) + 1) / 2 if r < decay_rounds else 0.0
        for _ in range(hyper.local_steps):
            x, y = gather_batch(clients, batches.draw(), G)
            v = apple_personal(cores, downloaded, p).reshape(G * n, -1)
            _, grad = model.loss_grad(v, x, y)
            grad = grad.view(G, n, -1)
            # d/dp_ij = <grad_i, c_j> (own core for j = i), plus the proximal pull to p0
            inner = torch.bmm(grad, downloaded.transpose(1, 2))
            own = (grad * cores).sum(dim=2)
            inner = inner * (1 - eye) + torch.diag_embed(own)
            cores.sub_(grad * torch.diagonal(p, dim1=1, dim2=2)[:, :, None], alpha=hyper.lr)
            p.sub_(inner + lam_r * config.mu * (p - p0), alpha=config.p_lr)
        uploads = private_upload(cores.reshape(G * n, -1), hyper.clip, sigma, noise, n)
        downloaded = uploads.view(G, n, -1)
    v = apple_personal(cores, downloaded, p).reshape(G * n, -1)
    return evaluate_personal(model, v, clients)


def ala_initialise(
    model: Model, clients: Clients, old: torch.Tensor, broadcast: torch.Tensor,
    weights: torch.Tensor, steps: int, batches: Batches, runs: int, config: FedAlaConfig,
) -> torch.Tensor:
    """FedALA's adaptive local aggregation: learn ``weights`` in place and return the new
    local models (lower layers from ``broadcast``, last layers mixed element-wise)."""
    head = model.head_slice(config.layers)
    diff = broadcast[:, head] - old[:, head]
    theta = broadcast.clone()
    for _ in range(steps):
        theta[:, head] = old[:, head] + diff * weights
        x, y = gather_batch(clients, batches.draw(), runs)
        _, grad = model.loss_grad(theta, x, y)
        weights.sub_(grad[:, head] * diff, alpha=config.eta).clamp_(0.0, 1.0)
    theta[:, head] = old[:, head] + diff * weights
    return theta


def run_fedala(
    model: Model, clients: Clients, epsilons: Sequence[float], rounds: int,
    hyper: Hyper | None = None, seed: int = 0, init: torch.Tensor | None = None,
    config: FedAlaConfig | None = None,
) -> PersonalResult:
    """DP-FedALA: the personal model is the ALA-initialised local model."""
    config = config or FedAlaConfig()
    hyper = hyper or Hyper()
    G, init, sigma, batches = _setup(model, clients, epsilons, rounds, hyper, seed, init)
    n = clients.n_clients
    noise = Noise(seed, stream=4)
    head = model.head_slice(config.layers)
    global_w = init.expand(G, -1).clone()
    local = init.expand(G * n, -1).clone()
    weights = torch.ones((G * n, head.stop - head.start), dtype=init.dtype)
    first = True
    for r in range(rounds):
        broadcast = global_w.repeat_interleave(n, dim=0)
        if r == 0:
            local = broadcast.clone()  # nothing to adapt yet: old model = global model
        else:
            steps = config.first_steps if first else config.steps
            first = False
            local = ala_initialise(model, clients, local, broadcast, weights, steps, batches,
                                   G, config)
        for _ in range(hyper.local_steps):
            x, y = gather_batch(clients, batches.draw(), G)
            sgd_step(model, local, x, y, hyper.lr)
        uploads = private_upload(local, hyper.clip, sigma, noise, n)
        global_w = average_clients(uploads, n)
    broadcast = global_w.repeat_interleave(n, dim=0)
    steps = config.first_steps if first else config.steps
    personal = ala_initialise(model, clients, local, broadcast, weights, steps, batches, G,
                              config)
    return evaluate_personal(model, personal, clients)


BASELINES = {"FedAMP": run_fedamp, "pFedMe": run_pfedme, "APPLE": run_apple,
             "FedALA": run_fedala}
"""The personalized baselines by name (DP-FedAvg and Local are DP-Ditto with
lambda = 1 and 0)."""
