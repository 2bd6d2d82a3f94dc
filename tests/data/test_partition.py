"""fedlib.data.partition: seeded, disjoint client splits."""

from __future__ import annotations

import numpy as np
import pytest

from fedlib.data import (
    dirichlet_partition,
    iid_partition,
    label_shard_partition,
    natural_partition,
)

LABELS = np.repeat(np.arange(10), 100)  # 10 classes x 100 examples, sorted
rng0 = np.random.default_rng(123)
SHUFFLED_LABELS = rng0.permutation(LABELS)


def _assert_disjoint(parts: list[np.ndarray], n: int, covering: bool = True) -> None:
    for part in parts:
        assert part.dtype == np.int64 and part.ndim == 1
        assert np.all(np.diff(part) > 0)  # sorted, no repeats within a client
    joined = np.concatenate(parts)
    assert len(np.unique(joined)) == len(joined), "a example was given to two clients"
    assert joined.min() >= 0 and joined.max() < n
    if covering:
        assert len(joined) == n


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


# ---------------------------------------------------------------------------- IID


def test_iid_covers_everything_with_balanced_sizes() -> None:
    parts = iid_partition(103, 10, seed=0)
    assert len(parts) == 10
    _assert_disjoint(parts, 103)
    assert sorted(len(p) for p in parts) == [10] * 7 + [11] * 3


def test_iid_is_seeded() -> None:
    assert _same(iid_partition(500, 7, seed=1), iid_partition(500, 7, seed=1))
    assert not _same(iid_partition(500, 7, seed=1), iid_partition(500, 7, seed=2))
    gen_a = iid_partition(500, 7, seed=np.random.default_rng(5))
    gen_b = iid_partition(500, 7, seed=np.random.default_rng(5))
    assert _same(gen_a, gen_b)


def test_iid_is_not_a_contiguous_split() -> None:
    parts = iid_partition(1000, 4, seed=0)
    assert not _same(parts, [np.arange(i * 250, (i + 1) * 250) for i in range(4)])
    # each client's share of the first half is close to 1/2
    for part in parts:
        assert 0.35 < np.mean(part < 500) < 0.65


def test_iid_with_sizes() -> None:
    parts = iid_partition(100, 3, seed=0, sizes=[5, 0, 20])
    assert [len(p) for p in parts] == [5, 0, 20]
    _assert_disjoint(parts, 100, covering=False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_examples": 10, "n_clients": 0}, "n_clients must be a positive integer"),
        ({"n_examples": 3, "n_clients": 5}, "3 examples cannot give each of 5 clients"),
        ({"n_examples": 10, "n_clients": 2, "sizes": [3]}, "one size per client"),
        ({"n_examples": 10, "n_clients": 2, "sizes": [8, 8]}, "ask for 16 examples but only 10"),
        ({"n_examples": 10, "n_clients": 2, "sizes": [-1, 2]}, "non-negative integers"),
        ({"n_examples": 10, "n_clients": 2, "seed": None}, "pass e.g. seed=0"),
        ({"n_examples": 10, "n_clients": 2, "seed": 1.5}, "seed must be an int"),
    ],
)
def test_iid_bad_arguments(kwargs: dict, match: str) -> None:
    kwargs = {"seed": 0, **kwargs}
    with pytest.raises(ValueError, match=match):
        iid_partition(**kwargs)


# -------------------------------------------------------------------- label shards


@pytest.mark.parametrize("labels", [LABELS, SHUFFLED_LABELS])
def test_label_shards_give_each_client_few_labels(labels: np.ndarray) -> None:
    # 50 shards of 20: every shard lies inside one class, so <= 2 labels per client.
    parts = label_shard_partition(labels, n_clients=25, shards_per_client=2, seed=0)
    assert len(parts) == 25
    _assert_disjoint(parts, len(labels))
    assert all(len(p) == 40 for p in parts)
    n_labels = [len(np.unique(labels[p])) for p in parts]
    assert max(n_labels) <= 2
    assert min(n_labels) >= 1
    assert np.mean(n_labels) > 1.2  # shards are dealt at random, not pairwise by class


def test_label_shards_straddling_boundaries_stay_bounded() -> None:
    labels = np.random.default_rng(0).integers(0, 10, size=997)
    parts = label_shard_partition(labels, n_clients=30, shards_per_client=3, seed=4)
    _assert_disjoint(parts, 997)
    assert max(len(np.unique(labels[p])) for p in parts) <= 6


def test_label_shards_are_seeded() -> None:
    a = label_shard_partition(SHUFFLED_LABELS, 10, 2, seed=3)
    assert _same(a, label_shard_partition(SHUFFLED_LABELS, 10, 2, seed=3))
    assert not _same(a, label_shard_partition(SHUFFLED_LABELS, 10, 2, seed=4))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((LABELS, 0, 2), "n_clients must be a positive integer"),
        ((LABELS, 10, 0), "shards_per_client must be a positive integer"),
        ((LABELS, 600, 2), "1000 examples cannot fill 1200 shards"),
        ((LABELS.reshape(10, 100), 10, 2), "one-dimensional"),
        ((np.array([], dtype=int), 1, 1), "empty"),
    ],
)
def test_label_shards_bad_arguments(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        label_shard_partition(*args, seed=0)


# ---------------------------------------------------------------------- Dirichlet


def _label_shares(labels: np.ndarray, parts: list[np.ndarray]) -> np.ndarray:
    return np.array([np.bincount(labels[p], minlength=10) / max(len(p), 1) for p in parts])


def test_dirichlet_covers_and_is_seeded() -> None:
    a = dirichlet_partition(SHUFFLED_LABELS, 8, alpha=0.5, seed=0)
    _assert_disjoint(a, len(SHUFFLED_LABELS))
    assert _same(a, dirichlet_partition(SHUFFLED_LABELS, 8, alpha=0.5, seed=0))
    assert not _same(a, dirichlet_partition(SHUFFLED_LABELS, 8, alpha=0.5, seed=1))


def test_dirichlet_tiny_alpha_concentrates_each_class() -> None:
    parts = dirichlet_partition(SHUFFLED_LABELS, 10, alpha=1e-3, seed=0)
    _assert_disjoint(parts, len(SHUFFLED_LABELS))
    # each class almost entirely with one client
    for c in range(10):
        owners = [np.sum(SHUFFLED_LABELS[p] == c) for p in parts]
        assert max(owners) >= 95
    # non-empty clients are dominated by one class
    shares = _label_shares(SHUFFLED_LABELS, [p for p in parts if len(p)])
    assert np.all(shares.max(axis=1) > 0.3)
    assert np.mean(shares.max(axis=1)) > 0.5


def test_dirichlet_huge_alpha_is_close_to_proportional() -> None:
    labels = np.random.default_rng(1).choice(3, size=30000, p=[0.5, 0.3, 0.2])
    parts = dirichlet_partition(labels, 5, alpha=1e5, seed=0)
    _assert_disjoint(parts, len(labels))
    sizes = np.array([len(p) for p in parts])
    assert np.all(np.abs(sizes - 6000) < 60)
    global_share = np.bincount(labels) / len(labels)
    for p in parts:
        assert np.allclose(np.bincount(labels[p], minlength=3) / len(p), global_share, atol=0.01)


def test_dirichlet_min_size_is_enforced() -> None:
    parts = dirichlet_partition(SHUFFLED_LABELS, 20, alpha=0.1, seed=0, min_size=10)
    assert min(len(p) for p in parts) >= 10
    _assert_disjoint(parts, len(SHUFFLED_LABELS))


def test_dirichlet_gives_up_with_advice() -> None:
    with pytest.raises(ValueError, match="raise alpha, lower min_size"):
        dirichlet_partition(SHUFFLED_LABELS, 50, alpha=1e-3, seed=0, min_size=20, max_tries=5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 0.0}, "alpha must be a positive"),
        ({"alpha": -1.0}, "alpha must be a positive"),
        ({"alpha": float("inf")}, "alpha must be a positive"),
        ({"n_clients": 0}, "n_clients must be a positive integer"),
        ({"min_size": -1}, "min_size must be a non-negative integer"),
        ({"min_size": 200}, "needs 2000 examples but there are 1000"),
    ],
)
def test_dirichlet_bad_arguments(kwargs: dict, match: str) -> None:
    kwargs = {"n_clients": 10, "alpha": 1.0, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=match):
        dirichlet_partition(LABELS, **kwargs)


# ------------------------------------------------------------------------ natural


def test_natural_partition_groups_by_id_in_sorted_order() -> None:
    groups = np.array([7, 3, 7, 9, 3, 3, 7])
    parts = natural_partition(groups)
    assert [p.tolist() for p in parts] == [[1, 4, 5], [0, 2, 6], [3]]
    _assert_disjoint(parts, len(groups))


def test_natural_partition_with_string_ids() -> None:
    groups = np.array(["f02", "f01", "f02", "f10"])
    parts = natural_partition(groups)
    assert [p.tolist() for p in parts] == [[1], [0, 2], [3]]
    for ident, part in zip(np.unique(groups), parts, strict=True):
        assert set(groups[part]) == {ident}


def test_natural_partition_bad_arguments() -> None:
    with pytest.raises(ValueError, match="empty"):
        natural_partition(np.array([], dtype=int))
    with pytest.raises(ValueError, match="one-dimensional"):
        natural_partition(np.zeros((2, 2)))
