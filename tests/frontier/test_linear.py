"""The softmax model's closed-form per-example gradients against autograd."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fedlib.frontier.linear import (
    clipped_gradient_sum,
    example_losses,
    per_example_gradient_norms,
    per_example_gradients,
    residuals,
    with_bias,
)


def _problem(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = with_bias(torch.randn((3, 7, 5), generator=g, dtype=torch.float64))
    w = torch.randn((3, 6, 4), generator=g, dtype=torch.float64)
    y = torch.randint(0, 4, (3, 7), generator=g)
    return w, x, y


def test_per_example_gradients_match_autograd():
    w, x, y = _problem()
    closed = per_example_gradients(w, x, y)
    for c in range(3):
        for j in range(7):
            wc = w[c].clone().requires_grad_(True)
            loss = F.cross_entropy((x[c, j] @ wc)[None], y[c, j][None])
            (g,) = torch.autograd.grad(loss, wc)
            torch.testing.assert_close(closed[c, j], g, rtol=0, atol=1e-10)


def test_losses_norms_and_clipped_sum_match_explicit_computation():
    w, x, y = _problem(1)
    losses = example_losses(w, x, y)
    explicit = torch.stack([F.cross_entropy(x[c] @ w[c], y[c], reduction="none")
                            for c in range(3)])
    torch.testing.assert_close(losses, explicit, rtol=0, atol=1e-12)
    grads = per_example_gradients(w, x, y)
    r = residuals(w, x, y)
    norms = per_example_gradient_norms(x, r)
    torch.testing.assert_close(norms, torch.linalg.vector_norm(grads, dim=(-2, -1)),
                               rtol=0, atol=1e-12)
    weights = (torch.arange(7) % 2).to(torch.float64).expand(3, 7)
    clip = 0.5 * float(norms.median())
    scale = torch.clamp(clip / norms, max=1.0)
    expected = (grads * (weights * scale)[..., None, None]).sum(dim=1)
    torch.testing.assert_close(clipped_gradient_sum(x, r, weights, clip), expected,
                               rtol=0, atol=1e-12)
    unclipped = (grads * weights[..., None, None]).sum(dim=1)
    torch.testing.assert_close(clipped_gradient_sum(x, r, weights, None), unclipped,
                               rtol=0, atol=1e-12)
    assert not torch.allclose(expected, unclipped)  # the clip did bite
