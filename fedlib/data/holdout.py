"""Data held out from every client: rows of a dataset that no client's partition holds,
such as the server's validation set for choosing hyperparameters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def unheld_rows(total: int, held: np.ndarray | Sequence[int], n: int,
                rng: np.random.Generator, *, name: str = "n") -> np.ndarray:
    """``n`` distinct indices of ``range(total)`` that no client holds, drawn without
    replacement by ``rng`` and returned in draw order.

    ``held`` holds every client's indices (any shape). Where fewer than ``n`` indices are
    free, a ValueError says how many are, naming the count ``name`` (the caller's
    parameter).
    """
    free = np.setdiff1d(np.arange(total), np.asarray(held).ravel())
    if n > len(free):
        raise ValueError(f"{name}={n:,} is more than the {len(free):,} of {total:,} rows that "
                         f"no client holds; pass at most {len(free):,}, or give the clients "
                         "fewer rows")
    return rng.choice(free, size=n, replace=False)
