"""The verdict vocabulary: how a claim about noisy runs is judged.

A claim that compares arms (methods, settings, budgets) is a statistical statement. It
is declared before any result is read, as a :class:`Comparison`: the quantity, which arm
the paper says is larger or smaller, and a margin, the smallest difference that means
something in the paper's terms. The runs then give, per arm, one value per repeat (seed);
the verdict reads the mean difference over the repeats and its confidence interval
(paired across seeds where the arms share them, Welch's otherwise):

``HOLDS``
    the whole interval lies beyond the margin, on the side the claim states;
``FAILS``
    the whole interval lies short of the margin: the difference the claim needs is
    excluded (the arms tie within the margin, or the other arm is ahead);
``INCONCLUSIVE``
    the interval contains the margin: the measured difference is inside the run-to-run
    uncertainty;
``NOT-TESTABLE``
    an arm cannot be read against a trivial baseline (chance, the majority class, the
    starting loss): it diverged, its seeds split between learning and not ("seed
    spread"), or no arm learned ("not learned", "worse than trivial"); or the quantity
    sits on an edge of the grid it is chosen from that the grid could extend beyond, or
    was run at a setting the paper tuned away from ("untuned"): ranking noise against
    noise decides nothing;
``NOT-RUN``
    the runs are missing, or too few to measure run-to-run variation (one repeat), so
    no statement can be made; the evidence says which.

A claim with no randomness in it (a closed form, an accountant's number) is judged
exactly by the caller and recorded as such (:meth:`fedlib.verdicts.claims.ClaimSheet.exact`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

HOLDS, FAILS, INCONCLUSIVE, NOT_TESTABLE, NOT_RUN = (
    "HOLDS", "FAILS", "INCONCLUSIVE", "NOT-TESTABLE", "NOT-RUN")
STATUSES = (HOLDS, FAILS, INCONCLUSIVE, NOT_TESTABLE, NOT_RUN)
"""Every status a claim can have, in the order the scorecard lists them."""

LEVEL = 0.95
"""Confidence level of every interval (two-sided)."""

MAX_DIGITS = 9
"""The most decimals an estimate is written with (an interval narrower than the usual
three decimals is written with as many as tell its ends apart, up to these)."""

Values = pd.Series | Mapping[object, float] | Sequence[float] | np.ndarray
"""One value per repeat. A Series or mapping keyed by seed lets two arms be paired."""


@dataclass(frozen=True)
class Estimate:
    """A mean over ``n`` repeats and its two-sided confidence interval (Student's t).

    With one repeat the interval is unbounded: one run says nothing of the spread.
    ``paired`` says whether a difference was taken seed by seed.
    """

    n: int
    mean: float
    low: float
    high: float
    paired: bool = False
    level: float = LEVEL

    def text(self, digits: int = 3) -> str:
        """``0.012 [0.004, 0.020] (n=5 paired seeds, 95% interval)``."""
        if self.n == 0:
            return "no runs"
        if self.n == 1 or not math.isfinite(self.low):
            return f"{self.mean:.{digits}f} (n=1, no interval)"
        unit = "paired seeds" if self.paired else "runs"
        if self.low == self.high:
            return f"{self.mean:.{digits}f} exactly (the same in all {self.n} {unit})"
        # An interval narrower than the digits shown gets the digits that tell its ends
        # apart (else it would read as a quantity that does not vary); one that no
        # MAX_DIGITS decimals tell apart varies by floating-point rounding only.
        shown = digits
        while f"{self.low:.{shown}f}" == f"{self.high:.{shown}f}":
            if shown >= MAX_DIGITS:
                return (f"{self.mean:.{digits}f} exactly (the same in all {self.n} {unit} "
                        f"to {MAX_DIGITS} decimals)")
            shown += 1
        digits = shown
        return (f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}] "
                f"(n={self.n} {unit}, {self.level:.0%} interval)")


def _as_series(values: Values) -> pd.Series:
    if isinstance(values, pd.Series):
        series = values
    elif isinstance(values, Mapping):
        series = pd.Series(dict(values), dtype=float)
    else:
        series = pd.Series(np.asarray(values, dtype=float))
    series = series.astype(float)
    if series.isna().any():
        missing = list(series.index[series.isna()])
        raise ValueError(f"values {series.tolist()} hold NaN (at {missing}): a diverged or "
                         "missing run must be reported, not averaged; drop it explicitly "
                         "and say so in the claim's evidence")
    return series


def estimate(values: Values, level: float = LEVEL) -> Estimate:
    """Mean of ``values`` (one per repeat) with its t-interval."""
    series = _as_series(values)
    n = len(series)
    if n == 0:
        return Estimate(0, math.nan, -math.inf, math.inf, level=level)
    mean = float(series.mean())
    if n == 1:
        return Estimate(1, mean, -math.inf, math.inf, level=level)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * series.std(ddof=1) / math.sqrt(n))
    return Estimate(n, mean, mean - half, mean + half, level=level)


def difference(a: Values, b: Values, level: float = LEVEL) -> Estimate:
    """Mean of ``a - b`` with its interval.

    Paired seed by seed when both are keyed by seed (a Series or mapping) and share
    every key; Welch's interval for two independent samples otherwise.
    """
    sa, sb = _as_series(a), _as_series(b)
    keyed = not isinstance(a, Sequence | np.ndarray) and not isinstance(b, Sequence | np.ndarray)
    if keyed and len(sa) and set(sa.index) == set(sb.index) and sa.index.is_unique:
        paired = estimate(sa - sb.reindex(sa.index), level)
        return Estimate(paired.n, paired.mean, paired.low, paired.high, True, level)
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        return Estimate(0, math.nan, -math.inf, math.inf, level=level)
    mean = float(sa.mean() - sb.mean())
    if na < 2 or nb < 2:
        return Estimate(min(na, nb), mean, -math.inf, math.inf, level=level)
    va, vb = float(sa.var(ddof=1)) / na, float(sb.var(ddof=1)) / nb
    se = math.sqrt(va + vb)
    if se == 0:
        return Estimate(min(na, nb), mean, mean, mean, level=level)
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    half = float(stats.t.ppf(0.5 + level / 2, df) * se)
    return Estimate(min(na, nb), mean, mean - half, mean + half, level=level)


@dataclass(frozen=True)
class Verdict:
    """A status and the evidence behind it (numbers, in one line)."""

    status: str
    evidence: str
    brief: str = ""
    """The evidence in one short clause (a combined claim lists its parts by it)."""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")


NOT_LEARNED, DIVERGED, SEED_SPREAD, WORSE_THAN_TRIVIAL = (
    "not learned", "diverged", "seed spread", "worse than trivial")
"""Why an arm cannot be compared (:meth:`Trivial.condition`)."""


@dataclass(frozen=True)
class Trivial:
    """A trivial baseline the arms must clear for a comparison to mean anything.

    ``value`` is what the trivial predictor scores (chance accuracy 0.1, the majority
    class's error, the loss at the start); ``higher_is_better`` says which way is better
    for the quantity; ``tolerance`` is how far past it (in the better direction) a run
    must end to count as having learned. ``start``: the value is where every run starts
    (a starting loss or risk), so a run that ends past it on the wrong side diverged.
    """

    name: str
    value: float
    higher_is_better: bool = True
    tolerance: float = 0.0
    start: bool = False

    def clears(self, value: float) -> bool:
        """Whether one run's value is past the baseline by more than the tolerance."""
        if self.higher_is_better:
            return value > self.value + self.tolerance
        return value < self.value - self.tolerance

    def _worse(self, value: float) -> bool:
        if self.higher_is_better:
            return value < self.value - self.tolerance
        return value > self.value + self.tolerance

    def condition(self, values: Values) -> str:
        """Why an arm (one value per seed) cannot be compared, or ``""`` when it can:

        - ``"diverged"``: a value that is not a finite number, or, where the baseline is
          the start, a mean past it on the wrong side;
        - ``"seed spread"``: some seeds clear the baseline and some do not;
        - ``"worse than trivial"``: no seed clears it, and the mean is worse than it
          beyond the tolerance;
        - ``"not learned"``: no seed clears it.
        """
        raw = np.asarray(list(values.values()) if isinstance(values, Mapping)
                         else values, dtype=float)
        if raw.size == 0:
            return ""
        if not np.isfinite(raw).all():
            return DIVERGED
        cleared = [self.clears(v) for v in raw]
        if all(cleared):
            return ""
        if any(cleared):
            return SEED_SPREAD
        if self._worse(float(raw.mean())):
            return DIVERGED if self.start else WORSE_THAN_TRIVIAL
        return NOT_LEARNED

    def describe(self, name: str, values: Values) -> str:
        """An arm's condition in words, with its values, e.g. ``NP-FedAvg: seed spread, 3
        of 5 seeds clear chance (0.1) by more than 0.05 (0.880, 0.100, 0.880, 0.100,
        0.870)``."""
        raw = np.asarray(list(values.values()) if isinstance(values, Mapping)
                         else values, dtype=float)
        condition = self.condition(values) or "learned"
        side = "above" if self.higher_is_better else "below"
        cleared = sum(self.clears(v) for v in raw if np.isfinite(v))
        return (f"{name}: {condition}, {cleared} of {raw.size} seeds {side} {self.name} "
                f"({self.value:.3g}) by more than {self.tolerance:g} ("
                + ", ".join(f"{v:.3f}" for v in raw) + ")")


def gate(arms: Mapping[str, Values], trivial: Trivial | None) -> Verdict | None:
    """NOT-TESTABLE, naming each arm's condition (:meth:`Trivial.condition`), when the
    arms cannot be compared: an arm diverged or its seeds split between learning and not,
    or no arm learned (each not learned or worse than trivial); None when they can (an
    arm that learned against one that did not is a comparison)."""
    if trivial is None:
        return None
    conditions = {name: trivial.condition(values) for name, values in arms.items()}
    unreadable = [n for n, c in conditions.items() if c in (DIVERGED, SEED_SPREAD)]
    if not unreadable and not all(c in (NOT_LEARNED, WORSE_THAN_TRIVIAL)
                                  for c in conditions.values()):
        return None
    named = unreadable or list(arms)
    evidence = "; ".join(trivial.describe(n, arms[n]) for n in named)
    brief = ", ".join(f"{n} {conditions[n]}" for n in named)
    return Verdict(NOT_TESTABLE, evidence, brief)


@dataclass(frozen=True)
class Comparison:
    """A claim that arm ``a`` is ``direction`` (greater or less) than arm ``b`` in
    ``quantity`` by more than ``margin``, declared before any result is read.

    ``margin`` (>= 0, in the quantity's units) is the smallest difference that means
    something in the paper's terms; ``why`` says why that value.
    """

    quantity: str
    a: str
    b: str
    direction: Literal["greater", "less"]
    margin: float
    why: str = ""

    def __post_init__(self) -> None:
        if self.direction not in ("greater", "less"):
            raise ValueError(f"direction must be 'greater' or 'less', got {self.direction!r}")
        if not (isinstance(self.margin, int | float) and math.isfinite(self.margin)
                and self.margin >= 0):
            raise ValueError(f"margin must be a finite number >= 0, got {self.margin!r}")

    def statement(self) -> str:
        """``PFA - WeiAvg in final accuracy > +0.02``."""
        sign = ">" if self.direction == "greater" else "<"
        bound = self.margin if self.direction == "greater" else -self.margin
        return f"{self.a} - {self.b} in {self.quantity} {sign} {bound:+g}"

    def judge(self, a: Values, b: Values, *, trivial: Trivial | None = None,
              level: float = LEVEL) -> Verdict:
        """The verdict on one value per repeat of each arm (see the module's text)."""
        if trivial is not None and DIVERGED in (trivial.condition(a), trivial.condition(b)):
            diverged = gate({self.a: a, self.b: b}, trivial)
            assert diverged is not None
            return Verdict(NOT_TESTABLE, f"claim {self.statement()}; " + diverged.evidence,
                           diverged.brief)
        ea, eb = estimate(a, level), estimate(b, level)
        d = difference(a, b, level)
        head = (f"claim {self.statement()}; {self.a} {ea.text()}, {self.b} {eb.text()}; "
                f"difference {d.text()}; margin {self.margin:g}"
                + (f" ({self.why})" if self.why else ""))
        brief = (f"{self.a} {ea.mean:.3f}, {self.b} {eb.mean:.3f}, difference {d.text()}, "
                 f"margin {self.margin:g}")
        if ea.n == 0 or eb.n == 0:
            missing = self.a if ea.n == 0 else self.b
            return Verdict(NOT_RUN, f"no runs of {missing}; " + head, f"no runs of {missing}")
        if d.n < 2:
            return Verdict(NOT_RUN, "one repeat: run-to-run variation is not measured, "
                           "so no difference can be judged; " + head, "one repeat")
        unreadable = gate({self.a: a, self.b: b}, trivial)
        if unreadable is not None:
            return Verdict(NOT_TESTABLE, unreadable.evidence + "; " + head, unreadable.brief)
        sign = 1.0 if self.direction == "greater" else -1.0
        low, high = sorted((sign * d.low, sign * d.high))
        if low > self.margin:
            return Verdict(HOLDS, head, brief)
        if high < self.margin:
            if high < -self.margin:
                why = f"{self.b} is ahead beyond the margin"
            elif low > -self.margin:
                why = "the arms tie within the margin"
            else:
                why = "the difference is below the margin"
            return Verdict(FAILS, f"{why}; " + head, f"{why}: {brief}")
        return Verdict(INCONCLUSIVE, "the interval contains the margin; " + head, brief)


def combine(parts: Sequence[tuple[str, Verdict]]) -> Verdict:
    """One verdict for a claim made of several comparisons (all must hold).

    FAILS if any part fails (one failing part is enough to refute "all hold"); NOT-RUN if
    a part is not run; HOLDS only if every part holds; NOT-TESTABLE if no part is
    testable; INCONCLUSIVE otherwise, and "part untested" (naming them) where some parts
    hold and the rest are not testable: a claim is not shown on part of what it says.
    ``parts`` are (label, verdict) pairs; the evidence lists each part by its brief (its
    difference, interval and margin)."""
    if not parts:
        raise ValueError("combine needs at least one part")
    statuses = [v.status for _, v in parts]
    evidence = " | ".join(f"{label}: {v.status} ({v.brief or v.evidence})"
                          for label, v in parts)
    untested = [label for label, v in parts if v.status == NOT_TESTABLE]
    if FAILS in statuses:
        status = FAILS
    elif NOT_RUN in statuses:
        status = NOT_RUN
    elif all(s == NOT_TESTABLE for s in statuses):
        status = NOT_TESTABLE
    elif all(s == HOLDS for s in statuses):
        status = HOLDS
    else:
        status = INCONCLUSIVE
        if untested:
            evidence = (f"part untested ({len(untested)} of {len(parts)}: "
                        + ", ".join(untested) + "); " + evidence)
    return Verdict(status, evidence)


def at_least(count: int, parts: Sequence[tuple[str, Verdict]]) -> Verdict:
    """One verdict for "at least ``count`` of ``parts`` hold": HOLDS when that many hold,
    FAILS when fewer than ``count`` could (hold, are inconclusive or not testable), NOT-RUN
    when a part is not run, NOT-TESTABLE when none is testable, INCONCLUSIVE otherwise."""
    statuses = [v.status for _, v in parts]
    evidence = f"needs {count} of {len(parts)}: " + " | ".join(
        f"{label}: {v.status} ({v.brief or v.evidence})" for label, v in parts)
    holds = statuses.count(HOLDS)
    could = holds + statuses.count(INCONCLUSIVE) + statuses.count(NOT_TESTABLE)
    if NOT_RUN in statuses:
        status = NOT_RUN
    elif all(s == NOT_TESTABLE for s in statuses):
        status = NOT_TESTABLE
    elif holds >= count:
        status = HOLDS
    elif could < count:
        status = FAILS
    else:
        status = INCONCLUSIVE
    return Verdict(status, evidence)


def any_of(parts: Sequence[tuple[str, Verdict]]) -> Verdict:
    """One verdict for a claim that needs one of several comparisons: HOLDS if any part
    holds; FAILS if every part fails; NOT-RUN if any part is not run and none holds;
    NOT-TESTABLE if every part is; INCONCLUSIVE otherwise."""
    if not parts:
        raise ValueError("any_of needs at least one part")
    statuses = [v.status for _, v in parts]
    evidence = " | ".join(f"{label}: {v.status} ({v.brief or v.evidence})" for label, v in parts)
    testable = [s for s in statuses if s != NOT_TESTABLE]
    if HOLDS in statuses:
        status = HOLDS
    elif testable and all(s == FAILS for s in testable):
        status = FAILS
    elif NOT_RUN in statuses:
        status = NOT_RUN
    elif all(s == NOT_TESTABLE for s in statuses):
        status = NOT_TESTABLE
    else:
        status = INCONCLUSIVE
    return Verdict(status, evidence)


def best_of(quantity: str, claimed: str, arms: Mapping[str, Values], *,
            direction: Literal["greater", "less"], margin: float, why: str = "",
            trivial: Trivial | None = None, level: float = LEVEL) -> Verdict:
    """The claim that arm ``claimed`` is the best of ``arms`` (largest with
    ``direction='greater'``, smallest with ``'less'``): one comparison against every
    other arm, combined (:func:`combine`)."""
    if claimed not in arms:
        raise ValueError(f"arm {claimed!r} is not among {sorted(arms)}")
    parts = [(f"vs {other}",
              Comparison(quantity, claimed, other, direction, margin, why)
              .judge(arms[claimed], values, trivial=trivial, level=level))
             for other, values in arms.items() if other != claimed]
    return combine(parts)


def interior_optimum(quantity: str, grid: Mapping[float, Values], *,
                     lower_is_better: bool, margin: float, why: str = "",
                     open_edges: tuple[bool, bool] = (True, True),
                     trivial: Trivial | None = None, level: float = LEVEL) -> Verdict:
    """The claim that the best value of ``quantity`` over a grid (keyed by the grid's
    points, in order) lies strictly inside it.

    The best point is the one with the best mean. Inside the grid: HOLDS when it beats
    both edges by more than ``margin``, FAILS when it ties an edge within the margin,
    INCONCLUSIVE otherwise. On an edge: NOT-TESTABLE when that edge is open (the grid
    could extend beyond it; ``open_edges`` for the low and the high end), else FAILS when
    it beats every inside point by more than the margin, INCONCLUSIVE otherwise.
    """
    points = sorted(grid)
    if len(points) < 3:
        raise ValueError(f"an interior optimum needs a grid of at least 3 points, got {points}")
    means = {p: estimate(grid[p], level) for p in points}
    if any(e.n == 0 for e in means.values()):
        return Verdict(NOT_RUN, "no runs at " + ", ".join(
            f"{p:g}" for p, e in means.items() if e.n == 0))
    if any(e.n < 2 for e in means.values()):
        return Verdict(NOT_RUN, "one repeat: run-to-run variation is not measured, so no "
                       "optimum can be judged; " + quantity + " per point: "
                       + "; ".join(f"{p:g}: {means[p].text()}" for p in points))
    pick = min if lower_is_better else max
    best = pick(points, key=lambda p: means[p].mean)
    direction: Literal["greater", "less"] = "less" if lower_is_better else "greater"
    listing = "; ".join(f"{p:g}: {means[p].text()}" for p in points)
    unreadable = gate({f"{quantity} at {p:g}": grid[p] for p in points}, trivial)
    if unreadable is not None:
        return Verdict(NOT_TESTABLE, unreadable.evidence + f"; {quantity} per point: "
                       + listing, unreadable.brief)
    if best in (points[0], points[-1]):
        edge_open = open_edges[0] if best == points[0] else open_edges[1]
        if edge_open:
            return Verdict(NOT_TESTABLE, f"the best point {best:g} is on an edge of the grid "
                           f"the optimum could lie beyond; {quantity} per point: {listing}")
        parts = [(f"{best:g} vs {p:g}", Comparison(quantity, f"{best:g}", f"{p:g}", direction,
                                                   margin, why).judge(grid[best], grid[p],
                                                                      level=level))
                 for p in points[1:-1]]
        verdict = combine(parts)
        status = FAILS if verdict.status == HOLDS else (
            verdict.status if verdict.status == NOT_RUN else INCONCLUSIVE)
        return Verdict(status, f"the best point {best:g} is on the grid's closed edge; "
                       + verdict.evidence)
    parts = [(f"{best:g} vs edge {p:g}", Comparison(quantity, f"{best:g}", f"{p:g}", direction,
                                                    margin, why).judge(grid[best], grid[p],
                                                                       level=level))
             for p in (points[0], points[-1])]
    verdict = combine(parts)
    return Verdict(verdict.status, f"best point {best:g}; " + verdict.evidence)


def near_value(quantity: str, values: Values, target: float, margin: float, why: str = "",
               level: float = LEVEL) -> Verdict:
    """The claim that ``quantity`` (one value per repeat) is what a paper reports,
    ``target``, within ``margin``: HOLDS when the whole interval of its mean lies within
    the margin, FAILS when the whole interval lies outside it, INCONCLUSIVE otherwise."""
    e = estimate(values, level)
    head = (f"claim {quantity} within {margin:g} of {target:g}; measured {e.text()}; "
            f"margin {margin:g}" + (f" ({why})" if why else ""))
    if e.n == 0:
        return Verdict(NOT_RUN, "no runs; " + head)
    if e.n < 2:
        return Verdict(NOT_RUN, "one repeat: run-to-run variation is not measured, so no "
                       "value can be judged; " + head)
    if target - margin <= e.low and e.high <= target + margin:
        return Verdict(HOLDS, head)
    if e.high < target - margin or e.low > target + margin:
        return Verdict(FAILS, "the interval lies outside the margin; " + head)
    return Verdict(INCONCLUSIVE, "the interval crosses the margin; " + head)


def where_mask(frame: pd.DataFrame, where: Mapping[str, object] | None = None) -> pd.Series:
    """The rows of ``frame`` matching ``where`` (column -> value; a float matches within
    1e-12, None matches missing values)."""
    mask = pd.Series(True, index=frame.index)
    for column, wanted in (where or {}).items():
        col = frame[column]
        if wanted is None or (isinstance(wanted, float) and math.isnan(wanted)):
            mask &= col.isna()
        elif isinstance(wanted, float):
            mask &= np.isclose(col.astype(float), wanted, rtol=0, atol=1e-12)
        else:
            mask &= col == wanted
    return mask


def per_seed(frame: pd.DataFrame, value: str, seed: str = "seed",
             where: Mapping[str, object] | None = None) -> pd.Series:
    """The column ``value`` of the rows matching ``where`` (:func:`where_mask`), averaged
    per ``seed``: one value per repeat, keyed by seed, ready for
    :meth:`Comparison.judge`."""
    return frame.loc[where_mask(frame, where)].groupby(seed)[value].mean()
