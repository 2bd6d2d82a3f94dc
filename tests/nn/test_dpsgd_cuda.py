"""The engines on a CUDA device against the same engines on the CPU, in float64.

Where the chapters offer ``device="cuda"`` (PPSGD's engines) and wherever a caller puts
a model on a GPU (the local DP-SGD engine), the device may change rounding and nothing
else: the CPU paths are exact against their per-example references (the other engine
tests), so agreement to 1e-10 here makes the GPU paths exact too. Noise is the one
thing the device changes: the local DP-SGD engine draws it on the device (other
numbers, the same distribution, checked below), PPSGD's engines on the CPU (the same
numbers on both). Every test here is skipped where torch sees no GPU.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from fedlib.data.federated import FederatedClassification
from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.nn.dpsgd import _layer_plan, draw_batches, local_dpsgd
from fedlib.nn.models import Cifar10CNN, ImdbLSTM, LogisticRegression, PfaCNN
from fedlib.papers.ppsgd.algorithm import PPSGDConfig, run_synthetic
from fedlib.papers.ppsgd.emnist import draw_schedule, run_cnn, run_linear

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA device: these tests check the engines' GPU path against their "
           "CPU path (torch sees no GPU here)")

GPU = torch.device("cuda")
TOLERANCE = 1e-10
KERNEL_TOLERANCE = {"weight-norm": 1e-6, "weight-norm-parametrized": 1e-6}
"""Cases whose GPU result differs from the CPU's by torch's own kernels: the CUDA weight
norm (``torch._weight_norm``) rounds at about 1e-8 relative even in float64 (measured on
an H100 with torch 2.11: 1.4e-8 from ``v * g / ||v||``, against 1e-16 on the CPU)."""
METHODS = ("layers", "func")


def deviation(on_gpu: dict[str, Tensor], on_cpu: dict[str, Tensor]) -> float:
    assert list(on_gpu) == list(on_cpu)
    assert all(v.device.type == "cuda" for v in on_gpu.values())
    return max(float((on_gpu[k].cpu() - on_cpu[k]).abs().max()) for k in on_gpu)


def to_gpu(start: dict[str, Tensor] | None) -> dict[str, Tensor] | None:
    return None if start is None else {k: v.to(GPU) for k, v in start.items()}


# ---------------------------------------------------------------- the papers' models

def paper_problem(name: str) -> tuple[nn.Module, Tensor, Tensor, Tensor, dict[str, Tensor]]:
    """A model of the papers (float64), client data, batches and per-client starts."""
    torch.manual_seed(3)
    gen = torch.Generator().manual_seed(4)
    n_clients, n_examples = 3, 12
    if name == "lstm":
        model: nn.Module = ImdbLSTM(40, 6, 5)
        x = torch.randint(0, 40, (n_clients, n_examples, 9), generator=gen).double()
        y = torch.randint(0, 2, (n_clients, n_examples), generator=gen)
    else:
        model = {"logr": LogisticRegression, "cnn": PfaCNN, "cifar-cnn": Cifar10CNN}[name]()
        shape = (3, 32, 32) if name == "cifar-cnn" else (1, 28, 28)
        x = torch.randn((n_clients, n_examples, *shape), generator=gen, dtype=torch.float64)
        x += torch.arange(n_clients, dtype=torch.float64).view(-1, 1, 1, 1, 1)
        y = torch.randint(0, 10, (n_clients, n_examples), generator=gen)
    model = model.double()
    batches = draw_batches(n_clients, n_examples, 2, 4, gen)
    start = {k: v.detach() + 0.05 * torch.randn((n_clients, *v.shape), generator=gen,
                                                dtype=v.dtype)
             for k, v in model.named_parameters()}
    return model, x, y, batches, start


@pytest.mark.parametrize("clip", [0.05, 1e6])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", ["logr", "cnn", "cifar-cnn", "lstm"])
def test_the_papers_models_match_the_cpu_path(name: str, method: str, clip: float) -> None:
    model, x, y, batches, start = paper_problem(name)
    zero = torch.zeros(x.shape[0])
    on_cpu = local_dpsgd(model, start, x, y, batches, 0.5, clip, zero, method=method)
    on_gpu = local_dpsgd(model.to(GPU), to_gpu(start), x, y, batches, 0.5, clip, zero,
                         method=method)
    assert max(float(v.abs().max()) for v in on_cpu.values()) > 1e-6  # something moved
    assert deviation(on_gpu, on_cpu) <= TOLERANCE


def test_the_written_out_paths_run_on_the_gpu_too() -> None:
    """The comparison above covers the written-out paths, not only torch.func's."""
    for name in ("logr", "cnn", "cifar-cnn", "lstm"):
        model, x, *_ = paper_problem(name)
        assert _layer_plan(model.to(GPU), tuple(x.shape[2:])) is not None, name


# ---------------------------------------------------------------- generated architectures

def architecture_cases():
    """The engine tests' architecture grid: each case with a method that runs it exactly
    (the written-out path where it may, else torch.func's; cases both refuse are left
    out)."""
    grid = importlib.import_module("nn.test_dpsgd_architectures")
    cases = []
    for index, case in enumerate(grid.CASES):
        if case.refused is None and case.layers is None:
            cases.append((index, case, "layers"))
        elif case.refused is None and case.func is None:
            cases.append((index, case, "func"))
    return grid, cases


_GRID, _CASES = architecture_cases()


@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")  # weight_norm
@pytest.mark.parametrize(("index", "case", "method"), _CASES,
                         ids=[f"{c.name}-{m}" for _, c, m in _CASES])
def test_every_architecture_the_engine_runs_matches_the_cpu_path(index: int, case,
                                                                  method: str) -> None:
    p = _GRID._problem(index, case)

    def fresh() -> nn.Module:
        """The case's model as the grid builds it (its own copy is shared with the
        CPU tests and stays on the CPU)."""
        torch.manual_seed(index)
        return case.build().double()

    zero = torch.zeros(p.x.shape[0])
    if any(isinstance(m, nn.RNNBase) for m in p.model.modules()):
        # torch's recurrent layers run under torch.func's vmap on the CPU only.
        with pytest.raises(ValueError, match="on a CUDA device"):
            local_dpsgd(fresh().to(GPU), to_gpu(p.start), p.x, p.y, p.batches, 0.5, p.clip,
                        zero, method=method)
        return
    on_cpu = local_dpsgd(fresh(), p.start, p.x, p.y, p.batches, 0.5, p.clip, zero,
                         method=method)
    on_gpu = local_dpsgd(fresh().to(GPU), to_gpu(p.start), p.x, p.y, p.batches, 0.5, p.clip,
                         zero, method=method)
    assert max(float(v.abs().max()) for v in on_cpu.values()) > 1e-8  # something moved
    assert deviation(on_gpu, on_cpu) <= KERNEL_TOLERANCE.get(case.name, TOLERANCE), case.name


def test_average_pooling_of_channels_last_maps_is_exact_on_the_gpu() -> None:
    """The engine keeps feature maps channels last; torch's CUDA average pooling gets
    their input gradient wrong (the case below deviated by 0.03 before the engine gave
    such modules the standard layout on a GPU)."""
    torch.manual_seed(5)
    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.AvgPool2d(3, stride=2, padding=1),
                          nn.Tanh(), nn.Conv2d(4, 3, 2), nn.Flatten(), nn.Linear(12, 3))
    model = model.double()
    gen = torch.Generator().manual_seed(6)
    x = torch.randn((2, 9, 2, 8, 8), generator=gen, dtype=torch.float64)
    y = torch.randint(0, 3, (2, 9), generator=gen)
    batches = draw_batches(2, 9, 2, 4, gen)
    zero = torch.zeros(2)
    on_cpu = local_dpsgd(model, None, x, y, batches, 0.5, 0.1, zero, method="layers")
    on_gpu = local_dpsgd(model.to(GPU), None, x, y, batches, 0.5, 0.1, zero, method="layers")
    assert deviation(on_gpu, on_cpu) <= TOLERANCE


# ---------------------------------------------------------------- noise on the device

def noise_of(model: nn.Module, nm: Tensor, seed: int) -> Tensor:
    """One step's noise part of the update of each client (M, P), float64."""
    n_clients, batch_size, lr, clip = len(nm), 8, 1.0, 0.7
    gen = torch.Generator().manual_seed(3)
    x = torch.randn((n_clients, 30, 1, 28, 28), generator=gen)
    y = torch.randint(0, 10, (n_clients, 30), generator=gen)
    batches = draw_batches(n_clients, 30, 1, batch_size, gen)
    clean = local_dpsgd(model, None, x, y, batches, lr, clip, torch.zeros(n_clients))
    noisy = local_dpsgd(model, None, x, y, batches, lr, clip, nm,
                        torch.Generator().manual_seed(seed))
    diff = torch.cat([(noisy[k] - clean[k]).flatten(1) for k in clean], dim=1).double()
    return diff.cpu() / (lr * clip / batch_size)


def test_gpu_noise_has_the_dp_sgd_scale_per_client() -> None:
    torch.manual_seed(0)
    model = PfaCNN().to(GPU)
    nm = torch.tensor([0.0, 0.5, 2.0, 8.0])
    z = noise_of(model, nm, seed=7)
    assert bool((z[0] == 0).all())
    std = z[1:].std(dim=1) / nm[1:].double()
    # 26,010 coordinates a client: the relative standard error of a std is below 0.5%.
    torch.testing.assert_close(std, torch.ones(3, dtype=torch.float64), rtol=0, atol=0.03)
    assert bool((z[1:].mean(dim=1).abs() / nm[1:] < 5 / z.shape[1] ** 0.5).all())
    corr = torch.corrcoef(z[1:])
    assert float((corr - torch.eye(3, dtype=torch.float64)).abs().max()) < 0.05


def test_gpu_noise_is_reproducible_and_moves_with_the_seed() -> None:
    torch.manual_seed(0)
    model = PfaCNN().to(GPU)
    nm = torch.tensor([1.0, 1.0])
    first, again, other = (noise_of(model, nm, seed) for seed in (7, 7, 8))
    assert torch.equal(first, again)
    assert float((first - other).abs().max()) > 1.0


# ---------------------------------------------------------------- PPSGD's engines

PPSGD_CONFIGS = [
    PPSGDConfig(step=0.3, alpha_q=0.0, noise_multiplier=5.0, clip=1.0),
    PPSGDConfig(step=0.3, alpha_q=0.3, noise_multiplier=2.0, clip=0.05),
    PPSGDConfig(step=0.2, alpha_q=3.0, noise_multiplier=0.5, clip=1e6),
    PPSGDConfig(step=0.1, alpha_q=math.inf, noise_multiplier=3.0, clip=0.02),
]


def users_data(**kwargs) -> FederatedClassification:
    """PPSGD's engine tests' per-user data."""
    return importlib.import_module("papers.ppsgd.test_emnist").toy_data(**kwargs)


def test_ppsgd_synthetic_engine_matches_the_cpu_path() -> None:
    task = AdditiveSyntheticTask(n_users=12, dim=7, personal_coords=3, personal_scale=0.5,
                                 seed=3)
    for q in (12, 5):
        runs = [run_synthetic(task, PPSGD_CONFIGS, 20, users_per_iteration=q, batch_size=4,
                              seed=11, dtype=torch.float64, device=device)
                for device in ("cpu", "cuda")]
        np.testing.assert_allclose(runs[1], runs[0], rtol=1e-10, atol=1e-12)


def test_ppsgd_linear_engine_matches_the_cpu_path() -> None:
    data = users_data(n_users=5, per_user=16, seed=1)
    schedule = draw_schedule(data, 12, 3, 4, seed=2)
    runs = [run_linear(data, schedule, PPSGD_CONFIGS, eval_at=[0, 6, 12], noise_seed=5,
                       dtype=torch.float64, device=device) for device in ("cpu", "cuda")]
    np.testing.assert_allclose(runs[1].w, runs[0].w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(runs[1].thetas, runs[0].thetas, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(runs[1].accuracy, runs[0].accuracy, rtol=0, atol=1e-12)


def test_ppsgd_cnn_engine_matches_the_cpu_path() -> None:
    data = users_data(n_users=5, per_user=16, k=10, image=True, seed=2)
    schedule = draw_schedule(data, 3, 3, 3, seed=0)
    runs = [run_cnn(data, schedule, PPSGD_CONFIGS, eval_at=[3], noise_seed=3, init_seed=4,
                    theta_step_scale=3, dtype=torch.float64, device=device)
            for device in ("cpu", "cuda")]
    for k, value in runs[0].params.items():
        np.testing.assert_allclose(runs[1].params[k], value, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(runs[1].w, runs[0].w, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(runs[1].thetas, runs[0].thetas, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(runs[1].accuracy, runs[0].accuracy, rtol=0, atol=1e-12)


def test_pfa_training_on_the_gpu_matches_the_cpu_without_noise() -> None:
    """PFA's federated loop with its local steps on the GPU: NP-FedAvg (no noise) ends
    where the CPU's run does; a private variant draws CUDA noise (another stream), so only
    what does not depend on the noise (who took part, the bytes sent) is the same."""
    from fedlib.papers.pfa.training import Federation, Hyperparameters, Variant, train_variants

    gen = torch.Generator().manual_seed(0)
    centres = torch.randn((10, 1, 4, 4), generator=gen, dtype=torch.float64) * 2
    y = torch.randint(0, 10, (6, 30), generator=gen)
    x = centres[y] + 0.5 * torch.randn((6, 30, 1, 4, 4), generator=gen, dtype=torch.float64)
    y_test = torch.randint(0, 10, (300,), generator=gen)
    x_test = centres[y_test] + 0.5 * torch.randn((300, 1, 4, 4), generator=gen,
                                                 dtype=torch.float64)
    fed = Federation(x, y, x_test, y_test, np.array([0.5, 0.6, 0.4, 10.0, 0.5, 0.7]), 1e-5)
    hyper = Hyperparameters(rounds=4, local_steps=3, batch_size=4, lr=0.5)
    variants = [Variant("np-fedavg"), Variant("pfa"), Variant("weiavg")]

    def model() -> nn.Module:
        torch.manual_seed(0)
        return LogisticRegression(in_features=16).double()

    cpu, gpu = (train_variants(model(), fed, hyper, variants, seed=2, device=device)
                for device in ("cpu", "cuda"))
    pd_cols = ["round", "clients", "public", "uplink_bytes"]
    for a, b in zip(cpu.history, gpu.history, strict=True):
        np.testing.assert_array_equal(a[pd_cols].to_numpy(), b[pd_cols].to_numpy())
    np.testing.assert_array_equal(gpu.history[0]["accuracy"], cpu.history[0]["accuracy"])
    assert not np.array_equal(gpu.history[1]["accuracy"], cpu.history[1]["accuracy"])
