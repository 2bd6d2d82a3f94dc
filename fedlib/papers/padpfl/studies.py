"""Studies beside the paper's figures: the private runs at other values of R, a search
for a regime in which the private curves learn, and an ablation of the noise that impact
factors add.

All only build run configs and hand them to the experiment's cached sweep
(:func:`fedlib.papers.padpfl.experiment.run_group`), so their runs are stored and
published like every other run of the chapter.

**Regime search.** The paper leaves the hidden width, the local steps and the clipping
bound B open (its batch is the client's whole dataset, which its privacy analysis
assumes, so the batch size is not searched). :data:`REGIME_GRID` is declared before any
run: each factor is moved alone around the tier's setting on S1 and one seed, scored by
:func:`regime_score`; the best value of each factor is then combined, and the best point
is repeated over three seeds.

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
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedlib.checks import check_seed
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
from fedlib.runs.published import PublishedStore
from fedlib.sweeps import sweep

REGIME_SCENARIO = "S1"
"""The scenario the regime search runs on (the paper's first private figure)."""

REGIME_GRID: dict[str, tuple[float, ...]] = {
    "hidden": (8, 32, 128),
    "local_steps": (10, 20, 40),
    "clip": (1.0, 3.0, 10.0, 30.0),
}
"""Values tried for each setting the paper leaves open, one factor at a time around the
tier's setting (declared before any run of the search)."""

LEARNS_ACCURACY = 0.3
"""Final test accuracy a private run must reach to count as learning: three times chance."""

REGIME_SEEDS = 3
"""Repeats of the best point of the search."""

ABLATION_SCENARIOS = ("S1", "S2", "S3")
"""Scenarios of the noise ablation: those whose private claims compare a weighted run with
equal factors at the same epsilon."""

ABLATION_EPSILON = max(EPSILONS)

SENSITIVITY_EXPOSURES = (1, 3, 10)
"""Values of R the chapter shows beside the tier's R and R = T (those up to T)."""


def _private_at_rounds(runs: list[dict[str, Any]], rounds: int) -> list[dict[str, Any]]:
    return [c for c in runs if c["epsilon"] is not None and c["exposures"] == rounds]


def regime_points(setup: PadpflSetup) -> list[dict[str, float]]:
    """The one-factor-at-a-time points of :data:`REGIME_GRID` around ``setup``, the centre
    (the tier's own setting) first, each as {factor: value} for all three factors."""
    centre = {name: getattr(setup, name) for name in REGIME_GRID}
    points = [dict(centre)]
    for name, values in REGIME_GRID.items():
        for value in values:
            if value != centre[name]:
                points.append({**centre, name: type(centre[name])(value)})
    return points


def regime_open_edges(point: dict[str, float]) -> list[str]:
    """The factors of ``point`` at the smallest or the largest value :data:`REGIME_GRID`
    tries for them, e.g. ``["hidden width 8 (the smallest tried)"]``: none of those ends
    is a natural bound (a width, a number of steps and B can all go further), so a best
    point there is no optimum."""
    names = {"hidden": "hidden width", "local_steps": "local steps", "clip": "B"}
    out = []
    for name, values in REGIME_GRID.items():
        value = point[name]
        if value == min(values):
            out.append(f"{names[name]} {value:g} (the smallest tried)")
        elif value == max(values):
            out.append(f"{names[name]} {value:g} (the largest tried)")
    return out


def regime_setup(setup: PadpflSetup, point: dict[str, float]) -> PadpflSetup:
    """``setup`` at a point of the search, its small R set to T (only R = T is run)."""
    changes = {"hidden": int(point["hidden"]), "local_steps": int(point["local_steps"]),
               "clip": float(point["clip"])}
    return dataclasses.replace(setup, **changes, small_exposures=setup.rounds)


def regime_configs(setup: PadpflSetup, point: dict[str, float],
                   seeds: Sequence[int]) -> list[dict[str, Any]]:
    """The private runs at R = T of :data:`REGIME_SCENARIO` at ``point``, one per seed and
    private arm, plus the scenario's private assignment without noise (for reference)."""
    at = regime_setup(setup, point)
    spec = SCENARIOS[REGIME_SCENARIO]
    out = []
    for seed in seeds:
        check_seed(seed)
        runs = [c for c in configs(dataclasses.replace(at, seeds=(0,)), seed,
                                   scenarios=[REGIME_SCENARIO])]
        out += _private_at_rounds(runs, at.rounds)
        out += [c for c in runs if c["epsilon"] is None
                and c["assignment"] == spec.private_assignment]
    return out


def _sweep(cfgs: list[dict[str, Any]], sweep_args: dict[str, Any]) -> pd.DataFrame:
    return sweep(EXPERIMENT, cfgs, run_group, batched=BATCHED, max_group_size=64,
                 **sweep_args)


def _labelled(table: pd.DataFrame, point: dict[str, float]) -> pd.DataFrame:
    return table.assign(**{name: value for name, value in point.items()})


def regime_score(table: pd.DataFrame) -> float:
    """Mean final test accuracy of the private runs in ``table`` (higher is better)."""
    last = table[(table["round"] == table["round"].max()) & table["epsilon"].notna()]
    return float(last["test_accuracy"].mean())


def best_point(scored: pd.DataFrame) -> dict[str, float]:
    """The point of highest score in ``scored`` (one row per point: the factors and
    ``score``); the first such row on ties."""
    row = scored.loc[scored["score"].idxmax()]
    return {name: type_of(name)(row[name]) for name in REGIME_GRID}


def type_of(name: str) -> type:
    """int for the integer factors (hidden, local steps), float for the clipping bound."""
    return float if name == "clip" else int


def combined_point(scored: pd.DataFrame, centre: dict[str, float]) -> dict[str, float]:
    """Each factor at its best value of the one-factor search (the centre on ties)."""
    point = {}
    for name in REGIME_GRID:
        others = [n for n in REGIME_GRID if n != name]
        alone = scored[np.logical_and.reduce([scored[n] == centre[n] for n in others])]
        best = alone["score"].max()
        winners = alone[alone["score"] == best][name].tolist()
        point[name] = type_of(name)(centre[name] if centre[name] in winners else winners[0])
    return point


def regime_search(setup: PadpflSetup, seed: int, sweep_args: dict[str, Any]
                  ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """Run the search; return (one row per point with its stage and score, the runs of
    every point on seed ``seed`` with the point's factors as columns, the runs of the best
    point over :data:`REGIME_SEEDS` seeds, the best point)."""
    points = regime_points(setup)
    centre = points[0]
    tables = [_labelled(_sweep(regime_configs(setup, p, [seed]), sweep_args), p)
              for p in points]
    rows = [{**p, "stage": "one factor", "score": regime_score(t)}
            for p, t in zip(points, tables, strict=True)]
    scored = pd.DataFrame(rows)
    combination = combined_point(scored, centre)
    if combination not in points:
        table = _labelled(_sweep(regime_configs(setup, combination, [seed]), sweep_args),
                          combination)
        tables.append(table)
        rows.append({**combination, "stage": "best values combined",
                     "score": regime_score(table)})
        scored = pd.DataFrame(rows)
    best = best_point(scored)
    seeds = [seed + s for s in range(REGIME_SEEDS)]
    repeats = _labelled(_sweep(regime_configs(setup, best, seeds), sweep_args), best)
    return scored, pd.concat(tables, ignore_index=True), repeats, best


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
