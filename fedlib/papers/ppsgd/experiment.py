"""The runs of Bietti et al. (2022): PPSGD on the synthetic task and on per-writer EMNIST.

Figure 1a trains the additive model on the synthetic task, Figures 1c and 1d
train the linear model and the CNN on per-writer EMNIST digits (Figure 2 reads
the runs of 1a and 1c). This module holds what a run computes with: the grids
of each tier (:data:`TIERS`), the EMNIST data a run loads (:func:`load_data`),
the run configs (:func:`configs`), the sweep runner (:func:`run_group`, one
vectorized PPSGD pass per group of configs), the sweep of one figure
(:func:`run`) and the sweep of Figure 1a over the settings the published figure
may come from (:func:`run_settings`). What is read off the finished runs is in
the paper's ``claims`` module, what is drawn in its ``figures`` module.

Figure 1a runs by default on the authors' problem instance (``instance=
"authors"``: the ground truth, samples and order of draws of their script,
:mod:`fedlib.data.synthetic`); ``instance="fedlib"`` is this library's own draw.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedlib.checks import check_seed
from fedlib.data.federated import FederatedClassification, split_per_user
from fedlib.data.loaders import load_femnist_digits
from fedlib.data.synthetic import AUTHORS_SEED, AdditiveSyntheticTask, check_instance
from fedlib.limits import check_finite, check_size
from fedlib.papers.ppsgd.algorithm import PPSGDConfig, releases_global_model, run_synthetic
from fedlib.papers.ppsgd.emnist import (
    draw_schedule,
    eval_points,
    iterations_for_epochs,
    run_cnn,
    run_linear,
)
from fedlib.privacy import epsilon_curve
from fedlib.sweeps import check_group, sweep
from fedlib.tiers import check_scale

SYNTHETIC_EXPERIMENT = "ppsgd-synthetic"
"""Results folder of the Figure 1a runs (the EMNIST folders: :attr:`EmnistGrid.experiment`)."""
DELTA = 1e-4
FIGURE_CLIP = 1.0
"""The clipping norm of the paper's plots (the authors' plotting default); the claims
are evaluated there."""
PAPER_ALPHA_Q = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, math.inf)
"""The personalization levels of the appendix grids (every figure)."""

PAPER_SYNTHETIC_STEPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.2, 1.5, 1.8)
QUICK_SYNTHETIC_STEPS = PAPER_SYNTHETIC_STEPS[4:]
"""0.2 ... 1.8: the steps that are ever the best at C = 1."""
PAPER_SYNTHETIC_SIGMAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
SYNTHETIC_FIGURE_ALPHA_Q = (0.0, 0.3, 1.0, 3.0, math.inf)
"""The personalization levels Figure 1a draws."""
SYNTHETIC_INSTANCE = "authors"
"""The default draw of the synthetic task: the authors' (``fedlib``: this library's)."""
PAPER_HETEROGENEITY = 0.01
"""Standard deviation of the users' deviations in the paper's text (the authors' script: 0.1)."""

PAPER_SETTING = (100, PAPER_HETEROGENEITY)
"""(d, heterogeneity) of the paper's text."""
SCRIPT_SETTING = (20, 0.1)
"""(d, heterogeneity) of the authors' script's defaults (``--d 20 --local_weight 0.1``)."""
SETTING_HETEROGENEITIES = (0.01, 0.1, 1.0)
"""Heterogeneities of the settings sweep (at the paper's d = 100)."""
SETTING_CLIPS = (1.0, 10.0, 100.0)
"""Clipping norms of the settings sweep (every setting)."""

PAPER_LINEAR_STEPS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01)
PAPER_LINEAR_SIGMAS = (0.0, 0.1, 0.3, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0)
PAPER_CNN_STEPS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
PAPER_CNN_SIGMAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
EMNIST_FIGURE_ALPHA_Q = (0.0, 0.1, 1.0, 10.0, math.inf)
"""The personalization levels the authors' plotting script draws for EMNIST."""
MIN_EXAMPLES = 100
"""Writers with fewer digits are left out (the paper's users have about 100 + 10)."""

EMNIST_MODELS = ("linear", "cnn")
FIGURES = ("1a", "1c", "1d")
"""The figures that have runs of their own: 1a (synthetic), 1c (EMNIST linear), 1d (EMNIST CNN)."""
_FIGURE_MODEL = {"1c": "linear", "1d": "cnn"}

BATCHED = ("step", "alpha_q", "noise_multiplier", "clip")
"""Runs that differ only in these fields share one vectorized pass."""
SYNTHETIC_GROUP_SIZE = 120
"""Runs per vectorized pass of the synthetic grid."""
EMNIST_GROUP_SIZE = 48
"""At most this many EMNIST runs per pass (bounds the memory of the personal models)."""


@dataclass(frozen=True)
class SyntheticGrid:
    """Problem size and hyperparameter grid of Figure 1a at one tier."""

    n_users: int
    dim: int
    iterations: int
    steps: tuple[float, ...]
    alpha_q: tuple[float, ...]
    sigmas: tuple[float, ...]
    clips: tuple[float, ...] = (1.0,)
    batch_size: int = 10
    heterogeneity: float = PAPER_HETEROGENEITY
    """Standard deviation of the users' deviations on the five personal coordinates."""

    def __post_init__(self) -> None:
        for name in ("n_users", "dim", "iterations", "batch_size"):
            check_size(getattr(self, name), name)
        check_finite(self.heterogeneity, "heterogeneity")
        _check_grid(self.steps, "steps", positive=True)
        _check_grid(self.alpha_q, "alpha_q", infinite=True)
        _check_grid(self.sigmas, "sigmas")
        _check_grid(self.clips, "clips", positive=True, infinite=True)


@dataclass(frozen=True)
class EmnistGrid:
    """Problem size and hyperparameter grid of one EMNIST figure at one tier."""

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

    def __post_init__(self) -> None:
        if self.max_users is not None:
            check_size(self.max_users, "n_users")
        check_finite(self.epochs, "epochs", inclusive=False)
        if self.epochs > MAX_EPOCHS:
            raise ValueError(f"epochs={self.epochs:g} is above {MAX_EPOCHS:g}, far past the "
                             "paper's 20: pass fewer epochs")
        for name in ("n_evals", "users_per_iteration", "batch_size"):
            check_size(getattr(self, name), name)
        check_finite(self.clip, "clip", inclusive=False)
        if not 0 < self.test_fraction < 1:
            raise ValueError(f"test_fraction must lie in (0, 1), got {self.test_fraction!r}")
        _check_grid(self.steps, "steps", positive=True)
        _check_grid(self.alpha_q, "alpha_q", infinite=True)
        _check_grid(self.sigmas, "sigmas")
        _check_grid(self.panel_sigmas, "panel_sigmas")

    @property
    def experiment(self) -> str:
        return f"ppsgd-emnist-{self.model}"


MAX_EPOCHS = 1000.0
"""The most epochs an EMNIST grid may ask for (the paper trains 20)."""


def _check_grid(values: tuple[float, ...], name: str, *, positive: bool = False,
                infinite: bool = False) -> None:
    """A grid of a setup: a tuple of numbers >= 0 (> 0 with ``positive``), finite unless
    ``infinite`` allows inf (empty in the setup a runner rebuilds from one config)."""
    if not isinstance(values, tuple):
        raise ValueError(f"{name} must be a tuple of numbers, got {values!r}")
    for value in values:
        if infinite and value == math.inf:
            continue
        check_finite(value, name, inclusive=not positive)


@dataclass(frozen=True)
class PpsgdSetup:
    """The grids of one tier: Figure 1a (synthetic), 1c (EMNIST linear), 1d (EMNIST CNN)."""

    synthetic: SyntheticGrid
    linear: EmnistGrid
    cnn: EmnistGrid

    def emnist(self, model: str) -> EmnistGrid:
        """The grid of an EMNIST model (``linear`` or ``cnn``)."""
        if model not in EMNIST_MODELS:
            raise ValueError(f"model={model!r} is not an EMNIST model; use 'linear' or 'cnn'")
        return getattr(self, model)


_SMOKE_ALPHA = (0.0, 0.1, 1.0, math.inf)
TIERS: dict[str, PpsgdSetup] = {
    "smoke": PpsgdSetup(
        # Seconds: a small problem that still takes every code path (all five
        # plotted alphas, a private and a non-private noise level).
        synthetic=SyntheticGrid(
            n_users=50, dim=20, iterations=40, steps=(0.1, 0.7),
            alpha_q=SYNTHETIC_FIGURE_ALPHA_Q, sigmas=(0.0, 100.0), clips=(1.0, 100.0),
        ),
        # Seconds: 30 writers (CNN: 20), one epoch (CNN: two iterations), every code path.
        linear=EmnistGrid("linear", 30, 1.0, (0.002, 0.005), _SMOKE_ALPHA, (0.0, 3.0),
                          (0.0, 3.0), 2, parallel=False),
        cnn=EmnistGrid("cnn", 20, 0.1, (0.5,), (0.0, 1.0, math.inf), (0.0, 3.0),
                       (0.0, 3.0), 1, parallel=False),
    ),
    "quick": PpsgdSetup(
        # Minutes on 2 cores: the paper's problem (N=1000, d=100, 300 iterations),
        # the upper seven steps of its grid (at C=1 the four smaller ones are never
        # the best at any iteration, alpha or noise level: checked on the full grid),
        # the five plotted alphas, four noise levels, at the plots' clipping norm C=1
        # and at C=100 (how much clipping matters).
        synthetic=SyntheticGrid(
            n_users=1000, dim=100, iterations=300, steps=QUICK_SYNTHETIC_STEPS,
            alpha_q=SYNTHETIC_FIGURE_ALPHA_Q, sigmas=(0.0, 10.0, 100.0, 1000.0),
            clips=(1.0, 100.0),
        ),
        # Minutes on 2 shared cores: every writer of the offline sample, 3 epochs
        # (linear) and half an epoch (CNN) instead of 20; the upper part of the
        # paper's step-size grids (the smaller steps never win this early); the
        # plotted personalization levels (the CNN without 0.1); no noise and two
        # (linear) or one (CNN) private noise levels.
        linear=EmnistGrid("linear", None, 3.0, (0.001, 0.002, 0.005, 0.01),
                          EMNIST_FIGURE_ALPHA_Q, (0.0, 1.0, 3.0), (0.0, 1.0, 3.0), 4),
        cnn=EmnistGrid("cnn", None, 0.5, (0.5, 1.0), (0.0, 1.0, 10.0, math.inf),
                       (0.0, 1.0), (0.0, 1.0), 2),
    ),
    "paper": PpsgdSetup(
        # The authors' whole grids: the synthetic one with its clipping norms,
        # EMNIST with 20 epochs.
        synthetic=SyntheticGrid(
            n_users=1000, dim=100, iterations=300, steps=PAPER_SYNTHETIC_STEPS,
            alpha_q=PAPER_ALPHA_Q, sigmas=PAPER_SYNTHETIC_SIGMAS, clips=(0.1, 1.0, 10.0, 100.0),
        ),
        linear=EmnistGrid("linear", None, 20.0, PAPER_LINEAR_STEPS, PAPER_ALPHA_Q,
                          PAPER_LINEAR_SIGMAS, (0.0, 3.0, 10.0, 30.0), 20),
        cnn=EmnistGrid("cnn", None, 20.0, PAPER_CNN_STEPS, PAPER_ALPHA_Q, PAPER_CNN_SIGMAS,
                       (0.0, 1.0, 3.0, 10.0), 20),
    ),
}


def tier(scale: str) -> PpsgdSetup:
    """The grids of a tier (``smoke``, ``quick`` or ``paper``)."""
    return TIERS[check_scale(scale)]


def check_figure(figure: str) -> str:
    """Return ``figure`` if it is one with runs of its own (:data:`FIGURES`), else raise."""
    if figure not in FIGURES:
        raise ValueError(f"figure={figure!r} has no runs of its own; use one of "
                         f"{', '.join(FIGURES)}")
    return figure


SOURCES = ("leaf-sample", "tff")
"""``leaf-sample``: the offline LEAF 5% sample, split per writer here (seeded);
``tff``: TFF's canonical HDF5 files with their own per-writer split."""


def check_source(source: str) -> str:
    """Return ``source`` if it names an EMNIST source (:data:`SOURCES`), else raise."""
    if source not in SOURCES:
        raise ValueError(f"source={source!r} is not an EMNIST source; use one of {SOURCES}")
    return source


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
    check_source(source)
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


def synthetic_task(grid: SyntheticGrid, seed: int, instance: str = SYNTHETIC_INSTANCE
                   ) -> AdditiveSyntheticTask:
    """The synthetic task of ``grid``: the authors' draw (their seed, whatever ``seed``)
    or this library's (seeded by ``seed``)."""
    check_instance(instance)
    return AdditiveSyntheticTask(
        n_users=grid.n_users, dim=grid.dim, personal_scale=grid.heterogeneity,
        seed=AUTHORS_SEED if instance == "authors" else seed, instance=instance,
    )


def _synthetic_configs(grid: SyntheticGrid, seed: int, device: str, instance: str
                       ) -> list[dict[str, Any]]:
    """One config dict per run of Figure 1a's grid."""
    check_instance(instance)
    return [
        {
            "experiment": SYNTHETIC_EXPERIMENT,
            "instance": instance,
            "n_users": grid.n_users,
            "dim": grid.dim,
            "heterogeneity": float(grid.heterogeneity),
            "iterations": grid.iterations,
            "batch_size": grid.batch_size,
            "seed": int(seed),
            "device": device,
            "step": float(step),
            "alpha_q": float(alpha_q),
            "noise_multiplier": float(sigma),
            "clip": float(clip),
        }
        for sigma in grid.sigmas
        for alpha_q in grid.alpha_q
        for step in grid.steps
        for clip in grid.clips
    ]


def _emnist_configs(grid: EmnistGrid, seed: int, device: str, source: str
                    ) -> list[dict[str, Any]]:
    """One config dict per run of an EMNIST grid. Local-only runs (alpha*Q = 0) release
    nothing, so the noise level does not enter them: they are run once, at sigma = 0."""
    base = {
        "experiment": grid.experiment, "model": grid.model, "max_users": grid.max_users,
        "epochs": grid.epochs, "users_per_iteration": grid.users_per_iteration,
        "batch_size": grid.batch_size, "test_fraction": grid.test_fraction,
        "n_evals": grid.n_evals, "seed": int(seed), "device": device, "source": source,
    }
    configs = []
    for sigma in grid.sigmas:
        for alpha_q in grid.alpha_q:
            if alpha_q == 0 and sigma != grid.sigmas[0]:
                continue
            for step in grid.steps:
                configs.append({**base, "step": float(step), "alpha_q": float(alpha_q),
                                "noise_multiplier": float(sigma) if alpha_q else 0.0,
                                "clip": float(grid.clip)})
    return configs


def configs(setup: PpsgdSetup, seed: int, *, figure: str | None = None, device: str = "cpu",
            source: str = "leaf-sample", instance: str = SYNTHETIC_INSTANCE
            ) -> list[dict[str, Any]]:
    """One config dict per run of ``figure`` (``1a``, ``1c`` or ``1d``; None: all three).

    ``device``: the torch device of the engines; ``source``: where the EMNIST
    digits come from (:data:`SOURCES`); ``instance``: the draw of the synthetic
    task of Figure 1a (``authors`` or ``fedlib``). No data is loaded.
    """
    check_seed(seed)
    figures = FIGURES if figure is None else (check_figure(figure),)
    found: list[dict[str, Any]] = []
    for name in figures:
        if name == "1a":
            found += _synthetic_configs(setup.synthetic, seed, device, instance)
        else:
            grid = setup.emnist(_FIGURE_MODEL[name])
            found += _emnist_configs(grid, seed, device, check_source(source))
    return found


@lru_cache(maxsize=256)
def _synthetic_epsilons(noise_multiplier: float, sampling_rate: float, steps: int
                        ) -> np.ndarray:
    return epsilon_curve(noise_multiplier, sampling_rate, steps, DELTA, accountant="rdp")


def _effective(config: PPSGDConfig) -> PPSGDConfig:
    """The run ``config`` computes: local-only runs do not depend on noise or clipping."""
    if releases_global_model(config):
        return config
    return PPSGDConfig(step=config.step, alpha_q=0.0, noise_multiplier=0.0, clip=1.0)


def _run_synthetic_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """One vectorized PPSGD pass for Figure 1a configs sharing a task and seed (float32;
    in float64 the engine reproduces the authors' script to rounding, see the tests)."""
    first = configs[0]
    grid = SyntheticGrid(n_users=first["n_users"], dim=first["dim"],
                         iterations=first["iterations"], steps=(), alpha_q=(), sigmas=(),
                         batch_size=first["batch_size"], heterogeneity=first["heterogeneity"])
    task = synthetic_task(grid, first["seed"], first["instance"])
    ppsgd_configs = [
        PPSGDConfig(step=c["step"], alpha_q=c["alpha_q"], noise_multiplier=c["noise_multiplier"],
                    clip=c["clip"])
        for c in configs
    ]
    # A run that releases nothing (alpha*Q = 0) never reads its noise level or
    # clipping norm: such runs are simulated once per step size.
    distinct = list(dict.fromkeys(_effective(c) for c in ppsgd_configs))
    distinct_risks = run_synthetic(
        task, distinct, first["iterations"], batch_size=first["batch_size"],
        seed=first["seed"] + 1, dtype=torch.float32, device=first["device"],
    )
    row = {config: i for i, config in enumerate(distinct)}
    risks = [distinct_risks[row[_effective(c)]] for c in ppsgd_configs]
    iterations = np.arange(1, first["iterations"] + 1)
    tables = []
    for config, ppsgd_config, risk in zip(configs, ppsgd_configs, risks, strict=True):
        if releases_global_model(ppsgd_config):
            eps = _synthetic_epsilons(ppsgd_config.noise_multiplier, 1.0, first["iterations"])
        else:
            eps = np.zeros(first["iterations"])
        tables.append(
            pd.DataFrame(
                {
                    **{k: config[k] for k in ("instance", "dim", "heterogeneity")},
                    **{k: config[k] for k in ("step", "alpha_q", "noise_multiplier", "clip")},
                    "iteration": iterations,
                    "excess_risk": risk,
                    "epsilon": eps,
                }
            )
        )
    return tables


def sampling_rate(n_users: int, users_per_iteration: int) -> float:
    """Q/N, the sampling rate of the accountant (as the authors)."""
    return users_per_iteration / n_users


@lru_cache(maxsize=256)
def _emnist_epsilons(noise_multiplier: float, rate: float, iterations: int,
                     at: tuple[int, ...]) -> np.ndarray:
    return epsilon_curve(noise_multiplier, rate, iterations, DELTA, accountant="rdp", at=at)


def _run_emnist_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """One vectorized PPSGD pass for EMNIST configs that share data, schedule and seed."""
    first = configs[0]
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
            eps = _emnist_epsilons(ppsgd_config.noise_multiplier, rate, iterations, tuple(at))
        else:
            eps = np.zeros(len(at))
        tables.append(pd.DataFrame({
            **{k: config[k] for k in BATCHED},
            "iteration": at, "accuracy": acc, "epsilon": eps,
            "n_users": data.n_users, "iterations": iterations,
        }))
    return tables


def run_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: one vectorized PPSGD pass for configs that differ only in :data:`BATCHED`.

    Figure 1a configs record the excess risk at every iteration, EMNIST configs
    the test accuracy at their evaluation points; both record the RDP epsilon
    of the released global model (0 for local-only runs, which release nothing).
    """
    check_group(configs, BATCHED)
    experiment = configs[0]["experiment"]
    if experiment == SYNTHETIC_EXPERIMENT:
        return _run_synthetic_group(configs)
    if experiment in {f"ppsgd-emnist-{model}" for model in EMNIST_MODELS}:
        return _run_emnist_group(configs)
    raise ValueError(f"experiment={experiment!r} is not a PPSGD experiment")


def run(setup: PpsgdSetup, seed: int, *, figure: str, device: str = "cpu",
        source: str = "leaf-sample", instance: str = SYNTHETIC_INSTANCE,
        workers: int | None = None, ray_address: str | None = None,
        progress: bool = True, max_group_size: int | None = None) -> pd.DataFrame:
    """Every run of one figure's grid (cached); one row per run and iteration (1a) or
    evaluation (1c, 1d).

    By default the synthetic runs go :data:`SYNTHETIC_GROUP_SIZE` to a pass; the
    EMNIST runs are split into one group per worker (at most
    :data:`EMNIST_GROUP_SIZE` runs per group, which bounds the memory of the
    personal models), except at tiers too small to repay starting worker
    processes. ``instance``: the draw of Figure 1a's synthetic task (``authors`` or
    ``fedlib``).
    """
    found = configs(setup, seed, figure=figure, device=device, source=source, instance=instance)
    if figure == "1a":
        experiment = SYNTHETIC_EXPERIMENT
        if max_group_size is None:
            max_group_size = SYNTHETIC_GROUP_SIZE
    else:
        grid = setup.emnist(_FIGURE_MODEL[figure])
        experiment = grid.experiment
        if max_group_size is None:
            n_workers = (workers or os.cpu_count() or 1) if grid.parallel else 1
            max_group_size = min(EMNIST_GROUP_SIZE, -(-len(found) // n_workers))
    return sweep(
        experiment, found, run_group, batched=BATCHED, max_group_size=max_group_size,
        workers=workers, ray_address=ray_address, progress=progress,
    )


def setting_grids(setup: PpsgdSetup) -> list[tuple[str, SyntheticGrid]]:
    """(instance, grid) of every setting of the settings sweep, from the tier's grid.

    On the authors' instance: the paper's d = 100 at each heterogeneity of
    :data:`SETTING_HETEROGENEITIES`, and the script's defaults
    (:data:`SCRIPT_SETTING`), each at every clipping norm of
    :data:`SETTING_CLIPS`; then this library's draw at the paper's setting and
    the plots' clipping norm, for comparison. Users, iterations, step sizes,
    personalization and noise levels are the tier's.
    """
    base = setup.synthetic
    dim, heterogeneity = PAPER_SETTING
    grids = [("authors", replace(base, dim=dim, heterogeneity=h, clips=SETTING_CLIPS))
             for h in SETTING_HETEROGENEITIES]
    script_dim, script_heterogeneity = SCRIPT_SETTING
    grids.append(("authors", replace(base, dim=script_dim, heterogeneity=script_heterogeneity,
                                     clips=SETTING_CLIPS)))
    grids.append(("fedlib", replace(base, dim=dim, heterogeneity=heterogeneity,
                                    clips=(FIGURE_CLIP,))))
    return grids


def setting_configs(setup: PpsgdSetup, seed: int, *, device: str = "cpu"
                    ) -> list[dict[str, Any]]:
    """One config dict per run of the settings sweep (:func:`setting_grids`)."""
    check_seed(seed)
    return [config for instance, grid in setting_grids(setup)
            for config in _synthetic_configs(grid, seed, device, instance)]


def run_settings(setup: PpsgdSetup, seed: int, *, device: str = "cpu",
                 workers: int | None = None, ray_address: str | None = None,
                 progress: bool = True) -> pd.DataFrame:
    """Figure 1a's runs at every setting of :func:`setting_grids` (cached, and shared with
    :func:`run` where the configs coincide); one row per run and iteration, with the
    columns instance, dim and heterogeneity that tell the settings apart."""
    return sweep(
        SYNTHETIC_EXPERIMENT, setting_configs(setup, seed, device=device), run_group,
        batched=BATCHED, max_group_size=SYNTHETIC_GROUP_SIZE, workers=workers,
        ray_address=ray_address, progress=progress,
    )
