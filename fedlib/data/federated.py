"""Per-client data of a federated classification task, and the per-client split.

:class:`FederatedClassification` holds every client's train and test examples
in flat arrays with a client index per row; :func:`split_per_user` builds it
from examples that carry a user id, holding out a seeded share of each user's
examples for test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class FederatedClassification:
    """Per-user train and test examples of a classification task.

    Attributes
    ----------
    x_train, x_test
        float32 ``(n, ...)`` inputs (for the linear model, ``(n, d)``).
    y_train, y_test
        int64 class labels.
    user_train, user_test
        int64 user index of each example, in ``[0, n_users)``.
    n_users, n_classes
        Number of users and of classes.
    source
        Where the data came from, in words.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    user_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    user_test: np.ndarray
    n_users: int
    n_classes: int
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("train", "test"):
            x, y, u = (getattr(self, f"{k}_{name}") for k in ("x", "y", "user"))
            if not len(x) == len(y) == len(u):
                raise ValueError(f"{name}: x, y and user have lengths {len(x)}, {len(y)}, {len(u)}")
            if len(u) and (u.min() < 0 or u.max() >= self.n_users):
                raise ValueError(f"{name}: user indices must lie in [0, {self.n_users})")
            if len(y) and (y.min() < 0 or y.max() >= self.n_classes):
                raise ValueError(f"{name}: labels must lie in [0, {self.n_classes})")

    def train_counts(self) -> np.ndarray:
        """Training examples per user, ``(n_users,)``."""
        return np.bincount(self.user_train, minlength=self.n_users)


def split_per_user(
    x: np.ndarray,
    y: np.ndarray,
    user: np.ndarray,
    n_classes: int,
    *,
    test_fraction: float = 0.1,
    min_examples: int = 0,
    max_users: int | None = None,
    seed: int = 0,
    source: str = "",
) -> FederatedClassification:
    """Split each user's examples into train and test (seeded), keeping users with enough data.

    Parameters
    ----------
    x, y, user
        Examples, labels and the user of each example (any hashable ids).
    n_classes
        Number of classes.
    test_fraction
        Share of each user's examples held out for test (at least one each).
    min_examples
        Users with fewer examples are dropped.
    max_users
        Keep at most this many users (the first in sorted id order).
    seed
        Seed of the per-user shuffles.
    source
        Description stored in the result.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    ids, inverse, counts = np.unique(np.asarray(user), return_inverse=True, return_counts=True)
    kept = np.flatnonzero(counts >= max(min_examples, 2))
    if max_users is not None:
        kept = kept[:max_users]
    if len(kept) == 0:
        raise ValueError(f"no user has at least {max(min_examples, 2)} examples")
    rng = np.random.default_rng(seed)
    train_idx, test_idx, train_user, test_user = [], [], [], []
    for new, old in enumerate(kept):
        rows = rng.permutation(np.flatnonzero(inverse == old))
        n_test = max(1, int(round(test_fraction * len(rows))))
        test_idx.append(rows[:n_test])
        train_idx.append(rows[n_test:])
        test_user.append(np.full(n_test, new))
        train_user.append(np.full(len(rows) - n_test, new))
    tr, te = np.concatenate(train_idx), np.concatenate(test_idx)
    return FederatedClassification(
        x_train=x[tr], y_train=np.asarray(y)[tr].astype(np.int64),
        user_train=np.concatenate(train_user).astype(np.int64),
        x_test=x[te], y_test=np.asarray(y)[te].astype(np.int64),
        user_test=np.concatenate(test_user).astype(np.int64),
        n_users=len(kept), n_classes=n_classes, source=source,
    )
