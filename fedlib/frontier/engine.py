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
    clients
        For a part taken from a larger one (:meth:`take`): the indices of its clients
        there; ``None`` for a whole part.
    drawn
        The ``(clients, n_max)`` shape Poisson batches are drawn at: the whole part's, so
        that a part taken from it draws exactly the batches the whole would, and the
        clients left out of a round cost nothing but their draw.
    """

    x: Tensor
    y: Tensor
    mask: Tensor
    counts: Tensor
    clients: Tensor | None = None
    drawn: tuple[int, int] | None = None

    def take(self, clients: Tensor) -> ClientData:
        """The part of the clients at indices ``clients`` (int64 ``(c,)``)."""
        if self.clients is not None:
            raise ValueError("take() needs a whole part; this one was taken already.")
        return ClientData(self.x[clients], self.y[clients], self.mask[clients],
                          self.counts[clients], clients, tuple(self.mask.shape))

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
    client participation) and ``noise`` (privacy noise only). ``stream`` 1 gives the
    streams of a run's second phase (fine-tuning), independent of how many draws the
    first made."""

    def __init__(self, seed: int, stream: int = 0) -> None:
        self.batches = torch.Generator().manual_seed(2 * seed + 1_000_003 * stream)
        self.noise = torch.Generator().manual_seed(2 * seed + 1 + 1_000_003 * stream)

    def gaussian(self, shape: Sequence[int], std: float) -> Tensor:
        """``N(0, std^2)`` noise from the noise stream (zeros, and no draw, if std is 0)."""
        if std == 0.0:
            return torch.zeros(tuple(shape), dtype=DTYPE)
        return std * torch.randn(tuple(shape), generator=self.noise, dtype=DTYPE)


def poisson_batch(data: ClientData, rate: float, gen: Generators) -> Tensor:
    """0/1 ``(C, n_max)``: each real example of each client taken with probability ``rate``."""
    if rate >= 1.0:
        return data.mask.clone()
    if data.clients is None:
        draw = torch.rand(data.mask.shape, generator=gen.batches, dtype=DTYPE)
    else:
        draw = torch.rand(data.drawn, generator=gen.batches, dtype=DTYPE)[data.clients]
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
    x, y = data.x, data.y
    taken = int(batch.sum(dim=1).max()) if batch.numel() else 0
    if taken < batch.shape[1]:
        # Only the drawn examples enter the sum: gather them (a stable sort keeps their
        # order) and leave the rest of the padded rows out of the arithmetic.
        order = torch.argsort(-batch, dim=1, stable=True)[:, :taken]
        batch = torch.gather(batch, 1, order)
        x = torch.gather(x, 1, order.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        y = torch.gather(y, 1, order)
    r = residuals(w if offset is None else w + offset, x, y)
    total = clipped_gradient_sum(x, r, batch, clip)
    if noise_std != 0.0:
        total += gen.gaussian(total.shape, noise_std)
    return total.div_((rate * data.counts)[:, None, None])


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
            g += extra(w)
        w = torch.add(w, g, alpha=-lr)
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


def aggregate(updates: Tensor, weights: Tensor, client_rate: float, total_weight: float,
              gen: Generators, *, clip: float | None = None, noise_std: float = 0.0) -> Tensor:
    """The server's fixed-denominator estimate of the weighted mean update.

    ``(sum over the round's clients of w_i clip(update_i) + N(0, noise_std^2 I)) /
    (client_rate * total_weight)``, ``updates`` ``(c, ...)`` and ``weights`` ``(c,)``
    those of the clients present, ``total_weight`` the sum over all clients. With every
    client present and no clip or noise it is the weighted mean.
    """
    if clip is not None:
        updates = clip_updates(updates, clip)
    total = torch.einsum("c,c...->...", weights.to(DTYPE), updates)
    total = total + gen.gaussian(total.shape, noise_std)
    return total / (client_rate * total_weight)


def evaluate(w: Tensor, data: ClientData) -> tuple[np.ndarray, np.ndarray]:
    """Per-client accuracy and mean cross-entropy of models ``w`` ``(C, D, K)`` on ``data``."""
    with torch.no_grad():
        correct = (logits(w, data.x).argmax(dim=-1) == data.y).to(DTYPE) * data.mask
        loss = example_losses(w, data.x, data.y) * data.mask
    return ((correct.sum(1) / data.counts).numpy(), (loss.sum(1) / data.counts).numpy())
