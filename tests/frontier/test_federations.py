"""The five federations on real data (skipped, saying why, without the mirror), and the
per-client split."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import require_datasets

from fedlib.frontier.federations import (
    SPLIT,
    Federation,
    femnist_all_writers,
    femnist_writers,
    har_subjects,
    load_federation,
    mixed_users,
    mnist_shards,
    mnist_users,
    split_clients,
)


def _check_federation(fed: Federation, n_clients: int, dim: int, n_classes: int) -> None:
    assert fed.n_clients == n_clients and fed.dim == dim and fed.n_classes == n_classes
    for part in ("train", "val", "test"):
        for x, y in zip(getattr(fed, f"x_{part}"), getattr(fed, f"y_{part}"), strict=True):
            assert x.dtype == np.float64 and x.shape == (len(y), dim) and len(y) >= 1
            assert y.dtype == np.int64 and 0 <= y.min() and y.max() < n_classes
            np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-12)
    total = fed.sizes("train") + fed.sizes("val") + fed.sizes("test")
    np.testing.assert_allclose(fed.sizes("train") / total, SPLIT[0], atol=0.1)
    np.testing.assert_allclose(fed.sizes("test") / total, SPLIT[2], atol=0.1)


def _rows(fed: Federation, i: int) -> set[bytes]:
    return {row.tobytes() for part in ("train", "val", "test")
            for row in getattr(fed, f"x_{part}")[i]}


def _disjoint(fed: Federation, i: int) -> bool:
    parts = [{r.tobytes() for r in getattr(fed, f"x_{p}")[i]} for p in ("train", "val", "test")]
    return sum(map(len, parts)) == len(set().union(*parts))


def test_split_clients_is_seeded_and_rejects_tiny_clients():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 3)), rng.integers(0, 2, 40)
    clients = [np.arange(0, 25), np.arange(25, 40)]
    a = split_clients("t", x, y, clients, 2, seed=1)
    b = split_clients("t", x, y, clients, 2, seed=1)
    c = split_clients("t", x, y, clients, 2, seed=2)
    assert a.sizes().tolist() == [15, 9] and a.sizes("val").tolist() == [5, 3]
    np.testing.assert_array_equal(a.x_train[0], b.x_train[0])
    assert not np.array_equal(a.x_train[0], c.x_train[0])
    assert all(_disjoint(a, i) for i in range(2))
    cut = split_clients("t", x, y, clients, 2, seed=1, max_examples=10)
    assert (cut.sizes() + cut.sizes("val") + cut.sizes("test")).tolist() == [10, 10]
    with pytest.raises(ValueError, match="client 1 has 2 examples"):
        split_clients("t", x, y, [np.arange(5), np.arange(5, 7)], 2, seed=0)
    with pytest.raises(ValueError, match="max_examples"):
        split_clients("t", x, y, clients, 2, seed=0, max_examples=2)


@pytest.fixture(scope="module")
def mnist_federation(mirror_env) -> Federation:
    require_datasets("mnist")
    return mnist_shards(n_clients=10, shards_per_client=2, seed=0, max_examples=200)


@pytest.fixture(scope="module")
def mirror_env():
    """Module-scoped data cache (the autouse fixture gives one per test; MNIST is
    verified once here)."""
    import os
    import tempfile

    if not os.environ.get("FEDLIB_DATA_MIRROR"):
        pytest.skip("FEDLIB_DATA_MIRROR is not set: no offline dataset mirror to test against")
    with tempfile.TemporaryDirectory() as cache:
        saved = {k: os.environ.get(k) for k in ("FEDLIB_DATA_DIR", "FEDLIB_OFFLINE")}
        os.environ.update(FEDLIB_DATA_DIR=cache, FEDLIB_OFFLINE="1")
        yield
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_mnist_shards_deal_few_labels_per_client(mnist_federation):
    fed = mnist_federation
    _check_federation(fed, 10, 784, 10)
    assert (fed.sizes() + fed.sizes("val") + fed.sizes("test")).tolist() == [200] * 10
    for i in range(fed.n_clients):
        labels = np.unique(np.concatenate([fed.y_train[i], fed.y_val[i], fed.y_test[i]]))
        assert len(labels) <= 4  # two shards, each straddling at most one label boundary
        assert _disjoint(fed, i)
    first = load_federation("mnist-shards", n_clients=10, seed=0, max_clients=3,
                            max_examples=200)
    assert first.n_clients == 3
    np.testing.assert_array_equal(first.x_test[2], fed.x_test[2])


def test_unknown_federation_names_the_choices():
    with pytest.raises(ValueError, match="unknown federation 'cifar'.*mnist-shards"):
        load_federation("cifar")


def test_femnist_writers_are_clients(mirror_env):
    require_datasets("femnist-digits")
    fed = femnist_writers(seed=0, max_clients=6)
    _check_federation(fed, 6, 784, 10)
    totals = fed.sizes() + fed.sizes("val") + fed.sizes("test")
    assert (totals >= 100).all()
    assert len({frozenset(_rows(fed, i)) for i in range(6)}) == 6  # distinct writers


def test_har_subjects_are_the_thirty_volunteers(mirror_env):
    require_datasets("hapt")
    fed = har_subjects(seed=0, max_examples=60)
    _check_federation(fed, 30, 561, 6)
    assert (fed.sizes() + fed.sizes("val") + fed.sizes("test")).tolist() == [60] * 30
    assert all(_disjoint(fed, i) for i in range(30))
    assert har_subjects(seed=0, max_clients=3, max_examples=60).n_clients == 3


def test_mixed_users_are_disjoint_of_their_size_and_mix_classes_by_alpha():
    labels = np.repeat(np.arange(10), 200)
    users = mixed_users(labels, 40, 30, 1.0, seed=3)
    rows = np.concatenate(users)
    assert len(users) == 40 and all(len(u) == 30 for u in users)
    assert len(np.unique(rows)) == len(rows)  # no example dealt twice
    few = mixed_users(labels, 40, 30, 0.05, seed=3)
    many = mixed_users(labels, 40, 30, 100.0, seed=3)
    distinct = [np.mean([len(np.unique(labels[u])) for u in users]) for users in (few, many)]
    assert distinct[0] < 3 < 8 < distinct[1]  # a small alpha gives a few classes each
    np.testing.assert_array_equal(np.concatenate(mixed_users(labels, 40, 30, 1.0, seed=3)), rows)
    with pytest.raises(ValueError, match="need 2400 examples"):
        mixed_users(labels, 80, 30, 1.0, seed=0)


def test_mnist_users_are_many_with_little_data_each():
    require_datasets("mnist")
    fed = mnist_users(n_users=1200, seed=0)
    assert fed.name == "mnist-users" and fed.n_clients == 1200
    assert set(fed.sizes("train")) == {24} and set(fed.sizes("test")) == {8}
    assert "1200 users x 40 digits" in fed.source


def test_every_femnist_writer_with_a_handful_of_digits_is_a_client():
    require_datasets("femnist-digits")
    every = femnist_all_writers(seed=0)
    cut = femnist_writers(seed=0)
    total = every.sizes("train") + every.sizes("val") + every.sizes("test")
    assert every.name == "femnist-all-writers" and total.min() >= 10
    assert every.n_clients > 1.5 * cut.n_clients  # the writers below 100 digits are in
    assert (total < 100).mean() > 0.3
