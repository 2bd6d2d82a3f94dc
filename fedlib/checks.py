"""Argument checks shared by the library and the notebooks.

Every check returns the value it was given (converted to the plain Python type
the caller computes with) or raises a :class:`ValueError` that names the
argument, the value received and how to fix it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from numbers import Integral, Real

import numpy as np

IMPACT_FACTOR_SUM_TOLERANCE = 1e-9
"""How far the PADPFL impact factors may sum from 1."""


def is_real(value: object) -> bool:
    """A real number: any numbers.Real or Decimal, but not a bool."""
    return isinstance(value, Real | Decimal) and not isinstance(value, bool)


def check_epsilon(value: float, name: str = "epsilon") -> float:
    """Return ``value`` as a float if it is a finite privacy budget > 0, else raise."""
    if not is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"{name} must be a finite number > 0, got {value!r}; pass the privacy budget "
            f"as a positive float, e.g. {name}=1.0 (use no noise at all for epsilon = inf)."
        )
    return float(value)


def check_delta(value: float, name: str = "delta") -> float:
    """Return ``value`` as a float if 0 < value < 1, else raise."""
    if not is_real(value) or not math.isfinite(value) or not 0 < value < 1:
        raise ValueError(
            f"{name} must satisfy 0 < {name} < 1, got {value!r}; typical values are well "
            f"below 1/n for a dataset of n records, e.g. {name}=1e-5."
        )
    return float(value)


def check_positive(value: float, name: str) -> float:
    """Return ``value`` as a float if it is finite and > 0, else raise."""
    if not is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return float(value)


def check_non_negative(value: float, name: str) -> float:
    """Return ``value`` as a float if it is finite and >= 0, else raise."""
    if not is_real(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")
    return float(value)


def check_probability(value: float, name: str) -> float:
    """Return ``value`` as a float if 0 < value <= 1, else raise."""
    if not is_real(value) or not math.isfinite(value) or not 0 < value <= 1:
        raise ValueError(
            f"{name} must satisfy 0 < {name} <= 1, got {value!r}; it is a probability "
            f"(for a sampling rate: expected batch size / dataset size)."
        )
    return float(value)


def check_count(value: int, name: str, minimum: int = 0) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum``, else raise.

    Floats with an integral value (``300.0``) are accepted, since sweep tables
    often store counts as floats.
    """
    integral = isinstance(value, Integral) and not isinstance(value, bool)
    if not integral and is_real(value) and math.isfinite(value) and float(value).is_integer():
        integral = True
    if not integral or int(value) < minimum:
        kind = "non-negative" if minimum == 0 else f">= {minimum}"
        raise ValueError(f"{name} must be a {kind} integer, got {value!r}.")
    return int(value)


def check_impact_factors(p: Sequence[float] | np.ndarray, name: str = "p") -> np.ndarray:
    """Return ``p`` as a float array if it is a probability vector, else raise.

    The entries must be finite, non-negative and sum to 1 within
    :data:`IMPACT_FACTOR_SUM_TOLERANCE`.
    """
    weights = np.asarray(p, dtype=float)
    if weights.ndim != 1 or weights.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D sequence of client impact factors, "
            f"got shape {weights.shape}."
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(
            f"{name} must hold finite, non-negative impact factors, got min {weights.min()!r}; "
            f"give every client a weight >= 0."
        )
    total = float(weights.sum())
    if abs(total - 1.0) > IMPACT_FACTOR_SUM_TOLERANCE:
        raise ValueError(
            f"{name} must sum to 1 (within {IMPACT_FACTOR_SUM_TOLERANCE:g}), got sum {total!r}; "
            f"normalise it, e.g. {name} = {name} / {name}.sum()."
        )
    return weights


def check_device(device: str) -> str:
    """Return ``device`` if torch can use it here, else raise a ValueError saying what to use."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device={device!r} is not a torch device; use 'cpu' or 'cuda'") from error
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} asked for CUDA but torch sees no GPU; use 'cpu'")
    if parsed.type not in {"cpu", "cuda"}:
        raise ValueError(f"device={device!r} is not supported; use 'cpu' or 'cuda'")
    return device


SEED_BOUND = 2**63
"""Seeds lie in [0, 2**63): every generator the library seeds (numpy's, torch's) takes them."""


def check_seed(seed: int) -> int:
    """Return ``seed`` as a Python int if it is an integer (numpy's integers included) in
    [0, 2**63), else raise a ValueError naming the range."""
    if isinstance(seed, bool | np.bool_) or not isinstance(seed, Integral) or int(seed) < 0:
        raise ValueError(f"seed={seed!r} must be a non-negative integer (below 2**63)")
    if int(seed) >= SEED_BOUND:
        raise ValueError(f"seed={seed!r} is outside [0, 2**63): pass a non-negative integer "
                         "below 2**63 (9,223,372,036,854,775,808)")
    return int(seed)


def check_workers(workers: int) -> int:
    """Return ``workers`` (local sweep processes, 0 = all cores) if valid, else raise."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers={workers!r} must be an integer >= 0 (0 = all cores)")
    return workers
