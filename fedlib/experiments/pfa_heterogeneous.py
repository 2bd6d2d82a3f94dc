"""Liu et al. (2022), PFA: the runs behind Figures 3, 4, 6, 7, 8 and 13, and their claims.

Every figure is a set of *settings* (dataset, model, partition, budget
distribution, clients); each setting trains all its aggregator variants
together (:func:`fedlib.pfa_training.train_variants`), cached per variant by the
sweep.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedlib.claims import Claim, verdict
from fedlib.data.loaders import load_fashion_mnist, load_mnist
from fedlib.data.partition import label_shard_partition
from fedlib.experiments.tiers import check_scale
from fedlib.models import LogisticRegression, PfaCNN
from fedlib.pfa_aggregation import upload_bytes
from fedlib.pfa_training import (
    SAMPLING_RATIO,
    Federation,
    Schedule,
    Variant,
    plan_participation,
    train_variants,
)
from fedlib.privacy.accounting import epsilon
from fedlib.privacy.calibration import pfa_closed_form_noise_multiplier
from fedlib.privacy.ledger import sample_budgets
from fedlib.sweeps import sweep

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
NORMALISATION = {"mnist": (0.1307, 0.3081), "fashion-mnist": (0.2860, 0.3530)}
"""Pixel mean and std of each training set (after scaling to [0, 1])."""


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
    repeats: int = 1
    lr_logr: float = 0.3
    lr_cnn: float = 0.1
    k: int = 1


TIERS: dict[str, PfaSetup] = {
    "smoke": PfaSetup(n_clients=10, rounds=3, local_steps=2, batch_size=8, n_test=500,
                      eval_every=1, fig4_model="logr", k_grid=(1, 5)),
    # Minutes on 2 cores: the paper's M = 30 clients of 1,200 examples and batch 8, with
    # T = 30 rounds of tau = 20 local steps (paper: 100 and 100); Figure 4 with LogR.
    "quick": PfaSetup(n_clients=30, rounds=30, local_steps=20, batch_size=8, n_test=2000,
                      eval_every=2, fig4_model="logr", k_grid=(1, 2, 5, 10, 64, 256)),
    "paper": PfaSetup(n_clients=30, rounds=100, local_steps=100, batch_size=8, n_test=10000,
                      eval_every=1, fig4_model="cnn", k_grid=PAPER_K_GRID, repeats=5),
}


def setup(scale: str) -> PfaSetup:
    """The setup of a tier."""
    return TIERS[check_scale(scale)]


@lru_cache(maxsize=4)
def _images(dataset: str, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    loader = {"mnist": load_mnist, "fashion-mnist": load_fashion_mnist}[dataset]
    x, y = loader(split)
    mean, std = NORMALISATION[dataset]
    images = (torch.as_tensor(x, dtype=torch.float32) / 255.0 - mean) / std
    return images.unsqueeze(1), torch.as_tensor(y, dtype=torch.long)


def client_indices(labels: np.ndarray, n_clients: int, partition: str, seed: int
                   ) -> np.ndarray:
    """(M, 1200) training indices: IID (a random subset dealt evenly) or the paper's
    non-IID shards (sort by label, 10 shards of 120 per client)."""
    rng = np.random.default_rng(seed)
    subset = rng.permutation(len(labels))[:n_clients * EXAMPLES_PER_CLIENT]
    if partition == "iid":
        return subset.reshape(n_clients, EXAMPLES_PER_CLIENT)
    if partition == "noniid":
        parts = label_shard_partition(labels[subset], n_clients, SHARDS_PER_CLIENT, rng)
        return np.stack([subset[p] for p in parts])
    raise ValueError(f"partition must be 'iid' or 'noniid', got {partition!r}")


def federation(config: dict[str, Any]) -> Federation:
    """The clients' data, test set and budgets of a setting."""
    x, y = _images(config["dataset"], "train")
    x_test, y_test = _images(config["dataset"], "test")
    idx = torch.as_tensor(client_indices(y.numpy(), config["n_clients"], config["partition"],
                                         config["seed"]))
    budgets = sample_budgets(config["distribution"], config["n_clients"], config["seed"])
    n_test = config["n_test"]
    return Federation(x=x[idx], y=y[idx], x_test=x_test[:n_test], y_test=y_test[:n_test],
                      budgets=budgets, delta=DELTA)


def schedule(config: dict[str, Any]) -> Schedule:
    return Schedule(rounds=config["rounds"], local_steps=config["local_steps"],
                    batch_size=config["batch_size"], lr=config["lr"],
                    eval_every=config["eval_every"])


def _model(name: str, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return {"logr": LogisticRegression, "cnn": PfaCNN}[name]()


SETTING_FIELDS = ("figure", "dataset", "model", "partition", "distribution", "n_clients",
                  "rounds", "local_steps", "batch_size", "lr", "n_test", "eval_every", "seed")


def _setting(config: dict[str, Any]) -> tuple:
    return tuple(config[f] for f in SETTING_FIELDS)


def run_setting(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: all variants of one setting, trained together."""
    first = configs[0]
    if any(_setting(c) != _setting(first) for c in configs):
        raise ValueError("a group must share its setting")
    torch.set_num_threads(1)
    variants = [Variant(c["aggregator"], c["k"], c["projection"]) for c in configs]
    spectrum_rounds = sorted({1, max(1, first["rounds"] // 2), first["rounds"]})
    result = train_variants(_model(first["model"], first["seed"]), federation(first),
                            schedule(first), variants, first["seed"],
                            spectrum_rounds=spectrum_rounds)
    tables = []
    for variant, table in zip(variants, result.history, strict=True):
        table = table.copy()
        table["spectrum"] = ""
        if variant == Variant("pfa") and result.spectra:
            for r, values in zip(spectrum_rounds, result.spectra, strict=False):
                table.loc[table["round"] == r, "spectrum"] = ",".join(f"{v:.6g}" for v in values)
        tables.append(table)
    return tables


def _configs(base: dict[str, Any], variants: list[Variant]) -> list[dict[str, Any]]:
    return [{**base, "aggregator": v.aggregator, "k": v.k, "projection": v.projection}
            for v in variants]


def figure_configs(scale: str, seed: int) -> list[dict[str, Any]]:
    """Every run of the chapter at this tier."""
    s = setup(scale)
    main = [Variant(a, s.k) for a in MAIN_AGGREGATORS]
    configs: list[dict[str, Any]] = []
    for repeat in range(s.repeats):
        common = {"n_clients": s.n_clients, "rounds": s.rounds, "local_steps": s.local_steps,
                  "batch_size": s.batch_size, "n_test": s.n_test, "eval_every": s.eval_every,
                  "seed": seed + repeat}

        def base(figure: str, dataset: str, model: str, partition: str = "iid",
                 distribution: str = "mixgauss1", common=common) -> dict[str, Any]:
            lr = s.lr_logr if model == "logr" else s.lr_cnn
            return {"figure": figure, "dataset": dataset, "model": model,
                    "partition": partition, "distribution": distribution, "lr": lr, **common}

        for dataset in ("mnist", "fashion-mnist"):
            for model in ("logr", "cnn"):
                configs += _configs(base("fig3", dataset, model), main)
        for model in ("logr", "cnn"):
            configs += _configs(base("fig8", "mnist", model, "noniid"), main)
        for distribution in DISTRIBUTIONS:
            configs += _configs(base("fig4", "mnist", s.fig4_model, "iid", distribution), main)
        fig6 = ([Variant("pfa+", k) for k in s.k_grid] + [Variant("pfa", k) for k in s.k_grid]
                + [Variant("pfa", k, "random") for k in s.k_grid] + [Variant("weiavg")])
        configs += _configs(base("fig6", "mnist", "logr"), fig6)
    return configs


def run_all(scale: str, seed: int, workers: int | None = None, ray_address: str | None = None,
            progress: bool = False) -> pd.DataFrame:
    """All runs of the tier (cached, resumable), one row per run and round."""
    configs = figure_configs(scale, seed)
    runs = sweep(EXPERIMENT, configs, run_setting, group_key=_setting,
                 max_group_size=len(configs), workers=workers, ray_address=ray_address,
                 progress=progress)
    settings = pd.DataFrame(configs)
    settings.insert(0, "run_key", runs.drop_duplicates("run_key")["run_key"].to_numpy())
    return runs.merge(settings, on="run_key", how="left")


def final_accuracy(runs: pd.DataFrame, last: int = 3) -> pd.DataFrame:
    """Mean test accuracy over the last ``last`` evaluations of each run."""
    evaluated = runs.dropna(subset=["accuracy"])
    tail = evaluated.sort_values("round").groupby("run_key").tail(last)
    keys = ["figure", "dataset", "model", "partition", "distribution", "aggregator", "k",
            "projection", "seed"]
    return tail.groupby(keys, as_index=False)["accuracy"].mean()


# ---------------------------------------------------------------------------------------
# Privacy: the per-client ledger and the authors' closed form


def ledger_table(config: dict[str, Any], accountant_check: str = "pld") -> pd.DataFrame:
    """Per client of a setting: budget, noise multiplier (exact RDP calibration and the
    authors' closed form), rounds taken and the epsilon actually spent (RDP, and under
    ``accountant_check``)."""
    budgets = sample_budgets(config["distribution"], config["n_clients"], config["seed"])
    sched = schedule(config)
    ledger, public, _ = plan_participation(budgets, EXAMPLES_PER_CLIENT, sched, DELTA,
                                           config["seed"])
    n_sample = max(1, round(SAMPLING_RATIO * config["n_clients"]))
    q = sched.batch_size / EXAMPLES_PER_CLIENT
    rows = []
    for m, budget in enumerate(budgets):
        nm = ledger.noise_multipliers[m]
        steps = int(ledger.rounds_taken[m]) * sched.local_steps
        rows.append({
            "client": m, "public": bool(public[m]), "budget": budget,
            "noise multiplier (RDP calibration)": nm,
            "noise multiplier (authors' closed form)": pfa_closed_form_noise_multiplier(
                budget, DELTA, sched.batch_size, EXAMPLES_PER_CLIENT, sched.rounds, n_sample,
                config["n_clients"]),
            "rounds taken": int(ledger.rounds_taken[m]),
            "epsilon spent (RDP)": ledger.spent_after(m, int(ledger.rounds_taken[m])),
            f"epsilon spent ({accountant_check.upper()})": epsilon(
                nm, q, steps, DELTA, accountant=accountant_check),
        })
    return pd.DataFrame(rows)


def closed_form_epsilon(config: dict[str, Any], budget: float) -> float:
    """Epsilon (RDP) of the authors' closed-form noise over the planned steps."""
    sched = schedule(config)
    n_sample = max(1, round(SAMPLING_RATIO * config["n_clients"]))
    nm = pfa_closed_form_noise_multiplier(budget, DELTA, sched.batch_size, EXAMPLES_PER_CLIENT,
                                          sched.rounds, n_sample, config["n_clients"])
    planned = math.ceil(sched.rounds * n_sample / config["n_clients"])
    return epsilon(nm, sched.batch_size / EXAMPLES_PER_CLIENT, planned * sched.local_steps,
                   DELTA)


def paper_uplink_megabytes(model: str, k: int = 1, n_clients: int = 50, n_public: int = 5,
                           rounds: int = 100) -> dict[str, float]:
    """Uplink MB after ``rounds`` rounds at the paper's Figure 7 setting, every sampled
    client uploading every round: full updates versus PFA+ (public clients full, private
    clients k coefficients per layer; the warm-up round full)."""
    net = _model(model, 0)
    sizes = {name: p.numel() for name, p in net.named_parameters()}
    n_sample = round(SAMPLING_RATIO * n_clients)
    n_private = n_sample - min(n_public, n_sample)
    full = upload_bytes(sizes, n_sample) * rounds
    plus = upload_bytes(sizes, n_sample) + (rounds - 1) * upload_bytes(
        sizes, n_sample - n_private, n_private, k)
    return {"full": full / 1e6, "pfa+": plus / 1e6}


# ---------------------------------------------------------------------------------------
# Claims


def _acc(final: pd.DataFrame, **where: Any) -> float:
    rows = final
    for key, value in where.items():
        rows = rows[rows[key] == value]
    if rows.empty:
        raise KeyError(f"no run matches {where}")
    return float(rows["accuracy"].mean())


def evaluate_claims(runs: pd.DataFrame, scale: str, k: int) -> list[Claim]:
    """Every claim of the PFA chapter at this tier."""
    final = final_accuracy(runs)
    claims: list[Claim] = []

    def claim(claim_id: str, holds: bool | None, text: str, evidence: str,
              paper_value: str = "") -> None:
        status = "NOT-RUN" if holds is None else verdict(holds)
        claims.append(Claim("pfa", claim_id, status, text, evidence, paper_value, scale))

    # Figure 3
    panels = [(d, m) for d in ("mnist", "fashion-mnist") for m in ("logr", "cnn")]
    table = {(d, m): {a: _acc(final, figure="fig3", dataset=d, model=m, aggregator=a,
                              projection="public") for a in MAIN_AGGREGATORS}
             for d, m in panels}

    def fmt(d: str, m: str) -> str:
        t = table[(d, m)]
        return f"{d}-{m}: " + ", ".join(f"{LABELS[a]} {t[a]:.3f}" for a in MAIN_AGGREGATORS)

    evidence = "; ".join(fmt(d, m) for d, m in panels)
    ordering = [max(t["pfa"], t["pfa+"]) > t["weiavg"] > max(t["fedavg"], t["minimum"]) - 0.01
                for t in table.values()]
    claim("fig3-ordering", all(ordering),
          "PFA and PFA+ beat WeiAvg, which beats FedAvg and Minimum, in all four panels "
          "(final accuracy, MNIST/FMNIST x LogR/CNN, IID, MixGauss1)", evidence,
          "PFA ~ PFA+ > WeiAvg > FedAvg ~ Minimum")
    pfa_close = [abs(t["pfa"] - t["pfa+"]) <= 0.03 for t in table.values()]
    claim("fig3-pfa-plus-matches-pfa", all(pfa_close),
          "PFA+ is as accurate as PFA (within 3 points) in all four panels",
          "; ".join(f"{d}-{m}: PFA {t['pfa']:.3f}, PFA+ {t['pfa+']:.3f}"
                    for (d, m), t in table.items()), "PFA ~ PFA+")
    fedavg_cnn = table[("mnist", "cnn")]["fedavg"]
    claim("fig3-fedavg-near-chance", fedavg_cnn < 0.2,
          "FedAvg under heterogeneous DP stays near chance (0.1) on MNIST-CNN",
          f"FedAvg final accuracy on MNIST-CNN {fedavg_cnn:.3f}", "near 0.1")
    below = [max(v for a, v in t.items() if a != "np-fedavg") <= t["np-fedavg"] + 0.005
             for t in table.values()]
    claim("fig3-below-nonprivate", all(below),
          "every private method stays below NP-FedAvg in all four panels", evidence)

    # Figure 4
    by_dist = {d: {a: _acc(final, figure="fig4", distribution=d, aggregator=a,
                           projection="public") for a in MAIN_AGGREGATORS}
               for d in DISTRIBUTIONS}
    spread = ("mixgauss1", "mixgauss2", "mixgauss4")
    robust = [max(t["pfa"], t["pfa+"]) >= t["weiavg"] and max(t["pfa"], t["pfa+"]) > t["fedavg"]
              for d, t in by_dist.items() if d in spread]
    ev4 = "; ".join(f"{d}: PFA {t['pfa']:.3f}, PFA+ {t['pfa+']:.3f}, WeiAvg {t['weiavg']:.3f}, "
                    f"FedAvg {t['fedavg']:.3f}" for d, t in by_dist.items())
    claim("fig4-pfa-robust", all(robust),
          "under the spread-out mixtures (MixGauss1, 2, 4) PFA/PFA+ are at least as accurate "
          "as WeiAvg and above FedAvg", ev4, "PFA/PFA+ robust across distributions")
    similar = [max(t[a] for a in ("fedavg", "weiavg", "pfa", "pfa+"))
               - min(t[a] for a in ("fedavg", "weiavg", "pfa", "pfa+")) <= 0.05
               for d, t in by_dist.items() if d in ("uniform", "gauss")]
    claim("fig4-similar-when-uniform", all(similar),
          "under Uniform and Gauss budgets FedAvg, WeiAvg, PFA and PFA+ are within 5 points",
          ev4, "all similar under Uniform/Gauss")
    collapse = [t["fedavg"] < by_dist["uniform"]["fedavg"] - 0.05 for d, t in by_dist.items()
                if d in spread]
    claim("fig4-fedavg-collapses", all(collapse),
          "FedAvg loses more than 5 points from Uniform to each spread-out mixture",
          "; ".join(f"{d}: FedAvg {by_dist[d]['fedavg']:.3f}" for d in DISTRIBUTIONS),
          "WeiAvg and FedAvg collapse as budgets spread")

    # Figure 5 is paper-tier only and needs CIFAR-10 and IMDb
    reason = ("not run: CIFAR-10 (4-layer CNN) and IMDb (LSTM) runs are not part of this "
              "edition of the chapter (no loaders for them yet)")
    claim("fig5-cifar-imdb", None, "on CIFAR-10 and IMDb (M=50) PFA/PFA+ are slightly above "
          "WeiAvg and far above FedAvg", reason, "PFA/PFA+ > WeiAvg >> FedAvg")

    # Figure 6
    ks = sorted(set(runs.loc[runs["figure"] == "fig6", "k"]))
    plus = {kk: _acc(final, figure="fig6", aggregator="pfa+", k=kk) for kk in ks}
    pub = {kk: _acc(final, figure="fig6", aggregator="pfa", k=kk, projection="public")
           for kk in ks}
    rand = {kk: _acc(final, figure="fig6", aggregator="pfa", k=kk, projection="random")
            for kk in ks}
    best_k = max(plus, key=plus.get)
    claim("fig6a-small-k-best", best_k <= 5 and plus[min(ks)] > plus[max(ks)],
          "PFA+ is most accurate at a small k (<= 5) and worse at the largest k",
          "PFA+ by k: " + ", ".join(f"k={kk}: {v:.3f}" for kk, v in plus.items()),
          "best near k=1 (~80%), worse for large k")
    small = min(ks)
    claim("fig6b-random-projection-poor", rand[small] < pub[small] - 0.02,
          "at small k a random Gaussian subspace is clearly worse (> 2 points) than the "
          "public clients' subspace",
          "PFA public vs random: " + ", ".join(f"k={kk}: {pub[kk]:.3f} vs {rand[kk]:.3f}"
                                               for kk in ks), "random projection poor at small k")

    # Figure 7
    fig3_mnist = runs[(runs["figure"] == "fig3") & (runs["dataset"] == "mnist")]
    totals = fig3_mnist.groupby(["model", "aggregator"])["uplink_bytes"].sum() / 1e6
    ratios = {m: totals[(m, "pfa+")] / totals[(m, "fedavg")] for m in ("logr", "cnn")}
    paper_logr = paper_uplink_megabytes("logr", k)
    paper_cnn = paper_uplink_megabytes("cnn", k)
    claim("fig7-uplink-reduction", all(r < 0.25 for r in ratios.values()),
          "PFA+ sends less than a quarter of the uplink bytes of the full-update methods",
          f"this build (M={int(runs['n_clients'].iloc[0])}): "
          f"LogR {totals[('logr', 'pfa+')]:.1f} vs "
          f"{totals[('logr', 'fedavg')]:.1f} MB, CNN {totals[('cnn', 'pfa+')]:.1f} vs "
          f"{totals[('cnn', 'fedavg')]:.1f} MB; counted at the paper's setting (M=50, 5 "
          f"public, 100 rounds, k={k}): LogR {paper_logr['pfa+']:.1f} vs "
          f"{paper_logr['full']:.1f} MB, CNN {paper_cnn['pfa+']:.1f} vs "
          f"{paper_cnn['full']:.1f} MB", "LogR ~12 vs ~113 MB; CNN ~40 vs ~377 MB")

    # Figure 8
    noniid = {m: {a: _acc(final, figure="fig8", model=m, aggregator=a, projection="public")
                  for a in MAIN_AGGREGATORS} for m in ("logr", "cnn")}
    lower = [noniid[m]["pfa"] < table[("mnist", m)]["pfa"] for m in ("logr", "cnn")]
    claim("fig8-noniid-lower", all(lower),
          "non-IID data lowers PFA's accuracy on MNIST (LogR and CNN)",
          "; ".join(f"{m}: IID {table[('mnist', m)]['pfa']:.3f}, non-IID {noniid[m]['pfa']:.3f}"
                    for m in ("logr", "cnn")), "lower accuracy under non-IID")
    private = ("fedavg", "weiavg", "pfa", "pfa+", "minimum")
    best = [max(private, key=lambda a, m=m: noniid[m][a]) in ("pfa", "pfa+")
            for m in ("logr", "cnn")]
    claim("fig8-pfa-best", all(best),
          "PFA or PFA+ is the most accurate heterogeneous-DP method under non-IID data",
          "; ".join(f"{m}: " + ", ".join(f"{LABELS[a]} {noniid[m][a]:.3f}" for a in private)
                    for m in ("logr", "cnn")), "PFA still best in most cases")

    # Figure 13
    spectra = spectrum_table(runs)
    if spectra.empty:
        claim("fig13-few-directions", None, "the public updates' spectrum is dominated by a few "
              "directions", "no spectrum recorded")
    else:
        top = spectra.groupby(["model", "round"])["share"].first()
        claim("fig13-few-directions", bool((top >= 0.5).all()),
              "the largest eigenvalue of the public updates' centred covariance carries at "
              "least half of its variance",
              "share of the largest eigenvalue: " + ", ".join(
                  f"{m} round {r}: {v:.2f}" for (m, r), v in top.items())
              + f" (with at most {int(spectra['rank'].max())} nonzero eigenvalues: the number "
              "of public updates in a round minus one)",
              "spectrum dominated by a few directions")
    return claims


def spectrum_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Eigenvalues of the first layer's public updates (MNIST, Figure 3's PFA runs)."""
    rows = []
    recorded = runs[(runs["figure"] == "fig3") & (runs["dataset"] == "mnist")
                    & (runs["aggregator"] == "pfa") & (runs["spectrum"] != "")]
    for _, row in recorded.iterrows():
        values = np.array([float(v) for v in row["spectrum"].split(",")])
        total = values.sum()
        for i, value in enumerate(values):
            rows.append({"model": row["model"], "round": int(row["round"]), "index": i + 1,
                         "eigenvalue": value, "share": value / total if total > 0 else 0.0,
                         "rank": len(values), "seed": int(row["seed"])})
    return pd.DataFrame(rows)


def describe(scale: str) -> dict[str, Any]:
    """The tier's setup as a flat dict (for the chapter's table)."""
    return asdict(setup(scale))
