"""The per-client container and its seeded per-user split."""

from __future__ import annotations

import numpy as np
import pytest

from fedlib.data.federated import FederatedClassification, split_per_user


def test_split_per_user_is_seeded_disjoint_and_filters_small_users() -> None:
    rng = np.random.default_rng(0)
    user = np.array(["a"] * 30 + ["b"] * 5 + ["c"] * 40)
    x = rng.random((75, 3))
    y = rng.integers(0, 2, 75)
    one = split_per_user(x, y, user, 2, min_examples=10, seed=1)
    two = split_per_user(x, y, user, 2, min_examples=10, seed=1)
    assert one.n_users == 2
    np.testing.assert_array_equal(one.x_test, two.x_test)
    assert np.bincount(one.user_test).tolist() == [3, 4]
    rows = {tuple(r) for r in np.concatenate([one.x_train, one.x_test])}
    assert len(rows) == 70  # every kept example once, in train or test


def test_the_container_refuses_inconsistent_rows() -> None:
    x, y, u = np.zeros((4, 2)), np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])
    data = FederatedClassification(x, y, u, x[:2], y[:2], u[:2], n_users=2, n_classes=2)
    assert data.train_counts().tolist() == [2, 2]
    with pytest.raises(ValueError, match="train: x, y and user have lengths 4, 3, 4"):
        FederatedClassification(x, y[:3], u, x, y, u, n_users=2, n_classes=2)
    with pytest.raises(ValueError, match="user indices must lie in \\[0, 2\\)"):
        FederatedClassification(x, y, u + 1, x, y, u, n_users=2, n_classes=2)
    with pytest.raises(ValueError, match="labels must lie in \\[0, 2\\)"):
        FederatedClassification(x, y, u, x, y - 1, u, n_users=2, n_classes=2)
