"""The paper tier of the Hu et al. (2020) chapter as the book runs it.

The paper's rounds (K = 2,000 inner x H = 10 outer), features and regularisation, with
five repeats of every point a claim compares. Measured here (2 shared cores, under load):
a run takes about 50 CPU-seconds at n_min = 50, private or not, and about 4.3 times that
at the paper's n_min (213 local steps); the cut grid below took 1.54 CPU-hours (115 runs,
0.30 of them the probe's five runs at the paper's n_min, 0.36 the cross-validation of the
chosen lambda's two neighbours and of every xi: 40 runs batched per fold, 1,310 CPU-seconds).
The full grid at ten repeats would take about 10 CPU-hours.

Beside the grid, the paper tier reads a noise trace from stored runs only
(:func:`stored_noise_trace`): the private solver with Theorem 5's noise scaled by factors
between 1 and 0 at the paper's rounds, which the grid's cuts leave out."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from fedlib.papers.hu2020 import experiment
from fedlib.runs.cache import MissingRunsError, stored_only
from fedlib.runs.grid_cuts import GridCut, PaperGrid

PAPER_GRID = PaperGrid(
    experiment.tier,
    cuts=(
        GridCut("repeats", 5,
                "the paper averages ten repeats of every point; five give every claim that "
                "compares runs a 95% interval over repeats"),
        GridCut("lams", (1e-4, 1e-3, 1e-2),
                "the full grid (1e-5 to 10, every xi, five folds) was run at this tier with "
                "the same non-private solver: 1e-5, 1e-4 and 1e-3 tie at a mean validation "
                "error of 0.01093 (the tie goes to the largest, 1e-3), 1e-2 is next (0.01224) "
                "and 0.1 to 10 are far worse (0.072 to 0.371); the cut keeps the winner and "
                "its two neighbours, so that the choice is made inside a grid, and the quick "
                "tier runs the whole grid"),
        GridCut("xis", ("1/m", "0.5", "1"),
                "every xi: the full grid gave every xi the same validation error at every "
                "lambda (the non-private solver reaches the same optimum whatever the "
                "aggregation), so cross-validation cannot choose xi and the tie goes to the "
                "largest, 1; the runs show the tie"),
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
    cut_cpu_hours=1.54,
)
"""The grid of the book's paper tier."""


NOISE_TRACE_SCALES = (0.316, 1e-2, 1e-3, 1e-4)
"""The factors on Theorem 5's noise of the paper tier's noise trace: about 10^-1/2 (the
noise an exact RDP accountant prices near the paper's epsilon = 8), then 10^-2, 10^-3 and
10^-4. The quick tier traces factors at its own 200 rounds; the paper tier's grid runs
factor 0 only (:data:`PAPER_GRID`), and this trace fills the factors between, at the
paper's 20,000 rounds."""
NOISE_TRACE_REPEATS = 3
"""Repeats of every point of the noise trace."""
NOISE_TRACE_TIERS = ("paper",)
"""The tiers that read the noise trace (its runs are the paper tier's)."""
NOISE_TRACE_COST = ("its 12 runs of 20,000 rounds take about 9 CPU-minutes (measured: 533 "
                    "CPU-seconds for the 12 in one solver pass on 2 shared cores; the three at "
                    "Theorem 5's noise are the chapter's own)")
"""What computing the noise trace costs, in words."""


def noise_trace_setup(setup: experiment.HuSetup, lam: float) -> experiment.HuSetup:
    """``setup`` (the paper tier's) whose ``probe`` stage, at the chosen ``lam``, runs the
    noise trace: the private solver at Theorem 5's noise (factor 1, runs the chapter's
    Figure 2(a) shares) and at every factor of :data:`NOISE_TRACE_SCALES`, with
    :data:`NOISE_TRACE_REPEATS` repeats each, at the setup's n_min."""
    return replace(setup, noise_scales=NOISE_TRACE_SCALES, probe_repeats=NOISE_TRACE_REPEATS,
                   probe_lams=(lam,), probe_n_min=None)


def stored_noise_trace(setup: experiment.HuSetup, seed: int, scale: str, *, features: str,
                       lam: float, xi: str, **kwargs: Any) -> tuple[pd.DataFrame | None, str]:
    """The runs of the noise trace (:func:`noise_trace_setup`), read from the stored runs
    only (nothing is computed, whatever the build allows), and ``""``; or None and why not:
    the tier does not read the trace (:data:`NOISE_TRACE_TIERS`), or its runs are not all
    stored. ``kwargs`` go to :func:`~fedlib.papers.hu2020.experiment.run`. To compute the
    runs, call that function on the setup :func:`noise_trace_setup` gives, ``stage="probe"``."""
    if scale not in NOISE_TRACE_TIERS:
        return None, f"it runs at the paper tier only, not at the {scale} tier"
    try:
        with stored_only():
            runs = experiment.run(noise_trace_setup(setup, lam), seed, stage="probe",
                                  features=features, lam=lam, xi=xi, **kwargs)
    except MissingRunsError as error:
        return None, "its runs are not all stored (" + str(error).split(". ", 1)[0] + ")"
    return runs, ""


def noise_trace_absent(reason: str) -> str:
    """The sentence a page shows in place of the noise trace (Markdown), from the reason
    :func:`stored_noise_trace` gives."""
    return f"The noise trace at the paper's rounds is not shown here: {reason}; {NOISE_TRACE_COST}."
