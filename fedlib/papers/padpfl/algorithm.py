"""PADPFL (Talaei & Izadi): personalized aggregation in differentially private FL.

Every round, each client starts from the broadcast model, runs full-batch
FedProx gradient steps on its data, clips its weights to norm ``B`` and uploads
them with Gaussian noise of standard deviation ``sigma_C``. The server averages
the noisy uploads with the impact factors ``p`` (non-negative, summing to one,
possibly changing from round to round) and broadcasts the average plus Gaussian
noise of standard deviation ``sigma_S``.

The model is a one-hidden-layer ReLU perceptron trained with softmax
cross-entropy, with gradients in closed form. A whole batch of runs that share
the clients' data (different impact factors or noise levels) is simulated at
once: every client of every run is one slice of stacked tensors, and the runs
are laid side by side along the hidden layer so that the first layer of all
runs is a single wide matrix product per client.

Runs in one batch see the same initial model and the same standard-normal noise
draws, scaled by their own noise levels (common random numbers), so their
curves differ only through what the runs differ in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fedlib.checks import check_impact_factors


@dataclass(frozen=True)
class LocalSolver:
    """The clients' local FedProx solver and the weight clipping bound.

    Parameters
    ----------
    lr
        Step size of the full-batch gradient steps.
    steps
        Local steps per round.
    mu
        FedProx proximal weight (pull towards the broadcast model).
    clip
        Weight clipping bound ``B``: each upload has L2 norm at most ``clip``.
    """

    lr: float = 0.02
    steps: int = 10
    mu: float = 0.01
    clip: float = 10.0

    def __post_init__(self) -> None:
        for name in ("lr", "clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not self.mu >= 0:
            raise ValueError(f"mu must be >= 0, got {self.mu!r}")
        if not (isinstance(self.steps, int) and self.steps >= 1):
            raise ValueError(f"steps must be an integer >= 1, got {self.steps!r}")


@dataclass
class MLPParams:
    """MLP weights of G runs, optionally for N clients each.

    Client layout: W1 (N, d, G, h), b1 (N, G, h), W2 (N, G, h, k), b2 (N, G, k).
    Global layout: the same without the leading N.
    """

    W1: torch.Tensor
    b1: torch.Tensor
    W2: torch.Tensor
    b2: torch.Tensor

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.W1, self.b1, self.W2, self.b2)


# Axis of the run index in each tensor of the global layout (W1, b1, W2, b2).
_RUN_AXIS = (1, 0, 0, 0)


def _along(values: torch.Tensor, tensor: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    """Reshape ``values`` so that its dimensions line up with ``axes`` of ``tensor``."""
    shape = [1] * tensor.dim()
    for axis, size in zip(axes, values.shape, strict=True):
        shape[axis] = size
    return values.reshape(shape)


def init_mlp(
    n_features: int, hidden: int, n_classes: int, runs: int, generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> MLPParams:
    """PyTorch's default linear-layer initialisation, the same for every run."""
    def uniform(shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
        bound = 1.0 / np.sqrt(fan_in)
        return (torch.rand(shape, generator=generator, dtype=dtype) * 2 - 1) * bound

    W1 = uniform((n_features, 1, hidden), n_features).expand(n_features, runs, hidden)
    b1 = uniform((1, hidden), n_features).expand(runs, hidden)
    W2 = uniform((1, hidden, n_classes), hidden).expand(runs, hidden, n_classes)
    b2 = uniform((1, n_classes), hidden).expand(runs, n_classes)
    return MLPParams(W1.contiguous(), b1.contiguous(), W2.contiguous(), b2.contiguous())


@dataclass
class _LocalState:
    """The clients' models during a round, first layer in the row space of their data.

    A client's first layer is ``W1 = W1_broadcast + X^T A`` (X: its (m, d) data):
    every gradient of the first layer is X^T times something, and the proximal
    term only shrinks the difference to the broadcast model. So only the (m, G h)
    coefficients ``A`` are updated, the pre-activations are
    ``X W1_broadcast + (X X^T) A``, and the (N, d, G, h) stack of client weights
    is never formed. ``b1`` (N, G, h), ``W2`` (N, G, h, k), ``b2`` (N, G, k).
    """

    A: torch.Tensor
    b1: torch.Tensor
    W2: torch.Tensor
    b2: torch.Tensor


def _start_round(broadcast: MLPParams, n_clients: int, m: int) -> _LocalState:
    d, g, h = broadcast.W1.shape
    copy = [t.unsqueeze(0).expand(n_clients, *t.shape).clone() for t in broadcast.tensors()[1:]]
    zeros = torch.zeros(n_clients, m, g * h, dtype=broadcast.W1.dtype)
    return _LocalState(zeros, *copy)


def _local_step(
    base: torch.Tensor, gram: torch.Tensor, onehot: torch.Tensor, weights: torch.Tensor,
    state: _LocalState, anchor: MLPParams, lr: float, mu: float,
) -> None:
    """One full-batch FedProx step of every client, in place.

    Minimises sum_j weights[n, j] CE_j + (mu/2)||w - anchor||^2 by
    w <- (1 - lr mu) w + lr mu anchor - lr grad. ``base`` is X W1_broadcast
    (N, m, G h) and ``gram`` is X X^T (N, m, m).
    """
    n, m, gh = base.shape
    _, g, h, _ = state.W2.shape
    z1 = (base + torch.bmm(gram, state.A)).view(n, m, g, h) + state.b1[:, None]
    hidden = z1.clamp_min(0)
    logits = torch.einsum("nmgh,nghk->nmgk", hidden, state.W2) + state.b2[:, None]
    d_logits = torch.softmax(logits, dim=-1).sub_(onehot[:, :, None, :])
    d_logits.mul_(weights[:, :, None, None])
    d_z1 = torch.einsum("nmgk,nghk->nmgh", d_logits, state.W2).mul_(z1 > 0)
    grads = (
        d_z1.sum(dim=1),
        torch.einsum("nmgh,nmgk->nghk", hidden, d_logits),
        d_logits.sum(dim=1),
    )
    keep = 1.0 - lr * mu
    state.A.mul_(keep).add_(d_z1.reshape(n, m, gh), alpha=-lr)
    for w, grad, w0 in zip((state.b1, state.W2, state.b2), grads, anchor.tensors()[1:],
                           strict=True):
        w.mul_(keep).add_(grad, alpha=-lr)
        if mu:
            w.add_(w0.unsqueeze(0), alpha=lr * mu)


def _client_norms(
    state: _LocalState, broadcast: MLPParams, base: torch.Tensor, gram: torch.Tensor
) -> torch.Tensor:
    """L2 norm of each client's model in each run, (N, G), without forming W1.

    ||W1_b + X^T A||^2 = ||W1_b||^2 + 2 <X W1_b, A> + <A, X X^T A>.
    """
    n, m, gh = state.A.shape
    _, g, h, _ = state.W2.shape
    w1 = (
        broadcast.W1.pow(2).sum(dim=(0, 2))[None]
        + 2 * (base * state.A).view(n, m, g, h).sum(dim=(1, 3))
        + (torch.bmm(gram, state.A) * state.A).view(n, m, g, h).sum(dim=(1, 3))
    )
    rest = (state.b1.pow(2).sum(dim=2) + state.W2.pow(2).sum(dim=(2, 3))
            + state.b2.pow(2).sum(dim=2))
    return torch.sqrt(torch.clamp(w1 + rest, min=0.0))


def evaluate(
    params: MLPParams, x: torch.Tensor, y: torch.Tensor, chunk: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Mean cross-entropy and accuracy of the G global models on (x, y): two (G,) arrays."""
    d, g, h = params.W1.shape
    loss = torch.zeros(g, dtype=torch.float64)
    correct = torch.zeros(g, dtype=torch.float64)
    for start in range(0, len(y), chunk):
        xb, yb = x[start:start + chunk], y[start:start + chunk]
        z1 = (xb @ params.W1.reshape(d, g * h)).view(len(yb), g, h) + params.b1
        logits = torch.einsum("bgh,ghk->bgk", z1.clamp_min(0), params.W2) + params.b2
        logp = torch.log_softmax(logits, dim=-1)
        picked = logp.gather(2, yb[:, None, None].expand(len(yb), g, 1)).squeeze(2)
        loss -= picked.sum(dim=0).double()
        correct += (logits.argmax(dim=-1) == yb[:, None]).sum(dim=0).double()
    return (loss / len(y)).numpy(), (correct / len(y)).numpy()


def check_impact_schedule(impact: np.ndarray, n_clients: int) -> np.ndarray:
    """Validate impact factors of shape (runs, rounds, N): every round of every run is a
    probability vector over the N clients (:func:`fedlib.privacy.check_impact_factors`)."""
    impact = np.asarray(impact, dtype=np.float64)
    if impact.ndim != 3 or impact.shape[2] != n_clients:
        raise ValueError(
            f"impact factors must have shape (runs, rounds, clients={n_clients}), "
            f"got {impact.shape}"
        )
    for g, t in np.ndindex(*impact.shape[:2]):
        check_impact_factors(impact[g, t], name=f"impact[{g}, {t}]")
    return impact


@dataclass(frozen=True, eq=False)
class PadpflHistory:
    """Curves of a batch of G runs over rounds 0..T (round 0: the initial model).

    ``loss`` and ``accuracy`` map each evaluation set's name to a (G, T+1) array.
    ``upload_norm`` is the mean over clients of the clipped upload norm, (G, T).
    ``final`` is the last broadcast model of every run (global layout).
    """

    loss: dict[str, np.ndarray]
    accuracy: dict[str, np.ndarray]
    upload_norm: np.ndarray
    final: MLPParams


def run_padpfl(
    client_x: Sequence[torch.Tensor] | torch.Tensor,
    client_y: torch.Tensor,
    mask: torch.Tensor,
    impact: np.ndarray,
    client_sigma: Sequence[float],
    server_sigma: np.ndarray,
    *,
    hidden: int,
    n_classes: int = 10,
    solver: LocalSolver = LocalSolver(),
    data_schedule: Sequence[int] | None = None,
    eval_sets: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
    seed: int = 0,
) -> PadpflHistory:
    """Run G PADPFL trainings on the same clients at once.

    Parameters
    ----------
    client_x
        Client features (N, m, d), rows beyond a client's size padded (any value);
        or several such tensors, one per data phase (see ``data_schedule``).
    client_y
        Labels (N, m), int64.
    mask
        (N, m) bool, True for a client's real examples.
    impact
        Impact factors (G, T, N): run g aggregates round t with ``impact[g, t]``.
    client_sigma
        (G,) standard deviation of each client's upload noise (0 for none).
    server_sigma
        (G, T) standard deviation of the server noise in each round (0 for none).
    hidden, n_classes
        Width of the hidden layer and number of classes.
    solver
        Local FedProx solver and clipping bound.
    data_schedule
        With several ``client_x`` tensors: the first round (1-based) of each
        phase after the first; e.g. ``[11]`` switches data after round 10.
    eval_sets
        Name -> (x, y) on which the broadcast model is evaluated after every round.
    seed
        Seed of the initial model and of the noise.

    Notes
    -----
    Random draws, in order: the initial model (:func:`init_mlp`); then every
    round, for each tensor W1, b1, W2, b2 in turn, one standard-normal draw of
    the clients' stacked shape with the run axis of size 1 (client noise) and
    one of the global shape with the run axis of size 1 (server noise).
    """
    phases = [client_x] if isinstance(client_x, torch.Tensor) else list(client_x)
    starts = [1, *(data_schedule or [])]
    if len(starts) != len(phases):
        raise ValueError(f"{len(phases)} data phases need {len(phases) - 1} switch rounds, "
                         f"got data_schedule={data_schedule!r}")
    n, m, d = phases[0].shape
    if any(p.shape != phases[0].shape for p in phases):
        raise ValueError("every data phase must have the same shape")
    if client_y.shape != (n, m) or mask.shape != (n, m):
        raise ValueError(f"labels and mask must have shape {(n, m)}, got {tuple(client_y.shape)} "
                         f"and {tuple(mask.shape)}")
    counts = mask.sum(dim=1)
    if int(counts.min()) < 1:
        raise ValueError("every client needs at least one example")
    impact = check_impact_schedule(impact, n)
    runs, rounds = impact.shape[:2]
    client_sigma = np.asarray(client_sigma, dtype=np.float64)
    server_sigma = np.asarray(server_sigma, dtype=np.float64)
    if client_sigma.shape != (runs,) or server_sigma.shape != (runs, rounds):
        raise ValueError(f"client_sigma must have shape {(runs,)} and server_sigma "
                         f"{(runs, rounds)}, got {client_sigma.shape} and {server_sigma.shape}")
    if client_sigma.min() < 0 or server_sigma.min() < 0:
        raise ValueError("noise standard deviations must be >= 0")

    dtype = phases[0].dtype
    generator = torch.Generator().manual_seed(int(seed))
    weights = mask.to(dtype) / counts[:, None].to(dtype)
    onehot = torch.nn.functional.one_hot(client_y, n_classes).to(dtype)
    p_all = torch.as_tensor(impact, dtype=dtype)
    sig_c = torch.as_tensor(client_sigma, dtype=dtype)
    sig_s = torch.as_tensor(server_sigma, dtype=dtype)
    eval_sets = eval_sets or {}

    broadcast = init_mlp(d, hidden, n_classes, runs, generator, dtype)
    loss = {name: np.zeros((runs, rounds + 1)) for name in eval_sets}
    accuracy = {name: np.zeros((runs, rounds + 1)) for name in eval_sets}
    upload_norm = np.zeros((runs, rounds))

    def record(t: int) -> None:
        for name, (ex, ey) in eval_sets.items():
            loss[name][:, t], accuracy[name][:, t] = evaluate(broadcast, ex, ey)

    record(0)
    flat = [x.reshape(n * m, d) for x in phases]
    grams = [torch.bmm(x, x.transpose(1, 2)) for x in phases]
    phase = 0
    for t in range(1, rounds + 1):
        while phase + 1 < len(starts) and t >= starts[phase + 1]:
            phase += 1
        x, gram = flat[phase], grams[phase]
        base = (x @ broadcast.W1.reshape(d, runs * hidden)).view(n, m, runs * hidden)
        state = _start_round(broadcast, n, m)
        for _ in range(solver.steps):
            _local_step(base, gram, onehot, weights, state, broadcast, solver.lr, solver.mu)
        norms = _client_norms(state, broadcast, base, gram)
        scale = torch.clamp(solver.clip / torch.clamp(norms, min=1e-30), max=1.0)
        upload_norm[:, t - 1] = (norms * scale).mean(dim=0).numpy()
        p = p_all[:, t - 1, :].T  # (N, G)
        weight = p * scale  # each client's clipped model enters the average with this factor

        # First layer: sum_n weight_n (W1_b + X_n^T A_n) + sum_n p_n sigma_C z_n.
        coef = (state.A.view(n, m, runs, hidden) * weight[:, None, :, None]).reshape(n * m, -1)
        w1 = broadcast.W1 * weight.sum(dim=0)[None, :, None]
        w1 = w1 + (x.T @ coef).view(d, runs, hidden)
        z = torch.randn((n, d, 1, hidden), generator=generator, dtype=dtype)[:, :, 0]
        w1 = w1 + torch.einsum("ng,ndh->dgh", p, z) * sig_c[None, :, None]
        server = torch.randn((d, 1, hidden), generator=generator, dtype=dtype)
        new = [w1 + server * sig_s[None, :, t - 1, None]]

        for w, run_axis in zip((state.b1, state.W2, state.b2), _RUN_AXIS[1:], strict=True):
            client_axes = (0, run_axis + 1)
            upload = w * _along(scale, w, client_axes)
            noise = torch.randn(_shared_shape(w, run_axis + 1), generator=generator, dtype=dtype)
            upload = upload + noise * _along(sig_c, w, (run_axis + 1,))
            aggregate = (upload * _along(p, w, client_axes)).sum(dim=0)
            server = torch.randn(_shared_shape(aggregate, run_axis), generator=generator,
                                 dtype=dtype)
            new.append(aggregate + server * _along(sig_s[:, t - 1], aggregate, (run_axis,)))
        broadcast = MLPParams(*new)
        record(t)
    return PadpflHistory(loss=loss, accuracy=accuracy, upload_norm=upload_norm, final=broadcast)


def _shared_shape(tensor: torch.Tensor, run_axis: int) -> tuple[int, ...]:
    """Shape of ``tensor`` with its run axis set to 1: one noise draw shared by all runs."""
    return tuple(1 if i == run_axis else s for i, s in enumerate(tensor.shape))
