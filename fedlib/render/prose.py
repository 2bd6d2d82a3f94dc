"""Prose whose numbers are computed at the tier of the page it is on.

A chapter is rendered at several tiers (the paper tier from published runs, the quick
tier beside it). A paragraph that quotes a measured number is therefore written as a
template in a code cell, ``say("... ends at {acc:.3f} ...", acc=...)``, and its numbers
are those of the page's own runs. The template is Markdown (MyST) written by the chapter;
every value put into it is shown as written (:func:`fedlib.render.markdown.markdown_text`), so a
value never becomes markup.

A value the tier did not compute (a run left out of the tier, a claim not evaluated, a
mean over no runs) is a :class:`Missing`, and is rendered as a phrase saying so
(:data:`NOT_RUN` unless it gives its own), never as a number; so are None, a NaN and
pandas' missing values (``pd.NA``, ``pd.NaT``, a NaT of numpy). An infinite value is a
value (DP-Ditto's budget of no noise is ε = ∞): it reads ``∞`` or ``−∞``. The helpers below read the
values a paragraph needs from what a chapter already has (its runs frame, its claims),
and return a :class:`Missing` where that tier has no such value.
"""

from __future__ import annotations

import math
import numbers
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from fedlib.render.markdown import markdown_text
from fedlib.verdicts.compare import Estimate, difference, estimate

NOT_RUN = "not run at this tier"
"""How a value that the page's tier did not compute reads in prose."""


@dataclass(frozen=True)
class Missing:
    """A value the page's tier did not compute; ``reason`` is what the prose says in its
    place. Any attribute or item of it is missing too, so ``{d.low:.3f}`` of a missing
    difference reads as the phrase."""

    reason: str = NOT_RUN

    def __getattr__(self, name: str) -> Missing:
        if name.startswith("_"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key: object) -> Missing:
        return self

    def __format__(self, spec: str) -> str:
        return self.reason

    def __str__(self) -> str:
        return self.reason


def missing(value: object) -> bool:
    """True when ``value`` stands for nothing computed: a :class:`Missing`, None, a NaN
    (a float's, numpy's or a :class:`~decimal.Decimal`'s), pandas' ``NA`` or ``NaT``, a
    NaT of numpy, or an :class:`~fedlib.verdicts.compare.Estimate` over no runs or with a
    NaN mean. An infinite value is not missing (:func:`number_text` writes it ``∞``)."""
    if value is None or isinstance(value, Missing) or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, Estimate):
        return value.n == 0 or math.isnan(value.mean)
    if isinstance(value, Decimal):
        return value.is_nan()
    if isinstance(value, np.datetime64 | np.timedelta64):
        return bool(np.isnat(value))
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return math.isnan(float(value))
    return False


MINUS = "\u2212"
"""The minus sign of a negative infinity (``−∞``), as a page sets it."""


def number_text(value: float | Decimal, spec: str = "") -> str:
    """``value`` formatted with ``spec``; an infinity as ``∞`` or ``−∞`` whatever the
    spec (``inf`` is no word of a page's prose)."""
    infinite = value.is_infinite() if isinstance(value, Decimal) else math.isinf(value)
    if infinite:
        return "\u221e" if value > 0 else f"{MINUS}\u221e"
    return format(value, spec)


def _reason(value: object) -> str:
    return value.reason if isinstance(value, Missing) else NOT_RUN


def interval_text(value: Estimate, spec: str = ".3f") -> str:
    """An estimate in words: ``0.012 (95% interval 0.004 to 0.020, 3 paired seeds)``; one
    repeat gives no interval and says so."""
    spec = spec or ".3f"
    mean = number_text(value.mean, spec)
    if value.n == 1 or not (math.isfinite(value.low) and math.isfinite(value.high)):
        return f"{mean} (one run, no interval)"
    unit = "paired seeds" if value.paired else "runs"
    return (f"{mean} ({value.level:.0%} interval {number_text(value.low, spec)} to "
            f"{number_text(value.high, spec)}, {value.n} {unit})")


class _ProseFormatter(string.Formatter):
    """Formats every value of a template as plain text escaped for Markdown."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if missing(value):
            return markdown_text(_reason(value))
        if isinstance(value, Estimate):
            return markdown_text(interval_text(value, format_spec))
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, bool):
            text = format(str(value), format_spec)
        elif isinstance(value, numbers.Integral):
            text = format(int(value), format_spec or "d")
        elif isinstance(value, numbers.Real):
            text = number_text(float(value), format_spec or ".3g")
        elif isinstance(value, Decimal):
            text = number_text(value, format_spec or ".3g")
        elif isinstance(value, str):
            text = format(value, format_spec)
        elif isinstance(value, Sequence | set | frozenset):
            text = listing([self.format_field(item, format_spec) for item in value],
                           escaped=True)
            return text
        else:
            text = format(str(value), format_spec)
        return markdown_text(text)

    def check_unused_args(self, used_args: set[int | str], args: Sequence[Any],
                          kwargs: Mapping[str, Any]) -> None:
        unused = sorted(set(kwargs) - {name for name in used_args if isinstance(name, str)})
        if unused:
            raise ValueError(f"values {', '.join(unused)} are given but the template does "
                             "not use them (a misspelt field name?)")


def prose(template: str, **values: Any) -> str:
    """``template`` (Markdown) with every ``{name}``, ``{name:spec}`` or
    ``{name.attribute:spec}`` replaced by its value, formatted with ``spec`` (numbers:
    ``.3g`` by default) and escaped as plain text; a missing value (:func:`missing`) reads
    as its phrase. An :class:`~fedlib.verdicts.compare.Estimate` reads as its mean and interval
    (:func:`interval_text`), a list as "a, b and c". Literal braces are doubled, as in
    :meth:`str.format`. A replacement field without a value, or a value no field uses,
    is a ValueError."""
    try:
        return _ProseFormatter().format(template, **values)
    except KeyError as error:
        raise ValueError(f"the template uses {{{error.args[0]}}} but no value of that name "
                         f"is given (given: {', '.join(sorted(values)) or 'none'})") from None
    except IndexError:
        raise ValueError("the template has a positional field {}: name every value"
                         ) from None


def say(template: str, **values: Any) -> None:
    """Show :func:`prose` of ``template`` and ``values`` as a Markdown paragraph of the
    page (from a code cell, whose input the page folds away)."""
    from IPython.display import Markdown, display

    display(Markdown(prose(template, **values)))


def listing(items: Iterable[object], *, escaped: bool = False) -> str:
    """``a``, ``a and b``, ``a, b and c``; each item escaped unless ``escaped``."""
    words = [str(item) if escaped else markdown_text(item) for item in items]
    if len(words) <= 1:
        return "".join(words) or (markdown_text("none") if not escaped else "none")
    return ", ".join(words[:-1]) + " and " + words[-1]


def _rows(frame: pd.DataFrame | None, where: Mapping[str, object]) -> pd.DataFrame | None:
    """The rows of ``frame`` whose columns equal ``where``'s values (None or NaN: the
    column is empty there); None when the frame or a column is absent, or a wanted value
    is itself missing."""
    if frame is None or not isinstance(frame, pd.DataFrame):
        return None
    mask = pd.Series(True, index=frame.index)
    for column, wanted in where.items():
        if column not in frame.columns:
            return None
        values = frame[column]
        if isinstance(wanted, Missing):
            return None
        if missing(wanted):
            mask &= values.isna()
        else:
            mask &= values == wanted
    return frame[mask]


def mean_of(frame: pd.DataFrame | None, column: str, **where: object) -> float | Missing:
    """The mean of ``column`` over the rows of ``frame`` matching ``where``; missing when
    the frame, the column or every such row is absent (the tier did not run them) or the
    values are all NaN."""
    rows = _rows(frame, where)
    if rows is None or column not in rows.columns:
        return Missing()
    values = pd.to_numeric(rows[column], errors="coerce").dropna()
    return float(values.mean()) if len(values) else Missing()


def per_seed(frame: pd.DataFrame | None, column: str, *, seed: str = "seed",
             **where: object) -> pd.Series | None:
    """One value of ``column`` per seed (the mean over the seed's matching rows), or None
    when the tier has none."""
    rows = _rows(frame, where)
    if rows is None or column not in rows.columns or seed not in rows.columns:
        return None
    values = rows.assign(_value=pd.to_numeric(rows[column], errors="coerce")).dropna(
        subset=["_value"])
    if values.empty:
        return None
    return values.groupby(seed)["_value"].mean()


def estimate_of(frame: pd.DataFrame | None, column: str, *, seed: str = "seed",
                **where: object) -> Estimate | Missing:
    """Mean over seeds of ``column`` (per seed: its mean over the matching rows), with its
    95% interval; missing when the tier has no such runs."""
    values = per_seed(frame, column, seed=seed, **where)
    return Missing() if values is None else estimate(values)


def difference_of(frame: pd.DataFrame | None, column: str, first: Mapping[str, object],
                  second: Mapping[str, object], *, seed: str = "seed",
                  **where: object) -> Estimate | Missing:
    """``column`` of the rows matching ``first`` minus that of the rows matching
    ``second`` (both also matching ``where``), paired seed by seed where they share
    their seeds, with its 95% interval; missing when either arm has no runs."""
    a = per_seed(frame, column, seed=seed, **{**where, **first})
    b = per_seed(frame, column, seed=seed, **{**where, **second})
    if a is None or b is None:
        return Missing()
    return difference(a, b)


def claim_of(claims: Iterable[Any], claim_id: str) -> Any:
    """The claim ``claim_id`` of ``claims``, or a :class:`Missing` when it was not
    evaluated on this page."""
    for claim in claims:
        if getattr(claim, "claim_id", None) == claim_id:
            return claim
    return Missing(f"not evaluated at this tier ({claim_id})")


def status_of(claims: Iterable[Any], claim_id: str) -> str | Missing:
    """The verdict of ``claim_id`` in ``claims`` (e.g. ``HOLDS``), or a :class:`Missing`
    when it was not evaluated on this page."""
    claim = claim_of(claims, claim_id)
    return claim if isinstance(claim, Missing) else str(claim.status)


def scaled(value: object, factor: float) -> Any:
    """``value`` times ``factor`` (e.g. 100 for points of accuracy), an estimate's mean and
    interval alike; a missing value stays missing."""
    if missing(value):
        return value if isinstance(value, Missing) else Missing()
    if isinstance(value, Estimate):
        low, high = sorted((value.low * factor, value.high * factor))
        return Estimate(value.n, value.mean * factor, low, high, value.paired, value.level)
    return float(value) * factor  # type: ignore[arg-type]


def magnitude(value: object) -> Any:
    """The absolute value of a number, or of an estimate's mean with its interval flipped
    when the mean is negative (so "ends {d} below" reads with positive numbers); a missing
    value stays missing."""
    if missing(value):
        return value if isinstance(value, Missing) else Missing()
    if isinstance(value, Estimate):
        return scaled(value, -1.0) if value.mean < 0 else value
    return abs(float(value))  # type: ignore[arg-type]


def sign_word(value: object, positive: str, negative: str, level: str | None = None, *,
              tolerance: float = 0.0) -> str | Missing:
    """``positive`` when ``value`` (a number, or an estimate's mean) is above
    ``tolerance``, ``negative`` when below ``-tolerance``, ``level`` (default:
    ``positive``) in between; a missing value stays missing."""
    if missing(value):
        return value if isinstance(value, Missing) else Missing()
    number = value.mean if isinstance(value, Estimate) else float(value)  # type: ignore[arg-type]
    if number > tolerance:
        return positive
    if number < -tolerance:
        return negative
    return positive if level is None else level
