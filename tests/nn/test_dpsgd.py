"""The vectorized local DP-SGD engine against per-client Opacus and plain-torch loops."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from fedlib.nn.dpsgd import _layer_plan, draw_batches, local_dpsgd, spare_core
from fedlib.nn.dpsgd_reference import opacus_local_dpsgd, plain_local_dpsgd
from fedlib.nn.models import LogisticRegression, PfaCNN, n_parameters

MODELS = {"logr": LogisticRegression, "cnn": PfaCNN}


def make_clients(n_clients: int, n_examples: int, seed: int, dtype=torch.float64):
    """Different data for every client: images with a client-specific offset."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((n_clients, n_examples, 1, 28, 28), generator=gen, dtype=dtype)
    x += torch.arange(n_clients, dtype=dtype).view(-1, 1, 1, 1, 1) * 0.3
    y = torch.randint(0, 10, (n_clients, n_examples), generator=gen)
    return x, y


def first_step_norms(model: nn.Module, x, y, batches) -> torch.Tensor:
    """Per-example gradient norms (over all parameters) at the start, first step, (M, B)."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return nn.functional.cross_entropy(out, yi.unsqueeze(0))

    rows = []
    for m in range(x.shape[0]):
        idx = batches[m, 0]
        g = vmap(grad(loss), in_dims=(None, 0, 0))(params, x[m, idx], y[m, idx])
        rows.append(torch.sqrt(sum(v.flatten(1).square().sum(1) for v in g.values())))
    return torch.stack(rows)


def max_abs_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


# ---------------------------------------------------------------- models

def test_pfa_cnn_shapes_and_sizes():
    model = PfaCNN()
    h = torch.zeros(2, 1, 28, 28)
    shapes = []
    for layer in model:
        h = layer(h)
        shapes.append(tuple(h.shape[1:]))
    assert shapes == [(16, 14, 14), (16, 14, 14), (16, 13, 13), (32, 5, 5), (32, 5, 5),
                      (32, 4, 4), (512,), (32,), (32,), (10,)]
    assert n_parameters(model) == 26010
    assert n_parameters(LogisticRegression()) == 7850


def test_logistic_regression_returns_plain_logits():
    torch.manual_seed(0)
    model = LogisticRegression()
    x = torch.randn(4, 1, 28, 28)
    out = model(x)
    assert out.shape == (4, 10)
    expected = x.flatten(1) @ model[1].weight.T + model[1].bias
    torch.testing.assert_close(out, expected)
    assert not torch.allclose(out.sum(1), torch.ones(4))  # no softmax inside


# ---------------------------------------------------------------- batches

def test_draw_batches_shape_range_and_no_repeats_within_a_step():
    gen = torch.Generator().manual_seed(3)
    batches = draw_batches(5, 30, 7, 8, gen)
    assert batches.shape == (5, 7, 8) and batches.dtype == torch.int64
    assert int(batches.min()) >= 0 and int(batches.max()) < 30
    sorted_, _ = batches.sort(-1)
    assert bool((sorted_[..., 1:] != sorted_[..., :-1]).all())
    again = draw_batches(5, 30, 7, 8, torch.Generator().manual_seed(3))
    assert torch.equal(batches, again)
    assert not torch.equal(batches[:, 0], batches[:, 1])


def test_draw_batches_is_uniform():
    batches = draw_batches(200, 10, 50, 3, torch.Generator().manual_seed(0))
    counts = torch.bincount(batches.flatten(), minlength=10).double()
    expected = batches.numel() / 10  # 3000 per index
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 40  # chi-square, 9 degrees of freedom: P(> 40) ~ 1e-5


def test_draw_batches_rejects_bad_sizes():
    with pytest.raises(ValueError, match="exceeds"):
        draw_batches(2, 5, 3, 6)
    with pytest.raises(ValueError, match=">= 1"):
        draw_batches(2, 5, 0, 2)


# ---------------------------------------------------------------- exactness, no noise

@pytest.mark.parametrize("name", ["logr", "cnn"])
def test_engine_matches_opacus_loop_without_noise(name):
    torch.manual_seed(11)
    model = MODELS[name]().double()
    n_clients, n_examples, steps, batch_size = 4, 40, 3, 5
    x, y = make_clients(n_clients, n_examples, seed=1)
    batches = draw_batches(n_clients, n_examples, steps, batch_size,
                           torch.Generator().manual_seed(2))
    norms = first_step_norms(model, x, y, batches)
    clip = float(norms.median())
    assert bool((norms > clip * 1.01).any()) and bool((norms < clip * 0.99).any())
    lr = 0.5
    zero = torch.zeros(n_clients)

    reference = opacus_local_dpsgd(model, None, x, y, batches, lr, clip, zero)
    assert max(float(v.abs().max()) for v in reference.values()) > 1e-3  # moved
    for method in ("layers", "func"):
        delta = local_dpsgd(model, None, x, y, batches, lr, clip, zero, method=method)
        assert delta.keys() == reference.keys()
        assert max_abs_diff(delta, reference) < 1e-10, method
    plain = plain_local_dpsgd(model, None, x, y, batches, lr, clip, zero)
    assert max_abs_diff(plain, reference) < 1e-10


def test_engine_matches_opacus_with_per_client_starts():
    model = PfaCNN().double()
    n_clients = 3
    gen = torch.Generator().manual_seed(5)
    start = {k: v.detach() + 0.05 * torch.randn((n_clients, *v.shape), generator=gen,
                                                dtype=v.dtype)
             for k, v in model.named_parameters()}
    x, y = make_clients(n_clients, 20, seed=6)
    batches = draw_batches(n_clients, 20, 2, 4, gen)
    zero = torch.zeros(n_clients)
    delta, final = local_dpsgd(model, start, x, y, batches, 0.3, 0.5, zero, return_params=True)
    reference = opacus_local_dpsgd(model, start, x, y, batches, 0.3, 0.5, zero)
    assert max_abs_diff(delta, reference) < 1e-10
    for k in start:
        torch.testing.assert_close(final[k], start[k] - delta[k], rtol=0, atol=1e-14)


def test_model_parameters_are_not_modified():
    model = LogisticRegression()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x, y = make_clients(2, 10, seed=0, dtype=torch.float32)
    batches = draw_batches(2, 10, 2, 3)
    local_dpsgd(model, None, x, y, batches, 1.0, 1.0, 1.0)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])


def test_a_bare_linear_module_on_flat_inputs():
    torch.manual_seed(3)
    model = nn.Linear(20, 10).double()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((3, 15, 20), generator=gen, dtype=torch.float64)
    y = torch.randint(0, 10, (3, 15), generator=gen)
    batches = draw_batches(3, 15, 4, 5, gen)
    zero = torch.zeros(3)
    delta = local_dpsgd(model, None, x, y, batches, 0.5, 0.5, zero, method="layers")
    assert set(delta) == {"weight", "bias"}
    reference = opacus_local_dpsgd(model, None, x, y, batches, 0.5, 0.5, zero)
    assert max_abs_diff(delta, reference) < 1e-10


class _Residual(nn.Module):
    """Not a Sequential: the engine has to use its torch.func path."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(784, 16)
        self.b = nn.Linear(16, 16)
        self.c = nn.Linear(16, 10)

    def forward(self, x):
        h = torch.tanh(self.a(x.flatten(1)))
        return self.c(h + torch.tanh(self.b(h)))


def test_any_module_runs_through_torch_func():
    torch.manual_seed(0)
    model = _Residual().double()
    x, y = make_clients(3, 15, seed=4)
    batches = draw_batches(3, 15, 3, 4, torch.Generator().manual_seed(1))
    zero = torch.zeros(3)
    with pytest.raises(ValueError, match="method='func'"):
        local_dpsgd(model, None, x, y, batches, 0.5, 0.05, zero, method="layers")
    delta = local_dpsgd(model, None, x, y, batches, 0.5, 0.05, zero)
    reference = opacus_local_dpsgd(model, None, x, y, batches, 0.5, 0.05, zero)
    assert max_abs_diff(delta, reference) < 1e-10


def test_layers_path_covers_other_layer_options():
    """Dilation, padding, no bias, strides that do and do not divide the kernel, average
    pooling, Tanh, Sigmoid: against the torch.func path."""
    torch.manual_seed(2)
    model = nn.Sequential(
        nn.Conv2d(1, 3, 3, stride=1, padding=2, dilation=2, bias=False), nn.Tanh(),  # 28x28
        nn.AvgPool2d(2),  # 14x14
        nn.Conv2d(3, 16, (4, 3), stride=(2, 1), padding=(1, 0)), nn.ReLU(),  # 7x12
        nn.MaxPool2d(3, stride=2, padding=1),  # 4x6
        nn.Conv2d(16, 5, (3, 2), stride=(2, 1), padding=(1, 0)),  # 2x5
        nn.Flatten(), nn.Linear(50, 6, bias=False), nn.Sigmoid(), nn.Linear(6, 10),
    ).double()
    plan = _layer_plan(model, (1, 28, 28))
    assert plan is not None
    convs = [layer.geometry for layer in plan if layer.kind == "conv"]
    assert [geo.phased for geo in convs] == [False, True, False]
    # Patches gathered by index (short rows) and by strided copy (rows of 2*16 numbers).
    assert [geo.gather_index is None for geo in convs] == [False, False, True]
    x, y = make_clients(3, 12, seed=9)
    batches = draw_batches(3, 12, 3, 4, torch.Generator().manual_seed(0))
    nm = torch.zeros(3)
    a = local_dpsgd(model, None, x, y, batches, 1.0, 0.1, nm, method="layers")
    b = local_dpsgd(model, None, x, y, batches, 1.0, 0.1, nm, method="func")
    assert max_abs_diff(a, b) < 1e-12
    assert min(float(v.abs().max()) for v in a.values()) > 1e-4


# ---------------------------------------------------------------- noise

@pytest.mark.parametrize("name", ["logr", "cnn"])
def test_noise_has_the_dp_sgd_scale_per_client(name):
    """One step: delta(noise) - delta(no noise) = lr * nm_m * C / B * N(0, I) exactly."""
    torch.manual_seed(0)
    model = MODELS[name]()
    n_clients, batch_size, lr, clip = 4, 8, 1.0, 0.7
    x, y = make_clients(n_clients, 30, seed=3, dtype=torch.float32)
    batches = draw_batches(n_clients, 30, 1, batch_size, torch.Generator().manual_seed(4))
    nm = torch.tensor([0.0, 0.5, 2.0, 8.0])
    clean = local_dpsgd(model, None, x, y, batches, lr, clip, torch.zeros(n_clients))
    noisy = local_dpsgd(model, None, x, y, batches, lr, clip, nm,
                        torch.Generator().manual_seed(7))
    diff = torch.cat([(noisy[k] - clean[k]).flatten(1) for k in clean], dim=1).double()
    assert bool((diff[0] == 0).all())
    expected = lr * nm[1:].double() * clip / batch_size
    std = diff[1:].std(dim=1)
    # Relative standard error of a std over >= 7,850 coordinates is < 1%.
    torch.testing.assert_close(std / expected, torch.ones(3, dtype=torch.float64),
                               rtol=0, atol=0.04)
    # Mean zero: within 5 standard errors.
    assert bool((diff[1:].mean(dim=1).abs() / expected < 5 / diff.shape[1] ** 0.5).all())
    # Independent across clients.
    corr = torch.corrcoef(diff[1:])
    assert float((corr - torch.eye(3, dtype=torch.float64)).abs().max()) < 0.05


def test_noise_accumulates_over_steps_like_opacus():
    """Several steps, data gradients negligible next to the noise: std = sqrt(tau)*lr*nm*C/B,
    the same for the engine and the Opacus loop."""
    torch.manual_seed(1)
    model = PfaCNN()
    n_clients, steps, batch_size, lr, clip = 3, 4, 8, 1.0, 1.0
    x, y = make_clients(n_clients, 40, seed=8, dtype=torch.float32)
    batches = draw_batches(n_clients, 40, steps, batch_size, torch.Generator().manual_seed(2))
    nm = torch.tensor([1.0, 3.0, 10.0])
    zero = torch.zeros(n_clients)
    expected = (steps ** 0.5) * lr * nm.double() * clip / batch_size

    def spread(fn):
        clean = fn(model, None, x, y, batches, lr * 1e-3, clip, zero)
        noisy = fn(model, None, x, y, batches, lr * 1e-3, clip, nm,
                   torch.Generator().manual_seed(3))
        diff = torch.cat([(noisy[k] - clean[k]).flatten(1) for k in clean], dim=1).double()
        return diff.std(dim=1) / 1e-3

    for fn in (local_dpsgd, opacus_local_dpsgd):
        torch.testing.assert_close(spread(fn) / expected, torch.ones(3, dtype=torch.float64),
                                   rtol=0, atol=0.04)


def test_noise_is_reproducible_and_independent_of_prefetch():
    model = PfaCNN()
    x, y = make_clients(3, 20, seed=0, dtype=torch.float32)
    batches = draw_batches(3, 20, 3, 4, torch.Generator().manual_seed(0))
    nm = torch.tensor([1.0, 0.0, 2.0])
    runs = [local_dpsgd(model, None, x, y, batches, 0.1, 1.0, nm,
                        torch.Generator().manual_seed(9), prefetch=prefetch)
            for prefetch in (True, False, True, None)]
    assert max_abs_diff(runs[0], runs[1]) == 0.0
    assert max_abs_diff(runs[0], runs[2]) == 0.0
    assert max_abs_diff(runs[0], runs[3]) == 0.0
    other = local_dpsgd(model, None, x, y, batches, 0.1, 1.0, nm,
                        torch.Generator().manual_seed(10))
    assert max_abs_diff(runs[0], other) > 0


def test_noise_does_not_depend_on_the_threads_that_draw_it(monkeypatch):
    """Each client's noise is a stream of its own: drawn on one thread or split over
    several (as many as torch's intra-op threads), the result is the same."""
    import fedlib.nn.dpsgd as engine

    monkeypatch.setattr(engine, "_THREADED_NOISE", 0)  # threads even for a small model
    model = PfaCNN()
    x, y = make_clients(5, 20, seed=2, dtype=torch.float32)
    batches = draw_batches(5, 20, 2, 4, torch.Generator().manual_seed(3))
    nm = torch.tensor([1.0, 0.0, 2.0, 0.5, 3.0])
    saved = torch.get_num_threads()
    runs = []
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            runs.append(local_dpsgd(model, None, x, y, batches, 0.1, 1.0, nm,
                                    torch.Generator().manual_seed(4), prefetch=False))
    finally:
        torch.set_num_threads(saved)
    # The products may differ in their last bits with the threads; the noise is far larger.
    assert max_abs_diff(runs[0], runs[1]) < 1e-5
    assert max_abs_diff(runs[0], runs[2]) < 1e-5
    clean = local_dpsgd(model, None, x, y, batches, 0.1, 1.0, torch.zeros(5), prefetch=False)
    assert max_abs_diff(runs[0], clean) > 1e-3


def test_each_block_of_clients_draws_the_noise_of_its_own_generator():
    """With one generator per block, a block's result is that of a call with the block
    alone and its generator; a block without noise draws nothing from its generator."""
    model = PfaCNN()
    x, y = make_clients(6, 20, seed=1, dtype=torch.float32)
    batches = draw_batches(6, 20, 3, 4, torch.Generator().manual_seed(1))
    nm = torch.tensor([1.0, 0.5, 0.0, 0.0, 2.0, 3.0])
    seeds = (11, 12, 13)
    together = local_dpsgd(model, None, x, y, batches, 0.1, 1.0, nm,
                           [torch.Generator().manual_seed(s) for s in seeds])
    for g, seed in enumerate(seeds):
        block = slice(2 * g, 2 * g + 2)
        alone = local_dpsgd(model, None, x[block], y[block], batches[block], 0.1, 1.0,
                            nm[block], torch.Generator().manual_seed(seed))
        assert max_abs_diff({k: v[block] for k, v in together.items()}, alone) == 0.0
    one = torch.Generator().manual_seed(12)
    local_dpsgd(model, None, x[2:4], y[2:4], batches[2:4], 0.1, 1.0, nm[2:4], one)
    assert one.get_state().equal(torch.Generator().manual_seed(12).get_state())
    # One generator in a sequence is the single generator.
    single = local_dpsgd(model, None, x, y, batches, 0.1, 1.0, nm,
                         torch.Generator().manual_seed(5))
    listed = local_dpsgd(model, None, x, y, batches, 0.1, 1.0, nm,
                         [torch.Generator().manual_seed(5)])
    assert max_abs_diff(single, listed) == 0.0
    with pytest.raises(ValueError, match="divides the number of clients"):
        local_dpsgd(model, None, x, y, batches, 0.1, 1.0, nm,
                    [torch.Generator() for _ in range(4)])
    with pytest.raises(ValueError, match="empty sequence"):
        local_dpsgd(model, None, x, y, batches, 0.1, 1.0, nm, [])


def test_a_core_is_spare_only_when_torch_uses_fewer_threads_than_there_are_cores():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(cores)
        assert not spare_core()
        if cores > 1:
            torch.set_num_threads(cores - 1)
            assert spare_core()
    finally:
        torch.set_num_threads(saved)


# ---------------------------------------------------------------- arguments

def test_rejects_inconsistent_arguments():
    model = LogisticRegression()
    x, y = make_clients(2, 10, seed=0, dtype=torch.float32)
    batches = draw_batches(2, 10, 2, 3)
    with pytest.raises(ValueError, match="batches"):
        local_dpsgd(model, None, x, y, batches[0], 0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="clients"):
        local_dpsgd(model, None, x[:1], y[:1], batches, 0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="noise"):
        local_dpsgd(model, None, x, y, batches, 0.1, 1.0, torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="method"):
        local_dpsgd(model, None, x, y, batches, 0.1, 1.0, 1.0, method="fast")
    with pytest.raises(ValueError, match="shape"):
        local_dpsgd(model, {"1.weight": torch.zeros(3, 10, 784), "1.bias": torch.zeros(10)},
                    x, y, batches, 0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="parameters"):
        local_dpsgd(model, {"1.weight": torch.zeros(10, 784)}, x, y, batches, 0.1, 1.0, 1.0)

