"""Cuts of a paper's grid: how the book's paper tier departs from a paper's full grid.

Where a chapter's full paper grid would take far more CPU time than a build machine can
give it, the book runs the largest grid that keeps every parameter its claims depend on
(rounds, local steps, clients, epochs, model) at the paper's value, and cuts only
repetitions or grid points no claim reads. Each paper's ``paper_tier`` module lists its
cuts; the chapter names them.

The cuts only choose which runs are planned: a run's key holds its whole config, so
editing a cut never changes what a run computes, and no runner imports this module or a
``paper_tier`` module (a test checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class GridCut:
    """One cut: the field of the tier's setup it sets (dotted for a nested setup, e.g.
    ``"cnn.sigmas"``), its value, and why no claim needs what it removes."""

    field: str
    value: Any
    reason: str


def _cut_fields(setup: Any, cuts: Sequence[tuple[str, Any]], prefix: str = "") -> Any:
    """``setup`` with every (dotted field, value) set, all in one ``replace`` per level
    (a setup that checks its fields against each other sees only the final values)."""
    changes: dict[str, Any] = {}
    nested: dict[str, list[tuple[str, Any]]] = {}
    for field, value in cuts:
        head, _, rest = field.partition(".")
        if not hasattr(setup, head):
            raise ValueError(f"a grid cut names {prefix + field!r}, but "
                             f"{type(setup).__name__} has no field {head!r}; "
                             "cut one of the setup's fields")
        if rest:
            nested.setdefault(head, []).append((rest, value))
        else:
            changes[head] = value
    for head, inner in nested.items():
        changes[head] = _cut_fields(changes.get(head, getattr(setup, head)), inner,
                                    f"{prefix}{head}.")
    return replace(setup, **changes) if changes else setup


def cut_paper_grid(setup: Any, cuts: Sequence[GridCut], kept: Iterable[str] = ()) -> Any:
    """``setup`` (a tier's frozen dataclass) with every cut applied, except those on a
    field in ``kept`` (fields the caller set explicitly, which win over a cut)."""
    kept = set(kept)
    return _cut_fields(setup, [(cut.field, cut.value) for cut in cuts
                               if cut.field.split(".")[0] not in kept and cut.field not in kept])


@dataclass(frozen=True)
class PaperGrid:
    """The paper tier of one chapter as the book runs it.

    ``tier_of`` is the chapter's own tier function (``experiment.tier``: its paper tier
    is the paper's whole grid); ``full_cpu_hours`` and ``cut_cpu_hours`` estimate the
    CPU time of the whole grid and of the cut one, from the measured time per run.
    """

    tier_of: Callable[..., Any]
    cuts: tuple[GridCut, ...]
    full_cpu_hours: float
    cut_cpu_hours: float
    quick_repeats: tuple[GridCut, ...] = ()
    """Changes to the quick tier's setup that give its comparisons the repeats a verdict
    reads (at least three seeds): like a cut, they only plan runs, never change one."""

    def tier(self, scale: str, **overrides: Any) -> Any:
        """The setup of a tier, as ``tier_of`` gives it, with the cuts applied at the
        paper tier and the repeats at the quick tier (a field set in ``overrides`` keeps
        the value given)."""
        setup = self.tier_of(scale, **overrides)
        changes = {"paper": self.cuts, "quick": self.quick_repeats}.get(scale, ())
        return cut_paper_grid(setup, changes,
                              kept=[name for name, value in overrides.items() if value is not None])

    def describe(self) -> str:
        """Markdown naming the cuts (for the chapter)."""
        return describe_cuts(self.cuts, full_cpu_hours=self.full_cpu_hours,
                             cut_cpu_hours=self.cut_cpu_hours)


def describe_cuts(cuts: Sequence[GridCut], *, full_cpu_hours: float,
                  cut_cpu_hours: float) -> str:
    """Markdown naming the book's paper grid: what it cuts from the paper's and why."""
    if not cuts:
        return "The paper tier runs the paper's whole grid."
    lines = [
        f"The paper's whole grid would take about {full_cpu_hours:,.0f} CPU-hours here "
        "(estimated from the measured time per run); the book's paper tier runs the "
        "largest part of it that keeps every parameter the claims depend on at the "
        f"paper's value, about {cut_cpu_hours:,.1f} CPU-hours. It cuts:", "",
    ]
    lines += [f"- `{cut.field}` = `{_show(cut.value)}`: {cut.reason}" for cut in cuts]
    return "\n".join(lines)


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)
