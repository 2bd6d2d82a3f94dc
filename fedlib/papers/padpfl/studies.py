"""Studies beside the paper's figures: the private runs at other values of R, a search
for a regime in which the private curves learn, and an ablation of the noise that impact
factors add.

All only build run configs and hand them to the experiment's cached sweep
(:func:`fedlib.papers.padpfl.experiment.run_group`), so their runs are stored and
published like every other run of the chapter.

**Regime search.** The paper leaves the hidden width, the local steps and the clipping
bound B open (its batch is the client's whole dataset, which its privacy analysis
assumes, so the batch size is not searched). Every combination of the values
:data:`REGIME_AXES` declare is run (:func:`regime_grid`), each point scored by the mean
final validation accuracy of S1's private runs at R = T over the three seeds of
:data:`REGIME_BUDGET`; the chapter's tuning step (:mod:`fedlib.runs.tuning`) then extends
an axis whose choice sits on its end (the open-edge rule). The verdicts read the chosen
point on the tier's own seeds and the test images (:func:`regime_runs`).

**Sensitivity over R.** The paper does not state R, the number of uploads exposed per
client. The chapter's runs have two values, the tier's R (``small_exposures``) and R = T;
:data:`SENSITIVITY_EXPOSURES` are those the chapter shows beside them where their runs are
stored (:func:`exposure_runs`); for those that are not, :func:`exposure_cost` estimates what
computing them would take from the stored runs' CPU time.

**Equal-total-noise ablation.** Per coordinate, the broadcast model carries Gaussian noise
of variance ``sigma_C^2 sum_i p_i^2 + sigma_S^2`` (:func:`total_noise_variance`).
Non-uniform impact factors make it larger than uniform ones. :func:`equal_noise_scale`
gives the factor on a uniform run's noise that makes its total equal that of a weighted
run, so that the two differ in their weights alone.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from fedlib.papers.padpfl.experiment import (
    BATCHED,
    EPSILONS,
    EQUAL,
    EXPERIMENT,
    SCENARIOS,
    PadpflSetup,
    configs,
    impact_factors,
    noise_levels,
    run_group,
)
from fedlib.runs.keys import run_key
from fedlib.runs.published import PublishedStore
from fedlib.runs.tuning import Axis, TuningBudget, choose_one, next_points, open_edges
from fedlib.sweeps import sweep

REGIME_SCENARIO = "S1"
"""The scenario the regime search runs on (the paper's first private figure)."""

REGIME_AXES = (
    Axis("hidden", (8, 32, 128), factor=4.0, lowest=1, max_extensions=3),
    Axis("local_steps", (10, 20, 40), factor=2.0, lowest=1, max_extensions=2),
    Axis("clip", (1.0, 3.0, 10.0, 30.0), factor=3.0, max_extensions=3),
)
"""The settings the paper leaves open, each with the values tried first (declared before
any run of the search) and how far past an end the search may go: the width down to 1
(its bound) and up by factors of 4, the local steps by doubling (at most two past an end:
a run's cost grows with its steps), B by factors of 3."""

REGIME_BUDGET = TuningBudget(round_share=1.0, seeds=(100, 101, 102), n_validation=5_000)
"""A point of the search is scored on three seeds apart from the verdicts' (the chapter's
seed + 100, 101, 102), whole runs (a run of 30 rounds is cheap), on 5,000 clean training
images no client holds: the test images are not read for the choice."""

LEARNS_ACCURACY = 0.3
"""Final test accuracy a private run must reach to count as learning: three times chance."""

ABLATION_SCENARIOS = ("S1", "S2", "S3")
"""Scenarios of the noise ablation: those whose private claims compare a weighted run with
equal factors at the same epsilon."""

ABLATION_EPSILON = max(EPSILONS)

SENSITIVITY_EXPOSURES = (1, 3, 10)
"""Values of R the chapter shows beside the tier's R and R = T (those up to T)."""


def _private_at_rounds(runs: list[dict[str, Any]], rounds: int) -> list[dict[str, Any]]:
    return [c for c in runs if c["epsilon"] is not None and c["exposures"] == rounds]


def regime_centre(setup: PadpflSetup) -> dict[str, float]:
    """The tier's own setting of the factors the search moves, where it starts."""
    return {axis.name: getattr(setup, axis.name) for axis in REGIME_AXES}


FACTOR_NAMES = {"hidden": "hidden width", "local_steps": "local steps", "clip": "B"}
"""The factors the search moves, each with the name the page gives it."""


def regime_open_edges(choice: dict[str, object]) -> list[str]:
    """The factors of the search's ``choice`` (:func:`fedlib.runs.tuning.choose_one`) that
    are not at an optimum along their axis, each with where it sits, e.g. ``["local steps
    160, 4th of 4 (high edge, open: the grid's extensions ran out)"]``."""
    return [f"{FACTOR_NAMES[name]} {choice[name]:g}, {choice[name + '_position']}"
            for name in open_edges(choice, REGIME_AXES)]


def regime_setup(setup: PadpflSetup, point: dict[str, float]) -> PadpflSetup:
    """``setup`` at a point of the search, its small R set to T (only R = T is run)."""
    changes = {"hidden": int(point["hidden"]), "local_steps": int(point["local_steps"]),
               "clip": float(point["clip"])}
    return dataclasses.replace(setup, **changes, small_exposures=setup.rounds)


def _sweep(cfgs: list[dict[str, Any]], sweep_args: dict[str, Any]) -> pd.DataFrame:
    return sweep(EXPERIMENT, cfgs, run_group, batched=BATCHED, max_group_size=64,
                 **sweep_args)


def _factor_runs(cfgs: list[dict[str, Any]], sweep_args: dict[str, Any]) -> pd.DataFrame:
    """The runs of ``cfgs`` (cached sweep), each row with its config's factors
    (:data:`REGIME_AXES`) as columns, which a run's own table does not carry."""
    table = _sweep(cfgs, sweep_args)
    module = run_group.__module__
    labels = pd.DataFrame([{"run_key": run_key(c, module), **{n: c[n] for n in FACTOR_NAMES}}
                           for c in cfgs])
    return table.merge(labels, on="run_key", how="left", validate="many_to_one")


def regime_tuning_configs(setup: PadpflSetup, point: dict[str, float], seed: int
                          ) -> list[dict[str, Any]]:
    """The search's runs at ``point``: the private runs of :data:`REGIME_SCENARIO` at R = T
    on each seed of :data:`REGIME_BUDGET`, scored on its validation images."""
    at = regime_setup(setup, point)
    out = []
    for offset in REGIME_BUDGET.seeds:
        runs = configs(dataclasses.replace(at, seeds=(0,)), seed + offset,
                       scenarios=[REGIME_SCENARIO])
        out += [{**c, "n_validation": REGIME_BUDGET.n_validation}
                for c in _private_at_rounds(runs, at.rounds)]
    return out


def regime_scores(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run of the search: its factors, seed, assignment and epsilon, and
    ``val_accuracy``, the mean over its last :attr:`TuningBudget.last_evaluations`
    evaluations (rounds)."""
    columns = [*FACTOR_NAMES, "seed", "assignment", "epsilon", "val_accuracy"]
    if runs.empty:
        return pd.DataFrame(columns=columns)
    last = runs[runs["round"] > runs["round"].max() - REGIME_BUDGET.last_evaluations]
    keys = [*FACTOR_NAMES, "seed", "assignment", "epsilon"]
    return last.groupby(keys, as_index=False)["val_accuracy"].mean()[columns]


@dataclasses.dataclass(frozen=True)
class RegimeSearch:
    """The search's runs, one row each (:func:`regime_scores`), and its choice
    (:func:`fedlib.runs.tuning.choose_one`: each factor's value, the mean validation
    accuracy, and where each value sits on its axis)."""

    table: pd.DataFrame
    choice: dict[str, Any]

    @property
    def best(self) -> dict[str, float]:
        """The chosen point, as {factor: value}."""
        return {axis.name: type_of(axis.name)(self.choice[axis.name]) for axis in REGIME_AXES}

    def open_edges(self) -> list[str]:
        """The factors of the choice not at an optimum along their axis (none: every
        factor is interior, or at a bound)."""
        return regime_open_edges(self.choice)

    def points(self) -> pd.DataFrame:
        """One row per point tried (ordered by its factors): the seeds and the mean
        validation accuracy over its runs."""
        names = list(FACTOR_NAMES)
        return (self.table.groupby(names, sort=False)
                .agg(seeds=("seed", "nunique"), score=("val_accuracy", "mean"))
                .reset_index())


def type_of(name: str) -> type:
    """int for the integer factors (hidden, local steps), float for the clipping bound."""
    return float if name == "clip" else int


def regime_grid() -> list[dict[str, float]]:
    """Every combination of the values :data:`REGIME_AXES` declare (36 points): the factors
    interact (a narrow network learns only with more local steps), so a search that moves
    one factor at a time from a point at chance walks on noise."""
    names = [axis.name for axis in REGIME_AXES]
    return [{name: type_of(name)(value) for name, value in zip(names, values, strict=True)}
            for values in itertools.product(*(axis.values for axis in REGIME_AXES))]


def regime_search(setup: PadpflSetup, seed: int, sweep_args: dict[str, Any],
                  max_steps: int = 30) -> RegimeSearch:
    """Run the search: every point of :func:`regime_grid`, then the chapter's tuning step
    (:mod:`fedlib.runs.tuning`) extends each axis whose choice sits on its end, until
    the choice is an optimum along every axis or the extensions run out (or for
    ``max_steps`` steps)."""
    points = regime_grid()
    cfgs = [c for p in points for c in regime_tuning_configs(setup, p, seed)]
    table = regime_scores(_factor_runs(cfgs, sweep_args))
    for _ in range(max_steps):
        asked = [{name: type_of(name)(value) for name, value in p.items()}
                 for p in next_points(table, REGIME_AXES, regime_centre(setup))]
        new = [p for p in asked if p not in points]
        if not new:
            break
        points += new
        cfgs = [c for p in points for c in regime_tuning_configs(setup, p, seed)]
        table = regime_scores(_factor_runs(cfgs, sweep_args))
    return RegimeSearch(table, choose_one(table, REGIME_AXES))


def regime_runs(setup: PadpflSetup, point: dict[str, float], seed: int,
                sweep_args: dict[str, Any]) -> pd.DataFrame:
    """The private runs at R = T of every scenario at ``point``, at the tier's seeds."""
    at = regime_setup(setup, point)
    cfgs = _private_at_rounds(configs(at, seed), at.rounds)
    return _sweep(cfgs, sweep_args)


def total_noise_variance(impact: np.ndarray, sigma_c: float, sigma_s: float) -> float:
    """Per-coordinate variance of the noise in one round's broadcast model:
    ``sigma_c^2 sum_i p_i^2 + sigma_s^2`` (independent client and server noise)."""
    p = np.asarray(impact, dtype=np.float64)
    return float(sigma_c ** 2 * np.sum(p ** 2) + sigma_s ** 2)


def scenario_impact(scenario: str, assignment: str, setup: PadpflSetup) -> np.ndarray:
    """(rounds, N) impact factors of ``assignment`` in ``scenario`` at ``setup``'s size (the
    factors depend on how many clients each part has, not on which clients they are)."""
    clients = [math.ceil(c / setup.client_divisor) for c in SCENARIOS[scenario].clients]
    return impact_factors(assignment, np.repeat(np.arange(3), clients), setup.rounds)


def smallest_client(scenario: str, setup: PadpflSetup) -> int:
    """min_j m_j of ``scenario`` at ``setup``'s size (it sets sigma_C)."""
    return min(math.ceil(s / setup.sample_divisor) for s in SCENARIOS[scenario].samples)


def equal_noise_scale(scenario: str, weighted: str, uniform: str, setup: PadpflSetup,
                      epsilon: float, exposures: int) -> float:
    """Factor on the noise of run ``uniform`` that gives it, in round 1, the total noise
    variance (:func:`total_noise_variance`) of run ``weighted`` at the same epsilon and R,
    both with the paper's noise levels."""
    min_m = smallest_client(scenario, setup)
    variances = []
    for name in (weighted, uniform):
        impact = scenario_impact(scenario, name, setup)
        sigma_c, sigma_s = noise_levels(impact, min_m, epsilon, exposures, setup.clip)
        variances.append(total_noise_variance(impact[0], sigma_c, float(sigma_s[0])))
    return float(np.sqrt(variances[0] / variances[1]))


def ablation_arms(scenario: str, setup: PadpflSetup, exposures: int
                  ) -> list[tuple[str, str, float]]:
    """(label, assignment, noise scale) of the ablation's four runs in ``scenario``: the
    weighted and the uniform run at the paper's noise, the uniform run at the weighted
    run's total noise, and the weighted run at the uniform run's total noise."""
    weighted = SCENARIOS[scenario].private_assignment
    k = equal_noise_scale(scenario, weighted, EQUAL, setup, ABLATION_EPSILON, exposures)
    return [("weighted", weighted, 1.0), ("uniform", EQUAL, 1.0),
            ("uniform at weighted noise", EQUAL, k), ("weighted at uniform noise", weighted,
                                                      1.0 / k)]


def ablation_configs(setup: PadpflSetup, seed: int) -> list[dict[str, Any]]:
    """The ablation's runs: :func:`ablation_arms` of every scenario of
    :data:`ABLATION_SCENARIOS` at eps = 20 and the tier's small R (where the private runs
    learn), at the tier's seeds."""
    exposures = setup.small_exposures
    out = []
    for scenario in ABLATION_SCENARIOS:
        base = [c for c in configs(setup, seed, scenarios=[scenario])
                if c["epsilon"] == ABLATION_EPSILON and c["exposures"] == exposures
                and c["assignment"] == EQUAL]
        for config in base:
            for _, assignment, k in ablation_arms(scenario, setup, exposures):
                out.append({**config, "assignment": assignment, "noise_scale": k})
    return out


def ablation_runs(setup: PadpflSetup, seed: int, sweep_args: dict[str, Any]) -> pd.DataFrame:
    """The ablation's runs (cached sweep), with a column ``arm`` naming each."""
    table = _sweep(ablation_configs(setup, seed), sweep_args)
    labels = {}
    for scenario in ABLATION_SCENARIOS:
        for label, assignment, k in ablation_arms(scenario, setup, setup.small_exposures):
            labels[(scenario, assignment, round(k, 12))] = label
    keys = zip(table["scenario"], table["assignment"], table["noise_scale"].round(12),
               strict=True)
    return table.assign(arm=[labels[k] for k in keys])


# --- Sensitivity over R ----------------------------------------------------------------

def sensitivity_exposures(setup: PadpflSetup) -> list[int]:
    """The values of R the chapter shows: :data:`SENSITIVITY_EXPOSURES`, the tier's R and
    R = T, those up to T, in order."""
    wanted = {*SENSITIVITY_EXPOSURES, setup.small_exposures, setup.rounds}
    return sorted(r for r in wanted if r <= setup.rounds)


def exposure_configs(setup: PadpflSetup, seed: int, exposures: int) -> list[dict[str, Any]]:
    """The private runs of every scenario at R = ``exposures``, at the tier's seeds: the
    same configs as the chapter's own where R is the tier's R or T (so they are the same
    runs)."""
    at = dataclasses.replace(setup, small_exposures=exposures)
    return [c for c in configs(at, seed) if c["epsilon"] is not None
            and c["exposures"] == exposures]


def exposure_runs(setup: PadpflSetup, seed: int, exposures: int,
                  sweep_args: dict[str, Any]) -> pd.DataFrame:
    """The runs of :func:`exposure_configs` (cached sweep), one row per run and round."""
    return _sweep(exposure_configs(setup, seed, exposures), sweep_args)


_MODEL_FIELDS = ("rounds", "hidden", "client_divisor", "sample_divisor", "test_examples",
                 "lr", "local_steps", "mu", "clip")
"""The config fields that size a run's computation (a run's cost does not depend on its
epsilon, R or impact factors)."""


def exposure_cost(setup: PadpflSetup, seed: int, exposures: int,
                  store: PublishedStore | None = None) -> tuple[int, float | None]:
    """(runs, estimated CPU seconds) of computing the private runs at R = ``exposures``:
    per run, the mean CPU time of the published private runs of the same scenario and
    model size (any R and seed; a run's share of its group's time, as measured on the
    machine that computed it). None when no such run is published."""
    runs = (store or PublishedStore(EXPERIMENT)).runs()
    per_scenario: dict[str, list[float]] = {}
    for entry in runs.values():
        config = entry["config"]
        if config.get("epsilon") is None or config.get("noise_scale") is not None:
            continue
        if any(config.get(f) != getattr(setup, f) for f in _MODEL_FIELDS):
            continue
        if isinstance(entry.get("cpu_seconds"), int | float):
            per_scenario.setdefault(config["scenario"], []).append(float(entry["cpu_seconds"]))
    wanted = exposure_configs(setup, seed, exposures)
    if any(c["scenario"] not in per_scenario for c in wanted):
        return len(wanted), None
    return len(wanted), float(sum(np.mean(per_scenario[c["scenario"]]) for c in wanted))
