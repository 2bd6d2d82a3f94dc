"""The frontier grid: every method in every privacy unit it admits, on three federations,
over a range of privacy targets, as cached runs of the project's sweep.

A run is one (federation, unit, method, epsilon, seed) at a tier's sizes: :func:`tune`
fits each of the method's :data:`~fedlib.frontier.interface.GRID_SIZE` declared
configurations at the target and keeps the one with the best mean validation accuracy;
the run's row records the chosen fit's test results per client, summarised (mean client
accuracy, the worst decile of clients, the variance of the clients' test losses), the
largest epsilon any client spent (checked against the target here, again, before the row
is kept) and the uplink bytes per round. Every run is a sweep call of its own, so that
the CPU seconds the sweep records with it (its provenance) are those of its tuning and
chosen fit; the row holds only what the code computes, so that a run computed again
gives the same row.

The module follows the experiment protocol of the papers' chapters: :data:`TIERS` and
:func:`tier`, :func:`configs`, :data:`BATCHED`, the sweep runner :func:`run_group` and
:func:`run`. The presentation is in ``figures.py`` and ``claims.py`` beside it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from fedlib.checks import check_count, check_seed
from fedlib.frontier.federations import Federation, load_federation
from fedlib.frontier.interface import tune
from fedlib.frontier.methods import METHODS, method
from fedlib.frontier.privacy import PrivacyUnit, Target, check_within_target
from fedlib.sweeps import check_group, sweep
from fedlib.tiers import check_scale

__all__ = [
    "BATCHED",
    "DELTA",
    "EXPERIMENT",
    "TIERS",
    "FrontierSetup",
    "Slice",
    "configs",
    "methods_in",
    "run",
    "run_group",
    "run_seeds",
    "tier",
    "worst_decile",
]

EXPERIMENT = "frontier"
DELTA = 1e-5
"""The delta of every target: below 1/n for the examples of any client and for the
clients of any federation here."""

UNITS = (PrivacyUnit.EXAMPLE, PrivacyUnit.USER)


@dataclass(frozen=True)
class Slice:
    """One federation's part of a tier.

    Attributes
    ----------
    dataset
        Federation name (:data:`fedlib.frontier.federations.FEDERATIONS`).
    options
        Loader options (``max_clients``, ``max_examples``, ``n_clients``), as pairs.
    epsilons
        Targets; ``None`` is the run without privacy.
    rounds, local_steps
        The schedule every method shares (fixed during tuning).
    """

    dataset: str
    options: tuple[tuple[str, int], ...]
    epsilons: tuple[float | None, ...]
    rounds: int
    local_steps: int

    def __post_init__(self) -> None:
        check_count(self.rounds, "rounds", minimum=1)
        check_count(self.local_steps, "local_steps", minimum=1)
        for eps in self.epsilons:
            if eps is not None:
                Target(eps, DELTA)  # its own checks
        if not self.epsilons:
            raise ValueError(f"{self.dataset}: a slice needs at least one epsilon")


@dataclass(frozen=True)
class FrontierSetup:
    """A tier: its slices, the number of seeds and the units run."""

    slices: tuple[Slice, ...]
    seeds: int
    units: tuple[str, ...] = ("example", "user")

    def __post_init__(self) -> None:
        check_count(self.seeds, "seeds", minimum=1)
        for unit in self.units:
            PrivacyUnit(unit)

    def slice(self, dataset: str) -> Slice:
        for entry in self.slices:
            if entry.dataset == dataset:
                return entry
        raise ValueError(f"this tier has no {dataset!r}; it has "
                         f"{', '.join(s.dataset for s in self.slices)}")

    @property
    def datasets(self) -> tuple[str, ...]:
        return tuple(s.dataset for s in self.slices)


FINE = (0.5, 1.0, 2.0, 4.0, 8.0, None)
"""Five targets from 0.5 to 8, doubling, and no privacy."""

TIERS: dict[str, FrontierSetup] = {
    # Seconds: five clients of twenty examples per federation, two rounds.
    "smoke": FrontierSetup(slices=(
        Slice("har-subjects", (("max_clients", 5), ("max_examples", 20)), (1.0, None), 2, 1),
        Slice("femnist-writers", (("max_clients", 5), ("max_examples", 20)), (1.0, None), 2, 1),
        Slice("mnist-shards", (("n_clients", 100), ("max_clients", 5), ("max_examples", 20)),
              (1.0, None), 2, 1),
    ), seeds=2),
    # About a quarter of an hour of one core: HAR's 30 volunteers, 20 FEMNIST writers
    # and 20 of MNIST's 100 shard clients, 100 examples each, over the whole range of
    # targets; ten rounds of three local steps.
    "quick": FrontierSetup(slices=(
        Slice("har-subjects", (("max_examples", 100),), FINE, 10, 3),
        Slice("femnist-writers", (("max_clients", 20), ("max_examples", 100)), FINE, 10, 3),
        Slice("mnist-shards", (("n_clients", 100), ("max_clients", 20), ("max_examples", 100)),
              FINE, 10, 3),
    ), seeds=3),
    # About three and a half CPU-hours as measured (HAR 1.1, FEMNIST 1.6, MNIST 0.7): every
    # HAR volunteer with all their recordings (6,245 training examples), 40 FEMNIST writers
    # with all their digits and 20 of MNIST's 100 shard clients at 200 examples each; the
    # methods' default schedule (30 rounds of 5 local steps), the whole range of targets,
    # three seeds. A fit costs about in proportion to the training examples times the
    # steps: every FEMNIST writer and MNIST client at this schedule (18,947 and 36,000
    # examples) would take about 3 and 6 times as long as HAR.
    "paper": FrontierSetup(slices=(
        Slice("har-subjects", (), FINE, 30, 5),
        Slice("femnist-writers", (("max_clients", 40),), FINE, 30, 5),
        Slice("mnist-shards", (("n_clients", 100), ("max_clients", 20), ("max_examples", 200)),
              FINE, 30, 5),
    ), seeds=3),
}


def tier(scale: str) -> FrontierSetup:
    """The setup of tier ``scale`` (``smoke``, ``quick`` or ``paper``)."""
    return TIERS[check_scale(scale)]


def run_seeds(setup: FrontierSetup, seed: int) -> tuple[int, ...]:
    """The tier's seeds, shifted by ``seed`` (the chapter's first seed)."""
    check_seed(seed)
    return tuple(seed + s for s in range(setup.seeds))


def methods_in(unit: PrivacyUnit | str) -> tuple[str, ...]:
    """The methods that admit ``unit``, in the chapter's order."""
    unit = PrivacyUnit(unit)
    return tuple(m.name for m in METHODS if unit in m.units)


def configs(setup: FrontierSetup, seed: int, *, datasets: Sequence[str] | None = None
            ) -> list[dict[str, Any]]:
    """Every run of the tier (plain data; no dataset is read): per federation, seed,
    unit, method admitting the unit and target. ``datasets`` keeps some federations."""
    chosen = setup.datasets if datasets is None else tuple(datasets)
    runs = []
    for dataset in chosen:
        part = setup.slice(dataset)
        for s in run_seeds(setup, seed):
            for unit in setup.units:
                for name in methods_in(unit):
                    for eps in part.epsilons:
                        runs.append({
                            "experiment": EXPERIMENT, "dataset": dataset,
                            "federation": dict(part.options), "rounds": part.rounds,
                            "local_steps": part.local_steps, "seed": s, "unit": unit,
                            "method": name, "epsilon": eps, "delta": DELTA,
                        })
    return runs


BATCHED = ("unit", "method", "epsilon")
"""Fields in which runs on the same federation (dataset, sizes, seed, schedule) differ; a
runner call may take several, though :func:`run` gives it one at a time."""


@lru_cache(maxsize=4)
def _federation(dataset: str, options: str, seed: int) -> Federation:
    return load_federation(dataset, seed=seed, **json.loads(options))


def worst_decile(accuracy: np.ndarray) -> float:
    """Mean accuracy of the worst tenth of the clients (at least one client)."""
    values = np.sort(np.asarray(accuracy, dtype=float))
    count = max(1, math.ceil(0.1 * len(values)))
    return float(values[:count].mean())


def _numbers(values) -> str:
    """Numbers as text, comma-separated, six significant digits (a per-client column)."""
    return ",".join(f"{float(v):.6g}" for v in values)


_SUMMARY_COLUMNS = ("test_accuracy", "test_accuracy_std", "test_loss", "val_accuracy",
                    "spent_epsilon_max", "noise_multiplier", "uplink_bytes_per_round")
"""The columns of a run's row taken from its outcome's own summary."""


def run_group(group: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: each run of one federation and seed tuned and fitted in turn (the
    federation loaded once per process)."""
    check_group(group, BATCHED)
    first = group[0]
    federation = _federation(first["dataset"], json.dumps(first["federation"], sort_keys=True),
                             first["seed"])
    tables = []
    for config in group:
        m = method(config["method"])
        unit = PrivacyUnit(config["unit"])
        eps = config["epsilon"]
        target = Target(math.inf if eps is None else eps, config["delta"])
        result = tune(m, federation, unit, target, config["seed"], rounds=config["rounds"],
                      local_steps=config["local_steps"])
        out = result.outcome
        check_within_target(out.spent_epsilon, target)  # fit checked it; a row never lies
        hp = {f.name: getattr(result.best, f.name) for f in fields(result.best)}
        summary = out.summary()
        tables.append(pd.DataFrame([{
            "dataset": config["dataset"], "federation": federation.name,
            "n_clients": federation.n_clients, "unit": unit.value, "method": m.name,
            "epsilon": math.inf if eps is None else float(eps), "delta": target.delta,
            "seed": config["seed"], "rounds": config["rounds"],
            "local_steps": config["local_steps"],
            **{name: summary[name] for name in _SUMMARY_COLUMNS},
            "worst_decile_accuracy": worst_decile(out.test_accuracy),
            "test_loss_variance": float(np.var(out.test_loss)),
            "configs_tried": len(result.scores),
            "hparams": json.dumps(hp, sort_keys=True),
            "val_scores": _numbers(s for _, s in result.scores),
            "client_test_accuracy": _numbers(out.test_accuracy),
            "client_test_loss": _numbers(out.test_loss),
        }]))
    return tables


def run(setup: FrontierSetup, seed: int, *, datasets: Sequence[str] | None = None,
        workers: int | None = None, ray_address: str | None = None,
        progress: bool = True) -> pd.DataFrame:
    """Every run of the tier (cached, resumable): one row per run, each run a runner call
    of its own (the federation is built once per process and seed)."""
    return sweep(EXPERIMENT, configs(setup, seed, datasets=datasets), run_group,
                 batched=BATCHED, max_group_size=1, workers=workers,
                 ray_address=ray_address, progress=progress)
