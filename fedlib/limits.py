"""Bounds on the parameters that size a computation.

A count passed by mistake (``rounds=10**12``, ``local_steps=10**9``) would be accepted by
a plain integer check and then computed as asked, for years, or fail deep in the
allocator. Each size here is checked against a bound far above every paper's setting
(about a hundred times the largest), and refused with an error that names the argument,
the bound, and how to go past it on purpose.
"""

from __future__ import annotations

import math

from fedlib.checks import check_count, is_real

LIMITS: dict[str, int] = {
    "rounds": 100_000,
    "local_steps": 1_000_000,
    "iterations": 10_000_000,
    "n_clients": 1_000_000,
    "n_users": 1_000_000,
    "examples_per_client": 10_000_000,
    "n_test": 10_000_000,
    "batch_size": 1_000_000,
    "dim": 1_000_000,
    "n_evals": 100_000,
    "eval_every": 100_000,
    "repeats": 10_000,
    "k": 100_000,
    "users_per_iteration": 1_000_000,
}
"""The largest value each size may take. Edit this table to run past one on purpose."""


def check_size(value: int, name: str, minimum: int = 1, *, limit: str | None = None) -> int:
    """``value`` as an int if it is an integer between ``minimum`` and the bound
    :data:`LIMITS` keeps for ``limit`` (default: ``name``, the argument the errors name),
    else a ValueError naming both."""
    count = check_count(value, name, minimum)
    limit = name if limit is None else limit
    most = LIMITS[limit]
    if count > most:
        raise ValueError(f"{name}={count:,} is above {most:,}, about a hundred times the "
                         "largest any paper uses: this would run for days or exhaust memory. "
                         f"Pass a smaller {name}, or raise LIMITS[{limit!r}] in "
                         "fedlib/limits.py to run it on purpose.")
    return count


def check_finite(value: float, name: str, *, minimum: float = 0.0,
                 inclusive: bool = True) -> float:
    """``value`` as a float if it is a finite number >= ``minimum`` (> with
    ``inclusive=False``), else a ValueError naming it."""
    ok = is_real(value) and math.isfinite(value) and (
        value >= minimum if inclusive else value > minimum)
    if not ok:
        relation = ">=" if inclusive else ">"
        raise ValueError(f"{name} must be a finite number {relation} {minimum:g}, "
                         f"got {value!r}.")
    return float(value)
