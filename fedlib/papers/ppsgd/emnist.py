"""PPSGD on per-user classification data: the linear and the CNN models of Bietti et al. (2022).

Both models are additive at the output: user i predicts ``Phi(x)^T (w + theta_i)``
with one column per class, trained on the squared loss against one-hot targets
minus 0.1 (one-versus-all), as the authors' code does.

* **linear**: ``Phi(x) = x`` (the 784 pixels). The gradients are closed forms,
  computed for every sampled user *and* every configuration of a grid with
  batched matrix products: user parameters are stored as ``(N, d, G*K)``.
* **cnn**: ``Phi_W`` is the authors' 4-layer convolutional representation; the
  shared parameters are ``W`` and ``w``. Per-user gradients come from
  ``torch.func`` (``grad`` inside ``vmap`` over the sampled users, inside
  ``vmap`` over the configurations of a grid).

One iteration samples Q users without replacement; each takes its next
minibatch of m examples (its own shuffled pass over its training data) and
computes its mean gradient g_i over those m examples. Then

    theta_i <- theta_i - step_theta * g_theta,i                 (never released)
    shared  <- shared - step_w * (mean_i clip_C(g_shared,i) + sigma * C * z / Q)

where clipping acts on the user's mean gradient of *all* shared parameters
together (per-user, not per-example, clipping). Only shared parameters are
released; each iteration is one Gaussian mechanism with noise multiplier sigma
over a sample of Q of the N users.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from fedlib.data.federated import FederatedClassification
from fedlib.papers.ppsgd.algorithm import PPSGDConfig, step_sizes

TARGET_OFFSET = 0.1
"""Targets are one-hot minus this offset (the authors' one-versus-all encoding)."""


@dataclass(frozen=True)
class Schedule:
    """Who trains on what at every iteration.

    Attributes
    ----------
    users
        int64 ``(T, Q)``: the users sampled at each iteration (without replacement).
    examples
        int64 ``(T, Q, m)``: rows of the training arrays each sampled user uses.
    """

    users: np.ndarray
    examples: np.ndarray

    @property
    def iterations(self) -> int:
        return self.users.shape[0]


def iterations_for_epochs(train_counts: np.ndarray, users_per_iteration: int, batch_size: int,
                          epochs: float) -> int:
    """Iterations that make ``epochs`` passes over the data: epochs * (full minibatches) / Q."""
    batches = int(np.sum(np.asarray(train_counts) // batch_size))
    return max(1, int(round(epochs * batches / users_per_iteration)))


def draw_schedule(
    data: FederatedClassification,
    iterations: int,
    users_per_iteration: int,
    batch_size: int,
    seed: int,
) -> Schedule:
    """Sample Q users per iteration uniformly without replacement; minibatches from per-user passes.

    Each user goes through its training examples in a fresh random order on
    each of its passes, m at a time (an incomplete last minibatch is skipped,
    as in the authors' code), so its minibatches never repeat within a pass.
    """
    counts = data.train_counts()
    n_users = data.n_users
    if not 1 <= users_per_iteration <= n_users:
        raise ValueError(
            f"users_per_iteration must lie in [1, {n_users}], got {users_per_iteration}"
        )
    if counts.min() < batch_size:
        raise ValueError(
            f"every user needs at least batch_size={batch_size} training examples; "
            f"the smallest has {counts.min()}: raise min_examples when splitting"
        )
    rng = np.random.default_rng(seed)
    users = np.zeros((iterations, users_per_iteration), dtype=np.int64)
    for t in range(iterations):
        users[t] = rng.choice(n_users, users_per_iteration, replace=False)
    rows_of = [np.flatnonzero(data.user_train == u) for u in range(n_users)]
    needed = np.bincount(users.ravel(), minlength=n_users)
    streams = []
    for u in range(n_users):
        per_pass = counts[u] // batch_size
        passes = -(-needed[u] // per_pass) if needed[u] else 0
        batches = [rng.permutation(rows_of[u])[: per_pass * batch_size]
                   .reshape(per_pass, batch_size) for _ in range(passes)]
        streams.append(np.concatenate(batches) if batches else np.zeros((0, batch_size), np.int64))
    cursor = np.zeros(n_users, dtype=np.int64)
    examples = np.empty((iterations, users_per_iteration, batch_size), dtype=np.int64)
    for t in range(iterations):
        for j, u in enumerate(users[t]):
            examples[t, j] = streams[u][cursor[u]]
            cursor[u] += 1
    return Schedule(users=users.astype(np.int64), examples=examples)


def eval_points(iterations: int, n_evals: int) -> list[int]:
    """Iterations (0 = initial model, ..., ``iterations``) at which test accuracy is measured."""
    n_evals = max(1, min(n_evals, iterations))
    return sorted({int(round(k * iterations / n_evals)) for k in range(n_evals + 1)})


def _targets(labels: torch.Tensor, n_classes: int, dtype: torch.dtype) -> torch.Tensor:
    return F.one_hot(labels, n_classes).to(dtype) - TARGET_OFFSET


def _config_tensors(configs: Sequence[PPSGDConfig], q: int, dtype, device):
    steps = [step_sizes(c.step, c.alpha_q) for c in configs]
    as_t = lambda v: torch.tensor(v, dtype=dtype, device=device)  # noqa: E731
    return (as_t([s[0] for s in steps]), as_t([s[1] for s in steps]),
            as_t([c.clip for c in configs]),
            as_t([c.noise_multiplier * c.clip / q for c in configs]))


@dataclass
class LinearResult:
    """Test accuracy at the evaluation points and the final parameters of a linear run.

    Attributes
    ----------
    eval_at
        Iterations of the evaluations.
    accuracy
        ``(G, len(eval_at))`` test accuracy (all test examples pooled).
    w
        ``(G, d, K)`` final global model.
    thetas
        ``(N, G, d, K)`` final personal models.
    """

    eval_at: list[int]
    accuracy: np.ndarray
    w: np.ndarray
    thetas: np.ndarray


def _linear_accuracy(x_test, y_test, user_test, n_users, w, thetas, n_configs, n_classes):
    """Pooled test accuracy of every configuration, ``(G,)``; params as ``(d, G*K)``."""
    correct = torch.zeros(n_configs, dtype=torch.float64, device=w.device)
    for u in range(n_users):
        rows = user_test[u]
        if rows.numel() == 0:
            continue
        scores = (x_test[rows] @ (w + thetas[u])).view(len(rows), n_configs, n_classes)
        correct += (scores.argmax(dim=2) == y_test[rows][:, None]).sum(dim=0)
    return (correct / len(y_test)).cpu().numpy()


def run_linear(
    data: FederatedClassification,
    schedule: Schedule,
    configs: Sequence[PPSGDConfig],
    *,
    eval_at: Sequence[int] | None = None,
    noise_seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> LinearResult:
    """Run linear PPSGD for a grid of configurations in one vectorized pass.

    All configurations see the same schedule and the same standard normal noise
    draws (common random numbers); only step sizes, personalization, noise
    multiplier and clipping norm differ.

    Parameters
    ----------
    data
        Per-user data with ``x`` of shape ``(n, d)``.
    schedule
        Users and minibatches of each iteration (:func:`draw_schedule`).
    configs
        G configurations.
    eval_at
        Iterations after which to measure test accuracy (default: the last).
    noise_seed
        Seed of the privacy noise.
    dtype, device
        Floating-point type and torch device of the computation.
    """
    if not configs:
        raise ValueError("configs is empty: give at least one PPSGDConfig")
    if data.x_train.ndim != 2:
        raise ValueError(f"the linear model needs flat inputs (n, d), got {data.x_train.shape}")
    iterations = schedule.iterations
    eval_at = [iterations] if eval_at is None else sorted(set(int(t) for t in eval_at))
    if eval_at and not 0 <= eval_at[0] <= eval_at[-1] <= iterations:
        raise ValueError(f"eval_at must lie in [0, {iterations}], got {eval_at}")
    n_configs, n_users, n_classes = len(configs), data.n_users, data.n_classes
    d = data.x_train.shape[1]
    q = schedule.users.shape[1]
    batch = schedule.examples.shape[2]
    x_train = torch.as_tensor(data.x_train, dtype=dtype, device=device)
    t_train = _targets(torch.as_tensor(data.y_train, device=device), n_classes, dtype)
    x_test = torch.as_tensor(data.x_test, dtype=dtype, device=device)
    y_test = torch.as_tensor(data.y_test, device=device)
    user_test = [torch.as_tensor(np.flatnonzero(data.user_test == u), device=device)
                 for u in range(n_users)]
    step_w, step_theta, clip, noise_std = _config_tensors(configs, q, dtype, device)
    step_theta_k = step_theta.repeat_interleave(n_classes)  # (G*K,)

    w = torch.zeros((d, n_configs * n_classes), dtype=dtype, device=device)
    thetas = torch.zeros((n_users, d, n_configs * n_classes), dtype=dtype, device=device)
    generator = torch.Generator().manual_seed(noise_seed)
    users_all = torch.as_tensor(schedule.users, device=device)
    examples_all = torch.as_tensor(schedule.examples, device=device)
    accuracy = np.full((n_configs, len(eval_at)), np.nan)
    pending = list(enumerate(eval_at))

    def evaluate(t: int) -> None:
        while pending and pending[0][1] == t:
            k, _ = pending.pop(0)
            if t == 0:  # every configuration starts from zero: one evaluation serves all
                accuracy[:, k] = _linear_accuracy(x_test, y_test, user_test, n_users,
                                                  w[:, :n_classes], thetas[:, :, :n_classes],
                                                  1, n_classes)
            else:
                accuracy[:, k] = _linear_accuracy(x_test, y_test, user_test, n_users, w,
                                                  thetas, n_configs, n_classes)

    evaluate(0)
    for t in range(iterations):
        users = users_all[t]
        rows = examples_all[t]
        x = x_train[rows]  # (Q, m, d)
        target = t_train[rows].repeat(1, 1, n_configs)  # (Q, m, G*K)
        local = thetas[users]  # (Q, d, G*K)
        residual = torch.bmm(x, local + w).sub_(target)  # (Q, m, G*K)
        grads = torch.bmm(x.transpose(1, 2), residual).div_(batch)  # (Q, d, G*K)
        per_config = grads.view(q, d, n_configs, n_classes)
        norms = torch.linalg.vector_norm(per_config, dim=(1, 3))  # (Q, G)
        factors = torch.clamp(clip / norms, max=1.0)
        clipped_mean = (per_config * factors[:, None, :, None]).sum(dim=0).div_(q)  # (d, G, K)
        z = torch.randn((d, n_classes), generator=generator, dtype=torch.float64).to(dtype)
        z = z.to(device)
        noisy = clipped_mean + noise_std[None, :, None] * z[:, None, :]
        thetas[users] = local - grads * step_theta_k
        w -= (noisy * step_w[None, :, None]).reshape(d, n_configs * n_classes)
        evaluate(t + 1)
    return LinearResult(
        eval_at=list(eval_at), accuracy=accuracy,
        w=w.view(d, n_configs, n_classes).permute(1, 0, 2).cpu().numpy(),
        thetas=thetas.view(n_users, d, n_configs, n_classes).permute(0, 2, 1, 3).cpu().numpy(),
    )


# ---------------------------------------------------------------------------
# CNN with a shared representation and a personalized output layer
# ---------------------------------------------------------------------------

FEATURES = 32
"""Width of the representation Phi_W(x) (the authors' ``fdim``)."""


class Representation(torch.nn.Module):
    """Phi_W: the authors' 4-layer CNN without its output layer.

    conv 16 x (8x8), stride 2, 'same' padding -> ReLU -> max-pool 2x2 (stride 1)
    -> conv 32 x (4x4), stride 2, 'valid' -> ReLU -> max-pool 2x2 (stride 1)
    -> dense 512 -> 32 -> ReLU. Input ``(n, 1, 28, 28)``, output ``(n, 32)``.
    """

    def __init__(self, features: int = FEATURES) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 8, stride=2, padding=3)
        self.conv2 = torch.nn.Conv2d(16, 32, 4, stride=2)
        self.fc = torch.nn.Linear(32 * 4 * 4, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.relu(self.conv1(x)), 2, stride=1)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2, stride=1)
        return F.relu(self.fc(h.flatten(1)))


def cnn_user_loss(params: dict[str, torch.Tensor], w: torch.Tensor, theta: torch.Tensor,
                  x: torch.Tensor, target: torch.Tensor, net: Representation) -> torch.Tensor:
    """A user's minibatch loss: mean over examples and classes of the squared error
    of ``Phi_W(x) (w + theta)`` (the authors' CNN loss)."""
    features = functional_call(net, params, (x,))
    return ((features @ (w + theta) - target) ** 2).mean()


def init_cnn(seed: int, n_classes: int = 10, dtype: torch.dtype = torch.float32
             ) -> tuple[Representation, dict[str, torch.Tensor], torch.Tensor]:
    """Network, its initial parameters (torch's default init) and w ~ N(0, 1/32), seeded."""
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        net = Representation().to(dtype)
        w = torch.randn((FEATURES, n_classes), dtype=dtype) / math.sqrt(FEATURES)
    finally:
        torch.random.set_rng_state(generator_state)
    params = {k: v.detach().clone() for k, v in net.named_parameters()}
    return net, params, w


@dataclass
class CNNResult:
    """Test accuracy at the evaluation points and the final parameters of a CNN run.

    Attributes
    ----------
    eval_at
        Iterations of the evaluations.
    accuracy
        ``(G, len(eval_at))`` test accuracy.
    params
        Final representation parameters, each ``(G, ...)``.
    w
        ``(G, 32, K)`` final global output layer.
    thetas
        ``(N, G, 32, K)`` final personal output layers.
    """

    eval_at: list[int]
    accuracy: np.ndarray
    params: dict[str, np.ndarray]
    w: np.ndarray
    thetas: np.ndarray


def _cnn_accuracy(net, params, w, thetas, x_test, y_test, user_test, chunk=2048):
    """Pooled test accuracy of every configuration, ``(G,)``."""
    features_of = vmap(lambda p, x: functional_call(net, p, (x,)), in_dims=(0, None))
    correct = torch.zeros(w.shape[0], dtype=torch.float64)
    for start in range(0, len(y_test), chunk):
        sl = slice(start, start + chunk)
        feats = features_of(params, x_test[sl])  # (G, n, F)
        heads = w[None] + thetas[user_test[sl]]  # (n, G, F, K)
        scores = torch.einsum("gnf,ngfk->gnk", feats, heads)
        correct += (scores.argmax(dim=2) == y_test[sl][None]).sum(dim=1).cpu().double()
    return (correct / len(y_test)).numpy()


def run_cnn(
    data: FederatedClassification,
    schedule: Schedule,
    configs: Sequence[PPSGDConfig],
    *,
    eval_at: Sequence[int] | None = None,
    init_seed: int = 0,
    noise_seed: int = 0,
    theta_step_scale: float = 1.0,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> CNNResult:
    """Run CNN PPSGD for a grid of configurations in one vectorized pass.

    Every configuration starts from the same initialization and sees the same
    schedule and noise draws. Per sampled user, the gradient of its mean loss
    over its m examples with respect to all shared parameters (``W`` and ``w``)
    is clipped as one vector to norm C; Gaussian noise of std sigma*C/Q is
    added to every shared parameter.

    Parameters
    ----------
    data
        Per-user data with ``x`` of shape ``(n, 1, 28, 28)``.
    schedule, configs, eval_at, noise_seed, dtype, device
        As in :func:`run_linear`.
    init_seed
        Seed of the initial representation and output layer.
    theta_step_scale
        Multiplies the personal step size. The authors' CNN code updates
        ``theta_i`` with ``Q * step_theta`` (pass Q to reproduce it); 1 is the
        update of the linear model.
    """
    if not configs:
        raise ValueError("configs is empty: give at least one PPSGDConfig")
    if data.x_train.ndim != 4 or data.x_train.shape[1:] != (1, 28, 28):
        raise ValueError(f"the CNN needs inputs (n, 1, 28, 28), got {data.x_train.shape}")
    iterations = schedule.iterations
    eval_at = [iterations] if eval_at is None else sorted(set(int(t) for t in eval_at))
    n_configs, n_classes = len(configs), data.n_classes
    q = schedule.users.shape[1]
    net, params0, w0 = init_cnn(init_seed, n_classes, dtype)
    net = net.to(device)
    params = {k: v.to(device).expand(n_configs, *v.shape).clone() for k, v in params0.items()}
    w = w0.to(device).expand(n_configs, *w0.shape).clone()
    thetas = torch.zeros((data.n_users, n_configs, FEATURES, n_classes), dtype=dtype, device=device)
    step_w, step_theta, clip, noise_std = _config_tensors(configs, q, dtype, device)
    step_theta = step_theta * theta_step_scale

    x_train = torch.as_tensor(data.x_train, dtype=dtype, device=device)
    t_train = _targets(torch.as_tensor(data.y_train, device=device), n_classes, dtype)
    x_test = torch.as_tensor(data.x_test, dtype=dtype, device=device)
    y_test = torch.as_tensor(data.y_test, device=device)
    user_test = torch.as_tensor(data.user_test, device=device)

    user_grad = grad(lambda p, w_, th, x, y: cnn_user_loss(p, w_, th, x, y, net), argnums=(0, 1, 2))
    # Inner vmap: sampled users (own theta and data; shared params). Outer: configurations
    # (own params, w, thetas; same data).
    per_user = vmap(user_grad, in_dims=(None, None, 0, 0, 0))
    per_config = vmap(per_user, in_dims=(0, 0, 1, None, None))
    generator = torch.Generator().manual_seed(noise_seed)
    shapes = {k: v.shape for k, v in params0.items()}

    accuracy = np.full((n_configs, len(eval_at)), np.nan)
    pending = list(enumerate(eval_at))

    def evaluate(t: int) -> None:
        while pending and pending[0][1] == t:
            k, _ = pending.pop(0)
            with torch.no_grad():
                if t == 0:  # every configuration starts from the same point
                    first = {name: v[:1] for name, v in params.items()}
                    accuracy[:, k] = _cnn_accuracy(net, first, w[:1], thetas[:, :1], x_test,
                                                   y_test, user_test)
                else:
                    accuracy[:, k] = _cnn_accuracy(net, params, w, thetas, x_test, y_test,
                                                   user_test)

    evaluate(0)
    for t in range(iterations):
        users = torch.as_tensor(schedule.users[t], device=device)
        rows = torch.as_tensor(schedule.examples[t], device=device)
        g_params, g_w, g_theta = per_config(params, w, thetas[users], x_train[rows], t_train[rows])
        # g_params[k]: (G, Q, ...), g_w: (G, Q, F, K), g_theta: (G, Q, F, K)
        sq = g_w.pow(2).sum(dim=(2, 3))
        for g in g_params.values():
            sq = sq + g.pow(2).flatten(2).sum(dim=2)
        factors = torch.clamp(clip[:, None] / sq.sqrt(), max=1.0)  # (G, Q)

        def noisy_mean(g: torch.Tensor, shape: torch.Size, factors=factors) -> torch.Tensor:
            mean = (g * factors.view(*factors.shape, *([1] * len(shape)))).sum(dim=1) / q
            z = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype).to(device)
            return mean + noise_std.view(-1, *([1] * len(shape))) * z

        with torch.no_grad():
            for k in params:
                update = noisy_mean(g_params[k], shapes[k])
                params[k] = params[k] - step_w.view(-1, *([1] * len(shapes[k]))) * update
            w = w - step_w.view(-1, 1, 1) * noisy_mean(g_w, w0.shape)
            local = thetas[users] - step_theta.view(1, -1, 1, 1) * g_theta.transpose(0, 1)
            thetas[users] = local
        evaluate(t + 1)
    return CNNResult(
        eval_at=list(eval_at), accuracy=accuracy,
        params={k: v.cpu().numpy() for k, v in params.items()},
        w=w.cpu().numpy(), thetas=thetas.cpu().numpy(),
    )
