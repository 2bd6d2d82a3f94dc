"""DP-Ditto's read-outs and claims: what the chapter computes from finished runs.

The privacy table (the noise calibration against exact accounting), the
read-outs of the figures (DP-Ditto's curves, the tuned lambda, the method
comparison, the headline gains, the alternating search of (T*, lambda*)) and
:func:`evaluate`, every claim of the chapter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fedlib.papers.dpditto.baselines import BASELINES
from fedlib.papers.dpditto.experiment import DittoSetup
from fedlib.papers.dpditto.paper_tier import low_epsilon_panel
from fedlib.papers.dpditto.readouts import (
    PAPER_GAIN,
    PAPER_GAIN_SOURCE,
    _label,
    _seeds,
    common_rounds,
    comparison,
    ditto,
    ditto_at,
    headline_table,
    held_out_lambdas,
    read_panel,
)
from fedlib.verdicts.claims import RESOLUTION, Claim, ClaimSheet, quoted
from fedlib.verdicts.compare import (
    NOT_RUN,
    NOT_TESTABLE,
    Comparison,
    Trivial,
    Verdict,
    best_of,
    combine,
    estimate,
    gate,
    interior_optimum,
)

PAPER = "dpditto"


CHANCE_ACCURACY = 0.2
"""Below this test accuracy (ten classes) a method is near chance."""


def privacy_verdict(table: pd.DataFrame) -> str:
    """One sentence on whether the calibration used meets its targets under PLD."""
    spent = table["epsilon spent, PLD (used)"]
    over = table[spent > table["target epsilon"]].drop_duplicates("target epsilon")
    if over.empty:
        return "Under exact accounting the calibration used meets every target epsilon."
    met = table.loc[spent <= table["target epsilon"], "target epsilon"]
    lead = (f"meets its target only up to epsilon = {met.max():g}" if len(met)
            else "meets none of its targets")
    return (f"Under exact accounting the calibration used {lead}; it spends "
            + ", ".join(f"{r['epsilon spent, PLD (used)']:.3g} for a target of "
                        f"{r['target epsilon']:g}" for _, r in over.iterrows())
            + ". Like the classic Gaussian mechanism it comes from, the formula holds only "
            "for epsilon below 1: above that, the chapter's epsilon labels are the paper's "
            "targets, not guarantees.")


def near_chance(runs: pd.DataFrame, setup: DittoSetup) -> list[tuple[str, str]]:
    """(method, panel) of every compared method whose mean accuracy at the larger compared
    epsilon is below :data:`CHANCE_ACCURACY`."""
    runs = common_rounds(runs)
    return [(method, panel) for panel in setup.compare_panels
            for method, acc in comparison(runs, panel, max(setup.compare_epsilons))
            .groupby("method")["accuracy"].mean().items() if acc < CHANCE_ACCURACY]


def near_chance_note(runs: pd.DataFrame, setup: DittoSetup,
                     label: Callable[[str], str] = str) -> str:
    """What a near-chance baseline means for its fairness gain ("" when none is near
    chance); ``label`` names a panel."""
    chance = [f"{method} on {label(panel)}" for method, panel in near_chance(runs, setup)]
    if not chance:
        return ""
    return ("Near chance accuracy (below 0.2 with ten classes) at the larger epsilon: "
            + ", ".join(chance) + ". A model that has not learned has nearly the same loss on "
            "every client, so its spread of losses is small: against these, a negative "
            "fairness gain says the baseline did not train, not that it is fair.")


ACCURACY_MARGIN = 0.01
"""One point of test accuracy: the resolution of the paper's accuracy curves."""


ACCURACY_WHY = ("one point of test accuracy, about what the paper's accuracy curves resolve; "
                f"the metric itself resolves far finer ({RESOLUTION}), so the margin is the "
                "paper's curves' resolution, not the metric's")


def accuracy_resolution(sizes: Sequence[int] | None) -> str:
    """What a panel's test accuracy resolves, from its clients' test-set sizes (``sizes``,
    one per client, :func:`fedlib.papers.dpditto.readouts.test_sizes`): the accuracy of a
    run is the mean over the N clients of each client's accuracy on its n_i test examples,
    so one example moves it by 1/(N n_i); a compared value averages runs over T and the
    seeds. The margins' rationales quote it in place of their
    :data:`~fedlib.verdicts.claims.RESOLUTION` mark."""
    if sizes is None or len(sizes) == 0:
        return "the clients' test-set sizes were not given to this evaluation"
    n = np.asarray(sizes, dtype=int)
    clients, low, high = len(n), int(n.min()), int(n.max())
    def small(x: float) -> str:
        return np.format_float_positional(x, precision=2, fractional=False)

    if low == high:
        step = (f"one of a client's {low:,} test examples moves its accuracy by 1/{low:,} and "
                f"the mean over the {clients} clients by 1/{clients * low:,} = "
                f"{small(1 / (clients * low))}")
    else:
        step = (f"one of a client's {low:,} to {high:,} test examples moves its accuracy by "
                f"1/n_i and the mean over the {clients} clients by 1/({clients} n_i), "
                f"{small(1 / (clients * high))} to {small(1 / (clients * low))}")
    return step + "; a compared value averages that over T and the seeds"


CONTINUOUS = ("a spread of real-valued training losses has no counting step, and the "
              "float computation resolves it far below any margin")
"""What the std of the training losses, and the loss itself, resolve."""


FAIRNESS_MARGIN = 0.05
"""A relative difference of 5% in the std of the training losses: a quarter of the
smallest gain the paper reports (32.71% in variance is about 18% in std)."""


FAIRNESS_WHY = ("5% of the std, a quarter of the paper's smallest fairness gain (32.71% of "
                f"the variance is about 18% of the std): a margin in the paper's terms, "
                f"not a resolution ({CONTINUOUS})")


LOSS_MARGIN = 0.01
"""A loss difference of 1% of the loss itself: too small to see on a loss-vs-T plot."""


LOSS_WHY = ("1% of the mean loss on the curve, too small to see on a plot of loss vs T: a "
            f"margin in the paper's plots' terms, not a resolution ({CONTINUOUS})")


STEP_MARGIN = 0.5
"""Half a grid step: an optimum that moves by a whole grid point or more."""


STEP_WHY = ("half a grid step: the optimum must move by at least one grid point, the least "
            "move the grid can show (each seed's optimum is a grid point, so it moves in "
            "whole steps, and a mean over the seeds in steps of one over their number)")


RHO_MARGIN = 0.5
"""A strong rank correlation (the usual boundary of a strong Spearman correlation)."""


def rho_why(points: int) -> str:
    """Why :data:`RHO_MARGIN`, with what Spearman's correlation resolves over ``points``
    grid values: it is 1 - 6 sum(d^2) / (m (m^2 - 1)) with sum(d^2) even, so it moves in
    steps of 12 / (m (m^2 - 1))."""
    step = (f"over {points} grid values it moves in steps of 12/({points}({points}^2 - 1)) = "
            f"{12 / (points * (points ** 2 - 1)):.3f}" if points >= 2
            else f"over {points} grid value it is not defined")
    return f"a strong rank correlation, the usual boundary of a strong one ({step})"


CHANCE = Trivial("chance accuracy with ten classes", 0.1, higher_is_better=True,
                 tolerance=CHANCE_ACCURACY - 0.1)
"""An arm whose accuracy interval reaches 0.2 (twice chance) has not learned."""


COMPARE_PANELS = ("mnist-dnn", "fmnist-cnn")
"""The panels of the paper's Figures 3 and 4 a tier can run (CIFAR-10 is never run)."""


FIG5_PANELS = ("mnist-dnn", "mnist-mlr", "fmnist-cnn")
"""The panels of the paper's Figure 5 a tier can run."""


LAMBDA_PANEL = "mnist-dnn"
"""The paper's model of Figures 6(a, b) and 7: the DNN on MNIST."""


FALLING = {"mnist-dnn": ("FedALA", "FedAMP"), "fmnist-cnn": ("FedALA", "FedAMP", "pFedMe")}
"""The baselines whose accuracy the paper says falls as T grows, per panel (pFedMe on
the CNN models only)."""


NOT_RUN_CNN = ("not run at this tier: at the paper's scale a CNN panel takes hundreds of "
               "CPU-hours (an accelerator's work), so the book's paper tier leaves it out")


def _context(panel: str, used: str, role: str) -> str:
    if used == panel:
        return ""
    return (f"evaluated on {_label(used)}: this tier runs {role} on {_label(used)}, not on the "
            f"paper's {_label(panel)}")


def _ditto_label(frame: pd.DataFrame) -> str:
    return next(m for m in frame["method"].unique() if m.startswith("DP-Ditto"))


def _shown(frame: pd.DataFrame, column: str, methods: Sequence[str]) -> str:
    present = [m for m in methods if m in set(frame["method"])]
    return ("; shown, not part of the claim: " + ", ".join(
        f"{m} {estimate(_seeds(frame[frame['method'] == m], column)).text()}"
        for m in present)) if present else ""


def _with(verdict: Verdict, extra: str) -> Verdict:
    return Verdict(verdict.status, verdict.evidence + extra)


def _no_runs(what: str) -> Verdict:
    return Verdict(NOT_RUN, f"no runs of {what}")


def best_accuracy(runs: pd.DataFrame, panel: str, epsilons: Sequence[float]) -> Verdict:
    """DP-Ditto (lambda tuned) beats each of the four baselines in accuracy by more than
    :data:`ACCURACY_MARGIN`, at every epsilon."""
    parts = []
    for eps in epsilons:
        frame = comparison(runs, panel, eps)
        ours = _ditto_label(frame)
        arms = {m: _seeds(frame[frame["method"] == m], "accuracy")
                for m in (ours, *BASELINES) if m in set(frame["method"])}
        if len(arms) < 2:
            parts.append((f"eps={eps:g}", _no_runs("the baselines")))
            continue
        verdict = best_of("test accuracy (mean over T)", ours, arms, direction="greater",
                          margin=ACCURACY_MARGIN, why=ACCURACY_WHY, trivial=CHANCE)
        parts.append((f"eps={eps:g}",
                      _with(verdict, _shown(frame, "accuracy", ("DP-FedAvg", "Local")))))
    return combine(parts)


def _relative(ours: pd.Series, base: pd.Series) -> pd.Series:
    """Per seed, ``(base - ours) / base``: how much lower ours is, relative to base."""
    return (base - ours.reindex(base.index)) / base


def best_fairness(runs: pd.DataFrame, panel: str, epsilons: Sequence[float]) -> Verdict:
    """DP-Ditto's std of training losses is lower than each baseline's by more than
    :data:`FAIRNESS_MARGIN` of the baseline's, at every epsilon."""
    parts, shown = [], ""
    for eps in epsilons:
        frame = comparison(runs, panel, eps)
        ours = _ditto_label(frame)
        mine = frame[frame["method"] == ours]
        shown += f" (eps={eps:g}: std of DP-Ditto {estimate(_seeds(mine, 'fairness')).text()}" \
            + _shown(frame, "fairness", ("DP-FedAvg", "Local")) + ")"
        for method in BASELINES:
            theirs = frame[frame["method"] == method]
            if theirs.empty:
                continue
            label = f"eps={eps:g} vs {method}"
            unreadable = gate({"DP-Ditto's accuracy": _seeds(mine, "accuracy"),
                               f"{method}'s accuracy": _seeds(theirs, "accuracy")}, CHANCE)
            if unreadable is not None:
                parts.append((label, unreadable))
                continue
            reduction = _relative(_seeds(mine, "fairness"), _seeds(theirs, "fairness"))
            parts.append((label, Comparison(
                f"relative reduction of the std of training losses, (std_{method} - "
                "std_Ditto) / std_" + method, f"DP-Ditto vs {method}", "no reduction",
                "greater", FAIRNESS_MARGIN, FAIRNESS_WHY).judge(reduction, 0 * reduction)))
    if not parts:
        return _no_runs("the baselines")
    return _with(combine(parts), shown)


def optima(table: pd.DataFrame, *, lower_is_better: bool, open_edges: tuple[bool, bool]
           ) -> tuple[pd.Series, pd.Series]:
    """Per row (seed) of ``table``, whose columns are a grid's points in order: the column
    position of the best value, and the open edge it sits on (``"low"`` or ``"high"``, an
    edge the grid could extend beyond: ``open_edges`` for its low and its high end; ``""``
    inside the grid or at a closed edge, a natural bound)."""
    values = table.to_numpy(dtype=float)
    best = (np.argmin if lower_is_better else np.argmax)(values, axis=1)
    last = values.shape[1] - 1
    edge = ["low" if i == 0 and open_edges[0] else "high" if i == last and open_edges[1]
            else "" for i in best]
    return (pd.Series(best.astype(float), index=table.index),
            pd.Series(edge, index=table.index, dtype=object))


def on_open_edge(what: str, grid: Sequence[float], index: pd.Series, edge: pd.Series,
                 name: str) -> str:
    """Where ``what`` sits on an open edge of ``grid`` (``index`` and ``edge`` per seed,
    :func:`optima`), in words (``""`` when it sits on none): the grid point, which edge,
    and on which seeds."""
    found = edge[edge != ""]
    if found.empty:
        return ""
    parts = []
    for side in ("low", "high"):
        seeds = sorted(found.index[found == side])
        if seeds:
            point = grid[0] if side == "low" else grid[-1]
            parts.append(f"{name}={point:g}, the grid's {'lowest' if side == 'low' else 'highest'}"
                         f" (an open {side} edge), on seed{'s' if len(seeds) > 1 else ''} "
                         + ", ".join(str(int(seed)) for seed in seeds))
    return f"{what} sits at " + " and at ".join(parts)


def edge_verdict(quantity: str, edges: Sequence[str]) -> Verdict:
    """NOT-TESTABLE: an optimum the claim reads sits on an open edge of its grid
    (``edges``, from :func:`on_open_edge`), so where it lies is not known."""
    return Verdict(NOT_TESTABLE, f"{quantity}: " + "; ".join(edges) + ": the optimum may lie "
                   "beyond the grid, so the grid cannot place it",
                   "; ".join(edges) + ", an optimum the grid cannot place")


def lambda_edges(grid: Sequence[float]) -> tuple[bool, bool]:
    """Which ends of a lambda grid are open: the low end unless it is the method's limit
    lambda = 0 (the local models), the high end unless it is lambda = 1 (DP-FedAvg). The
    runs hold both limits beside the paper's values in (0, 1), so a best lambda on an
    edge of the whole grid is a bound of the method, not the end of a grid."""
    return min(grid) > 0, max(grid) < 1


def _tuned(runs: pd.DataFrame, panel: str, epsilon: float
           ) -> tuple[pd.Series, pd.Series, list[float]]:
    """Per seed, the grid index of DP-Ditto's lambda in [0, 1] (the paper's grid with its
    limits) with the best accuracy (mean over T) and the open edge it sits on
    (:func:`optima`: none, both ends are bounds); and the grid."""
    table = ditto_at(runs, panel, epsilon).groupby(["seed", "lam"])[
        "accuracy"].mean().unstack("lam")
    index, edge = optima(table, lower_is_better=False,
                         open_edges=lambda_edges([float(lam) for lam in table.columns]))
    return index, edge, [float(lam) for lam in table.columns]


def smaller_lambda(runs: pd.DataFrame, panel: str, lo: float, hi: float) -> Verdict:
    """The tuned lambda is lower, by a grid point or more, at the smaller epsilon; not
    testable where a tuned lambda sits on an open edge of its grid (:func:`lambda_edges`):
    the grid does not then say where the optimum lies."""
    quantity = "grid index of the tuned lambda in [0, 1]"
    (a, a_edge, grid), (b, b_edge, _) = _tuned(runs, panel, lo), _tuned(runs, panel, hi)
    edges = [e for e in (on_open_edge(f"at eps={eps:g} the tuned lambda", grid, index, edge,
                                      "lambda")
                         for eps, index, edge in ((lo, a, a_edge), (hi, b, b_edge))) if e]
    if edges:
        return edge_verdict(quantity, edges)
    return Comparison(quantity, f"eps={lo:g}", f"eps={hi:g}", "less", STEP_MARGIN,
                      STEP_WHY).judge(a, b)


def _method(runs: pd.DataFrame, panel: str, method: str, **where: float) -> pd.DataFrame:
    sel = runs[(runs["panel"] == panel) & (runs["method"] == method)]
    for column, value in where.items():
        sel = sel[np.isclose(sel[column].astype(float), value)]
    return sel


def baselines_degrade(runs: pd.DataFrame, panel: str, lo: float, hi: float) -> Verdict:
    """Every baseline is less accurate at the smaller epsilon, by more than a point."""
    parts = [(method, Comparison("test accuracy (mean over T)", f"{method} at eps={lo:g}",
                                 f"{method} at eps={hi:g}", "less", ACCURACY_MARGIN,
                                 ACCURACY_WHY).judge(
        _seeds(_method(runs, panel, method, epsilon=lo), "accuracy"),
        _seeds(_method(runs, panel, method, epsilon=hi), "accuracy"), trivial=CHANCE))
        for method in BASELINES]
    return combine(parts)


def _by_rounds(frame: pd.DataFrame, column: str) -> dict[int, pd.Series]:
    """Per T, one value of ``column`` per seed."""
    return {int(t): g.groupby("seed")[column].mean()
            for t, g in frame.groupby("rounds")}


def baselines_fall(runs: pd.DataFrame, panel: str, falling: Sequence[str],
                   epsilons: Sequence[float]) -> Verdict:
    """Each baseline in ``falling`` is less accurate at the largest T of the grid than at
    the smallest, by more than a point, at every epsilon."""
    parts = []
    for method in falling:
        for eps in epsilons:
            curve = _by_rounds(_method(runs, panel, method, epsilon=eps), "accuracy")
            if len(curve) < 2:
                parts.append((f"{method} eps={eps:g}", Verdict(
                    NOT_RUN, f"the T grid {sorted(curve)} has one point: no trend in T")))
                continue
            first, last = min(curve), max(curve)
            parts.append((f"{method} eps={eps:g}", Comparison(
                "test accuracy", f"{method} at T={last}", f"{method} at T={first}", "less",
                ACCURACY_MARGIN, ACCURACY_WHY).judge(curve[last], curve[first],
                                                     trivial=CHANCE)))
    return combine(parts)


def _interior(quantity: str, curve: dict[int, pd.Series], *, lower_is_better: bool,
              margin: float, why: str, trivial: Trivial | None = None) -> Verdict:
    """:func:`interior_optimum` over a T grid (its low edge closed at T = 1, its high
    edge open); NOT-RUN with fewer than three T (or one repeat, as it says itself)."""
    if len(curve) < 3:
        return Verdict(NOT_RUN, f"the T grid {sorted(curve)} has fewer than three points: "
                       "no optimum can lie inside it")
    return interior_optimum(quantity, {float(t): v for t, v in curve.items()},
                            lower_is_better=lower_is_better, margin=margin, why=why,
                            open_edges=(min(curve) > 1, True), trivial=trivial)


def apple_peaks(runs: pd.DataFrame, panel: str, epsilons: Sequence[float]) -> Verdict:
    """APPLE's accuracy rises then falls in T: its best T lies inside the grid."""
    return combine([(f"eps={eps:g}", _interior(
        "APPLE's test accuracy", _by_rounds(_method(runs, panel, "APPLE", epsilon=eps),
                                            "accuracy"),
        lower_is_better=False, margin=ACCURACY_MARGIN, why=ACCURACY_WHY, trivial=CHANCE))
        for eps in epsilons])


def headline(runs: pd.DataFrame, panel: str, epsilons: Sequence[float]) -> Verdict:
    """DP-Ditto's gain over each of the four baselines exceeds the paper's: fairness
    (variance, Definition 1) by 32.71%, accuracy by 9.66%, per seed, at every epsilon."""
    parts = []
    for eps in epsilons:
        frame = comparison(runs, panel, eps).assign(variance=lambda f: f["fairness"] ** 2)
        mine = frame[frame["method"] == _ditto_label(frame)]
        for method in BASELINES:
            theirs = frame[frame["method"] == method]
            if theirs.empty:
                continue
            fair = 100 * _relative(_seeds(mine, "variance"), _seeds(theirs, "variance"))
            acc = -100 * _relative(_seeds(mine, "accuracy"), _seeds(theirs, "accuracy"))
            for name, gain, bar in (("fairness", fair, PAPER_GAIN["fairness"]),
                                    ("accuracy", acc, PAPER_GAIN["accuracy"])):
                what = "variance" if name == "fairness" else "accuracy"
                parts.append((f"eps={eps:g} {name} vs {method}", Comparison(
                    f"{name} gain over {method}, % of its {what}", "DP-Ditto's gain",
                    "the paper's", "greater", 0.0,
                    "the paper's gain is the compared arm: any gain beyond it meets the claim"
                ).judge(gain, 0 * gain + bar)))
    if not parts:
        return _no_runs("the baselines")
    return combine(parts)


def _gaps(runs: pd.DataFrame, panel: str, lam: float, epsilons: Sequence[float]
          ) -> tuple[dict[float, pd.Series], float]:
    """Per finite epsilon, per seed, the mean over T of |loss - loss(eps=inf)|; and the
    mean noiseless loss."""
    def curve(eps: float) -> pd.Series:
        return ditto(runs, panel, eps, lam).groupby(["seed", "rounds"])["loss"].mean()

    clean = curve(math.inf)
    gaps = {e: (curve(e) - clean).abs().groupby("seed").mean()
            for e in epsilons if math.isfinite(e)}
    return gaps, float(clean.mean())


def falls_along(quantity: str, values: dict[float, pd.Series], margin: float, why: str,
                label: Callable[[float], str], edges: Mapping[float, str] | None = None
                ) -> Verdict:
    """``values`` (keyed by grid point, in order) fall along the grid: the last is below
    the first by more than ``margin``, and no step rises by ``margin`` or more. Where the
    values are optima read off another grid, ``edges`` says, per point, where its optimum
    sits on an open edge of that grid (``""`` or absent: it does not): each part that
    reads such a point is NOT-TESTABLE, the optimum possibly lying beyond the grid."""
    points = sorted(values)
    if len(points) < 2:
        return Verdict(NOT_RUN, f"{quantity}: fewer than two grid points")
    edges = edges or {}

    def part(a: float, b: float, verdict: Callable[[], Verdict]) -> Verdict:
        found = [edges[p] for p in (a, b) if edges.get(p)]
        return edge_verdict(quantity, found) if found else verdict()

    first, last = points[0], points[-1]
    parts = [(f"{label(first)} to {label(last)}", part(first, last, lambda: Comparison(
        quantity, label(last), label(first), "less", margin, why).judge(
        values[last], values[first])))]
    parts += [(f"{label(a)} to {label(b)} (no rise)", part(a, b, lambda a=a, b=b: Comparison(
        quantity, f"{label(a)} plus the margin", label(b), "greater", 0.0,
        "no step may rise by the margin or more").judge(values[a] + margin, values[b])))
        for a, b in zip(points, points[1:], strict=False)]
    return combine(parts)


def approaches_noiseless(runs: pd.DataFrame, panel: str, lam: float,
                         epsilons: Sequence[float]) -> Verdict:
    """The personal training loss approaches the eps = inf curve as epsilon grows."""
    gaps, clean = _gaps(runs, panel, lam, epsilons)
    if not gaps or any(g.empty for g in gaps.values()):
        return _no_runs(f"DP-Ditto at lambda={lam:g}")
    return falls_along("mean |loss - loss(eps=inf)| over T", gaps, LOSS_MARGIN * abs(clean),
                       LOSS_WHY + f" (noiseless loss {clean:.4g})", lambda e: f"eps={e:g}")


def critical_rounds(runs: pd.DataFrame, panel: str, epsilon: float, lam: float) -> Verdict:
    """At the smallest epsilon and a small lambda the loss falls then rises in T."""
    curve = _by_rounds(ditto(runs, panel, epsilon, lam), "loss")
    if not curve:
        return _no_runs(f"DP-Ditto at eps={epsilon:g}")
    scale = float(np.mean([v.mean() for v in curve.values()]))
    return _interior(f"personal training loss at eps={epsilon:g}, lambda={lam:g}", curve,
                     lower_is_better=True, margin=LOSS_MARGIN * abs(scale),
                     why=LOSS_WHY + f" ({scale:.4g})")


def small_lambda_rises(runs: pd.DataFrame, panel: str, epsilon: float) -> Verdict:
    """For every lambda <= 0.05 accuracy is higher at the largest T than at the smallest."""
    sel = ditto_at(runs, panel, epsilon)
    parts = []
    for lam in sorted(sel.loc[sel["lam"] <= 0.05, "lam"].unique()):
        curve = _by_rounds(sel[np.isclose(sel["lam"], lam)], "accuracy")
        first, last = min(curve), max(curve)
        parts.append((f"lambda={lam:g}", Comparison(
            "test accuracy", f"T={last}", f"T={first}", "greater", ACCURACY_MARGIN,
            ACCURACY_WHY).judge(curve[last], curve[first], trivial=CHANCE)))
    return combine(parts) if parts else _no_runs("a lambda <= 0.05")


def large_lambda_peaks(runs: pd.DataFrame, panel: str, epsilon: float) -> Verdict:
    """For every lambda >= 0.5 accuracy rises then falls: its best T lies inside the grid."""
    sel = ditto_at(runs, panel, epsilon)
    parts = [(f"lambda={lam:g}", _interior(
        "test accuracy", _by_rounds(sel[np.isclose(sel["lam"], lam)], "accuracy"),
        lower_is_better=False, margin=ACCURACY_MARGIN, why=ACCURACY_WHY, trivial=CHANCE))
        for lam in sorted(sel.loc[sel["lam"] >= 0.5, "lam"].unique())]
    return combine(parts) if parts else _no_runs("a lambda >= 0.5")


def smaller_lambda_fairer(runs: pd.DataFrame, panel: str, epsilon: float) -> Verdict:
    """Per seed, the Spearman correlation of lambda and the std (mean over T) over the
    lambda grid is strong and positive."""
    sel = ditto_at(runs, panel, epsilon)
    table = sel.groupby(["seed", "lam"])["fairness"].mean().unstack("lam")
    rho = table.apply(lambda row: pd.Series(row.index).corr(pd.Series(row.to_numpy()),
                                                            method="spearman"), axis=1)
    return Comparison("Spearman correlation of lambda and the std of training losses "
                      "(mean over T)", "measured", "no correlation", "greater", RHO_MARGIN,
                      rho_why(table.shape[1])).judge(rho, 0 * rho)


def fairness_wave(runs: pd.DataFrame, panel: str, epsilon: float) -> Verdict:
    """Fig. 6(b): the std of training losses (mean over lambda in (0, 1)) first rises,
    then falls, then rises again in T. The peak and the trough are read off the mean
    curve (peak inside the grid, trough after it and before the last T); each of the
    three moves must exceed :data:`FAIRNESS_MARGIN` of the curve's mean std."""
    sel = ditto_at(runs, panel, epsilon)
    sel = sel[(sel["lam"] > 0) & (sel["lam"] < 1)]
    curve = _by_rounds(sel, "fairness")
    ts = sorted(curve)
    if len(ts) < 4:
        return Verdict(NOT_RUN, f"the T grid {ts} has fewer than four points: it cannot "
                       "show a rise, a fall and a second rise")
    means = {t: float(curve[t].mean()) for t in ts}
    peak = max(ts[1:-2], key=means.__getitem__)
    trough = min([t for t in ts[:-1] if t > peak], key=means.__getitem__)
    margin = FAIRNESS_MARGIN * float(np.mean(list(means.values())))
    why = FAIRNESS_WHY + " (of the curve's mean std)"

    def step(a: int, b: int, direction: str) -> Verdict:
        return Comparison("std of training losses", f"T={b}", f"T={a}",
                          direction, margin, why).judge(curve[b], curve[a])  # type: ignore[arg-type]

    return combine([("degrades first", step(ts[0], peak, "greater")),
                    ("then improves", step(peak, trough, "less")),
                    ("degrades again", step(trough, ts[-1], "greater"))])


def optimal_lambda_falls(runs: pd.DataFrame, panel: str, epsilon: float) -> Verdict:
    """Fig. 7(a): per seed, the lambda in [0, 1] with the lowest std falls as T grows; a
    part that reads an optimum on an open edge of the grid (:func:`lambda_edges`) is not
    testable."""
    sel = ditto_at(runs, panel, epsilon)
    per_t, edges = {}, {}
    for t, g in sel.groupby("rounds"):
        table = g.groupby(["seed", "lam"])["fairness"].mean().unstack("lam")
        index, edge = optima(table, lower_is_better=True,
                             open_edges=lambda_edges([float(lam) for lam in table.columns]))
        per_t[float(t)] = index
        edges[float(t)] = on_open_edge(f"at T={int(t)} the fairness-optimal lambda",
                                       [float(lam) for lam in table.columns], index, edge,
                                       "lambda")
    return falls_along("grid index of the fairness-optimal lambda in [0, 1]", per_t,
                       STEP_MARGIN, STEP_WHY, lambda t: f"T={t:g}", edges)


def optimal_rounds_rise(runs: pd.DataFrame, panel: str, epsilon: float) -> Verdict:
    """Fig. 7(b): per seed, the T with the lowest loss rises as lambda falls (falls as
    lambda grows); a part that reads an optimum on an open edge of the T grid (its
    largest T, and its smallest unless that is T = 1, a bound) is not testable."""
    sel = ditto_at(runs, panel, epsilon)
    sel = sel[sel["lam"] > 0]
    per_lam, edges = {}, {}
    for lam, g in sel.groupby("lam"):
        table = g.groupby(["seed", "rounds"])["loss"].mean().unstack("rounds")
        rounds = [float(t) for t in table.columns]
        index, edge = optima(table, lower_is_better=True, open_edges=(min(rounds) > 1, True))
        per_lam[float(lam)] = index
        edges[float(lam)] = on_open_edge(f"at lambda={lam:g} the loss-optimal T", rounds,
                                         index, edge, "T")
    return falls_along("grid index of the loss-optimal T", per_lam, STEP_MARGIN, STEP_WHY,
                       lambda lam: f"lambda={lam:g}", edges)


FIG34_SOURCE = "Section VI-A, Figs. 3 and 4"


LOST = " (its symbols lost from the text we have)"
"""Said after where a quoted passage is when the text dropped its symbols (epsilon,
lambda, T and their values): the words around them are quoted as they are."""


BEST_WORDS = ("DP-Ditto (with under , or under ) provides the best accuracy and fairness "
              "compared to the privacy-enhanced benchmarks (i.e., FedAMP, pFedMe, APPLE, and "
              "FedALA)", FIG34_SOURCE + LOST)
"""The paper's sentence of Figures 3 and 4: DP-Ditto best in accuracy and fairness."""


FIG34_WORDS = {
    "ditto-best-accuracy": (BEST_WORDS,),
    "ditto-best-fairness": (BEST_WORDS,),
    "smaller-lambda-at-smaller-eps": ((
        "the testing accuracy and fairness of DP-Ditto can be maintained even under high "
        "privacy requirements (e.g., ). This is achieved by configuring a smaller when is "
        "smaller (i.e., is higher)", FIG34_SOURCE + LOST),),
    "baselines-degrade": ((
        "By contrast, the benchmarks degrade significantly when is small (e.g., ) and/or is "
        "large because of their susceptibility to the DP noises.", FIG34_SOURCE + LOST),),
    "baselines-fall-in-T": ((
        "As grows, the testing accuracy decreases under FedALA and FedAMP", FIG34_SOURCE + LOST),),
    "apple-peaks-in-T": ((
        "As grows, the testing accuracy ... increases when and then decreases under APPLE.",
        FIG34_SOURCE + LOST),),
}
"""The paper's words each claim of Figures 3 and 4 tests (``(words, where)`` passages)."""


PFEDME_WORDS = ("Moreover, the testing accuracy of pFedMe decreases under the CNN model on the "
                "FMNIST and CIFAR10 datasets.", FIG34_SOURCE)
"""Added to the falling baselines' words on a CNN panel, where the paper names pFedMe."""


HEADLINE_WORDS = ("DP-Ditto can surpass the DP-perturbed versions of the state-of-the-art PFL "
                  "models, such as FedAMP, pFedMe, APPLE, and FedALA, by over in fairness and "
                  "in accuracy.", "Abstract (its numbers lost from the text we have)")
"""The headline, as the abstract has it."""


FIG5_WORDS = {
    "approaches-noiseless": ((
        "Figs. 5(a)\u20135(d) show that the training loss decreases and eventually approaches "
        "the case with no DP (i.e., ), as increases.", "Section VI-B, Fig. 5" + LOST),),
    "critical-T": ((
        "However, when both and are small, the training loss of PL decreases initially due "
        "to the benefits of generalization brought from FL. Once exceeds a certain critical "
        "value, the accumulated impact of the DP noises outweighs the benefits of "
        "generalization, leading to a degradation in PL performance.",
        "Section VI-B, Fig. 5" + LOST),),
}
"""The paper's words each claim of Figure 5 tests."""


FIG6_ACCURACY_WORDS = ("Fig. 6(a) shows the model accuracy increases with when , but "
                       "increases first and then decreases when .",
                       "Section VI-C, Fig. 6(a)" + LOST)
"""Figure 6(a)'s sentence: accuracy in T for small and for large lambda."""


LAMBDA_WORDS = {
    "small-lambda-rises": (FIG6_ACCURACY_WORDS,),
    "large-lambda-peaks": (FIG6_ACCURACY_WORDS,),
    "smaller-lambda-fairer": ((
        "The PL model with a smaller offers better fairness.",
        "Section VI-C, Fig. 6(b)" + LOST),),
    "fairness-degrades-improves-degrades": ((
        "The fairness of the PL models first degrades and then improves, and then degrades "
        "again as rises.", "Section VI-C, Fig. 6(b)" + LOST),),
    "optimal-lambda-falls": ((
        "Fig. 7(a) shows that the optimal decreases as increases.",
        "Section VI-C, Fig. 7(a)" + LOST),),
    "optimal-T-rises": ((
        "Given , the training loss decreases as decreases. Moreover, the optimal increases "
        "as decreases.", "Section VI-C, Fig. 7(b)" + LOST),),
}
"""The paper's words each claim of Figures 6 and 7 tests."""


CIFAR_WORDS = ("We compare the accuracy and fairness between the proposed DP-Ditto and the "
               "benchmarks, ... under different values (i.e., , ) and datasets (i.e., MNIST, "
               "FMNIST, and CIFAR10).", "Section VI-A" + LOST)
"""The comparison's sentence naming CIFAR-10 among its datasets."""


THRESHOLDS = ("the sentence's thresholds on lambda are lost from the text we have; the claim "
              "reads 'small' as lambda <= 0.05 and 'large' as lambda >= 0.5, the chapter's "
              "reading of the grid")
"""Said of the Figure 6(a) claims: where their statement is the chapter's reading."""


TUNED_LAMBDA = ("the sentence gives DP-Ditto one lambda per epsilon, its values lost from "
                "the text we have; the claim reads DP-Ditto at the lambda of the grid with "
                "the best accuracy (mean over T), the chapter's reading of 'adapted to the DP "
                "perturbation', each seed at the lambda the other seeds' runs choose (the "
                "runs hold no validation split, and no run is judged at a lambda chosen on "
                "its own test accuracy); the grid holds the method's limits, lambda = 0 (the "
                "local models) and lambda = 1 (DP-FedAvg), so that a best lambda on an edge is "
                "a bound of the method, not the end of a grid")
"""Said of the claims that read DP-Ditto at its tuned lambda."""


RENAMED = ("its id named the model the quick tier ran ({old}); the claim is the paper's on "
           "{paper}, so the id names that, and a tier that runs another model says so in "
           "the evidence")


ACCURACY_KEYS = ("ditto-best-accuracy", "baselines-degrade", "baselines-fall-in-T",
                 "apple-peaks-in-T", "small-lambda-rises", "large-lambda-peaks")
"""The claims (by the key in their id) whose margin is one of test accuracy: their
evidence says what the accuracy resolves (:func:`accuracy_resolution`)."""


def _compares_accuracy(claim_id: str) -> bool:
    return any(f"-{key}" in claim_id for key in ACCURACY_KEYS)


Sizes = Mapping[str, Sequence[int]]
"""Per panel, each client's number of test examples
(:func:`fedlib.papers.dpditto.readouts.test_sizes`)."""


def _joined(*notes: str | None) -> str:
    return "; ".join(note for note in notes if note)


def _compare_claims(sheet: ClaimSheet, runs: pd.DataFrame, setup: DittoSetup,
                    panel: str, sizes: Sizes | None = None) -> None:
    """The claims of Figures 3 and 4 (and the headline) on one of the paper's panels."""
    used = read_panel(panel, setup.compare_panels)
    name = _label(panel)
    old = used if used and used != panel else None
    renamed = RENAMED.format(old=f"fig3-4-{old}-...", paper=name) if old else ""
    resolution = accuracy_resolution(sizes.get(used) if sizes and used else None)
    texts = {
        "ditto-best-accuracy": (
            f"{name}: DP-Ditto (lambda tuned) is more accurate than each of DP-FedAMP, "
            "DP-pFedMe, DP-APPLE and DP-FedALA at both epsilons (mean over T)",
            _joined("the comparison included DP-FedAvg, which the paper does not compare "
                    "with (it is shown beside the claim now)", TUNED_LAMBDA)),
        "ditto-best-fairness": (
            f"{name}: DP-Ditto (lambda tuned) has a lower std of personal training losses "
            "than each of DP-FedAMP, DP-pFedMe, DP-APPLE and DP-FedALA at both epsilons "
            "(mean over T)",
            _joined("the comparison included DP-FedAvg and Local, which the paper does not "
                    "compare with (they are shown beside the claim now)", TUNED_LAMBDA)),
        "smaller-lambda-at-smaller-eps": (
            f"{name}: the tuned lambda is smaller at the smaller epsilon",
            "before: the tuned lambdas were read on the grid in (0, 1), whose lowest value "
            "was chosen at every seed, an open edge; now the grid holds the method's limits "
            "lambda = 0 (the local models) and lambda = 1 (DP-FedAvg), whose runs exist, so "
            "every tuned lambda lies on the grid or at a bound of the method"),
        "baselines-degrade": (
            f"{name}: every baseline is less accurate at the smaller epsilon",
            "the quoted sentence has the benchmarks degrade when epsilon is small and/or T "
            "is large; this claim reads the epsilon part, and the claims on the baselines "
            "in T (baselines-fall-in-T, apple-peaks-in-T) the T part, for the methods the "
            "paper names there"),
        "baselines-fall-in-T": (
            f"{name}: the accuracy of " + ", ".join(f"DP-{m}" for m in FALLING[panel])
            + " falls as T grows, at both epsilons", None),
        "apple-peaks-in-T": (
            f"{name}: DP-APPLE's accuracy first rises, then falls as T grows, at both "
            "epsilons", None),
    }
    for key, (text, restated) in texts.items():
        claim_id = f"fig3-4-{panel}-{key}"
        note = _joined(restated, renamed) if restated is not None else ""
        words = FIG34_WORDS[key]
        if key == "baselines-fall-in-T" and "pFedMe" in FALLING[panel]:
            words = (*words, PFEDME_WORDS)
        quote = quoted(*words)
        if used is None:
            sheet.not_run(claim_id, text, _why_not(panel, setup), paper_value=FIG34_SOURCE,
                          restated=note, quote=quote)
            continue
        verdict = _judge_comparison(key, runs, used, panel, setup.compare_epsilons)
        sheet.judged(claim_id, verdict, text, paper_value=FIG34_SOURCE, restated=note,
                     context=_context(panel, used, "the method comparison"), quote=quote,
                     resolution=resolution if _compares_accuracy(claim_id) else "")
    text = (f"{name}: DP-Ditto beats each of DP-FedAMP, DP-pFedMe, DP-APPLE and DP-FedALA "
            "by over 32.71% in fairness (variance of the training losses) and 9.66% in "
            "accuracy")
    restated = _joined(
        "it read fairness as the std of the training losses, where the paper's Definition 1 "
        "measures it by their variance (32.71% of the variance is about 18% of the std), and "
        "counted DP-FedAvg among the baselines, where the paper names four (DP-FedAvg is "
        "shown beside the claim now)", TUNED_LAMBDA, renamed)
    quote = quoted(HEADLINE_WORDS)
    if used is None:
        sheet.not_run(f"headline-{panel}-gains", text, _why_not(panel, setup),
                      paper_value=PAPER_GAIN_SOURCE, restated=restated, quote=quote)
        return
    lo, hi = sorted(setup.compare_epsilons)
    shown = headline_table(runs, used, (lo, hi))
    shown = shown[~shown["in the claim"]]
    extra = ("; shown, not part of the claim: " + ", ".join(
        f"DP-FedAvg eps={r.epsilon:g}: fairness {r._4:.1f}%, accuracy {r._5:.1f}%"
        for r in shown.itertuples())) if len(shown) else ""
    sheet.judged(f"headline-{panel}-gains", _with(headline(runs, used, (lo, hi)), extra),
                 text, paper_value=PAPER_GAIN_SOURCE, restated=restated,
                 context=_context(panel, used, "the method comparison"), quote=quote)


def _judge_comparison(key: str, runs: pd.DataFrame, used: str, panel: str,
                      epsilons: tuple[float, float]) -> Verdict:
    """The verdict of the Figure 3-4 claim ``key`` on the runs of panel ``used``."""
    lo, hi = sorted(epsilons)
    if key == "ditto-best-accuracy":
        return best_accuracy(runs, used, (lo, hi))
    if key == "ditto-best-fairness":
        return best_fairness(runs, used, (lo, hi))
    if key == "smaller-lambda-at-smaller-eps":
        return smaller_lambda(runs, used, lo, hi)
    if key == "baselines-degrade":
        return baselines_degrade(runs, used, lo, hi)
    if key == "baselines-fall-in-T":
        return baselines_fall(runs, used, FALLING[panel], (lo, hi))
    if key == "apple-peaks-in-T":
        return apple_peaks(runs, used, (lo, hi))
    raise ValueError(f"unknown Figure 3-4 claim {key!r}")


def _why_not(panel: str, setup: DittoSetup) -> str:
    if panel not in setup.panels:
        return NOT_RUN_CNN
    return (f"not run at this tier: it runs {_label(panel)} without the baselines or the "
            "lambda grid this claim reads")


def _fig5_claims(sheet: ClaimSheet, runs: pd.DataFrame, setup: DittoSetup,
                 panel: str) -> None:
    name, lam = _label(panel), setup.fig5_lambda
    eps_min = min(setup.epsilons)
    texts = {"approaches-noiseless": f"{name}: the personal training loss approaches the "
             "eps=inf curve as eps grows",
             "critical-T": f"{name}: at the smallest eps and small lambda the loss falls "
             "then rises past a critical T"}
    for key, text in texts.items():
        claim_id = f"fig5-{panel}-{key}"
        quote = quoted(*FIG5_WORDS[key])
        if panel not in setup.panels:
            sheet.not_run(claim_id, text, _why_not(panel, setup),
                          paper_value="Section VI-B, Fig. 5", quote=quote)
            continue
        verdict = (approaches_noiseless(runs, panel, lam, setup.epsilons)
                   if key == "approaches-noiseless"
                   else critical_rounds(runs, panel, eps_min, lam))
        sheet.judged(claim_id, verdict, text, paper_value="Section VI-B, Fig. 5",
                     context=f"lambda={lam:g}", quote=quote)


def _lambda_claims(sheet: ClaimSheet, runs: pd.DataFrame, setup: DittoSetup,
                   sizes: Sizes | None = None) -> None:
    panel = LAMBDA_PANEL
    used = read_panel(panel, setup.lambda_panels)
    name, eps = _label(panel), setup.fig6_epsilon
    rename = {k: RENAMED.format(old=f"fig{k[0]}-{used}-...", paper=name)
              if used and used != panel else "" for k in ("6", "7")}
    resolution = accuracy_resolution(sizes.get(used) if sizes and used else None)
    edges = ("before: the optima were compared wherever they lay on their grid; now a part "
             "that reads an optimum on an open edge of its grid ({edge}) is not testable, "
             "the optimum possibly lying beyond the grid")
    specs = (
        ("fig6", "small-lambda-rises", small_lambda_rises,
         f"{name}, eps={eps:g}: for small lambda (<= 0.05) accuracy rises with T",
         "Section VI-C, Fig. 6(a)", THRESHOLDS),
        ("fig6", "large-lambda-peaks", large_lambda_peaks,
         f"{name}, eps={eps:g}: for large lambda (>= 0.5) accuracy rises then falls in T",
         "Section VI-C, Fig. 6(a)", THRESHOLDS),
        ("fig6", "smaller-lambda-fairer", smaller_lambda_fairer,
         f"{name}, eps={eps:g}: smaller lambda gives a lower std of training losses",
         "Section VI-C, Fig. 6(b)", ""),
        ("fig6", "fairness-degrades-improves-degrades", fairness_wave,
         f"{name}, eps={eps:g}: as T rises the fairness of the personal models first "
         "degrades, then improves, then degrades again (std of training losses, mean over "
         "lambda in (0, 1))", "Section VI-C, Fig. 6(b)", ""),
        ("fig7", "optimal-lambda-falls", optimal_lambda_falls,
         f"{name}, eps={eps:g}: the fairness-optimal lambda in (0, 1] falls as T grows",
         "Section VI-C, Fig. 7(a)", edges.format(
             edge="its lowest lambda, where the limit lambda -> 0 is missing; lambda = 1 is "
             "a bound")),
        ("fig7", "optimal-T-rises", optimal_rounds_rise,
         f"{name}, eps={eps:g}: the loss-optimal T rises as lambda falls",
         "Section VI-C, Fig. 7(b)", edges.format(
             edge="its largest T, and its smallest unless that is T = 1, a bound")),
    )
    for fig, key, judge, text, source, note in specs:
        claim_id = f"{fig}-{panel}-{key}"
        renamed = "" if key == "fairness-degrades-improves-degrades" else rename[fig[-1]]
        restated = _joined(note, renamed)
        quote = quoted(*LAMBDA_WORDS[key])
        if used is None:
            sheet.not_run(claim_id, text, _why_not(panel, setup), paper_value=source,
                          restated=restated, quote=quote)
            continue
        sheet.judged(claim_id, judge(runs, used, eps), text, paper_value=source,
                     restated=restated, context=_context(panel, used, "the lambda grid"),
                     quote=quote,
                     resolution=resolution if _compares_accuracy(claim_id) else "")


def _bound_optimum(sheet: ClaimSheet, bound_curves: Mapping[float, tuple[int, np.ndarray]],
                   max_rounds: int) -> None:
    """Figure 2, the companion's reconstruction: T* per epsilon inside the search range
    1..``max_rounds`` and growing with epsilon. T = 1 is a bound of the search (an optimum
    there is one, and not interior: the claim fails); T* at ``max_rounds`` sits on the
    range's open edge (the search could go on), so the claim is not testable there."""
    optima_found = {eps: t_star for eps, (t_star, _) in bound_curves.items()}
    inner = {e: t for e, t in optima_found.items() if math.isfinite(e)}
    order = sorted(inner)
    text = ("The reconstructed convergence bound of the personal models (linear case) has an "
            "interior optimum T* (1-D search), which grows with epsilon")
    evidence = (f"T* per epsilon (search over 1..{max_rounds}): "
                + ", ".join(f"eps={e:g}: {t}" for e, t in optima_found.items()))
    about = {"paper_value": "Section IV, Fig. 2: the paper's bound has an optimum T* found "
             "by a 1-D search; its form is lost, so this reads the companion's "
             "reconstruction", "origin": "companion",
             "restated": "it was listed as the paper's claim, but it reads the companion's "
             "own reconstructed recursion (the paper's bound is lost), so it is a finding of "
             "the companion; a T* at the end of the search range is now not testable (the "
             "search could go on), where it failed before"}
    edge = [e for e, t in inner.items() if t >= max_rounds]
    if edge:
        sheet.judged("fig2-interior-optimum", Verdict(
            NOT_TESTABLE, "exact (no randomness): T* sits at the end of the search range, "
            f"an open edge (the search could go beyond {max_rounds}), at eps="
            + ", ".join(f"{e:g}" for e in edge) + f"; {evidence}"), text, **about)
        return
    sheet.exact("fig2-interior-optimum",
                all(1 < t < max_rounds for t in inner.values())
                and all(inner[a] <= inner[b] for a, b in zip(order, order[1:], strict=False)),
                text, evidence, **about)


def evaluate(runs: pd.DataFrame, setup: DittoSetup, scale: str,
             bound_curves: Mapping[float, tuple[int, np.ndarray]], max_rounds: int,
             test_sizes: Sizes | None = None) -> list[Claim]:
    """The claims of Figures 2-7 and the headline, each judged over seeds with a margin
    declared above; the same claim ids at every tier. Each claim of the paper carries the
    paper's words it tests (``quote``).

    Parameters
    ----------
    runs
        Every run of the chapter (:func:`fedlib.papers.dpditto.experiment.run`).
    setup
        The tier the runs come from.
    scale
        Its name (recorded with every claim).
    bound_curves, max_rounds
        T* and the curve of the reconstructed bound per epsilon, and the range
        1..max_rounds T* was searched over (:func:`fedlib.papers.dpditto.bound.bound_curves`).
    test_sizes
        Per panel, each client's number of test examples
        (:func:`fedlib.papers.dpditto.readouts.test_sizes`): what the accuracy margins'
        rationale says the metric resolves (:func:`accuracy_resolution`); None says they
        were not given.
    """
    runs = common_rounds(runs)
    sheet = ClaimSheet(PAPER, scale)
    _bound_optimum(sheet, bound_curves, max_rounds)
    for panel in COMPARE_PANELS:
        _compare_claims(sheet, runs, setup, panel, test_sizes)
    for panel in FIG5_PANELS:
        _fig5_claims(sheet, runs, setup, panel)
    _lambda_claims(sheet, runs, setup, test_sizes)
    sheet.not_run("fig3-6-cifar10-cnn", "CIFAR-10-CNN: the Figure 3-6 claims on this panel",
                  NOT_RUN_CNN + "; offline, CIFAR-10 is the JPEG proxy and is labelled so",
                  paper_value="Section VI, Figs. 3-6", quote=quoted(CIFAR_WORDS))
    return sheet.claims


LOW_SOURCE = ("; the budgets of the figure are lost from the text, and eps=1, the smallest of "
              "the inferred grid, is where the paper says the benchmarks degrade and DP-Ditto "
              "holds up")


LOW_SUFFIX = "-eps1"
"""Appended to the id of a claim judged at eps=1 alone."""


LOW_PAIR_SUFFIX = "-eps1-vs-10"
"""Appended to the id of a claim that compares eps=1 with eps=10."""


def _low_specs(panel: str, used: str, pair: tuple[float, float]
               ) -> list[tuple[str, str, Callable[[pd.DataFrame], Verdict], str]]:
    """(claim id, statement, judge, source) of every claim read at eps=1."""
    name, (lo, hi) = _label(panel), pair
    baselines = "DP-FedAMP, DP-pFedMe, DP-APPLE and DP-FedALA"
    fig34 = FIG34_SOURCE + LOW_SOURCE
    specs = [
        (f"fig3-4-{panel}-ditto-best-accuracy{LOW_SUFFIX}",
         f"{name}, eps={lo:g}: DP-Ditto (lambda tuned) is more accurate than each of "
         f"{baselines} (mean over T)", lambda r: best_accuracy(r, used, (lo,)), fig34),
        (f"fig3-4-{panel}-ditto-best-fairness{LOW_SUFFIX}",
         f"{name}, eps={lo:g}: DP-Ditto (lambda tuned) has a lower std of personal training "
         f"losses than each of {baselines} (mean over T)",
         lambda r: best_fairness(r, used, (lo,)), fig34),
        (f"fig3-4-{panel}-smaller-lambda-at-smaller-eps{LOW_PAIR_SUFFIX}",
         f"{name}: the tuned lambda is smaller at eps={lo:g} than at eps={hi:g}",
         lambda r: smaller_lambda(r, used, lo, hi), fig34),
        (f"fig3-4-{panel}-baselines-degrade{LOW_PAIR_SUFFIX}",
         f"{name}: every baseline is less accurate at eps={lo:g} than at eps={hi:g}",
         lambda r: baselines_degrade(r, used, lo, hi), fig34),
        (f"fig3-4-{panel}-baselines-fall-in-T{LOW_SUFFIX}",
         f"{name}, eps={lo:g}: the accuracy of "
         + ", ".join(f"DP-{m}" for m in FALLING[panel]) + " falls as T grows",
         lambda r: baselines_fall(r, used, FALLING[panel], (lo,)), fig34),
        (f"fig3-4-{panel}-apple-peaks-in-T{LOW_SUFFIX}",
         f"{name}, eps={lo:g}: DP-APPLE's accuracy first rises, then falls as T grows",
         lambda r: apple_peaks(r, used, (lo,)), fig34),
        (f"headline-{panel}-gains{LOW_SUFFIX}",
         f"{name}, eps={lo:g}: DP-Ditto beats each of {baselines} by over 32.71% in fairness "
         "(variance of the training losses) and 9.66% in accuracy",
         lambda r: headline(r, used, (lo,)), PAPER_GAIN_SOURCE + LOW_SOURCE),
    ]
    fig6 = [("small-lambda-rises", small_lambda_rises,
             "for small lambda (<= 0.05) accuracy rises with T", "Fig. 6(a)"),
            ("large-lambda-peaks", large_lambda_peaks,
             "for large lambda (>= 0.5) accuracy rises then falls in T", "Fig. 6(a)"),
            ("smaller-lambda-fairer", smaller_lambda_fairer,
             "smaller lambda gives a lower std of training losses", "Fig. 6(b)"),
            ("fairness-degrades-improves-degrades", fairness_wave,
             "as T rises the fairness of the personal models first degrades, then improves, "
             "then degrades again (std of training losses, mean over lambda in (0, 1))",
             "Fig. 6(b)")]
    specs += [(f"fig6-{panel}-{key}{LOW_SUFFIX}", f"{name}, eps={lo:g}: {text}",
               lambda r, judge=judge: judge(r, used, lo),
               f"Section VI-C, {fig}; the budget of the figure is lost from the text, eps=1 is "
               "the smallest of the inferred grid")
              for key, judge, text, fig in fig6]
    return specs


def low_epsilon_claims(runs: pd.DataFrame | None, setup: DittoSetup, scale: str,
                       not_run: str = "", test_sizes: Sizes | None = None) -> list[Claim]:
    """The claims of Figures 3, 4 and 6 (and the headline) on the paper's MNIST model at
    eps=1: ``setup`` is the tier's
    :func:`~fedlib.papers.dpditto.paper_tier.low_epsilon_setup`, ``runs`` its runs on
    :func:`~fedlib.papers.dpditto.paper_tier.low_epsilon_panel` (None where they were not
    run: every claim is then NOT-RUN with the reason ``not_run``). The same claim ids at
    every tier. ``test_sizes`` (per panel, each client's test examples) gives what the
    accuracy margins' rationale says the metric resolves. Findings of the companion, they
    quote no sentence of the paper."""
    if runs is None and not not_run:
        raise ValueError("give the runs, or the reason they were not run (not_run)")
    used = low_epsilon_panel(setup)
    panel = LAMBDA_PANEL
    if runs is not None:
        runs = common_rounds(runs)
    context = _context(panel, used, "the method comparison and the lambda grid")
    resolution = accuracy_resolution(test_sizes.get(used) if test_sizes else None)
    sheet = ClaimSheet(PAPER, scale)
    # The companion's readings: the paper states these claims at budgets its surviving
    # text does not give, and eps=1 is this companion's choice, so they are findings of the
    # companion beside the paper's own claims, not tallied with them.
    for claim_id, text, judge, source in _low_specs(panel, used, setup.compare_epsilons):
        if runs is None:
            sheet.not_run(claim_id, text, not_run, paper_value=source, origin="companion")
            continue
        sheet.judged(claim_id, judge(runs), text, paper_value=source, context=context,
                     origin="companion",
                     resolution=resolution if _compares_accuracy(claim_id) else "")
    return sheet.claims


def low_epsilon_effect(claims: Sequence[Claim], low: Sequence[Claim]) -> pd.DataFrame:
    """Each eps=1 claim beside the claim it re-reads at the chapter's inferred budgets:
    the two ids and verdicts, and whether the verdict moved."""
    by_id = {c.claim_id: c for c in claims}
    rows = []
    for claim in low:
        base = claim.claim_id.removesuffix(LOW_PAIR_SUFFIX).removesuffix(LOW_SUFFIX)
        other = by_id.get(base)
        rows.append({"claim at eps=1": claim.claim_id, "verdict at eps=1": claim.status,
                     "claim at the inferred budgets": base if other else "(none)",
                     "verdict there": other.status if other else "",
                     "moved": bool(other) and other.status != claim.status})
    return pd.DataFrame(rows)


def low_epsilon_summary(effect: pd.DataFrame, runs: pd.DataFrame | None = None,
                        setup: DittoSetup | None = None) -> str:
    """One paragraph on what reading the claims at eps=1 does to them (from
    :func:`low_epsilon_effect`), and, given the eps=1 runs and their setup, how much the
    noise costs the global model (DP-FedAvg) there."""
    if (effect["verdict at eps=1"] == NOT_RUN).all():
        return ("No claim is read at eps = 1 at this tier, so the claims at the inferred "
                "budgets stand alone; the quick tier reads them at eps = 1.")
    moved = effect[effect["moved"]]
    kept = effect[~effect["moved"] & (effect["verdict there"] != "")]
    parts = []
    if len(moved):
        parts.append("at eps = 1 " + "; ".join(
            f"`{r['claim at the inferred budgets']}` goes from {r['verdict there']} to "
            f"{r['verdict at eps=1']}" for _, r in moved.iterrows()))
    if len(kept):
        counts = kept["verdict at eps=1"].value_counts()
        parts.append(f"the other {len(kept)} keep their verdict ("
                     + ", ".join(f"{n} {status}" for status, n in counts.items()) + ")")
    text = "Of the claims re-read, " + "; ".join(parts) + "." if parts else ""
    if runs is not None and setup is not None:
        panel = low_epsilon_panel(setup)
        acc = {eps: comparison(runs, panel, eps)
               .assign(method=lambda f: f["method"].str.replace(r" \(.*", "", regex=True))
               .groupby("method")["accuracy"].mean() for eps in setup.compare_epsilons}
        lo, hi = setup.compare_epsilons
        chosen = held_out_lambdas(runs, panel, lo)
        near_local = (", a personal model held close to its local one"
                      if max(chosen.values()) <= 0.05 else "")
        text += (f" The noise matters at eps = {lo:g}: DP-FedAvg, the global model, reaches "
                 f"{acc[lo]['DP-FedAvg']:.3f} there against {acc[hi]['DP-FedAvg']:.3f} at eps "
                 f"= {hi:g}, so a verdict that stays the same is not owed to noise too small "
                 f"to matter. DP-Ditto's lambda at eps = {lo:g}, chosen for each seed on "
                 f"the other seeds' runs, is {_lambdas_text(chosen)} "
                 f"({_lambdas_text(held_out_lambdas(runs, panel, hi))} at eps = {hi:g})"
                 f"{near_local}: its "
                 f"accuracy is {acc[lo]['DP-Ditto']:.3f}, Local's {acc[lo]['Local']:.3f} "
                 "(means over T and seeds).")
    return text.strip()


def _lambdas_text(chosen: dict[int, float]) -> str:
    """Each seed's held-out lambda in words: one value on every seed, or per value its seeds."""
    values = sorted(set(chosen.values()))
    if len(values) == 1:
        return f"{values[0]:g} on every seed"
    return "; ".join(f"{v:g} on seed(s) " + ", ".join(str(s) for s, lam in chosen.items()
                                                      if lam == v) for v in values)


NOISE_CLAIM = "baselines-noise-equals-dp-ditto"


def noise_claim(verdict: Verdict, scale: str) -> Claim:
    """The companion's check that every DP method adds DP-Ditto's noise to its uploads
    (:func:`fedlib.papers.dpditto.noise_probe.verdict`)."""
    sheet = ClaimSheet(PAPER, scale)
    return sheet.judged(
        NOISE_CLAIM, verdict,
        "At the same (eps, delta), C and T, every DP baseline (FedAMP, pFedMe, APPLE with its "
        "core models, FedALA, and DP-FedAvg) adds to what it uploads Gaussian noise of "
        "DP-Ditto's standard deviation",
        paper_value="Section VI-A: the benchmarks' uploads are perturbed by DP noise \"for "
        "fair comparisons\"; that it is DP-Ditto's noise is the companion's reading",
        origin="companion")


def noise_sentence(claim: Claim) -> str:
    """What the noise check does to the method comparison's claims."""
    if claim.status == "HOLDS":
        return (f"**{claim.status}**: every method's noise has DP-Ditto's std (within 5%, "
                "each seed's mean ratio; the sigma each hands its noise step is DP-Ditto's "
                "exactly). The comparison's verdicts are not an artefact of unequal noise: "
                "they stand as judged.")
    return (f"**{claim.status}**: {claim.evidence}. Where a baseline's noise differs from "
            "DP-Ditto's, its comparison with DP-Ditto is not at equal privacy, and the "
            "verdicts of the Figure 3-4 claims and the headline that involve it must be read "
            "with that in mind.")


def budget_sensitivity(runs: pd.DataFrame, setup: DittoSetup) -> str:
    """How much the two compared budgets of ``setup`` change each method's accuracy on its
    first compared panel (mean over T and seeds), and what the local models reach: one
    sentence for the chapter."""
    panel = setup.compare_panels[0]
    lo, hi = sorted(setup.compare_epsilons)
    runs = common_rounds(runs)

    def accuracy(eps: float) -> pd.Series:
        frame = comparison(runs, panel, eps)
        frame = frame.assign(method=frame["method"].str.replace(r" \(.*", "", regex=True))
        return frame.groupby("method")["accuracy"].mean()

    a, b = accuracy(lo), accuracy(hi)
    moves = (a - b).abs()
    personal = moves.drop(["DP-FedAvg", "Local"], errors="ignore")
    return (f"On {_label(panel)} at this tier, going from eps = {hi:g} to {lo:g} moves the "
            f"accuracy of DP-Ditto and the four baselines by at most {personal.max():.4f} "
            f"({personal.idxmax()}), that of DP-FedAvg, the global model, by "
            f"{moves.get('DP-FedAvg', float('nan')):.4f}; the local models, which see no "
            f"noise, reach {a['Local']:.3f}, against DP-Ditto's {a['DP-Ditto']:.3f} (mean "
            "over T and seeds).")
