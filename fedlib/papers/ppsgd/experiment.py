"""Figure 1a of Bietti et al. (2022): PPSGD on the synthetic additive model.

The grid of runs for each tier, the sweep runner, the per-iteration minimum
over step sizes that the paper plots, and the evaluation of the figure's claims.
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
from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.papers.ppsgd.algorithm import PPSGDConfig, releases_global_model, run_synthetic
from fedlib.privacy import epsilon_curve
from fedlib.sweeps import sweep
from fedlib.tiers import check_scale

EXPERIMENT = "ppsgd-synthetic"
DELTA = 1e-4
PAPER_STEPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.2, 1.5, 1.8)
QUICK_STEPS = PAPER_STEPS[4:]
"""0.2 ... 1.8: the steps that are ever the best at C = 1."""
PAPER_ALPHA_Q = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, math.inf)
PAPER_SIGMAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
FIGURE_ALPHA_Q = (0.0, 0.3, 1.0, 3.0, math.inf)
"""The personalization levels Figure 1a draws."""


@dataclass(frozen=True)
class SyntheticGrid:
    """Problem size and hyperparameter grid of one tier."""

    n_users: int
    dim: int
    iterations: int
    steps: tuple[float, ...]
    alpha_q: tuple[float, ...]
    sigmas: tuple[float, ...]
    clips: tuple[float, ...] = (1.0,)
    batch_size: int = 10


FIGURE_CLIP = 1.0
"""The clipping norm of the paper's plots; the claims are evaluated there."""


TIERS: dict[str, SyntheticGrid] = {
    # Seconds: a small problem that still takes every code path (all five
    # plotted alphas, a private and a non-private noise level).
    "smoke": SyntheticGrid(
        n_users=50, dim=20, iterations=40, steps=(0.1, 0.7), alpha_q=FIGURE_ALPHA_Q,
        sigmas=(0.0, 100.0), clips=(1.0, 100.0),
    ),
    # Minutes on 2 cores: the paper's problem (N=1000, d=100, 300 iterations),
    # the upper seven steps of its grid (at C=1 the four smaller ones are never
    # the best at any iteration, alpha or noise level: checked on the full grid),
    # the five plotted alphas, four noise levels, at the plots' clipping norm C=1
    # and at C=100 (how much clipping matters).
    "quick": SyntheticGrid(
        n_users=1000, dim=100, iterations=300, steps=QUICK_STEPS, alpha_q=FIGURE_ALPHA_Q,
        sigmas=(0.0, 10.0, 100.0, 1000.0), clips=(1.0, 100.0),
    ),
    # The authors' whole grid, clipping norms included.
    "paper": SyntheticGrid(
        n_users=1000, dim=100, iterations=300, steps=PAPER_STEPS, alpha_q=PAPER_ALPHA_Q,
        sigmas=PAPER_SIGMAS, clips=(0.1, 1.0, 10.0, 100.0),
    ),
}


def grid(scale: str) -> SyntheticGrid:
    """The grid of a tier (``smoke``, ``quick`` or ``paper``)."""
    return TIERS[check_scale(scale)]


def figure1a_configs(scale: str, seed: int, device: str = "cpu") -> list[dict[str, Any]]:
    """One config dict per run of the tier's grid."""
    g = grid(scale)
    return [
        {
            "experiment": EXPERIMENT,
            "n_users": g.n_users,
            "dim": g.dim,
            "iterations": g.iterations,
            "batch_size": g.batch_size,
            "seed": int(seed),
            "device": device,
            "step": float(step),
            "alpha_q": float(alpha_q),
            "noise_multiplier": float(sigma),
            "clip": float(clip),
        }
        for sigma in g.sigmas
        for alpha_q in g.alpha_q
        for step in g.steps
        for clip in g.clips
    ]


BATCHED_FIELDS = ("step", "alpha_q", "noise_multiplier", "clip")


def group_key(config: dict[str, Any]) -> tuple:
    """Runs that differ only in step, alpha, noise or clip share one vectorized pass."""
    return tuple(sorted((k, v) for k, v in config.items() if k not in BATCHED_FIELDS))


@lru_cache(maxsize=256)
def _epsilons(noise_multiplier: float, sampling_rate: float, steps: int) -> np.ndarray:
    return epsilon_curve(noise_multiplier, sampling_rate, steps, DELTA, accountant="rdp")


def run_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: one vectorized PPSGD pass for configs sharing a task and seed."""
    first = configs[0]
    if any(group_key(c) != group_key(first) for c in configs):
        raise ValueError("run_group needs configs that differ only in " + ", ".join(BATCHED_FIELDS))
    task = AdditiveSyntheticTask(n_users=first["n_users"], dim=first["dim"], seed=first["seed"])
    ppsgd_configs = [
        PPSGDConfig(step=c["step"], alpha_q=c["alpha_q"], noise_multiplier=c["noise_multiplier"],
                    clip=c["clip"])
        for c in configs
    ]
    risks = run_synthetic(
        task, ppsgd_configs, first["iterations"], batch_size=first["batch_size"],
        seed=first["seed"] + 1, dtype=torch.float32, device=first["device"],
    )
    iterations = np.arange(1, first["iterations"] + 1)
    tables = []
    for config, ppsgd_config, risk in zip(configs, ppsgd_configs, risks, strict=True):
        if releases_global_model(ppsgd_config):
            eps = _epsilons(ppsgd_config.noise_multiplier, 1.0, first["iterations"])
        else:
            eps = np.zeros(first["iterations"])
        tables.append(
            pd.DataFrame(
                {
                    **{k: config[k] for k in ("step", "alpha_q", "noise_multiplier", "clip")},
                    "iteration": iterations,
                    "excess_risk": risk,
                    "epsilon": eps,
                }
            )
        )
    return tables


def run_figure1a(
    scale: str,
    seed: int,
    *,
    device: str = "cpu",
    workers: int | None = None,
    ray_address: str | None = None,
    max_group_size: int = 120,
    progress: bool = True,
) -> pd.DataFrame:
    """Every run of the tier (cached); one row per run and iteration."""
    return sweep(
        EXPERIMENT,
        figure1a_configs(scale, seed, device),
        run_group,
        batched=BATCHED_FIELDS,
        max_group_size=max_group_size,
        workers=workers,
        ray_address=ray_address,
        progress=progress,
    )


def best_over_steps(runs: pd.DataFrame) -> pd.DataFrame:
    """The paper's curves: at each iteration, the minimum excess risk over step sizes.

    Non-finite risks (diverged runs) are ignored. Returns columns
    noise_multiplier, alpha_q, iteration, excess_risk, best_step, epsilon.
    """
    finite = runs[np.isfinite(runs["excess_risk"])]
    keys = ["clip", "noise_multiplier", "alpha_q", "iteration"]
    best = finite.loc[finite.groupby(keys)["excess_risk"].idxmin()]
    best = best.rename(columns={"step": "best_step"})
    return best[keys + ["excess_risk", "best_step", "epsilon"]].reset_index(drop=True)


def _curve(curves: pd.DataFrame, sigma: float, alpha_q: float) -> pd.Series:
    sel = curves[(curves["noise_multiplier"] == sigma) & (curves["alpha_q"] == alpha_q)]
    return sel.set_index("iteration")["excess_risk"].sort_index()


def _fmt_alpha(alpha_q: float) -> str:
    return "inf" if math.isinf(alpha_q) else f"{alpha_q:g}"


def evaluate_figure1a_claims(curves: pd.DataFrame, scale: str) -> list[Claim]:
    """Check the claims of Figure 1a on the best-over-steps curves at C = 1."""
    curves = curves[curves["clip"] == FIGURE_CLIP]
    sigmas = sorted(curves["noise_multiplier"].unique())
    alphas = sorted(curves["alpha_q"].unique())
    iterations = int(curves["iteration"].max())
    early = max(1, iterations // 30)
    claims: list[Claim] = []

    # 1. Global learning is fastest at the start, in every panel.
    wins, details = [], []
    for sigma in sigmas:
        at_early = {a: _curve(curves, sigma, a).loc[early] for a in alphas}
        best_alpha = min(at_early, key=at_early.get)
        wins.append(math.isinf(best_alpha))
        details.append(f"sigma={sigma:g}: best alpha*Q={_fmt_alpha(best_alpha)}")
    claims.append(Claim(
        paper="ppsgd", claim_id="fig1a-global-fastest-early", status=verdict(all(wins)),
        text=f"alpha*Q=inf has the lowest excess risk early (iteration {early}) in every panel",
        evidence=f"{sum(wins)}/{len(wins)} panels; " + "; ".join(details), scale=scale,
    ))

    # 2. Global learning plateaus even without noise: it stops improving and
    #    ends above the best personalized level.
    glob = _curve(curves, 0.0, math.inf)
    half = glob.loc[iterations // 2]
    final = glob.loc[iterations]
    personal = {a: _curve(curves, 0.0, a).loc[iterations] for a in alphas if not math.isinf(a)}
    best_personal_alpha = min(personal, key=personal.get)
    best_personal = personal[best_personal_alpha]
    plateau = final > 0.5 * half
    above = final > 2.0 * best_personal
    claims.append(Claim(
        paper="ppsgd", claim_id="fig1a-global-plateau", status=verdict(plateau and above),
        text="at sigma=0, alpha*Q=inf stops improving (risk at T above half its value at T/2) "
        "and ends more than 2x above the best finite alpha*Q",
        evidence=f"alpha*Q=inf: {half:.3g} at t={iterations // 2}, {final:.3g} at t={iterations}; "
        f"best finite alpha*Q={_fmt_alpha(best_personal_alpha)}: {best_personal:.3g}",
        scale=scale,
    ))

    # 3. Smaller alpha is better later: at the end, in every panel, the best
    #    level is finite and global-only is beaten.
    best_final = []
    for sigma in sigmas:
        finals = {a: _curve(curves, sigma, a).loc[iterations] for a in alphas}
        best_final.append((sigma, min(finals, key=finals.get)))
    finite_best = all(not math.isinf(a) for _, a in best_final)
    claims.append(Claim(
        paper="ppsgd", claim_id="fig1a-smaller-alpha-later", status=verdict(finite_best),
        text=f"at the last iteration (T={iterations}) a finite alpha*Q beats alpha*Q=inf "
        "in every panel",
        evidence="; ".join(f"sigma={s:g}: best alpha*Q={_fmt_alpha(a)}" for s, a in best_final),
        scale=scale,
    ))

    # 4. With large noise, local learning wins after about 200 iterations.
    sigma_max = max(sigmas)
    local = _curve(curves, sigma_max, 0.0)
    others = pd.concat(
        [_curve(curves, sigma_max, a) for a in alphas if a != 0.0], axis=1
    ).min(axis=1)
    local_best = local <= others
    # First iteration from which local-only stays the best to the end.
    crossover = None
    if local_best.iloc[-1]:
        not_best = local_best[~local_best]
        crossover = int(not_best.index.max()) + 1 if len(not_best) else int(local_best.index.min())
    holds = crossover is not None and crossover <= iterations
    claims.append(Claim(
        paper="ppsgd", claim_id="fig1a-local-wins-large-noise", status=verdict(holds),
        text=f"at the largest noise (sigma={sigma_max:g}) alpha*Q=0 becomes and stays the best "
        "within the run",
        evidence=(
            f"alpha*Q=0 best from iteration {crossover} on" if crossover is not None
            else f"alpha*Q=0 is not the best at T={iterations} "
            f"({local.iloc[-1]:.3g} vs {others.iloc[-1]:.3g})"
        ),
        paper_value="after about 200 iterations",
        scale=scale,
    ))
    return claims


def global_only_floor(task: AdditiveSyntheticTask) -> float:
    """Lowest excess risk any global-only model can reach: w = mean_i theta*_i.

    (1/N) sum_i ||theta*_i - mean theta*||^2_Sigma, in closed form.
    """
    thetas = task.theta_star()
    spread = thetas - thetas.mean(axis=0)
    return float(np.mean(np.sum(task.feature_variances() * spread**2, axis=1)))


def shared_optimum_norm(task: AdditiveSyntheticTask) -> float:
    """||mean_i theta*_i||: how far the best global-only model lies from the start w = 0."""
    return float(np.linalg.norm(task.theta_star().mean(axis=0)))


def clipping_bound(task: AdditiveSyntheticTask, max_step: float, clip: float) -> float:
    """Fewest iterations a global-only run needs to reach the shared optimum.

    Each update moves w by at most step * C without noise (the mean of clipped
    gradients has norm <= C), while w must travel ||mean theta*|| from zero.
    """
    return shared_optimum_norm(task) / (max_step * clip)
