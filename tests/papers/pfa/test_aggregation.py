"""PFA / PFA+ / WeiAvg algebra on hand-made updates, against numpy closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedlib.papers.pfa.aggregation import (
    fedavg,
    pfa_plus_average,
    projected_average,
    public_subspace,
    random_subspace,
    upload_bytes,
    weighted_average,
)


def _updates(n: int = 7, p: int = 12, seed: int = 0) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(seed).normal(size=(n, p)))


def test_fedavg_and_weighted_average_are_the_closed_forms() -> None:
    u = _updates()
    eps = torch.tensor([0.1, 0.1, 0.2, 10.0, 9.0, 0.5, 1.0], dtype=torch.float64)
    np.testing.assert_allclose(fedavg(u), u.numpy().mean(axis=0))
    expected = (eps.numpy()[:, None] * u.numpy()).sum(axis=0) / eps.numpy().sum()
    np.testing.assert_allclose(weighted_average(u, eps), expected)
    with pytest.raises(ValueError, match="positive"):
        weighted_average(u, -eps)
    with pytest.raises(ValueError, match="one budget per update"):
        weighted_average(u, eps[:3])


def test_public_subspace_is_the_top_eigenvectors_of_the_centred_covariance() -> None:
    public = _updates(n=6, p=10, seed=1)
    k = 3
    sub = public_subspace(public, k)
    x = public.numpy()
    centred = x - x.mean(axis=0)
    values, vectors = np.linalg.eigh(centred.T @ centred / len(x))
    top = vectors[:, ::-1][:, :k]
    # Same subspace (signs and order within equal eigenvalues aside): equal projectors.
    np.testing.assert_allclose(sub.basis.numpy() @ sub.basis.numpy().T, top @ top.T, atol=1e-10)
    np.testing.assert_allclose(sub.eigenvalues.numpy(), values[::-1][:5], atol=1e-10)
    np.testing.assert_allclose(sub.mean.numpy(), x.mean(axis=0))
    np.testing.assert_allclose(sub.basis.T @ sub.basis, np.eye(k), atol=1e-12)


def test_k_beyond_the_rank_completes_the_basis_orthogonally() -> None:
    public = _updates(n=3, p=10, seed=2)  # centred rank 2
    sub = public_subspace(public, 5, torch.Generator().manual_seed(0))
    assert len(sub.eigenvalues) == 2
    basis = sub.basis.numpy()
    np.testing.assert_allclose(basis.T @ basis, np.eye(5), atol=1e-10)
    # The informative directions are the first two; every centred public update lies
    # in the span.
    centred = (public - public.mean(dim=0)).numpy()
    np.testing.assert_allclose(basis @ basis.T @ centred.T, centred.T, atol=1e-10)
    with pytest.raises(ValueError, match="k must be an integer between 1"):
        public_subspace(public, 11)


def test_a_lone_public_update_spans_the_line_through_the_origin() -> None:
    # The authors' code does not centre a single public update: the private mean is
    # projected on the line along it.
    public = _updates(n=1, p=10, seed=3)
    sub = public_subspace(public, 1)
    u = public[0].numpy()
    np.testing.assert_allclose(sub.mean.numpy(), np.zeros(10))
    np.testing.assert_allclose(sub.basis.numpy()[:, 0] * np.sign(sub.basis.numpy()[0, 0]),
                               u / np.linalg.norm(u) * np.sign(u[0]), atol=1e-12)
    np.testing.assert_allclose(sub.eigenvalues.numpy(), [u @ u])
    private = _updates(n=1, p=10, seed=4)
    expected = (private[0].numpy() @ u) / (u @ u) * u
    np.testing.assert_allclose(sub.project(private)[0].numpy(), expected, atol=1e-12)


def test_projected_average_matches_the_formula() -> None:
    u = _updates(n=8, p=9, seed=3)
    eps = torch.tensor([10.0, 9.5, 9.0, 0.1, 0.2, 0.1, 0.3, 0.1], dtype=torch.float64)
    public = eps > 5
    sub = public_subspace(u[public], 2)
    got = projected_average(u, eps, public, sub)
    x, e, pub = u.numpy(), eps.numpy(), public.numpy()
    u_pub = (e[pub, None] * x[pub]).sum(0) / e[pub].sum()
    u_priv = (e[~pub, None] * x[~pub]).sum(0) / e[~pub].sum()
    mu = x[pub].mean(0)
    v = sub.basis.numpy()
    projected = mu + v @ v.T @ (u_priv - mu)
    expected = (e[pub].sum() * u_pub + e[~pub].sum() * projected) / e.sum()
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-12)
    # Only public clients: the projection is not used, PFA is WeiAvg.
    all_public = torch.ones(8, dtype=torch.bool)
    np.testing.assert_allclose(projected_average(u, eps, all_public, sub),
                               weighted_average(u, eps))
    with pytest.raises(ValueError, match="public client"):
        projected_average(u, eps, torch.zeros(8, dtype=torch.bool), sub)


def test_pfa_plus_rebuilds_private_updates_from_k_coefficients() -> None:
    rng = np.random.default_rng(4)
    public = torch.as_tensor(rng.normal(size=(4, 20)))
    sub = public_subspace(public, 2)
    # Private updates inside the affine subspace mu + span(V): PFA+ loses nothing.
    coeffs = torch.as_tensor(rng.normal(size=(5, 2)))
    private = sub.mean + coeffs @ sub.basis.T
    np.testing.assert_allclose(sub.coefficients(private), coeffs, atol=1e-12)
    np.testing.assert_allclose(sub.reconstruct(sub.coefficients(private)), private, atol=1e-12)
    eps_pub = torch.tensor([9.0, 10.0, 8.0, 9.5], dtype=torch.float64)
    eps_priv = torch.tensor([0.1, 0.2, 0.1, 0.3, 0.2], dtype=torch.float64)
    got = pfa_plus_average(public, sub.coefficients(private), eps_pub, eps_priv, sub)
    everyone = torch.cat([public, private])
    np.testing.assert_allclose(got, weighted_average(everyone, torch.cat([eps_pub, eps_priv])),
                               atol=1e-12)
    # A private update outside the subspace is replaced by its projection.
    outside = private + torch.as_tensor(rng.normal(size=(5, 20)))
    got = pfa_plus_average(public, sub.coefficients(outside), eps_pub, eps_priv, sub)
    projected = sub.project(outside)
    np.testing.assert_allclose(
        got, weighted_average(torch.cat([public, projected]), torch.cat([eps_pub, eps_priv])),
        atol=1e-12)


def test_random_subspace_is_orthonormal_and_ignores_the_public_directions() -> None:
    public = _updates(n=4, p=30, seed=5)
    a = random_subspace(public, 3, torch.Generator().manual_seed(1))
    b = random_subspace(public, 3, torch.Generator().manual_seed(2))
    np.testing.assert_allclose(a.basis.T @ a.basis, np.eye(3), atol=1e-12)
    assert not np.allclose(a.basis @ a.basis.T, b.basis @ b.basis.T)


def test_upload_bytes_count_four_bytes_per_float_sent() -> None:
    logr = {"1.weight": 7840, "1.bias": 10}
    assert upload_bytes(logr, n_full=24) == 4 * 24 * 7850
    # PFA+: 3 public clients send everything, 21 private ones k per layer.
    assert upload_bytes(logr, 3, 21, k=1) == 4 * (3 * 7850 + 21 * 2)
    # k larger than a layer sends the layer's size at most.
    assert upload_bytes(logr, 3, 21, k=64) == 4 * (3 * 7850 + 21 * (64 + 10))


def test_at_k_equal_to_the_layer_size_pfa_and_pfa_plus_are_weiavg() -> None:
    """Why the tuning of k is bounded by the largest layer: a complete basis projects
    nothing, so both methods aggregate as the epsilon-weighted mean of every update."""
    u = _updates(n=8, p=9, seed=5)
    eps = torch.tensor([10.0, 9.5, 9.0, 0.1, 0.2, 0.1, 0.3, 0.1], dtype=torch.float64)
    public = eps > 5
    sub = public_subspace(u[public], 9, torch.Generator().manual_seed(0))
    assert sub.basis.shape == (9, 9)
    everyone = weighted_average(u, eps)
    np.testing.assert_allclose(projected_average(u, eps, public, sub), everyone, atol=1e-12)
    got = pfa_plus_average(u[public], sub.coefficients(u[~public]), eps[public], eps[~public],
                           sub)
    np.testing.assert_allclose(got, everyone, atol=1e-12)
    # One direction fewer projects something away.
    short = public_subspace(u[public], 8, torch.Generator().manual_seed(0))
    assert not np.allclose(projected_average(u, eps, public, short), everyone, atol=1e-6)
