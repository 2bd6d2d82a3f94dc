"""A small synthetic federation shared by the frontier tests (no dataset needed)."""

from __future__ import annotations

import numpy as np
import pytest

from fedlib.frontier.federations import Federation, split_clients


def synthetic_federation(n_clients: int = 5, dim: int = 4, n_classes: int = 3,
                         seed: int = 0) -> Federation:
    """Clients of different sizes whose labels follow a shared plus a personal linear rule."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=(dim, n_classes))
    xs, ys, clients, start = [], [], [], 0
    for i in range(n_clients):
        n = 10 + 3 * i
        x = rng.normal(size=(n, dim))
        rule = shared + 0.7 * rng.normal(size=(dim, n_classes))
        ys.append(np.argmax(x @ rule + 0.3 * rng.normal(size=(n, n_classes)), axis=1))
        xs.append(x)
        clients.append(np.arange(start, start + n))
        start += n
    return split_clients("synthetic", np.concatenate(xs), np.concatenate(ys), clients,
                         n_classes, seed=seed, source="synthetic linear rules")


@pytest.fixture(scope="module")
def federation() -> Federation:
    return synthetic_federation()
