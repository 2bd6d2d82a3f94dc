"""The PFA chapter's tuning protocol: each method's learning rate (and PFA's and PFA+'s
projection dimension k) chosen from the paper's grids on validation data, and the paper
tier run at the chosen values.

Section 5.1 of the paper explores the learning rates of :data:`LR_AXIS` and the
dimensions of :data:`K_AXIS` "for the best results", for every method. The chapter does
the same on each setting whose claims it judges (:data:`SETTINGS`, in the order they
are tuned: the settings that decide the most verdicts first), within the declared
:data:`BUDGET`:

1. every method at every rate of the grid (PFA and PFA+ at k = 1);
2. PFA and PFA+ at every k of the grid, at their chosen rate; then the rates again at
   the chosen k where it moved, until each method's choice is on a line whose whole
   grid was tried (a coordinate search);
3. a choice on an edge of the grid is extended past it (the rate: at most four values,
   doubling or halving: the quick tier's short schedule puts the best rates of the
   logistic-regression settings past two, and four make every one of them interior; k:
   doubling up to its bound, the model's largest layer, where PFA and PFA+ project
   nothing and are WeiAvg, whose runs stand for theirs there), unless the edge is a
   bound of the hyperparameter (k = 1).

A setting whose tuning is not complete, or whose choice still sits on an open edge, is
*untuned*: its claims are not testable, and the chapter says why.

``python -m fedlib.papers.pfa.tuned [setting ...]`` runs the tuning of the settings
named (all of :data:`SETTINGS` by default) and then their paper tier at the chosen
values, resumable; ``--list`` prints each setting with its progress.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
import torch

from fedlib.papers.pfa import experiment, tuning
from fedlib.papers.pfa.paper_tier import PAPER_GRID, REPEAT_AGGREGATORS, _sweep_configs
from fedlib.runs.cache import MissingRunsError, set_tier_label, stored_only
from fedlib.runs.errors import DEBUG_FLAG, DEBUG_HELP, run_command
from fedlib.runs.gaps import unrecorded
from fedlib.runs.keys import config_text
from fedlib.runs.tuning import Axis, TuningBudget, choose_one, next_points, open_edges

BUDGET = TuningBudget(round_share=0.3, seeds=(100,), n_validation=5000)
"""A tuning run trains the first 30% of the paper's rounds on one seed (the chapter's
seed + 100, none of the seeds the verdicts read), scored on 5,000 training examples no
client holds."""
LR_AXIS = Axis("lr", experiment.PAPER_LR_GRID, factor=2.0, max_extensions=4)
K_AXIS = Axis("k", experiment.PAPER_K_GRID, factor=2.0, lowest=1, max_extensions=2)
"""k as the paper gives it; a setting's axis (:func:`k_axis`) adds its model's bound."""
START = {"lr": experiment.PAPER_LR_GRID[0], "k": 1}
"""Where the search starts: the rate is searched first (its whole grid), at k = 1."""
TUNED_AGGREGATORS = experiment.MAIN_AGGREGATORS
PROJECTED = ("pfa", "pfa+")
NO_PROJECTION = "weiavg"
"""What PFA and PFA+ are at their largest k. Each layer is projected on min(k, its size)
directions, so once k reaches the model's largest layer every projection is the identity
and both aggregate as WeiAvg does (the epsilon-weighted mean of every update): a tuning
run at that bound is WeiAvg's run at the same rate."""


@functools.cache
def largest_layer(model: str) -> int:
    """The size of the largest parameter tensor of the paper's ``model``: the k past which
    PFA and PFA+ project nothing (the global random state is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        return max(p.numel() for p in experiment.build_model(model, 0).parameters())


def k_axis(where: Setting) -> Axis:
    """The setting's k: the paper's grid, extended by doubling up to its natural bound,
    the model's largest layer (:data:`NO_PROJECTION`)."""
    top = largest_layer(where.model)
    steps = max(K_AXIS.max_extensions, math.ceil(math.log2(top / max(K_AXIS.values))))
    return replace(K_AXIS, highest=top, max_extensions=steps)


def axes(aggregator: str, where: Setting) -> tuple[Axis, ...]:
    """The hyperparameters tuned for ``aggregator`` in the setting ``where``: the rate,
    and k for PFA and PFA+."""
    return (LR_AXIS, k_axis(where)) if aggregator in PROJECTED else (LR_AXIS,)


def _arm_table(table: pd.DataFrame, aggregator: str, where: Setting) -> pd.DataFrame:
    """The tuning runs one method's choice reads: its own (WeiAvg's: those its own search
    asked for, :func:`_own_search`), and for PFA and PFA+ those of
    WeiAvg's runs that stand for theirs at the bound of k (:data:`NO_PROJECTION`) where
    their search reached it: at each rate tried on the rung below the bound (the bound is
    that rung's neighbour), and at every rate once the choice is at the bound (the search
    then tries the bound's whole line of rates)."""
    mine = table[table["aggregator"] == aggregator]
    if aggregator == NO_PROJECTION:
        return _own_search(mine, axes(aggregator, where))
    if aggregator not in PROJECTED or mine.empty:
        return mine
    axis = k_axis(where)
    below, _ = axis.neighbours(axis.highest)
    limit = table[table["aggregator"] == NO_PROJECTION].assign(aggregator=aggregator,
                                                                k=axis.highest)
    reached = limit[limit["lr"].isin(set(mine.loc[mine["k"] == below, "lr"]))]
    joined = pd.concat([mine, reached], ignore_index=True)
    if not reached.empty and choose_one(joined, axes(aggregator, where))["k"] == axis.highest:
        joined = pd.concat([mine, limit], ignore_index=True)
    return joined


@dataclass(frozen=True)
class Setting:
    """A setting of the paper whose methods are tuned: the data, model, partition and
    budget distribution, and the figures whose runs it stands for."""

    name: str
    dataset: str
    model: str
    partition: str
    distribution: str
    figures: tuple[str, ...]

    @property
    def fields(self) -> dict[str, str]:
        return {"dataset": self.dataset, "model": self.model, "partition": self.partition,
                "distribution": self.distribution}


TUNED_FIGURES = ("fig3", "fig4", "fig8")
"""The figures whose settings the protocol tunes (Figure 6 sweeps k itself; Figure 5 and
the authors' defaults are run as given)."""


def _name(dataset: str, model: str, partition: str, distribution: str) -> str:
    return f"{dataset}-{model}-{distribution}" + ("-noniid" if partition == "noniid" else "")


SETTINGS = tuple(Setting(_name(d, m, p, b), d, m, p, b, figures) for d, m, p, b, figures in (
    ("mnist", "cnn", "iid", "uniform", ("fig4",)),
    ("mnist", "cnn", "iid", "mixgauss1", ("fig3", "fig4")),
    ("mnist", "logr", "iid", "mixgauss1", ("fig3",)),
    ("fashion-mnist", "logr", "iid", "mixgauss1", ("fig3",)),
    ("mnist", "logr", "noniid", "mixgauss1", ("fig8",)),
    ("fashion-mnist", "cnn", "iid", "mixgauss1", ("fig3",)),
    ("mnist", "cnn", "noniid", "mixgauss1", ("fig8",)),
    ("mnist", "cnn", "iid", "gauss", ("fig4",)),
    ("mnist", "cnn", "iid", "mixgauss2", ("fig4",)),
    ("mnist", "cnn", "iid", "mixgauss4", ("fig4",)),
))
"""The paper tier's settings, in the order they are tuned: MNIST-CNN under Uniform and
MixGauss1 budgets decide the most verdicts (Figures 3 and 4), the LogR settings cost
minutes, the other CNN settings about an hour and a half of one core each."""
SETTING_NAMES = {s.name: s for s in SETTINGS}
TIER_LIMIT = {"smoke": 1}
"""Tiers that tune only their first settings (the smoke tier exercises the protocol on
one)."""


def setting(name: str) -> Setting:
    """The paper tier's setting called ``name`` (one of :data:`SETTINGS`)."""
    if name not in SETTING_NAMES:
        raise ValueError(f"unknown tuning setting {name!r}; use one of "
                         f"{', '.join(SETTING_NAMES)}")
    return SETTING_NAMES[name]


def tier_settings(setup: experiment.PfaSetup, scale: str | None = None
                  ) -> tuple[Setting, ...]:
    """The settings of :data:`TUNED_FIGURES` a tier runs, each with the figures that run
    it: at the paper tier in :data:`SETTINGS`' order, at the others the LogR settings
    first; a tier in :data:`TIER_LIMIT` keeps its first ones."""
    figures: dict[tuple[str, str, str, str], list[str]] = {}
    for c in experiment.configs(replace(setup, repeats=1), 0, figures=TUNED_FIGURES):
        key = (c["dataset"], c["model"], c["partition"], c["distribution"])
        if c["figure"] not in figures.setdefault(key, []):
            figures[key].append(c["figure"])
    found = [Setting(_name(*key), *key, tuple(f)) for key, f in figures.items()]
    order = [s.name for s in SETTINGS]
    if scale == "paper":
        found.sort(key=lambda s: order.index(s.name) if s.name in order else len(order))
    else:  # the cheaper LogR settings first
        found.sort(key=lambda s: s.model != "logr")
    return tuple(found[:TIER_LIMIT.get(scale, len(found))])


def paper_configs(where: Setting, seed: int, setup: experiment.PfaSetup | None = None
                  ) -> list[dict[str, Any]]:
    """The paper tier's configs of the setting (every figure it stands for, every seed of
    the tier's ``repeats``), at the tier's fixed rate and k."""
    setup = setup or PAPER_GRID.tier("paper")
    return [c for c in experiment.configs(setup, seed, figures=where.figures)
            if all(c[f] == v for f, v in where.fields.items())]


def tuning_config(where: Setting, seed: int, aggregator: str, point: dict[str, Any],
                  setup: experiment.PfaSetup | None = None) -> dict[str, Any]:
    """The config of one tuning run: the setting's paper-tier run on the tuning seed,
    with the validation set, stopped at the budget's share of its rounds (PFA or PFA+ at
    the bound of k: WeiAvg's, :data:`NO_PROJECTION`)."""
    if aggregator in PROJECTED and point.get("k", START["k"]) >= k_axis(where).highest:
        return tuning_config(where, seed, NO_PROJECTION, {"lr": point["lr"]}, setup)
    bases = [c for c in paper_configs(where, seed, setup) if c["seed"] == seed]
    if not bases:
        raise ValueError(f"the setting {where.name!r} has no runs at this tier (its figures "
                         f"{', '.join(where.figures)} run other settings there)")
    base = bases[0]
    config = {key: value for key, value in base.items()
              if key not in ("figure", "aggregator", "k", "projection", "lr")}
    return {**config, "seed": seed + BUDGET.seeds[0], "n_validation": BUDGET.n_validation,
            "tuning_rounds": BUDGET.rounds(base["rounds"]), "aggregator": aggregator,
            "projection": "public", "lr": float(point["lr"]),
            "k": int(point.get("k", START["k"]))}


def _own_search(rows: pd.DataFrame, searched: tuple[Axis, ...]) -> pd.DataFrame:
    """The rows of ``rows`` (one method's tuning runs) that its own search asked for,
    replayed from the start: WeiAvg's runs also stand for PFA's and PFA+'s at the bound
    of k, and a rate their search asked for there must not move WeiAvg's own choice."""
    names = [a.name for a in searched]
    points = pd.Series([tuple(map(float, p)) for p in rows[names].itertuples(index=False)],
                       index=rows.index, dtype=object)
    kept = rows.iloc[:0]
    while True:
        wanted = {tuple(float(p[n]) for n in names)
                  for p in next_points(kept, searched, START)}
        found = rows[points.isin(wanted) & ~rows.index.isin(kept.index)]
        if found.empty:
            return kept
        kept = pd.concat([kept, found])


def _distinct(new: list[dict[str, Any]], planned: list[dict[str, Any]]
              ) -> list[dict[str, Any]]:
    """``new`` without the configs already planned or repeated (WeiAvg's runs stand for
    PFA's and PFA+'s at the bound of k, so two methods may ask for the same run)."""
    seen = {config_text(c) for c in planned}
    kept = []
    for config in new:
        if config_text(config) not in seen:
            seen.add(config_text(config))
            kept.append(config)
    return kept


def scores(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per tuning run: its config and ``val_accuracy``, the mean over the
    budget's last evaluations (:attr:`TuningBudget.last_evaluations`)."""
    if runs.empty:
        return pd.DataFrame(columns=["aggregator", "lr", "k", "seed", "val_accuracy"])
    evaluated = runs.dropna(subset=["val_accuracy"])
    evaluated = evaluated[evaluated["round"] > 0]
    last = (evaluated.sort_values("round").groupby("run_key").tail(BUDGET.last_evaluations)
            .groupby("run_key")["val_accuracy"].mean())
    configs = runs.drop_duplicates("run_key").set_index("run_key")
    table = configs.drop(columns=["round", "val_accuracy", "uplink_bytes", "clients",
                                  "public"], errors="ignore")
    return table.assign(val_accuracy=last.reindex(table.index)).reset_index()


@dataclass
class Tuning:
    """A setting's tuning: every tuning run's score (``table``), each method's choice
    (``choices``, one row per aggregator), and whether it is complete (``pending``: the
    points still to run, by aggregator)."""

    setting: Setting
    table: pd.DataFrame
    choices: pd.DataFrame
    pending: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.pending

    def untuned(self) -> dict[str, str]:
        """Each aggregator whose choice cannot be read, with the reason (empty when every
        method is tuned)."""
        reasons = {}
        for aggregator in TUNED_AGGREGATORS:
            if aggregator in self.pending:
                reasons[aggregator] = (f"tuning incomplete: {self.pending[aggregator]} more "
                                       "points of the search to run")
                continue
            row = self.choices[self.choices["aggregator"] == aggregator]
            if row.empty:
                reasons[aggregator] = "not run"
                continue
            edges = open_edges(row.iloc[0].to_dict(), axes(aggregator, self.setting))
            why = [f"{name} chosen at {row.iloc[0][name]:g}, "
                   f"{row.iloc[0][name + '_position']}" for name in edges]
            if (aggregator in PROJECTED
                    and row.iloc[0]["k"] >= k_axis(self.setting).highest):
                why.insert(0, f"k chosen at its bound, the model's largest layer (k = "
                              f"{row.iloc[0]['k']:g}), where {experiment.LABELS[aggregator]} "
                              f"projects nothing and is {experiment.LABELS[NO_PROJECTION]}: "
                              f"read {experiment.LABELS[NO_PROJECTION]} in its place")
            if why:
                reasons[aggregator] = "; ".join(why)
        return reasons


def tune(where: Setting, seed: int, *, workers: int | None = 1, progress: bool = False,
         setup: experiment.PfaSetup | None = None, max_steps: int = 30) -> Tuning:
    """Run (or read, where only stored runs may be read) the setting's tuning search to
    its end, or as far as stored runs go (or ``max_steps`` steps: the points still asked
    for then are pending). A point is pending for the method whose search asked for it
    (PFA's and PFA+'s at the bound of k are WeiAvg's runs)."""
    planned: list[dict[str, Any]] = []
    pending: dict[str, int] = {}
    table = scores(pd.DataFrame())
    for step in range(max_steps + 1):
        asked = [(aggregator, tuning_config(where, seed, aggregator, point, setup))
                 for aggregator in TUNED_AGGREGATORS
                 for point in next_points(_arm_table(table, aggregator, where),
                                          axes(aggregator, where), START)]
        new = _distinct([config for _, config in asked], planned)
        if not new:
            break
        if step == max_steps:
            _count_pending(pending, asked, planned)
            break
        try:
            runs = tuning.run(planned + new, workers=workers, progress=progress)
        except MissingRunsError:
            # Only stored runs may be read: keep those of this step that are, and count
            # the rest as the search's pending points.
            stored = []
            with unrecorded():  # the step's gap is recorded already, as one
                for config in new:
                    try:
                        tuning.run([config], workers=workers, progress=False)
                        stored.append(config)
                    except MissingRunsError:
                        pass
            _count_pending(pending, asked, planned + stored)
            if stored:
                table = scores(tuning.run(planned + stored, workers=workers, progress=False))
            break
        planned += new
        table = scores(runs)
    choices = []
    for aggregator in TUNED_AGGREGATORS:
        mine = _arm_table(table, aggregator, where)
        if len(mine):
            choices.append({"aggregator": aggregator,
                            **choose_one(mine, axes(aggregator, where))})
    return Tuning(where, table, pd.DataFrame(choices), pending)


def _count_pending(pending: dict[str, int], asked: list[tuple[str, dict[str, Any]]],
                   have: list[dict[str, Any]]) -> None:
    """Count in ``pending`` each point ``asked`` (by the method that asked for it) whose
    run is not among ``have``."""
    present = {config_text(c) for c in have}
    for aggregator, config in asked:
        if config_text(config) not in present:
            pending[aggregator] = pending.get(aggregator, 0) + 1


def tuned_configs(tuned: Tuning, seed: int, setup: experiment.PfaSetup | None = None
                  ) -> list[dict[str, Any]]:
    """The setting's paper-tier configs with every tuned method at its chosen rate and
    k (the methods not tuned are left out); beyond the first seed, only the aggregators
    the tier repeats (:data:`fedlib.papers.pfa.paper_tier.REPEAT_AGGREGATORS`)."""
    chosen = {row["aggregator"]: row for _, row in tuned.choices.iterrows()}
    skip = tuned.untuned()
    configs = []
    for config in paper_configs(tuned.setting, seed, setup):
        aggregator = config["aggregator"]
        if aggregator in skip or aggregator not in chosen or config["projection"] != "public":
            continue
        later = REPEAT_AGGREGATORS.get((config["figure"], config["model"]))
        if config["seed"] > seed and later is not None and aggregator not in later:
            continue  # the later seeds run the aggregators the claims read, as the tier does
        choice = chosen[aggregator]
        k = int(choice["k"]) if "k" in choice and pd.notna(choice.get("k")) else config["k"]
        configs.append({**config, "lr": float(choice["lr"]), "k": k})
    return configs


TUNED_REPEATS = {"smoke": 2, "quick": 3, "paper": 5}
"""Seeds of each tier's runs at the tuned values (the paper averages five repeats)."""


FEWEST_SEEDS = 3
"""The fewest seeds at the tuned values a setting is read over (the tier's own number
where it has fewer): a setting whose five paper-tier seeds cost more than the work's
budget is read over three, and the page says so; one or two seeds decide nothing."""


def fewest_seeds(repeats: int) -> int:
    """The seeds a setting needs at the tuned values to be read: :data:`FEWEST_SEEDS`, or
    the tier's ``repeats`` where that is fewer."""
    return min(FEWEST_SEEDS, repeats)


UNTUNED = (f"untuned: the paper tuned the learning rate over {list(LR_AXIS.values)} and, for "
           f"PFA and PFA+, k over {list(K_AXIS.values)} for every method; an arm marked "
           "untuned ran at the chapter's fixed values instead, which decides nothing")
"""How a claim that reads an untuned arm says so (once, before its parts)."""


def untuned_reason(config: dict[str, Any], why: str) -> str:
    """What an untuned arm ran at and why it is not tuned, e.g. ``ran at lr 0.1, k 1;
    tuning incomplete: 12 more points of the search to run``."""
    used = f"lr {config['lr']:g}" + (f", k {config['k']}" if config["aggregator"]
                                      in ("pfa", "pfa+") else "")
    return f"ran at {used}; {why}"


@dataclass
class TunedRuns:
    """A tier's tuning protocol as far as it went: each setting's tuning, the runs at the
    tuned values (``runs``, the seeds stored or computed), and what is left."""

    tunings: dict[str, Tuning]
    runs: pd.DataFrame
    repeats: int
    left_out: dict[str, str] = field(default_factory=dict)

    def seeds(self, name: str) -> list[int]:
        """The seeds of the setting ``name`` whose runs at the tuned values are here."""
        if self.runs.empty:
            return []
        mine = self.runs[self._of(self.tunings[name].setting)]
        return sorted(int(x) for x in set(mine["seed"]))

    def apply(self, runs: pd.DataFrame) -> pd.DataFrame:
        """``runs`` with every setting of the protocol read as the paper ran it: an arm
        tuned and run at its choice by those runs, an arm not tuned (or a variant the
        protocol does not tune, PFA as Algorithm 3 writes it) kept with the reason in
        ``untuned``, which its claims read as NOT-TESTABLE."""
        if runs.empty:
            return runs
        runs = runs.assign(untuned=runs["untuned"].fillna("") if "untuned" in runs else "")
        keep = pd.Series(True, index=runs.index)
        for name, done in self.tunings.items():
            where = done.setting
            mine = (runs["figure"].isin(where.figures)
                    & (runs["dataset"] == where.dataset) & (runs["model"] == where.model)
                    & (runs["partition"] == where.partition)
                    & (runs["distribution"] == where.distribution))
            reasons = done.untuned()
            have = set(self.runs["aggregator"][self._of(where)]) if len(self.runs) else set()
            for aggregator in set(runs.loc[mine, "aggregator"]):
                arm = mine & (runs["aggregator"] == aggregator)
                public = arm & (runs["projection"] == "public")
                if aggregator in have:
                    keep &= ~public
                    runs.loc[arm & ~public, "untuned"] = self._reason(
                        runs[arm & ~public], "the protocol tunes the released code's "
                        "projection, not this variant")
                elif aggregator in reasons:
                    runs.loc[arm, "untuned"] = self._reason(runs[arm], reasons[aggregator])
                else:
                    runs.loc[arm, "untuned"] = self._reason(
                        runs[arm], self.left_out.get(name, "its runs at the tuned values "
                                                     "are not computed"))
        tuned = self.runs.assign(untuned="") if len(self.runs) else self.runs
        return pd.concat([runs[keep], tuned], ignore_index=True)

    def _of(self, where: Setting) -> pd.Series:
        return ((self.runs["dataset"] == where.dataset) & (self.runs["model"] == where.model)
                & (self.runs["partition"] == where.partition)
                & (self.runs["distribution"] == where.distribution))

    @staticmethod
    def _reason(rows: pd.DataFrame, why: str) -> pd.Series:
        configs = rows[["aggregator", "lr", "k"]].to_dict("records")
        return pd.Series([untuned_reason(c, why) for c in configs], index=rows.index)

    def table(self) -> pd.DataFrame:
        """One row per setting and method: the choice (rate, k), where each sits in its
        grid, the validation accuracy at the choice, the tuning runs read, and the seeds
        run at the choice."""
        rows = []
        for name, done in self.tunings.items():
            reasons = done.untuned()
            seeds = self.seeds(name)
            if done.choices.empty:
                rows.append({"setting": name, "method": "every method",
                             "status": "untuned: no tuning run is stored"})
            for _, choice in done.choices.iterrows():
                aggregator = choice["aggregator"]
                rows.append({
                    "setting": name, "method": experiment.LABELS[aggregator],
                    "lr": choice["lr"], "lr in its grid": choice["lr_position"],
                    "k": choice.get("k") if aggregator in ("pfa", "pfa+") else None,
                    "k in its grid": (choice.get("k_position")
                                      if aggregator in ("pfa", "pfa+") else ""),
                    "validation accuracy": choice["val_accuracy"],
                    "tuning runs": choice["runs"],
                    "status": (f"untuned: {reasons[aggregator]}" if aggregator in reasons
                               else f"tuned; {len(seeds)} of {self.repeats} seeds run at "
                               "the choice"),
                })
        return pd.DataFrame(rows)

    def summary(self) -> str:
        """The protocol's state in one paragraph: how many settings are tuned and run at
        their choice, and what is left (read from the tunings and runs here)."""
        if not self.tunings:
            return "The tier has no setting of Figures 3, 4 and 8 to tune."
        tuned = [n for n, d in self.tunings.items() if d.complete and not d.untuned()]
        run = [n for n in tuned if len(self.seeds(n)) >= self.repeats]
        fewer: list[str] = []
        runs = sum(len(d.table) for d in self.tunings.values())
        parts = [f"{len(tuned)} of the tier's {len(self.tunings)} settings are tuned "
                 f"({runs} tuning runs read), {len(run)} of them run at the choice over "
                 f"the tier's {self.repeats} seeds"]
        for name, done in self.tunings.items():
            if name in run:
                continue
            reasons = done.untuned()
            if not done.complete:
                parts.append(f"{name}: the search is not finished "
                             f"({sum(done.pending.values())} points pending, "
                             f"{len(done.table)} tuning runs stored)")
            elif reasons:
                parts.append(f"{name}: " + "; ".join(f"{experiment.LABELS[a]} {why}"
                                                     for a, why in reasons.items()))
            elif len(self.seeds(name)) >= fewest_seeds(self.repeats):
                fewer.append(f"{name} over seeds "
                             f"{', '.join(map(str, self.seeds(name)))}")
            else:
                parts.append(f"{name}: {self.left_out.get(name, 'not run at the choice')}")
        return (parts[0] + (". Not yet read as the paper ran it: " + "; ".join(parts[1:])
                            if len(parts) > 1 else "")
                + (". Read over fewer than the tier's seeds (the rest cost more than this "
                   "work could spend; each figure's evidence gives its n): " + "; ".join(fewer)
                   if fewer else "") + ".")



def tuned_runs(scale: str, seed: int, setup: experiment.PfaSetup, *,
               workers: int | None = 1, progress: bool = False) -> TunedRuns:
    """The tier's tuning protocol: every setting's search (computed, or read where only
    stored runs may be read), then its runs at the tuned values over the tier's seeds
    (:data:`TUNED_REPEATS`), a seed at a time; what could not be read is named in
    ``left_out``."""
    repeats = TUNED_REPEATS[scale]
    tunings: dict[str, Tuning] = {}
    frames: list[pd.DataFrame] = []
    left_out: dict[str, str] = {}
    for where in tier_settings(setup, scale):
        done = tune(where, seed, workers=workers, progress=progress, setup=setup)
        tunings[where.name] = done
        if not done.complete:
            continue
        missing, mine = [], []
        for offset in range(repeats):
            one = replace(setup, repeats=offset + 1)
            planned = [c for c in tuned_configs(done, seed, one)
                       if c["seed"] == seed + offset]
            try:
                mine.append(_sweep(planned, workers, progress))
            except MissingRunsError:
                missing.append(seed + offset)
        if not missing:
            frames += mine
            continue
        have = repeats - len(missing)
        left_out[where.name] = (f"its runs at the tuned values are computed for {have} of "
                                f"the tier's {repeats} seeds (seeds "
                                f"{', '.join(map(str, missing))} missing)")
        if have >= fewest_seeds(repeats):
            frames += mine
        else:
            left_out[where.name] += (f"; a setting is read over at least "
                                     f"{fewest_seeds(repeats)} seeds")
    runs = pd.concat([f for f in frames if len(f)], ignore_index=True) if frames else \
        pd.DataFrame()
    return TunedRuns(tunings, runs, repeats, left_out)


def _sweep(planned: list[dict[str, Any]], workers: int | None, progress: bool
           ) -> pd.DataFrame:
    """The chapter's runs of ``planned`` (:func:`fedlib.papers.pfa.paper_tier._sweep_configs`),
    none when nothing is planned."""
    if not planned:
        return pd.DataFrame()
    return _sweep_configs(planned, workers=workers, progress=progress)


def stored_tuning(where: Setting, seed: int, setup: experiment.PfaSetup | None = None
                  ) -> Tuning:
    """The setting's tuning as far as stored runs go, computing nothing."""
    with stored_only():
        return tune(where, seed, setup=setup)


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fedlib.papers.pfa.tuned",
        description="Tune the PFA chapter's settings on validation data (the paper's "
                    "grids), then run them at the chosen values, a seed at a time.")
    parser.add_argument("settings", nargs="*",
                        help="settings to tune, in order (default: all of the tier's)")
    parser.add_argument("--seed", type=int, default=0, help="the chapter's seed")
    parser.add_argument("--tier", default="paper", choices=tuple(TUNED_REPEATS),
                        help="the run tier (default: paper)")
    parser.add_argument("--workers", type=int, default=1, help="local processes")
    parser.add_argument("--tune-only", action="store_true",
                        help="stop after the tuning search")
    parser.add_argument("--repeats", type=int, default=None,
                        help="seeds to run at the tuned values (default: the tier's)")
    parser.add_argument("--list", action="store_true",
                        help="print each setting's progress from stored runs and exit")
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)
    args = parser.parse_args(argv)
    set_tier_label(args.tier)
    setup = PAPER_GRID.tier(args.tier)
    known = {s.name: s for s in tier_settings(setup, args.tier)}
    unknown = [name for name in args.settings if name not in known]
    if unknown:
        parser.error(f"unknown settings {unknown} at the {args.tier} tier; use some of "
                     f"{', '.join(known)}")
    repeats = args.repeats or TUNED_REPEATS[args.tier]
    for name in args.settings or list(known):
        where = known[name]
        if args.list:
            done = stored_tuning(where, args.seed, setup)
            state = ("tuned" if done.complete and not done.untuned() else
                     "; ".join(f"{a}: {r}" for a, r in done.untuned().items()))
            print(f"{where.name}: {len(done.table)} tuning runs stored; {state}")
            continue
        print(f"tuning {where.name}", flush=True)
        done = tune(where, args.seed, workers=args.workers, progress=True, setup=setup)
        print(done.choices.to_string(index=False), flush=True)
        if args.tune_only:
            continue
        for offset in range(repeats):
            one = replace(setup, repeats=offset + 1)
            _sweep([c for c in tuned_configs(done, args.seed, one)
                    if c["seed"] == args.seed + offset], args.workers, True)
    return 0


if __name__ == "__main__":
    sys.exit(run_command(_main))
