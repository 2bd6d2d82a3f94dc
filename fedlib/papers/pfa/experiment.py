"""Liu et al. (2022), PFA: the runs behind Figures 3-8 and 13.

The experiment protocol of the chapter: the run tiers (:data:`TIERS`,
:func:`tier`), every run config of a tier (:func:`configs`), the sweep runner
(:func:`run_group`) and the cached sweep (:func:`run`), with the data, models and
hyperparameters a run config stands for.

Every figure is a set of *settings* (dataset, model, partition, budget
distribution, clients); each setting trains all its aggregator variants
together (:func:`fedlib.papers.pfa.training.train_variants`), cached per variant by the
sweep.

Figure 5 (CIFAR-10 with a 4-layer CNN, IMDb with an LSTM, M = 50) runs at the paper
tier only. Both datasets have fewer training examples than 50 clients of 1,200:
clients get an equal share instead (1,000 CIFAR-10 images, 500 reviews).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedlib.checks import check_seed
from fedlib.data.cifar10 import load_cifar10
from fedlib.data.imdb import build_vocabulary, encode_reviews, load_imdb
from fedlib.data.loaders import load_fashion_mnist, load_mnist
from fedlib.data.partition import label_shard_partition
from fedlib.nn.models import Cifar10CNN, ImdbLSTM, LogisticRegression, PfaCNN
from fedlib.papers.pfa.budgets import sample_budgets
from fedlib.papers.pfa.training import Federation, Hyperparameters, Variant, train_variants
from fedlib.sweeps import check_group, sweep
from fedlib.tiers import check_scale

EXPERIMENT = "pfa-heterogeneous"
DELTA = 1e-5
EXAMPLES_PER_CLIENT = 1200
SHARDS_PER_CLIENT = 10
MAIN_AGGREGATORS = ("fedavg", "weiavg", "pfa", "pfa+", "minimum", "maximum", "np-fedavg")
LABELS = {"fedavg": "FedAvg", "weiavg": "WeiAvg", "pfa": "PFA", "pfa+": "PFA+",
          "minimum": "Minimum", "maximum": "Maximum", "np-fedavg": "NP-FedAvg"}
DISTRIBUTIONS = ("uniform", "gauss", "pareto", "mixgauss1", "mixgauss2", "mixgauss3",
                 "mixgauss4")
PAPER_K_GRID = (1, 2, 5, 10, 64, 128, 256)
NORMALISATION = {"mnist": (0.1307, 0.3081), "fashion-mnist": (0.2860, 0.3530),
                 "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))}
"""Pixel mean and std of each training set (after scaling to [0, 1]; per channel for
CIFAR-10)."""
IMDB_VOCABULARY = 10_000
IMDB_LENGTH = 200
"""Word ids kept (the most frequent training words) and words per review (the last
ones): inferred, the paper's appendix with the LSTM's details did not survive."""
TRAIN_SIZES = {"mnist": 60_000, "fashion-mnist": 60_000, "cifar10": 50_000, "imdb": 25_000}
"""Training examples of each dataset, which cap the examples per client."""
FIG5_CLIENTS = 50
FIG5_SETTINGS = (("cifar10", "cnn4"), ("imdb", "lstm"))


@dataclass(frozen=True)
class PfaSetup:
    """Scale of one tier."""

    n_clients: int
    rounds: int
    local_steps: int
    batch_size: int
    n_test: int
    eval_every: int
    fig4_model: str
    k_grid: tuple[int, ...]
    distributions: tuple[str, ...] = DISTRIBUTIONS
    repeats: int = 1
    lr_logr: float = 0.3
    lr_cnn: float = 0.1
    lr_lstm: float = 0.5
    k: int = 1
    fig5: bool = False


TIERS: dict[str, PfaSetup] = {
    "smoke": PfaSetup(n_clients=10, rounds=3, local_steps=2, batch_size=8, n_test=500,
                      eval_every=1, fig4_model="logr", k_grid=(1, 5),
                      distributions=("uniform", "mixgauss1")),
    # Minutes on 2 cores: the paper's M = 30 clients of 1,200 examples and batch 8, with
    # T = 30 rounds of tau = 20 local steps (paper: 100 and 100); Figure 4 with LogR.
    "quick": PfaSetup(n_clients=30, rounds=30, local_steps=20, batch_size=8, n_test=2000,
                      eval_every=2, fig4_model="logr", k_grid=(1, 2, 5, 10, 64, 256)),
    "paper": PfaSetup(n_clients=30, rounds=100, local_steps=100, batch_size=8, n_test=10000,
                      eval_every=1, fig4_model="cnn", k_grid=PAPER_K_GRID, repeats=5,
                      fig5=True),
}


def tier(scale: str, **overrides: Any) -> PfaSetup:
    """The setup of a tier, with any field in ``overrides`` replaced (None keeps the
    tier's value)."""
    chosen = TIERS[check_scale(scale)]
    changes = {name: value for name, value in overrides.items() if value is not None}
    return replace(chosen, **changes) if changes else chosen


DATASET_NAMES = {"mnist": "MNIST", "fashion-mnist": "Fashion-MNIST", "imdb": "IMDb"}


@lru_cache(maxsize=2)
def _imdb_tokens() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    train, test = load_imdb("train"), load_imdb("test")
    vocabulary = build_vocabulary(train.texts, IMDB_VOCABULARY)
    return {split: (torch.as_tensor(encode_reviews(reviews.texts, vocabulary, IMDB_LENGTH),
                                    dtype=torch.float32),
                    torch.as_tensor(reviews.y, dtype=torch.long))
            for split, reviews in (("train", train), ("test", test))}


@lru_cache(maxsize=4)
def _examples(dataset: str, split: str) -> tuple[torch.Tensor, torch.Tensor, str]:
    """Inputs, labels and the name to show for the data (which says when CIFAR-10 is
    the JPEG proxy). Images are standardised; reviews are rows of word ids."""
    if dataset == "imdb":
        return (*_imdb_tokens()[split], DATASET_NAMES[dataset])
    if dataset == "cifar10":
        images = load_cifar10(split)
        mean, std = (torch.tensor(v).view(3, 1, 1) for v in NORMALISATION[dataset])
        x = torch.as_tensor(images.x, dtype=torch.float32).permute(0, 3, 1, 2) / 255.0
        return (x - mean) / std, torch.as_tensor(images.y, dtype=torch.long), images.name
    loader = {"mnist": load_mnist, "fashion-mnist": load_fashion_mnist}[dataset]
    x, y = loader(split)
    mean, std = NORMALISATION[dataset]
    images = (torch.as_tensor(x, dtype=torch.float32) / 255.0 - mean) / std
    return images.unsqueeze(1), torch.as_tensor(y, dtype=torch.long), DATASET_NAMES[dataset]


def examples_per_client(n_train: int, n_clients: int) -> int:
    """1,200 (the paper's), or an equal share of the training set when it is smaller."""
    per_client = min(EXAMPLES_PER_CLIENT, n_train // n_clients)
    if per_client < SHARDS_PER_CLIENT:
        raise ValueError(f"{n_train} training examples cannot make {n_clients} clients")
    return per_client


def setting_examples_per_client(config: dict[str, Any]) -> int:
    """Examples per client of a setting, from its dataset's training-set size."""
    if config["dataset"] not in TRAIN_SIZES:
        raise ValueError(f"unknown dataset {config['dataset']!r}; use one of "
                         f"{', '.join(TRAIN_SIZES)}")
    return examples_per_client(TRAIN_SIZES[config["dataset"]], config["n_clients"])


def client_indices(labels: np.ndarray, n_clients: int, partition: str, seed: int
                   ) -> np.ndarray:
    """(M, n) training indices, n from :func:`examples_per_client`: IID (a random subset
    dealt evenly) or the paper's non-IID shards (sort by label, 10 shards per client)."""
    rng = np.random.default_rng(seed)
    per_client = examples_per_client(len(labels), n_clients)
    subset = rng.permutation(len(labels))[:n_clients * per_client]
    if partition == "iid":
        return subset.reshape(n_clients, per_client)
    if partition == "noniid":
        parts = label_shard_partition(labels[subset], n_clients, SHARDS_PER_CLIENT, rng)
        return np.stack([subset[p] for p in parts])
    raise ValueError(f"partition must be 'iid' or 'noniid', got {partition!r}")


def federation(config: dict[str, Any]) -> Federation:
    """The clients' data, test set and budgets of a setting."""
    x, y, _ = _examples(config["dataset"], "train")
    x_test, y_test, _ = _examples(config["dataset"], "test")
    idx = torch.as_tensor(client_indices(y.numpy(), config["n_clients"], config["partition"],
                                         config["seed"]))
    budgets = sample_budgets(config["distribution"], config["n_clients"], config["seed"])
    n_test = config["n_test"]
    return Federation(x=x[idx], y=y[idx], x_test=x_test[:n_test], y_test=y_test[:n_test],
                      budgets=budgets, delta=DELTA)


def hyperparameters(config: dict[str, Any]) -> Hyperparameters:
    """Rounds, local steps, batch, learning rate and evaluation interval of a setting."""
    return Hyperparameters(rounds=config["rounds"], local_steps=config["local_steps"],
                           batch_size=config["batch_size"], lr=config["lr"],
                           eval_every=config["eval_every"])


MODELS = {"logr": LogisticRegression, "cnn": PfaCNN, "cnn4": Cifar10CNN,
          "lstm": lambda: ImdbLSTM(IMDB_VOCABULARY)}


def build_model(name: str, seed: int) -> torch.nn.Module:
    """A model of the paper (``logr``, ``cnn``; ``cnn4`` for CIFAR-10, ``lstm`` for
    IMDb), initialised from ``seed``."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; use one of {', '.join(MODELS)}")
    torch.manual_seed(seed)
    return MODELS[name]()


BATCHED = ("aggregator", "k", "projection")
"""The variants of one setting, trained together in one runner call."""


def run_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: all variants of one setting, trained together (one table per
    config, in order)."""
    check_group(configs, BATCHED)
    first = configs[0]
    torch.set_num_threads(1)
    variants = [Variant(c["aggregator"], c["k"], c["projection"]) for c in configs]
    spectrum_rounds = sorted({1, max(1, first["rounds"] // 2), first["rounds"]})
    result = train_variants(build_model(first["model"], first["seed"]), federation(first),
                            hyperparameters(first), variants, first["seed"],
                            spectrum_rounds=spectrum_rounds)
    tables = []
    for variant, table in zip(variants, result.history, strict=True):
        table = table.copy()
        table["spectrum"] = ""
        table["data"] = _examples(first["dataset"], "train")[2]
        if variant == Variant("pfa") and result.spectra:
            for r, values in zip(spectrum_rounds, result.spectra, strict=False):
                table.loc[table["round"] == r, "spectrum"] = ",".join(f"{v:.6g}" for v in values)
        tables.append(table)
    return tables


def _configs(base: dict[str, Any], variants: list[Variant]) -> list[dict[str, Any]]:
    return [{**base, "aggregator": v.aggregator, "k": v.k, "projection": v.projection}
            for v in variants]


def configs(setup: PfaSetup, seed: int) -> list[dict[str, Any]]:
    """Every run of the chapter at this setup (no data is loaded)."""
    check_seed(seed)
    s = setup
    main = [Variant(a, s.k) for a in MAIN_AGGREGATORS]
    planned: list[dict[str, Any]] = []
    for repeat in range(s.repeats):
        common = {"n_clients": s.n_clients, "rounds": s.rounds, "local_steps": s.local_steps,
                  "batch_size": s.batch_size, "n_test": s.n_test, "eval_every": s.eval_every,
                  "seed": seed + repeat}

        def base(figure: str, dataset: str, model: str, partition: str = "iid",
                 distribution: str = "mixgauss1", common=common) -> dict[str, Any]:
            lr = {"logr": s.lr_logr, "lstm": s.lr_lstm}.get(model, s.lr_cnn)
            return {"figure": figure, "dataset": dataset, "model": model,
                    "partition": partition, "distribution": distribution, "lr": lr, **common}

        for dataset in ("mnist", "fashion-mnist"):
            for model in ("logr", "cnn"):
                planned += _configs(base("fig3", dataset, model), main)
        for model in ("logr", "cnn"):
            planned += _configs(base("fig8", "mnist", model, "noniid"), main)
        for distribution in s.distributions:
            planned += _configs(base("fig4", "mnist", s.fig4_model, "iid", distribution), main)
        fig6 = ([Variant("pfa+", k) for k in s.k_grid] + [Variant("pfa", k) for k in s.k_grid]
                + [Variant("pfa", k, "random") for k in s.k_grid] + [Variant("weiavg")])
        planned += _configs(base("fig6", "mnist", "logr"), fig6)
        if s.fig5:
            for dataset, model in FIG5_SETTINGS:
                planned += _configs({**base("fig5", dataset, model),
                                     "n_clients": FIG5_CLIENTS}, main)
    return planned


def run(setup: PfaSetup, seed: int, *, workers: int | None = None,
        ray_address: str | None = None, progress: bool = True) -> pd.DataFrame:
    """All runs of the setup (cached, resumable), one row per run and round, with the
    run's config in columns."""
    planned = configs(setup, seed)
    runs = sweep(EXPERIMENT, planned, run_group, batched=BATCHED,
                 max_group_size=len(planned), workers=workers, ray_address=ray_address,
                 progress=progress)
    settings = pd.DataFrame(planned)
    settings.insert(0, "run_key", runs.drop_duplicates("run_key")["run_key"].to_numpy())
    return runs.merge(settings, on="run_key", how="left")


def describe(setup: PfaSetup) -> dict[str, Any]:
    """The setup as a flat dict."""
    return asdict(setup)
