"""The paper tier of the PPSGD chapter as the book runs it.

Figure 1a (synthetic) and Figure 1c (EMNIST, linear) run the authors' whole grids;
Figure 1d (EMNIST, CNN) runs the two noise levels its claims read and two step sizes,
at the paper's 20 epochs; the settings sweep runs the quick tier's grid. The hours are
measured: the published paper tier took 2.2 CPU-hours (Figure 1a with the settings
sweep 0.56, Figure 1c 0.38, Figure 1d 1.24, that is 2.2 CPU-minutes per CNN run when
its 34 runs share one vectorized pass); the whole grid's 455 CNN runs at that rate
would take about 17.5.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

import pandas as pd

from fedlib.grid_cuts import GridCut, PaperGrid
from fedlib.papers.ppsgd import experiment
from fedlib.papers.ppsgd.claims import LOCAL_WINS_FROM
from fedlib.published_rows import KeptSteps, log_linear_grid

PAPER_GRID = PaperGrid(
    experiment.tier,
    cuts=(
        GridCut("cnn.sigmas", (0.0, 10.0),
                "Figure 1d's claims read the smallest and the largest plotted noise "
                "level (sigma = 0 and 10); the levels between are not run"),
        GridCut("cnn.panel_sigmas", (0.0, 10.0), "the plotted levels, likewise"),
        GridCut("cnn.steps", (0.5, 1.0),
                "the best step size is taken over 0.5 and 1 only (the two steps the quick "
                "tier finds best); this is an assumption: a step of the paper's grid "
                "outside them could do better at 20 epochs"),
    ),
    full_cpu_hours=17.5,
    cut_cpu_hours=2.2,
)
"""The grid of the book's paper tier (the settings sweep: :func:`settings_setup`)."""

SETTINGS_CUT = ("the settings sweep (the claims of Figure 1a at each setting the published "
                "figure may come from: a robustness check, read by no claim of the "
                "scorecard) runs the quick tier's grid, on the paper's problem size")


def settings_setup(scale: str) -> experiment.PpsgdSetup:
    """The setup whose synthetic grid the settings sweep runs at ``scale`` (the paper
    tier: the quick tier's)."""
    return experiment.tier("quick" if scale == "paper" else scale)

REPEATS = {"quick": 3}
"""Seeds each tier runs (one where not listed): the quick tier's comparisons read three
repeats; the paper tier is published with one seed, so its comparisons are NOT-RUN
("one repeat") until more seeds are computed."""


def repeats(scale: str) -> int:
    """How many seeds the chapter runs at ``scale``."""
    return REPEATS.get(scale, 1)


REPEAT_CUT = ("the repeats beyond the first seed run Figure 1a at the plots' clipping norm "
              "C = 1 only: every claim reads C = 1, and the larger clipping norm is drawn "
              "from the first seed")


def repeat_setup(setup: experiment.PpsgdSetup) -> experiment.PpsgdSetup:
    """The grids a repeat beyond the first seed runs (:data:`REPEAT_CUT`)."""
    return replace(setup, synthetic=replace(setup.synthetic, clips=(experiment.FIGURE_CLIP,)))


def run_repeats(setup: experiment.PpsgdSetup, seed: int, scale: str, *, figure: str,
                **kwargs: Any) -> pd.DataFrame:
    """:func:`~fedlib.papers.ppsgd.experiment.run` at seeds ``seed``, ``seed + 1``, ...
    (:func:`repeats` of them, the later ones on :func:`repeat_setup`), concatenated with
    a ``seed`` column."""
    return pd.concat(
        [experiment.run(setup if r == 0 else repeat_setup(setup), seed + r, figure=figure,
                        **kwargs).assign(seed=seed + r)
         for r in range(repeats(scale))], ignore_index=True)


# The rows a published synthetic run keeps --------------------------------------------------

CURVE_LOG_POINTS = 40
"""Iterations of a published synthetic run spaced evenly on a log scale (the curves of
Figure 1a fall fastest in their first iterations)."""
CURVE_EVERY = 10
"""And every tenth iteration (the tail of the curves, drawn on a linear axis)."""


def claim_iterations(last: int) -> set[int]:
    """The iterations of a synthetic run of ``last`` iterations that a claim or note of
    the chapter reads: T/30 (global learning fastest at the start, and the note on the
    loose clipping norm), T/2 (the plateau of global learning), iteration 200 (local
    learning wins at large noise) and T (every claim's end, and Figure 2)."""
    return {max(1, last // 30), last // 2, min(LOCAL_WINS_FROM, last), last}


def curve_iterations(last: int) -> set[int]:
    """The iterations a published synthetic run keeps: a log-plus-linear grid of the
    curves (:data:`CURVE_LOG_POINTS`, :data:`CURVE_EVERY`) and :func:`claim_iterations`."""
    return log_linear_grid(last, CURVE_LOG_POINTS, CURVE_EVERY) | claim_iterations(last)


_CURVE_FIELDS = ("instance", "n_users", "dim", "heterogeneity", "iterations", "batch_size",
                 "noise_multiplier", "clip")
"""What the runs of one panel's curves share (they differ in step size and alpha*Q)."""


@cache
def _walked_panels(tier: str, seed: int) -> frozenset[tuple[str, ...]]:
    """The panels (:data:`_CURVE_FIELDS`) of the settings sweep at its largest noise
    level (at ``tier``, ``seed``)."""
    if tier not in experiment.TIERS:
        return frozenset()
    configs = experiment.setting_configs(settings_setup(tier), seed)
    largest = max(config["noise_multiplier"] for config in configs)
    return frozenset(tuple(str(config[f]) for f in _CURVE_FIELDS) for config in configs
                     if config["noise_multiplier"] == largest)


def walked_step_by_step(config: Mapping[str, Any], tier: str) -> bool:
    """Whether a synthetic run is read at every iteration: the settings table says, per
    setting, from which iteration local learning stays the best at the largest noise
    level, which reads every iteration of the curves at that level. Every run of such a
    panel keeps every row, whatever its step size and alpha*Q (also those of Figure 1a's
    grid the sweep does not run): a curve is the best over step sizes at each iteration,
    which must not be taken over the runs that kept the iteration only."""
    seed = config.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        return True  # a config this rule cannot place keeps every row
    try:
        panel = tuple(str(config[f]) for f in _CURVE_FIELDS)
    except KeyError:
        return True
    return panel in _walked_panels(tier, seed)


SYNTHETIC_ROWS = KeptSteps(
    column="iteration", grid=curve_iterations, reads=claim_iterations,
    whole=walked_step_by_step,
    why="Figure 1a draws the curves (kept on a log-plus-linear grid of iterations); the "
        "claims read iterations T/30, T/2, 200 and T; the settings table reads every "
        "iteration of the settings sweep at its largest noise level")
"""The rows a published run of ``ppsgd-synthetic`` keeps (:mod:`fedlib.published_rows`)."""
