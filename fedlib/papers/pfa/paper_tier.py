"""The paper tier of the PFA chapter as the book runs it.

The paper's grid with three departures: fewer repeats than the paper's five where a
setting's claims are decided without them (:data:`REPEATS` says which run how many),
Figure 4 on the five budget distributions its claims read, and Figure 5 computed on a
GPU. The estimates come from the measured time of the first repeat on one CPU core (a
CNN setting of Figures 3, 4 and 8 0.53 to 0.65 CPU-hours with its aggregators trained as
one batch, about 1.0 with each trained in a process of its own: 460 CPU-seconds an
aggregator on one core of a 16-core Xeon; a logistic-regression setting 0.035, the
authors' setting 0.82 in all: 5.6 CPU-hours for the first seed of everything but Figure
5, 0.5 to 0.65 for each further seed of a CNN setting of Figures 3 and 8 and about 1.7 a
seed for Figure 4's four aggregators that its claims read). Figure 5 dominates on the
CPU: measured from the time of a local step with its seven aggregators as one batch,
about 29-32 CPU-hours on CIFAR-10 (12 on a quieter machine) and 18-21 on IMDb. Its
CIFAR-10 runs are computed on a GPU (``fig5_device``): on one NVIDIA H100, 261-281 s for
a seed's four aggregators that the claim reads and 167 s for the other three. IMDb is
not run (the chapter says why). """

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import torch

from fedlib.papers.pfa import experiment
from fedlib.runs.cache import MissingRunsError, reading_tier, stored_only
from fedlib.runs.grid_cuts import GridCut, PaperGrid
from fedlib.runs.published import stored_runs
from fedlib.sweeps import run_parts, sweep

PAPER_GRID = PaperGrid(
    experiment.tier,
    cuts=(
        GridCut("repeats", 1,
                "the paper averages five repeats of each setting: the settings its claims read "
                "run further seeds (REPEATS; the setup table's repeats say how many of each: "
                "minutes a LogR setting and seed, 0.5 to 0.65 CPU-hours a CNN one), the later "
                "seeds of Figures 4 and 5 with the four aggregators their claims read (Figure "
                "5's CIFAR-10 setting stops at two: every arm its claim compares ends at "
                "chance at both); all aggregators of a setting share its federation, "
                "sampled clients and minibatches"),
        GridCut("distributions", ("uniform", "gauss", "mixgauss1", "mixgauss2", "mixgauss4"),
                "Figure 4's claims read Uniform and Gauss (all aggregators similar) and "
                "the spread-out MixGauss1, 2 and 4 (PFA robust, FedAvg collapses); "
                "Pareto, which no claim reads, and MixGauss3, which only Figure 10's "
                "claim reads (judged at the quick tier), are left out (two CNN settings, "
                "about an hour a seed)"),
        GridCut("fig5_device", "cuda",
                "Figure 5's runs are computed on a GPU (its CIFAR-10 setting takes minutes "
                "of an NVIDIA H100 a seed against about 12 to 30 CPU-hours on 2 cores); "
                "each client's noise then comes from CUDA's generator, another stream of "
                "the same distribution, so a CPU computes other runs of the same setting"),
    ),
    full_cpu_hours=940.0,
    cut_cpu_hours=190.0,
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


REPEATS: dict[str, dict[tuple[str, str], tuple[int, ...]]] = {"paper": {
    ("fig3", "logr"): (1, 2, 3, 4),
    ("fig6", "logr"): (1, 2, 3, 4),
    ("fig8", "logr"): (1, 2, 3, 4),
    ("fig3", "cnn"): (1, 2, 3, 4),
    ("fig8", "cnn"): (1, 2, 3, 4),
    ("fig5", "cnn4"): (1,),
    ("fig4", "cnn"): (1, 2, 3, 4),
}}
"""The settings each tier runs beyond its first seed, per (figure, model), with the
seeds (offsets from the chapter's seed): minutes a LogR setting and seed, 0.5 to 0.65
CPU-hours a CNN one of Figures 3 and 8, about 1.7 CPU-hours a seed for Figure 4's CNN
settings and minutes of a GPU for Figure 5's CIFAR-10 one; the later seeds of Figures 4
and 5 run the aggregators of :data:`REPEAT_AGGREGATORS`. The chapter states the counts
from this table (:func:`repeats_text`). The authors' setting has seeds of its own."""
REPEAT_AGGREGATORS: dict[tuple[str, str], tuple[str, ...]] = {
    ("fig5", "cnn4"): ("fedavg", "weiavg", "pfa", "pfa+"),
    ("fig4", "cnn"): ("fedavg", "weiavg", "pfa", "pfa+"),
}
"""Repeated settings whose later seeds run only some aggregators: the claims of Figures 4
and 5 read FedAvg, WeiAvg, PFA and PFA+ (Minimum, Maximum and NP-FedAvg are drawn at the
first seed only)."""
REPEATS_PART = "the seeds beyond the first"
"""The part of the chapter the repeats are (as left-out notes name it, with the figure
and the model)."""


def repeats_text(setup: experiment.PfaSetup, scale: str) -> str:
    """The tier's repeats in words: its seeds of every setting, and those of the settings
    it runs further (:data:`REPEATS`), e.g. ``1 (5 of the LogR settings of fig3, fig6
    and fig8; 3 of the CNN settings of fig3)``."""
    beyond: dict[tuple[int, str], list[str]] = {}
    for (figure, model), offsets in REPEATS.get(scale, {}).items():
        beyond.setdefault((setup.repeats + len(offsets), model), []).append(figure)
    if not beyond:
        return str(setup.repeats)
    parts = [f"{count} of the {MODEL_NAMES[model]} settings of "
             + (figures[0] if len(figures) == 1
                else ", ".join(figures[:-1]) + " and " + figures[-1])
             for (count, model), figures in beyond.items()]
    return f"{setup.repeats} ({'; '.join(parts)})"


MODEL_NAMES = {"logr": "LogR", "cnn": "CNN", "cnn4": "CIFAR-10 CNN"}
"""How the repeats' text names each model."""


def repeat_parts(scale: str, figures: tuple[str, ...] = experiment.FIGURES) -> list[str]:
    """The repeated settings of ``figures`` at ``scale``, each named ``<figure> <model>``
    (the parts :func:`run_repeats` reads or leaves out one by one)."""
    return [f"{figure} {model}" for figure, model in REPEATS.get(scale, {})
            if figure in figures]


def repeat_configs(setup: experiment.PfaSetup, seed: int, scale: str,
                   figures: tuple[str, ...] = experiment.FIGURES,
                   parts: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The configs of the repeated settings (:data:`REPEATS`) of ``figures`` at the
    tier's later seeds, counted from ``seed``: the tier's own configs at those seeds, none
    where the tier has no repeats. ``parts`` (names of :func:`repeat_parts`) narrows them
    to those settings."""
    wanted = {
        (figure, model): offsets
        for (figure, model), offsets in REPEATS.get(scale, {}).items()
        if figure in figures and (parts is None or f"{figure} {model}" in parts)}
    if not wanted:
        return []
    last = max(max(offsets) for offsets in wanted.values())
    every = experiment.configs(replace(setup, repeats=last + 1), seed,
                               figures=tuple(dict.fromkeys(f for f, _ in wanted)))
    return [c for c in every
            if c["seed"] - seed in wanted.get((c["figure"], c["model"]), ())
            and c["aggregator"] in REPEAT_AGGREGATORS.get((c["figure"], c["model"]),
                                                          (c["aggregator"],))]


def run_repeats(setup: experiment.PfaSetup, seed: int, scale: str,
                figures: tuple[str, ...] = experiment.FIGURES, **kwargs: Any
                ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The runs of :func:`repeat_configs` for ``figures``, one row per run and round with
    the run's config in columns, and the parts left out with the reason (where only
    stored runs are read, a setting whose repeats are not all stored is left out, as
    ``<REPEATS_PART> (<figure> <model>)``)."""
    wanted = repeat_parts(scale, figures)
    if not wanted:
        return pd.DataFrame(), {}

    try:
        runs, left_out = run_parts(
            lambda parts: _sweep_configs(
                repeat_configs(setup, seed, scale, figures, parts), **kwargs),
            wanted)
    except MissingRunsError as error:
        return pd.DataFrame(), {f"{REPEATS_PART} ({', '.join(wanted)})":
                                str(error).split(". ", 1)[0]}
    return runs, {f"{REPEATS_PART} ({part})": why for part, why in left_out.items()}


def stored_figure_runs(scale: str, seed: int, figure: str) -> pd.DataFrame | None:
    """The stored runs of ``figure`` at tier ``scale`` (its grid, :data:`PAPER_GRID`),
    computing nothing: the first seed's and those of its repeats that are stored, one row
    per run and round with the run's config in columns; None when the first seed's runs
    are not all stored (a chapter quotes another tier's numbers this way)."""
    setup = PAPER_GRID.tier(scale)
    first = stored_runs(experiment.run, setup, seed, of_tier=scale, figures=(figure,),
                        progress=False)
    if first is None:
        return None
    with reading_tier(scale):
        repeats, _ = run_repeats(setup, seed, scale, (figure,), progress=False)
    return pd.concat([first, repeats], ignore_index=True) if len(repeats) else first


def run_figures(setup: experiment.PfaSetup, seed: int, figures: tuple[str, ...],
                **kwargs: Any) -> pd.DataFrame:
    """The runs of the settings in ``figures`` (:func:`fedlib.papers.pfa.experiment.run`,
    with the check of :func:`_sweep_configs` for runs made on a GPU)."""
    return _sweep_configs(experiment.configs(setup, seed, figures=figures), **kwargs)


def _gpu_runs_stored(planned: list[dict[str, Any]], **kwargs: Any) -> None:
    """Where torch sees no GPU, check that the runs of ``planned`` made on one (config
    ``device`` = ``"cuda"``) are all stored, raising :class:`MissingRunsError` that says so
    when they are not: such runs cannot be computed here, and computing the others first
    would leave them half done."""
    on_gpu = [c for c in planned if c.get("device", "cpu") == "cuda"]
    if not on_gpu or torch.cuda.is_available():
        return
    try:
        with stored_only():
            sweep(experiment.EXPERIMENT, on_gpu, experiment.run_group,
                  batched=experiment.BATCHED, max_group_size=len(on_gpu),
                  **{**kwargs, "progress": False})
    except MissingRunsError as error:
        raise MissingRunsError(
            f"{str(error).split('. ', 1)[0]}, and they are computed on a GPU "
            "(fig5_device='cuda'), which torch does not see here. Compute them on a "
            "machine with a CUDA device, or set fig5_device='cpu' to compute other runs of "
            "the setting on this CPU") from None


def _sweep_configs(planned: list[dict[str, Any]], **kwargs: Any) -> pd.DataFrame:
    """The runs of ``planned`` as one batched sweep, one row per run and round with the
    run's config in columns. Runs made on a GPU are read from the store where torch sees
    none (:func:`_gpu_runs_stored`)."""
    _gpu_runs_stored(planned, **kwargs)
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
