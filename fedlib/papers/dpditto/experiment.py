"""DP-Ditto's convergence-privacy-fairness trade-off: tiers, data and runs.

Every run is one (dataset, model, seed, T, method, epsilon, lambda). Runs with the
same dataset, model, seed and T share one group: the clients' data, the initial
model and the minibatch draws, and each method simulates all its epsilons (and
DP-Ditto all its lambdas) in one batched pass. The number of aggregations T sets
the noise (sigma grows with sqrt(T)), so every point on a "vs T" curve is its own
run, evaluated after its last aggregation.

The reconstructed convergence bound of Figure 2 is in
:mod:`fedlib.papers.dpditto.bound`; the read-outs, the privacy table and the
claims are in :mod:`fedlib.papers.dpditto.claims`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedlib.checks import check_seed, is_real
from fedlib.data import load_fashion_mnist, load_mnist
from fedlib.data.partition import label_shard_partition
from fedlib.limits import check_size
from fedlib.papers.dpditto.algorithm import Hyper, make_model, noise_sigmas, pad_clients, run_ditto
from fedlib.papers.dpditto.baselines import (
    BASELINES,
    AppleConfig,
    FedAlaConfig,
    FedAmpConfig,
    PFedMeConfig,
)
from fedlib.sweeps import check_group, sweep
from fedlib.tiers import check_scale

EXPERIMENT = "dpditto"
DELTA = 0.01
LAMBDAS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.5, 0.8, 1.0)
EPSILONS = (1.0, 10.0, 100.0, math.inf)
METHODS = ("DP-Ditto", "FedAMP", "pFedMe", "APPLE", "FedALA")
PANELS = {"mnist-dnn": ("mnist", "dnn"), "mnist-mlr": ("mnist", "mlr"),
          "fmnist-cnn": ("fashion-mnist", "cnn"), "cifar10-cnn": ("cifar10", "cnn")}
"""Dataset/model pairs of the paper's panels."""


@dataclass(frozen=True)
class DittoSetup:
    """A run tier. Everything marked inferred is not in the paper's text.

    ``rounds`` is the grid of T (aggregations); ``local_steps`` E (inferred: the
    paper's 1 local epoch at the paper tier); ``train_cap`` caps each client's
    training examples (None: all), ``eval_examples`` / ``test_examples`` cap the
    examples the training loss and test accuracy are measured on.
    ``compare_epsilons`` are the two budgets of Figures 3 and 4 (inferred),
    ``fig5_lambda`` the small lambda of Figure 5 (inferred), ``fig6_epsilon`` the
    budget of Figures 6 and 7 (inferred).
    """

    panels: tuple[str, ...]
    rounds: tuple[int, ...]
    seeds: tuple[int, ...]
    local_steps: int
    eval_examples: int | None
    test_examples: int | None
    train_cap: dict[str, int | None] = field(default_factory=dict)
    compare_panels: tuple[str, ...] = ("mnist-dnn",)
    lambda_panels: tuple[str, ...] = ("mnist-dnn",)
    lambdas: tuple[float, ...] = LAMBDAS
    epsilons: tuple[float, ...] = EPSILONS
    compare_epsilons: tuple[float, float] = (10.0, 100.0)
    fig5_lambda: float = 0.05
    fig6_epsilon: float = 10.0
    lr: float = 0.005
    clip: float = 10.0
    batch_size: int = 10
    n_clients: int = 20
    pfedme_inner: int = 5
    ala_steps: int = 5
    panel_rounds: dict[str, tuple[int, ...]] = field(default_factory=dict)
    panel_seeds: dict[str, tuple[int, ...]] = field(default_factory=dict)
    panel_lambdas: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def lambdas_of(self, panel: str) -> tuple[float, ...]:
        return self.panel_lambdas.get(panel, self.lambdas)

    def rounds_of(self, panel: str) -> tuple[int, ...]:
        return self.panel_rounds.get(panel, self.rounds)

    def seeds_of(self, panel: str) -> tuple[int, ...]:
        return self.panel_seeds.get(panel, self.seeds)

    def __post_init__(self) -> None:
        for p in self.panels:
            if p not in PANELS:
                raise ValueError(f"unknown panel {p!r}; valid: {', '.join(PANELS)}")
        if not self.rounds or any(not isinstance(t, int) or t < 1 for t in self.rounds):
            raise ValueError(f"rounds must be integers >= 1, got {self.rounds!r}")
        if not self.seeds:
            raise ValueError("at least one seed is needed")
        for name in ("compare_panels", "lambda_panels", "train_cap", "panel_rounds",
                     "panel_seeds", "panel_lambdas"):
            outside = [p for p in getattr(self, name) if p not in self.panels]
            if outside:
                raise ValueError(f"{name} names panels the setup does not run: {outside}; "
                                 f"use some of panels={self.panels}")
        for lambdas in (self.lambdas, *self.panel_lambdas.values()):
            for lam in lambdas:
                if not 0 <= lam <= 1:
                    raise ValueError(f"lambda must lie in [0, 1], got {lam!r}")
            if self.fig5_lambda not in lambdas:
                raise ValueError(f"fig5_lambda={self.fig5_lambda} must be one of the "
                                 f"lambdas {lambdas}")
        for eps in (*self.epsilons, *self.compare_epsilons):
            if not eps > 0:
                raise ValueError(f"epsilon must be > 0 (inf for no noise), got {eps!r}")
        if len(self.compare_epsilons) != 2 or len(set(self.compare_epsilons)) != 2:
            raise ValueError(f"compare_epsilons must be two different budgets (the small and "
                             f"the large of Figures 3 and 4), got {self.compare_epsilons!r}")
        self._check_sizes()
        if self.fig6_epsilon not in self.epsilons:
            raise ValueError(f"fig6_epsilon={self.fig6_epsilon!r} must be one of the epsilons "
                             f"{self.epsilons}")
        if not (is_real(self.clip) and math.isfinite(self.clip) and self.clip > 0):
            raise ValueError(f"clip_bound (the model clipping norm C) must be a finite number "
                             f"> 0, got {self.clip!r}")

    def _check_sizes(self) -> None:
        """Every count that sizes a run, against :data:`fedlib.limits.LIMITS`."""
        for rounds in (self.rounds, *self.panel_rounds.values()):
            for t in rounds:
                check_size(t, "rounds")
        for seeds in (self.seeds, *self.panel_seeds.values()):
            for seed in seeds:
                check_seed(seed)
        for name in ("local_steps", "pfedme_inner", "ala_steps"):
            check_size(getattr(self, name), name, limit="local_steps")
        check_size(self.n_clients, "n_clients")
        check_size(self.batch_size, "batch_size")
        for name in ("eval_examples", "test_examples"):
            if getattr(self, name) is not None:
                check_size(getattr(self, name), name, limit="n_test")
        for panel, cap in self.train_cap.items():
            if cap is not None:
                check_size(cap, f"train_cap[{panel!r}]", limit="examples_per_client")
        if not (is_real(self.lr) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")

    def hyper(self) -> Hyper:
        return Hyper(lr=self.lr, personal_lr=self.lr, local_steps=self.local_steps,
                     personal_steps=self.local_steps, batch_size=self.batch_size,
                     clip=self.clip, delta=DELTA)


TIERS: dict[str, DittoSetup] = {
    "smoke": DittoSetup(
        panels=("mnist-mlr", "mnist-dnn", "fmnist-cnn"), rounds=(2, 4), seeds=(0,),
        local_steps=2, eval_examples=20, test_examples=20,
        train_cap={"mnist-dnn": 60, "mnist-mlr": 60, "fmnist-cnn": 10},
        compare_panels=("mnist-mlr",), lambda_panels=("mnist-mlr",),
        n_clients=4, pfedme_inner=2, ala_steps=2,
        panel_rounds={"fmnist-cnn": (1, 2)}),
    "quick": DittoSetup(
        panels=("mnist-mlr", "mnist-dnn", "fmnist-cnn"), rounds=(5, 10, 20), seeds=(0, 1, 2),
        local_steps=5, eval_examples=200, test_examples=300, lr=0.05,
        compare_panels=("mnist-mlr", "fmnist-cnn"), lambda_panels=("mnist-mlr",),
        pfedme_inner=3, ala_steps=5,
        panel_rounds={"mnist-dnn": (5, 10), "fmnist-cnn": (1, 3)},
        panel_seeds={"mnist-dnn": (0,), "fmnist-cnn": (0,)},
        panel_lambdas={"fmnist-cnn": (0.0, 0.05, 0.5, 1.0)}),
    "paper": DittoSetup(
        panels=("mnist-dnn", "mnist-mlr", "fmnist-cnn", "cifar10-cnn"),
        rounds=(10, 20, 40, 60, 80, 100), seeds=(0, 1, 2, 3, 4), local_steps=263,
        eval_examples=None, test_examples=None,
        compare_panels=("mnist-dnn", "fmnist-cnn", "cifar10-cnn"),
        lambda_panels=("mnist-dnn", "fmnist-cnn", "cifar10-cnn")),
}
"""smoke: seconds; quick: minutes on 2 cores: E = 5 SGD steps per round at lr 0.05
instead of an epoch at 0.005, losses on 200 training and accuracy on 300 test
examples per client, the method comparison and the lambda grid on MLR/MNIST, the
DNN only in Figure 5 (one seed), and the CNN on Fashion-MNIST in Figures 3-5 with
T in (1, 3), one seed and lambda in (0, 0.05, 0.5, 1) (each CNN round costs about
a minute of CPU for all methods); paper: the reconstructed setup (1 local
epoch, about 263 steps of batch 10, lr 0.005), five seeds."""


def tier(scale: str, *, clip: float | None = None, fig5_lambda: float | None = None,
         fig6_epsilon: float | None = None,
         compare_epsilons: tuple[float, float] | None = None) -> DittoSetup:
    """The setup of a run tier, with the chapter's inferred settings overridden.

    Parameters
    ----------
    scale
        ``smoke``, ``quick`` or ``paper``.
    clip, fig5_lambda, fig6_epsilon, compare_epsilons
        The model clipping norm C, the small lambda of Figure 5, the epsilon of
        Figures 6 and 7 and the two epsilons of Figures 3 and 4 (all inferred);
        None keeps the tier's value. Values the tier cannot use (a lambda or
        epsilon off its grids, a non-positive epsilon) raise a ValueError.
    """
    setup = TIERS[check_scale(scale)]
    overrides = {"clip": clip, "fig5_lambda": fig5_lambda, "fig6_epsilon": fig6_epsilon,
                 "compare_epsilons": None if compare_epsilons is None
                 else tuple(compare_epsilons)}
    overrides = {name: value for name, value in overrides.items() if value is not None}
    return dataclasses.replace(setup, **overrides) if overrides else setup


def run_seeds(setup: DittoSetup, seed: int, panel: str | None = None) -> tuple[int, ...]:
    """The seeds of a panel's runs (``panel`` None: the tier's seeds), counted from ``seed``.

    A tier's seeds are offsets: the chapter's ``seed`` shifts every one of them.
    """
    offsets = setup.seeds if panel is None else setup.seeds_of(panel)
    return tuple(seed + s for s in offsets)


def panels_not_run(setup: DittoSetup) -> list[str]:
    """The paper's panels this tier does not run."""
    return [p for p in PANELS if p not in setup.panels]


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


@lru_cache(maxsize=3)
def _dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """All examples of a dataset (train and test merged, as PFLlib does), float in [0, 1]."""
    if name == "cifar10":
        from fedlib.data.cifar10 import load_cifar10  # paper tier only

        parts = [load_cifar10(split) for split in ("train", "test")]
        x = np.transpose(np.concatenate([p.x for p in parts]), (0, 3, 1, 2))
        y = np.concatenate([p.y for p in parts])
    else:
        loader = load_mnist if name == "mnist" else load_fashion_mnist
        parts = [loader(split) for split in ("train", "test")]
        x = np.concatenate([p[0] for p in parts])
        y = np.concatenate([p[1] for p in parts])
    return (x.astype(np.float32) / 255.0), y.astype(np.int64)


def client_data(panel: str, seed: int, n_clients: int, train_cap: int | None,
                eval_examples: int | None, test_examples: int | None):
    """Non-IID clients: 2 label shards each, every client's data split 75/25 at random."""
    dataset, kind = PANELS[panel]
    x, y = _dataset(dataset)
    parts = label_shard_partition(y, n_clients, 2, seed=np.random.default_rng([seed, 11]))
    rng = np.random.default_rng([seed, 12])
    flat = kind != "cnn"
    per_client = []
    for idx in parts:
        idx = rng.permutation(idx)
        cut = int(round(0.75 * len(idx)))
        train, test = idx[:cut], idx[cut:]
        if train_cap is not None:
            train = train[:train_cap]
            test = test[:max(1, train_cap // 3)]
        if test_examples is not None:
            test = test[:test_examples]
        xs = x.reshape(len(x), -1) if flat else (x if x.ndim == 4 else x[:, None])
        per_client.append((xs[train], y[train], xs[test], y[test]))
    clients = pad_clients(per_client, eval_examples)
    model = make_model(kind, x.shape[1:])
    return clients, model


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


def _panel_configs(panel: str, setup: DittoSetup, seed: int) -> list[dict[str, Any]]:
    """Every run of one panel: DP-Ditto over lambdas and epsilons, baselines at the
    two compared epsilons (on the comparison panels)."""
    base = {"experiment": EXPERIMENT, "panel": panel, "local_steps": setup.local_steps,
            "eval_examples": setup.eval_examples, "test_examples": setup.test_examples,
            "train_cap": setup.train_cap.get(panel), "lr": setup.lr, "clip": setup.clip,
            "batch_size": setup.batch_size, "n_clients": setup.n_clients, "delta": DELTA,
            "pfedme_inner": setup.pfedme_inner, "ala_steps": setup.ala_steps}
    compare = panel in setup.compare_panels
    full = panel in setup.lambda_panels
    runs = []
    for run_seed in run_seeds(setup, seed, panel):
        for t in setup.rounds_of(panel):
            common = {**base, "seed": run_seed, "rounds": t}
            pairs = set()
            for eps in setup.epsilons:
                pairs.add((eps, setup.fig5_lambda))
                pairs.add((eps, 1.0))
            grid_eps = set(setup.compare_epsilons) if compare else set()
            if full:
                grid_eps.add(setup.fig6_epsilon)
            pairs.update((eps, lam) for eps in grid_eps for lam in setup.lambdas_of(panel)
                         if lam > 0)
            pairs.add((math.inf, 0.0))  # the local models (lambda = 0) never see noise
            for eps, lam in sorted(pairs):
                runs.append({**common, "method": "DP-Ditto", "epsilon": eps, "lam": lam})
            if compare:
                for method in BASELINES:
                    for eps in setup.compare_epsilons:
                        runs.append({**common, "method": method, "epsilon": eps, "lam": None})
    return runs


def configs(setup: DittoSetup, seed: int, *, panels: tuple[str, ...] | None = None
            ) -> list[dict[str, Any]]:
    """Every run config of ``setup``'s panels (or of ``panels``), seeds counted from ``seed``."""
    check_seed(seed)
    return [c for p in (panels or setup.panels) for c in _panel_configs(p, setup, seed)]


BATCHED = ("method", "epsilon", "lam")
"""The fields one :func:`run_group` call batches: the runs of a group share the
clients' data, the initial model and the minibatch draws."""


def run_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: every method of one (panel, seed, T) on the same clients."""
    check_group(configs, BATCHED)
    first = configs[0]
    torch.manual_seed(0)
    clients, model = client_data(first["panel"], first["seed"], first["n_clients"],
                                 first["train_cap"], first["eval_examples"],
                                 first["test_examples"])
    hyper = Hyper(lr=first["lr"], personal_lr=first["lr"], local_steps=first["local_steps"],
                  personal_steps=first["local_steps"], batch_size=first["batch_size"],
                  clip=first["clip"], delta=first["delta"])
    seed, rounds = first["seed"], first["rounds"]
    results: dict[int, dict[str, Any]] = {}
    ditto = [(k, c) for k, c in enumerate(configs) if c["method"] == "DP-Ditto"]
    if ditto:
        eps_list = sorted({c["epsilon"] for _, c in ditto})
        pairs = [(eps_list.index(c["epsilon"]), c["lam"]) for _, c in ditto]
        out = run_ditto(model, clients, eps_list, pairs, rounds, hyper, seed)
        for j, (k, c) in enumerate(ditto):
            results[k] = _row(out.personal, j, out.sigmas[eps_list.index(c["epsilon"])])
    configs_by_method: dict[str, list[int]] = {}
    for k, c in enumerate(configs):
        if c["method"] != "DP-Ditto":
            configs_by_method.setdefault(c["method"], []).append(k)
    extra = {"pFedMe": {"config": PFedMeConfig(inner_steps=first["pfedme_inner"])},
             "FedALA": {"config": FedAlaConfig(steps=first["ala_steps"],
                                               first_steps=4 * first["ala_steps"])},
             "FedAMP": {"config": FedAmpConfig()}, "APPLE": {"config": AppleConfig()}}
    for method, ks in configs_by_method.items():
        eps_list = [configs[k]["epsilon"] for k in ks]
        personal = BASELINES[method](model, clients, eps_list, rounds, hyper, seed,
                                     **extra[method])
        sig = noise_sigmas(eps_list, clients.n_train, hyper.clip, hyper.delta, rounds).numpy()
        for j, k in enumerate(ks):
            results[k] = _row(personal, j, sig[j])
    tables = []
    for k, c in enumerate(configs):
        tables.append(pd.DataFrame([{
            "panel": c["panel"], "seed": c["seed"], "rounds": c["rounds"], "method": c["method"],
            "epsilon": c["epsilon"], "lam": np.nan if c["lam"] is None else c["lam"],
            **results[k]}]))
    return tables


def _row(personal, j: int, sigma: np.ndarray) -> dict[str, float]:
    return {"accuracy": float(personal.accuracy[j]), "fairness": float(personal.fairness[j]),
            "loss": float(personal.mean_loss[j]), "sigma": float(np.mean(sigma))}


def run(setup: DittoSetup, seed: int, *, panels: tuple[str, ...] | None = None,
        workers: int | None = None, ray_address: str | None = None,
        progress: bool = True) -> pd.DataFrame:
    """Every run of the given panels (default: the tier's), cached; one row per run."""
    return sweep(EXPERIMENT, configs(setup, seed, panels=panels), run_group, batched=BATCHED,
                 max_group_size=4096, workers=workers, ray_address=ray_address,
                 progress=progress)
