"""Bietti et al. (2022), PPSGD: a grid of step sizes whose optimum sits on its edge is
extended.

Every curve the chapter draws or its claims read is the best over a grid of step sizes,
and neither end of such a grid bounds the step size (a step is > 0, with no upper bound).
Where the best step of such a curve (the median over its seeds, as the claims read it)
lies on an end of its grid at an iteration the chapter reads, the next step beyond that
end is run for that curve alone: every seed of it, every other field of its configs
unchanged. That is repeated, at most :data:`EXTENSIONS_PER_END` steps beyond each end,
until the best step lies inside the grid or the extensions run out (:func:`extend`). The
steps continue the grid's spacing (:func:`steps_beyond`). The runs are those of the
figure's own runner, with the configs it already accepts, so a run of an extension is
stored and published as any other.

The chapter reads the extensions of the CNN's grids of Figure 1d from stored runs only (a
CNN run of the paper tier takes minutes): ``python -m fedlib.papers.ppsgd.extension --tier
paper`` computes them from the stored runs of those grids (:func:`_main`), and where they
are not stored the chapter says which curves would be extended, to which steps, and at
what cost (:func:`unextended_note`).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from fedlib.papers.ppsgd import experiment
from fedlib.papers.ppsgd.paper_tier import (
    PAPER_GRID,
    SMALL_STEPS_PART,
    SMALL_STEPS_REPEATS,
    SMALL_STEPS_SIGMAS,
    repeat_setup,
    repeats,
    run_repeats,
    run_small_steps,
    small_steps_setup,
)
from fedlib.papers.ppsgd.readouts import (
    EXTENDED,
    EXTENSIONS_PER_END,
    StepEdge,
    _fmt_alpha,
    best_over_steps,
    claim_iterations,
    step_edges,
)
from fedlib.runs.cache import MissingRunsError, set_tier_label, stored_only
from fedlib.runs.errors import DEBUG_FLAG, DEBUG_HELP, run_command
from fedlib.runs.keys import config_text, run_key
from fedlib.sweeps import sweep

__all__ = ["EXTENSIONS_PER_END", "Extension", "Rounds", "extend", "extension_configs",
           "extension_rounds", "kept_iterations", "plan", "ran_beyond",
           "steps_beyond"]

LADDER = (1.0, 2.0, 5.0)
"""The mantissas of a grid spaced 1-2-5 per decade (0.001, 0.002, 0.005, 0.01, ...)."""

LEVEL_LADDER = (1.0, 3.0)
"""The mantissas of the personalization levels' grid, spaced 1-3 per decade (0.1, 0.3, 1,
3, ...: the paper's)."""

ENDS = ("lowest", "highest")

_BEYOND = {"lowest": "beyond_low", "highest": "beyond_high"}
"""The column of :data:`~fedlib.papers.ppsgd.readouts.STEP_EXTENSION` counting the steps run
beyond each end."""

CURVE = ["clip", "noise_multiplier", "alpha_q"]
"""What tells the curves of one figure apart (each has one run per seed and step)."""


def _clean(value: float) -> float:
    """``value`` rounded to 12 significant digits (so that 0.1 * 2 / 4 is 0.05)."""
    return float(f"{value:.12g}")


def _ladder_place(step: float, ladder: Sequence[float] = LADDER) -> tuple[int, int] | None:
    """(index in ``ladder``, power of ten) of ``step``, or None off the ladder."""
    power = math.floor(math.log10(step))
    for shift in (0, 1, -1):  # log10 of 0.001 may land just below -3
        mantissa = step / 10.0 ** (power + shift)
        for i, rung in enumerate(ladder):
            if math.isclose(mantissa, rung, rel_tol=1e-9):
                return i, power + shift
    return None


def steps_beyond(grid: Sequence[float], end: str, count: int = EXTENSIONS_PER_END, *,
                 ladder: Sequence[float] = LADDER, factor: float = 2.0) -> tuple[float, ...]:
    """The ``count`` steps beyond the ``end`` (``lowest`` or ``highest``) of ``grid``, nearest
    first, continuing the grid's spacing: along the ``ladder`` of mantissas per decade
    (1-2-5 by default) where every step of the grid lies on it (two steps: 0.01 -> 0.02,
    0.05; 0.5 -> 0.2, 0.1), else a ``factor`` per step (2 by default: 1.8 -> 3.6, 7.2;
    0.2 -> 0.1, 0.05). Any grid of values > 0 with no bound on either side is continued
    so (the personalization levels too: :data:`LEVEL_LADDER`)."""
    if end not in ENDS:
        raise ValueError(f"end={end!r} is not an end of a grid; use 'lowest' or 'highest'")
    points = sorted(float(s) for s in grid)
    if not points or points[0] <= 0 or not all(math.isfinite(s) for s in points):
        raise ValueError(f"a grid to continue holds finite values > 0, got {grid!r}")
    up = end == "highest"
    places = [_ladder_place(s, ladder) for s in points]
    found: list[float] = []
    step = points[-1] if up else points[0]
    place = places[-1] if up else places[0]
    on_ladder = all(p is not None for p in places)
    for _ in range(count):
        if on_ladder and place is not None:
            i, power = place
            i += 1 if up else -1
            if i == len(ladder):
                i, power = 0, power + 1
            elif i < 0:
                i, power = len(ladder) - 1, power - 1
            place = (i, power)
            step = float(f"{ladder[i]:g}e{power}")
        else:
            step = _clean(step * factor if up else step / factor)
        found.append(step)
    return tuple(found)


def plan(curves: pd.DataFrame, base_steps: Sequence[float],
         iterations: Iterable[int] | None = None) -> pd.DataFrame:
    """The extensions the curves call for: one row per curve of ``curves``
    (:func:`~fedlib.papers.ppsgd.readouts.best_over_steps`, every curve of them taken over the
    grid ``base_steps`` before any extension) and end of its grid that its best step lies on
    at one of ``iterations`` (None: the last; those the curves do not hold are skipped).

    Columns clip, noise_multiplier, alpha_q, end (``lowest`` or ``highest``), iteration (the
    first of ``iterations`` at which the best step lies there), best_step (there), grid (the
    curve's grid as it stands, by its ends), beyond (the steps run beyond that end so far,
    as the curves count them: :data:`~fedlib.papers.ppsgd.readouts.STEP_EXTENSION`; none
    where their runs carry no :data:`~fedlib.papers.ppsgd.readouts.EXTENDED` column) and
    step: the next step to run, NaN where :data:`EXTENSIONS_PER_END` steps were run beyond
    that end and the best step still lies on it (the extensions ran out).
    """
    columns = [*CURVE, "end", "iteration", "best_step", "grid", "beyond", "step"]
    if curves.empty:
        return pd.DataFrame(columns=columns)
    held = set(int(i) for i in curves["iteration"].unique())
    wanted = ([int(curves["iteration"].max())] if iterations is None
              else sorted(int(i) for i in iterations if int(i) in held))
    found: dict[tuple[float, float, float, str], dict[str, Any]] = {}
    for iteration in wanted:
        for row in step_edges(curves, iteration).itertuples():
            for end in ENDS:
                key = (row.clip, row.noise_multiplier, row.alpha_q, end)
                if end not in row.end or key in found:
                    continue
                beyond = int(getattr(row, _BEYOND[end], 0))
                following = steps_beyond(base_steps, end)
                found[key] = {
                    "clip": row.clip, "noise_multiplier": row.noise_multiplier,
                    "alpha_q": row.alpha_q, "end": end, "iteration": iteration,
                    "best_step": row.best_step,
                    "grid": StepEdge(row.best_step, row.step_low, row.step_high,
                                     iteration).grid(), "beyond": beyond,
                    "step": following[beyond] if beyond < len(following) else math.nan}
    return pd.DataFrame(list(found.values()), columns=columns)


def _template(configs: Sequence[Mapping[str, Any]], clip: float, sigma: float,
              alpha_q: float) -> list[dict[str, Any]]:
    """One config per seed of the curve (``clip``, ``sigma``, ``alpha_q``) among ``configs``
    (the first of its steps); a local-only curve run at one noise level only (it releases
    nothing) is that level's."""
    def of(match: Callable[[Mapping[str, Any]], bool]) -> list[dict[str, Any]]:
        seeds: dict[Any, dict[str, Any]] = {}
        for config in configs:
            if (config["clip"] == clip and config["alpha_q"] == alpha_q and match(config)
                    and config["seed"] not in seeds):
                seeds[config["seed"]] = dict(config)
        return list(seeds.values())

    found = of(lambda c: c["noise_multiplier"] == sigma)
    if not found and alpha_q == 0:
        found = of(lambda c: True)
    return found


def extension_configs(planned: pd.DataFrame, base_configs: Sequence[Mapping[str, Any]]
                      ) -> list[dict[str, Any]]:
    """The configs of the steps :func:`plan` calls for (its rows with a step): per row, the
    configs of its curve in ``base_configs`` (one per seed) with the step replaced, nothing
    else; each run once (a local-only curve shared by several noise levels is run once)."""
    found: dict[str, dict[str, Any]] = {}
    for row in planned.dropna(subset=["step"]).itertuples():
        for config in _template(base_configs, row.clip, row.noise_multiplier, row.alpha_q):
            config["step"] = float(row.step)
            found.setdefault(config_text(config), config)
    return list(found.values())


@dataclass
class Extension:
    """What :func:`extend` did for one figure: ``runs``, the figure's runs with those of
    its extensions (the column :data:`~fedlib.papers.ppsgd.readouts.EXTENDED` tells them
    apart); ``extended``, one row per curve and end a step was run beyond (the steps run);
    ``open``, :func:`plan`'s rows left where the extensions stopped (those with a step:
    not run, since not stored; those without: the extensions ran out); ``runs_added``,
    how many runs the extensions hold; ``left_out``, the part left out and why."""

    runs: pd.DataFrame
    extended: pd.DataFrame
    open: pd.DataFrame
    runs_added: int = 0
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def not_run(self) -> pd.DataFrame:
        """The rows of :attr:`open` whose next step was not run (not stored)."""
        return self.open.dropna(subset=["step"])

    @property
    def ran_out(self) -> pd.DataFrame:
        """The rows of :attr:`open` whose extensions ran out."""
        return self.open[self.open["step"].isna()]


def kept_iterations(new: pd.DataFrame, base: pd.DataFrame,
                     within: Sequence[str] = CURVE) -> pd.DataFrame:
    """The rows of the extension runs ``new`` at the iterations the grid's runs ``base``
    hold for the same seed and ``within`` (by default their curve; a published run keeps
    some iterations only, and a curve is the best over its steps at each iteration, which
    must not be taken over runs that kept it alone)."""
    keys = [*within, "seed", "iteration"]
    return new.merge(base[keys].drop_duplicates(), on=keys, how="inner")


def extend(runs: pd.DataFrame, base_configs: Sequence[Mapping[str, Any]], *,
           base_steps: Sequence[float], read: Callable[[pd.DataFrame], pd.DataFrame],
           iterations: Iterable[int] | None = None, experiment_name: str,
           max_group_size: int | None = None, compute: bool = True, part: str = "",
           **sweep_args: Any) -> Extension:
    """Extend the grid of step sizes of every curve of ``runs`` (with a ``seed`` column;
    their configs ``base_configs``, over the grid ``base_steps``) whose best step lies on an
    end of it at one of ``iterations`` (None: the last), one step beyond that end a round,
    until none does or :data:`EXTENSIONS_PER_END` steps were run beyond it (:func:`plan`).

    ``read`` turns runs into the curves to check (the figure's curves, those it draws);
    the runs of a round are swept with the figure's runner (cached and published as any
    run; ``sweep_args`` go to :func:`fedlib.sweeps.sweep`). With ``compute`` False they are
    read from stored runs only: where they are not all stored the extensions stop there,
    with ``part`` left out.
    """
    iterations = None if iterations is None else sorted(set(int(i) for i in iterations))
    base = runs.assign(**{EXTENDED: False})
    done = extension_rounds(
        base, plan_of=lambda found: plan(read(found), base_steps, iterations),
        configs_of=lambda todo: extension_configs(todo, base_configs),
        keep=lambda new: kept_iterations(new, base).assign(**{EXTENDED: True}),
        column="step", experiment_name=experiment_name, max_group_size=max_group_size,
        compute=compute, part=part, sweep_args=sweep_args)
    steps = ran_beyond(done.rounds, [*CURVE, "end"], "step", "steps", lambda v: f"{v:g}")
    return Extension(done.runs, steps, done.planned, len(done.configs), done.left_out)


@dataclass
class Rounds:
    """What :func:`extension_rounds` did: ``runs`` with those it added, the ``configs`` of
    the runs it added, the plan's rows run in each round (``rounds``), the plan left
    (``planned``) and the part left out, with why (``left_out``)."""

    runs: pd.DataFrame
    configs: list[dict[str, Any]]
    rounds: list[pd.DataFrame]
    planned: pd.DataFrame
    left_out: dict[str, str]


def extension_rounds(runs: pd.DataFrame, *, plan_of: Callable[[pd.DataFrame], pd.DataFrame],
                     configs_of: Callable[[pd.DataFrame], list[dict[str, Any]]],
                     keep: Callable[[pd.DataFrame], pd.DataFrame], column: str,
                     experiment_name: str, max_group_size: int | None, compute: bool,
                     part: str, sweep_args: Mapping[str, Any]) -> Rounds:
    """The rounds of an extension of a grid: ``plan_of`` the runs so far says what to run
    next (its rows with a value in ``column``), ``configs_of`` those rows gives the configs,
    one sweep runs them (``keep`` takes the rows of the new runs to add), until the plan
    asks for nothing or :data:`EXTENSIONS_PER_END` rounds ran. With ``compute`` False the
    runs are read from stored runs only, and where they are not all stored the rounds stop
    there, with ``part`` left out."""
    found = runs
    added: list[dict[str, Any]] = []
    rounds: list[pd.DataFrame] = []
    left_out: dict[str, str] = {}
    planned = plan_of(found)
    for _ in range(EXTENSIONS_PER_END):
        todo = planned.dropna(subset=[column])
        if todo.empty:
            break
        configs = configs_of(todo)
        try:
            new = _sweep(configs, experiment_name, max_group_size, compute, sweep_args)
        except MissingRunsError as error:
            left_out = {part or experiment_name: (
                "not stored, and read from stored runs only" if not compute
                else str(error).split(". ", 1)[0])}
            break
        found = pd.concat([found, keep(new)], ignore_index=True)
        added += configs
        rounds.append(todo)
        planned = plan_of(found)
    return Rounds(found, added, rounds, planned, left_out)


def ran_beyond(rounds: Sequence[pd.DataFrame], keys: list[str], column: str, name: str,
               text: Callable[[float], str]) -> pd.DataFrame:
    """One row per ``keys`` of the plan's rows run in ``rounds``: the values of ``column``
    run there, in words (``text`` each, in increasing order), as column ``name``."""
    if not rounds:
        return pd.DataFrame(columns=[*keys, name])
    return (pd.concat(rounds, ignore_index=True).groupby(keys, as_index=False)[column]
            .agg(lambda s: ", ".join(text(v) for v in sorted(set(s))))
            .rename(columns={column: name})[[*keys, name]])


def _sweep(configs: list[dict[str, Any]], experiment_name: str, max_group_size: int | None,
           compute: bool, sweep_args: Mapping[str, Any]) -> pd.DataFrame:
    """The runs of ``configs`` with a ``seed`` column: one sweep over every seed's configs
    (each seed's batched together; the seeds in parallel where the sweep has workers)."""
    seeds = {run_key(c, experiment.run_group.__module__): c["seed"] for c in configs}
    args = dict(experiment_name=experiment_name, configs=configs,
                max_group_size=max_group_size, sweep_args=sweep_args)
    if compute:
        runs = _one_sweep(**args)
    else:
        with stored_only():
            runs = _one_sweep(**args)
    return runs.assign(seed=runs["run_key"].map(seeds))


def _one_sweep(*, experiment_name: str, configs: list[dict[str, Any]],
               max_group_size: int | None, sweep_args: Mapping[str, Any]) -> pd.DataFrame:
    return sweep(experiment_name, configs, experiment.run_group, batched=experiment.BATCHED,
                 max_group_size=max_group_size, **sweep_args)


# The chapter's figures ---------------------------------------------------------------------


def figure_configs(setup: experiment.PpsgdSetup, seed: int, scale: str, figure: str,
                   **kwargs: Any) -> list[dict[str, Any]]:
    """The configs of the runs :func:`~fedlib.papers.ppsgd.paper_tier.run_repeats` makes of
    ``figure``: every seed the tier runs (the later ones on the repeats' grid)."""
    return [config for r in range(repeats(scale, figure))
            for config in experiment.configs(setup if r == 0 else repeat_setup(setup),
                                             seed + r, figure=figure, **kwargs)]


def synthetic_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """The curves of Figure 1a's runs that the chapter draws: at the plots' clipping norm
    every noise and personalization level (Figure 2 draws them all), at the largest
    clipping norm the levels Figure 1a draws."""
    curves = best_over_steps(runs)
    loose = curves["clip"].max()
    keep = (curves["clip"] == experiment.FIGURE_CLIP) | (
        (curves["clip"] == loose) & curves["alpha_q"].isin(experiment.SYNTHETIC_FIGURE_ALPHA_Q))
    return curves[keep]


def accuracy_curves(runs: pd.DataFrame, sigmas: Sequence[float] | None = None,
                    alphas: Sequence[float] | None = None) -> pd.DataFrame:
    """The accuracy curves of EMNIST runs (best step at each evaluation), those at the noise
    levels ``sigmas`` and the levels ``alphas`` (None: every one)."""
    curves = best_over_steps(runs, "accuracy", higher_is_better=True)
    if sigmas is not None:
        curves = curves[curves["noise_multiplier"].isin(sigmas)]
    if alphas is not None:
        curves = curves[curves["alpha_q"].isin(alphas)]
    return curves


def extend_figure(runs: pd.DataFrame, setup: experiment.PpsgdSetup, seed: int, scale: str,
                  figure: str, *, device: str = "cpu", source: str = "leaf-sample",
                  instance: str = experiment.SYNTHETIC_INSTANCE, compute_cnn: bool = False,
                  extra_configs: Sequence[Mapping[str, Any]] = (),
                  **sweep_args: Any) -> Extension:
    """:func:`extend` for the runs of one of the chapter's figures (``1a``, ``1c`` or ``1d``,
    from :func:`~fedlib.papers.ppsgd.paper_tier.run_repeats`), on the curves it draws and
    at the iterations its claims read: Figure 1a (synthetic) at every iteration a claim or
    note reads, every curve at the plots' clipping norm (:func:`synthetic_curves`); Figure
    1c at the end, every curve (Figure 2 draws them all); Figure 1d at the end, the
    plotted noise levels at every level of personalization (its claims read the best of
    sets of levels, drawn or not), from stored runs only (``compute_cnn``: computed where
    not stored, as :func:`_main` does). ``extra_configs``: those of runs ``runs`` holds
    beyond the tier's grid (Figure 1a's levels beyond it,
    :mod:`fedlib.papers.ppsgd.level_extension`), whose curves are extended alike."""
    experiment.check_figure(figure)
    if extra_configs and figure != "1a":
        raise ValueError(f"extra_configs extend Figure 1a's curves only, not Figure {figure}'s")
    if figure == "1a":
        grid = setup.synthetic
        configs = [*figure_configs(setup, seed, scale, figure, device=device,
                                   instance=instance), *extra_configs]
        return extend(runs, configs, base_steps=grid.steps, read=synthetic_curves,
                      iterations=claim_iterations(grid.iterations),
                      experiment_name=experiment.SYNTHETIC_EXPERIMENT,
                      max_group_size=experiment.SYNTHETIC_GROUP_SIZE, **sweep_args)
    model = "linear" if figure == "1c" else "cnn"
    grid = setup.emnist(model)
    configs = figure_configs(setup, seed, scale, figure, device=device, source=source)
    if model == "linear":
        return extend(runs, configs, base_steps=grid.steps, read=accuracy_curves,
                      experiment_name=grid.experiment,
                      max_group_size=experiment.EMNIST_GROUP_SIZE, **sweep_args)
    return extend(runs, configs, base_steps=grid.steps,
                  read=lambda r: accuracy_curves(r, grid.panel_sigmas),
                  experiment_name=grid.experiment,
                  max_group_size=experiment.EMNIST_GROUP_SIZE, compute=compute_cnn,
                  part=f"Figure 1d's extensions of its grid of steps ({scale} tier)",
                  **sweep_args)


def extend_small_steps(small: pd.DataFrame, setup: experiment.PpsgdSetup, seed: int,
                       scale: str, *, device: str = "cpu", source: str = "leaf-sample",
                       compute_cnn: bool = False, **sweep_args: Any) -> Extension:
    """:func:`extend` for Figure 1d's small-step runs (``small``, with a seed column; their
    curves without local-only, which is the main grid's), from stored runs only
    (``compute_cnn``: computed where not stored)."""
    grid = small_steps_setup(setup).cnn
    if small.empty:  # a tier that runs none
        return Extension(small, pd.DataFrame(columns=[*CURVE, "end", "steps"]),
                         plan(pd.DataFrame(), grid.steps))
    seeds = sorted(small["seed"].unique())
    configs = [config for s in seeds
               for config in experiment.configs(small_steps_setup(setup), int(s), figure="1d",
                                                device=device, source=source)]
    return extend(small, configs, base_steps=grid.steps,
                  read=lambda r: accuracy_curves(r, SMALL_STEPS_SIGMAS),
                  experiment_name=grid.experiment,
                  max_group_size=experiment.EMNIST_GROUP_SIZE, compute=compute_cnn,
                  part=f"Figure 1d's small-step extensions ({scale} tier)", **sweep_args)


def recorded_cpu_seconds(runs: pd.DataFrame, experiment_name: str) -> float | None:
    """The median CPU seconds per run that the sweeps recorded when they computed ``runs``
    (their ``run_key`` column), from the published manifest; None where it records none."""
    from fedlib.runs.published import PublishedStore

    if "run_key" not in runs.columns or runs.empty:
        return None
    published = PublishedStore(experiment_name).runs()
    seconds = [float(entry["cpu_seconds"]) for key in runs["run_key"].unique()
               if isinstance((entry := published.get(key, {})).get("cpu_seconds"), int | float)]
    return statistics.median(seconds) if seconds else None


def extension_table(parts: Mapping[str, Extension]) -> pd.DataFrame:
    """One row per figure, curve and end of its grid that a step was run beyond or that
    calls for one: the steps run, and where the best step is left (inside, on the end
    the extensions ran out on, or on an end whose next step is not run)."""
    rows = []
    for figure, ext in parts.items():
        ran = {(r.clip, r.noise_multiplier, r.alpha_q, r.end): r.steps
               for r in ext.extended.itertuples()}
        left = {(r.clip, r.noise_multiplier, r.alpha_q, r.end): r
                for r in ext.open.itertuples()}
        for key in sorted(set(ran) | set(left), key=lambda k: (k[0], k[1], k[2], k[3])):
            clip, sigma, alpha_q, end = key
            state = left.get(key)
            if state is None:
                where = "inside"
            elif math.isnan(state.step):
                where = f"{end} (extensions ran out)"
            else:
                where = f"{end}, next step {state.step:g} not run"
            rows.append({"figure": figure, "C": f"{clip:g}", "sigma": f"{sigma:g}",
                         "alpha*Q": _fmt_alpha(alpha_q), "end": end,
                         "steps run beyond it": ran.get(key, ""),
                         "best step after": where})
    return pd.DataFrame(rows, columns=["figure", "C", "sigma", "alpha*Q", "end",
                                       "steps run beyond it", "best step after"])


def extension_summary(parts: Mapping[str, Extension]) -> str:
    """The extensions of the chapter's figures in words (Markdown): per figure, the curves
    and ends extended, the runs they hold, how many still end on an end."""
    sentences = []
    for figure, ext in parts.items():
        if ext.runs.empty:  # a part the tier does not run
            continue
        if not ext.not_run.empty:
            sentences.append(f"{figure}: the next step beyond {len(ext.not_run)} "
                             f"end{'s' if len(ext.not_run) != 1 else ''} of its curves' grids "
                             "is not run (below).")
        if ext.extended.empty and ext.open.empty:
            sentences.append(f"{figure}: no curve it draws has its best step on an end of its "
                             "grid at an iteration the chapter reads.")
            continue
        if ext.extended.empty:
            continue
        curves = ext.extended[CURVE].drop_duplicates()
        sentences.append(
            f"{figure}: {len(curves)} curve{'s' if len(curves) != 1 else ''} extended beyond "
            f"{len(ext.extended)} end{'s' if len(ext.extended) != 1 else ''} of their grid "
            f"({ext.runs_added} runs); {len(ext.ran_out)} "
            f"end{'s' if len(ext.ran_out) != 1 else ''} still hold the best step after "
            f"{EXTENSIONS_PER_END} steps beyond it (the extensions ran out).")
    return " ".join(sentences)


def unextended_note(parts: Mapping[str, tuple[Extension, pd.DataFrame, str]]) -> str:
    """What extending the grids left unextended would take (Markdown): per part (its
    :class:`Extension`, the runs whose recorded cost prices it, their experiment), the curves
    whose next step was not run, the steps, the runs and their cost at the CPU seconds per
    run recorded for the part's own runs; empty where nothing is left unextended."""
    lines = []
    for figure, (ext, priced, experiment_name) in parts.items():
        todo = ext.not_run
        if todo.empty:
            continue
        seeds = priced["seed"].nunique() if "seed" in priced.columns else 1
        curves = [f"sigma={r.noise_multiplier:g}, alpha*Q={_fmt_alpha(r.alpha_q)}: best step "
                  f"{r.best_step:g} on the {r.end} of {r.grid}, next {r.step:g}"
                  for r in todo.itertuples()]
        # Local-only curves read at several noise levels are one curve of runs.
        configs = todo.assign(noise_multiplier=todo["noise_multiplier"].where(
            todo["alpha_q"] != 0, 0.0))[["alpha_q", "noise_multiplier", "end"]]
        runs = len(configs.drop_duplicates()) * seeds
        per_run = recorded_cpu_seconds(priced, experiment_name)
        total = None if per_run is None else runs * per_run
        cost = ("at a cost not recorded" if total is None else
                f"about {total / 3600:.1f} CPU-hours" if total >= 3600 else
                f"about {total / 60:.0f} CPU-minute{'s' if round(total / 60) != 1 else ''}")
        if total is not None:
            cost += (f" at the {per_run:.0f} CPU-seconds per run recorded for its runs (up to "
                     f"{EXTENSIONS_PER_END} times that where each step beyond is again the "
                     "best and the next is run)")
        why = "; ".join(ext.left_out.values()) or "not run"
        lines.append(f"- {figure}: {len(todo)} curve ends would be extended ({why}): "
                     + "; ".join(curves) + f". That is {runs} runs ({seeds} "
                     + ("seeds each), " if seeds != 1 else "seed), ")
                     + cost + ".")
    return "\n".join(lines)


def _main(argv: list[str] | None = None) -> int:
    """Compute the extensions of Figure 1d's grids of steps (the CNN's, which the chapter
    reads from stored runs only) from the stored runs of those grids."""
    parser = argparse.ArgumentParser(
        prog="python -m fedlib.papers.ppsgd.extension",
        description="Compute the steps beyond the ends of Figure 1d's grids of step sizes "
                    "(the CNN's main grid and, at the paper tier, its small steps) that the "
                    "stored runs of those grids call for. The grids' own runs must be "
                    "stored; publish the new runs with python -m fedlib.runs export.")
    parser.add_argument("--seed", type=int, default=0, help="the chapter's seed")
    parser.add_argument("--tier", default="paper", choices=("smoke", "quick", "paper"),
                        help="the run tier (default: paper)")
    parser.add_argument("--workers", type=int, default=1, help="local processes")
    parser.add_argument("--source", default="leaf-sample", help="the EMNIST source")
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)
    args = parser.parse_args(argv)
    set_tier_label(args.tier)
    setup = PAPER_GRID.tier(args.tier)
    sweep_args = {"workers": args.workers, "progress": True}
    with stored_only():
        runs = run_repeats(setup, args.seed, args.tier, figure="1d", source=args.source,
                           progress=False)
    parts = {"Figure 1d": extend_figure(runs, setup, args.seed, args.tier, "1d",
                                        source=args.source, compute_cnn=True, **sweep_args)}
    with stored_only():
        small, left_out = run_small_steps(setup, args.seed, args.tier, source=args.source,
                                          progress=False)
    if left_out and SMALL_STEPS_REPEATS.get(args.tier):
        raise MissingRunsError(f"{SMALL_STEPS_PART}: {'; '.join(left_out.values())}")
    parts["Figure 1d, small steps"] = extend_small_steps(
        small, setup, args.seed, args.tier, source=args.source, compute_cnn=True, **sweep_args)
    print(extension_table(parts).to_string(index=False))
    print(extension_summary(parts))
    return 0


if __name__ == "__main__":
    sys.exit(run_command(_main))
