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
3. a choice on an edge of the grid is extended past it (at most two values), unless the
   edge is a bound of the hyperparameter (k = 1).

A setting whose tuning is not complete, or whose choice still sits on an open edge, is
*untuned*: its claims are not testable, and the chapter says why.

``python -m fedlib.papers.pfa.tuned [setting ...]`` runs the tuning of the settings
named (all of :data:`SETTINGS` by default) and then their paper tier at the chosen
values, resumable; ``--list`` prints each setting with its progress.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from fedlib.papers.pfa import experiment, tuning
from fedlib.runs.cache import MissingRunsError, stored_only
from fedlib.runs.tuning import Axis, TuningBudget, choose_one, next_points, open_edges
from fedlib.sweeps import sweep

BUDGET = TuningBudget(round_share=0.3, seeds=(100,), n_validation=5000)
"""A tuning run trains the first 30% of the paper's rounds on one seed (the chapter's
seed + 100, none of the seeds the verdicts read), scored on 5,000 training examples no
client holds."""
LR_AXIS = Axis("lr", experiment.PAPER_LR_GRID, factor=2.0, max_extensions=2)
K_AXIS = Axis("k", experiment.PAPER_K_GRID, factor=2.0, lowest=1, max_extensions=2)
START = {"lr": experiment.PAPER_LR_GRID[0], "k": 1}
"""Where the search starts: the rate is searched first (its whole grid), at k = 1."""
TUNED_AGGREGATORS = experiment.MAIN_AGGREGATORS


def axes(aggregator: str) -> tuple[Axis, ...]:
    """The hyperparameters tuned for ``aggregator``: the rate, and k for PFA and PFA+."""
    return (LR_AXIS, K_AXIS) if aggregator in ("pfa", "pfa+") else (LR_AXIS,)


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


SETTINGS = (
    Setting("mnist-cnn-uniform", "mnist", "cnn", "iid", "uniform", ("fig4",)),
    Setting("mnist-cnn-mixgauss1", "mnist", "cnn", "iid", "mixgauss1", ("fig3", "fig4")),
    Setting("mnist-logr-mixgauss1", "mnist", "logr", "iid", "mixgauss1", ("fig3",)),
    Setting("fashion-mnist-logr-mixgauss1", "fashion-mnist", "logr", "iid", "mixgauss1",
            ("fig3",)),
    Setting("mnist-logr-noniid", "mnist", "logr", "noniid", "mixgauss1", ("fig8",)),
    Setting("fashion-mnist-cnn-mixgauss1", "fashion-mnist", "cnn", "iid", "mixgauss1",
            ("fig3",)),
    Setting("mnist-cnn-noniid", "mnist", "cnn", "noniid", "mixgauss1", ("fig8",)),
    Setting("mnist-cnn-gauss", "mnist", "cnn", "iid", "gauss", ("fig4",)),
    Setting("mnist-cnn-mixgauss2", "mnist", "cnn", "iid", "mixgauss2", ("fig4",)),
    Setting("mnist-cnn-mixgauss4", "mnist", "cnn", "iid", "mixgauss4", ("fig4",)),
)
"""The settings the chapter tunes, in the order it tunes them: MNIST-CNN under Uniform
and MixGauss1 budgets decide the most verdicts (Figures 3 and 4), the LogR settings
cost minutes; the other CNN settings about an hour and a half of one core each."""
SETTING_NAMES = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    """The setting called ``name`` (one of :data:`SETTINGS`)."""
    if name not in SETTING_NAMES:
        raise ValueError(f"unknown tuning setting {name!r}; use one of "
                         f"{', '.join(SETTING_NAMES)}")
    return SETTING_NAMES[name]


def paper_configs(where: Setting, seed: int, setup: experiment.PfaSetup | None = None
                  ) -> list[dict[str, Any]]:
    """The paper tier's configs of the setting (every figure it stands for, every seed of
    the tier's ``repeats``), at the tier's fixed rate and k."""
    setup = setup or experiment.tier("paper")
    return [c for c in experiment.configs(setup, seed, figures=where.figures)
            if all(c[f] == v for f, v in where.fields.items())]


def tuning_config(where: Setting, seed: int, aggregator: str, point: dict[str, Any],
                  setup: experiment.PfaSetup | None = None) -> dict[str, Any]:
    """The config of one tuning run: the setting's paper-tier run on the tuning seed,
    with the validation set, stopped at the budget's share of its rounds."""
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
            edges = open_edges(row.iloc[0].to_dict(), axes(aggregator))
            if edges:
                reasons[aggregator] = "; ".join(
                    f"{name} chosen at {row.iloc[0][name]:g}, "
                    f"{row.iloc[0][name + '_position']}" for name in edges)
        return reasons


def tune(where: Setting, seed: int, *, workers: int | None = 1, progress: bool = False,
         setup: experiment.PfaSetup | None = None, max_steps: int = 12) -> Tuning:
    """Run (or read, where only stored runs may be read) the setting's tuning search to
    its end, or as far as stored runs go."""
    planned: list[dict[str, Any]] = []
    pending: dict[str, int] = {}
    table = scores(pd.DataFrame())
    for _ in range(max_steps):
        new = []
        for aggregator in TUNED_AGGREGATORS:
            mine = table[table["aggregator"] == aggregator]
            for point in next_points(mine, axes(aggregator), START):
                new.append(tuning_config(where, seed, aggregator, point, setup))
        if not new:
            break
        try:
            runs = tuning.run(planned + new, workers=workers, progress=progress)
        except MissingRunsError:
            for config in new:
                pending[config["aggregator"]] = pending.get(config["aggregator"], 0) + 1
            break
        planned += new
        table = scores(runs)
    choices = []
    for aggregator in TUNED_AGGREGATORS:
        mine = table[table["aggregator"] == aggregator]
        if len(mine):
            choices.append({"aggregator": aggregator,
                            **choose_one(mine, axes(aggregator))})
    return Tuning(where, table, pd.DataFrame(choices), pending)


def tuned_configs(tuned: Tuning, seed: int, setup: experiment.PfaSetup | None = None
                  ) -> list[dict[str, Any]]:
    """The setting's paper-tier configs with every tuned method at its chosen rate and
    k (the methods not tuned keep the tier's values, and are left out)."""
    chosen = {row["aggregator"]: row for _, row in tuned.choices.iterrows()}
    skip = tuned.untuned()
    configs = []
    for config in paper_configs(tuned.setting, seed, setup):
        aggregator = config["aggregator"]
        if aggregator in skip or aggregator not in chosen or config["projection"] != "public":
            continue
        choice = chosen[aggregator]
        k = int(choice["k"]) if "k" in choice and pd.notna(choice.get("k")) else config["k"]
        configs.append({**config, "lr": float(choice["lr"]), "k": k})
    return configs


def run_tuned(tuned: Tuning, seed: int, *, workers: int | None = 1, progress: bool = False,
              setup: experiment.PfaSetup | None = None) -> pd.DataFrame:
    """The paper tier of the setting at the tuned values (cached, resumable), one row per
    run and round with the run's config in columns."""
    planned = tuned_configs(tuned, seed, setup)
    if not planned:
        return pd.DataFrame()
    runs = sweep(experiment.EXPERIMENT, planned, experiment.run_group,
                 batched=experiment.BATCHED, max_group_size=len(planned), workers=workers,
                 progress=progress)
    settings = pd.DataFrame(planned)
    settings.insert(0, "run_key", runs.drop_duplicates("run_key")["run_key"].to_numpy())
    return runs.merge(settings, on="run_key", how="left")


def stored_tuning(where: Setting, seed: int, setup: experiment.PfaSetup | None = None
                  ) -> Tuning:
    """The setting's tuning as far as stored runs go, computing nothing."""
    with stored_only():
        return tune(where, seed, setup=setup)


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fedlib.papers.pfa.tuned",
        description="Tune the PFA chapter's settings on validation data (the paper's "
                    "grids), then run their paper tier at the chosen values.")
    parser.add_argument("settings", nargs="*", default=[s.name for s in SETTINGS],
                        help="settings to tune, in order (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the chapter's seed")
    parser.add_argument("--workers", type=int, default=1, help="local processes")
    parser.add_argument("--tune-only", action="store_true",
                        help="stop after the tuning search")
    parser.add_argument("--repeats", type=int, default=None,
                        help="seeds of the paper tier to run at the tuned values "
                             "(default: the tier's)")
    parser.add_argument("--list", action="store_true",
                        help="print each setting's progress from stored runs and exit")
    args = parser.parse_args(argv)
    try:
        chosen = [setting(name) for name in args.settings]
    except ValueError as error:
        parser.error(str(error))
    setup = experiment.tier("paper")
    if args.repeats is not None:
        setup = replace(setup, repeats=args.repeats)
    for where in chosen:
        if args.list:
            done = stored_tuning(where, args.seed)
            state = ("tuned" if done.complete and not done.untuned() else
                     "; ".join(f"{a}: {r}" for a, r in done.untuned().items()))
            print(f"{where.name}: {len(done.table)} tuning runs stored; {state}")
            continue
        print(f"tuning {where.name}", flush=True)
        done = tune(where, args.seed, workers=args.workers, progress=True, setup=setup)
        print(done.choices.to_string(index=False), flush=True)
        if not args.tune_only:
            run_tuned(done, args.seed, workers=args.workers, progress=True, setup=setup)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
