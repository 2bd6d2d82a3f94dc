"""The paper tier of the DP-Ditto chapter as the book runs it.

The paper's grid on its two MNIST models (the DNN and multinomial logistic regression)
at the paper's rounds, local epoch, clients and learning rate; the CNN panels need
hundreds of CPU-hours (an accelerator) and are not run. The whole grid's estimate comes
from the measured time of one round of every method on one CPU core; the cut grid's is
measured: the DNN groups (27 runs each) take 0.0098 CPU-hours per aggregation on one
thread (T = 10, 20, 40 and 60: 0.10, 0.19, 0.40 and 0.59 CPU-hours), and the whole
cut grid, the logistic-regression panel with it, took 3.66 CPU-hours.
"""

from __future__ import annotations

from fedlib.grid_cuts import GridCut, PaperGrid
from fedlib.papers.dpditto import experiment

PAPER_GRID = PaperGrid(
    experiment.tier,
    cuts=(
        GridCut("panels", ("mnist-dnn", "mnist-mlr"),
                "the CNN panels (Fashion-MNIST about 1,100 and CIFAR-10 about 1,500 "
                "CPU-hours, even with one seed about 880) are beyond a CPU: their claims "
                "are reported as not run, with this reason"),
        GridCut("compare_panels", ("mnist-dnn",),
                "the method comparison of Figures 3 and 4 on the DNN, the paper's MNIST "
                "model there"),
        GridCut("lambda_panels", ("mnist-dnn",),
                "the lambda grid of Figure 5 on the DNN, likewise"),
        GridCut("seeds", (0,),
                "one seed of the DNN runs (the claims read mean curves, not their "
                "spread)"),
        GridCut("panel_seeds", {"mnist-mlr": (0, 1, 2)},
                "the logistic-regression panel, which costs little, keeps the three "
                "seeds"),
    ),
    full_cpu_hours=2640.0,
    cut_cpu_hours=3.7,
    quick_repeats=(
        GridCut("panel_seeds", {},
                "every quick panel runs the tier's three seeds, so that each comparison "
                "reads its run-to-run spread (the quick tier alone gave the DNN and the "
                "Fashion-MNIST CNN one seed)"),
        GridCut("panel_rounds", {"mnist-dnn": (5, 10), "fmnist-cnn": (1,)},
                "the Fashion-MNIST CNN runs one aggregation per seed: a CNN group costs "
                "about 2 CPU-minutes per aggregation, so three seeds at T = 1 and 3 would add "
                "about 17 CPU-minutes to the quick build, while three seeds at T = 1 cost "
                "less than one seed at T = 1 and 3 did; the claims about T on this panel are "
                "then not run at the quick tier (one value of T)"),
    ),
)
"""The grid of the book's paper tier."""
