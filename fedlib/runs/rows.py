"""Which rows of a run the published store keeps.

A run's table can hold far more rows than any figure or claim reads: a PPSGD synthetic
run records its excess risk at each of its 300 iterations, while its claims read four
of them and its figures draw curves that a few dozen points render the same. An
experiment may declare here which rows a published run keeps (:class:`KeptSteps`):
the values of a step column (an iteration, a round) on a grid the experiment chooses,
which must include every step a claim reads (a grid that would drop one is refused,
naming it) and always includes the last step. The rule is applied when a run is
published (:meth:`fedlib.runs.published.PublishedStore.add`), never to the local cache: the
kept rows are the full run's rows, unchanged, and the published digest is theirs.

An experiment without a rule publishes every row. The rules live with their papers
(:data:`RULES` names where), so that this module imports no paper.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

RULES: dict[str, str] = {
    "ppsgd-synthetic": "fedlib.papers.ppsgd.readouts:SYNTHETIC_ROWS",
}
"""Per experiment (a sweep's name), the ``module:attribute`` of its :class:`KeptSteps`."""


class KeptRowsError(ValueError):
    """A rule that would publish fewer rows than the figures and claims read."""


def log_linear_grid(last: int, log_points: int, every: int, first: int = 1) -> set[int]:
    """Steps from ``first`` to ``last``: ``log_points`` spaced evenly on a log scale
    (dense at the start, where curves move fast) and every ``every``-th step (even
    coverage of the tail), ``first`` and ``last`` included."""
    if first < 0 or last < first:
        raise ValueError(f"a grid of steps needs 0 <= first <= last (got first={first}, "
                         f"last={last})")
    if log_points < 2 or every < 1:
        raise ValueError(f"a log-plus-linear grid needs log_points >= 2 and every >= 1 (got "
                         f"log_points={log_points}, every={every})")
    start = max(first, 1)
    logs = np.geomspace(start, max(last, start), log_points) if last >= start else []
    steps = {int(round(float(s))) for s in logs}
    steps |= set(range(first - first % every, last + 1, every))
    return {s for s in steps | {first, last} if first <= s <= last}


@dataclass(frozen=True)
class KeptSteps:
    """The rows a published run of one experiment keeps: those whose ``column`` (its
    step: iteration, round) is on ``grid(last)`` or is the run's ``last`` step.

    ``reads(last)``: the steps of a run ending at ``last`` that some claim or note reads;
    every one must be on the grid (else :class:`KeptRowsError`, naming it). ``whole``
    (config, tier): the runs that keep every row (a run some reader walks step by
    step). ``why``: what reads the rows, in a sentence.
    """

    column: str
    grid: Callable[[int], Iterable[int]]
    reads: Callable[[int], Iterable[int]]
    whole: Callable[[Mapping[str, Any], str], bool] | None = None
    why: str = ""

    def steps(self, last: int) -> set[int]:
        """The steps kept of a run whose last step is ``last``."""
        kept = {int(s) for s in self.grid(last)} | {int(last)}
        dropped = sorted({int(s) for s in self.reads(last)} - kept)
        if dropped:
            raise KeptRowsError(
                f"the kept rows of {self.column} would drop {self.column} "
                f"{', '.join(map(str, dropped))}, which a claim reads (of a run ending at "
                f"{last}): add {'it' if len(dropped) == 1 else 'them'} to the rule's grid")
        return kept

    def thin(self, table: pd.DataFrame, config: Mapping[str, Any] | None = None,
             tier: str = "") -> pd.DataFrame:
        """The rows of ``table`` (one run) kept at publication, in their order, index
        reset; every row where ``whole(config, tier)`` says so."""
        if self.whole is not None and config is not None and self.whole(config, tier):
            return table.reset_index(drop=True)
        if self.column not in table.columns:
            raise KeptRowsError(f"a run to publish has no {self.column!r} column, which its "
                                f"rule keeps rows by (columns: {', '.join(map(str, table))})")
        if table.empty:
            return table.reset_index(drop=True)
        steps = table[self.column]
        if not pd.api.types.is_integer_dtype(steps):
            raise KeptRowsError(f"column {self.column!r} of a run to publish holds "
                                f"{steps.dtype} values, not steps (integers)")
        last = int(steps.max())
        kept = steps.isin(sorted(self.steps(last)))
        return table[kept.to_numpy()].reset_index(drop=True)


def rule(experiment: str) -> KeptSteps | None:
    """The rule of ``experiment`` (:data:`RULES`), or None: every row is published."""
    where = RULES.get(experiment)
    if where is None:
        return None
    module, _, name = where.partition(":")
    found = getattr(importlib.import_module(module), name)
    if not isinstance(found, KeptSteps):
        raise TypeError(f"{where}, the kept-rows rule of {experiment}, is a "
                        f"{type(found).__name__}, not a KeptSteps")
    return found


def kept_rows(experiment: str, table: pd.DataFrame, config: Mapping[str, Any] | None = None,
              tier: str = "") -> pd.DataFrame:
    """The rows of one run of ``experiment`` that are published (all of them where the
    experiment declares no rule)."""
    found = rule(experiment)
    return table if found is None else found.thin(table, config, tier)

