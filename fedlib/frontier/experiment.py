"""The frontier grid: every method in every privacy unit it admits, on five federations,
over a range of privacy targets, as cached runs of the project's sweep, in two stages.

* **choose**: a run is one (federation, unit, method, epsilon) tuned by
  :func:`~fedlib.frontier.interface.tune` over the method's fair grid on the clients'
  validation data, averaged over the tier's choosing seeds (the grid extended past an
  open edge the choice lands on); it has one row per choosing seed, the choice's fit;
* **test**: each method then runs once on each of as many other seeds at the chosen
  configuration (:func:`choices`), so that its test accuracy there is measured on seeds
  that chose nothing.

A run's row records the chosen fit's test results per client, summarised (mean client
accuracy, the worst decile of clients and how many clients that is, the variance of the
clients' test losses), the largest epsilon any client spent (checked against the target
here, again, before the row is kept), the epsilon of the whole tuning, the noise of a
step against the largest clipped sum it is added to, the uplink bytes per round and the
edges still open. Every run is a sweep call of its own; the row holds only what the code
computes, so that a run computed again gives the same row.

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

from fedlib.checks import check_count, check_probability, check_seed
from fedlib.frontier.federations import Federation, load_federation
from fedlib.frontier.interface import Outcome, Prepared, tune
from fedlib.frontier.methods import METHODS, method
from fedlib.frontier.privacy import PrivacyUnit, Target, check_within_target
from fedlib.sweeps import check_group, sweep
from fedlib.tiers import check_scale

__all__ = [
    "BATCHED",
    "DELTA",
    "EXPERIMENT",
    "STAGES",
    "TIERS",
    "FrontierSetup",
    "Slice",
    "choices",
    "configs",
    "methods_in",
    "noise_to_signal",
    "run",
    "run_group",
    "run_seeds",
    "testing_configs",
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
    rounds, local_steps, client_rate
        The schedule every method shares (fixed during tuning); ``client_rate`` is the
        Poisson rate of a client in a round (1.0: every client every round).
    """

    dataset: str
    options: tuple[tuple[str, int], ...]
    epsilons: tuple[float | None, ...]
    rounds: int
    local_steps: int
    client_rate: float = 1.0

    def __post_init__(self) -> None:
        check_count(self.rounds, "rounds", minimum=1)
        check_count(self.local_steps, "local_steps", minimum=1)
        check_probability(self.client_rate, "client_rate")
        for eps in self.epsilons:
            if eps is not None:
                Target(eps, DELTA)  # its own checks
        if not self.epsilons:
            raise ValueError(f"{self.dataset}: a slice needs at least one epsilon")


@dataclass(frozen=True)
class FrontierSetup:
    """A tier: its slices, the seeds of each stage (``seeds`` choosing, as many testing)
    and the units run."""

    slices: tuple[Slice, ...]
    seeds: int
    units: tuple[str, ...] = ("example", "user", "silo")

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
    # Seconds: five HAR volunteers of twenty recordings, two rounds; 40 MNIST users in
    # cohorts of a quarter, four rounds (a federation of each kind).
    "smoke": FrontierSetup(slices=(
        Slice("har-subjects", (("max_clients", 5), ("max_examples", 20)), (1.0, None), 2, 1),
        Slice("mnist-users", (("n_users", 40),), (1.0, None), 4, 1, 0.25),
    ), seeds=1),
    # About four CPU-hours: the small federations cut to 20 or 30 clients
    # of 50 examples and ten rounds of two steps; 200 users of 40 MNIST digits in cohorts
    # of 10% over 100 rounds; every FEMNIST writer with ten digits or more, cut to 30, in
    # cohorts of 10% over 30 rounds.
    "quick": FrontierSetup(slices=(
        Slice("har-subjects", (("max_examples", 50),), FINE, 10, 2),
        Slice("femnist-writers", (("max_clients", 20), ("max_examples", 50)), FINE, 10, 2),
        Slice("mnist-shards", (("n_clients", 100), ("max_clients", 20), ("max_examples", 50)),
              FINE, 10, 2),
        Slice("mnist-users", (("n_users", 200),), FINE, 100, 1, 0.1),
        Slice("femnist-all-writers", (("max_examples", 30),), FINE, 30, 1, 0.1),
    ), seeds=3),
    # The regime of the comparison: every HAR volunteer with all their recordings, 40
    # FEMNIST writers with all their digits and 20 MNIST shard clients of 200 digits, 30
    # rounds of five steps; 1,200 MNIST users of 40 digits in cohorts of 5% over 100
    # rounds; every FEMNIST writer with ten digits or more, all their digits, in cohorts of
    # 10% over 50 rounds of two steps.
    "paper": FrontierSetup(slices=(
        Slice("har-subjects", (), FINE, 30, 5),
        Slice("femnist-writers", (("max_clients", 40),), FINE, 30, 5),
        Slice("mnist-shards", (("n_clients", 100), ("max_clients", 20), ("max_examples", 200)),
              FINE, 30, 5),
        Slice("mnist-users", (), FINE, 100, 1, 0.05),
        Slice("femnist-all-writers", (), FINE, 50, 2, 0.1),
    ), seeds=3),
}

STAGES = ("choose", "test")
"""The two stages of a tier: tuning on the choosing seeds, then one fit per testing seed."""


def tier(scale: str) -> FrontierSetup:
    """The setup of tier ``scale`` (``smoke``, ``quick`` or ``paper``)."""
    return TIERS[check_scale(scale)]


def run_seeds(setup: FrontierSetup, seed: int, stage: str = "choose") -> tuple[int, ...]:
    """The seeds of ``stage``: the choosing seeds from ``seed`` (the chapter's first
    seed), then as many testing seeds."""
    check_seed(seed)
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}.")
    first = seed + (setup.seeds if stage == "test" else 0)
    return tuple(first + s for s in range(setup.seeds))


def methods_in(unit: PrivacyUnit | str) -> tuple[str, ...]:
    """The methods that admit ``unit``, in the chapter's order."""
    unit = PrivacyUnit(unit)
    return tuple(m.name for m in METHODS if unit in m.units)


def _base(setup: FrontierSetup, dataset: str, s: int, unit: str, name: str,
          eps: float | None) -> dict[str, Any]:
    part = setup.slice(dataset)
    return {"experiment": EXPERIMENT, "dataset": dataset, "federation": dict(part.options),
            "rounds": part.rounds, "local_steps": part.local_steps,
            "client_rate": part.client_rate, "seed": s, "unit": unit, "method": name,
            "epsilon": eps, "delta": DELTA}


def configs(setup: FrontierSetup, seed: int, *, datasets: Sequence[str] | None = None
            ) -> list[dict[str, Any]]:
    """Every choosing run of the tier (plain data; no dataset is read): per federation,
    unit, method admitting the unit and target, tuned over all the choosing seeds at
    once. ``datasets`` keeps some federations. The testing runs follow from their results
    (:func:`testing_configs`)."""
    chosen = setup.datasets if datasets is None else tuple(datasets)
    seeds = list(run_seeds(setup, seed))
    runs = []
    for dataset in chosen:
        part = setup.slice(dataset)
        for unit in setup.units:
            for name in methods_in(unit):
                for eps in part.epsilons:
                    config = _base(setup, dataset, seeds[0], unit, name, eps)
                    del config["seed"]
                    runs.append({**config, "seeds": seeds, "stage": "choose"})
    return runs


BATCHED = ("unit", "method", "epsilon", "hparams", "open_edges")
"""Fields in which runs on the same federation (dataset, sizes, seed, schedule) differ; a
runner call may take several, though :func:`run` gives it one at a time."""


@lru_cache(maxsize=8)
def _federation(dataset: str, options: str, seed: int) -> Federation:
    return load_federation(dataset, seed=seed, **json.loads(options))


def worst_decile(accuracy: np.ndarray) -> float:
    """Mean accuracy of the worst tenth of the clients (at least one client)."""
    values = np.sort(np.asarray(accuracy, dtype=float))
    count = max(1, math.ceil(0.1 * len(values)))
    return float(values[:count].mean())


def noise_to_signal(outcome: Outcome, federation: Federation) -> float:
    """The norm of one step's noise over the largest norm of the clipped sum it is added
    to: USER, the server's noise on the cohort's sum, ``sigma sqrt(P) / (q N)`` (q the
    client rate, N clients, P parameters); EXAMPLE and SILO, a client's noise on its
    batch's sum, ``sigma sqrt(P) / (r n)`` (r the sample rate, n the mean training
    examples per client). 0.0 without noise."""
    sigma = outcome.noise_multiplier
    if sigma == 0.0:
        return 0.0
    params = Prepared.of(federation).n_params
    hp = outcome.hparams
    if outcome.unit is PrivacyUnit.USER:
        expected = hp.client_rate * federation.n_clients
    else:
        expected = hp.sample_rate * float(np.mean(federation.sizes("train")))
    return sigma * math.sqrt(params) / expected


def _numbers(values) -> str:
    """Numbers as text, comma-separated, six significant digits (a per-client column)."""
    return ",".join(f"{float(v):.6g}" for v in values)


def _hparams(hp) -> dict[str, Any]:
    return {f.name: getattr(hp, f.name) for f in fields(hp)}


_SUMMARY_COLUMNS = ("test_accuracy", "test_accuracy_std", "test_loss", "val_accuracy",
                    "spent_epsilon_max", "noise_multiplier", "uplink_bytes_per_round")
"""The columns of a run's row taken from its outcome's own summary."""


def _row(config: dict[str, Any], federation: Federation, out: Outcome, best, tried,
         open_edges: tuple[str, ...], tuning: float) -> dict[str, Any]:
    """One seed's row of a run (see the module's text)."""
    summary = out.summary()
    eps = config["epsilon"]
    check_within_target(out.spent_epsilon, out.target)  # fit checked it; a row never lies
    return {
        "dataset": config["dataset"], "federation": federation.name,
        "n_clients": federation.n_clients, "unit": out.unit.value, "method": out.method,
        "epsilon": math.inf if eps is None else float(eps), "delta": out.target.delta,
        "seed": out.seed, "stage": config["stage"], "rounds": config["rounds"],
        "local_steps": config["local_steps"], "client_rate": config["client_rate"],
        **{name: summary[name] for name in _SUMMARY_COLUMNS},
        "worst_decile_accuracy": worst_decile(out.test_accuracy),
        "worst_decile_clients": max(1, math.ceil(0.1 * federation.n_clients)),
        "client_test_examples_min": int(federation.sizes("test").min()),
        "test_loss_variance": float(np.var(out.test_loss)),
        "noise_to_signal": noise_to_signal(out, federation),
        "tuning_epsilon": tuning,
        "configs_tried": len(tried),
        "open_edges": " ".join(e.replace(" ", ":") for e in open_edges),
        "hparams": json.dumps(_hparams(best), sort_keys=True),
        "val_scores": json.dumps([[_hparams(hp), round(float(v), 6)] for hp, v in tried],
                                 sort_keys=True),
        "client_test_accuracy": _numbers(out.test_accuracy),
        "client_test_loss": _numbers(out.test_loss),
    }


def run_group(group: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: a choosing run tuned over its seeds (one row per seed, each with the
    choice's fit there), or a testing run fitted once at its given configuration (the
    federations loaded once per process)."""
    check_group(group, BATCHED)
    tables = []
    for config in group:
        options = json.dumps(config["federation"], sort_keys=True)
        m = method(config["method"])
        unit = PrivacyUnit(config["unit"])
        eps = config["epsilon"]
        target = Target(math.inf if eps is None else eps, config["delta"])
        schedule = {"rounds": config["rounds"], "local_steps": config["local_steps"],
                    "client_rate": config["client_rate"]}
        if config["stage"] == "choose":
            seeds = tuple(config["seeds"])
            federations = tuple(_federation(config["dataset"], options, s) for s in seeds)
            result = tune(m, federations, unit, target, seeds, **schedule)
            rows = [_row(config, f, out, result.best, result.scores, result.open_edges,
                         result.tuning_epsilon)
                    for f, out in zip(federations, result.outcomes, strict=True)]
        else:
            federation = _federation(config["dataset"], options, config["seed"])
            best = m.hparams_type(**config["hparams"])
            out = m.fit(federation, unit, target, best, config["seed"])
            rows = [_row(config, federation, out, best, ((best, out.mean_val_accuracy),),
                         tuple(e.replace(":", " ") for e in config["open_edges"]),
                         math.nan)]
        tables.append(pd.DataFrame(rows))
    return tables


def choices(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, unit, method and epsilon: the configuration its choosing run picked
    (the best validation accuracy averaged over the choosing seeds) and the edges of its
    grid it still sits on."""
    chosen = runs[runs["stage"] == "choose"].drop_duplicates(
        ["dataset", "unit", "method", "epsilon"])
    return pd.DataFrame({
        "dataset": chosen["dataset"], "unit": chosen["unit"], "method": chosen["method"],
        "epsilon": chosen["epsilon"], "hparams": chosen["hparams"].map(json.loads),
        "open_edges": chosen["open_edges"].map(str.split),
    }).reset_index(drop=True)


def testing_configs(setup: FrontierSetup, seed: int, chosen: pd.DataFrame
                 ) -> list[dict[str, Any]]:
    """The testing runs: per row of :func:`choices`, one run per testing seed at the
    chosen configuration."""
    runs = []
    for _, row in chosen.iterrows():
        eps = None if not math.isfinite(row["epsilon"]) else float(row["epsilon"])
        for s in run_seeds(setup, seed, "test"):
            runs.append({**_base(setup, row["dataset"], s, row["unit"], row["method"], eps),
                         "stage": "test", "hparams": row["hparams"],
                         "open_edges": list(row["open_edges"])})
    return runs


def run(setup: FrontierSetup, seed: int, *, datasets: Sequence[str] | None = None,
        workers: int | None = None, ray_address: str | None = None,
        progress: bool = True) -> pd.DataFrame:
    """Every run of the tier, both stages (cached, resumable): one row per run, each run
    a runner call of its own (the federation is built once per process and seed)."""
    args = {"batched": BATCHED, "max_group_size": 1, "workers": workers,
            "ray_address": ray_address, "progress": progress}
    chosen = sweep(EXPERIMENT, configs(setup, seed, datasets=datasets), run_group, **args)
    tested = sweep(EXPERIMENT, testing_configs(setup, seed, choices(chosen)), run_group, **args)
    return pd.concat([chosen, tested], ignore_index=True)
