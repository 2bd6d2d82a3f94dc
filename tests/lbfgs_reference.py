"""An independent reference optimum for the convergence tests: full-batch L-BFGS."""

from __future__ import annotations

from collections.abc import Callable

import torch


def lbfgs_minimum(fun: Callable[[torch.Tensor], torch.Tensor], x0: torch.Tensor,
                  max_iter: int = 5000) -> torch.Tensor:
    """Minimise a smooth scalar function of one tensor with strong-Wolfe L-BFGS,
    to tolerances far below what the tests compare at."""
    x = x0.clone().requires_grad_(True)
    opt = torch.optim.LBFGS([x], lr=1, max_iter=max_iter, tolerance_grad=1e-12,
                            tolerance_change=1e-15, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        value = fun(x)
        value.backward()
        return value

    opt.step(closure)
    return x.detach()
