"""Scenarios S1-S4 of Talaei & Izadi (PADPFL) on MNIST: tiers, data, configs and runs.

Sixty clients in three parts differ in data quality (salt-and-pepper noise) or
dataset size; the server weighs the parts with impact factors given as ratios,
e.g. "0-1-2" gives every client of part 1, 2, 3 the weight 0, 1/Z, 2/Z with Z
chosen so that the factors sum to one.

The module follows the experiment protocol of every paper: :data:`TIERS` and
:func:`tier` (with the notebook's overrides), :func:`configs`, :data:`BATCHED`,
the sweep runner :func:`run_group` and :func:`run`. Read-outs and claims are in
``claims.py``, figures in ``figures.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedlib.checks import check_count, check_non_negative, check_positive, check_seed
from fedlib.data import load_mnist
from fedlib.data.corruption import salt_and_pepper
from fedlib.data.holdout import unheld_rows
from fedlib.limits import check_finite, check_size
from fedlib.papers.padpfl.algorithm import LocalSolver, run_padpfl
from fedlib.privacy.calibration import padpfl_client_sigma, padpfl_server_sigma
from fedlib.sweeps import check_group, sweep
from fedlib.tiers import check_scale

EXPERIMENT = "padpfl"
DELTA = 0.01
EPSILONS = (5.0, 20.0)
EQUAL = "1-1-1"
MNIST_TEST_SIZE = 10_000

Phases = tuple[tuple[int, tuple[float, float, float]], ...]
"""An impact-factor assignment: (first round, ratios of parts 1-3) per phase."""


@dataclass(frozen=True)
class Scenario:
    """One of the paper's four scenarios (Table I), with the assignments it compares."""

    name: str
    clients: tuple[int, int, int]
    samples: tuple[int, int, int]
    densities: tuple[float, float, float]
    late_densities: tuple[float, float, float] | None
    assignments: tuple[str, ...]
    private_assignment: str
    figure_nonprivate: int
    figure_private: int
    description: str


SCENARIOS: dict[str, Scenario] = {
    "S1": Scenario(
        "S1", (20, 20, 20), (150, 150, 150), (0.5, 0.2, 0.0), None,
        ("1-1-1", "0-1-2", "1-2-3", "0-1-1", "0-0-1"), "0-1-2", 2, 3,
        "data quality: severe / moderate / clean",
    ),
    "S2": Scenario(
        "S2", (20, 35, 5), (150, 150, 150), (0.5, 0.05, 0.0), None,
        ("1-1-1", "0-2-1", "0-1-1", "0-1-2", "1-2-1"), "0-2-1", 4, 5,
        "data quality and group sizes: 20 severe / 35 slight / 5 clean",
    ),
    "S3": Scenario(
        "S3", (20, 20, 20), (50, 120, 271), (0.0, 0.0, 0.0), None,
        ("5-3-1", "1-1-1", "1-3-5"), "1-3-5", 6, 7,
        "dataset size: 50 / 120 / 271 clean examples per client",
    ),
    "S4": Scenario(
        "S4", (20, 20, 20), (150, 150, 150), (0.5, 0.2, 0.05), (0.05, 0.2, 0.5),
        ("1-1-1", "0-1-2", "adaptive"), "adaptive", 8, 9,
        "quality switch: severe / moderate / slight, reversed after a third of the rounds",
    ),
}
"""The paper's scenarios. Samples per client in S2 and S4 and the non-private
assignments other than the paper's best one are inferred (the paper names only
some of its curves)."""

DENSITY_NAMES = {0.5: "severe", 0.2: "moderate", 0.05: "slight", 0.0: "clean"}


def _bounded(value: int, name: str, limit: str) -> int:
    """``value`` checked against the bound :data:`fedlib.limits.LIMITS` keeps for ``limit``,
    the error naming the setup's argument ``name`` as well."""
    try:
        return check_size(value, limit)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


@dataclass(frozen=True)
class PadpflSetup:
    """Size of a run tier and the inferred hyperparameters (all overridable).

    ``small_exposures`` is the small R of the runs with server noise; the other
    private runs use R = rounds. ``lr`` is the paper's; ``local_steps``, ``mu``,
    ``clip`` (B) and ``hidden`` are inferred.
    """

    rounds: int
    hidden: int
    seeds: tuple[int, ...]
    client_divisor: int
    sample_divisor: int
    small_exposures: int
    test_examples: int
    lr: float = 0.02
    local_steps: int = 10
    mu: float = 0.01
    clip: float = 10.0

    def __post_init__(self) -> None:
        check_size(self.rounds, "rounds")
        check_size(self.local_steps, "local_steps")
        _bounded(self.hidden, "hidden", "dim")
        _bounded(self.test_examples, "test_examples", "n_test")
        if self.test_examples > MNIST_TEST_SIZE:
            raise ValueError(f"test_examples={self.test_examples:,} is more than the "
                             f"{MNIST_TEST_SIZE:,} MNIST test images; pass at most "
                             f"{MNIST_TEST_SIZE:,}")
        for name in ("client_divisor", "sample_divisor", "small_exposures"):
            check_count(getattr(self, name), name, minimum=1)
        if self.small_exposures > self.rounds:
            raise ValueError(f"small_exposures (R) must not exceed rounds (T), got "
                             f"R={self.small_exposures} > T={self.rounds}")
        if not isinstance(self.seeds, tuple) or not self.seeds:
            raise ValueError(f"seeds must be a non-empty tuple of seeds, got {self.seeds!r}")
        _bounded(len(self.seeds), "seeds (their number)", "repeats")
        for s in self.seeds:
            check_seed(s)
        check_finite(self.lr, "lr", inclusive=False)
        check_finite(self.mu, "mu")
        check_finite(self.clip, "clip", inclusive=False)
        self.solver()  # the solver's own checks

    def solver(self) -> LocalSolver:
        return LocalSolver(lr=self.lr, steps=self.local_steps, mu=self.mu, clip=self.clip)


TIERS: dict[str, PadpflSetup] = {
    # Seconds: a tenth of the clients, a fifth of their data, three rounds.
    "smoke": PadpflSetup(rounds=3, hidden=8, seeds=(0,), client_divisor=10, sample_divisor=5,
                         small_exposures=1, test_examples=500),
    # Minutes on 2 cores: the paper's clients, data and rounds, three seeds; the
    # hidden layer is narrower than the inferred 128 of the paper tier.
    "quick": PadpflSetup(rounds=30, hidden=32, seeds=(0, 1, 2), client_divisor=1,
                         sample_divisor=1, small_exposures=3, test_examples=10_000),
    # Five seeds: every comparing claim is judged over five paired repeats.
    "paper": PadpflSetup(rounds=30, hidden=128, seeds=(0, 1, 2, 3, 4), client_divisor=1,
                         sample_divisor=1, small_exposures=3, test_examples=10_000),
}


def tier(
    scale: str,
    *,
    hidden: int | None = None,
    small_r: int | None = None,
    clip_bound: float | None = None,
    mu: float | None = None,
    local_steps: int | None = None,
    lr: float | None = None,
) -> PadpflSetup:
    """The setup of tier ``scale``, with the notebook's overrides of the inferred settings.

    Parameters
    ----------
    scale
        Run tier, one of ``smoke``, ``quick``, ``paper``.
    hidden, small_r
        Width of the hidden layer and the small R of the runs with server noise
        (``small_exposures``); None or 0 keeps the tier's value.
    clip_bound, mu, local_steps, lr
        Clipping bound B (``clip``), FedProx weight, local steps and learning
        rate; None keeps the tier's value.

    Raises
    ------
    ValueError
        For an unknown tier, a ``hidden`` or ``small_r`` that is not an integer
        >= 0, or overrides the setup rejects (e.g. R larger than T).
    """
    setup = TIERS[check_scale(scale)]
    for name, value in {"hidden": hidden, "small_r": small_r}.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise ValueError(f"{name}={value!r} must be an integer >= 0 (0 keeps the tier's value)")
    if clip_bound is not None:
        check_positive(clip_bound, "clip_bound")
    if mu is not None:
        check_non_negative(mu, "mu")
    if lr is not None:
        check_positive(lr, "lr")
    if local_steps is not None:
        local_steps = check_count(local_steps, "local_steps", minimum=1)
    changes = {"hidden": hidden or None, "small_exposures": small_r or None, "clip": clip_bound,
               "mu": mu, "local_steps": local_steps, "lr": lr}
    changes = {k: v for k, v in changes.items() if v is not None}
    return dataclasses.replace(setup, **changes) if changes else setup


def run_seeds(setup: PadpflSetup, seed: int) -> tuple[int, ...]:
    """Seeds of the runs: the tier's seeds shifted by ``seed`` (the notebook's first seed)."""
    return tuple(seed + s for s in range(len(setup.seeds)))


def switch_round(rounds: int) -> int:
    """First round of S4's second phase: after round 10 of 30 (a third of the rounds)."""
    return max(2, rounds // 3 + 1)


def assignment_phases(name: str, rounds: int) -> Phases:
    """Impact-factor phases of an assignment name ("0-1-2" or "adaptive")."""
    if name == "adaptive":
        return ((1, (0.0, 1.0, 2.0)), (switch_round(rounds), (2.0, 1.0, 0.0)))
    try:
        ratios = tuple(float(v) for v in name.split("-"))
    except ValueError:
        ratios = ()
    if len(ratios) != 3 or min(ratios) < 0 or sum(ratios) <= 0:
        raise ValueError(
            f"assignment {name!r} is not three non-negative ratios like '0-1-2' or 'adaptive'"
        )
    return ((1, ratios),)  # type: ignore[return-value]


def impact_factors(name: str, parts: np.ndarray, rounds: int) -> np.ndarray:
    """(rounds, N) impact factors of assignment ``name`` for clients in ``parts`` (0, 1, 2)."""
    parts = np.asarray(parts)
    counts = np.bincount(parts, minlength=3)
    schedule = np.zeros((rounds, len(parts)))
    phases = assignment_phases(name, rounds)
    for index, (first, ratios) in enumerate(phases):
        last = phases[index + 1][0] - 1 if index + 1 < len(phases) else rounds
        ratios_arr = np.asarray(ratios)
        total = float(np.sum(ratios_arr * counts))
        if total <= 0:
            raise ValueError(f"assignment {name!r} gives zero weight to every client here")
        schedule[first - 1:last] = ratios_arr[parts] / total
    return schedule


@dataclass(frozen=True, eq=False)
class ScenarioData:
    """Clients of one scenario and seed, ready for the engine."""

    phases: list[torch.Tensor]
    y: torch.Tensor
    mask: torch.Tensor
    parts: np.ndarray
    sizes: np.ndarray
    clean_x: torch.Tensor
    clean_y: torch.Tensor
    switch: int | None
    rows: np.ndarray
    """Indices of the clients' images in the MNIST training split (client by client)."""


@lru_cache(maxsize=2)
def mnist_images(split: str) -> tuple[np.ndarray, np.ndarray]:
    """MNIST ``split`` as float32 (n, 784) images in [0, 1] and int labels (cached)."""
    x, y = load_mnist(split)
    return (x.reshape(len(x), -1).astype(np.float32) / 255.0), y


def scenario_data(
    scenario: str, seed: int, rounds: int, client_divisor: int = 1, sample_divisor: int = 1
) -> ScenarioData:
    """Draw the clients' MNIST subsets and corrupt them, seeded by (scenario, seed).

    Clients get disjoint random training images (labels as they come, so the label
    mix is IID); the parts are a random split of the clients; every client's
    images get salt-and-pepper noise at its part's density (and a fresh draw at
    the late density for the second phase of S4). The divisors shrink the scenario
    (fewer clients per part, fewer examples per client) for the smoke tier.
    """
    spec = SCENARIOS[scenario]
    rng = np.random.default_rng([seed, int(scenario[1:])])
    clients = [math.ceil(c / client_divisor) for c in spec.clients]
    samples = [math.ceil(s / sample_divisor) for s in spec.samples]
    parts = rng.permutation(np.repeat(np.arange(3), clients))
    sizes = np.asarray([samples[p] for p in parts])
    x_all, y_all = mnist_images("train")
    chosen = rng.choice(len(y_all), size=int(sizes.sum()), replace=False)
    n, m = len(parts), int(sizes.max())
    phases_np = [np.zeros((n, m, x_all.shape[1]), np.float32)]
    if spec.late_densities is not None:
        phases_np.append(np.zeros_like(phases_np[0]))
    y = np.zeros((n, m), np.int64)
    mask = np.zeros((n, m), bool)
    offset = 0
    for i, (part, size) in enumerate(zip(parts, sizes, strict=True)):
        rows = chosen[offset:offset + size]
        offset += size
        y[i, :size] = y_all[rows]
        mask[i, :size] = True
        phases_np[0][i, :size] = salt_and_pepper(x_all[rows], spec.densities[part], rng)
        if spec.late_densities is not None:
            phases_np[1][i, :size] = salt_and_pepper(x_all[rows], spec.late_densities[part], rng)
    return ScenarioData(
        phases=[torch.from_numpy(p) for p in phases_np],
        y=torch.from_numpy(y),
        mask=torch.from_numpy(mask),
        parts=parts,
        sizes=sizes,
        clean_x=torch.from_numpy(x_all[chosen]),
        clean_y=torch.from_numpy(y_all[chosen].astype(np.int64)),
        switch=switch_round(rounds) if spec.late_densities is not None else None,
        rows=chosen,
    )


def validation_rows(scenario: str, seed: int, held: np.ndarray, n: int, total: int
                    ) -> np.ndarray:
    """Indices of ``n`` of the ``total`` MNIST training images that no client of the
    scenario holds (``held``: the clients' rows, :attr:`ScenarioData.rows`), drawn by
    (scenario, seed)."""
    return unheld_rows(total, held, n, np.random.default_rng([seed, int(scenario[1:]), 1]),
                       name="n_validation")


def validation_images(scenario: str, seed: int, held: np.ndarray, n: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """The clean images and labels of :func:`validation_rows`: the data a tuning run is
    scored on (the test images are never read for a choice)."""
    x_all, y_all = mnist_images("train")
    rows = validation_rows(scenario, seed, held, n, len(y_all))
    return torch.from_numpy(x_all[rows]), torch.from_numpy(y_all[rows].astype(np.int64))


def _scenario_configs(
    scenario: str, setup: PadpflSetup, seeds: Sequence[int]
) -> list[dict[str, Any]]:
    """Every run of one scenario: the non-private assignments, and the private runs
    (the paper's assignment at each epsilon, equal factors at the largest) with
    R = T (no server noise) and with the small R (server noise), for each seed."""
    spec = SCENARIOS[scenario]
    base = {
        "experiment": EXPERIMENT, "scenario": scenario, "rounds": setup.rounds,
        "hidden": setup.hidden, "client_divisor": setup.client_divisor,
        "sample_divisor": setup.sample_divisor, "test_examples": setup.test_examples,
        "lr": setup.lr, "local_steps": setup.local_steps, "mu": setup.mu, "clip": setup.clip,
        "delta": DELTA,
    }
    runs = []
    for seed in seeds:
        for name in spec.assignments:
            runs.append({**base, "seed": seed, "assignment": name, "epsilon": None,
                         "exposures": None})
        for exposures in dict.fromkeys((setup.rounds, setup.small_exposures)):
            for name, eps in [(spec.private_assignment, e) for e in EPSILONS] + [
                (EQUAL, max(EPSILONS))
            ]:
                runs.append({**base, "seed": seed, "assignment": name, "epsilon": eps,
                             "exposures": exposures})
    return runs


def configs(
    setup: PadpflSetup, seed: int, *, scenarios: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Every run of the given scenarios (None: all four) at a tier, seeds shifted by ``seed``.

    Plain data; no dataset is read. Runs of one scenario and seed share one
    runner call (they differ only in the :data:`BATCHED` fields).
    """
    check_seed(seed)
    scenarios = tuple(SCENARIOS) if scenarios is None else tuple(scenarios)
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        raise ValueError(f"unknown scenarios {unknown}; use some of {', '.join(SCENARIOS)}")
    seeds = run_seeds(setup, seed)
    return [c for s in scenarios for c in _scenario_configs(s, setup, seeds)]


BATCHED = ("assignment", "epsilon", "exposures", "noise_scale")
"""Runs on the same clients (scenario, seed, tier) share one vectorized pass."""


def noise_scale(config: dict[str, Any]) -> float:
    """The factor on both noise levels of a run: its ``noise_scale`` field, 1 when absent
    (the paper's noise). Ablations set it to compare runs at equal total noise."""
    value = config.get("noise_scale", 1.0)
    return check_finite(1.0 if value is None else value, "noise_scale")


def noise_levels(
    impact: np.ndarray, min_m: int, epsilon: float | None, exposures: int | None, clip: float,
    delta: float = DELTA,
) -> tuple[float, np.ndarray]:
    """sigma_C and the per-round sigma_S of the paper's eqs. (8) and (13).

    ``impact`` is (T, N); with adaptive factors the server noise follows each
    round's factors. Non-private runs (epsilon None) get zeros.
    """
    rounds = impact.shape[0]
    if epsilon is None:
        return 0.0, np.zeros(rounds)
    if exposures is None:
        raise ValueError("a private run needs the number of exposed uploads R")
    sigma_c = padpfl_client_sigma(clip, exposures, min_m, epsilon, delta)
    sigma_s = np.array([
        padpfl_server_sigma(clip, rounds, exposures, p, min_m, epsilon, delta) for p in impact
    ])
    return sigma_c, sigma_s


def run_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: all runs of one scenario and seed in one engine call."""
    check_group(configs, BATCHED)
    first = configs[0]
    data = scenario_data(first["scenario"], first["seed"], first["rounds"],
                         first["client_divisor"], first["sample_divisor"])
    rounds = first["rounds"]
    min_m = int(data.sizes.min())
    impacts, sig_c, sig_s = [], [], []
    for config in configs:
        impact = impact_factors(config["assignment"], data.parts, rounds)
        c, s = noise_levels(impact, min_m, config["epsilon"], config["exposures"],
                            config["clip"], config["delta"])
        factor = noise_scale(config)
        impacts.append(impact)
        sig_c.append(c * factor)
        sig_s.append(s * factor)
    test_x, test_y = mnist_images("test")
    n_test = first["test_examples"]
    eval_sets = {
        "train": (data.clean_x, data.clean_y),
        "test": (torch.from_numpy(test_x[:n_test]),
                 torch.from_numpy(test_y[:n_test].astype(np.int64))),
    }
    n_validation = first.get("n_validation")
    if n_validation:
        eval_sets["val"] = validation_images(first["scenario"], first["seed"], data.rows,
                                             int(n_validation))
    history = run_padpfl(
        data.phases, data.y, data.mask, np.stack(impacts), sig_c, np.stack(sig_s),
        hidden=first["hidden"],
        solver=LocalSolver(first["lr"], first["local_steps"], first["mu"], first["clip"]),
        data_schedule=[data.switch] if data.switch else None,
        eval_sets=eval_sets,
        seed=first["seed"],
    )
    tables = []
    for g, config in enumerate(configs):
        tables.append(pd.DataFrame({
            "scenario": config["scenario"],
            "seed": config["seed"],
            "assignment": config["assignment"],
            "epsilon": np.nan if config["epsilon"] is None else config["epsilon"],
            "exposures": np.nan if config["exposures"] is None else config["exposures"],
            "round": np.arange(rounds + 1),
            "train_loss": history.loss["train"][g],
            "test_accuracy": history.accuracy["test"][g],
            "client_sigma": sig_c[g],
            "server_sigma": np.concatenate([[0.0], sig_s[g]]),
            "noise_scale": noise_scale(config),
            **({"val_accuracy": history.accuracy["val"][g]} if n_validation else {}),
        }))
    return tables


def run(
    setup: PadpflSetup,
    seed: int,
    *,
    scenarios: Sequence[str] | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Every run of the given scenarios (None: all) at a tier (cached); one row per run and
    round. ``seed`` shifts the tier's seeds (see :func:`configs`)."""
    return sweep(EXPERIMENT, configs(setup, seed, scenarios=scenarios), run_group,
                 batched=BATCHED, max_group_size=64, workers=workers, ray_address=ray_address,
                 progress=progress)
