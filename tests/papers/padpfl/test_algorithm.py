"""PADPFL engine against a per-run, per-client reference with autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedlib.data.corruption import salt_and_pepper
from fedlib.papers.padpfl.algorithm import LocalSolver, init_mlp, run_padpfl

D, H, K = 6, 5, 3


def _problem(n_clients: int = 4, m: int = 7, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n_clients, m, D, generator=gen, dtype=torch.float64)
    y = torch.randint(0, K, (n_clients, m), generator=gen)
    mask = torch.ones(n_clients, m, dtype=torch.bool)
    mask[0, 5:] = False  # clients of different sizes
    mask[2, 3:] = False
    return x, y, mask


def _reference(x_phases, switch, y, mask, impact, sig_c, sig_s, solver, seed):
    """Loop over runs and clients; gradients by autograd; the engine's draw order."""
    n, m, d = x_phases[0].shape
    runs, rounds, _ = impact.shape
    gen = torch.Generator().manual_seed(seed)
    init = init_mlp(d, H, K, 1, gen, torch.float64)
    start = [init.W1[:, 0], init.b1[0], init.W2[0], init.b2[0]]
    models = [[t.clone() for t in start] for _ in range(runs)]
    history = []
    for t in range(1, rounds + 1):
        x = x_phases[1] if switch is not None and t >= switch else x_phases[0]
        uploads = [[None] * n for _ in range(runs)]
        for g in range(runs):
            for i in range(n):
                w = [p.clone().requires_grad_(True) for p in models[g]]
                xi, yi = x[i][mask[i]], y[i][mask[i]]
                for _ in range(solver.steps):
                    logits = torch.relu(xi @ w[0] + w[1]) @ w[2] + w[3]
                    loss = torch.nn.functional.cross_entropy(logits, yi)
                    grads = torch.autograd.grad(loss, w)
                    with torch.no_grad():
                        for p, gp, p0 in zip(w, grads, models[g], strict=True):
                            p -= solver.lr * (gp + solver.mu * (p - p0))
                flat = torch.cat([p.detach().reshape(-1) for p in w])
                factor = min(1.0, solver.clip / float(flat.norm()))
                uploads[g][i] = [p.detach() * factor for p in w]
        # Noise draws: per tensor, client noise then server noise, shared by all runs.
        client_shapes = [(n, d, 1, H), (n, 1, H), (n, 1, H, K), (n, 1, K)]
        server_shapes = [(d, 1, H), (1, H), (1, H, K), (1, K)]
        new = [[None] * 4 for _ in range(runs)]
        for j in range(4):
            zc = torch.randn(client_shapes[j], generator=gen, dtype=torch.float64)
            zs = torch.randn(server_shapes[j], generator=gen, dtype=torch.float64)
            zc = zc[:, :, 0] if j == 0 else zc[:, 0]
            zs = zs[:, 0] if j == 0 else zs[0]
            for g in range(runs):
                agg = sum(impact[g, t - 1, i] * (uploads[g][i][j] + sig_c[g] * zc[i])
                          for i in range(n))
                new[g][j] = agg + sig_s[g, t - 1] * zs
        models = new
        history.append([[p.clone() for p in model] for model in models])
    return history


@pytest.mark.parametrize("noisy", [False, True])
def test_engine_matches_reference(noisy: bool) -> None:
    x, y, mask = _problem()
    x_late = salt_and_pepper_like(x)
    rounds, runs = 3, 3
    rng = np.random.default_rng(1)
    impact = rng.random((runs, rounds, 4))
    impact[0, :, 1] = 0.0  # a zero impact factor
    impact /= impact.sum(axis=2, keepdims=True)
    sig_c = np.array([0.0, 0.3, 0.05]) if noisy else np.zeros(runs)
    sig_s = rng.random((runs, rounds)) * 0.2 if noisy else np.zeros((runs, rounds))
    solver = LocalSolver(lr=0.3, steps=3, mu=0.1, clip=1.5)  # clipping is active
    ref = _reference([x, x_late], 3, y, mask, impact, sig_c, sig_s, solver, seed=5)

    eval_x = x[mask]
    eval_y = y[mask]
    hist = run_padpfl([x, x_late], y, mask, impact, sig_c, sig_s, hidden=H, n_classes=K,
                      solver=solver, data_schedule=[3], eval_sets={"train": (eval_x, eval_y)},
                      seed=5)
    for g in range(runs):
        w = ref[-1][g]
        engine = [hist.final.W1[:, g], hist.final.b1[g], hist.final.W2[g], hist.final.b2[g]]
        for got, want in zip(engine, w, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
        logits = torch.relu(eval_x @ w[0] + w[1]) @ w[2] + w[3]
        expected = torch.nn.functional.cross_entropy(logits, eval_y).item()
        assert hist.loss["train"][g, -1] == pytest.approx(expected, rel=1e-10)
        accuracy = (logits.argmax(1) == eval_y).double().mean().item()
        assert hist.accuracy["train"][g, -1] == pytest.approx(accuracy)
    # Runs differ (different impact factors), so the check is not trivially shared.
    assert len({round(v, 8) for v in hist.loss["train"][:, -1]}) == runs
    assert np.all(hist.upload_norm <= solver.clip + 1e-9)


def salt_and_pepper_like(x: torch.Tensor) -> torch.Tensor:
    """A second data phase: a perturbed copy of the features."""
    return x + 0.5 * torch.sin(3 * x)


def test_a_run_alone_equals_the_same_run_in_a_batch() -> None:
    x, y, mask = _problem()
    impact = np.full((2, 2, 4), 0.25)
    impact[1] = [0.1, 0.2, 0.3, 0.4]
    sig_c, sig_s = np.array([0.1, 0.2]), np.array([[0.0, 0.1], [0.05, 0.0]])
    kw = dict(hidden=H, n_classes=K, eval_sets={"e": (x[mask], y[mask])}, seed=3)
    both = run_padpfl(x, y, mask, impact, sig_c, sig_s, **kw)
    alone = run_padpfl(x, y, mask, impact[1:], sig_c[1:], sig_s[1:], **kw)
    np.testing.assert_allclose(both.loss["e"][1], alone.loss["e"][0], rtol=1e-5)


def test_noise_scale_reaches_the_global_model() -> None:
    """One client weighted 1, a negligible learning rate and no clipping: after one round
    the broadcast model is the initial one plus sigma_C z + sigma_S z', whose spread over
    many coordinates is sqrt(sigma_C^2 + sigma_S^2); a run without noise does not move."""
    x = torch.zeros(2, 4, 600, dtype=torch.float64)
    y = torch.zeros(2, 4, dtype=torch.long)
    mask = torch.ones(2, 4, dtype=torch.bool)
    impact = np.zeros((2, 1, 2))
    impact[:, 0, 0] = 1.0
    sig_c, sig_s = 0.7, 0.4
    solver = LocalSolver(lr=1e-12, steps=1, mu=0.0, clip=1e9)
    hist = run_padpfl(x, y, mask, impact, [sig_c, 0.0], np.array([[sig_s], [0.0]]), hidden=H,
                      n_classes=K, solver=solver, seed=9)
    init = init_mlp(600, H, K, 1, torch.Generator().manual_seed(9), torch.float64)
    change = hist.final.W1[:, 0] - init.W1[:, 0]
    assert float(change.std()) == pytest.approx(np.hypot(sig_c, sig_s), rel=0.03)
    still = hist.final.W1[:, 1] - init.W1[:, 0]
    assert float(still.abs().max()) < 1e-9


def test_clipping_bounds_every_upload() -> None:
    x, y, mask = _problem()
    x = x * 50  # large gradients: clipping must bind
    impact = np.full((1, 2, 4), 0.25)
    hist = run_padpfl(x, y, mask, impact, [0.0], np.zeros((1, 2)), hidden=H, n_classes=K,
                      solver=LocalSolver(lr=1.0, steps=2, mu=0.0, clip=0.5))
    np.testing.assert_allclose(hist.upload_norm, 0.5, rtol=1e-5)


@pytest.mark.parametrize(
    ("impact", "message"),
    [
        (np.full((1, 2, 4), 0.3), "sum to 1"),
        (np.array([[[1.5, -0.5, 0.0, 0.0]] * 2]), "non-negative"),
        (np.full((1, 3, 4), 0.25), "shape"),
    ],
)
def test_bad_impact_factors_are_rejected(impact: np.ndarray, message: str) -> None:
    x, y, mask = _problem()
    runs, rounds = impact.shape[0], 2
    with pytest.raises(ValueError, match=message):
        run_padpfl(x, y, mask, impact if impact.shape[1] == rounds else impact[:, :rounds + 1],
                   [0.0], np.zeros((runs, rounds)), hidden=H, n_classes=K)


def test_salt_and_pepper_density() -> None:
    rng = np.random.default_rng(0)
    images = np.full((200, 28, 28), 0.5, dtype=np.float32)
    noisy = salt_and_pepper(images, 0.2, rng)
    changed = noisy != 0.5
    assert changed.mean() == pytest.approx(0.2, abs=0.005)  # binomial sd ~ 0.001
    assert (noisy[changed] == 1.0).mean() == pytest.approx(0.5, abs=0.02)
    assert set(np.unique(noisy)) == {0.0, 0.5, 1.0}
    np.testing.assert_array_equal(salt_and_pepper(images, 0.0, rng), images)
    assert np.all(salt_and_pepper(images, 1.0, rng) != 0.5)
    with pytest.raises(ValueError, match="probability"):
        salt_and_pepper(images, 1.2, rng)
    with pytest.raises(ValueError, match="float"):
        salt_and_pepper(images.astype(np.uint8), 0.1, rng)
