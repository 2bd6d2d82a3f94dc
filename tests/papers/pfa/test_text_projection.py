"""Algorithm 3 as the paper writes it (x x^T, linear projection) and the random subspaces
of Figure 6b's ablation, against closed forms on small matrices."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedlib.papers.pfa.aggregation import (
    projected_average,
    public_subspace,
    random_subspace,
    text_subspace,
)
from fedlib.papers.pfa.training import PROJECTIONS, Variant, _aggregate


def _updates(n: int, p: int, seed: int) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(seed).normal(size=(n, p)))


def _projector(basis: torch.Tensor) -> np.ndarray:
    v = basis.numpy()
    return v @ v.T


def test_text_subspace_is_the_weighted_public_mean_direction_with_no_offset() -> None:
    public = _updates(3, 9, seed=0)
    eps = torch.tensor([10.0, 9.5, 1.0], dtype=torch.float64)
    sub = text_subspace(public, eps, 1)
    x = (eps.numpy()[:, None] * public.numpy()).sum(axis=0) / eps.numpy().sum()
    np.testing.assert_allclose(sub.mean.numpy(), np.zeros(9))
    # The top eigenvector of x x^T is x / |x| (up to sign), its eigenvalue |x|^2.
    direction = sub.basis[:, 0].numpy()
    np.testing.assert_allclose(abs(direction @ x), np.linalg.norm(x), rtol=1e-12)
    np.testing.assert_allclose(sub.eigenvalues.numpy(), [x @ x], rtol=1e-12)
    u = _updates(2, 9, seed=1)
    expected = (u.numpy() @ x)[:, None] * x[None] / (x @ x)
    np.testing.assert_allclose(sub.project(u).numpy(), expected, atol=1e-12)
    # Linear: no mean offset, so the zero update stays at zero (the centred form does not).
    np.testing.assert_allclose(sub.project(torch.zeros(1, 9, dtype=torch.float64)).numpy(), 0.0)
    centred = public_subspace(public, 1)
    assert np.abs(centred.project(torch.zeros(1, 9, dtype=torch.float64)).numpy()).max() > 1e-3


@pytest.mark.parametrize("k", [1, 2, 4])
def test_text_projection_has_rank_k_and_is_idempotent(k: int) -> None:
    public = _updates(3, 8, seed=2)
    sub = text_subspace(public, torch.ones(3, dtype=torch.float64), k,
                        torch.Generator().manual_seed(0))
    projector = _projector(sub.basis)
    np.testing.assert_allclose(sub.basis.numpy().T @ sub.basis.numpy(), np.eye(k), atol=1e-12)
    assert np.linalg.matrix_rank(projector, tol=1e-9) == k
    np.testing.assert_allclose(projector @ projector, projector, atol=1e-12)
    # Sigma = x x^T has rank one: only the first eigenvalue is nonzero, and every further
    # direction is orthogonal to x (an arbitrary basis of the null space).
    assert len(sub.eigenvalues) == 1
    x = public.numpy().mean(axis=0)
    np.testing.assert_allclose(sub.basis[:, 1:].numpy().T @ x, 0.0, atol=1e-12)
    u = _updates(4, 8, seed=3)
    np.testing.assert_allclose(sub.project(u).numpy(), u.numpy() @ projector, atol=1e-12)


@pytest.mark.parametrize("centred", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_random_subspace_has_orthonormal_columns_and_rank_k(centred: bool, k: int) -> None:
    public = _updates(3, 10, seed=4)
    sub = random_subspace(public, k, torch.Generator().manual_seed(5), centred=centred)
    basis = sub.basis.numpy()
    assert basis.shape == (10, k)
    np.testing.assert_allclose(basis.T @ basis, np.eye(k), atol=1e-12)
    assert np.linalg.matrix_rank(_projector(sub.basis), tol=1e-9) == k
    mean = public.numpy().mean(axis=0) if centred else np.zeros(10)
    np.testing.assert_allclose(sub.mean.numpy(), mean, atol=1e-12)
    u = _updates(2, 10, seed=6)
    expected = mean + (u.numpy() - mean) @ basis @ basis.T
    np.testing.assert_allclose(sub.project(u).numpy(), expected, atol=1e-12)


def test_random_subspace_ignores_the_public_directions() -> None:
    """The same generator state gives the same basis whatever the public updates are."""
    a = random_subspace(_updates(3, 10, seed=7), 2, torch.Generator().manual_seed(1),
                        centred=False)
    b = random_subspace(_updates(3, 10, seed=8), 2, torch.Generator().manual_seed(1),
                        centred=False)
    np.testing.assert_allclose(a.basis.numpy(), b.basis.numpy())


def test_text_subspace_rejects_bad_k() -> None:
    public = _updates(2, 5, seed=9)
    for k in (0, 6, 1.5):
        with pytest.raises(ValueError, match="k must be an integer"):
            text_subspace(public, torch.ones(2, dtype=torch.float64), k)  # type: ignore[arg-type]


def test_text_pfa_aggregate_is_algorithm_3_in_closed_form() -> None:
    layer = _updates(6, 7, seed=10)
    eps = torch.tensor([10.0, 9.0, 0.1, 0.2, 0.1, 0.5], dtype=torch.float64)
    public = torch.tensor([True, True, False, False, False, False])
    aggregate, current, coefficient_clients = _aggregate(
        Variant("pfa", 1, "public-text"), layer, eps, public, None, 1,
        torch.Generator().manual_seed(0))
    u, e = layer.numpy(), eps.numpy()
    pub = (e[:2, None] * u[:2]).sum(axis=0) / e[:2].sum()
    priv = (e[2:, None] * u[2:]).sum(axis=0) / e[2:].sum()
    projected = (priv @ pub) / (pub @ pub) * pub
    expected = (e[:2].sum() * pub + e[2:].sum() * projected) / e.sum()
    np.testing.assert_allclose(aggregate.numpy(), expected, atol=1e-12)
    assert coefficient_clients == 0 and current is not None
    np.testing.assert_allclose(
        projected_average(layer, eps, public, current).numpy(), expected, atol=1e-12)


def test_every_projection_is_a_variant_and_others_are_refused() -> None:
    for projection in PROJECTIONS:
        assert Variant("pfa", 2, projection).projection == projection
    with pytest.raises(ValueError, match="projection must be one of"):
        Variant("pfa", 1, "centred")
