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

from fedlib.grid_cuts import GridCut, PaperGrid
from fedlib.papers.ppsgd import experiment

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
