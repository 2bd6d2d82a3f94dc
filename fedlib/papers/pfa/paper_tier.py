"""The paper tier of the PFA chapter as the book runs it.

The paper's grid with two cuts: one repeat of every CNN setting instead of five (the
LogR settings keep five, :data:`REPEAT_SEEDS`), and Figure 4 on the five budget
distributions its claims read. The estimates come from the measured time of the first
repeat on one CPU core (a CNN setting of Figures 3, 4 and 8 0.53 to 0.65 CPU-hours with
its aggregators trained as one batch, about 1.0 with each trained in a process of its
own: 460 CPU-seconds an aggregator on one core of a 16-core Xeon; a logistic-regression
setting 0.035, the authors' setting 0.82 in all: 5.6 CPU-hours for everything but
Figure 5). Figure 5 dominates: measured from the time of a local step with its seven
aggregators as one batch, about 29-32 CPU-hours on CIFAR-10 (12 on a quieter machine)
and 18-21 on IMDb, which the book does not publish (the chapter says why).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from fedlib.grid_cuts import GridCut, PaperGrid
from fedlib.papers.pfa import experiment
from fedlib.sweeps import MissingRunsError, run_parts, sweep

PAPER_GRID = PaperGrid(
    experiment.tier,
    cuts=(
        GridCut("repeats", 1,
                "the paper averages five repeats of each setting: each CNN setting runs "
                "one here (0.5 to 1 CPU-hour a seed), each LogR setting of Figures 3, 6 "
                "and 8 all five (REPEAT_SEEDS, minutes a seed), so the claims on LogR are "
                "judged over five seeds and those that need the CNN are not run until it "
                "has more than one; all aggregators of a setting share its federation, "
                "sampled clients and minibatches"),
        GridCut("distributions", ("uniform", "gauss", "mixgauss1", "mixgauss2", "mixgauss4"),
                "Figure 4's claims read Uniform and Gauss (all aggregators similar) and "
                "the spread-out MixGauss1, 2 and 4 (PFA robust, FedAvg collapses); "
                "Pareto, which no claim reads, and MixGauss3, which only Figure 10's "
                "claim reads (judged at the quick tier), are left out (two CNN settings, "
                "about an hour a seed)"),
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


REPEAT_MODELS = ("logr",)
"""The models whose settings the paper tier runs beyond its first seed: a LogR setting
costs minutes a seed, a CNN one 0.5 to 1 CPU-hour."""
REPEAT_SEEDS = {"paper": (1, 2, 3, 4)}
"""The LogR settings' seeds beyond the first, per tier (offsets from the chapter's seed):
with the first, the paper's five repeats."""
REPEAT_FIGURES = ("fig3", "fig6", "fig8")
"""The settings repeated: every LogR setting of the figures (the authors' setting has
seeds of its own, Figure 4 runs the CNN at the paper tier)."""
REPEATS_PART = "the LogR settings' seeds beyond the first"
"""The part of the chapter the repeats are (as left-out notes name it)."""


def repeat_configs(setup: experiment.PfaSetup, seed: int, scale: str,
                   figures: tuple[str, ...] = REPEAT_FIGURES) -> list[dict[str, Any]]:
    """The configs of the LogR settings of ``figures`` (those of :data:`REPEAT_FIGURES`) at
    the tier's later seeds (:data:`REPEAT_SEEDS`, counted from ``seed``): the tier's own
    configs at those seeds, none where the tier has no repeats."""
    offsets = REPEAT_SEEDS.get(scale, ())
    figures = tuple(f for f in figures if f in REPEAT_FIGURES)
    if not offsets or not figures:
        return []
    every = experiment.configs(replace(setup, repeats=max(offsets) + 1), seed, figures=figures)
    return [c for c in every
            if c["seed"] - seed in offsets and c["model"] in REPEAT_MODELS]


def run_repeats(setup: experiment.PfaSetup, seed: int, scale: str,
                figures: tuple[str, ...] = experiment.FIGURES, **kwargs: Any
                ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The runs of :func:`repeat_configs` for ``figures``, one row per run and round with
    the run's config in columns, and the parts left out with the reason (where only
    stored runs are read, a figure whose repeats are not all stored is left out)."""
    wanted = tuple(f for f in figures if f in REPEAT_FIGURES)
    if not repeat_configs(setup, seed, scale, wanted):
        return pd.DataFrame(), {}

    try:
        runs, left_out = run_parts(
            lambda parts: _sweep_configs(repeat_configs(setup, seed, scale, parts), **kwargs),
            wanted)
    except MissingRunsError as error:
        return pd.DataFrame(), {f"{REPEATS_PART} ({', '.join(wanted)})":
                                str(error).split(". ", 1)[0]}
    return runs, {f"{REPEATS_PART} ({part})": why for part, why in left_out.items()}


def _sweep_configs(planned: list[dict[str, Any]], **kwargs: Any) -> pd.DataFrame:
    """The runs of ``planned`` as one batched sweep, one row per run and round with the
    run's config in columns."""
    runs = sweep(experiment.EXPERIMENT, planned, experiment.run_group,
                 batched=experiment.BATCHED, max_group_size=len(planned), **kwargs)
    settings = pd.DataFrame(planned)
    settings.insert(0, "run_key", runs.drop_duplicates("run_key")["run_key"].to_numpy())
    return runs.merge(settings, on="run_key", how="left")


FIG5_PART = "fig5"
"""Figure 5's part of the chapter (its runs on both datasets)."""


def fig5_half(dataset: str) -> str:
    """The name under which Figure 5's runs on ``dataset`` are left out."""
    return f"{FIG5_PART} ({dataset})"


def run_figure_5_halves(setup: experiment.PfaSetup, seed: int, left_out: dict[str, str],
                        **kwargs: Any) -> tuple[pd.DataFrame, dict[str, str]]:
    """Where Figure 5 was left out (not all its runs stored), the runs of the dataset whose
    runs are all stored, so that its half is drawn and judged on its own, and ``left_out``
    with Figure 5 replaced by the half that is not (:func:`fig5_half`). Where Figure 5 was
    not left out, or neither half is stored, nothing is read and ``left_out`` is returned
    as it is."""
    if FIG5_PART not in left_out:
        return pd.DataFrame(), left_out
    every = experiment.configs(setup, seed, figures=(FIG5_PART,))
    datasets = [dataset for dataset, _ in experiment.FIG5_SETTINGS]
    try:
        runs, missing = run_parts(lambda parts: _sweep_configs(
            [c for c in every if c["dataset"] in parts], **kwargs), datasets)
    except MissingRunsError:
        return pd.DataFrame(), left_out
    rest = {part: why for part, why in left_out.items() if part != FIG5_PART}
    return runs, {**rest, **{fig5_half(d): why for d, why in missing.items()}}
