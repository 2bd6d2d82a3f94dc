"""Batched federated training of the softmax model: data padding, sampling, local steps,
aggregation and evaluation shared by every method of the comparison.

Clients are a leading tensor axis: their examples are padded to ``(C, n_max, D)``
with a 0/1 mask, their models are ``(C, D, K)``. A local step draws a Poisson batch
(each real example with probability ``rate``), sums the (optionally clipped)
per-example gradients, adds the (optional) Gaussian noise and divides by the expected
batch size ``rate * n_i`` -- the estimator whose sensitivity the accountant assumes.
Randomness comes from two generators: one for batches and participation, one for
noise only, so a run without noise draws exactly the same batches as a noisy one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from fedlib.frontier.linear import (
    clip_factors,
    clipped_gradient_sum,
    example_losses,
    logits,
    residuals,
    with_bias,
)

__all__ = [
    "DTYPE",
    "ClientData",
    "Generators",
    "aggregate",
    "clip_updates",
    "evaluate",
    "gradient_estimate",
    "local_sgd",
    "participation",
    "poisson_batch",
]

DTYPE = torch.float64
BYTES_PER_FLOAT = 4
"""Uplink cost per float sent (float32 on the wire, as the PFA paper counts)."""


@dataclass(frozen=True)
class ClientData:
    """One part (train, validation or test) of every client, padded.

    Attributes
    ----------
    x
        ``(C, n_max, D)`` features with the bias feature appended; padding rows are 0.
    y
        ``(C, n_max)`` int64 classes (0 on padding).
    mask
        ``(C, n_max)`` 1.0 for a real example, 0.0 for padding.
    counts
        ``(C,)`` real examples per client (float).
    """

    x: Tensor
    y: Tensor
    mask: Tensor
    counts: Tensor

    @classmethod
    def pad(cls, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> ClientData:
        n_max = max(len(y) for y in ys)
        c, dim = len(xs), xs[0].shape[1]
        x = torch.zeros((c, n_max, dim), dtype=DTYPE)
        y = torch.zeros((c, n_max), dtype=torch.int64)
        mask = torch.zeros((c, n_max), dtype=DTYPE)
        for i, (xi, yi) in enumerate(zip(xs, ys, strict=True)):
            x[i, : len(yi)] = torch.from_numpy(np.array(xi, dtype=np.float64))
            y[i, : len(yi)] = torch.from_numpy(np.array(yi, dtype=np.int64))
            mask[i, : len(yi)] = 1.0
        x = with_bias(x) * mask.unsqueeze(-1)
        return cls(x, y, mask, mask.sum(dim=1))

    @property
    def n_clients(self) -> int:
        return self.x.shape[0]


class Generators:
    """The run's random streams, seeded from ``seed``: ``batches`` (example batches and
    client participation) and ``noise`` (privacy noise only)."""

    def __init__(self, seed: int) -> None:
        self.batches = torch.Generator().manual_seed(2 * seed)
        self.noise = torch.Generator().manual_seed(2 * seed + 1)

    def gaussian(self, shape: Sequence[int], std: float) -> Tensor:
        """``N(0, std^2)`` noise from the noise stream (zeros, and no draw, if std is 0)."""
        if std == 0.0:
            return torch.zeros(tuple(shape), dtype=DTYPE)
        return std * torch.randn(tuple(shape), generator=self.noise, dtype=DTYPE)


def poisson_batch(data: ClientData, rate: float, gen: Generators) -> Tensor:
    """0/1 ``(C, n_max)``: each real example of each client taken with probability ``rate``."""
    if rate >= 1.0:
        return data.mask.clone()
    draw = torch.rand(data.mask.shape, generator=gen.batches, dtype=DTYPE)
    return (draw < rate).to(DTYPE) * data.mask


def gradient_estimate(w: Tensor, data: ClientData, rate: float, gen: Generators, *,
                      clip: float | None = None, noise_std: float = 0.0,
                      offset: Tensor | None = None) -> Tensor:
    """One step's gradient per client, ``(C, D, K)``.

    ``(sum over a Poisson batch of per-example gradients, each clipped to ``clip`` if
    given, + N(0, noise_std^2 I)) / (rate * n_i)``. ``offset`` is added to ``w`` in the
    forward pass (an additive personal model); the gradient is the same for both.
    """
    batch = poisson_batch(data, rate, gen)
    r = residuals(w if offset is None else w + offset, data.x, data.y)
    total = clipped_gradient_sum(data.x, r, batch, clip)
    total = total + gen.gaussian(total.shape, noise_std)
    return total / (rate * data.counts)[:, None, None]


def local_sgd(w: Tensor, data: ClientData, steps: int, lr: float, rate: float, gen: Generators,
              *, clip: float | None = None, noise_std: float = 0.0,
              extra: Callable[[Tensor], Tensor] | None = None) -> Tensor:
    """``steps`` SGD steps of every client from ``w`` ``(C, D, K)``; returns the new models.

    ``extra(w)`` adds a data-free gradient term (a proximal pull), computed from public
    quantities only.
    """
    for _ in range(steps):
        g = gradient_estimate(w, data, rate, gen, clip=clip, noise_std=noise_std)
        if extra is not None:
            g = g + extra(w)
        w = w - lr * g
    return w


def participation(n_clients: int, rounds: int, client_rate: float, gen: Generators) -> Tensor:
    """``(rounds, C)`` booleans: client i takes part in round t with probability ``client_rate``."""
    if client_rate >= 1.0:
        return torch.ones((rounds, n_clients), dtype=torch.bool)
    return torch.rand((rounds, n_clients), generator=gen.batches, dtype=DTYPE) < client_rate


def clip_updates(updates: Tensor, bound: float) -> Tensor:
    """Each client's update ``(C, ...)`` scaled down to L2 norm at most ``bound``."""
    norms = torch.linalg.vector_norm(updates.reshape(len(updates), -1), dim=1)
    return updates * clip_factors(norms, bound).reshape(-1, *([1] * (updates.dim() - 1)))


def aggregate(updates: Tensor, active: Tensor, client_rate: float, gen: Generators, *,
              weights: Tensor | None = None, clip: float | None = None,
              noise_std: float = 0.0) -> Tensor:
    """The server's fixed-denominator estimate of the weighted mean update.

    ``(sum over active clients of w_i clip(update_i) + N(0, noise_std^2 I)) /
    (client_rate * sum over all clients of w_i)``; plain weights 1 by default. With
    every client active and no clip or noise it is the weighted mean.
    """
    n = len(updates)
    w = torch.ones(n, dtype=DTYPE) if weights is None else weights.to(DTYPE)
    if clip is not None:
        updates = clip_updates(updates, clip)
    coefficient = w * active.to(DTYPE)
    total = torch.einsum("c,c...->...", coefficient, updates)
    total = total + gen.gaussian(total.shape, noise_std)
    return total / (client_rate * w.sum())


def evaluate(w: Tensor, data: ClientData) -> tuple[np.ndarray, np.ndarray]:
    """Per-client accuracy and mean cross-entropy of models ``w`` ``(C, D, K)`` on ``data``."""
    with torch.no_grad():
        correct = (logits(w, data.x).argmax(dim=-1) == data.y).to(DTYPE) * data.mask
        loss = example_losses(w, data.x, data.y) * data.mask
    return ((correct.sum(1) / data.counts).numpy(), (loss.sum(1) / data.counts).numpy())
