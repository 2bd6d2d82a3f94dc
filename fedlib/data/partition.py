"""Split a dataset among simulated clients.

Every partitioner is seeded and returns a list with one int64 index array per
client; the arrays are disjoint and each is sorted ascending.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

Seed = int | np.random.Generator


def _rng(seed: Seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(
            f"seed must be an int or a numpy Generator, got {seed!r}: partitions are always "
            "seeded, pass e.g. seed=0"
        )
    return np.random.default_rng(int(seed))


def _positive_int(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _labels_1d(labels: np.ndarray | Sequence[int]) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be one-dimensional (one per example), got {labels.shape}")
    if len(labels) == 0:
        raise ValueError("labels is empty: there is nothing to partition")
    return labels


def _sorted_int64(parts: list[np.ndarray]) -> list[np.ndarray]:
    return [np.sort(part).astype(np.int64, copy=False) for part in parts]


def iid_partition(
    n_examples: int,
    n_clients: int,
    seed: Seed,
    sizes: Sequence[int] | None = None,
) -> list[np.ndarray]:
    """Shuffle the examples and deal them out uniformly at random.

    Parameters
    ----------
    n_examples
        Number of examples, indexed ``0..n_examples-1``.
    n_clients
        Number of clients.
    seed
        Seed or numpy Generator.
    sizes
        Optional number of examples per client (``n_clients`` non-negative integers
        summing to at most ``n_examples``); the examples left over are unused. By
        default all examples are used and sizes differ by at most one.
    """
    n_clients = _positive_int(n_clients, "n_clients")
    if isinstance(n_examples, bool) or not isinstance(n_examples, numbers.Integral):
        raise ValueError(f"n_examples must be an integer, got {n_examples!r}")
    n_examples = int(n_examples)
    rng = _rng(seed)
    if sizes is None:
        if n_examples < n_clients:
            raise ValueError(
                f"{n_examples} examples cannot give each of {n_clients} clients one; "
                "use fewer clients or more examples"
            )
        return _sorted_int64(np.array_split(rng.permutation(n_examples), n_clients))
    sizes_arr = np.asarray(sizes)
    if sizes_arr.shape != (n_clients,):
        raise ValueError(f"sizes must hold one size per client ({n_clients}), got {len(sizes)}")
    if not np.issubdtype(sizes_arr.dtype, np.integer) or np.any(sizes_arr < 0):
        raise ValueError(f"sizes must be non-negative integers, got {list(sizes)}")
    total = int(sizes_arr.sum())
    if total > n_examples:
        raise ValueError(
            f"sizes ask for {total} examples but only {n_examples} exist; reduce the sizes"
        )
    chosen = rng.permutation(n_examples)[:total]
    return _sorted_int64(np.split(chosen, np.cumsum(sizes_arr)[:-1]))


def label_shard_partition(
    labels: np.ndarray | Sequence[int],
    n_clients: int,
    shards_per_client: int,
    seed: Seed,
) -> list[np.ndarray]:
    """Pathological non-IID split of McMahan et al. (2017): sort by label, deal shards.

    The examples are shuffled, sorted by label (so the order within a label is
    random), cut into ``n_clients * shards_per_client`` contiguous shards of equal
    size (sizes differ by one when the division is not exact) and the shards dealt
    to clients at random, ``shards_per_client`` each. A client therefore sees at most
    ``shards_per_client`` labels when shards do not straddle label boundaries, and
    never more than ``2 * shards_per_client``.
    """
    labels = _labels_1d(labels)
    n_clients = _positive_int(n_clients, "n_clients")
    shards_per_client = _positive_int(shards_per_client, "shards_per_client")
    n_shards = n_clients * shards_per_client
    if len(labels) < n_shards:
        raise ValueError(
            f"{len(labels)} examples cannot fill {n_shards} shards "
            f"({n_clients} clients x {shards_per_client}); use fewer clients or shards"
        )
    rng = _rng(seed)
    shuffled = rng.permutation(len(labels))
    order = shuffled[np.argsort(labels[shuffled], kind="stable")]
    shards = np.array_split(order, n_shards)
    deal = rng.permutation(n_shards).reshape(n_clients, shards_per_client)
    return _sorted_int64([np.concatenate([shards[s] for s in row]) for row in deal])


def dirichlet_partition(
    labels: np.ndarray | Sequence[int],
    n_clients: int,
    alpha: float,
    seed: Seed,
    min_size: int = 0,
    max_tries: int = 1000,
) -> list[np.ndarray]:
    """Label-skewed split: each class is divided among clients by Dirichlet proportions.

    For every class, proportions ``p ~ Dirichlet(alpha, ..., alpha)`` over the clients
    are drawn and the class's (shuffled) examples cut accordingly (Hsu et al., 2019).
    Small ``alpha`` gives clients few classes; large ``alpha`` approaches the global
    class proportions.

    Parameters
    ----------
    min_size
        Redraw the whole split until every client has at least this many examples.
    max_tries
        Give up (ValueError) after this many draws.
    """
    labels = _labels_1d(labels)
    n_clients = _positive_int(n_clients, "n_clients")
    max_tries = _positive_int(max_tries, "max_tries")
    if not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"alpha must be a positive finite number, got {alpha!r}")
    if isinstance(min_size, bool) or not isinstance(min_size, numbers.Integral) or min_size < 0:
        raise ValueError(f"min_size must be a non-negative integer, got {min_size!r}")
    if min_size * n_clients > len(labels):
        raise ValueError(
            f"min_size={min_size} for {n_clients} clients needs {min_size * n_clients} "
            f"examples but there are {len(labels)}; lower min_size or n_clients"
        )
    rng = _rng(seed)
    classes = np.unique(labels)
    members = [np.flatnonzero(labels == c) for c in classes]
    for _ in range(max_tries):
        parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for idx in members:
            idx = rng.permutation(idx)
            p = rng.dirichlet(np.full(n_clients, float(alpha)))
            if not np.all(np.isfinite(p)) or p.sum() <= 0:  # underflow at tiny alpha
                p = np.zeros(n_clients)
                p[rng.integers(n_clients)] = 1.0
            cuts = np.clip(np.floor(np.cumsum(p)[:-1] * len(idx)), 0, len(idx)).astype(int)
            for client, piece in enumerate(np.split(idx, cuts)):
                parts[client].append(piece)
        merged = [np.concatenate(p) for p in parts]
        if min(len(m) for m in merged) >= min_size:
            return _sorted_int64(merged)
    raise ValueError(
        f"no Dirichlet(alpha={alpha}) split in {max_tries} draws gave every client at least "
        f"{min_size} examples; raise alpha, lower min_size or n_clients, or raise max_tries"
    )


def natural_partition(groups: np.ndarray | Sequence) -> list[np.ndarray]:
    """One client per distinct group id (e.g. a FEMNIST writer), in sorted id order.

    ``np.unique(groups)`` gives the id of each client.
    """
    groups = np.asarray(groups)
    if groups.ndim != 1:
        raise ValueError(f"groups must be one-dimensional (one id per example), got {groups.shape}")
    if len(groups) == 0:
        raise ValueError("groups is empty: there is nothing to partition")
    _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    order = np.argsort(inverse.ravel(), kind="stable")
    return _sorted_int64(np.split(order, np.cumsum(counts)[:-1]))
