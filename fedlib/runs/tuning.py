"""The tuning step: choosing a method's hyperparameters from a paper's grid, on
validation data, within a declared budget.

A paper that says it explored a grid "for the best results" is reproduced by running
that grid, not by fixing one of its values. The step is the same for every chapter:

- :class:`TuningBudget` declares what a tuning run is allowed: a share of the full run's
  rounds, its seeds (apart from the seeds the verdicts are read on) and the validation
  examples held out from the clients' training data. The test set is never read.
- :class:`Axis` is one hyperparameter's grid, with how it is extended past an edge
  (the open-edge rule: an optimum on a grid's edge is not an optimum) and where the
  hyperparameter has a natural bound (e.g. k >= 1), past which there is nothing to try.
  A choice is an optimum when both its neighbours on the axis were run and scored
  lower, or one side is a bound.
- :func:`choose_one` reads one method's tuning runs (one row per run, a ``val_``
  metric) and returns its choice and where the choice sits in its grid.
  :func:`next_points` names the points to run next (a coordinate search over the
  paper's grid, then past an edge the choice sits on); a chapter runs them and asks
  again until there are none. :func:`open_edges` names the axes whose choice still sits
  on an edge that could be extended.

The whole tuning table is stored with the runs (a chapter's tuning runs are runs of the
published store), so a choice is reproducible from the stored table alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from fedlib.checks import check_seed
from fedlib.limits import check_size

VALIDATION_PREFIX = "val_"
"""The prefix of every column a choice may read: validation metrics, never the test set's."""


@dataclass(frozen=True)
class TuningBudget:
    """What one tuning run may use.

    Parameters
    ----------
    round_share
        The share of the full run's rounds a tuning run trains (its noise is that of the
        full run: it is the full run, stopped).
    seeds
        Offsets, from a chapter's seed, of the seeds tuning runs use; they differ from the
        seeds whose runs the verdicts read.
    n_validation
        Training examples no client holds, on which the choice is made.
    last_evaluations
        The choice reads the mean of the metric over this many last evaluations of a
        tuning run (one evaluation decides on a single noisy draw).
    """

    round_share: float
    seeds: tuple[int, ...]
    n_validation: int
    last_evaluations: int = 5

    def __post_init__(self) -> None:
        if not (isinstance(self.round_share, int | float) and 0 < self.round_share <= 1):
            raise ValueError(f"round_share must be in (0, 1], got {self.round_share!r}")
        if not isinstance(self.seeds, tuple) or not self.seeds:
            raise ValueError(f"seeds must be a non-empty tuple of seed offsets, got "
                             f"{self.seeds!r}")
        for offset in self.seeds:
            check_seed(offset)
        check_size(self.n_validation, "n_validation", limit="n_test")
        check_size(self.last_evaluations, "last_evaluations", limit="n_evals")

    def rounds(self, total: int) -> int:
        """The rounds a tuning run trains out of ``total``: the share, rounded up."""
        check_size(total, "total rounds", limit="rounds")
        return max(1, math.ceil(self.round_share * total - 1e-9))

    def describe(self, total: int) -> str:
        """The budget in words, e.g. ``the first 30 of 100 rounds (30%), 1 seed, 5,000
        validation examples held out from the clients' training data``."""
        seeds = f"{len(self.seeds)} seed{'s' if len(self.seeds) > 1 else ''}"
        return (f"the first {self.rounds(total)} of {total} rounds "
                f"({self.round_share:.0%}), {seeds} apart from the verdicts' seeds, "
                f"{self.n_validation:,} validation examples held out from the clients' "
                f"training data (the choice reads the mean over the last "
                f"{self.last_evaluations} evaluations; the test set is not read)")


@dataclass(frozen=True)
class Axis:
    """One hyperparameter's grid.

    Parameters
    ----------
    name
        The config field it sets.
    values
        The grid as the paper gives it (any order).
    factor
        A value past the grid's edge is the edge value times ``factor`` (above) or divided
        by it (below); integer axes round it.
    lowest, highest
        The hyperparameter's natural bounds (None: none): an optimum at a bound is one.
    max_extensions
        How many values past each edge the open-edge rule may add; an optimum still on
        the edge after them is reported as such.
    """

    name: str
    values: tuple[float, ...]
    factor: float = 2.0
    lowest: float | None = None
    highest: float | None = None
    max_extensions: int = 2

    def __post_init__(self) -> None:
        if not self.values or len(set(self.values)) != len(self.values):
            raise ValueError(f"axis {self.name!r} needs distinct values, got {self.values!r}")
        if not self.factor > 1:
            raise ValueError(f"axis {self.name!r}: factor must be > 1, got {self.factor!r}")

    @property
    def integer(self) -> bool:
        return all(isinstance(v, int) and not isinstance(v, bool) for v in self.values)

    def ladder(self) -> list[float]:
        """Every value the axis may take, in order: the paper's grid with up to
        ``max_extensions`` values past each edge (fewer where a bound stops them)."""
        values = sorted(self.values)
        low: list[float] = []
        high: list[float] = []
        for side, out in (("low", low), ("high", high)):
            probe: float | None = values[0] if side == "low" else values[-1]
            for _ in range(self.max_extensions):
                probe = self.beyond(probe, side)
                if probe is None:
                    break
                out.append(probe)
        return [*reversed(low), *values, *high]

    def neighbours(self, value: float) -> tuple[float | None, float | None]:
        """The values next to ``value`` on the axis' ladder (None past its end)."""
        ladder = self.ladder()
        if value not in ladder:
            raise ValueError(f"{self.name}={value!r} is not a value of the axis "
                             f"({', '.join(f'{v:g}' for v in ladder)})")
        i = ladder.index(value)
        return (ladder[i - 1] if i > 0 else None,
                ladder[i + 1] if i + 1 < len(ladder) else None)

    def beyond(self, value: float, side: str) -> float | None:
        """The next value past ``value`` on ``side`` (``"low"`` or ``"high"``), or None
        where the axis' bound leaves none; a step that would cross the bound lands on it."""
        nxt = value * self.factor if side == "high" else value / self.factor
        if self.integer:
            nxt = int(round(nxt))
            if nxt == value:
                nxt = value + (1 if side == "high" else -1)
        bound = self.lowest if side == "low" else self.highest
        if bound is None:
            return nxt
        if value == bound or (value < bound if side == "low" else value > bound):
            return None
        # The bound itself is the last value past an edge.
        return max(nxt, bound) if side == "low" else min(nxt, bound)


def _scores(runs: pd.DataFrame, axes: Sequence[Axis], metric: str) -> pd.DataFrame:
    """Mean ``metric`` over seeds of every combination of one method's tuning runs (a
    score that is not a number, a diverged run, counts as minus infinity)."""
    if not metric.startswith(VALIDATION_PREFIX):
        raise ValueError(f"a tuning choice reads validation data only: {metric!r} is not a "
                         f"{VALIDATION_PREFIX}* column")
    names = [a.name for a in axes]
    missing = [c for c in [*names, "seed", metric] if c not in runs.columns]
    if missing:
        raise ValueError(f"the tuning table lacks the columns {missing}")
    means = (runs[[*names, "seed", metric]]
             .groupby(names, sort=False).agg(score=(metric, "mean"), runs=(metric, "size"))
             .reset_index())
    means["score"] = means["score"].astype(float).fillna(-math.inf)
    return means


def _line(scores: pd.DataFrame, axes: Sequence[Axis], axis: Axis,
          at: dict[str, float]) -> list[float]:
    """The values of ``axis`` tried with every other axis at ``at``."""
    line = scores
    for other in axes:
        if other is not axis:
            line = line[line[other.name] == at[other.name]]
    return line[axis.name].tolist()


def _searched(scores: pd.DataFrame, axes: Sequence[Axis], axis: Axis) -> bool:
    """Whether some line along ``axis`` (the other axes fixed) has tried its whole paper
    grid."""
    others = [a.name for a in axes if a is not axis]
    lines = scores.groupby(others, sort=False)[axis.name] if others else [(None,
                                                                          scores[axis.name])]
    return any(set(axis.values) <= set(values) for _, values in lines)


def _edge(axis: Axis, line: Sequence[float], chosen: float) -> str:
    """Where ``chosen`` sits on its line: ``""`` when both its neighbours on the axis'
    ladder were tried (an interior optimum), ``"bound"`` where a side has no neighbour
    because of a bound of the hyperparameter and the other was tried, ``"open"`` where a
    side has no neighbour because the grid's extensions ran out, ``"untried"`` where a
    neighbour exists and was not run."""
    lower, higher = axis.neighbours(chosen)
    tried = set(line)
    if any(n is not None and n not in tried for n in (lower, higher)):
        return "untried"
    ends = [side for side, n in (("low", lower), ("high", higher)) if n is None]
    if any(axis.beyond(chosen, side) is not None for side in ends):
        return "open"
    return "bound" if ends else ""


def choose_one(runs: pd.DataFrame, axes: Sequence[Axis], metric: str = "val_accuracy"
               ) -> dict[str, object]:
    """One method's choice from its tuning runs.

    ``runs``: one row per tuning run with a column per axis, ``seed`` and ``metric`` (a
    validation score, higher is better); no other column is read, so a table that also
    holds test scores cannot leak them into the choice. Returns each axis' chosen value,
    ``metric`` (its mean over seeds), ``runs`` (tuning runs read), and per axis
    ``<axis>_edge`` (:func:`_edge`: ``""`` for an interior optimum) and
    ``<axis>_position`` (:func:`position`). Ties go to the first combination in the
    table's order; a run whose score is not a number never wins.
    """
    scores = _scores(runs, axes, metric)
    if scores.empty:
        raise ValueError("no tuning runs to choose from")
    best = scores.loc[scores["score"].idxmax()]
    chosen: dict[str, object] = {a.name: best[a.name] for a in axes}
    chosen[metric] = best["score"] if best["score"] > -math.inf else math.nan
    chosen["runs"] = int(scores["runs"].sum())
    for axis in axes:
        line = _line(scores, axes, axis, chosen)
        chosen[f"{axis.name}_edge"] = _edge(axis, line, best[axis.name])
        chosen[f"{axis.name}_position"] = position(axis, line, best[axis.name])
    return chosen


def next_points(runs: pd.DataFrame, axes: Sequence[Axis], start: dict[str, float],
                metric: str = "val_accuracy") -> list[dict[str, float]]:
    """The points one method's tuning runs next (none: its tuning is done).

    One pass of a coordinate search over the paper's grids, then a check that the choice
    is a local optimum: with no runs yet, the first axis' whole grid, the others at
    ``start``; then, in axis order, the first axis none of whose lines has tried its
    whole paper grid gets it on the current choice's line; when every axis has been
    searched so, the choice's neighbours on every axis' ladder (:meth:`Axis.ladder`: the
    grid, then up to ``max_extensions`` values past an edge) that were not run.
    """
    if runs.empty:
        first = axes[0]
        return [{**start, first.name: v} for v in first.values]
    scores = _scores(runs, axes, metric)
    chosen = choose_one(runs, axes, metric)
    at = {a.name: chosen[a.name] for a in axes}
    for axis in axes:
        if not _searched(scores, axes, axis):
            line = _line(scores, axes, axis, at)
            return [{**at, axis.name: v} for v in axis.values if v not in line]
    points = []
    for axis in axes:
        line = _line(scores, axes, axis, at)
        points += [{**at, axis.name: n} for n in axis.neighbours(at[axis.name])
                   if n is not None and n not in line]
    return points


def open_edges(chosen: dict[str, object], axes: Sequence[Axis]) -> list[str]:
    """The axes whose choice is not a local optimum: an edge the grid's extensions could
    not close, or a neighbour not run."""
    return [a.name for a in axes if chosen[f"{a.name}_edge"] in ("open", "untried")]


def position(axis: Axis, tried: Sequence[float], chosen: float) -> str:
    """Where ``chosen`` sits among the values ``tried`` on its line, in words, e.g.
    ``3rd of 6 (interior)``, ``1st of 7 (at the bound k >= 1)`` or ``8th of 8 (high
    edge, open: the grid's extensions ran out)``."""
    ordered = sorted(set(tried))
    rank = ordered.index(chosen) + 1
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(rank if rank < 20 else rank % 10, "th")
    edge = _edge(axis, ordered, chosen)
    lower, higher = axis.neighbours(chosen)
    side = "low" if lower is None or lower not in ordered else "high"
    if edge == "bound":
        bound = axis.lowest if side == "low" else axis.highest
        where = f"at the bound {axis.name} {'>=' if side == 'low' else '<='} {bound:g}"
    else:
        where = {"": "interior", "open": f"{side} edge, open: the grid's extensions ran out",
                 "untried": f"{side} neighbour not run"}[edge]
    return f"{rank}{suffix} of {len(ordered)} ({where})"
