"""The paper tier of the PFA chapter as the book runs it.

The paper's grid with two cuts: one repeat of every setting instead of five, and Figure
4 on the five budget distributions its claims read. The estimates come from the
measured time of the first repeat on one CPU core (a CNN setting of Figures 3, 4 and 8
0.53 to 0.65 CPU-hours, a logistic-regression one 0.035, the authors' setting 0.82 in
all: 5.6 CPU-hours for everything but Figure 5). Figure 5 dominates: measured from the
time of a local step with its seven aggregators as one batch, about 29-32 CPU-hours on
CIFAR-10 (12 on a quieter machine) and 18-21 on IMDb, which the book does not publish
(the chapter says why).
"""

from __future__ import annotations

from fedlib.grid_cuts import GridCut, PaperGrid
from fedlib.papers.pfa import experiment

PAPER_GRID = PaperGrid(
    experiment.tier,
    cuts=(
        GridCut("repeats", 1,
                "the paper averages five repeats of each setting; every claim compares "
                "aggregators within one setting, and all aggregators of a setting share "
                "its federation, sampled clients and minibatches, so one repeat (the "
                "chapter's seed) answers each comparison, without the spread over "
                "repeats"),
        GridCut("distributions", ("uniform", "gauss", "mixgauss1", "mixgauss2", "mixgauss4"),
                "Figure 4's claims read Uniform and Gauss (all aggregators similar) and "
                "the spread-out MixGauss1, 2 and 4 (PFA robust, FedAvg collapses); "
                "Pareto and MixGauss3, which no claim reads, are left out (two CNN "
                "settings, about an hour)"),
    ),
    full_cpu_hours=940.0,
    cut_cpu_hours=188.0,
    quick_repeats=(
        GridCut("repeats", 3,
                "every claim compares aggregators (or settings) over repeats: three seeds "
                "of every setting give each comparison its run-to-run spread"),
        GridCut("authors.seeds", (10, 1, 4),
                "the authors' three seeds (their draws with four, one and three budgets "
                "near 10), as at the paper tier: their ordering is judged over them"),
    ),
)
"""The grid of the book's paper tier (the authors' setting, ``authors``, is run whole),
and the repeats of its quick tier."""
