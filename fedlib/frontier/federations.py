"""The federations of the side-by-side comparison: real clients, seeded splits.

Each loader returns a :class:`Federation`: per client, train, validation and test
arrays (features as float64 rows of unit L2 norm, labels as int64 classes). Three are
built from the project's data modules:

* :func:`har_subjects`: the 30 volunteers of UCI HAR, one client each, the six
  activities as classes, on the 561 features rebuilt from the HAPT recordings;
* :func:`femnist_writers`: the writers of LEAF's offline FEMNIST sample (digits);
* :func:`mnist_shards`: MNIST dealt in label shards (McMahan et al. 2017);
* :func:`mnist_users`: MNIST dealt to 1,200 users of 40 digits each, classes mixed by
  Dirichlet proportions: the regime where user-level DP is deployed (many users, little
  data each, a sampled cohort per round);
* :func:`femnist_all_writers`: every writer of the FEMNIST sample with a handful of
  digits, most of them too few to learn alone (where collaboration must help).

Every client's examples are shuffled (seeded) and cut into train / validation / test
by :data:`SPLIT`, each part holding at least one example. ``max_clients`` and
``max_examples`` cut a federation down for tests and quick tiers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from fedlib.checks import check_count, check_seed

__all__ = [
    "FEDERATIONS",
    "SPLIT",
    "Federation",
    "femnist_all_writers",
    "femnist_writers",
    "har_subjects",
    "load_federation",
    "mnist_shards",
    "mixed_users",
    "mnist_users",
    "split_clients",
]

SPLIT = (0.6, 0.2, 0.2)
"""Share of each client's examples for train, validation and test."""


@dataclass(frozen=True, eq=False)
class Federation:
    """Per-client train, validation and test data of a classification task.

    Attributes
    ----------
    name
        Short name, e.g. ``"har-subjects"``.
    x_train, x_val, x_test
        One float64 ``(n_i, dim)`` array per client.
    y_train, y_val, y_test
        One int64 ``(n_i,)`` array per client, classes in ``[0, n_classes)``.
    n_classes, dim
        Number of classes and of features.
    source
        Where the data came from, in words.

    The arrays are made read-only: methods cache their padded copies per federation.
    """

    name: str
    x_train: tuple[np.ndarray, ...]
    y_train: tuple[np.ndarray, ...]
    x_val: tuple[np.ndarray, ...]
    y_val: tuple[np.ndarray, ...]
    x_test: tuple[np.ndarray, ...]
    y_test: tuple[np.ndarray, ...]
    n_classes: int
    dim: int
    source: str = ""

    def __post_init__(self) -> None:
        n = len(self.x_train)
        if n == 0:
            raise ValueError(f"federation {self.name!r} has no client.")
        for part in ("train", "val", "test"):
            xs, ys = getattr(self, f"x_{part}"), getattr(self, f"y_{part}")
            if len(xs) != n or len(ys) != n:
                raise ValueError(f"{self.name}: {part} needs one array per client ({n}), got "
                                 f"{len(xs)} feature and {len(ys)} label arrays.")
            for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
                if x.ndim != 2 or x.shape[1] != self.dim or len(x) != len(y) or len(y) == 0:
                    raise ValueError(
                        f"{self.name}: client {i} {part} has features {x.shape} and labels "
                        f"{y.shape}; need (n, {self.dim}) and (n,) with n >= 1.")
                if y.min() < 0 or y.max() >= self.n_classes:
                    raise ValueError(f"{self.name}: client {i} {part} labels must lie in "
                                     f"[0, {self.n_classes}).")
                x.setflags(write=False)
                y.setflags(write=False)

    @property
    def n_clients(self) -> int:
        return len(self.x_train)

    def sizes(self, part: str = "train") -> np.ndarray:
        """Examples per client in ``part`` (``"train"``, ``"val"`` or ``"test"``)."""
        if part not in ("train", "val", "test"):
            raise ValueError(f"part must be 'train', 'val' or 'test', got {part!r}.")
        return np.array([len(y) for y in getattr(self, f"y_{part}")], dtype=np.int64)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (a zero row stays zero), float64."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _check_limit(value: int | None, name: str, minimum: int) -> int | None:
    return None if value is None else check_count(value, name, minimum=minimum)


def split_clients(name: str, x: np.ndarray, y: np.ndarray, clients: Sequence[np.ndarray],
                  n_classes: int, *, seed: int, max_examples: int | None = None,
                  source: str = "") -> Federation:
    """A :class:`Federation` from examples and one index array per client.

    Each client's rows are shuffled with a generator seeded by ``seed``, cut to
    ``max_examples`` and split by :data:`SPLIT` (at least one example per part).
    Features are scaled to unit L2 norm per row.
    """
    check_seed(seed)
    max_examples = _check_limit(max_examples, "max_examples", 3)
    rng = np.random.default_rng(seed)
    x = np.asarray(x).reshape(len(x), -1)
    y = np.asarray(y, dtype=np.int64)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("xtr", "ytr", "xva", "yva", "xte", "yte")}
    for i, rows in enumerate(clients):
        rows = rng.permutation(np.asarray(rows, dtype=np.int64))[:max_examples]
        n = len(rows)
        if n < 3:
            raise ValueError(f"{name}: client {i} has {n} examples; need >= 3 for train, "
                             "validation and test.")
        n_val = max(1, int(round(SPLIT[1] * n)))
        n_test = max(1, int(round(SPLIT[2] * n)))
        n_train = n - n_val - n_test
        if n_train < 1:
            n_train, n_val = 1, n - 1 - n_test
        pieces = np.split(rows, [n_train, n_train + n_val])
        for (xk, yk), idx in zip((("xtr", "ytr"), ("xva", "yva"), ("xte", "yte")), pieces,
                                 strict=True):
            parts[xk].append(_unit_rows(x[idx]))
            parts[yk].append(y[idx])
    return Federation(name, tuple(parts["xtr"]), tuple(parts["ytr"]), tuple(parts["xva"]),
                      tuple(parts["yva"]), tuple(parts["xte"]), tuple(parts["yte"]),
                      n_classes=n_classes, dim=x.shape[1], source=source)


def har_subjects(*, seed: int = 0, max_clients: int | None = None,
                 max_examples: int | None = None) -> Federation:
    """The 30 UCI HAR volunteers, one client each, six activity classes.

    Features: the 561 UCI HAR features rebuilt from the raw HAPT recordings
    (:func:`fedlib.data.har_features.hapt_har_features`), standardised per column and
    scaled to unit norm per row (:func:`fedlib.data.har.normalise_rows`, as Hu et al.'s
    experiment uses them). Classes: activity code - 1 (0 = walking ... 5 = laying).
    Clients in subject order; ``max_clients`` keeps the first ones.

    Raises
    ------
    fedlib.data.errors.DatasetUnavailableError
        If the HAPT recordings are neither cached nor in the offline mirror.
    """
    from fedlib.data.har import normalise_rows
    from fedlib.data.har_features import hapt_har_features

    max_clients = _check_limit(max_clients, "max_clients", 1)
    data = hapt_har_features()
    x = normalise_rows(data.features)
    subjects = np.unique(data.subject)[:max_clients]
    clients = [np.flatnonzero(data.subject == s) for s in subjects]
    return split_clients(
        "har-subjects", x, data.activity - 1, clients, 6, seed=seed, max_examples=max_examples,
        source="UCI HAR: 561 features rebuilt from the HAPT recordings, one client per "
               f"volunteer ({len(clients)}), six activities",
    )


def femnist_writers(*, seed: int = 0, min_examples: int = 100, max_clients: int | None = None,
                    max_examples: int | None = None) -> Federation:
    """Writers of the offline LEAF FEMNIST sample (digits 0-9), one client each.

    Writers with at least ``min_examples`` digits, in the sample's writer order
    (``max_clients`` keeps the first ones); pixels in MNIST polarity (background 0),
    flattened to 784 features and scaled to unit norm per row.

    Raises
    ------
    fedlib.data.errors.DatasetUnavailableError
        If the sample is neither cached nor in the offline mirror.
    """
    from fedlib.data.loaders import load_femnist_digits

    min_examples = check_count(min_examples, "min_examples", minimum=3)
    max_clients = _check_limit(max_clients, "max_clients", 1)
    raw = load_femnist_digits()
    counts = np.bincount(raw.writer, minlength=raw.n_writers)
    writers = np.flatnonzero(counts >= min_examples)[:max_clients]
    if len(writers) == 0:
        raise ValueError(f"no writer has {min_examples} digits; lower min_examples.")
    clients = [np.flatnonzero(raw.writer == w) for w in writers]
    return split_clients(
        "femnist-writers", raw.x, raw.y, clients, 10, seed=seed, max_examples=max_examples,
        source=f"LEAF FEMNIST sample, digits, writers with >= {min_examples} digits "
               f"({len(clients)} clients)",
    )


def mnist_shards(*, n_clients: int = 50, shards_per_client: int = 2, seed: int = 0,
                 max_clients: int | None = None, max_examples: int | None = None
                 ) -> Federation:
    """MNIST's 60,000 training digits dealt to ``n_clients`` clients in label shards.

    :func:`fedlib.data.partition.label_shard_partition` (sort by label, cut
    ``n_clients x shards_per_client`` shards, deal them at random; seeded by ``seed``):
    with 2 shards a client sees about two digits. ``max_clients`` keeps the first clients
    of that partition (their shards unchanged). Pixels flattened and scaled to unit norm
    per row (so the usual division by 255 makes no difference).

    Raises
    ------
    fedlib.data.errors.DatasetUnavailableError
        If MNIST is neither cached nor in the offline mirror.
    """
    from fedlib.data.loaders import load_mnist
    from fedlib.data.partition import label_shard_partition

    n_clients = check_count(n_clients, "n_clients", minimum=1)
    shards_per_client = check_count(shards_per_client, "shards_per_client", minimum=1)
    max_clients = _check_limit(max_clients, "max_clients", 1)
    x, y = load_mnist("train")
    clients = label_shard_partition(y, n_clients, shards_per_client, seed)[:max_clients]
    return split_clients(
        "mnist-shards", x, y, clients, 10, seed=seed,
        max_examples=max_examples,
        source=f"MNIST train, {n_clients} clients x {shards_per_client} label shards"
               + (f", first {len(clients)} kept" if len(clients) < n_clients else ""),
    )


def mixed_users(labels: np.ndarray, n_users: int, per_user: int, alpha: float, seed: int
                ) -> list[np.ndarray]:
    """``n_users`` disjoint sets of ``per_user`` example indices, each user's classes
    mixed in proportions drawn from Dirichlet(``alpha``) (small ``alpha``: a few classes
    each; large: all alike), drawn without replacement from the classes' shuffled pools
    (a user whose proportions ask for more than a pool has left takes the rest from the
    other classes, largest pools first)."""
    n_users = check_count(n_users, "n_users", minimum=1)
    per_user = check_count(per_user, "per_user", minimum=3)
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}.")
    labels = np.asarray(labels, dtype=np.int64)
    if n_users * per_user > len(labels):
        raise ValueError(f"{n_users} users x {per_user} examples need {n_users * per_user} "
                         f"examples; there are {len(labels)}: lower n_users or per_user.")
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    pools = [list(rng.permutation(np.flatnonzero(labels == c))) for c in classes]
    users = []
    for _ in range(n_users):
        wanted = rng.multinomial(per_user, rng.dirichlet(np.full(len(classes), alpha)))
        rows: list[int] = []
        for c, count in enumerate(wanted):
            take = min(int(count), len(pools[c]))
            rows += pools[c][:take]
            del pools[c][:take]
        while len(rows) < per_user:
            c = int(np.argmax([len(pool) for pool in pools]))
            rows.append(pools[c].pop(0))
        users.append(np.array(rows, dtype=np.int64))
    return users


def mnist_users(*, n_users: int = 1200, per_user: int = 40, alpha: float = 1.0,
                seed: int = 0, max_clients: int | None = None,
                max_examples: int | None = None) -> Federation:
    """MNIST's training digits dealt to ``n_users`` users of ``per_user`` digits each,
    every user's digit classes mixed by Dirichlet(``alpha``) proportions
    (:func:`mixed_users`): with the defaults 1,200 users of 40 digits (24 to train, 8 to
    validate, 8 to test), too few to learn ten classes alone, of classes in proportions of
    their own.

    Raises
    ------
    fedlib.data.errors.DatasetUnavailableError
        If MNIST is neither cached nor in the offline mirror.
    """
    from fedlib.data.loaders import load_mnist

    max_clients = _check_limit(max_clients, "max_clients", 1)
    x, y = load_mnist("train")
    users = mixed_users(y, n_users, per_user, alpha, seed)[:max_clients]
    return split_clients(
        "mnist-users", x, y, users, 10, seed=seed, max_examples=max_examples,
        source=f"MNIST train, {n_users} users x {per_user} digits, classes mixed by "
               f"Dirichlet({alpha:g})" + (f", first {len(users)} kept"
                                          if len(users) < n_users else ""),
    )


def femnist_all_writers(*, seed: int = 0, min_examples: int = 10,
                        max_clients: int | None = None, max_examples: int | None = None
                        ) -> Federation:
    """Every writer of the FEMNIST sample with at least ``min_examples`` digits (a
    handful), one client each (:func:`femnist_writers` without its cut at 100 digits,
    which drops the writers collaboration should help most).

    Raises
    ------
    fedlib.data.errors.DatasetUnavailableError
        If the sample is neither cached nor in the offline mirror.
    """
    federation = femnist_writers(seed=seed, min_examples=min_examples,
                                 max_clients=max_clients, max_examples=max_examples)
    return replace(federation, name="femnist-all-writers")


FEDERATIONS: dict[str, Callable[..., Federation]] = {
    "har-subjects": har_subjects,
    "femnist-writers": femnist_writers,
    "mnist-shards": mnist_shards,
    "mnist-users": mnist_users,
    "femnist-all-writers": femnist_all_writers,
}
"""Every loader by the name of the federation it builds."""


def load_federation(name: str, **options: object) -> Federation:
    """The federation called ``name`` (see :data:`FEDERATIONS`), built with ``options``."""
    if name not in FEDERATIONS:
        raise ValueError(f"unknown federation {name!r}; choose one of {sorted(FEDERATIONS)}.")
    return FEDERATIONS[name](**options)
