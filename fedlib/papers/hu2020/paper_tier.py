"""The paper tier of the Hu et al. (2020) chapter as the book runs it.

The paper's rounds (K = 2,000 inner x H = 10 outer), features and regularisation, with
five repeats of every point a claim compares. Measured here (2 shared cores, under load):
a run takes about 50 CPU-seconds at n_min = 50, private or not, and about 4.3 times that
at the paper's n_min (213 local steps); the cut grid below took 1.18 CPU-hours (75 runs,
0.30 of them the probe's five runs at the paper's n_min).
The full grid at ten repeats would take about 10 CPU-hours."""

from __future__ import annotations

from fedlib.papers.hu2020 import experiment
from fedlib.runs.grid_cuts import GridCut, PaperGrid

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
        GridCut("panels", ("a", "b", "c"),
                "every panel of Figure 2, at five repeats; their runs also serve Figures 3 "
                "and 4 and the probe"),
        GridCut("taus", (0.0, 0.5),
                "Figure 3's claim compares the spread of the error over tau, private against "
                "non-private; two points (Figure 2(a) and 2(b)) measure a spread"),
        GridCut("drops", (0.0, 0.2, 0.9),
                "Figure 4 at P_drop = 0 (Figure 2(b)), 0.2 (Figure 2(c), the paper's "
                "optimum) and 0.9 (the far end of its grid): three points judge an interior "
                "minimum and both ends; the seven of the quick tier's grid did not fit the "
                "budget at five repeats"),
        GridCut("epsilons", (0.01, 100.0),
                "Figure 5 at the two ends of its epsilon grid, which its claim compares, at "
                "Figure 4's best drop probability; the quick tier runs all five"),
        GridCut("projected", False,
                "the projected-dual variant is read by no claim; the quick tier runs it"),
        GridCut("noise_scales", (0.0,),
                "the continuity run: noise scaled to zero must give the non-private result; "
                "the quick tier traces the factors in between"),
        GridCut("probe_lams", (1e-3, 1e-2, 0.1),
                "the private solver at lambda = 1e-3 (cross-validated), 1e-2 and 0.1, the "
                "quick tier's probe grid"),
        GridCut("probe_repeats", 5,
                "five repeats of every probe point, as of every other point"),
    ),
    full_cpu_hours=10.0,
    cut_cpu_hours=1.18,
)
"""The grid of the book's paper tier."""
