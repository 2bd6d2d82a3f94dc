"""Per-client reference loops for :func:`fedlib.nn.dpsgd.local_dpsgd` (tests and benchmark).

Both run the clients one after the other, each on a fresh copy of the model,
over the same given batches, and return the deltas x_start - x_end in the
engine's stacked form:

* :func:`opacus_local_dpsgd`: how most federated-learning code does it, an
  Opacus :class:`~opacus.GradSampleModule` and :class:`~opacus.optimizers.DPOptimizer`
  around a plain SGD optimizer per client;
* :func:`plain_local_dpsgd`: the same without Opacus, per-example gradients from
  ``torch.func`` (``vmap`` of ``grad`` over one client's batch), then flat
  clipping, Gaussian noise per parameter and an SGD step.

Parameters with ``requires_grad=False`` are left alone by both, as Opacus does
it: no per-example gradient, no part in the clipping norm, no noise, no step
(their deltas are 0).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from fedlib.nn.dpsgd import CLIP_EPSILON


def _client_start(model: nn.Module, start: Mapping[str, Tensor] | None, client: int,
                  ) -> dict[str, Tensor]:
    """Client ``client``'s starting parameters (shared or stacked ``start``), as copies."""
    out = {}
    for name, param in model.named_parameters():
        value = param if start is None else start[name]
        if value.shape != param.shape:
            value = value[client]
        out[name] = value.detach().clone()
    return out


def _stack(per_client: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    return {k: torch.stack([d[k] for d in per_client]) for k in per_client[0]}


def opacus_local_dpsgd(
    model: nn.Module,
    start: Mapping[str, Tensor] | None,
    x: Tensor,
    y: Tensor,
    batches: Tensor,
    lr: float,
    clip: float,
    noise_multipliers: Tensor,
    generator: torch.Generator | None = None,
) -> dict[str, Tensor]:
    """Local DP-SGD client by client with Opacus; same arguments as ``local_dpsgd``.

    Each client gets a deep copy of ``model`` loaded with its start, wrapped in a
    ``GradSampleModule``, and a ``DPOptimizer`` (noise multiplier nm_m,
    ``max_grad_norm`` C, expected batch size B, mean loss reduction) around
    ``torch.optim.SGD(lr)``; each step is zero_grad, mean cross-entropy on the
    step's batch, backward, step. Opacus computes per-example gradients, clips
    and adds noise for the parameters that require gradients only, and SGD
    skips the others, so frozen parameters keep their starting values.
    """
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    n_clients, steps, batch_size = batches.shape
    nm = torch.as_tensor(noise_multipliers, dtype=torch.float64).expand(n_clients)
    deltas = []
    for m in range(n_clients):
        net = copy.deepcopy(model)
        first = _client_start(model, start, m)
        net.load_state_dict(first, strict=False)
        with warnings.catch_warnings():
            # Opacus warns about its non-cryptographic RNG and about backward hooks
            # firing on a first layer whose input needs no gradient.
            warnings.simplefilter("ignore", UserWarning)
            gsm = GradSampleModule(net)
            optimizer = DPOptimizer(
                torch.optim.SGD(gsm.parameters(), lr=lr),
                noise_multiplier=float(nm[m]),
                max_grad_norm=clip,
                expected_batch_size=batch_size,
                generator=generator,
            )
            xm, ym = x[m].to(first[next(iter(first))].dtype), y[m]
            for t in range(steps):
                idx = batches[m, t]
                optimizer.zero_grad()
                F.cross_entropy(gsm(xm[idx]), ym[idx]).backward()
                optimizer.step()
        deltas.append({k: first[k] - p.detach() for k, p in net.named_parameters()})
        gsm._close()
    return _stack(deltas)


def plain_local_dpsgd(
    model: nn.Module,
    start: Mapping[str, Tensor] | None,
    x: Tensor,
    y: Tensor,
    batches: Tensor,
    lr: float,
    clip: float,
    noise_multipliers: Tensor,
    generator: torch.Generator | None = None,
) -> dict[str, Tensor]:
    """Local DP-SGD client by client in plain torch; same arguments as ``local_dpsgd``.

    Per-example gradients are taken with respect to the parameters that require
    gradients; the others (frozen) enter the forward pass with their starting
    values and are neither clipped, noised nor stepped.
    """
    n_clients, steps, batch_size = batches.shape
    nm = torch.as_tensor(noise_multipliers, dtype=torch.float64).expand(n_clients)
    trained = {name for name, param in model.named_parameters() if param.requires_grad}

    def loss(p: dict[str, Tensor], fixed: dict[str, Tensor], xi: Tensor, yi: Tensor
             ) -> Tensor:
        out = functional_call(model, {**p, **fixed}, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    per_example_grads = vmap(grad(loss), in_dims=(None, None, 0, 0))
    # functional_call leaves a module that occurs twice in the model holding the
    # tensors it was called with; the model's own entries are put back at the end.
    entries = [(module, dict(module._parameters), dict(module._buffers))
               for module in model.modules()]
    deltas = []
    for m in range(n_clients):
        first = _client_start(model, start, m)
        params = {k: v.clone() for k, v in first.items() if k in trained}
        fixed = {k: v for k, v in first.items() if k not in trained}
        dtype = next(iter(first.values())).dtype
        xm, ym = x[m].to(dtype), y[m]
        std = float(nm[m]) * clip
        for t in range(steps):
            idx = batches[m, t]
            grads = per_example_grads(params, fixed, xm[idx], ym[idx])
            norms = torch.sqrt(sum(g.flatten(1).square().sum(1) for g in grads.values()))
            factor = (clip / (norms + CLIP_EPSILON)).clamp(max=1.0)
            for name, g in grads.items():
                step = torch.einsum("b,b...->...", factor, g)
                if std > 0:
                    step += std * torch.randn(step.shape, generator=generator, dtype=dtype)
                params[name] -= lr / batch_size * step
        deltas.append({k: first[k] - params[k] if k in params else torch.zeros_like(first[k])
                       for k in first})
        for module, parameters, buffers in entries:
            module._parameters.update(parameters)
            module._buffers.update(buffers)
    return _stack(deltas)
