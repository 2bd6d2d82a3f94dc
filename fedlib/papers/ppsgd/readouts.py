"""Bietti et al. (2022), PPSGD: what the chapter reads off the runs (the best step size
over the grid and where it lies in the grid, means over seeds, curves, clipping bounds,
privacy-utility trade-offs, the iterations a curve keeps) and the tables it shows. The claims
(:mod:`fedlib.papers.ppsgd.claims`), the figures and the chapter's prose read from here."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from fedlib.data.federated import FederatedClassification
from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.papers.ppsgd.experiment import (
    DELTA,
    EMNIST_FIGURE_ALPHA_Q,
    FIGURE_CLIP,
    SYNTHETIC_FIGURE_ALPHA_Q,
    SYNTHETIC_INSTANCE,
    TIERS,
    PpsgdSetup,
    SyntheticGrid,
    configs,
    setting_configs,
    synthetic_task,
)
from fedlib.papers.ppsgd.experiment import tier as experiment_tier
from fedlib.papers.ppsgd.paper_tier import SMALL_STEPS_SIGMAS, settings_setup
from fedlib.privacy import epsilon
from fedlib.privacy.gaussian import gaussian_epsilon
from fedlib.runs.rows import KeptSteps, log_linear_grid
from fedlib.verdicts.compare import (
    estimate,
    per_seed,
)

INTERMEDIATE_ALPHA_Q = 1.0
"""The intermediate level drawn in Figure 2 (alpha*Q = 1 equalizes the sample variances)."""


CURVE_KEYS = ["clip", "noise_multiplier", "alpha_q", "iteration"]
"""What tells the points of a curve apart (and ``seed`` where the runs have repeats)."""


def _keys(frame: pd.DataFrame) -> list[str]:
    return CURVE_KEYS + (["seed"] if "seed" in frame.columns else [])


STEP_GRID = ["step_low", "step_high"]
"""The columns of a curve that give the grid of step sizes its best step is taken over:
the lowest and the highest step its runs hold."""


EXTENDED = "extended"
"""The column of runs that marks those run beyond an end of their curve's grid of step sizes
(:mod:`fedlib.papers.ppsgd.extension`; False for the runs of the grid itself)."""


STEP_EXTENSION = ["base_low", "base_high", "beyond_low", "beyond_high"]
"""The columns of a curve whose runs carry :data:`EXTENDED`: the lowest and the highest step
of its grid before any extension, and how many steps were run beyond each of those ends."""


EXTENSIONS_PER_END = 4
"""The most steps an extension runs beyond one end of a curve's grid of step sizes."""


def best_over_steps(runs: pd.DataFrame, value: str = "excess_risk", *,
                    higher_is_better: bool = False,
                    sigmas: tuple[float, ...] | None = None) -> pd.DataFrame:
    """The paper's curves: at each iteration, the best ``value`` over step sizes (per
    seed where the runs carry a ``seed`` column).

    Non-finite values (diverged runs) are ignored. Local-only runs (alpha*Q = 0)
    release nothing; where they were run at one noise level only (the EMNIST
    grids), their curves are repeated for every noise level in ``sigmas``
    (default: all noise levels of ``runs``). Returns columns clip,
    noise_multiplier, alpha_q, iteration, (seed,) ``value``, best_step, step_low,
    step_high, epsilon, sorted: ``step_low`` and ``step_high`` (:data:`STEP_GRID`) are the
    lowest and the highest step the curve's runs hold (diverged runs included: a step
    that diverged was tried), what :func:`step_edge` reads.
    """
    sigmas = tuple(sorted(runs["noise_multiplier"].unique())) if sigmas is None else sigmas
    finite = runs[np.isfinite(runs[value])]
    keys = _keys(runs)
    grouped = finite.groupby(keys)[value]
    best = finite.loc[grouped.idxmax() if higher_is_better else grouped.idxmin()]
    best = best.rename(columns={"step": "best_step"})[keys + [value, "best_step", "epsilon"]]
    curve = [k for k in keys if k != "iteration"]
    grid = runs.groupby(curve, as_index=False)["step"].agg(step_low="min", step_high="max")
    extension = []
    if EXTENDED in runs.columns:
        grid = grid.merge(_extension_of_grids(runs, curve), on=curve, how="left")
        extension = STEP_EXTENSION
    best = best.merge(grid, on=curve, how="left")[
        keys + [value, "best_step", *STEP_GRID, *extension, "epsilon"]]
    local = best["alpha_q"] == 0
    if best.loc[local, "noise_multiplier"].nunique() == 1:
        best = pd.concat([best[~local], *(best[local].assign(noise_multiplier=s) for s in sigmas)],
                         ignore_index=True)
    return best.sort_values(keys).reset_index(drop=True)


def _extension_of_grids(runs: pd.DataFrame, curve: list[str]) -> pd.DataFrame:
    """Per curve (the ``curve`` columns) of ``runs``, which carry :data:`EXTENDED`: the ends
    of its grid before any extension and how many steps it holds beyond each
    (:data:`STEP_EXTENSION`)."""
    extended = runs[EXTENDED].fillna(False).astype(bool)
    base = runs[~extended].groupby(curve, as_index=False)["step"].agg(base_low="min",
                                                                       base_high="max")
    steps = runs[curve + ["step"]].drop_duplicates().merge(base, on=curve, how="left")
    beyond = steps.assign(beyond_low=steps["step"] < steps["base_low"],
                          beyond_high=steps["step"] > steps["base_high"])
    counts = beyond.groupby(curve, as_index=False)[["beyond_low", "beyond_high"]].sum()
    return base.merge(counts, on=curve, how="left")


def mean_over_seeds(curves: pd.DataFrame) -> pd.DataFrame:
    """The curves averaged over seeds (what the figures draw); unchanged without seeds.
    The best step is the median over seeds, the grid of steps the widest the seeds hold
    (and the most steps they hold beyond an end of it)."""
    if "seed" not in curves.columns:
        return curves
    steps = ["best_step", *(c for c in STEP_GRID + STEP_EXTENSION if c in curves.columns)]
    values = [c for c in curves.columns if c not in CURVE_KEYS + ["seed", *steps]]
    grouped = curves.groupby(CURVE_KEYS, as_index=False)
    mean = grouped[values].mean()
    step = grouped.agg(**{"best_step": ("best_step", "median"),
                          **{c: (c, "min" if c in ("step_low", "base_low") else "max")
                             for c in steps[1:]}})
    return mean.merge(step, on=CURVE_KEYS)[[c for c in curves.columns if c != "seed"]]


@dataclass(frozen=True)
class StepEdge:
    """Where the best step size of one curve lies in the grid of steps its runs hold, at
    one iteration: ``best`` is the median over seeds of each seed's best step (as
    :func:`mean_over_seeds`), ``low`` and ``high`` the ends of the grid. Both ends are open:
    the step size has no natural bound inside any grid here, so a better step may lie
    beyond a best step on either end. Where the grid was extended beyond an end
    (:mod:`fedlib.papers.ppsgd.extension`), ``base_low`` and ``base_high`` are its ends
    before, ``beyond_low`` and ``beyond_high`` the steps run beyond each."""

    best: float
    low: float
    high: float
    iteration: int
    base_low: float | None = None
    base_high: float | None = None
    beyond_low: int = 0
    beyond_high: int = 0

    @property
    def end(self) -> str:
        """``"lowest"``, ``"highest"``, ``"lowest and highest"`` (a grid of one step), or
        ``""`` where the best step lies inside the grid."""
        ends = [name for name, on in (("lowest", self.best <= self.low),
                                      ("highest", self.best >= self.high)) if on]
        return " and ".join(ends)

    def grid(self) -> str:
        """The grid by its ends, ``0.2 ... 1.8`` (one step: that step)."""
        return f"{self.low:g}" if self.low == self.high else f"{self.low:g} ... {self.high:g}"

    def extended_beyond(self) -> list[float]:
        """The ends of the grid before its extension that steps were run beyond (none where
        it was not extended)."""
        return [float(base) for base, count in ((self.base_low, self.beyond_low),
                                                (self.base_high, self.beyond_high))
                if count and base is not None]

    def extension(self) -> str:
        """How the grid was extended beyond the end the best step is on:
        ``, extended 4 steps beyond 1.8 until its extensions ran out`` (``""`` where the
        best step is on no end, or on one that was not extended)."""
        parts, counts = [], []
        for name, base, count in (("lowest", self.base_low, self.beyond_low),
                                  ("highest", self.base_high, self.beyond_high)):
            if name in self.end and count and base is not None:
                parts.append(f"{count} step{'s' if count != 1 else ''} beyond {base:g}")
                counts.append(count)
        if not parts:
            return ""
        ran_out = min(counts) >= EXTENSIONS_PER_END
        return (", extended " + " and ".join(parts)
                + (" until its extensions ran out" if ran_out else ", its next extension not run"))

    def describe(self) -> str:
        """``best step 1.8 is the highest of the grid 0.2 ... 1.8, an open end`` (on a grid
        extended beyond that end, how: :meth:`extension`), or ``""`` where the best step lies
        inside the grid."""
        if not self.end:
            return ""
        return (f"best step {self.best:g} is the {self.end} of the grid {self.grid()}"
                f"{self.extension()}, an open end")


def _check_step_grid(curves: pd.DataFrame) -> None:
    missing = [c for c in STEP_GRID if c not in curves.columns]
    if missing:
        raise ValueError(f"the curves lack the grid of step sizes their best step is taken "
                         f"over (columns {missing}); build them with best_over_steps")


def _edge_of(sel: pd.DataFrame, iteration: int) -> StepEdge:
    """The :class:`StepEdge` of the rows of one curve at one iteration (one per seed)."""
    extension: dict[str, Any] = {}
    if all(c in sel.columns for c in STEP_EXTENSION):
        extension = {"base_low": float(sel["base_low"].min()),
                     "base_high": float(sel["base_high"].max()),
                     "beyond_low": int(sel["beyond_low"].max()),
                     "beyond_high": int(sel["beyond_high"].max())}
    return StepEdge(float(sel["best_step"].median()), float(sel["step_low"].min()),
                    float(sel["step_high"].max()), iteration, **extension)


def step_edge(curves: pd.DataFrame, sigma: float, alpha_q: float,
              iteration: int | None = None) -> StepEdge | None:
    """Where the best step of the curve (sigma, alpha*Q) of ``curves`` (of one clipping
    norm, built by :func:`best_over_steps`) lies in its grid at ``iteration`` (None: the
    last): :class:`StepEdge`, or None where the curves do not hold it there."""
    _check_step_grid(curves)
    iteration = int(curves["iteration"].max()) if iteration is None else int(iteration)
    sel = curves[(curves["noise_multiplier"] == sigma) & (curves["alpha_q"] == alpha_q)
                 & (curves["iteration"] == iteration)]
    if sel.empty:
        return None
    return _edge_of(sel, iteration)


def step_edges(curves: pd.DataFrame, iteration: int | None = None) -> pd.DataFrame:
    """Every curve of ``curves`` (:func:`best_over_steps`) at ``iteration`` (None: the
    last): one row per (clip, noise_multiplier, alpha_q) with its best step (the median
    over seeds), the ends of its grid and ``end``, which end of the grid the best step is
    on (:attr:`StepEdge.end`; empty inside); where the curves carry them, the ends of the
    grid before its extension and the steps run beyond each (:data:`STEP_EXTENSION`)."""
    _check_step_grid(curves)
    iteration = int(curves["iteration"].max()) if iteration is None else int(iteration)
    extended = all(c in curves.columns for c in STEP_EXTENSION)
    rows = []
    keys = ["clip", "noise_multiplier", "alpha_q"]
    for (clip, sigma, alpha_q), sel in curves[curves["iteration"] == iteration].groupby(keys):
        edge = _edge_of(sel, iteration)
        rows.append({"clip": clip, "noise_multiplier": sigma, "alpha_q": alpha_q,
                     "iteration": iteration, "best_step": edge.best, "step_low": edge.low,
                     "step_high": edge.high, "end": edge.end,
                     **({c: getattr(edge, c) for c in STEP_EXTENSION} if extended else {})})
    return pd.DataFrame(rows, columns=keys + ["iteration", "best_step", *STEP_GRID, "end",
                                              *(STEP_EXTENSION if extended else [])])


def seeds_of(curves: pd.DataFrame) -> list[int]:
    """The seeds (repeats) the curves hold."""
    return sorted(curves["seed"].unique()) if "seed" in curves.columns else [0]


def with_seed(curves: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """``curves`` with a ``seed`` column (``seed`` where it has none)."""
    return curves if "seed" in curves.columns else curves.assign(seed=seed)


def _curve(curves: pd.DataFrame, sigma: float, alpha_q: float) -> pd.Series:
    sel = curves[(curves["noise_multiplier"] == sigma) & (curves["alpha_q"] == alpha_q)]
    return sel.set_index("iteration")["excess_risk"].sort_index()


def final(curves: pd.DataFrame) -> pd.DataFrame:
    """The last evaluation of every (noise, alpha) curve."""
    last = curves["iteration"].max()
    return curves[curves["iteration"] == last]


def at_figure_clip(curves: pd.DataFrame) -> pd.DataFrame:
    """The Figure 1a curves at the plots' clipping norm (:data:`FIGURE_CLIP`)."""
    return curves[curves["clip"] == FIGURE_CLIP]


def synthetic_final(curves: pd.DataFrame) -> pd.DataFrame:
    """What the synthetic panel of Figure 2 reads of Figure 1a's curves (best step at each
    iteration): the final values per seed at the plots' clipping norm."""
    return final(at_figure_clip(with_seed(curves)))


def _at(table: pd.DataFrame, sigma: float, alpha_q: float, value: str) -> float:
    sel = table[(table["noise_multiplier"] == sigma) & (table["alpha_q"] == alpha_q)]
    return float(sel[value].iloc[0])


def _fmt_alpha(alpha_q: float) -> str:
    return "inf" if math.isinf(alpha_q) else f"{alpha_q:g}"


def values(curves: pd.DataFrame, value: str, sigma: float, alpha_q: float,
           iteration: int | None = None, *, log: bool = False) -> pd.Series:
    """One value per seed: ``value`` of the curve (sigma, alpha*Q) at ``iteration`` (None:
    the last), log10 of it with ``log``."""
    curves = with_seed(curves)
    iteration = int(curves["iteration"].max()) if iteration is None else iteration
    found = per_seed(curves, value, where={"noise_multiplier": float(sigma),
                                            "alpha_q": float(alpha_q),
                                            "iteration": iteration})
    return np.log10(found) if log else found


def best_arm(arms: Mapping[float, pd.Series], higher_is_better: bool) -> float:
    """The arm (personalization level) with the best mean over seeds."""
    pick = max if higher_is_better else min
    return pick((a for a in arms if len(arms[a])), key=lambda a: float(arms[a].mean()))


FIGURE1A_PANEL_SIGMAS = (0.0, 10.0, 100.0, 1000.0)
"""The noise levels of the Figure 1a panels the claims read (each panel fixes sigma and
C = 1 in its title; the chapter's Figure 1a draws the same panels)."""


LOCAL_WINS_FROM = 200
"""The paper: local learning dominates "after about 200 iterations" at large noise."""


INSTANCE_NAMES = {
    "authors": "the authors' (their script's seed and order of draws)",
    "fedlib": "fedlib's own draw",
}


def synthetic_grid_table(setup: PpsgdSetup, scale: str, seed: int,
                         instance: str = SYNTHETIC_INSTANCE) -> pd.DataFrame:
    """The Figure 1a grid of this build, one row per property."""
    grid = setup.synthetic
    return pd.DataFrame({
        "tier": [scale],
        "problem instance": [INSTANCE_NAMES[instance]],
        "users N": [grid.n_users],
        "dimension d": [grid.dim],
        "heterogeneity (std of the users' deviations)": [f"{grid.heterogeneity:g}"],
        "iterations": [grid.iterations],
        "step sizes (each curve: minimum over these)": [", ".join(f"{s:g}" for s in grid.steps)],
        "alpha*Q": [", ".join(f"{a:g}" for a in grid.alpha_q)],
        "noise sigma": [", ".join(f"{s:g}" for s in grid.sigmas)],
        "runs": [len(configs(setup, seed, figure="1a"))],
    }).T.rename(columns={0: ""})


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


def clipping_table(grid: SyntheticGrid, seed: int, instance: str = SYNTHETIC_INSTANCE
                   ) -> pd.DataFrame:
    """How far clipping at C = 1 holds global-only learning back on the synthetic task."""
    task = synthetic_task(grid, seed, instance)
    return pd.DataFrame({
        "quantity": [
            "distance of the shared optimum from the origin",
            "iterations a global-only run needs at least (largest step, C=1)",
            "excess-risk floor of any global-only model",
        ],
        "value": [
            f"{shared_optimum_norm(task):.1f}",
            f"{clipping_bound(task, max(grid.steps), FIGURE_CLIP):.0f}",
            f"{global_only_floor(task):.2e}",
        ],
    })


def best_alpha(frame: pd.DataFrame, iteration: int) -> str:
    """The best personalization level of ``frame`` at ``iteration``, with its excess risk."""
    row = frame[frame["iteration"] == iteration].sort_values("excess_risk").iloc[0]
    return f"{row['alpha_q']:g} (risk {row['excess_risk']:.3g})"


def loose_clip_note(curves: pd.DataFrame, grid: SyntheticGrid, seed: int,
                    instance: str = SYNTHETIC_INSTANCE) -> str:
    """What the noise-free curves at the grid's largest clipping norm show (Markdown; the
    means over seeds)."""
    curves = mean_over_seeds(curves)
    loose = curves[(curves["clip"] == max(grid.clips)) & (curves["noise_multiplier"] == 0)]
    early_it = max(1, grid.iterations // 30)
    return (
        f"Without noise and with $C={max(grid.clips):g}$, the best personalization level is "
        f"$\\alpha Q=${best_alpha(loose, early_it)} at iteration {early_it} and "
        f"$\\alpha Q=${best_alpha(loose, grid.iterations)} at iteration {grid.iterations}. "
        f"The users' optima differ by only ${grid.heterogeneity:g}$ (standard deviation) on "
        f"five coordinates, so a single shared model can reach an excess risk of "
        f"{global_only_floor(synthetic_task(grid, seed, instance)):.1e}: global "
        "learning has no reason to plateau within the paper's 300 iterations, and the "
        "plateau the paper describes cannot come from this generator at this horizon."
    )


def emnist_data_table(data: FederatedClassification) -> pd.DataFrame:
    """The EMNIST data of this build: source, writers, digits."""
    return pd.DataFrame({
        "source": [data.source],
        "writers N": [data.n_users],
        "train digits": [len(data.y_train)],
        "test digits": [len(data.y_test)],
        "train digits per writer (median)": [int(pd.Series(data.train_counts()).median())],
    }).T.rename(columns={0: ""})


def emnist_grid_table(setup: PpsgdSetup, seed: int) -> pd.DataFrame:
    """The EMNIST grids of this build, one column per model."""
    return pd.DataFrame({
        model: {
            "epochs": f"{g.epochs:g}" + (" (paper: 20)" if g.epochs != 20 else ""),
            "iterations T": "see below",
            "step sizes (curves: best of)": ", ".join(f"{v:g}" for v in g.steps),
            "alpha*Q": ", ".join(f"{a:g}" for a in g.alpha_q),
            "noise sigma": ", ".join(f"{v:g}" for v in g.sigmas),
            "clip C": f"{g.clip:g}",
            "runs": len(configs(setup, seed, figure=figure)),
        }
        for figure, model, g in (("1c", "linear", setup.linear), ("1d", "cnn", setup.cnn))
    })


def iterations_run(runs: pd.DataFrame) -> int:
    """The iterations T the EMNIST runs of one figure trained for."""
    return int(runs["iterations"].iloc[0])


def small_steps_curves(small: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """The curves of Figure 1d's small-step runs (``small``; best step size at each
    evaluation), with local-only from the main grid's runs (``main``), which releases
    nothing and so is the same at every noise level; empty when ``small`` is."""
    if small.empty:
        return small
    local = main[main["alpha_q"] == 0]
    sigmas = tuple(sorted(small["noise_multiplier"].unique()))
    return best_over_steps(pd.concat([small, local], ignore_index=True), "accuracy",
                           higher_is_better=True, sigmas=sigmas)


def smallest_step_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """The curves of Figure 1d's runs at the largest plotted noise with the smallest step
    (``runs``, with a seed column; :func:`~fedlib.papers.ppsgd.paper_tier.stored_smallest_step`):
    test accuracy at each evaluation, per seed (the best over their step sizes, a single
    one); empty when ``runs`` is."""
    if runs.empty:
        return pd.DataFrame()
    return best_over_steps(runs, "accuracy", higher_is_better=True)


SMALLEST_STEP_COLUMNS = ("seeds", "final test accuracy", "95% interval", "peak accuracy",
                         "at iteration", "share of training", "eps (RDP)")
"""The columns of :func:`smallest_step_table` (its index: alpha*Q)."""


def smallest_step_peak(curves: pd.DataFrame, alpha_q: float) -> tuple[float, int]:
    """The highest test accuracy the level ``alpha_q`` of ``curves`` reaches during
    training, averaged over seeds at each evaluation (the start left out), and the
    iteration of it."""
    level = with_seed(curves)
    level = level[(level["alpha_q"] == alpha_q) & (level["iteration"] > 0)]
    mean = level.groupby("iteration")["accuracy"].mean()
    return float(mean.max()), int(mean.idxmax())


def smallest_step_table(curves: pd.DataFrame, iterations: int) -> pd.DataFrame:
    """Per level of personalization of :func:`smallest_step_curves` (index ``alpha*Q``): the
    seeds, the final test accuracy (mean over seeds and its 95% interval), the highest
    accuracy of the mean over seeds during training with its iteration and the share of
    the ``iterations`` trained, and the RDP epsilon of the released model at the end."""
    rows = []
    if not curves.empty:
        curves = with_seed(curves)
        last = int(curves["iteration"].max())
        for alpha_q in sorted(curves["alpha_q"].unique()):
            est = estimate(values(curves, "accuracy", float(curves["noise_multiplier"].max()),
                                  float(alpha_q), last))
            peak, at = smallest_step_peak(curves, float(alpha_q))
            level = curves[(curves["alpha_q"] == alpha_q) & (curves["iteration"] == last)]
            rows.append({
                "alpha*Q": _fmt_alpha(float(alpha_q)), "seeds": est.n,
                "final test accuracy": est.mean,
                "95% interval": f"[{est.low:.3f}, {est.high:.3f}]" if est.n > 1 else "n=1",
                "peak accuracy": peak, "at iteration": at,
                "share of training": at / iterations,
                "eps (RDP)": float(level["epsilon"].max()),
            })
    return pd.DataFrame(rows, columns=["alpha*Q", *SMALLEST_STEP_COLUMNS]).set_index(
        "alpha*Q")


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
        best = (personalized.idxmax() if higher_is_better else personalized.idxmin())
        released = panel[panel.index > 0]["epsilon"]
        rows.append({
            "noise_multiplier": sigma,
            "epsilon": float(released.max()) if len(released) else 0.0,
            "local": float(values.get(0.0, np.nan)),
            "global": float(values.get(math.inf, np.nan)),
            "intermediate": float(values.get(intermediate, np.nan)),
            "personalized": float(personalized.loc[best]),
            "best_alpha_q": float(best),
            "envelope": float(pick(values)),
        })
    return pd.DataFrame(rows)


EMNIST_TRADEOFF = "EMNIST linear (accuracy)"


SYNTHETIC_TRADEOFF = "synthetic (excess risk)"


def figure2_ends(curves_1a: pd.DataFrame, curves_1c: pd.DataFrame
                 ) -> dict[str, pd.DataFrame]:
    """The final values Figure 2 reads, averaged over seeds: EMNIST linear (1c) and
    synthetic (1a, C = 1)."""
    return {EMNIST_TRADEOFF: final(mean_over_seeds(curves_1c)),
            SYNTHETIC_TRADEOFF: final(at_figure_clip(mean_over_seeds(curves_1a)))}


def figure2_tradeoffs(curves_1a: pd.DataFrame, curves_1c: pd.DataFrame
                      ) -> dict[str, pd.DataFrame]:
    """The trade-off tables of Figure 2 (:func:`tradeoff`) on the means over seeds: EMNIST
    linear, then synthetic."""
    ends = figure2_ends(curves_1a, curves_1c)
    return {
        EMNIST_TRADEOFF: tradeoff(ends[EMNIST_TRADEOFF], "accuracy", higher_is_better=True),
        SYNTHETIC_TRADEOFF: tradeoff(ends[SYNTHETIC_TRADEOFF], "excess_risk",
                                     higher_is_better=False),
    }


def plotted_step_edges(curves_1a: pd.DataFrame, curves_1c: pd.DataFrame,
                       curves_1d: pd.DataFrame, setup: PpsgdSetup,
                       curves_1d_small: pd.DataFrame | None = None) -> pd.DataFrame:
    """Where the best step of every curve the chapter's figures draw lies in its grid, at
    the last iteration of each figure (:func:`step_edges`): Figure 1a at the plots'
    clipping norm and at the largest of the runs, Figures 1c and 1d on their panels, and
    Figure 1d's small-step runs where there are any; the levels of personalization the
    figures draw. Columns figure, then those of :func:`step_edges`."""
    parts = []

    def add(figure: str, curves: pd.DataFrame | None, sigmas: Sequence[float],
            alphas: Sequence[float]) -> None:
        if curves is None or curves.empty:
            return
        edges = step_edges(curves)
        edges = edges[edges["noise_multiplier"].isin(sigmas) & edges["alpha_q"].isin(alphas)]
        parts.append(edges.assign(figure=figure))

    synthetic_sigmas = sorted(curves_1a["noise_multiplier"].unique())
    add("1a", at_figure_clip(curves_1a), synthetic_sigmas, SYNTHETIC_FIGURE_ALPHA_Q)
    loose = float(curves_1a["clip"].max())
    if loose != FIGURE_CLIP:
        add(f"1a at C={loose:g} (not in the paper)", curves_1a[curves_1a["clip"] == loose],
            synthetic_sigmas, SYNTHETIC_FIGURE_ALPHA_Q)
    add("1c", curves_1c, setup.linear.panel_sigmas, EMNIST_FIGURE_ALPHA_Q)
    add("1d", curves_1d, setup.cnn.panel_sigmas, EMNIST_FIGURE_ALPHA_Q)
    add("1d, small steps", curves_1d_small, SMALL_STEPS_SIGMAS, EMNIST_FIGURE_ALPHA_Q)
    columns = ["figure", "clip", "noise_multiplier", "alpha_q", "iteration", "best_step",
               *STEP_GRID, "end"]
    if not parts:
        return pd.DataFrame(columns=columns)
    edges = pd.concat(parts, ignore_index=True)
    if all(c in edges.columns for c in STEP_EXTENSION):
        # A figure whose curves were not extended holds none beyond its grid.
        edges = edges.fillna({"base_low": edges["step_low"], "base_high": edges["step_high"],
                              "beyond_low": 0, "beyond_high": 0})
        columns += STEP_EXTENSION
    return edges[columns]


def _edge_row(row: Any) -> StepEdge:
    """The :class:`StepEdge` of one row of :func:`plotted_step_edges`."""
    extension = ({c: getattr(row, c) for c in STEP_EXTENSION}
                 if all(hasattr(row, c) for c in STEP_EXTENSION) else {})
    for count in ("beyond_low", "beyond_high"):
        if count in extension:
            extension[count] = int(extension[count])
    return StepEdge(row.best_step, row.step_low, row.step_high, row.iteration, **extension)


def _grid_text(edge: StepEdge) -> str:
    """The grid of a curve, and the ends of its grid before an extension it was extended
    beyond: ``0.2 ... 7.2 (extended beyond 1.8)``."""
    beyond = edge.extended_beyond()
    return edge.grid() + (" (extended beyond " + " and ".join(f"{b:g}" for b in beyond) + ")"
                          if beyond else "")


def step_edge_table(edges: pd.DataFrame) -> pd.DataFrame:
    """:func:`plotted_step_edges` as the chapter shows it: one row per figure and noise
    level, one column per level of personalization, each cell the best step with the end
    of the grid it is on where it is on one (``1.8 (highest)``); the column ``grid`` gives
    the grid of the row's curves (a curve whose grid differs from the row's is named), with
    the ends it was extended beyond (``0.2 ... 7.2 (extended beyond 1.8)``)."""
    alphas = sorted(edges["alpha_q"].unique())
    rows = []
    for (figure, sigma), row in edges.groupby(["figure", "noise_multiplier"], sort=False):
        grids = pd.Series([_grid_text(_edge_row(r)) for r in row.itertuples()])
        common = grids.mode().iloc[0]
        others = [f"alpha*Q={_fmt_alpha(a)}: {g}" for a, g in zip(row["alpha_q"], grids,
                                                                    strict=True) if g != common]
        cells = {f"alpha*Q={_fmt_alpha(a)}": "" for a in alphas}
        for r in row.itertuples():
            cells[f"alpha*Q={_fmt_alpha(r.alpha_q)}"] = (
                f"{r.best_step:g}" + (f" ({r.end})" if r.end else ""))
        rows.append({"figure": figure, "sigma": f"{sigma:g}",
                     "iteration": int(row["iteration"].iloc[0]),
                     "grid": "; ".join([common, *others]), **cells})
    return pd.DataFrame(rows).set_index(["figure", "sigma"])


def step_edge_summary(edges: pd.DataFrame) -> str:
    """How many curves of :func:`plotted_step_edges` end with their best step on an end of
    their grid, and, where the curves carry their extensions (:data:`STEP_EXTENSION`), how
    many were extended and how many still end on an extended end (Markdown, every number
    read from ``edges``)."""
    total = len(edges)
    low = int(edges["end"].str.contains("lowest").sum())
    high = int(edges["end"].str.contains("highest").sum())
    on = int((edges["end"] != "").sum())
    both = int((edges["end"] == "lowest and highest").sum())
    split = f"{low} on the lowest step, {high} on the highest" + (
        f", {both} of them on a grid of one step" if both else "")
    counted = (f"{on} of the {total} curves the figures draw have their best step on an end "
               f"of their grid ({split})" if on else
               f"none of the {total} curves the figures draw has its best step on an end of "
               "its grid")
    opening = f"At the last iteration of each figure, {counted}."
    if not all(c in edges.columns for c in STEP_EXTENSION):
        return (f"{opening} Neither end bounds the step size, and no grid was extended beyond "
                "them: what that would cost is not computed here.")
    edge_rows = [_edge_row(r) for r in edges.itertuples()]
    extended = sum(1 for e in edge_rows if e.extended_beyond())
    ran_out = sum(1 for e in edge_rows if e.extension().endswith("ran out"))
    still = sum(1 for e in edge_rows if e.end and not e.extension())
    words = (f"{extended} of the {total} curves were extended beyond an end of their grid"
             if extended else "No curve's grid was extended beyond its ends")
    return (f"{opening} Neither end bounds the step size. {words} (at most "
            f"{EXTENSIONS_PER_END} steps beyond an end, at every iteration the claims read); "
            f"{ran_out} still end on an end their extensions ran out on, and {still} on an end "
            "that was not extended.")


def privacy_table(setup: PpsgdSetup, runs_1c: pd.DataFrame, runs_1d: pd.DataFrame
                  ) -> pd.DataFrame:
    """Epsilon at the end of training under the authors' RDP accountant and under tight
    accounting: the exact curve of the Gaussian mechanism where every user takes part
    (:func:`fedlib.privacy.gaussian.gaussian_epsilon`, what a PLD accountant converges
    to), the PLD accountant where users are sampled.

    One row per private noise level of each figure: Figure 1a samples every user
    (rate 1); each EMNIST figure takes its own users N, sampling rate Q/N (Q
    users per iteration, as its runs were configured) and iterations T.
    """
    grid = setup.synthetic

    def emnist(runs: pd.DataFrame, emnist_grid) -> tuple:
        n_users = int(runs["n_users"].iloc[0])
        return (n_users, emnist_grid.users_per_iteration / n_users, iterations_run(runs),
                emnist_grid.sigmas)

    figures = {
        "1a synthetic": (grid.n_users, 1.0, grid.iterations, grid.sigmas),
        "1c EMNIST linear": emnist(runs_1c, setup.linear),
        "1d EMNIST CNN": emnist(runs_1d, setup.cnn),
    }
    rows = []
    for figure, (n_users, rate, iterations, sigmas) in figures.items():
        for sigma in sigmas:
            if sigma <= 0:
                continue
            rows.append({
                "figure": figure, "users N": n_users, "rate Q/N": rate, "iterations T": iterations,
                "sigma": sigma,
                "eps RDP": epsilon(sigma, rate, iterations, DELTA, accountant="rdp"),
                "eps tight": (gaussian_epsilon(sigma, iterations, DELTA) if rate == 1.0
                              else epsilon(sigma, rate, iterations, DELTA, accountant="pld")),
            })
    return pd.DataFrame(rows)


PAPER_EMNIST_ITERATIONS = 20 * 100 * 1000 // (10 * 10)
"""Iterations of the paper's EMNIST runs: 20 epochs of about 100 digits for each of
N = 1,000 writers, Q = 10 writers of m = 10 digits per iteration."""


def figure1_epsilons() -> pd.DataFrame:
    """The epsilon of every private panel of Figure 1 (1a, 1c, 1d) at the paper's setting
    (its sigma, sampling rate Q/N, iterations T and delta = 1e-4): under this library's
    RDP accountant and under the accountant of the authors' script (opacus 1.1's orders)."""
    paper = experiment_tier("paper")  # the paper's panels, not the book's cut grid
    figures = (("1a", 1.0, paper.synthetic.iterations, FIGURE1A_PANEL_SIGMAS),
               ("1c", 10 / 1000, PAPER_EMNIST_ITERATIONS, paper.linear.panel_sigmas),
               ("1d", 10 / 1000, PAPER_EMNIST_ITERATIONS, paper.cnn.panel_sigmas))
    return pd.DataFrame([
        {"figure": figure, "sigma": sigma, "rate": rate, "iterations": steps,
         "eps_rdp": epsilon(sigma, rate, steps, DELTA, accountant="rdp"),
         "eps_authors": epsilon(sigma, rate, steps, DELTA, accountant="opacus-rdp")}
        for figure, rate, steps, sigmas in figures for sigma in sigmas if sigma > 0])


CURVE_LOG_POINTS = 40
"""Iterations of a published synthetic run spaced evenly on a log scale (the curves of
Figure 1a fall fastest in their first iterations)."""


CURVE_EVERY = 10
"""And every tenth iteration (the tail of the curves, drawn on a linear axis)."""


def claim_iterations(last: int) -> set[int]:
    """The iterations of a synthetic run of ``last`` iterations that a claim or note of
    the chapter reads: T/30 (global learning fastest at the start, and the note on the
    loose clipping norm), T/2 (the plateau of global learning), iteration 200 (local
    learning wins at large noise) and T (every claim's end, and Figure 2)."""
    return {max(1, last // 30), last // 2, min(LOCAL_WINS_FROM, last), last}


def curve_iterations(last: int) -> set[int]:
    """The iterations a published synthetic run keeps: a log-plus-linear grid of the
    curves (:data:`CURVE_LOG_POINTS`, :data:`CURVE_EVERY`) and :func:`claim_iterations`."""
    return log_linear_grid(last, CURVE_LOG_POINTS, CURVE_EVERY) | claim_iterations(last)


_CURVE_FIELDS = ("instance", "n_users", "dim", "heterogeneity", "iterations", "batch_size",
                 "noise_multiplier", "clip")
"""What the runs of one panel's curves share (they differ in step size and alpha*Q)."""


@cache
def _walked_panels(tier: str, seed: int) -> frozenset[tuple[str, ...]]:
    """The panels (:data:`_CURVE_FIELDS`) of the settings sweep at its largest noise
    level (at ``tier``, ``seed``)."""
    if tier not in TIERS:
        return frozenset()
    configs = setting_configs(settings_setup(tier), seed)
    largest = max(config["noise_multiplier"] for config in configs)
    return frozenset(tuple(str(config[f]) for f in _CURVE_FIELDS) for config in configs
                     if config["noise_multiplier"] == largest)


def walked_step_by_step(config: Mapping[str, Any], tier: str) -> bool:
    """Whether a synthetic run is read at every iteration: the settings table says, per
    setting, from which iteration local learning stays the best at the largest noise
    level, which reads every iteration of the curves at that level. Every run of such a
    panel keeps every row, whatever its step size and alpha*Q (also those of Figure 1a's
    grid the sweep does not run): a curve is the best over step sizes at each iteration,
    which must not be taken over the runs that kept the iteration only."""
    seed = config.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        return True  # a config this rule cannot place keeps every row
    try:
        panel = tuple(str(config[f]) for f in _CURVE_FIELDS)
    except KeyError:
        return True
    return panel in _walked_panels(tier, seed)


SYNTHETIC_ROWS = KeptSteps(
    column="iteration", grid=curve_iterations, reads=claim_iterations,
    whole=walked_step_by_step,
    why="Figure 1a draws the curves (kept on a log-plus-linear grid of iterations); the "
        "claims read iterations T/30, T/2, 200 and T; the settings table reads every "
        "iteration of the settings sweep at its largest noise level")
"""The rows a published run of ``ppsgd-synthetic`` keeps (:mod:`fedlib.runs.rows`)."""
