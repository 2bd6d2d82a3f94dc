"""Aggregation under heterogeneous DP budgets: FedAvg, WeiAvg, PFA and PFA+ (Liu et al. 2022).

The server receives, per "layer" (one parameter tensor of the model, flattened),
the noisy updates Delta x_m of the sampled clients and their budgets epsilon_m.

* FedAvg: the plain mean.
* WeiAvg: the mean weighted by epsilon_m / sum epsilon.
* PFA: the sampled clients split into public (large budget) and private ones.
  With U_pub, U_priv the epsilon-weighted means of each group, mu the plain mean
  of the public updates and V_k the top-k eigenvectors of the centred
  covariance of the individual public updates (a lone public update: mu = 0 and
  V_1 its direction, as in the authors' code), the private mean is replaced by
  its projection mu + V_k V_k^T (U_priv - mu) and the two groups are combined
  with weights sum eps_pub / sum eps and sum eps_priv / sum eps.
* PFA as Algorithm 3 of the paper writes it (``projection="public-text"``): V_k the
  top-k eigenvectors of the second moment x x^T of the epsilon-weighted mean x of the
  public updates (rank one: its first eigenvector is x / |x|, the others an arbitrary
  basis of the null space), and the private mean replaced by the linear projection
  V_k V_k^T U_priv, with no mean offset.
* The random-projection ablation of Figure 6b: a random Gaussian k-dimensional subspace
  in place of V_k, either centred at the public mean like the released code's subspace
  (``"random"``) or used linearly like the text's (``"random-text"``).
* PFA+: private clients project their own update on the previous round's
  (V_k, mu) and upload only the k coefficients V_k^T (Delta x_m - mu); the
  server rebuilds mu + V_k c_m. The first (warm-up) round is plain PFA.

Uplink cost is counted as 4 bytes per float sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

BYTES_PER_FLOAT = 4
AGGREGATORS = ("fedavg", "weiavg", "pfa", "pfa+", "minimum", "maximum", "np-fedavg")
"""FedAvg under heterogeneous DP, WeiAvg, PFA, PFA+, and the three FedAvg baselines
(every client at the smallest budget, every client at the largest, no noise)."""


def _check_weights(eps: Tensor, n: int) -> Tensor:
    if eps.shape != (n,):
        raise ValueError(f"need one budget per update: {n} updates, budgets {tuple(eps.shape)}")
    if not bool((eps > 0).all()):
        raise ValueError("budgets must be positive")
    return eps


def fedavg(updates: Tensor) -> Tensor:
    """Plain mean of the (n, P) updates."""
    return updates.mean(dim=0)


def weighted_average(updates: Tensor, eps: Tensor) -> Tensor:
    """WeiAvg: sum_m eps_m Delta x_m / sum eps."""
    eps = _check_weights(eps.to(updates), updates.shape[0])
    return (eps / eps.sum()) @ updates


@dataclass(frozen=True)
class Subspace:
    """Top-k subspace of one layer's public updates.

    Attributes
    ----------
    mean
        mu, the plain mean of the public updates (P,).
    basis
        V_k, orthonormal columns (P, k).
    eigenvalues
        The nonzero eigenvalues of the centred covariance, largest first (at most
        n_public - 1 of them); for the spectrum of Figure 13.
    """

    mean: Tensor
    basis: Tensor
    eigenvalues: Tensor

    def coefficients(self, updates: Tensor) -> Tensor:
        """V_k^T (Delta x - mu) for (n, P) updates: (n, k)."""
        return (updates - self.mean) @ self.basis

    def reconstruct(self, coefficients: Tensor) -> Tensor:
        """mu + V_k c for (n, k) coefficients: (n, P)."""
        return self.mean + coefficients @ self.basis.T

    def project(self, updates: Tensor) -> Tensor:
        """mu + V_k V_k^T (Delta x - mu)."""
        return self.reconstruct(self.coefficients(updates))


def public_subspace(public_updates: Tensor, k: int, generator: torch.Generator | None = None
                    ) -> Subspace:
    """Top-k eigenvectors of the centred covariance of the (n, P) public updates.

    Computed from the SVD of the centred (n, P) matrix (the P x P covariance is
    never formed). Its rank is at most n - 1; when k exceeds it, the remaining
    directions carry no information and are drawn uniformly at random in the
    orthogonal complement (as an eigensolver returns an arbitrary basis of the
    null space). A lone public update is not centred (the authors' code): the
    subspace is then the line through the origin along that update (mean 0).
    """
    n, p = public_updates.shape
    _check_k(k, p)
    if n < 1:
        raise ValueError("need at least one public update")
    mean = public_updates.mean(dim=0) if n > 1 else torch.zeros_like(public_updates[0])
    centred = public_updates - mean
    basis, s = _top_directions(centred, k)
    return Subspace(mean=mean, basis=_complete_basis(basis, k, generator),
                    eigenvalues=s**2 / n)


def _check_k(k: int, p: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= p:
        raise ValueError(f"k must be an integer between 1 and the layer size {p}, got {k!r}")


def _top_directions(rows: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The top min(k, rank) right singular vectors of the (n, P) ``rows`` as (P, r)
    columns, and the nonzero singular values (largest first)."""
    n, p = rows.shape
    _, s, vh = torch.linalg.svd(rows, full_matrices=False)
    tolerance = s.max().clamp_min(1e-30) * max(n, p) * torch.finfo(s.dtype).eps
    rank = int((s > tolerance).sum())
    return vh[: min(k, rank)].T, s[:rank]


def _complete_basis(basis: Tensor, k: int, generator: torch.Generator | None) -> Tensor:
    """``basis`` (P, r) with k - r further orthonormal columns drawn uniformly at random
    in its orthogonal complement (as an eigensolver returns an arbitrary basis of the
    null space)."""
    p, r = basis.shape
    if r >= k:
        return basis
    extra = torch.randn((p, k - r), generator=generator, dtype=basis.dtype).to(basis.device)
    extra -= basis @ (basis.T @ extra)
    extra, _ = torch.linalg.qr(extra)
    return torch.cat([basis, extra], dim=1)


def text_subspace(public_updates: Tensor, eps_public: Tensor, k: int,
                  generator: torch.Generator | None = None) -> Subspace:
    """Algorithm 3 as the paper writes it (lines 2-4): the top-k eigenvectors of
    Sigma = x x^T, x the epsilon-weighted mean of the (n, P) public updates.

    Sigma has rank one: its top eigenvector is x / |x| (eigenvalue |x|^2) and every other
    eigenvalue is 0, so the remaining k - 1 directions are an arbitrary orthonormal basis
    of part of its null space, drawn at random as in :func:`public_subspace`. The
    subspace has no mean: its projection is the linear V_k V_k^T u (line 6).
    """
    n, p = public_updates.shape
    _check_k(k, p)
    if n < 1:
        raise ValueError("need at least one public update")
    weighted = weighted_average(public_updates, eps_public)
    basis, s = _top_directions(weighted[None], k)
    return Subspace(mean=torch.zeros_like(weighted),
                    basis=_complete_basis(basis, k, generator),
                    eigenvalues=s**2)


def random_subspace(public_updates: Tensor, k: int, generator: torch.Generator | None = None,
                    *, centred: bool = True) -> Subspace:
    """Ablation of Figure 6b: a random Gaussian k-dimensional subspace (orthonormal
    columns; no information from the public updates' directions).

    ``centred``: centred at the public mean like the released code's subspace (the
    projection is mu + V V^T (u - mu)); otherwise with no mean, used linearly like the
    subspace of Algorithm 3 as written (V V^T u), which is how the paper's text uses a
    random projection in its place (Section 4.4).
    """
    n, p = public_updates.shape
    _check_k(k, p)
    gaussian = torch.randn((p, k), generator=generator, dtype=public_updates.dtype)
    basis, _ = torch.linalg.qr(gaussian.to(public_updates.device))
    mean = public_updates.mean(dim=0) if centred else torch.zeros_like(public_updates[0])
    return Subspace(mean=mean, basis=basis,
                    eigenvalues=torch.zeros(0, dtype=public_updates.dtype))


def combine(public_mean: Tensor, private_mean: Tensor, eps_public: Tensor, eps_private: Tensor
            ) -> Tensor:
    """(sum eps_pub U_pub + sum eps_priv U_priv) / sum eps."""
    a, b = eps_public.sum(), eps_private.sum()
    return (a * public_mean + b * private_mean) / (a + b)


def projected_average(updates: Tensor, eps: Tensor, public: Tensor, subspace: Subspace
                      ) -> Tensor:
    """PFA's aggregate of one layer, given the subspace of this round's public updates."""
    eps = _check_weights(eps.to(updates), updates.shape[0])
    public = public.to(torch.bool)
    if not bool(public.any()):
        raise ValueError("PFA needs at least one public client in the round")
    if bool(public.all()):
        return weighted_average(updates, eps)
    pub_mean = weighted_average(updates[public], eps[public])
    priv_mean = weighted_average(updates[~public], eps[~public])
    return combine(pub_mean, subspace.project(priv_mean[None])[0], eps[public], eps[~public])


def pfa_plus_average(public_updates: Tensor, private_coefficients: Tensor, eps_public: Tensor,
                     eps_private: Tensor, previous: Subspace) -> Tensor:
    """PFA+'s aggregate of one layer: the private clients' k coefficients (against the
    previous round's subspace) are rebuilt and averaged with the public updates."""
    if public_updates.shape[0] == 0:
        raise ValueError("PFA+ needs at least one public client in the round")
    pub_mean = weighted_average(public_updates, eps_public)
    if private_coefficients.shape[0] == 0:
        return pub_mean
    rebuilt = previous.reconstruct(private_coefficients)
    return combine(pub_mean, weighted_average(rebuilt, eps_private), eps_public, eps_private)


def upload_floats(layer_sizes: Mapping[str, int], n_full: int, n_coefficients: int = 0,
                  k: int = 0) -> int:
    """Floats sent uplink in one round: ``n_full`` clients send every parameter,
    ``n_coefficients`` clients send k coefficients per layer (capped at the layer size)."""
    full = sum(layer_sizes.values())
    reduced = sum(min(k, size) for size in layer_sizes.values())
    return n_full * full + n_coefficients * reduced


def upload_bytes(layer_sizes: Mapping[str, int], n_full: int, n_coefficients: int = 0,
                 k: int = 0) -> int:
    """Bytes of :func:`upload_floats` (4 per float)."""
    return BYTES_PER_FLOAT * upload_floats(layer_sizes, n_full, n_coefficients, k)
