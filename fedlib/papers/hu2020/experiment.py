"""Hu et al. (2020) on HAR: tiers, tasks, the run configs of every stage, and the runner.

Thirty subjects are thirty tasks (binary: sitting vs the rest), each with its
own linear SVM, learned jointly by the private federated multi-task solver of
:mod:`fedlib.papers.hu2020.algorithm`.

The chapter runs in three stages (:data:`STAGES`): cross-validation of
(lambda, xi) on the training split, then Figures 2-4 at the chosen pair, then
Figure 5 at the drop probability where the private error of Figure 4 is lowest.
:func:`configs` and :func:`run` take the stage and what it depends on as keyword
options; :func:`choose_hyperparameters` and :func:`best_drop_probability` read
the decisions between stages off the finished runs. Claims, tables and figures
live in :mod:`fedlib.papers.hu2020.claims` and :mod:`fedlib.papers.hu2020.figures`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from fedlib.checks import check_seed
from fedlib.data.errors import DatasetUnavailableError
from fedlib.data.fetch import fetch
from fedlib.data.har import HarData, binary_subject_tasks, load_har
from fedlib.data.registry import HAR_ZIP_FILE
from fedlib.papers.hu2020.algorithm import Hu2020Config, run_mocha_dp
from fedlib.papers.hu2020.svm import predict_error
from fedlib.sweeps import check_group, sweep
from fedlib.tiers import check_scale

EXPERIMENT = "hu2020-har"
DELTA = 1e-3
EPSILON = 8.0
FIG2_SETTINGS = {"a": (0.0, 0.0), "b": (0.5, 0.0), "c": (0.5, 0.2)}
"""Panel -> (tau, p_drop) of Figure 2."""

FEATURES = ("auto", "uci-561", "hapt-561")
"""Feature sources of HAR: the published 561 features (``uci-561``), the same
features rebuilt from the raw recordings (``hapt-561``), or ``auto`` (the published
ones when the canonical zip can be had)."""

DUALS = ("as-written", "projected")
"""Algorithm 1 as written (noise added to the dual variables, line 6), and the
variant that projects the noisy duals back onto their box (not in the paper)."""

STAGES = ("cv", "figures", "fig5")
"""The chapter's run stages: cross-validation, Figures 2-4, Figure 5."""

BATCHED = ("figure", "lam", "xi", "tau", "p_drop", "epsilon", "repeat", "dual")
"""Config fields one runner call batches: runs on the same data (fold) share one
vectorized solver pass."""

MAX_GROUP_SIZE = 48
"""At most this many runs per solver call."""

Task = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class HuSetup:
    """Size of a run tier: rounds, repeats, and the grids of every figure."""

    inner_rounds: int
    outer_rounds: int
    n_min: int
    repeats: int
    folds: int
    lams: tuple[float, ...]
    xis: tuple[str, ...]  # "1/m" or a number
    taus: tuple[float, ...]
    drops: tuple[float, ...]
    epsilons: tuple[float, ...]
    records: int = 40


TIERS: dict[str, HuSetup] = {
    "smoke": HuSetup(inner_rounds=5, outer_rounds=2, n_min=10, repeats=1, folds=2,
                     lams=(1e-2, 1e-1), xis=("1/m", "1"), taus=(0.0, 0.5, 1.0),
                     drops=(0.0, 0.2, 0.5), epsilons=(0.1, 8.0, 100.0), records=5),
    "quick": HuSetup(inner_rounds=50, outer_rounds=4, n_min=50, repeats=3, folds=5,
                     lams=(1e-4, 1e-3, 1e-2, 1e-1, 1.0), xis=("1/m", "0.5", "1"),
                     taus=(0.0, 0.25, 0.5, 0.75, 1.0),
                     drops=(0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9),
                     epsilons=(0.01, 0.1, 1.0, 10.0, 100.0)),
    "paper": HuSetup(inner_rounds=2000, outer_rounds=10, n_min=50, repeats=10, folds=5,
                     lams=tuple(10.0**k for k in range(-5, 2)), xis=("1/m", "0.5", "1"),
                     taus=tuple(k / 10 for k in range(11)),
                     drops=tuple(k / 10 for k in range(10)),
                     epsilons=(0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0)),
}


def tier(scale: str) -> HuSetup:
    """The setup of tier ``scale``."""
    return TIERS[check_scale(scale)]


def check_features(features: str) -> str:
    """Return ``features`` if it names a feature source of :data:`FEATURES`, else raise."""
    if not isinstance(features, str) or features not in FEATURES:
        raise ValueError(
            f"features={features!r} is not a HAR feature source; use one of "
            + ", ".join(repr(f) for f in FEATURES)
            + " (auto: the official features when available)"
        )
    return features


def xi_value(xi: str, m: int) -> float:
    """The aggregation parameter: "1/m" (m tasks) or a number."""
    return 1.0 / m if xi == "1/m" else float(xi)


def resolve_features(features: str) -> str:
    """The feature source ``features`` names: ``auto`` becomes ``uci-561`` when the
    canonical zip can be had (cache, mirror or download), else ``hapt-561``."""
    check_features(features)
    if features != "auto":
        return features
    try:
        fetch("har", HAR_ZIP_FILE)
    except DatasetUnavailableError:
        return "hapt-561"
    return "uci-561"


@lru_cache(maxsize=2)
def har_data(features: str) -> HarData:
    """HAR's normalised feature matrix from the source ``features`` names."""
    return load_har(resolve_features(features))


@lru_cache(maxsize=4)
def har_tasks(features: str, split_seed: int) -> tuple[str, tuple[Task, ...], tuple[Task, ...]]:
    """(feature source, train tasks, test tasks): one per subject, 75/25 split."""
    data = har_data(features)
    tasks = binary_subject_tasks(data, train_fraction=0.75, seed=split_seed)
    train = tuple((t.x_train, t.y_train) for t in tasks)
    test = tuple((t.x_test, t.y_test) for t in tasks)
    return data.feature_source, train, test


def task_sizes(tasks: tuple[Task, ...] | list[Task]) -> np.ndarray:
    """The number of examples of every task."""
    return np.array([len(y) for _, y in tasks])


def cv_split(train: tuple[Task, ...], folds: int, fold: int, seed: int) -> tuple[list, list]:
    """Fold ``fold`` of a per-subject ``folds``-fold split of the training data."""
    fit, held = [], []
    for index, (x, y) in enumerate(train):
        order = np.random.default_rng([seed, index]).permutation(len(y))
        part = np.array_split(order, folds)[fold]
        keep = np.setdiff1d(order, part)
        fit.append((x[keep], y[keep]))
        held.append((x[part], y[part]))
    return fit, held


def _base(setup: HuSetup, features: str, split_seed: int) -> dict[str, Any]:
    return {"experiment": EXPERIMENT, "features": features, "split_seed": split_seed,
            "inner_rounds": setup.inner_rounds, "outer_rounds": setup.outer_rounds,
            "n_min": setup.n_min, "records": setup.records, "delta": DELTA}


def _cv_configs(setup: HuSetup, features: str, split_seed: int) -> list[dict[str, Any]]:
    """Non-private runs of the (lambda, xi) grid on every fold."""
    return [{**_base(setup, features, split_seed), "figure": "cv", "folds": setup.folds,
             "fold": fold, "lam": lam,
             "xi": xi, "tau": 0.0, "p_drop": 0.0, "epsilon": None, "repeat": 0,
             "dual": "as-written"}
            for fold in range(setup.folds) for lam in setup.lams for xi in setup.xis]


def _figure_configs(setup: HuSetup, features: str, split_seed: int, lam: float, xi: str,
                    best_drop: float | None = None) -> list[dict[str, Any]]:
    """Runs of Figures 2-4 (and 5 when ``best_drop`` is given), private and not."""
    base = {**_base(setup, features, split_seed), "fold": None, "lam": lam, "xi": xi}
    runs = []

    def add(figure: str, tau: float, p_drop: float, epsilon: float | None,
            dual: str = "as-written") -> None:
        for repeat in range(setup.repeats):
            runs.append({**base, "figure": figure, "tau": tau, "p_drop": p_drop,
                         "epsilon": epsilon, "repeat": repeat, "dual": dual})

    if best_drop is None:
        for panel, (tau, p_drop) in FIG2_SETTINGS.items():
            for eps in (EPSILON, None):
                add("fig2" + panel, tau, p_drop, eps)
            add("fig2" + panel, tau, p_drop, EPSILON, "projected")
        for tau in setup.taus:
            for eps in (EPSILON, None):
                add("fig3", tau, 0.0, eps)
        for p_drop in setup.drops:
            for eps in (EPSILON, None):
                add("fig4", 1.0, p_drop, eps)
    else:
        for eps in setup.epsilons:
            add("fig5", 1.0, best_drop, eps)
            add("fig5", 1.0, best_drop, eps, "projected")
    return runs


def configs(setup: HuSetup, seed: int, *, stage: str = "cv", features: str = "auto",
            lam: float | None = None, xi: str | None = None,
            best_drop: float | None = None) -> list[dict[str, Any]]:
    """Every run config of one stage of the chapter (no data is loaded).

    Parameters
    ----------
    setup
        The tier (:func:`tier`).
    seed
        Seed of the per-subject train/test split and of the solver's streams.
    stage
        ``"cv"``: non-private runs of the (lambda, xi) grid on every fold;
        ``"figures"``: Figures 2-4 at ``lam`` and ``xi``; ``"fig5"``: Figure 5 at
        ``lam``, ``xi`` and the drop probability ``best_drop``.
    features
        Feature source (:data:`FEATURES`); :func:`run` resolves ``"auto"`` before
        building the configs, so that a run's key says which source it read.
    lam, xi
        The hyperparameters cross-validation chose (:func:`choose_hyperparameters`);
        needed by the ``figures`` and ``fig5`` stages only.
    best_drop
        The drop probability of Figure 5 (:func:`best_drop_probability`); needed by
        the ``fig5`` stage only.
    """
    check_seed(seed)
    check_features(features)
    if stage not in STAGES:
        raise ValueError(f"stage={stage!r} is not a stage of this chapter; use one of "
                         + ", ".join(repr(s) for s in STAGES))
    if stage == "cv":
        given = [name for name, value in (("lam", lam), ("xi", xi), ("best_drop", best_drop))
                 if value is not None]
        if given:
            raise ValueError(f"stage='cv' runs the whole (lambda, xi) grid; do not pass "
                             f"{', '.join(given)}")
        return _cv_configs(setup, features, seed)
    if lam is None or xi is None:
        raise ValueError(f"stage={stage!r} needs lam and xi (from choose_hyperparameters)")
    if stage == "figures":
        if best_drop is not None:
            raise ValueError("stage='figures' runs every drop probability; pass best_drop "
                             "to stage='fig5' only")
        return _figure_configs(setup, features, seed, lam, xi)
    if best_drop is None:
        raise ValueError("stage='fig5' needs best_drop (from best_drop_probability)")
    return _figure_configs(setup, features, seed, lam, xi, best_drop)


def choose_hyperparameters(cv: pd.DataFrame) -> tuple[float, str, pd.DataFrame]:
    """(lambda, xi) with the lowest mean validation error, and the whole table.

    ``cv`` holds one row per finished cross-validation run (its final round).
    """
    table = cv.groupby(["lam", "xi"])["error"].mean().reset_index()
    best = table.loc[table["error"].idxmin()]
    return float(best["lam"]), str(best["xi"]), table


def best_drop_probability(last: pd.DataFrame) -> float:
    """The drop probability of Figure 4 with the lowest mean private test error.

    ``last`` holds one row per finished run of the ``figures`` stage (its final
    round); Figure 5 runs at the drop probability returned.
    """
    fig4 = last[last["figure"] == "fig4"]
    return float(fig4[fig4["epsilon"].notna()].groupby("p_drop")["error"].mean().idxmin())


def run_group(configs: list[dict[str, Any]]) -> list[pd.DataFrame]:
    """Sweep runner: one batched solver call for runs on the same data."""
    check_group(configs, BATCHED)
    first = configs[0]
    _, train, test = har_tasks(first["features"], first["split_seed"])
    if first["fold"] is not None:
        fit, held = cv_split(train, first["folds"], first["fold"], first["split_seed"])
    else:
        fit, held = list(train), list(test)
    m = len(fit)
    hu_configs = [Hu2020Config(lam=c["lam"], xi=xi_value(c["xi"], m), tau=c["tau"],
                               p_drop=c["p_drop"], epsilon=c["epsilon"], delta=c["delta"],
                               project_dual=c["dual"] == "projected")
                  for c in configs]
    total = first["inner_rounds"] * first["outer_rounds"]
    result = run_mocha_dp(
        fit, hu_configs, first["inner_rounds"], first["outer_rounds"], first["n_min"],
        seed=first["split_seed"] + 1, record_every=max(1, total // first["records"]),
        run_indices=[c["repeat"] for c in configs],
    )
    errors = np.atleast_1d(predict_error(result.W, held))
    tables = []
    for g, config in enumerate(configs):
        tables.append(pd.DataFrame({
            "figure": config["figure"], "fold": -1 if config["fold"] is None else config["fold"],
            "lam": config["lam"], "xi": config["xi"], "tau": config["tau"],
            "p_drop": config["p_drop"],
            "epsilon": np.nan if config["epsilon"] is None else config["epsilon"],
            "repeat": config["repeat"], "dual": config["dual"], "round": result.rounds,
            "primal": result.primal[g], "dual_objective": result.dual[g],
            "error": errors[g], "sigma1": result.sigma1[g], "sigma2": result.sigma2[g],
            "q": result.q[g],
        }))
    return tables


def run(setup: HuSetup, seed: int, *, stage: str = "cv", features: str = "auto",
        lam: float | None = None, xi: str | None = None, best_drop: float | None = None,
        workers: int | None = None, ray_address: str | None = None,
        progress: bool = True) -> pd.DataFrame:
    """Run (or load from the cache) every run of one stage (see :func:`configs`)."""
    features = resolve_features(features)
    return sweep(EXPERIMENT, configs(setup, seed, stage=stage, features=features, lam=lam,
                                     xi=xi, best_drop=best_drop),
                 run_group, batched=BATCHED, max_group_size=MAX_GROUP_SIZE,
                 workers=workers, ray_address=ray_address, progress=progress)
