"""The one model of the comparison: multinomial logistic regression, batched over clients.

A client's model is a ``(D, K)`` matrix acting on features with a constant 1 appended
(``D = dim + 1``: the last row is the bias); a federation's models are stacked as
``(C, D, K)``. For one example ``(x, y)`` with probabilities ``p = softmax(W^T x)`` the
cross-entropy gradient is the outer product ``x (p - e_y)^T``, whose Frobenius norm is
``||x|| ||p - e_y||``: per-example gradients, their norms and clipped sums are exact
closed forms, never formed one by one.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "clip_factors",
    "clipped_gradient_sum",
    "example_losses",
    "logits",
    "per_example_gradient_norms",
    "per_example_gradients",
    "residuals",
    "with_bias",
]


def with_bias(x: Tensor) -> Tensor:
    """Features ``(..., dim)`` with a constant 1 appended: ``(..., dim + 1)``."""
    return torch.cat([x, torch.ones_like(x[..., :1])], dim=-1)


def logits(w: Tensor, x: Tensor) -> Tensor:
    """``(C, n, K)`` scores of models ``w`` ``(C, D, K)`` on examples ``x`` ``(C, n, D)``."""
    return torch.einsum("cnd,cdk->cnk", x, w)


def residuals(w: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """``p - e_y`` per example, ``(C, n, K)``; ``y`` holds int64 classes ``(C, n)``."""
    r = torch.softmax(logits(w, x), dim=-1)
    return r - torch.nn.functional.one_hot(y, r.shape[-1]).to(r.dtype)


def example_losses(w: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy of every example, ``(C, n)``."""
    scores = torch.log_softmax(logits(w, x), dim=-1)
    return -scores.gather(-1, y.unsqueeze(-1)).squeeze(-1)


def per_example_gradients(w: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """Every example's gradient of its cross-entropy, ``x (p - e_y)^T``: ``(C, n, D, K)``."""
    return torch.einsum("cnd,cnk->cndk", x, residuals(w, x, y))


def per_example_gradient_norms(x: Tensor, r: Tensor) -> Tensor:
    """Frobenius norms of the per-example gradients, ``||x|| ||p - e_y||``: ``(C, n)``."""
    return torch.linalg.vector_norm(x, dim=-1) * torch.linalg.vector_norm(r, dim=-1)


def clip_factors(norms: Tensor, clip: float) -> Tensor:
    """``min(1, clip / norm)``: the scaling that clips a vector of norm ``norm`` to ``clip``."""
    return torch.clamp(clip / norms.clamp_min(torch.finfo(norms.dtype).tiny), max=1.0)


def clipped_gradient_sum(x: Tensor, r: Tensor, weights: Tensor, clip: float | None) -> Tensor:
    """``sum_j weights_j clip(x_j (p_j - e_j)^T)`` per client, ``(C, D, K)``.

    ``weights`` ``(C, n)`` selects (0/1) the examples of a step; ``clip=None`` sums the
    gradients unclipped.
    """
    if clip is not None:
        weights = weights * clip_factors(per_example_gradient_norms(x, r), clip)
    return torch.einsum("cnd,cn,cnk->cdk", x, weights, r)
