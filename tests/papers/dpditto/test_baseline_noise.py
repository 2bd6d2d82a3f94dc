"""Every DP baseline adds to its uploads the noise DP-Ditto adds to its own.

The paper compares DP-Ditto with DP versions of FedAMP, pFedMe, APPLE and FedALA
(and DP-FedAvg, DP-Ditto's global model), each perturbed "the same way": at the same
(epsilon, delta), clipping norm C and number of aggregations T, what a client uploads
gets Gaussian noise of the same standard deviation. These tests read the noise each
method really adds: they wrap the upload step every method calls, record what goes in
and what goes out, and take the noise as the output minus the clipped input (the
clipping recomputed here, not with the code under test). Its standard deviation over
the parameters, per client and round, is compared with DP-Ditto's, measured the same
way, and with the calibration written out independently here:
``sigma_i = (2 C / |D_i|) sqrt(2 T ln(1 / delta)) / epsilon``.

The clients hold different numbers of examples (so each has its own sigma), the
model has 3,010 parameters (a standard deviation read from them is within about 1.3%
of the true one; the tolerance of 6% is several times that), and the runs are seeded.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedlib.papers.dpditto import algorithm, baselines
from fedlib.papers.dpditto.algorithm import Hyper, Model, pad_clients, run_ditto

D, K = 300, 10
MODEL = Model("mlr", (D,), K)
SIZES = (20, 40, 80)
"""Training examples per client: three different sensitivities 2C/|D_i|."""
EPSILONS = (1.0, 10.0)
ROUNDS = 3
CLIP = 0.5
DELTA = 0.01
HYPER = Hyper(lr=0.05, personal_lr=0.05, local_steps=2, personal_steps=2, batch_size=5,
              clip=CLIP, delta=DELTA)
TOLERANCE = 0.06
"""Relative tolerance on a standard deviation read from 3,010 Gaussian draws."""


def _clients():
    rng = np.random.default_rng(3)
    parts = []
    for n in SIZES:
        x = rng.normal(size=(n, D))
        y = rng.integers(0, K, size=n)
        parts.append((x, y, x[:5], y[:5]))
    return pad_clients(parts, eval_examples=None, dtype=torch.float64)


def expected_sigma(n_examples: int, epsilon: float, rounds: int = ROUNDS) -> float:
    """The DP-Ditto calibration, written out here (q = 1: every client uploads every round)."""
    sensitivity = 2 * CLIP / n_examples
    return sensitivity * math.sqrt(2 * rounds * math.log(1 / DELTA)) / epsilon


def _clip(rows: torch.Tensor) -> torch.Tensor:
    norms = torch.linalg.vector_norm(rows, dim=1, keepdim=True)
    return rows * torch.minimum(torch.ones_like(norms), CLIP / norms)


class UploadRecorder:
    """Wraps the upload step of one module: every call's noise, per round."""

    def __init__(self, module, monkeypatch: pytest.MonkeyPatch) -> None:
        self.original = module.private_upload
        self.noise: list[torch.Tensor] = []  # one (runs, N, P) tensor per round
        self.sigma: list[torch.Tensor] = []
        monkeypatch.setattr(module, "private_upload", self)

    def __call__(self, theta, clip, sigma, noise, n_clients):
        out = self.original(theta, clip, sigma, noise, n_clients)
        assert clip == CLIP, f"the upload was clipped at {clip}, not at C = {CLIP}"
        added = (out - _clip(theta)).view(-1, n_clients, theta.shape[1])
        self.noise.append(added.detach().clone())
        self.sigma.append(torch.as_tensor(sigma).clone())
        return out

    def measured_std(self) -> np.ndarray:
        """(rounds, runs, N): the standard deviation of the noise of every upload."""
        return torch.stack(self.noise).std(dim=-1).numpy()


def _ditto_noise(monkeypatch: pytest.MonkeyPatch, pairs) -> tuple[UploadRecorder, object]:
    recorder = UploadRecorder(algorithm, monkeypatch)
    result = run_ditto(MODEL, _clients(), EPSILONS, pairs, ROUNDS, HYPER, seed=5)
    return recorder, result


@pytest.fixture
def ditto_std(monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """DP-Ditto's measured noise std, (rounds, epsilons, clients)."""
    recorder, _ = _ditto_noise(monkeypatch, [(0, 0.5), (1, 0.5)])
    assert len(recorder.noise) == ROUNDS, "DP-Ditto must upload once per aggregation"
    return recorder.measured_std()


def test_dp_dittos_own_noise_follows_the_calibration(ditto_std):
    """The reference itself: DP-Ditto's noise has the calibrated std for every client."""
    want = np.array([[expected_sigma(n, eps) for n in SIZES] for eps in EPSILONS])
    np.testing.assert_allclose(ditto_std, np.broadcast_to(want, ditto_std.shape),
                               rtol=TOLERANCE)


@pytest.mark.parametrize("method", sorted(baselines.BASELINES))
def test_baseline_noise_matches_dp_dittos(method, ditto_std, monkeypatch):
    """FedAMP (personal models), pFedMe (local models), APPLE (its core models) and
    FedALA (local models): the noise on every upload, of every client and round, has
    DP-Ditto's standard deviation at the same (epsilon, delta), C and T."""
    recorder = UploadRecorder(baselines, monkeypatch)
    result = baselines.BASELINES[method](MODEL, _clients(), EPSILONS, ROUNDS, HYPER, seed=5)
    assert result.accuracy.shape == (len(EPSILONS),)
    assert len(recorder.noise) == ROUNDS, (
        f"{method} uploaded {len(recorder.noise)} times through the DP upload step in "
        f"{ROUNDS} aggregations; every aggregation must take one noisy upload per client")
    theirs = recorder.measured_std()
    assert theirs.shape == ditto_std.shape
    np.testing.assert_allclose(theirs, ditto_std, rtol=2 * TOLERANCE)
    want = np.array([[expected_sigma(n, eps) for n in SIZES] for eps in EPSILONS])
    np.testing.assert_allclose(theirs, np.broadcast_to(want, theirs.shape), rtol=TOLERANCE)


@pytest.mark.parametrize("method", sorted(baselines.BASELINES))
def test_baseline_calibration_equals_dp_dittos(method, monkeypatch):
    """The standard deviations each baseline hands its noise step are DP-Ditto's, exactly,
    and they grow with sqrt(T) alike (at T = 1 and T = 4 as at T = 3)."""
    for rounds in (1, 4):
        ours = UploadRecorder(algorithm, monkeypatch)
        run_ditto(MODEL, _clients(), EPSILONS, [(0, 0.5), (1, 0.5)], rounds, HYPER, seed=1)
        theirs = UploadRecorder(baselines, monkeypatch)
        baselines.BASELINES[method](MODEL, _clients(), EPSILONS, rounds, HYPER, seed=1)
        for a, b in zip(ours.sigma, theirs.sigma, strict=True):
            torch.testing.assert_close(b, a, rtol=0, atol=0)
        want = [[expected_sigma(n, eps, rounds) for n in SIZES] for eps in EPSILONS]
        np.testing.assert_allclose(theirs.sigma[0].numpy(), want, rtol=1e-12)


def test_dp_fedavg_is_the_global_model_with_dp_dittos_noise(monkeypatch):
    """DP-FedAvg (lambda = 1) is DP-Ditto's global model: run alone, its uploads carry the
    same noise as in a run with personal models, and the server's model after one
    aggregation with (almost) no training is the clipped initial model plus the mean of
    the clients' noise, whose std is sqrt(sum_i sigma_i^2) / N."""
    frozen = Hyper(lr=1e-12, personal_lr=1e-12, local_steps=1, personal_steps=1,
                   batch_size=5, clip=CLIP, delta=DELTA)
    init = MODEL.init(torch.Generator().manual_seed(0), torch.float64) * 40
    clients = _clients()
    alone = UploadRecorder(algorithm, monkeypatch)
    fedavg = run_ditto(MODEL, clients, EPSILONS, [(0, 1.0), (1, 1.0)], 1, frozen, seed=2,
                       init=init)
    with_personal = UploadRecorder(algorithm, monkeypatch)
    run_ditto(MODEL, clients, EPSILONS, [(0, 0.5), (0, 1.0), (1, 1.0)], 1, frozen, seed=2,
              init=init)
    torch.testing.assert_close(alone.noise[0], with_personal.noise[0])
    start = _clip(init[None])[0]
    assert float(init.norm()) > CLIP  # the clipping is exercised
    for g, eps in enumerate(EPSILONS):
        server_noise = fedavg.global_model[g] - start
        want = math.sqrt(sum(expected_sigma(n, eps, 1) ** 2 for n in SIZES)) / len(SIZES)
        assert float(server_noise.std()) == pytest.approx(want, rel=TOLERANCE)
