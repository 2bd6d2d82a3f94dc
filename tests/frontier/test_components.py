"""Pieces of the adapted methods: PADPFL's noise split and impact factors, PPSGD's step
sizes, the multi-task relationship matrix and its proximal step, the server's estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedlib.frontier.engine import Generators, aggregate, clip_updates
from fedlib.frontier.multitask import EIGENVALUE_FLOOR, relationship, relationship_prox
from fedlib.frontier.padpfl import impact_factors, noise_split
from fedlib.frontier.pfa import public_clients
from fedlib.frontier.ppsgd import step_sizes


@pytest.mark.parametrize("present", [[True] * 5, [True, False, True, False, False],
                                     [False] * 5])
def test_padpfl_noise_split_totals_the_calibrated_noise_whoever_is_present(present):
    p = torch.as_tensor(impact_factors(np.array([10, 20, 30, 40, 50]), 1.0))
    active = torch.tensor(present)
    client, server = noise_split(2.0, p, active, share=0.6)
    variance = client**2 * float((p[active] ** 2).sum()) + server**2
    assert variance == pytest.approx(4.0, rel=1e-12)
    assert client**2 * float((p**2).sum()) == pytest.approx(0.6 * 4.0, rel=1e-12)


def test_impact_factors_follow_size_to_a_power():
    np.testing.assert_allclose(impact_factors(np.array([1, 3]), 1.0), [0.25, 0.75])
    np.testing.assert_allclose(impact_factors(np.array([1, 3]), 0.0), [0.5, 0.5])


def test_ppsgd_step_sizes_follow_the_personalisation_level():
    assert step_sizes(0.5, 0.2) == (0.1, 0.5)
    assert step_sizes(0.5, 1.0) == (0.5, 0.5)
    assert step_sizes(0.5, 4.0) == (0.5, 0.125)
    with pytest.raises(ValueError, match="alpha"):
        step_sizes(0.5, math.inf)


def test_relationship_is_a_unit_trace_square_root_of_the_gram_matrix():
    g = torch.Generator().manual_seed(0)
    models = torch.randn((4, 3, 2), generator=g, dtype=torch.float64)
    omega = relationship(models)
    flat = models.reshape(4, -1)
    assert float(torch.trace(omega)) == pytest.approx(1.0)
    gram = flat @ flat.T
    scale = torch.trace(omega @ omega) / torch.trace(gram)  # omega^2 is gram / tr(root)^2
    torch.testing.assert_close(omega @ omega, gram * scale, rtol=1e-9, atol=1e-12)
    zero = relationship(torch.zeros((3, 2, 2), dtype=torch.float64))
    torch.testing.assert_close(zero, torch.eye(3, dtype=torch.float64) / 3)
    assert EIGENVALUE_FLOOR == 1e-7


def test_relationship_prox_solves_the_proximal_problem():
    g = torch.Generator().manual_seed(1)
    models = torch.randn((3, 2, 2), generator=g, dtype=torch.float64)
    a = torch.randn((3, 3), generator=g, dtype=torch.float64)
    omega = a @ a.T + 0.1 * torch.eye(3, dtype=torch.float64)
    omega = omega / torch.trace(omega)
    s = 0.3
    out = relationship_prox(models, omega, s)
    # Stationarity of 1/2 ||W - V||^2 + s/2 tr(W Omega^-1 W^T) in W (columns = clients).
    w, v = out.reshape(3, -1).T, models.reshape(3, -1).T
    residual = (w - v) + s * w @ torch.linalg.inv(omega)
    assert float(residual.abs().max()) < 1e-12
    shrunk = relationship_prox(models, torch.eye(3, dtype=torch.float64) / 3, s)
    torch.testing.assert_close(shrunk, models / (1 + 3 * s))


def test_server_estimate_clips_weights_and_divides_by_the_expected_count():
    updates = torch.tensor([[3.0, 4.0], [0.3, 0.4], [1.0, 0.0]], dtype=torch.float64)
    clipped = clip_updates(updates, 1.0)
    torch.testing.assert_close(clipped[0], torch.tensor([0.6, 0.8], dtype=torch.float64))
    torch.testing.assert_close(clipped[1], updates[1])
    rows = torch.tensor([0, 2])
    ones = torch.ones(2, dtype=torch.float64)
    mean = aggregate(updates[rows], ones, 0.5, 3.0, Generators(0), clip=1.0)
    torch.testing.assert_close(mean, (clipped[0] + clipped[2]) / (0.5 * 3))
    weighted = aggregate(updates[rows], torch.tensor([2.0, 1.0], dtype=torch.float64), 0.5,
                         4.0, Generators(0))
    torch.testing.assert_close(weighted, (2 * updates[0] + updates[2]) / (0.5 * 4))


def test_a_taken_part_draws_the_batches_the_whole_part_would():
    from fedlib.frontier.engine import ClientData, poisson_batch

    rng = np.random.default_rng(0)
    data = ClientData.pad([rng.normal(size=(n, 3)) for n in (4, 6, 5)],
                          [rng.integers(0, 2, size=n) for n in (4, 6, 5)])
    whole = poisson_batch(data, 0.5, Generators(7))
    rows = torch.tensor([0, 2])
    part = poisson_batch(data.take(rows), 0.5, Generators(7))
    torch.testing.assert_close(part, whole[rows])
    with pytest.raises(ValueError, match="taken already"):
        data.take(rows).take(rows)


def test_public_clients_are_a_seeded_fraction_with_at_least_one():
    assert public_clients(30, 0.1, 0).sum() == 3
    assert public_clients(5, 0.01, 0).sum() == 1
    np.testing.assert_array_equal(public_clients(30, 0.1, 4), public_clients(30, 0.1, 4))
