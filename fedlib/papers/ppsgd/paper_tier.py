"""The paper tier of the PPSGD chapter as the book runs it.

Figure 1a (synthetic) and Figure 1c (EMNIST, linear) run the authors' whole grids;
Figure 1d (EMNIST, CNN) runs the two noise levels its claims read and two step sizes,
at the paper's 20 epochs; the settings sweep runs the quick tier's grid. The hours are
measured: the published paper tier took 2.2 CPU-hours (Figure 1a with the settings
sweep 0.56, Figure 1c 0.38, Figure 1d 1.24, that is 2.2 CPU-minutes per CNN run when
its 34 runs share one vectorized pass); the whole grid's 455 CNN runs at that rate
would take about 17.5.

Beside the grid, the paper tier reads Figure 1d's runs at the largest plotted noise with
the smallest step of the paper's grid from stored runs only (:func:`stored_smallest_step`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pandas as pd

from fedlib.papers.ppsgd import experiment
from fedlib.runs.cache import MissingRunsError, stored_only
from fedlib.runs.grid_cuts import GridCut, PaperGrid

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

REPEATS = {"quick": {"1a": 3, "1c": 3, "1d": 3}, "paper": {"1a": 5, "1c": 5, "1d": 5}}
"""Seeds each tier runs per figure (one where not listed): three of every figure at the
quick tier, five at the paper tier (measured there, a seed beyond the first: Figure 1a
about 230 CPU-seconds, Figure 1c 0.25 to 0.4 CPU-hours, Figure 1d 0.8 to 0.9)."""


def repeats(scale: str, figure: str) -> int:
    """How many seeds the chapter runs of ``figure`` (``1a``, ``1c``, ``1d``) at ``scale``."""
    return REPEATS.get(scale, {}).get(figure, 1)


def repeats_text(scale: str) -> str:
    """How many seeds of each figure the chapter runs at ``scale``, in words."""
    counts: dict[int, list[str]] = {}
    for figure in ("1a", "1c", "1d"):
        counts.setdefault(repeats(scale, figure), []).append(figure)
    parts = []
    for n, figures in counts.items():
        named = (figures[0] if len(figures) == 1
                 else ", ".join(figures[:-1]) + " and " + figures[-1])
        parts.append(f"{n} seed{'s' if n != 1 else ''} of Figure"
                     f"{'s' if len(figures) > 1 else ''} {named}")
    return "; ".join(parts)


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
         for r in range(repeats(scale, figure))], ignore_index=True)


SMALL_STEPS_SIGMAS = (1.0, 3.0)
"""The noise levels of Figure 1d's small-step runs: the two plotted levels between no
noise and sigma = 10, where every level ends at chance."""
SMALL_STEPS = (0.05, 0.1, 0.2, 0.5, 1.0)
"""The step sizes of those runs: the three smallest of the paper's grid, where a noisy
update moves the CNN least, and the two the main grid runs."""
SMALL_STEPS_REPEATS = {"paper": 5}
"""Seeds of the small-step runs per tier (none at the quick tier, whose half epoch is
too short to tell how a small step ends; the paper's five at the paper tier, measured at
0.45 to 0.8 CPU-hours a seed and noise level, the last two seeds on a busy machine)."""


def small_steps_setup(setup: experiment.PpsgdSetup) -> experiment.PpsgdSetup:
    """Figure 1d's CNN at :data:`SMALL_STEPS_SIGMAS` with :data:`SMALL_STEPS`, for the
    plotted personalization levels but local-only (which releases nothing, so its runs
    are those of the main grid at no noise)."""
    levels = tuple(a for a in experiment.EMNIST_FIGURE_ALPHA_Q if a > 0)
    return replace(setup, cnn=replace(setup.cnn, sigmas=SMALL_STEPS_SIGMAS,
                                      panel_sigmas=SMALL_STEPS_SIGMAS, steps=SMALL_STEPS,
                                      alpha_q=levels))


SMALL_STEPS_PART = "Figure 1d's small-step runs"
"""The part of the chapter the small-step runs are (as left-out notes name it)."""


def run_small_steps(setup: experiment.PpsgdSetup, seed: int, scale: str, **kwargs: Any
                    ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The small-step runs of Figure 1d at seeds ``seed``, ``seed + 1``, ... (as many as
    :data:`SMALL_STEPS_REPEATS` gives ``scale``), with a ``seed`` column, and the part
    left out with the reason (:data:`SMALL_STEPS_PART`; an empty frame where the tier runs
    none, or where only stored runs are read and they are not all stored)."""
    count = SMALL_STEPS_REPEATS.get(scale, 0)
    if not count:
        return pd.DataFrame(), {SMALL_STEPS_PART: "run at the paper tier only: the quick "
                                "tier's half epoch is too short to tell where a small step "
                                "ends"}
    extended = small_steps_setup(setup)
    try:
        runs = pd.concat(
            [experiment.run(extended, seed + r, figure="1d", **kwargs).assign(seed=seed + r)
             for r in range(count)], ignore_index=True)
    except MissingRunsError as error:
        return pd.DataFrame(), {SMALL_STEPS_PART: str(error).split(". ", 1)[0]}
    return runs, {}


SMALLEST_STEP = 0.05
"""The step of Figure 1d's runs at the largest plotted noise with the smallest step: the
smallest of the paper's CNN grid, where a noisy update moves the CNN least."""
SMALLEST_STEP_SIGMA = 10.0
"""Their noise level: the largest plotted one, where every level of the main grid ends at
chance and the small-step runs (:data:`SMALL_STEPS_SIGMAS`) do not go."""
SMALLEST_STEP_LEVELS = (0.1, 0.3, math.inf)
"""Their levels of personalization: the two smallest of the paper's grid and global
learning, which the small-alpha claim sets against each other."""
SMALLEST_STEP_SEEDS = {"paper": 3}
"""Seeds of those runs per tier (the paper tier only)."""
SMALLEST_STEP_PART = "Figure 1d at sigma = 10 with the smallest step"
"""The part of the chapter those runs are (as left-out notes name it)."""
SMALLEST_STEP_COST = ("its 9 runs of 20 epochs take about 11 CPU-minutes (measured: 651 "
                      "CPU-seconds, three runs to a pass, on 2 shared cores)")
"""What computing those runs costs, in words."""


def smallest_step_setup(setup: experiment.PpsgdSetup) -> experiment.PpsgdSetup:
    """Figure 1d's CNN at :data:`SMALLEST_STEP_SIGMA` with the step :data:`SMALLEST_STEP`
    alone, at the levels :data:`SMALLEST_STEP_LEVELS` (``setup``: the paper tier's)."""
    return replace(setup, cnn=replace(setup.cnn, sigmas=(SMALLEST_STEP_SIGMA,),
                                      panel_sigmas=(SMALLEST_STEP_SIGMA,),
                                      steps=(SMALLEST_STEP,), alpha_q=SMALLEST_STEP_LEVELS))


def stored_smallest_step(setup: experiment.PpsgdSetup, seed: int, scale: str,
                         **kwargs: Any) -> tuple[pd.DataFrame, dict[str, str]]:
    """The runs of :func:`smallest_step_setup` at seeds ``seed``, ``seed + 1``, ... (as many
    as :data:`SMALLEST_STEP_SEEDS` gives ``scale``), with a ``seed`` column, read from the
    stored runs only (nothing is computed, whatever the build allows), and the part left out
    with the reason (:data:`SMALLEST_STEP_PART`; an empty frame where the tier does not read
    them or they are not all stored). ``kwargs`` go to
    :func:`~fedlib.papers.ppsgd.experiment.run` (``figure="1d"``), which computes them."""
    count = SMALLEST_STEP_SEEDS.get(scale, 0)
    if not count:
        return pd.DataFrame(), {SMALLEST_STEP_PART: f"run at the paper tier only, not at the "
                                f"{scale} tier"}
    extended = smallest_step_setup(setup)
    try:
        with stored_only():
            runs = pd.concat(
                [experiment.run(extended, seed + r, figure="1d", **kwargs).assign(seed=seed + r)
                 for r in range(count)], ignore_index=True)
    except MissingRunsError as error:
        return pd.DataFrame(), {SMALLEST_STEP_PART: "not all stored ("
                                + str(error).split(". ", 1)[0] + ")"}
    return runs, {}


def smallest_step_absent(left_out: dict[str, str]) -> str:
    """The sentence a page shows in place of those runs (Markdown), from the reason
    :func:`stored_smallest_step` gives."""
    why = "; ".join(left_out.values()) or "no runs"
    return (f"The runs of Figure 1d at sigma = {SMALLEST_STEP_SIGMA:g} with the step "
            f"{SMALLEST_STEP:g} are not shown here: {why}; {SMALLEST_STEP_COST}.")
