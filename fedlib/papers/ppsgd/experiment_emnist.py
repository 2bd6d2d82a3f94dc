"""Figures 1c, 1d and 2 of Bietti et al. (2022): PPSGD on per-writer EMNIST digits.

The data of each tier, the grids, the sweep runner (one vectorized pass per
group of configurations), the curves the paper plots (best step size at each
evaluation), the accuracy-privacy trade-off of Figure 2 and the claims.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from fedlib.claims import Claim, verdict
from fedlib.data.loaders import load_femnist_digits
from fedlib.papers.ppsgd.algorithm import PPSGDConfig, releases_global_model
from fedlib.papers.ppsgd.emnist import (
    FederatedClassification,
    draw_schedule,
    eval_points,
    iterations_for_epochs,
    run_cnn,
    run_linear,
    split_per_user,
)
from fedlib.privacy import epsilon, epsilon_curve
from fedlib.sweeps import sweep
from fedlib.tiers import check_scale

DELTA = 1e-4
PAPER_ALPHA_Q = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, math.inf)
PAPER_LINEAR_STEPS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01)
PAPER_LINEAR_SIGMAS = (0.0, 0.1, 0.3, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0)
PAPER_CNN_STEPS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
PAPER_CNN_SIGMAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
FIGURE_ALPHA_Q = (0.0, 0.1, 1.0, 10.0, math.inf)
"""The personalization levels the authors' plotting script draws for EMNIST."""
INTERMEDIATE_ALPHA_Q = 1.0
"""The intermediate level drawn in Figure 2 (alpha*Q = 1 equalizes the sample variances)."""
FIGURE_CLIP = 1.0
"""Clipping norm of the plots (the authors' plotting default)."""
MIN_EXAMPLES = 100
"""Writers with fewer digits are left out (the paper's users have about 100 + 10)."""


@dataclass(frozen=True)
class EmnistGrid:
    """Problem size and hyperparameter grid of one figure at one tier."""

    model: str
    max_users: int | None
    epochs: float
    steps: tuple[float, ...]
    alpha_q: tuple[float, ...]
    sigmas: tuple[float, ...]
    panel_sigmas: tuple[float, ...]
    n_evals: int
    clip: float = FIGURE_CLIP
    users_per_iteration: int = 10
    batch_size: int = 10
    test_fraction: float = 0.1
    parallel: bool = True
    """Split the runs over the sweep's worker processes (False: one in-process pass)."""

    @property
    def experiment(self) -> str:
        return f"ppsgd-emnist-{self.model}"


_SMOKE_ALPHA = (0.0, 0.1, 1.0, math.inf)
TIERS: dict[str, dict[str, EmnistGrid]] = {
    # Seconds: 30 writers (CNN: 20), one epoch (CNN: two iterations), every code path.
    "smoke": {
        "linear": EmnistGrid("linear", 30, 1.0, (0.002, 0.005), _SMOKE_ALPHA, (0.0, 3.0),
                             (0.0, 3.0), 2, parallel=False),
        "cnn": EmnistGrid("cnn", 20, 0.1, (0.5,), (0.0, 1.0, math.inf), (0.0, 3.0),
                          (0.0, 3.0), 1, parallel=False),
    },
    # Minutes on 2 shared cores: every writer of the offline sample, 3 epochs
    # (linear) and half an epoch (CNN) instead of 20; the upper part of the
    # paper's step-size grids (the smaller steps never win this early); the
    # plotted personalization levels (the CNN without 0.1); no noise and two
    # (linear) or one (CNN) private noise levels.
    "quick": {
        "linear": EmnistGrid("linear", None, 3.0, (0.001, 0.002, 0.005, 0.01),
                             FIGURE_ALPHA_Q, (0.0, 1.0, 3.0), (0.0, 1.0, 3.0), 4),
        "cnn": EmnistGrid("cnn", None, 0.5, (0.5, 1.0), (0.0, 1.0, 10.0, math.inf),
                          (0.0, 1.0), (0.0, 1.0), 2),
    },
    # The paper: 20 epochs, the appendix grids.
    "paper": {
        "linear": EmnistGrid("linear", None, 20.0, PAPER_LINEAR_STEPS, PAPER_ALPHA_Q,
                             PAPER_LINEAR_SIGMAS, (0.0, 3.0, 10.0, 30.0), 20),
        "cnn": EmnistGrid("cnn", None, 20.0, PAPER_CNN_STEPS, PAPER_ALPHA_Q, PAPER_CNN_SIGMAS,
                          (0.0, 1.0, 3.0, 10.0), 20),
    },
}


def grid(scale: str, model: str) -> EmnistGrid:
    """The grid of ``model`` (``linear`` or ``cnn``) at a tier."""
    tiers = TIERS[check_scale(scale)]
    if model not in tiers:
        raise ValueError(f"model={model!r} is not an EMNIST model; use 'linear' or 'cnn'")
    return tiers[model]


SOURCES = ("leaf-sample", "tff")
"""``leaf-sample``: the offline LEAF 5% sample, split per writer here (seeded);
``tff``: TFF's canonical HDF5 files with their own per-writer split."""


@lru_cache(maxsize=4)
def load_data(model: str, max_users: int | None, test_fraction: float, seed: int,
              source: str = "leaf-sample") -> FederatedClassification:
    """Per-writer digits for ``model`` in TFF's polarity (1 = background), as the authors fed them.

    ``leaf-sample``: writers of the offline LEAF sample with at least
    :data:`MIN_EXAMPLES` digits, each split into train and test (seeded). The
    sample stores the same images as TFF, so they are mapped back to TFF's
    polarity. ``tff``: the first ``max_users`` writers (sorted ids, 1,000 when
    None, as the paper) of TFF's files with TFF's split; writers with fewer
    than 10 training digits are left out. The linear model sees the 784
    pixels, the CNN the image.
    """
    if source not in SOURCES:
        raise ValueError(f"source={source!r} is not an EMNIST source; use one of {SOURCES}")
    shape = (lambda x: x.reshape(len(x), -1)) if model == "linear" else (lambda x: x[:, None])
    if source == "tff":
        from fedlib.data.femnist_tff import load_tff_digits

        tff = load_tff_digits(max_writers=max_users or 1000)
        enough = np.flatnonzero(np.bincount(tff.writer_train, minlength=tff.n_writers) >= 10)
        remap = np.full(tff.n_writers, -1)
        remap[enough] = np.arange(len(enough))
        keep_tr, keep_te = remap[tff.writer_train] >= 0, remap[tff.writer_test] >= 0
        return FederatedClassification(
            shape(tff.x_train[keep_tr]), tff.y_train[keep_tr], remap[tff.writer_train[keep_tr]],
            shape(tff.x_test[keep_te]), tff.y_test[keep_te], remap[tff.writer_test[keep_te]],
            n_users=len(enough), n_classes=10,
            source="TFF federated EMNIST digits (HDF5), official per-writer split",
        )
    raw = load_femnist_digits()
    x = (1.0 - raw.x).astype(np.float32)
    return split_per_user(
        shape(x), raw.y, raw.writer, 10, test_fraction=test_fraction,
        min_examples=MIN_EXAMPLES, max_users=max_users, seed=seed,
        source=f"LEAF 5% FEMNIST sample (digits), writers with >= {MIN_EXAMPLES} digits, "
        f"{1 - test_fraction:.0%}/{test_fraction:.0%} train/test per writer (seeded)",
    )


def figure_configs(scale: str, model: str, seed: int, device: str = "cpu",
                   source: str = "leaf-sample") -> list[dict[str, Any]]:
    """One config dict per run. Local-only runs (alpha*Q = 0) release nothing, so
    the noise level does not enter them: they are run once, at sigma = 0."""
    g = grid(scale, model)
    base = {
        "experiment": g.experiment, "model": model, "max_users": g.max_users,
        "epochs": g.epochs, "users_per_iteration": g.users_per_iteration,
        "batch_size": g.batch_size, "test_fraction": g.test_fraction, "n_evals": g.n_evals,
        "seed": int(seed), "device": device, "source": source,
    }
    configs = []
    for sigma in g.sigmas:
        for alpha_q in g.alpha_q:
            if alpha_q == 0 and sigma != g.sigmas[0]:
                continue
            for step in g.steps:
                configs.append({**base, "step": float(step), "alpha_q": float(alpha_q),
                                "noise_multiplier": float(sigma) if alpha_q else 0.0,
                                "clip": float(g.clip)})
    return configs


BATCHED_FIELDS = ("step", "alpha_q", "noise_multiplier", "clip")


def group_key(config: dict[str, Any]) -> tuple:
    """Runs that differ only in step, alpha, noise or clip share one vectorized pass."""
    return tuple(sorted((k, v) for k, v in config.items() if k not in BATCHED_FIELDS))


def sampling_rate(n_users: int, users_per_iteration: int) -> float:
    """Q/N, the sampling rate of the accountant (as the authors)."""
    return users_per_iteration / n_users


@lru_cache(maxsize=256)
def _rdp_epsilons(noise_multiplier: float, rate: float, iterations: int,
                  at: tuple[int, ...]) -> np.ndarray:
    return epsilon_curve(noise_multiplier, rate, iterations, DELTA, accountant="rdp", at=at)


def run_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: one vectorized PPSGD pass for configs that share data, schedule and seed."""
    first = configs[0]
    if any(group_key(c) != group_key(first) for c in configs):
        raise ValueError("run_group needs configs that differ only in " + ", ".join(BATCHED_FIELDS))
    seed, q, m = first["seed"], first["users_per_iteration"], first["batch_size"]
    data = load_data(first["model"], first["max_users"], first["test_fraction"], seed,
                     first["source"])
    iterations = iterations_for_epochs(data.train_counts(), q, m, first["epochs"])
    schedule = draw_schedule(data, iterations, q, m, seed=seed + 1)
    at = eval_points(iterations, first["n_evals"])
    ppsgd_configs = [PPSGDConfig(c["step"], c["alpha_q"], c["noise_multiplier"], c["clip"])
                     for c in configs]
    if first["model"] == "linear":
        result = run_linear(data, schedule, ppsgd_configs, eval_at=at, noise_seed=seed + 2,
                            device=first["device"])
    else:
        result = run_cnn(data, schedule, ppsgd_configs, eval_at=at, noise_seed=seed + 2,
                         init_seed=seed + 3, theta_step_scale=q, device=first["device"])
    rate = sampling_rate(data.n_users, q)
    tables = []
    for config, ppsgd_config, acc in zip(configs, ppsgd_configs, result.accuracy, strict=True):
        if releases_global_model(ppsgd_config):
            eps = _rdp_epsilons(ppsgd_config.noise_multiplier, rate, iterations, tuple(at))
        else:
            eps = np.zeros(len(at))
        tables.append(pd.DataFrame({
            **{k: config[k] for k in BATCHED_FIELDS},
            "iteration": at, "accuracy": acc, "epsilon": eps,
            "n_users": data.n_users, "iterations": iterations,
        }))
    return tables


def run_figure(scale: str, model: str, seed: int, *, device: str = "cpu",
               source: str = "leaf-sample", workers: int | None = None,
               ray_address: str | None = None, max_group_size: int | None = None,
               progress: bool = True) -> pd.DataFrame:
    """Every run of the tier (cached); one row per run and evaluation.

    By default the runs are split into one group per worker (at most 48 runs
    per group, which bounds the memory of the personal models), except at
    tiers too small to repay starting worker processes.
    """
    configs = figure_configs(scale, model, seed, device, source)
    if max_group_size is None:
        n_workers = (workers or os.cpu_count() or 1) if grid(scale, model).parallel else 1
        max_group_size = min(48, -(-len(configs) // n_workers))
    return sweep(
        grid(scale, model).experiment, configs, run_group,
        batched=BATCHED_FIELDS, max_group_size=max_group_size, workers=workers,
        ray_address=ray_address, progress=progress,
    )


def best_over_steps(runs: pd.DataFrame, sigmas: tuple[float, ...] | None = None) -> pd.DataFrame:
    """The paper's curves: at each evaluation, the best test accuracy over step sizes.

    Local-only runs (run once) are repeated for every noise level in ``sigmas``
    (default: all noise levels of ``runs``). Columns: noise_multiplier, alpha_q,
    iteration, accuracy, best_step, epsilon.
    """
    sigmas = tuple(sorted(runs["noise_multiplier"].unique())) if sigmas is None else sigmas
    finite = runs[np.isfinite(runs["accuracy"])]
    keys = ["noise_multiplier", "alpha_q", "iteration"]
    best = finite.loc[finite.groupby(keys)["accuracy"].idxmax()]
    best = best.rename(columns={"step": "best_step"})[keys + ["accuracy", "best_step", "epsilon"]]
    local = best[best["alpha_q"] == 0]
    others = best[best["alpha_q"] != 0]
    repeated = [local.assign(noise_multiplier=s) for s in sigmas]
    curves = pd.concat([others, *repeated], ignore_index=True)
    return curves.sort_values(keys).reset_index(drop=True)


def final(curves: pd.DataFrame) -> pd.DataFrame:
    """The last evaluation of every (noise, alpha) curve."""
    last = curves["iteration"].max()
    return curves[curves["iteration"] == last]


def _at(table: pd.DataFrame, sigma: float, alpha_q: float, value: str) -> float:
    sel = table[(table["noise_multiplier"] == sigma) & (table["alpha_q"] == alpha_q)]
    return float(sel[value].iloc[0])


def _fmt_alpha(alpha_q: float) -> str:
    return "inf" if math.isinf(alpha_q) else f"{alpha_q:g}"


def tradeoff(end: pd.DataFrame, value: str, higher_is_better: bool,
             intermediate: float = INTERMEDIATE_ALPHA_Q) -> pd.DataFrame:
    """Figure 2: per noise level, local-only, global-only, an intermediate level,
    the best over 0 < alpha*Q < inf ("personalized") and over every alpha*Q ("envelope").

    ``end`` holds one row per (noise_multiplier, alpha_q) with ``value`` and
    ``epsilon`` (the final iteration, best step size). Local-only releases
    nothing; its value does not depend on the noise level.
    """
    pick = max if higher_is_better else min
    rows = []
    for sigma in sorted(end["noise_multiplier"].unique()):
        panel = end[end["noise_multiplier"] == sigma].set_index("alpha_q")
        values = panel[value]
        personalized = values[(values.index > 0) & np.isfinite(values.index)]
        best_alpha = (personalized.idxmax() if higher_is_better else personalized.idxmin())
        released = panel[panel.index > 0]["epsilon"]
        rows.append({
            "noise_multiplier": sigma,
            "epsilon": float(released.max()) if len(released) else 0.0,
            "local": float(values.get(0.0, np.nan)),
            "global": float(values.get(math.inf, np.nan)),
            "intermediate": float(values.get(intermediate, np.nan)),
            "personalized": float(personalized.loc[best_alpha]),
            "best_alpha_q": float(best_alpha),
            "envelope": float(pick(values)),
        })
    return pd.DataFrame(rows)


def envelope_claim(table: pd.DataFrame, claim_id: str, dataset: str, value: str,
                   higher_is_better: bool, scale: str, paper_value: str = "") -> Claim:
    """The best personalized level (0 < alpha*Q < inf) is at least as good as local-only
    and global-only at every private noise level (point by point in epsilon)."""
    private = table[table["noise_multiplier"] > 0].to_dict("records")
    sign = 1.0 if higher_is_better else -1.0
    margins = [sign * row["personalized"] - max(sign * row["local"], sign * row["global"])
               for row in private]
    holds = len(margins) > 0 and min(margins) >= 0
    details = "; ".join(
        f"eps={row['epsilon']:.3g}: {row['personalized']:.4g} "
        f"(alpha*Q={_fmt_alpha(row['best_alpha_q'])}) vs local {row['local']:.4g}, "
        f"global {row['global']:.4g}"
        for row in private
    )
    better = "higher" if higher_is_better else "lower"
    return Claim(
        paper="ppsgd", claim_id=claim_id, status=verdict(holds),
        text=f"{dataset}: at every private noise level the best personalized model "
        f"(0 < alpha*Q < inf, best step) has {better} {value} than local-only and global-only",
        evidence=f"{sum(m >= 0 for m in margins)}/{len(margins)} noise levels; " + details,
        paper_value=paper_value, scale=scale,
    )


def figure1_claims(curves: pd.DataFrame, model: str, panel_sigmas: tuple[float, ...],
                   scale: str) -> list[Claim]:
    """Claims of Figure 1c (linear) or 1d (CNN) on the final best-over-steps accuracies."""
    end = final(curves)
    fig = "fig1c" if model == "linear" else "fig1d"
    sigma0 = min(panel_sigmas)
    sigma_max = max(panel_sigmas)
    alphas = sorted(end["alpha_q"].unique())
    acc0 = {a: _at(end, sigma0, a, "accuracy") for a in alphas}
    best_alpha0 = max(acc0, key=acc0.get)
    claims = []
    local, glob = acc0[0.0], acc0[math.inf]
    if model == "linear":
        holds = local < glob and local < acc0[best_alpha0]
        text = (f"local learning does poorly: at sigma={sigma0:g}, alpha*Q=0 ends below "
                "alpha*Q=inf")
        claim_id = f"{fig}-local-poor"
    else:
        holds = local <= acc0[best_alpha0] - 0.2
        text = (f"local-only models are very poor (frozen random representation): at "
                f"sigma={sigma0:g}, alpha*Q=0 ends at least 20 points below the best level")
        claim_id = f"{fig}-local-very-poor"
    claims.append(Claim(
        paper="ppsgd", claim_id=claim_id, status=verdict(holds), text=text,
        evidence=f"final test accuracy: alpha*Q=0 {local:.3f}, alpha*Q=inf {glob:.3f}, "
        f"best alpha*Q={_fmt_alpha(best_alpha0)} {acc0[best_alpha0]:.3f}", scale=scale,
    ))

    small = {a: _at(end, sigma_max, a, "accuracy") for a in alphas if 0 < a <= 1}
    best_small = max(small, key=small.get)
    glob_noisy = _at(end, sigma_max, math.inf, "accuracy")
    eps = _at(end, sigma_max, math.inf, "epsilon")
    claims.append(Claim(
        paper="ppsgd", claim_id=f"{fig}-small-alpha-small-eps",
        status=verdict(small[best_small] > glob_noisy),
        text=f"small alpha helps at small epsilon: at the largest plotted noise "
        f"(sigma={sigma_max:g}) a level 0 < alpha*Q <= 1 ends above alpha*Q=inf",
        evidence=f"eps={eps:.3g} (RDP): alpha*Q={_fmt_alpha(best_small)} {small[best_small]:.3f} "
        f"vs alpha*Q=inf {glob_noisy:.3f}", scale=scale,
    ))
    if model == "cnn":
        claims.append(Claim(
            paper="ppsgd", claim_id=f"{fig}-large-alpha-low-privacy",
            status=verdict(best_alpha0 >= 10),
            text=f"large alpha is best at poor privacy: at sigma={sigma0:g} the best level "
            "has alpha*Q >= 10",
            evidence="final accuracy by alpha*Q: " + ", ".join(
                f"{_fmt_alpha(a)}: {v:.3f}" for a, v in acc0.items()), scale=scale,
        ))
    return claims


def privacy_table(runs_by_figure: dict[str, tuple[int, float, int]], sigmas_by_figure:
                  dict[str, tuple[float, ...]]) -> pd.DataFrame:
    """Epsilon at the end of training under the authors' RDP accountant and under PLD.

    ``runs_by_figure``: figure -> (users N, sampling rate Q/N, iterations T).
    """
    rows = []
    for figure, (n_users, rate, iterations) in runs_by_figure.items():
        for sigma in sigmas_by_figure[figure]:
            if sigma <= 0:
                continue
            rows.append({
                "figure": figure, "users N": n_users, "rate Q/N": rate, "iterations T": iterations,
                "sigma": sigma,
                "eps RDP": epsilon(sigma, rate, iterations, DELTA, accountant="rdp"),
                "eps PLD": epsilon(sigma, rate, iterations, DELTA, accountant="pld"),
            })
    return pd.DataFrame(rows)
