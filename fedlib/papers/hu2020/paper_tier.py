"""The paper tier of the Hu et al. (2020) chapter as the book runs it.

The paper's rounds (K = 2,000 inner x H = 10 outer), features and regularisation, with
five repeats of every point a claim compares, on the points that fitted the chapter's
budget of 45 CPU-minutes. Measured here (2 shared cores, under load): a run takes about
50 CPU-seconds at n_min = 50, private or not, and about 4.3 times that at the paper's
n_min (213 local steps); the cut grid below took about 25 CPU-minutes. The full grid at
ten repeats would take about 10 CPU-hours; the points the claims read at five repeats
(Figures 2-5 as cut in the quick tier, the probe included) about 1.2.
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
        GridCut("panels", ("a", "b"),
                "Figure 2(a) (tau = 0) and 2(b) (tau = 0.5), both at P_drop = 0, fitted the "
                "budget at five repeats; their runs also serve Figure 3 and the probe. Panel "
                "(c) and every P_drop above 0, and with them the claims of Figures 4 and 5, "
                "are not run at this tier: they are NOT-RUN here and judged at the quick "
                "tier"),
        GridCut("taus", (0.0, 0.5),
                "Figure 3's claim compares the spread of the error over tau, private against "
                "non-private; two points (Figure 2(a) and 2(b)) measure a spread"),
        GridCut("drops", (0.0,),
                "Figure 4 at P_drop = 0 only (Figure 2(b)'s runs): none of its claims can be "
                "judged on one point"),
        GridCut("epsilons", (), "no Figure 5 at this tier (it runs at Figure 4's optimum)"),
        GridCut("projected", False,
                "the projected-dual variant is read by no claim; the quick tier runs it"),
        GridCut("probe_n_min", None,
                "the paper's n_min (213 local steps) costs 4.3 times a run at 50 and did not "
                "fit the budget; the quick tier runs it at five repeats"),
        GridCut("noise_scales", (0.0,),
                "the continuity run: noise scaled to zero must give the non-private result; "
                "the quick tier traces the factors in between"),
        GridCut("probe_lams", (1e-3,),
                "the private solver at the cross-validated lambda only (Figure 2(a)'s five "
                "private repeats); lambda = 1e-2 and 0.1 were run with two repeats each "
                "(mean test error 0.495 and 0.491, against the majority class's 0.172; "
                "published, not read by a claim), five did not fit the budget; the quick "
                "tier runs all three at five repeats"),
        GridCut("probe_repeats", 2,
                "the continuity runs (noise scaled to zero) are compared with the "
                "non-private runs run for run, exactly: two pairs show it"),
    ),
    full_cpu_hours=10.0,
    cut_cpu_hours=0.45,
)
"""The grid of the book's paper tier."""
