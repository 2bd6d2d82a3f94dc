"""Scenarios S1-S4 of Talaei & Izadi (PADPFL) on MNIST: data, runs and claims.

Sixty clients in three parts differ in data quality (salt-and-pepper noise) or
dataset size; the server weighs the parts with impact factors given as ratios,
e.g. "0-1-2" gives every client of part 1, 2, 3 the weight 0, 1/Z, 2/Z with Z
chosen so that the factors sum to one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedlib.claims import Claim, verdict
from fedlib.data import load_mnist
from fedlib.data.corruption import salt_and_pepper
from fedlib.papers.padpfl.algorithm import LocalSolver, run_padpfl
from fedlib.privacy import epsilon as exact_epsilon
from fedlib.privacy.calibration import (
    classic_gaussian_c,
    padpfl_client_sigma,
    padpfl_server_sigma,
)
from fedlib.sweeps import sweep
from fedlib.tiers import check_scale

EXPERIMENT = "padpfl"
DELTA = 0.01
EPSILONS = (5.0, 20.0)
EQUAL = "1-1-1"

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
        for name in ("rounds", "hidden", "client_divisor", "sample_divisor", "small_exposures",
                     "test_examples", "local_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.small_exposures > self.rounds:
            raise ValueError(f"small_exposures (R) must not exceed rounds (T), got "
                             f"R={self.small_exposures} > T={self.rounds}")
        if not self.seeds or any(not isinstance(s, int) or s < 0 for s in self.seeds):
            raise ValueError(f"seeds must be non-negative integers, got {self.seeds!r}")
        self.solver()  # validates lr, mu, clip

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
    "paper": PadpflSetup(rounds=30, hidden=128, seeds=(0, 1, 2), client_divisor=1,
                         sample_divisor=1, small_exposures=3, test_examples=10_000),
}


def tier(scale: str) -> PadpflSetup:
    """The setup of tier ``scale``."""
    return TIERS[check_scale(scale)]


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
    )


def scenario_configs(scenario: str, setup: PadpflSetup) -> list[dict[str, Any]]:
    """Every run of one scenario: the non-private assignments, and the private runs
    (the paper's assignment at each epsilon, equal factors at the largest) with
    R = T (no server noise) and with the small R (server noise)."""
    spec = SCENARIOS[scenario]
    base = {
        "experiment": EXPERIMENT, "scenario": scenario, "rounds": setup.rounds,
        "hidden": setup.hidden, "client_divisor": setup.client_divisor,
        "sample_divisor": setup.sample_divisor, "test_examples": setup.test_examples,
        "lr": setup.lr, "local_steps": setup.local_steps, "mu": setup.mu, "clip": setup.clip,
        "delta": DELTA,
    }
    runs = []
    for seed in setup.seeds:
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


BATCHED_FIELDS = ("assignment", "epsilon", "exposures")


def group_key(config: dict[str, Any]) -> tuple:
    """Runs on the same clients (scenario, seed, tier) share one vectorized pass."""
    return tuple(sorted((k, v) for k, v in config.items() if k not in BATCHED_FIELDS))


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
    first = configs[0]
    if any(group_key(c) != group_key(first) for c in configs):
        raise ValueError("run_group needs configs that differ only in " + ", ".join(BATCHED_FIELDS))
    data = scenario_data(first["scenario"], first["seed"], first["rounds"],
                         first["client_divisor"], first["sample_divisor"])
    rounds = first["rounds"]
    min_m = int(data.sizes.min())
    impacts, sig_c, sig_s = [], [], []
    for config in configs:
        impact = impact_factors(config["assignment"], data.parts, rounds)
        c, s = noise_levels(impact, min_m, config["epsilon"], config["exposures"],
                            config["clip"], config["delta"])
        impacts.append(impact)
        sig_c.append(c)
        sig_s.append(s)
    test_x, test_y = mnist_images("test")
    n_test = first["test_examples"]
    history = run_padpfl(
        data.phases, data.y, data.mask, np.stack(impacts), sig_c, np.stack(sig_s),
        hidden=first["hidden"],
        solver=LocalSolver(first["lr"], first["local_steps"], first["mu"], first["clip"]),
        data_schedule=[data.switch] if data.switch else None,
        eval_sets={
            "train": (data.clean_x, data.clean_y),
            "test": (torch.from_numpy(test_x[:n_test]),
                     torch.from_numpy(test_y[:n_test].astype(np.int64))),
        },
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
        }))
    return tables


def run_scenarios(
    setup: PadpflSetup,
    scenarios: tuple[str, ...] = tuple(SCENARIOS),
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Every run of the given scenarios at a tier (cached); one row per run and round."""
    configs = [c for s in scenarios for c in scenario_configs(s, setup)]
    return sweep(EXPERIMENT, configs, run_group, batched=BATCHED_FIELDS, max_group_size=64,
                 workers=workers, ray_address=ray_address, progress=progress)


def curve_label(row: pd.Series) -> str:
    """Legend label of a run: assignment, and epsilon when private."""
    if pd.isna(row["epsilon"]):
        return f"{row['assignment']}, non-private"
    return f"{row['assignment']}, eps={row['epsilon']:g}"


def final_losses(runs: pd.DataFrame) -> pd.DataFrame:
    """Loss at the last round per run, with the run's labels."""
    last = runs[runs["round"] == runs["round"].max()]
    return last[["scenario", "seed", "assignment", "epsilon", "exposures", "train_loss",
                 "test_accuracy"]].reset_index(drop=True)


def _select(frame: pd.DataFrame, scenario: str, assignment: str, epsilon: float | None,
            exposures: int | None) -> pd.DataFrame:
    sel = frame[(frame["scenario"] == scenario) & (frame["assignment"] == assignment)]
    sel = sel[sel["epsilon"].isna()] if epsilon is None else sel[sel["epsilon"] == epsilon]
    if exposures is not None:
        sel = sel[sel["exposures"] == exposures]
    return sel


def _mean_final(finals: pd.DataFrame, scenario: str, assignment: str,
                epsilon: float | None = None, exposures: int | None = None) -> tuple[float, str]:
    sel = _select(finals, scenario, assignment, epsilon, exposures)["train_loss"]
    if sel.empty:
        raise KeyError(f"no runs for {scenario} {assignment} eps={epsilon} R={exposures}")
    spread = f"{sel.mean():.3f} [{sel.min():.3f}, {sel.max():.3f}]"
    return float(sel.mean()), spread


def evaluate_claims(runs: pd.DataFrame, setup: PadpflSetup, scale: str) -> list[Claim]:
    """Evaluate the claims of Figures 2-9 on the seed-mean final training loss.

    Private claims are judged at R = T, the reading in which every upload is
    exposed (the paper's formulas then add no server noise); the evidence also
    gives the small-R runs.
    """
    finals = final_losses(runs)
    big, small = setup.rounds, setup.small_exposures
    high, low = max(EPSILONS), min(EPSILONS)
    claims: list[Claim] = []

    def nonprivate_ranking(scenario: str) -> list[tuple[str, float, str]]:
        spec = SCENARIOS[scenario]
        rows = [(a, *_mean_final(finals, scenario, a)) for a in spec.assignments]
        return sorted(rows, key=lambda r: r[1])

    def ranking_text(rows: list[tuple[str, float, str]]) -> str:
        return "; ".join(f"{a}: {s}" for a, _, s in rows)

    def add(claim_id: str, holds: bool, text: str, evidence: str, paper_value: str = "") -> None:
        claims.append(Claim(paper="padpfl", claim_id=claim_id, status=verdict(holds), text=text,
                            evidence=evidence, paper_value=paper_value, scale=scale))

    # Figure 2 (S1, non-private).
    rows = nonprivate_ranking("S1")
    add("fig2-equal-worst", rows[-1][0] == EQUAL,
        "S1 non-private: equal impact factors give the highest final loss of the assignments",
        "final loss mean [min, max] over seeds, best first: " + ranking_text(rows))
    add("fig2-012-best", rows[0][0] == "0-1-2",
        "S1 non-private: '0-1-2' gives the lowest final loss",
        "best: " + rows[0][0] + "; " + ranking_text(rows))

    # Private comparisons shared by Figures 3, 5, 7, 9.
    def private_pair(scenario: str, exposures: int) -> tuple[float, float, float, str]:
        a = SCENARIOS[scenario].private_assignment
        lo, lo_s = _mean_final(finals, scenario, a, low, exposures)
        hi, hi_s = _mean_final(finals, scenario, a, high, exposures)
        eq, eq_s = _mean_final(finals, scenario, EQUAL, high, exposures)
        text = (f"R={exposures}: {a} eps={low:g} {lo_s}, {a} eps={high:g} {hi_s}, "
                f"equal eps={high:g} {eq_s}")
        return lo, hi, eq, text

    def both(scenario: str) -> tuple[tuple[float, float, float], str]:
        lo, hi, eq, text_big = private_pair(scenario, big)
        _, _, _, text_small = private_pair(scenario, small)
        return (lo, hi, eq), text_big + " | " + text_small

    (lo, hi, eq), text = both("S1")
    add("fig3-eps20-below-eps5", hi < lo,
        "S1 private, p = (0, 1/60, 1/30): the final loss at eps=20 is below that at eps=5",
        text)
    add("fig3-equal-eps20-worse-than-weighted-eps5", eq > lo,
        "S1 private: equal factors at eps=20 end above the weighted run at eps=5", text)

    # Figure 4 (S2, non-private).
    rows = nonprivate_ranking("S2")
    add("fig4-021-best", rows[0][0] == "0-2-1",
        "S2 non-private: '0-2-1' gives the lowest final loss", ranking_text(rows))
    add("fig4-equal-poor", [r[0] for r in rows].index(EQUAL) >= len(rows) - 2,
        "S2 non-private: equal factors are among the two worst assignments", ranking_text(rows))

    # Figure 5 (S2, private).
    (lo, hi, eq), text = both("S2")
    add("fig5-weighted-beats-equal", hi < eq,
        "S2 private at eps=20: p = (0, 2/75, 1/75) ends below equal factors", text)

    # Figure 6 (S3, non-private).
    rows = nonprivate_ranking("S3")
    order = [r[0] for r in rows]
    add("fig6-weight-on-large-clients", order == ["1-3-5", "1-1-1", "5-3-1"],
        "S3 non-private: the more weight on the clients with more data, the lower the final "
        "loss (1-3-5 < 1-1-1 < 5-3-1)", ranking_text(rows))

    # Figure 7 (S3, private).
    (lo, hi, eq), text = both("S3")
    add("fig7-135-beats-equal-eps20", hi < eq,
        "S3 private at eps=20: 1:3:5 factors end below equal factors, although their "
        "aggregate noise is larger", text)

    # Figure 8 (S4, non-private).
    rows = nonprivate_ranking("S4")
    area = {}
    for a in SCENARIOS["S4"].assignments:
        sel = _select(runs, "S4", a, None, None)
        area[a] = float(sel.groupby("seed")["train_loss"].mean().mean())
    fastest = min(area, key=area.get)
    add("fig8-adaptive-best", rows[0][0] == "adaptive" and fastest == "adaptive",
        "S4 non-private: adaptive factors (heaviest on the slightly noisy part) give the "
        "lowest final loss and the lowest mean loss over the rounds",
        ranking_text(rows) + "; mean over rounds: "
        + ", ".join(f"{a}: {v:.3f}" for a, v in area.items()))

    # Figure 9 (S4, private, adaptive).
    (lo, hi, eq), text = both("S4")
    start = float(runs[(runs["scenario"] == "S4") & (runs["round"] == 0)]["train_loss"].mean())
    add("fig9-eps20-below-eps5", hi < lo,
        "S4 private, adaptive factors: the final loss at eps=20 is below that at eps=5", text)
    add("fig9-adaptive-converges", hi < start and lo < start,
        "S4 private, adaptive factors: the loss ends below its starting value at both epsilons",
        f"start {start:.3f}; " + text)
    return claims


def accounting_table(
    scenario: str, setup: PadpflSetup, exposures: int, epsilon: float
) -> pd.DataFrame:
    """Per client part: the paper's epsilon and what exact accountants give.

    Each upload is a Gaussian mechanism of sensitivity 2B/m_i (the paper's
    bound) and noise sigma_C, i.e. noise multiplier sigma_C m_i / (2B). The
    paper composes the classic bound linearly over R exposures; the exact
    accountants compose the same mechanism over R exposures and over all T
    uploads.
    """
    spec = SCENARIOS[scenario]
    samples = [math.ceil(s / setup.sample_divisor) for s in spec.samples]
    min_m = min(samples)
    clip = setup.clip
    sigma_c = padpfl_client_sigma(clip, exposures, min_m, epsilon, DELTA)
    rows = []
    for part, m in enumerate(samples):
        multiplier = sigma_c * m / (2 * clip)
        per_upload = 2 * clip * classic_gaussian_c(DELTA) / (m * sigma_c)
        rows.append({
            "part": part + 1,
            "examples per client": m,
            "sigma_C": sigma_c,
            "noise multiplier": multiplier,
            "paper: eps per upload": per_upload,
            "paper: eps (R uploads, linear)": per_upload * exposures,
            f"PLD: eps over R={exposures}": exact_epsilon(multiplier, 1.0, exposures, DELTA,
                                                          accountant="pld"),
            f"RDP: eps over R={exposures}": exact_epsilon(multiplier, 1.0, exposures, DELTA,
                                                          accountant="rdp"),
            f"PLD: eps over T={setup.rounds}": exact_epsilon(multiplier, 1.0, setup.rounds, DELTA,
                                                         accountant="pld"),
        })
    return pd.DataFrame(rows)
