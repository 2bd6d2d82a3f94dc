"""Bietti et al. (2022), PPSGD: a grid of personalization levels whose best strictly
personalized level sits on its edge is extended.

The synthetic panel of Figure 2 reads, at every private noise level, the best strictly
personalized level (0 < alpha*Q < inf) against local and global learning. Neither end of
those levels bounds them: levels run on towards 0 (local learning is their limit, not a
level of them) and towards inf. Where the best of them (by the mean over seeds of the
final log10 excess risk, as the claim reads it:
:func:`~fedlib.papers.ppsgd.readouts.synthetic_final`) lies on an end of the
levels at a noise level, the next level beyond that end is run at that noise level and
clipping norm alone: every seed and step size of the grid's curve on that end, with only
alpha*Q replaced. That is repeated, at most
:data:`~fedlib.papers.ppsgd.extension.EXTENSIONS_PER_END` levels beyond each end, until
the best level lies inside or the extensions run out (:func:`extend_levels`). The levels
continue the paper's 1-3 spacing (:func:`levels_beyond`: 0.1 -> 0.03, 0.01, ...).

The runs are those of the figure's own runner, stored and published as any other; the
step sizes of their curves are extended afterwards like any curve's
(:func:`fedlib.papers.ppsgd.extension.extend_figure`, given :attr:`LevelExtension.configs`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from fedlib.papers.ppsgd import experiment
from fedlib.papers.ppsgd.extension import (
    ENDS,
    EXTENSIONS_PER_END,
    LEVEL_LADDER,
    extension_rounds,
    figure_configs,
    kept_iterations,
    ran_beyond,
    steps_beyond,
    synthetic_curves,
)
from fedlib.papers.ppsgd.readouts import _fmt_alpha, best_arm, synthetic_final, values
from fedlib.runs.keys import config_text

__all__ = ["LevelExtension", "extend_levels", "extend_synthetic_levels", "level_configs",
           "level_plan", "level_table", "levels_beyond"]

PLAN_COLUMNS = ["clip", "noise_multiplier", "end", "best_level", "levels", "beyond",
                "alpha_q"]


def levels_beyond(levels: Sequence[float], end: str, count: int = EXTENSIONS_PER_END
                  ) -> tuple[float, ...]:
    """The ``count`` strictly personalized levels beyond the ``end`` (``lowest`` or
    ``highest``) of the strictly personalized ones among ``levels`` (0 and inf, local and
    global learning, are left out), nearest first, along the 1-3 spacing of the paper's
    grid (:data:`~fedlib.papers.ppsgd.extension.LEVEL_LADDER`; a factor of 3 per level off
    it): 0.1 -> 0.03, 0.01, 0.003, 0.001; 100 -> 300, 1000, 3000, 10000."""
    inside = [float(a) for a in levels if 0 < a < math.inf]
    if not inside:
        raise ValueError(f"no strictly personalized level (0 < alpha*Q < inf) in {levels!r} "
                         "to continue")
    return steps_beyond(inside, end, count, ladder=LEVEL_LADDER, factor=3.0)


def level_plan(end_values: pd.DataFrame, base_levels: Sequence[float]) -> pd.DataFrame:
    """The level extensions the final values ``end_values``
    (:func:`~fedlib.papers.ppsgd.readouts.synthetic_final`) call for: one
    row per private noise level (and clipping norm) whose best strictly personalized level
    (lowest mean log10 excess risk over seeds) lies on an end of the strictly personalized
    levels it holds there.

    Columns clip, noise_multiplier, end, best_level, levels (those held there, in words),
    beyond (the levels run beyond that end of ``base_levels`` so far) and alpha_q: the
    next level to run, NaN where :data:`~fedlib.papers.ppsgd.extension.EXTENSIONS_PER_END`
    levels were run beyond that end and the best still lies on it (the extensions ran out).
    """
    rows = []
    base = sorted(float(a) for a in base_levels if 0 < a < math.inf)
    if end_values.empty or not base:
        return pd.DataFrame(rows, columns=PLAN_COLUMNS)
    for clip in sorted(end_values["clip"].unique()):
        at_clip = end_values[end_values["clip"] == clip]
        for sigma in sorted(s for s in at_clip["noise_multiplier"].unique() if s > 0):
            held = sorted(float(a) for a in at_clip.loc[at_clip["noise_multiplier"] == sigma,
                                                        "alpha_q"].unique()
                          if 0 < a < math.inf)
            if len(held) < 2:
                continue
            arms = {a: values(at_clip, "excess_risk", sigma, a, log=True) for a in held}
            best = best_arm(arms, higher_is_better=False)
            for end, edge in zip(ENDS, (held[0], held[-1]), strict=True):
                if best != edge:
                    continue
                beyond = sum(a < base[0] for a in held) if end == "lowest" else sum(
                    a > base[-1] for a in held)
                following = levels_beyond(base, end)
                rows.append({"clip": float(clip), "noise_multiplier": float(sigma),
                             "end": end, "best_level": best,
                             "levels": ", ".join(_fmt_alpha(a) for a in held),
                             "beyond": beyond,
                             "alpha_q": following[beyond] if beyond < len(following)
                             else math.nan})
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)


def level_configs(planned: pd.DataFrame, base_configs: Sequence[Mapping[str, Any]],
                  base_levels: Sequence[float]) -> list[dict[str, Any]]:
    """The configs of the levels :func:`level_plan` calls for (its rows with a level): per
    row, every config of ``base_configs`` (every seed and step) at its clipping norm and
    noise level and at the end of the strictly personalized ``base_levels`` it extends,
    with alpha*Q replaced by the new level, nothing else."""
    base = sorted(float(a) for a in base_levels if 0 < a < math.inf)
    found: dict[str, dict[str, Any]] = {}
    for row in planned.dropna(subset=["alpha_q"]).itertuples():
        edge = base[0] if row.end == "lowest" else base[-1]
        for config in base_configs:
            if (config["clip"] == row.clip and config["noise_multiplier"] == row.noise_multiplier
                    and config["alpha_q"] == edge):
                new = {**config, "alpha_q": float(row.alpha_q)}
                found.setdefault(config_text(new), new)
    return list(found.values())


@dataclass
class LevelExtension:
    """What :func:`extend_levels` did: ``runs``, the figure's runs with those of the new
    levels; ``configs``, the configs of those runs (the step extension takes their curves
    from them); ``extended``, one row per clipping norm, noise level and end that levels
    were run beyond (the levels run); ``open``, :func:`level_plan`'s rows left where the
    extensions stopped (with a level: not run, since not stored; without: they ran out);
    ``left_out``, the part left out and why."""

    runs: pd.DataFrame
    configs: list[dict[str, Any]]
    extended: pd.DataFrame
    open: pd.DataFrame
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def runs_added(self) -> int:
        return len(self.configs)


def extend_levels(runs: pd.DataFrame, base_configs: Sequence[Mapping[str, Any]], *,
                  base_levels: Sequence[float], read: Callable[[pd.DataFrame], pd.DataFrame],
                  experiment_name: str, max_group_size: int | None = None,
                  compute: bool = True, part: str = "", **sweep_args: Any) -> LevelExtension:
    """Extend the strictly personalized levels of ``runs`` (with a ``seed`` column; their
    configs ``base_configs``, over the levels ``base_levels``) wherever the best of them
    lies on an end, one level beyond that end a round (:func:`level_plan` on ``read`` of
    the runs), until none does or the extensions run out. The runs of a round are swept
    with the figure's runner (``sweep_args`` go to :func:`fedlib.sweeps.sweep`); with
    ``compute`` False they are read from stored runs only, and where they are not all
    stored the extensions stop there, with ``part`` left out."""
    done = extension_rounds(
        runs, plan_of=lambda found: level_plan(read(found), base_levels),
        configs_of=lambda todo: level_configs(todo, base_configs, base_levels),
        keep=lambda new: kept_iterations(new, runs, ["clip", "noise_multiplier"]),
        column="alpha_q",
        experiment_name=experiment_name, max_group_size=max_group_size, compute=compute,
        part=part, sweep_args=sweep_args)
    ran = ran_beyond(done.rounds, ["clip", "noise_multiplier", "end"], "alpha_q",
                     "levels run", _fmt_alpha)
    return LevelExtension(done.runs, done.configs, ran, done.planned, done.left_out)


def extend_synthetic_levels(runs: pd.DataFrame, setup: experiment.PpsgdSetup, seed: int,
                            scale: str, *, device: str = "cpu",
                            instance: str = experiment.SYNTHETIC_INSTANCE,
                            **sweep_args: Any) -> LevelExtension:
    """:func:`extend_levels` for Figure 1a's runs (from
    :func:`~fedlib.papers.ppsgd.paper_tier.run_repeats`), on what the synthetic panel of
    Figure 2 reads (:func:`~fedlib.papers.ppsgd.readouts.synthetic_final` of the curves
    the chapter draws), computed where not stored (a synthetic run takes a fraction of a
    CPU-second)."""
    configs = figure_configs(setup, seed, scale, "1a", device=device, instance=instance)
    return extend_levels(runs, configs, base_levels=setup.synthetic.alpha_q,
                         read=lambda r: synthetic_final(synthetic_curves(r)),
                         experiment_name=experiment.SYNTHETIC_EXPERIMENT,
                         max_group_size=experiment.SYNTHETIC_GROUP_SIZE,
                         part=f"Figure 2's extensions of the personalization levels "
                              f"({scale} tier)", **sweep_args)


def level_table(ext: LevelExtension) -> pd.DataFrame:
    """One row per clipping norm, noise level and end of the strictly personalized levels
    that levels were run beyond or that calls for one: the levels run, and where the best
    level is left (inside, on the end the extensions ran out on, or on an end whose next
    level is not run)."""
    ran = {(r["clip"], r["noise_multiplier"], r["end"]): r["levels run"]
           for r in ext.extended.to_dict("records")}
    left = {(r.clip, r.noise_multiplier, r.end): r for r in ext.open.itertuples()}
    rows = []
    for key in sorted(set(ran) | set(left)):
        clip, sigma, end = key
        state = left.get(key)
        if state is None:
            where = "inside"
        elif math.isnan(state.alpha_q):
            where = f"{_fmt_alpha(state.best_level)}, the {end} (extensions ran out)"
        else:
            where = (f"{_fmt_alpha(state.best_level)}, the {end}; the next level, "
                     f"{_fmt_alpha(state.alpha_q)}, not run")
        rows.append({"C": f"{clip:g}", "sigma": f"{sigma:g}", "end": end,
                     "levels run beyond it": ran.get(key, ""), "best level after": where})
    return pd.DataFrame(rows, columns=["C", "sigma", "end", "levels run beyond it",
                                       "best level after"])
