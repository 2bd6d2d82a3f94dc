"""Convolutions on both exact per-example norm paths: Gram matrices (ghost norm) and
formed per-example gradients, whichever the cost rule picks."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedlib.nn import dpsgd
from fedlib.nn.dpsgd import draw_batches, local_dpsgd
from fedlib.nn.dpsgd_reference import plain_local_dpsgd
from fedlib.nn.models import Cifar10CNN, PfaCNN


def test_the_rule_picks_the_ghost_norm_for_many_filters_over_few_positions() -> None:
    assert dpsgd._conv_ghost_norm(positions=1, patch=512, outputs=64)
    assert dpsgd._conv_ghost_norm(positions=4, patch=576, outputs=128)
    # The papers' convolutions: every one forms its per-example gradients.
    for model, shape in ((PfaCNN(), (1, 28, 28)), (Cifar10CNN(), (3, 32, 32))):
        plan = dpsgd._layer_plan(model, shape)
        assert isinstance(plan, list)
        for layer in plan:
            if layer.kind == "conv":
                geo = layer.geometry
                assert not dpsgd._conv_ghost_norm(geo.n_positions, geo.patch_size,
                                                  geo.out_shape[0])


def _nets() -> list[tuple[nn.Module, tuple[int, ...]]]:
    torch.manual_seed(4)
    late = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(3, 24, 3, stride=2, padding=1, bias=False), nn.Tanh(),
                         nn.Flatten(), nn.Linear(96, 3))
    frozen_bias = nn.Sequential(nn.Conv2d(1, 4, 4, stride=2), nn.ReLU(), nn.Flatten(),
                                nn.Linear(36, 3))
    frozen_bias[0].bias.requires_grad_(False)
    return [(PfaCNN(), (1, 28, 28)), (late, (2, 8, 8)), (frozen_bias, (1, 8, 8))]


@pytest.mark.parametrize("ghost", [True, False])
@pytest.mark.parametrize("net", range(3))
def test_both_paths_are_exact(monkeypatch: pytest.MonkeyPatch, ghost: bool, net: int) -> None:
    model, shape = _nets()[net]
    model = model.double()
    monkeypatch.setattr(dpsgd, "_conv_ghost_norm", lambda *sizes: ghost)
    gen = torch.Generator().manual_seed(net)
    classes = 10 if isinstance(model, PfaCNN) else 3
    x = torch.randn((3, 10, *shape), generator=gen, dtype=torch.float64)
    y = torch.randint(0, classes, (3, 10), generator=gen)
    batches = draw_batches(3, 10, 2, 4, gen)
    zero = torch.zeros(3)
    reference = plain_local_dpsgd(model, None, x, y, batches, 0.5, 0.05, zero)
    delta = local_dpsgd(model, None, x, y, batches, 0.5, 0.05, zero, method="layers")
    assert max(float((delta[k] - reference[k]).abs().max()) for k in delta) < 1e-10
