"""The paper tier of the Hu et al. (2020) chapter as the book runs it.

The paper's rounds (K = 2,000 inner x H = 10 outer), features and hyperparameter search,
with five repeats of every point a claim compares, on the grid points the claims read.
Figures 2, 3 and 4 share the runs of the settings they have in common (Figure 4 runs at
tau = 0.5, so its P_drop = 0 and 0.2 are Figure 2(b) and 2(c)). The hours are measured:
a private run takes about 45 CPU-seconds at n_min = 50 (160 at the paper's n_min), a
non-private one about 30.
"""

from __future__ import annotations

from fedlib.grid_cuts import GridCut, PaperGrid
from fedlib.papers.hu2020 import experiment

PAPER_GRID = PaperGrid(
    experiment.tier,
    cuts=(
        GridCut("repeats", 5,
                "the paper averages ten repeats of every point; five give every claim that "
                "compares runs a 95% interval over repeats"),
        GridCut("lams", (1e-3,),
                "the full grid (1e-5 to 10, every xi, five folds) was run at this tier with "
                "the same non-private solver: 1e-5, 1e-4 and 1e-3 tie at a mean validation "
                "error of 0.01093 (the tie goes to the largest, 1e-3), 1e-2 is next (0.01224) "
                "and 0.1 to 10 are far worse (0.072 to 0.371); the cut keeps the winner, "
                "whose five folds are run again, and the quick tier runs the whole grid"),
        GridCut("xis", ("1",),
                "the full grid gave every xi the same validation error at every lambda (the "
                "non-private solver reaches the same optimum whatever the aggregation), so "
                "cross-validation cannot choose xi; the tie goes to the largest, 1"),
        GridCut("taus", (0.0, 0.5),
                "Figure 3's claim compares the spread of the error over tau, private against "
                "non-private; two points (Figure 2(a) and 2(b)) measure a spread"),
        GridCut("drops", (0.0, 0.2, 0.9),
                "Figure 4's claims read the ends of the grid and the paper's optimum 0.2"),
        GridCut("epsilons", (0.01, 100.0),
                "Figure 5's claim compares the error at the ends of the epsilon grid"),
        GridCut("projected", False,
                "the projected-dual variant is read by no claim; the quick tier runs it"),
        GridCut("noise_scales", (0.0,),
                "the continuity run: noise scaled to zero must give the non-private result; "
                "the quick tier traces the factors in between"),
        GridCut("probe_repeats", 2,
                "the probe (other lambdas, the paper's n_min, no noise) asks whether the "
                "private solver learns at all, which two repeats far from the majority-class "
                "error answer; the quick tier runs five"),
    ),
    full_cpu_hours=8.8,
    cut_cpu_hours=0.8,
)
"""The grid of the book's paper tier."""
