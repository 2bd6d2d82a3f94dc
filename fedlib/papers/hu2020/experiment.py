"""Hu et al. (2020) on HAR: tiers, tasks, the run configs of every stage, and the runner.

Thirty subjects are thirty tasks (binary: sitting vs the rest), each with its
own linear SVM, learned jointly by the private federated multi-task solver of
:mod:`fedlib.papers.hu2020.algorithm`.

The chapter runs in four stages (:data:`STAGES`): cross-validation of
(lambda, xi) on the training split, then Figures 2-4 at the chosen pair, then
Figure 5 at the drop probability where the private error of Figure 4 is lowest,
and the probe: the private solver at other lambdas, at the paper's number of local
steps, and with its noise scaled towards zero.

A run is keyed by its setting alone: Figures 2, 3 and 4 share the runs of the
settings they have in common (Figure 2(a) is Figure 3's tau = 0, Figure 2(c) is
Figure 4's P_drop = 0.2), and :func:`run` labels every row with each figure it
belongs to.
:func:`configs` and :func:`run` take the stage and what it depends on as keyword
options; :func:`choose_hyperparameters` and :func:`best_drop_probability` read
the decisions between stages off the finished runs. Claims, tables and figures
live in :mod:`fedlib.papers.hu2020.claims` and :mod:`fedlib.papers.hu2020.figures`.
"""

from __future__ import annotations

import json
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
from fedlib.limits import check_finite, check_size
from fedlib.papers.hu2020.algorithm import Hu2020Config, run_mocha_dp
from fedlib.papers.hu2020.svm import predict_error
from fedlib.sweeps import check_group, sweep
from fedlib.tiers import check_scale

EXPERIMENT = "hu2020-har"
DELTA = 1e-3
EPSILON = 8.0
FIG2_SETTINGS = {"a": (0.0, 0.0), "b": (0.5, 0.0), "c": (0.5, 0.2)}
"""Panel -> (tau, p_drop) of Figure 2."""
FIG4_TAU = 0.5
"""Device variability of Figure 4. The paper does not give it; Figure 2(c) pairs
tau = 0.5 with P_drop = 0.2, the drop probability Figure 4 finds best, so Figure 4 runs
at tau = 0.5 and shares Figure 2's runs."""
FIG5_TAU = 1.0
"""Device variability of Figure 5."""
PROBE_SETTING = (0.0, 0.0)
"""(tau, p_drop) of the probe stage: the homogeneous setting of Figure 2(a)."""
MIN_LOCAL = "min-local"
"""``n_min`` as the paper defines it: "the minimum number of local data points across
devices", the smallest device's training examples in the run's data."""
GRID_POINTS = 1_000
"""The most values any grid of a setup may hold."""

FEATURES = ("auto", "uci-561", "hapt-561")
"""Feature sources of HAR: the published 561 features (``uci-561``), the same
features rebuilt from the raw recordings (``hapt-561``), or ``auto`` (the published
ones when the canonical zip can be had)."""

DUALS = ("as-written", "projected")
"""Algorithm 1 as written (noise added to the dual variables, line 6), and the
variant that projects the noisy duals back onto their box (not in the paper)."""

STAGES = ("cv", "figures", "fig5", "probe")
"""The chapter's run stages: cross-validation, Figures 2-4, Figure 5, the probe."""

BATCHED = ("lam", "xi", "tau", "p_drop", "epsilon", "repeat", "dual", "noise_scale")
"""Config fields one runner call batches: runs on the same data (fold) share one
vectorized solver pass."""

MAX_GROUP_SIZE = 48
"""At most this many runs per solver call."""

Task = tuple[np.ndarray, np.ndarray]


def check_xi(xi: str) -> str:
    """Return ``xi`` if it is ``"1/m"`` or a number in (0, 1] written as a string."""
    try:
        ok = xi == "1/m" or (isinstance(xi, str) and 0.0 < float(xi) <= 1.0)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"xi={xi!r} is not an aggregation parameter: use '1/m' or a number "
                         "in (0, 1] written as a string, e.g. '0.5'")
    return xi


@dataclass(frozen=True)
class HuSetup:
    """Size of a run tier: rounds, repeats, and the grids of every figure.

    Parameters
    ----------
    inner_rounds, outer_rounds
        K and H.
    n_min
        The most SDCA steps a device runs per round: a number, or :data:`MIN_LOCAL`
        (the paper's definition, resolved on the data of each run).
    repeats
        Repeats of every point of Figures 2-5.
    folds
        Folds of the cross-validation.
    lams, xis
        The cross-validation grid (xi: ``"1/m"`` or a number).
    taus, drops, epsilons
        The grids of Figures 3, 4 and 5 (no drops: no Figure 4 nor 5 at this tier; no
        epsilons: no Figure 5).
    records
        Rounds at which a run records its objectives.
    projected
        Also run the projected-dual variant (Figure 2's settings and Figure 5).
    probe_lams
        Lambdas at which the probe runs the private solver.
    probe_n_min
        The n_min of the probe's run at the chosen lambda with the paper's local steps
        (:data:`MIN_LOCAL`), or None for no such run.
    noise_scales
        Factors on the noise of the probe's continuity runs (0: no noise at all).
    probe_repeats
        Repeats of every probe point.
    panels
        The panels of Figure 2 this tier runs (keys of :data:`FIG2_SETTINGS`).
    """

    inner_rounds: int
    outer_rounds: int
    n_min: int | str
    repeats: int
    folds: int
    lams: tuple[float, ...]
    xis: tuple[str, ...]
    taus: tuple[float, ...]
    drops: tuple[float, ...]
    epsilons: tuple[float, ...]
    records: int = 40
    projected: bool = True
    probe_lams: tuple[float, ...] = (1e-3, 1e-2, 0.1)
    probe_n_min: int | str | None = MIN_LOCAL
    noise_scales: tuple[float, ...] = (0.0, 1e-3, 1e-2, 0.1)
    probe_repeats: int = 3
    panels: tuple[str, ...] = tuple(FIG2_SETTINGS)

    def __post_init__(self) -> None:
        check_size(self.inner_rounds, "rounds")
        check_size(self.outer_rounds, "rounds")
        total = self.inner_rounds * self.outer_rounds
        if total > 100_000:
            raise ValueError(f"inner_rounds x outer_rounds = {total:,} rounds is above "
                             "100,000, five times the paper's K H = 20,000: pass fewer "
                             "inner_rounds or outer_rounds")
        for name in ("n_min", "probe_n_min"):
            value = getattr(self, name)
            if value != MIN_LOCAL and not (name == "probe_n_min" and value is None):
                check_size(value, "local_steps")
        check_size(self.repeats, "repeats")
        check_size(self.probe_repeats, "repeats")
        check_size(self.folds, "k", minimum=2)
        check_size(self.records, "n_evals")
        if not isinstance(self.projected, bool):
            raise ValueError(f"projected must be True or False, got {self.projected!r}")
        grids = {"lams": (0.0, False), "taus": (0.0, True), "drops": (0.0, True),
                 "epsilons": (0.0, False), "probe_lams": (0.0, False),
                 "noise_scales": (0.0, True), "xis": None, "panels": None}
        for name, bound in grids.items():
            values = getattr(self, name)
            least = 0 if name in ("epsilons", "drops") else 1  # none: no Figure 5 (or 4)
            if not isinstance(values, tuple) or not least <= len(values) <= GRID_POINTS:
                raise ValueError(f"{name} must be a tuple of {least} to {GRID_POINTS:,} "
                                 f"values, got {values!r}: pass a shorter"
                                 + (", non-empty" if least else "") + " grid")
            if bound is not None:
                for value in values:
                    check_finite(value, name, minimum=bound[0], inclusive=bound[1])
        for xi in self.xis:
            check_xi(xi)
        unknown = [p for p in self.panels if p not in FIG2_SETTINGS]
        if unknown:
            raise ValueError(f"panels holds {unknown}: Figure 2's panels are "
                             + ", ".join(repr(p) for p in FIG2_SETTINGS))
        for name, top, closed in (("taus", 1.0, True), ("drops", 1.0, False)):
            bad = [v for v in getattr(self, name) if v > top or (v == top and not closed)]
            if bad:
                raise ValueError(f"{name} holds {bad}: use values in [0, 1"
                                 + ("]" if closed else ")") + f" for {name}")


TIERS: dict[str, HuSetup] = {
    "smoke": HuSetup(inner_rounds=5, outer_rounds=2, n_min=10, repeats=1, folds=2,
                     lams=(1e-2, 1e-1), xis=("1/m", "1"), taus=(0.0, 0.5, 1.0),
                     drops=(0.0, 0.2, 0.5), epsilons=(0.1, 8.0, 100.0), records=5,
                     probe_lams=(1e-2, 0.1), noise_scales=(0.0, 0.1), probe_repeats=1),
    "quick": HuSetup(inner_rounds=50, outer_rounds=4, n_min=50, repeats=3, folds=5,
                     lams=(1e-4, 1e-3, 1e-2, 1e-1, 1.0), xis=("1/m", "0.5", "1"),
                     taus=(0.0, 0.25, 0.5, 0.75, 1.0),
                     drops=(0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9),
                     epsilons=(0.01, 0.1, 1.0, 10.0, 100.0), probe_repeats=5),
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


def _run(base: dict[str, Any], lam: float, xi: str, tau: float, p_drop: float,
         epsilon: float | None, repeat: int, dual: str = "as-written",
         noise_scale: float = 1.0, **fields: Any) -> dict[str, Any]:
    return {**base, "fold": None, "lam": lam, "xi": xi, "tau": tau, "p_drop": p_drop,
            "epsilon": epsilon, "repeat": repeat, "dual": dual, "noise_scale": noise_scale,
            **fields}


def _cv_configs(setup: HuSetup, features: str, split_seed: int) -> list[dict[str, Any]]:
    """Non-private runs of the (lambda, xi) grid on every fold."""
    base = _base(setup, features, split_seed)
    return [{**_run(base, lam, xi, 0.0, 0.0, None, 0), "folds": setup.folds, "fold": fold}
            for fold in range(setup.folds) for lam in setup.lams for xi in setup.xis]


def figure_plan(setup: HuSetup, best_drop: float | None = None
                ) -> list[tuple[str, float, float, float | None, str]]:
    """(figure, tau, p_drop, epsilon, dual) of every point of Figures 2-4, or of Figure 5
    when ``best_drop`` is given; a setting two figures share appears once per figure."""
    plan = []
    if best_drop is None:
        for panel in setup.panels:
            tau, p_drop = FIG2_SETTINGS[panel]
            plan += [("fig2" + panel, tau, p_drop, eps, "as-written") for eps in (EPSILON, None)]
            if setup.projected:
                plan.append(("fig2" + panel, tau, p_drop, EPSILON, "projected"))
        plan += [("fig3", tau, 0.0, eps, "as-written") for tau in setup.taus
                 for eps in (EPSILON, None)]
        plan += [("fig4", FIG4_TAU, p_drop, eps, "as-written") for p_drop in setup.drops
                 for eps in (EPSILON, None)]
    else:
        for eps in setup.epsilons:
            plan.append(("fig5", FIG5_TAU, best_drop, eps, "as-written"))
            if setup.projected:
                plan.append(("fig5", FIG5_TAU, best_drop, eps, "projected"))
    return plan


def probe_plan(setup: HuSetup, lam: float) -> list[dict[str, Any]]:
    """The probe's points (fields of a run config besides the repeat): the private solver
    at every lambda of ``probe_lams``; at the chosen ``lam`` with the n_min of
    ``probe_n_min`` (the paper's definition); and at ``lam`` with the noise scaled by
    every factor of ``noise_scales``."""
    points: list[dict[str, Any]] = [{"lam": probe_lam} for probe_lam in setup.probe_lams]
    if setup.probe_n_min is not None:
        points.append({"lam": lam, "n_min": setup.probe_n_min})
    points += [{"lam": lam, "noise_scale": scale} for scale in setup.noise_scales]
    return points


def _figure_configs(setup: HuSetup, features: str, split_seed: int, lam: float, xi: str,
                    best_drop: float | None = None) -> list[dict[str, Any]]:
    """Runs of Figures 2-4 (and 5 when ``best_drop`` is given), each setting once."""
    base = _base(setup, features, split_seed)
    settings = dict.fromkeys((tau, p_drop, eps, dual)
                             for _, tau, p_drop, eps, dual in figure_plan(setup, best_drop))
    return [_run(base, lam, xi, tau, p_drop, eps, repeat, dual)
            for tau, p_drop, eps, dual in settings for repeat in range(setup.repeats)]


def _probe_configs(setup: HuSetup, features: str, split_seed: int, lam: float,
                   xi: str) -> list[dict[str, Any]]:
    base = _base(setup, features, split_seed)
    tau, p_drop = PROBE_SETTING
    runs = []
    for point in probe_plan(setup, lam):
        fields = {"xi": xi, "tau": tau, "p_drop": p_drop, "epsilon": EPSILON, **point}
        n_min = fields.pop("n_min", setup.n_min)
        runs += [_run({**base, "n_min": n_min}, repeat=repeat, **fields)
                 for repeat in range(setup.probe_repeats)]
    unique = {json.dumps(c, sort_keys=True): c for c in runs}
    return list(unique.values())


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
        ``lam``, ``xi`` and the drop probability ``best_drop``; ``"probe"``: the
        probe's points (:func:`probe_plan`) at ``lam`` and ``xi``.
    features
        Feature source (:data:`FEATURES`); :func:`run` resolves ``"auto"`` before
        building the configs, so that a run's key says which source it read.
    lam, xi
        The hyperparameters cross-validation chose (:func:`choose_hyperparameters`);
        needed by every stage but ``cv``.
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
    check_xi(xi)
    if stage in ("figures", "probe"):
        if best_drop is not None:
            raise ValueError(f"stage={stage!r} takes no best_drop; pass best_drop "
                             "to stage='fig5' only")
        if stage == "probe":
            return _probe_configs(setup, features, seed, lam, xi)
        return _figure_configs(setup, features, seed, lam, xi)
    if not setup.epsilons or not setup.drops:
        return []  # no Figure 5 at this tier
    if best_drop is None:
        raise ValueError("stage='fig5' needs best_drop (from best_drop_probability)")
    return _figure_configs(setup, features, seed, lam, xi, best_drop)


TIE_TOLERANCE = 1e-12
"""Mean validation errors closer than this tie (they count the same windows)."""


def choose_hyperparameters(cv: pd.DataFrame) -> tuple[float, str, pd.DataFrame]:
    """(lambda, xi) with the lowest mean validation error, and the whole table.

    ``cv`` holds one row per finished cross-validation run (its final round). Pairs
    whose mean errors tie (within :data:`TIE_TOLERANCE`) are broken by the largest
    lambda, the most regularised model among those that fit the held-out data equally
    well, then by the largest xi (the least damped aggregation, with the smallest noise
    on the dual variables, since s1 = (8 lambda + beta) / (beta n_t) falls as beta = xi m
    grows; "1/m" counts as 1/30).
    """
    table = cv.groupby(["lam", "xi"])["error"].mean().reset_index()
    best = table[table["error"] <= table["error"].min() + TIE_TOLERANCE]
    order = best.assign(xi_number=[xi_value(x, 30) for x in best["xi"]]).sort_values(
        ["lam", "xi_number"], ascending=False)
    chosen = order.iloc[0]
    return float(chosen["lam"]), str(chosen["xi"]), table


def tied_hyperparameters(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`choose_hyperparameters`' table that tie for the lowest error."""
    return table[table["error"] <= table["error"].min() + TIE_TOLERANCE]


def best_drop_probability(last: pd.DataFrame) -> float | None:
    """The drop probability of Figure 4 with the lowest mean private test error (None
    where the tier runs no Figure 4).

    ``last`` holds one row per finished run of the ``figures`` stage (its final
    round, labelled by figure as :func:`run` does); Figure 5 runs at the drop
    probability returned.
    """
    fig4 = last[(last["figure"] == "fig4") & (last["dual"] == "as-written")]
    if fig4.empty:
        return None
    return float(fig4[fig4["epsilon"].notna()].groupby("p_drop")["error"].mean().idxmin())


def resolve_n_min(n_min: int | str, tasks: list[Task]) -> int:
    """``n_min`` as a number: :data:`MIN_LOCAL` is the smallest device's example count."""
    return int(task_sizes(tasks).min()) if n_min == MIN_LOCAL else int(n_min)


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
    n_min = resolve_n_min(first["n_min"], fit)
    hu_configs = [Hu2020Config(lam=c["lam"], xi=xi_value(c["xi"], m), tau=c["tau"],
                               p_drop=c["p_drop"], epsilon=c["epsilon"], delta=c["delta"],
                               project_dual=c["dual"] == "projected",
                               noise_scale=c["noise_scale"])
                  for c in configs]
    total = first["inner_rounds"] * first["outer_rounds"]
    result = run_mocha_dp(
        fit, hu_configs, first["inner_rounds"], first["outer_rounds"], n_min,
        seed=first["split_seed"] + 1, record_every=max(1, total // first["records"]),
        run_indices=[c["repeat"] for c in configs],
    )
    errors = np.atleast_1d(predict_error(result.W, held))
    tables = []
    for g, config in enumerate(configs):
        tables.append(pd.DataFrame({
            "fold": -1 if config["fold"] is None else config["fold"],
            "lam": config["lam"], "xi": config["xi"], "tau": config["tau"],
            "p_drop": config["p_drop"],
            "epsilon": np.nan if config["epsilon"] is None else config["epsilon"],
            "repeat": config["repeat"], "dual": config["dual"],
            "noise_scale": config["noise_scale"], "n_min": n_min, "round": result.rounds,
            "primal": result.primal[g], "dual_objective": result.dual[g],
            "error": errors[g], "sigma1": result.sigma1[g], "sigma2": result.sigma2[g],
            "q": result.q[g],
        }))
    return tables


RUN_COLUMNS = ("fold", "lam", "xi", "tau", "p_drop", "epsilon", "repeat", "dual",
               "noise_scale", "n_min", "round", "primal", "dual_objective", "error",
               "sigma1", "sigma2", "q")
"""The columns of a run's table (:func:`run_group`)."""

SETTING = ("tau", "p_drop", "epsilon", "dual")
"""The columns that place a run of Figures 2-5 in a figure."""


def label_figures(runs: pd.DataFrame, setup: HuSetup,
                  best_drop: float | None = None) -> pd.DataFrame:
    """``runs`` of the ``figures`` (or, with ``best_drop``, ``fig5``) stage with a
    ``figure`` column: a run two figures share appears once under each."""
    plan = pd.DataFrame(figure_plan(setup, best_drop), columns=["figure", *SETTING])
    keyed = runs.assign(_eps=runs["epsilon"].fillna(-1.0))
    plan = plan.assign(_eps=plan["epsilon"].astype(float).fillna(-1.0)).drop(columns="epsilon")
    labelled = keyed.merge(plan, on=["tau", "p_drop", "_eps", "dual"], how="inner")
    return labelled.drop(columns="_eps")


def run(setup: HuSetup, seed: int, *, stage: str = "cv", features: str = "auto",
        lam: float | None = None, xi: str | None = None, best_drop: float | None = None,
        workers: int | None = None, ray_address: str | None = None,
        progress: bool = True) -> pd.DataFrame:
    """Run (or load from the cache) every run of one stage (see :func:`configs`).

    The rows of the ``figures`` and ``fig5`` stages carry a ``figure`` column
    (:func:`label_figures`); those of ``cv`` carry ``figure = "cv"`` and those of the
    probe ``figure = "probe"``.
    """
    features = resolve_features(features)
    planned = configs(setup, seed, stage=stage, features=features, lam=lam, xi=xi,
                      best_drop=best_drop)
    if not planned:
        return pd.DataFrame(columns=[*RUN_COLUMNS, "run_key", "figure"])
    runs = sweep(EXPERIMENT, planned, run_group, batched=BATCHED,
                 max_group_size=MAX_GROUP_SIZE, workers=workers, ray_address=ray_address,
                 progress=progress)
    if stage in ("figures", "fig5"):
        return label_figures(runs, setup, best_drop if stage == "fig5" else None)
    return runs.assign(figure=stage)
