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

Beside the paper's figures, the setting ``"authors"`` (:class:`AuthorsSetting`) runs
the defaults of the authors' released code (MNIST, LogR, M = 30 clients of 2,000
examples, batch 4, lr 0.1), once with their closed-form noise calibration and once
with the exact accountant, for comparison with their code's own accuracies.

The setting ``"lr"`` (quick tier) runs Figure 3's MNIST-LogR setting at every learning
rate of the paper's grid (:data:`PAPER_LR_GRID`), with a validation set held out from the
training examples no client holds: each method's rate is chosen on it
(:func:`fedlib.papers.pfa.claims.chosen_rates`), as many configurations for every method.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from itertools import product
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedlib.checkpoints import Checkpointer, checkpoint_path
from fedlib.checks import check_seed
from fedlib.data.cifar10 import load_cifar10
from fedlib.data.imdb import build_vocabulary, encode_reviews, load_imdb
from fedlib.data.loaders import load_fashion_mnist, load_mnist
from fedlib.data.partition import label_shard_partition
from fedlib.limits import check_finite, check_size
from fedlib.nn.models import Cifar10CNN, ImdbLSTM, LogisticRegression, PfaCNN
from fedlib.papers.pfa.budgets import CALIBRATIONS, authors_budgets, sample_budgets
from fedlib.papers.pfa.training import Federation, Hyperparameters, Variant, train_variants
from fedlib.sweeps import check_group, run_key, sweep
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
PAPER_LR_GRID = (0.1, 0.05, 0.025, 0.01, 0.005, 0.001)
"""The constant learning rates the paper explores for every method (Section 5.1)."""
LR_AGGREGATORS = MAIN_AGGREGATORS
"""The methods whose learning rate the setting ``"lr"`` chooses from the grid (and PFA as
Algorithm 3 writes it)."""
VALIDATION_SEED = 20_220_102
"""Seed of the validation examples a setting holds out from the training examples no
client holds (the same for every run of the setting)."""
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
FIGURES = ("fig3", "fig4", "fig5", "fig6", "fig8", "authors", "lr")
"""The settings of the chapter: the paper's figures, the authors' code's defaults, and
the learning rate of each method chosen from the paper's grid (``"lr"``)."""


@dataclass(frozen=True)
class AuthorsSetting:
    """The defaults of the authors' released code (``main.py``) with N = 30 clients, on
    MNIST with logistic regression: 2,000 IID examples per client (their split of the
    60,000 training images), T rounds of tau local DP-SGD steps (their defaults: 100 and
    100), batch 4 (4 microbatches of one example: per-example clipping), lr 0.1, C = 1,
    80% of the clients per round, k = 1, the full test set.

    ``distributions`` are the budgets of their ``epsfiles/mixgauss1.txt`` and
    ``mixgauss3.txt`` (our ``mixgauss2`` and ``mixgauss1``: their file names are shifted
    from the paper's Table 1); each runs under every calibration of ``calibrations``.
    ``seeds`` are the numpy seeds of the authors' runs (10 is the one their modules set
    at import), each shifted by the chapter's seed; with ``budget_draw="authors"`` a run
    draws its budgets as their code does from that seed
    (:func:`fedlib.papers.pfa.budgets.authors_budgets`: the same budgets as their run),
    with ``"ours"`` as the chapter's other settings do (:func:`sample_budgets`).
    ``models``: ``"logr-authors"`` (theirs, see :class:`AuthorsLogisticRegression`) and
    ``"logr"`` (ours), each under every calibration. With ``random_projection`` PFA also
    runs with a
    random direction in place of the public subspace: the direction their Lanczos
    routine returns after 256 iterations lies mostly outside the public updates' span.
    With ``text_projection`` the runs under the exact accountant (``"rdp"``) also run PFA
    as Algorithm 3 writes it (``"public-text"``) and its random counterpart
    (``"random-text"``).
    """

    rounds: int = 100
    local_steps: int = 100
    n_clients: int = 30
    examples_per_client: int = 2000
    batch_size: int = 4
    lr: float = 0.1
    k: int = 1
    n_test: int = 10000
    eval_every: int = 1
    distributions: tuple[str, ...] = ("mixgauss2", "mixgauss1")
    calibrations: tuple[str, ...] = CALIBRATIONS
    aggregators: tuple[str, ...] = ("fedavg", "weiavg", "pfa", "pfa+", "np-fedavg")
    seeds: tuple[int, ...] = (10, 1, 4)
    models: tuple[str, ...] = ("logr-authors", "logr")
    random_projection: bool = True
    text_projection: bool = True
    budget_draw: str = "authors"

    def __post_init__(self) -> None:
        for name in ("rounds", "local_steps", "n_clients", "examples_per_client", "batch_size",
                     "k", "n_test", "eval_every"):
            check_size(getattr(self, name), name)
        check_finite(self.lr, "lr", inclusive=False)
        _check_names(self.distributions, "distributions", DISTRIBUTIONS)
        _check_names(self.calibrations, "calibrations", CALIBRATIONS)
        _check_names(self.aggregators, "aggregators", MAIN_AGGREGATORS)
        _check_names(self.models, "models", ("logr-authors", "logr"))
        if not self.seeds or any(isinstance(x, bool) or not isinstance(x, int) or x < 0
                                 for x in self.seeds):
            raise ValueError(f"seeds must be a non-empty tuple of integers >= 0, "
                             f"got {self.seeds!r}")
        if self.budget_draw not in ("authors", "ours"):
            raise ValueError(f"budget_draw must be 'authors' or 'ours', "
                             f"got {self.budget_draw!r}")



@dataclass(frozen=True)
class PfaSetup:
    """Scale of one tier. ``lr_grid``: the learning rates the setting ``"lr"`` tries for
    every method of :data:`LR_AGGREGATORS` (none: the setting is not run), judged on
    ``n_validation`` training examples that no client holds."""

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
    fig5_device: str = "cpu"
    authors: AuthorsSetting | None = None
    lr_grid: tuple[float, ...] = ()
    n_validation: int = 0

    def __post_init__(self) -> None:
        for name in ("n_clients", "rounds", "local_steps", "batch_size", "n_test",
                     "eval_every", "repeats", "k"):
            check_size(getattr(self, name), name)
        if self.fig4_model not in ("logr", "cnn"):
            raise ValueError(f"fig4_model={self.fig4_model!r} is not a model of Figure 4; "
                             "use 'logr' or 'cnn'")
        if not self.k_grid:
            raise ValueError("k_grid must hold at least one number of directions")
        for k in self.k_grid:
            check_size(k, "k")
        _check_names(self.distributions, "distributions", DISTRIBUTIONS)
        if self.fig5_device not in ("cpu", "cuda"):
            raise ValueError(f"fig5_device must be 'cpu' or 'cuda', got {self.fig5_device!r}")
        for name in ("lr_logr", "lr_cnn", "lr_lstm"):
            check_finite(getattr(self, name), name, inclusive=False)
        if not isinstance(self.lr_grid, tuple):
            raise ValueError(f"lr_grid must be a tuple of learning rates, got {self.lr_grid!r}")
        for lr in self.lr_grid:
            check_finite(lr, "a learning rate of lr_grid", inclusive=False)
        if self.lr_grid and self.n_validation < 1:
            raise ValueError("choosing learning rates from lr_grid needs validation examples: "
                             "set n_validation >= 1")
        if self.authors is not None and not isinstance(self.authors, AuthorsSetting):
            raise ValueError(f"authors must be an AuthorsSetting or None, got {self.authors!r}")


def _check_names(names: tuple[str, ...], field: str, known: tuple[str, ...]) -> None:
    """A non-empty tuple of names, each one of ``known``."""
    if not isinstance(names, tuple) or not names:
        raise ValueError(f"{field} must be a non-empty tuple, got {names!r}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"{field} names {unknown}, not among {', '.join(known)}")


TIERS: dict[str, PfaSetup] = {
    "smoke": PfaSetup(n_clients=10, rounds=3, local_steps=2, batch_size=8, n_test=500,
                      eval_every=1, fig4_model="logr", k_grid=(1, 5),
                      distributions=("uniform", "mixgauss1"), lr_grid=(0.1, 0.01),
                      n_validation=200,
                      authors=AuthorsSetting(rounds=3, local_steps=2, n_clients=10,
                                             n_test=500, distributions=("mixgauss1",),
                                             seeds=(10,))),
    # Minutes on 2 cores: the paper's M = 30 clients of 1,200 examples and batch 8, with
    # T = 30 rounds of tau = 20 local steps (paper: 100 and 100); Figure 4 with LogR. The
    # authors' defaults at the same T and tau (their data split, batch and lr), one seed.
    "quick": PfaSetup(n_clients=30, rounds=30, local_steps=20, batch_size=8, n_test=2000,
                      eval_every=2, fig4_model="logr", k_grid=(1, 2, 5, 10, 64, 256),
                      lr_grid=PAPER_LR_GRID, n_validation=2000,
                      authors=AuthorsSetting(rounds=30, local_steps=20, n_test=2000,
                                             eval_every=2, seeds=(10,))),
    "paper": PfaSetup(n_clients=30, rounds=100, local_steps=100, batch_size=8, n_test=10000,
                      eval_every=1, fig4_model="cnn", k_grid=PAPER_K_GRID, repeats=5,
                      fig5=True, authors=AuthorsSetting()),
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
def _examples(dataset: str, split: str, standardise: bool = True
              ) -> tuple[torch.Tensor, torch.Tensor, str]:
    """Inputs, labels and the name to show for the data (which says when CIFAR-10 is
    the JPEG proxy). Images are scaled to [0, 1] and standardised (unless
    ``standardise`` is false: MNIST and Fashion-MNIST only); reviews are rows of word
    ids."""
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
    images = torch.as_tensor(x, dtype=torch.float32) / 255.0
    if standardise:
        images = (images - mean) / std
    return images.unsqueeze(1), torch.as_tensor(y, dtype=torch.long), DATASET_NAMES[dataset]


def examples_per_client(n_train: int, n_clients: int, wanted: int = EXAMPLES_PER_CLIENT
                        ) -> int:
    """``wanted`` (the paper's 1,200 by default), or an equal share of the training set
    when it is smaller."""
    per_client = min(wanted, n_train // n_clients)
    if per_client < SHARDS_PER_CLIENT:
        raise ValueError(f"{n_train} training examples cannot make {n_clients} clients")
    return per_client


def setting_examples_per_client(config: dict[str, Any]) -> int:
    """Examples per client of a setting, from its dataset's training-set size and the
    examples it asks for (``examples_per_client``, 1,200 when absent)."""
    if config["dataset"] not in TRAIN_SIZES:
        raise ValueError(f"unknown dataset {config['dataset']!r}; use one of "
                         f"{', '.join(TRAIN_SIZES)}")
    return examples_per_client(TRAIN_SIZES[config["dataset"]], config["n_clients"],
                               config.get("examples_per_client", EXAMPLES_PER_CLIENT))


def client_indices(labels: np.ndarray, n_clients: int, partition: str, seed: int,
                   per_client: int = EXAMPLES_PER_CLIENT) -> np.ndarray:
    """(M, n) training indices, n from :func:`examples_per_client`: IID (a random subset
    dealt evenly) or the paper's non-IID shards (sort by label, 10 shards per client)."""
    rng = np.random.default_rng(seed)
    per_client = examples_per_client(len(labels), n_clients, per_client)
    subset = rng.permutation(len(labels))[:n_clients * per_client]
    if partition == "iid":
        return subset.reshape(n_clients, per_client)
    if partition == "noniid":
        parts = label_shard_partition(labels[subset], n_clients, SHARDS_PER_CLIENT, rng)
        return np.stack([subset[p] for p in parts])
    raise ValueError(f"partition must be 'iid' or 'noniid', got {partition!r}")


def setting_budgets(config: dict[str, Any]) -> np.ndarray:
    """The clients' budgets of a setting: drawn by :func:`sample_budgets`, or as the
    authors' code draws them when ``budget_draw`` is ``"authors"``."""
    draw = config.get("budget_draw", "ours")
    if draw == "authors":
        return authors_budgets(config["distribution"], config["n_clients"], config["seed"])
    if draw != "ours":
        raise ValueError(f"budget_draw must be 'ours' or 'authors', got {draw!r}")
    return sample_budgets(config["distribution"], config["n_clients"], config["seed"])


def federation(config: dict[str, Any]) -> Federation:
    """The clients' data, test set and budgets of a setting."""
    standardise = config["model"] not in UNIT_PIXEL_MODELS
    x, y, _ = _examples(config["dataset"], "train", standardise)
    x_test, y_test, _ = _examples(config["dataset"], "test", standardise)
    idx = torch.as_tensor(client_indices(y.numpy(), config["n_clients"], config["partition"],
                                         config["seed"], setting_examples_per_client(config)))
    budgets = setting_budgets(config)
    kept = torch.as_tensor(test_subset(len(y_test), config["n_test"]))
    held_out: dict[str, torch.Tensor] = {}
    if config.get("n_validation", 0):
        val = torch.as_tensor(validation_indices(len(y), idx.numpy(), config["n_validation"]))
        held_out = {"x_val": x[val], "y_val": y[val]}
    return Federation(x=x[idx], y=y[idx], x_test=x_test[kept], y_test=y_test[kept],
                      budgets=budgets, delta=DELTA, **held_out)


def validation_indices(n_train: int, client_idx: np.ndarray, n_validation: int) -> np.ndarray:
    """``n_validation`` training indices that no client holds (seeded, in index order): the
    server's held-out data for choosing hyperparameters."""
    free = np.setdiff1d(np.arange(n_train), np.asarray(client_idx).ravel())
    if n_validation > len(free):
        raise ValueError(f"{n_validation} validation examples asked, but only {len(free)} "
                         "training examples are held by no client; ask for fewer, or for "
                         "fewer or smaller clients")
    chosen = np.random.default_rng(VALIDATION_SEED).choice(free, n_validation, replace=False)
    return np.sort(chosen)


TEST_SUBSET_SEED = 20_220_101
"""Seed of the test examples a setting evaluates on when it takes fewer than the whole
test set: the same for every run, so that runs are compared on the same examples."""


def test_subset(n_total: int, n_test: int) -> np.ndarray:
    """Indices of the ``n_test`` test examples a setting evaluates on: all of them in
    order when it takes the whole set, else a seeded random subset (in index order). Not
    the first ``n_test``: a test set stored by class (IMDb's 12,500 negative reviews come
    first) would give a subset of one class."""
    if n_test >= n_total:
        return np.arange(n_total)
    chosen = np.random.default_rng(TEST_SUBSET_SEED).choice(n_total, n_test, replace=False)
    return np.sort(chosen)


def hyperparameters(config: dict[str, Any]) -> Hyperparameters:
    """Rounds, local steps, batch, learning rate, evaluation interval and noise calibration
    (``"rdp"`` when absent) of a setting."""
    return Hyperparameters(rounds=config["rounds"], local_steps=config["local_steps"],
                           batch_size=config["batch_size"], lr=config["lr"],
                           eval_every=config["eval_every"],
                           calibration=config.get("calibration", "rdp"))


class AuthorsLogisticRegression(torch.nn.Sequential):
    """The authors' LogR on MNIST: ``Flatten - Linear(784, 10) - Softmax``, initialised at
    zero. Their code passes these probabilities to the softmax cross-entropy as if they
    were logits (softmax applied twice), and feeds pixels in [0, 1]
    (:data:`UNIT_PIXEL_MODELS`). The DP-SGD engine runs it on its general path."""

    def __init__(self) -> None:
        super().__init__(torch.nn.Flatten(), torch.nn.Linear(784, 10), torch.nn.Softmax(dim=1))
        torch.nn.init.zeros_(self[1].weight)
        torch.nn.init.zeros_(self[1].bias)


MODELS = {"logr": LogisticRegression, "cnn": PfaCNN, "cnn4": Cifar10CNN,
          "lstm": lambda: ImdbLSTM(IMDB_VOCABULARY), "logr-authors": AuthorsLogisticRegression}
UNIT_PIXEL_MODELS = ("logr-authors",)
"""Models fed pixels in [0, 1], not standardised (the authors' data reader)."""


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
    # A long group (Figure 5's run hours) saves its state as it goes, and a group
    # stopped part-way resumes from there when it is run again.
    keys = [run_key(c, __name__) for c in configs]
    checkpointer = Checkpointer(checkpoint_path(EXPERIMENT, keys), ",".join(sorted(keys)))
    result = train_variants(build_model(first["model"], first["seed"]), federation(first),
                            hyperparameters(first), variants, first["seed"],
                            spectrum_rounds=spectrum_rounds, checkpointer=checkpointer,
                            device=first.get("device", "cpu"))
    tables = []
    for variant, table in zip(variants, result.history, strict=True):
        table = table.copy()
        table["spectrum"] = ""
        table["data"] = _examples(first["dataset"], "train",
                                  first["model"] not in UNIT_PIXEL_MODELS)[2]
        if variant == Variant("pfa") and variant in result.spectra:
            for r, values in zip(spectrum_rounds, result.spectra[variant], strict=False):
                table.loc[table["round"] == r, "spectrum"] = ",".join(f"{v:.6g}" for v in values)
        tables.append(table)
    return tables


def _configs(base: dict[str, Any], variants: list[Variant]) -> list[dict[str, Any]]:
    return [{**base, "aggregator": v.aggregator, "k": v.k, "projection": v.projection}
            for v in variants]


def _authors_configs(a: AuthorsSetting, seed: int) -> list[dict[str, Any]]:
    """The runs of the authors'-defaults setting: every seed x distribution x model x
    calibration."""
    planned: list[dict[str, Any]] = []
    common = [Variant(aggregator, a.k) for aggregator in a.aggregators]
    if a.random_projection:
        common.append(Variant("pfa", a.k, "random"))
    text = ([Variant("pfa", a.k, "public-text"), Variant("pfa", a.k, "random-text")]
            if a.text_projection else [])
    for shift in a.seeds:
        for distribution, model, calibration in product(a.distributions, a.models,
                                                        a.calibrations):
            variants = common + (text if calibration == "rdp" else [])
            base = {"figure": "authors", "dataset": "mnist", "model": model,
                    "partition": "iid", "distribution": distribution, "lr": a.lr,
                    "n_clients": a.n_clients, "rounds": a.rounds,
                    "local_steps": a.local_steps, "batch_size": a.batch_size,
                    "n_test": a.n_test, "eval_every": a.eval_every, "seed": seed + shift,
                    "examples_per_client": a.examples_per_client,
                    "calibration": calibration, "budget_draw": a.budget_draw}
            planned += _configs(base, variants)
    return planned


def configs(setup: PfaSetup, seed: int, *, figures: tuple[str, ...] = FIGURES
            ) -> list[dict[str, Any]]:
    """Every run of the chapter at this setup (no data is loaded), or of the settings in
    ``figures`` only (names of :data:`FIGURES`)."""
    check_seed(seed)
    unknown = set(figures) - set(FIGURES)
    if unknown:
        raise ValueError(f"unknown figures {sorted(unknown)}; use some of {', '.join(FIGURES)}")
    s = setup
    main = [Variant(a, s.k) for a in MAIN_AGGREGATORS]
    text = Variant("pfa", s.k, "public-text")
    planned: list[dict[str, Any]] = []
    for repeat in range(s.repeats):
        common = {"n_clients": s.n_clients, "rounds": s.rounds, "local_steps": s.local_steps,
                  "batch_size": s.batch_size, "n_test": s.n_test, "eval_every": s.eval_every,
                  "seed": seed + repeat, "examples_per_client": EXAMPLES_PER_CLIENT,
                  "calibration": "rdp"}

        def base(figure: str, dataset: str, model: str, partition: str = "iid",
                 distribution: str = "mixgauss1", common=common) -> dict[str, Any]:
            lr = {"logr": s.lr_logr, "lstm": s.lr_lstm}.get(model, s.lr_cnn)
            return {"figure": figure, "dataset": dataset, "model": model,
                    "partition": partition, "distribution": distribution, "lr": lr, **common}

        if "fig3" in figures:
            for dataset in ("mnist", "fashion-mnist"):
                for model in ("logr", "cnn"):
                    planned += _configs(base("fig3", dataset, model), [*main, text])
        if "fig8" in figures:
            for model in ("logr", "cnn"):
                planned += _configs(base("fig8", "mnist", model, "noniid"), main)
        if "fig4" in figures:
            for distribution in s.distributions:
                planned += _configs(base("fig4", "mnist", s.fig4_model, "iid", distribution),
                                    main)
        if "fig6" in figures:
            fig6 = ([Variant("pfa+", k) for k in s.k_grid]
                    + [Variant("pfa", k) for k in s.k_grid]
                    + [Variant("pfa", k, "random") for k in s.k_grid]
                    + [Variant("pfa", k, p) for p in ("public-text", "random-text")
                       for k in s.k_grid]
                    + [Variant("weiavg")])
            planned += _configs(base("fig6", "mnist", "logr"), fig6)
        if s.lr_grid and "lr" in figures:
            for lr in s.lr_grid:
                planned += _configs({**base("lr", "mnist", "logr"), "lr": lr,
                                     "n_validation": s.n_validation},
                                    [*(Variant(a, s.k) for a in LR_AGGREGATORS), text])
        if s.fig5 and "fig5" in figures:
            for dataset, model in FIG5_SETTINGS:
                planned += _configs({**base("fig5", dataset, model),
                                     "n_clients": FIG5_CLIENTS, "device": s.fig5_device},
                                    main)
    if s.authors is not None and "authors" in figures:
        planned += _authors_configs(s.authors, seed)
    return planned


def run(setup: PfaSetup, seed: int, *, figures: tuple[str, ...] = FIGURES,
        workers: int | None = None, ray_address: str | None = None,
        progress: bool = True) -> pd.DataFrame:
    """All runs of the setup (cached, resumable), or of the settings in ``figures``, one
    row per run and round, with the run's config in columns."""
    planned = configs(setup, seed, figures=figures)
    runs = sweep(EXPERIMENT, planned, run_group, batched=BATCHED,
                 max_group_size=len(planned), workers=workers, ray_address=ray_address,
                 progress=progress)
    settings = pd.DataFrame(planned)
    settings.insert(0, "run_key", runs.drop_duplicates("run_key")["run_key"].to_numpy())
    return runs.merge(settings, on="run_key", how="left")


def describe(setup: PfaSetup) -> dict[str, Any]:
    """The setup as a flat dict."""
    return asdict(setup)
