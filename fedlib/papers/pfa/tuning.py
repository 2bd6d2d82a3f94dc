"""Tuning runs of the PFA chapter: a setting of the paper, trained on a tuning seed and
stopped after the first rounds of a tuning budget, scored on validation data only.

A tuning run is the full run stopped early: the same number of rounds T to plan client
participation and calibrate every client's noise, the same data, budgets and streams,
trained for the first ``tuning_rounds`` of its T rounds (its rows are those of the full
run to the last bit). The trainer's evaluation set is the validation set (training
examples no client holds, :func:`fedlib.papers.pfa.experiment.validation_indices`), so a
tuning run never evaluates the test set; its table has ``val_accuracy`` and no test
accuracy.

Tuning runs are stored in an experiment of their own (:data:`EXPERIMENT`): their table
is the tuning table a chapter shows, and the choices are made from it again whenever it
is read (:func:`fedlib.runs.tuning.choose`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import torch

from fedlib.limits import check_size
from fedlib.papers.pfa import experiment
from fedlib.papers.pfa.training import Variant, train_variants
from fedlib.sweeps import check_group, sweep

EXPERIMENT = "pfa-tuning"
BATCHED = experiment.BATCHED


class _Stopped(Exception):
    """Raised by :class:`_StopAfter` with the rows of the rounds trained."""

    def __init__(self, rows: list[list[dict[str, Any]]]) -> None:
        super().__init__("stopped")
        self.rows = rows


class _StopAfter:
    """A checkpointer for :func:`fedlib.papers.pfa.training.train_variants` that keeps
    nothing and ends training after round ``rounds``: the trainer offers its state after
    every round from the first on, and the state after round ``rounds`` is the end of
    the tuning run."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self._offered = 0

    def load(self) -> None:
        return None

    def due(self) -> bool:
        self._offered += 1
        return self._offered >= self.rounds

    def save(self, state: dict[str, Any]) -> None:
        if state["round"] != self.rounds:
            raise RuntimeError(f"the trainer offered its state after round {state['round']}, "
                               f"not after round {self.rounds}: the tuning run cannot stop "
                               "where its budget ends")
        raise _Stopped(state["rows"])

    def finish(self) -> None:
        return None


def run_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: the variants of one tuning setting, trained together for the first
    ``tuning_rounds`` of their ``rounds`` (one table per config: ``round``,
    ``val_accuracy``, ``uplink_bytes``, ``clients``, ``public``)."""
    check_group(configs, BATCHED)
    first = configs[0]
    stop = first["tuning_rounds"]
    check_size(stop, "tuning_rounds", limit="rounds")
    if stop > first["rounds"]:
        raise ValueError(f"tuning_rounds={stop} exceeds the run's rounds={first['rounds']}")
    if not first.get("n_validation"):
        raise ValueError("a tuning run needs validation examples: set n_validation >= 1")
    torch.set_num_threads(1)
    variants = [Variant(c["aggregator"], c["k"], c["projection"]) for c in configs]
    held = experiment.federation(first)
    federation = replace(held, x_test=held.x_val, y_test=held.y_val, x_val=None, y_val=None)
    try:
        result = train_variants(experiment.build_model(first["model"], first["seed"]),
                                federation, experiment.hyperparameters(first), variants,
                                first["seed"],
                                checkpointer=_StopAfter(stop) if stop < first["rounds"]
                                else None)
        rows = [table.to_dict("records") for table in result.history]
    except _Stopped as stopped:
        rows = stopped.rows
    return [pd.DataFrame(r).rename(columns={"accuracy": "val_accuracy"}) for r in rows]


def run(configs: list[dict[str, Any]], workers: int | None = None,
        progress: bool = True) -> pd.DataFrame:
    """The tuning runs of ``configs`` (cached, resumable), one row per run and round with
    the run's config in columns."""
    if not configs:
        return pd.DataFrame()
    runs = sweep(EXPERIMENT, configs, run_group, batched=BATCHED,
                 max_group_size=len(configs), workers=workers, progress=progress)
    settings = pd.DataFrame(configs)
    settings.insert(0, "run_key", runs.drop_duplicates("run_key")["run_key"].to_numpy())
    return runs.merge(settings, on="run_key", how="left")
