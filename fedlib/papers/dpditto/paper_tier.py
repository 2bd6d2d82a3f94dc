"""The paper tier of the DP-Ditto chapter as the book runs it.

The paper's grid on its two MNIST models (the DNN and multinomial logistic regression)
at the paper's rounds, local epoch, clients and learning rate; the CNN panels need
hundreds of CPU-hours (an accelerator) and are not run. The whole grid's estimate comes
from the measured time of one round of every method on one CPU core; the cut grid's is
measured: the DNN groups (27 runs each) take 0.0098 CPU-hours per aggregation on one
thread (T = 10, 20, 40 and 60: 0.10, 0.19, 0.40 and 0.59 CPU-hours), and the whole
cut grid, the logistic-regression panel with it, took 4.0 CPU-hours (3.66 with that
panel's first three seeds). The DNN's repeats (:func:`repeat_setup`: seeds 1 to 4 at
T = 10, 20, 40, 60 and 80) took 9.16 CPU-hours (T = 10 to 60: 5.98, of which 2.99 for
seeds 1 and 2 and 5,415 and 5,368 CPU-seconds for seeds 3 and 4; T = 80: 3.18); the
logistic-regression panel's seeds 3 and 4, 1,271 CPU-seconds together.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from fedlib.papers.dpditto import experiment
from fedlib.runs.cache import MissingRunsError
from fedlib.runs.grid_cuts import GridCut, PaperGrid

PAPER_GRID = PaperGrid(
    experiment.tier,
    cuts=(
        GridCut("panels", ("mnist-dnn", "mnist-mlr"),
                "the CNN panels (Fashion-MNIST about 1,800 and CIFAR-10 about 2,500 "
                "CPU-hours over five seeds, even with one seed about 880) are beyond a CPU: "
                "their claims are reported as not run, with this reason"),
        GridCut("compare_panels", ("mnist-dnn",),
                "the method comparison of Figures 3 and 4 on the DNN, the paper's MNIST "
                "model there"),
        GridCut("lambda_panels", ("mnist-dnn",),
                "the lambda grid of Figure 5 on the DNN, likewise"),
        GridCut("seeds", (0,),
                "one seed of the DNN's whole T grid; its seeds 1 to 4 run at T = 10, 20, 40, "
                "60 and 80 only (REPEAT_ROUNDS, 2.3 CPU-hours a seed), and the claims read "
                "those T over the five seeds"),
        GridCut("panel_seeds", {"mnist-mlr": (0, 1, 2, 3, 4)},
                "the logistic-regression panel, which costs little (about 0.18 CPU-hours "
                "a seed over its whole T grid), runs five seeds"),
    ),
    full_cpu_hours=4400.0,
    cut_cpu_hours=4.0,
    quick_repeats=(
        GridCut("panel_seeds", {},
                "every quick panel runs the tier's three seeds, so that each comparison "
                "reads its run-to-run spread (the quick tier alone gave the DNN and the "
                "Fashion-MNIST CNN one seed)"),
        GridCut("panel_rounds", {"mnist-dnn": (5, 10), "fmnist-cnn": (1,),
                                 "mnist-mlr": (5, 10, 20, 40, 80, 160)},
                "MLR, the panel the quick tier compares the methods and sweeps lambda on, "
                "runs T = 40, 80 and 160 beyond the tier's 5, 10 and 20: its best T for APPLE, "
                "for the large lambdas and for the loss at lambda = 0.05 sat on T = 20, the "
                "top of the tier's grid (an MLR group costs under a CPU-second); "
                "the Fashion-MNIST CNN runs one aggregation per seed: a CNN group costs "
                "about 2 CPU-minutes per aggregation, so three seeds at T = 1 and 3 would add "
                "about 17 CPU-minutes to the quick build, while three seeds at T = 1 cost "
                "less than one seed at T = 1 and 3 did; the claims about T on this panel are "
                "then not run at the quick tier (one value of T)"),
    ),
)
"""The grid of the book's paper tier."""

REPEAT_PANEL = "mnist-dnn"
"""The panel whose runs are repeated beyond the tier's one seed: the DNN, the paper's MNIST
model of Figures 3, 4, 6 and 7 (the logistic-regression panel already runs three seeds)."""
REPEAT_SEEDS = {"paper": (1, 2, 3, 4)}
"""The DNN's seeds beyond the first, per tier (as offsets from the chapter's seed)."""
REPEAT_ROUNDS = (10, 20, 40, 60, 80)
"""The T at which the DNN's later seeds run: the five smallest of the grid. T = 10 to 60
took 1.5 CPU-hours a seed as measured (5,368 and 5,415 CPU-seconds for seeds 3 and 4) of
the 3.0 the whole T grid costs (0.0098 CPU-hours per aggregation of a group); T = 80 was
added because the large lambdas of Figure 6 and the loss of the smallest lambdas in
Figure 7 were best at T = 60, the largest T the seeds shared (an open edge): 3.18
CPU-hours for the four seeds (2,845 to 2,905 CPU-seconds a seed, one group of 27 runs).
The claims read T where every seed ran
(:func:`fedlib.papers.dpditto.readouts.common_rounds`); T = 100 keeps the first seed and is
drawn, not judged (about 1 CPU-hour a seed more). Where the judged optima sit on T = 80,
the first seed's T = 100 shows whether one T more would place them
(:func:`fedlib.papers.dpditto.readouts.past_judged_rounds`, on the page)."""
REPEATS_PART = "the DNN's seeds beyond the first"
"""The part of the chapter the repeats are (as left-out notes name it)."""


def repeat_setup(setup: experiment.DittoSetup, scale: str) -> experiment.DittoSetup | None:
    """The DNN's runs at the tier's later seeds (:data:`REPEAT_SEEDS`) and
    :data:`REPEAT_ROUNDS`; None where the tier runs none or does not run the DNN."""
    seeds = REPEAT_SEEDS.get(scale, ())
    if not seeds or REPEAT_PANEL not in setup.panels:
        return None
    return replace(setup, panels=(REPEAT_PANEL,), seeds=seeds, rounds=REPEAT_ROUNDS,
                   panel_rounds={}, panel_seeds={}, panel_lambdas={
                       k: v for k, v in setup.panel_lambdas.items() if k == REPEAT_PANEL},
                   train_cap={k: v for k, v in setup.train_cap.items() if k == REPEAT_PANEL},
                   compare_panels=tuple(p for p in setup.compare_panels if p == REPEAT_PANEL),
                   lambda_panels=tuple(p for p in setup.lambda_panels if p == REPEAT_PANEL))


def run_repeats(setup: experiment.DittoSetup, seed: int, scale: str, **kwargs: Any
                ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The runs of :func:`repeat_setup` (seeds counted from ``seed``) and the part left out
    with the reason: an empty frame where the tier runs none, or where only stored runs are
    read and they are not all stored."""
    repeat = repeat_setup(setup, scale)
    if repeat is None:
        return pd.DataFrame(), {}
    try:
        return experiment.run(repeat, seed, **kwargs), {}
    except MissingRunsError as error:
        return pd.DataFrame(), {REPEATS_PART: str(error).split(". ", 1)[0]}


LOW_EPSILON = 1.0
"""The smallest budget of the (inferred) grid: the paper's "high privacy requirement"
under which it says DP-Ditto keeps its accuracy and fairness and the baselines degrade."""
LOW_EPSILON_PANELS = ("mnist-dnn", "mnist-mlr")
"""Where the eps=1 runs go: the paper's MNIST model, else the model a tier reads its
MNIST claims on."""


LOW_EPSILON_PLAN = {"paper": ((5, 10, 20, 40, 60, 80), (0, 1, 2, 3, 4))}
"""Where a tier runs the eps=1 section on other T than its grid: (T, seed offsets) of the
eps=1 panel. At the paper tier, T = 10, 20 and 40 on the DNN's five seeds: 15 to 17
CPU-minutes a seed as measured (947, 1,028, 985, 930 and 941 CPU-seconds, 1.34 CPU-hours
for the 135 runs); T = 5, below the grid, because the large lambdas of Figure 6 are best
at T = 10 there, the grid's smallest, an open edge (135 runs more, an hour of wall time on
2 cores shared with other runs); T = 60, above it, because DP-APPLE was best at T = 40,
the grid's largest (45 runs at eps=1, the others of T = 60 being the repeats' runs at
the compared budget: 1.11 CPU-hours recorded for the five seeds); T = 80 because it was
best at T = 60 then (45 runs likewise: 2,994 CPU-seconds recorded for the five seeds,
578 to 624 a seed), where its best T became interior."""


def low_epsilon_setup(setup: experiment.DittoSetup, scale: str) -> experiment.DittoSetup:
    """``setup`` with the method comparison at (eps=1, the smaller compared budget) and
    Figures 6 and 7 at eps=1: the same runs' configs, planned at the smallest budget, on
    the T and seeds of :data:`LOW_EPSILON_PLAN` where ``scale`` has a plan there."""
    low = replace(setup, compare_epsilons=(LOW_EPSILON, min(setup.compare_epsilons)),
                  fig6_epsilon=LOW_EPSILON)
    if scale not in LOW_EPSILON_PLAN:
        return low
    rounds, seeds = LOW_EPSILON_PLAN[scale]
    panel = low_epsilon_panel(low)
    return replace(low, panel_rounds={**low.panel_rounds, panel: rounds},
                   panel_seeds={**low.panel_seeds, panel: seeds})


def low_epsilon_panel(setup: experiment.DittoSetup) -> str:
    """The panel the eps=1 runs are planned on: the first of :data:`LOW_EPSILON_PANELS`
    the tier both compares the methods and sweeps lambda on (the DNN at the paper tier,
    MLR at the quick tier)."""
    for panel in LOW_EPSILON_PANELS:
        if panel in setup.compare_panels and panel in setup.lambda_panels:
            return panel
    raise ValueError(f"the tier compares the methods on {setup.compare_panels} and sweeps "
                     f"lambda on {setup.lambda_panels}: the eps=1 section needs one of "
                     f"{LOW_EPSILON_PANELS} in both")
