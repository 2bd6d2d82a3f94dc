"""Bietti et al. (2022): read-outs of finished runs, the chapter's tables and its claims.

:func:`best_over_steps` turns runs into the curves the paper plots (the best
step size at each iteration, per seed); :func:`tradeoff` is the accuracy-privacy
table of Figure 2; :func:`setting_verdicts` reads the Figure 1a claims at every
setting of the settings sweep (one run each, a robustness table); :func:`evaluate`
judges every claim of the chapter over the repeats (Figures 1a, 1c, 1d, 2, the
epsilon Figure 1 prints, and the Stack Overflow claims, which are not run). Every
comparison is declared with its margin before a result is read
(:mod:`fedlib.verdicts.compare`), with what the metric resolves beside it. Every arm is
read at an optimum over a grid, its best step size (each curve is the best over the step
sizes run) and, where it is the best of a set of personalization levels, its best level:
the open-edge rule (:func:`edge_gated`) applies to both, since an optimum on an open end
of its grid may have a better one beyond it (:func:`level_edge`, :func:`step_edge_reasons`).
The tables the chapter shows (grids, data, the clipping bound, privacy) are here too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.papers.ppsgd.experiment import (
    EMNIST_FIGURE_ALPHA_Q,
    FIGURE_CLIP,
    PAPER_SETTING,
    SCRIPT_SETTING,
    SYNTHETIC_FIGURE_ALPHA_Q,
    SYNTHETIC_INSTANCE,
    PpsgdSetup,
    synthetic_task,
)
from fedlib.papers.ppsgd.paper_tier import (
    SMALL_STEPS,
    SMALL_STEPS_SIGMAS,
    SMALLEST_STEP,
    SMALLEST_STEP_LEVELS,
    SMALLEST_STEP_SIGMA,
)
from fedlib.papers.ppsgd.readouts import (
    FIGURE1A_PANEL_SIGMAS,
    LOCAL_WINS_FROM,
    _at,
    _curve,
    _fmt_alpha,
    best_arm,
    best_over_steps,
    figure1_epsilons,
    final,
    iterations_run,
    mean_over_seeds,
    seeds_of,
    smallest_step_peak,
    step_edge,
    synthetic_final,
    values,
    with_seed,
)
from fedlib.verdicts.claims import Claim, ClaimSheet
from fedlib.verdicts.compare import (
    HOLDS,
    NOT_LEARNED,
    NOT_RUN,
    NOT_TESTABLE,
    WORSE_THAN_TRIVIAL,
    Comparison,
    Trivial,
    Verdict,
    any_of,
    combine,
)

PAPER = "ppsgd"


RISK_MARGIN = math.log10(1.1)
"""Smallest difference in log10 excess risk that counts: 10%, about what one of the
paper's log-scale Figure 1a panels shows apart by eye."""


RISK_RESOLUTION = ("the excess risk is a closed form of the model's parameters, with no "
                   "test sample: it resolves to float32 rounding, far below any margin here")
"""What the excess risk resolves: a claim made of several comparisons, whose evidence lists
each by its numbers without its margin's rationale, closes its evidence with it."""


RISK_WHY = ("log10(1.1): a 10% difference in excess risk, what a log-scale panel of the "
            "paper resolves (the paper's terms); the excess risk is a closed form of the "
            "model's parameters, with no test sample, so the metric itself resolves far "
            "finer (float32 rounding)")


PLATEAU_FACTOR = 2.0
"""Figure 1a's plateau: global learning at most halves its excess risk over the second
half of training, and ends more than this factor above the best finite level."""


ACCURACY_MARGIN = 0.01
"""Smallest difference in test accuracy that counts: one point, about what the paper's
accuracy panels resolve (:func:`accuracy_why` says what the metric resolves)."""


VERY_POOR_MARGIN = 0.2
"""Figure 1d's "very poorly": local-only at least 20 points below the best level."""


def accuracy_resolution(test_digits: int | None) -> str:
    """What the test accuracy (pooled over the test digits) resolves, in a clause."""
    if not test_digits:
        return "what the metric resolves is not given here (no count of test digits)"
    return (f"the metric, accuracy pooled over {test_digits:,} test digits, moves by "
            f"{1 / test_digits:.5f} per digit, and its binomial standard error is at most "
            f"{0.5 / math.sqrt(test_digits):.4f}")


def accuracy_why(test_digits: int | None = None) -> str:
    """Why :data:`ACCURACY_MARGIN`, with what the metric resolves on ``test_digits``."""
    return ("one point of accuracy, what the paper's accuracy panels resolve (the paper's "
            "terms); " + accuracy_resolution(test_digits))


def very_poor_why(test_digits: int | None = None) -> str:
    """Why :data:`VERY_POOR_MARGIN`, with what the metric resolves on ``test_digits``."""
    return ("20 points: the paper's 'perform very poorly' (the paper's terms); "
            + accuracy_resolution(test_digits))


ACCURACY_WHY = accuracy_why()
""":func:`accuracy_why` where the number of test digits is not given."""


CHANCE = Trivial("chance for 10 digits", 0.1, higher_is_better=True, tolerance=0.01)
"""EMNIST's trivial baseline: guessing among 10 digits. The tolerance is one point, as
:data:`ACCURACY_MARGIN` (:func:`accuracy_resolution` gives the binomial standard error
of the build's test digits)."""


EPSILON_TOLERANCE = 0.05
"""Relative difference within which an accountant's epsilon agrees with a printed
value: the two significant digits a panel's axis shows."""


def judged_at_chance(comparison: Comparison, a: pd.Series, b: pd.Series,
                     trivial: Trivial) -> Verdict:
    """:meth:`Comparison.judge` with ``trivial``; with one repeat (where the judge can only
    say NOT-RUN) every run of both arms within the baseline's tolerance is already
    NOT-TESTABLE: ranking chance against chance decides nothing at any number of repeats."""
    verdict = comparison.judge(a, b, trivial=trivial)
    if verdict.status != NOT_RUN or not (len(a) and len(b)):
        return verdict
    runs = pd.concat([a, b])
    bound = trivial.value + (trivial.tolerance if trivial.higher_is_better
                             else -trivial.tolerance)
    at = (runs <= bound).all() if trivial.higher_is_better else (runs >= bound).all()
    if not at:
        return verdict
    return Verdict(NOT_TESTABLE, f"every run of both arms is within {trivial.tolerance:g} of "
                   f"{trivial.name} ({trivial.value:g}); " + verdict.evidence)


FIGURE1A_CLAIM_IDS = ("fig1a-global-fastest-early", "fig1a-global-plateau",
                      "fig1a-smaller-alpha-later", "fig1a-local-wins-large-noise")


def figure1a_measures(curves: pd.DataFrame, clip: float = FIGURE_CLIP) -> dict:
    """What the Figure 1a claims read off the best-over-steps curves at clipping norm ``clip``.

    Per claim: whether it holds, and the numbers behind the verdict.
    """
    curves = curves[curves["clip"] == clip]
    sigmas = sorted(curves["noise_multiplier"].unique())
    alphas = sorted(curves["alpha_q"].unique())
    iterations = int(curves["iteration"].max())
    early = max(1, iterations // 30)

    # 1. Global learning is fastest at the start, in every panel.
    early_best = []
    for sigma in sigmas:
        at_early = {a: _curve(curves, sigma, a).loc[early] for a in alphas}
        early_best.append((sigma, min(at_early, key=at_early.get)))
    wins = [math.isinf(a) for _, a in early_best]

    # 2. Global learning plateaus even without noise: it stops improving and
    #    ends above the best personalized level.
    glob = _curve(curves, 0.0, math.inf)
    half, last = glob.loc[iterations // 2], glob.loc[iterations]
    personal = {a: _curve(curves, 0.0, a).loc[iterations] for a in alphas if not math.isinf(a)}
    best_personal_alpha = min(personal, key=personal.get)
    best_personal = personal[best_personal_alpha]

    # 3. Smaller alpha is better later: at the end, in every panel, the best
    #    level is finite and global-only is beaten.
    best_final = []
    for sigma in sigmas:
        finals = {a: _curve(curves, sigma, a).loc[iterations] for a in alphas}
        best_final.append((sigma, min(finals, key=finals.get)))

    # 4. With large noise, local learning wins after about 200 iterations.
    sigma_max = max(sigmas)
    local = _curve(curves, sigma_max, 0.0)
    others = pd.concat(
        [_curve(curves, sigma_max, a) for a in alphas if a != 0.0], axis=1
    ).min(axis=1)
    local_best = local <= others
    # First iteration from which local-only stays the best to the end.
    crossover = None
    if local_best.iloc[-1]:
        not_best = local_best[~local_best]
        crossover = int(not_best.index.max()) + 1 if len(not_best) else int(local_best.index.min())
    return {
        "iterations": iterations, "early": early, "sigma_max": sigma_max,
        "early_best": early_best, "early_wins": sum(wins), "panels": len(wins),
        "global_half": half, "global_last": last,
        "best_personal_alpha": best_personal_alpha, "best_personal": best_personal,
        "best_final": best_final, "local_last": local.iloc[-1], "others_last": others.iloc[-1],
        "crossover": crossover,
        "holds": {
            "fig1a-global-fastest-early": all(wins),
            "fig1a-global-plateau": last > 0.5 * half and last > 2.0 * best_personal,
            "fig1a-smaller-alpha-later": all(not math.isinf(a) for _, a in best_final),
            "fig1a-local-wins-large-noise": crossover is not None and crossover <= iterations,
        },
    }


def starting_risk(task: AdditiveSyntheticTask) -> float:
    """Excess risk of the starting point w = theta_i = 0: the synthetic task's trivial
    baseline, (1/N) sum_i ||theta*_i||^2_Sigma."""
    return float(np.mean(np.sum(task.feature_variances() * task.theta_star() ** 2, axis=1)))


def _risk_trivial(risk0: float | None) -> Trivial | None:
    if risk0 is None:
        return None
    return Trivial("the starting excess risk (w = theta = 0)", math.log10(risk0),
                   higher_is_better=False)


def _panels(curves: pd.DataFrame, clip: float) -> tuple[pd.DataFrame, list[float]]:
    curves = curves[curves["clip"] == clip]
    present = set(curves["noise_multiplier"])
    return curves, [s for s in FIGURE1A_PANEL_SIGMAS if s in present]


def _risk_arms(curves: pd.DataFrame, sigma: float, iteration: int | None = None,
               alphas: Sequence[float] = SYNTHETIC_FIGURE_ALPHA_Q) -> dict[str, pd.Series]:
    return {_fmt_alpha(a): values(curves, "excess_risk", sigma, a, iteration, log=True)
            for a in alphas}


def _no_panels(sheet: ClaimSheet, clip: float) -> None:
    reason = (f"the runs hold none of the Figure 1a panels (sigma in "
              f"{', '.join(f'{s:g}' for s in FIGURE1A_PANEL_SIGMAS)}, C = {clip:g})")
    for claim_id, text in FIGURE1A_TEXTS.items():
        sheet.not_run(claim_id, text, reason, restated=FIGURE1A_RESTATED.get(claim_id, ""))


FIGURE1A_TEXTS = {
    "fig1a-global-fastest-early":
        "in every panel of Figure 1a (sigma = 0, 10, 100, 1000; C = 1), alpha*Q = inf has "
        "the lowest excess risk of the five drawn levels (0, 0.3, 1, 3, inf) early, at "
        "iteration T/30",
    "fig1a-global-plateau":
        f"at sigma = 0, alpha*Q = inf stops improving (it at most halves its excess risk "
        f"from T/2 to T) and ends more than {PLATEAU_FACTOR:g}x above the best finite level",
    "fig1a-smaller-alpha-later":
        "at the last iteration, in every panel of Figure 1a, a finite drawn level has lower "
        "excess risk than alpha*Q = inf",
    "fig1a-local-wins-large-noise":
        f"at the largest panel noise (sigma = 1000, C = 1), alpha*Q = 0 has the lowest "
        f"excess risk of the five drawn levels from iteration {LOCAL_WINS_FROM} on (read at "
        f"{LOCAL_WINS_FROM} and at T)",
}
"""The claims of Figure 1a as this chapter judges them."""


FIGURE1A_RESTATED = {
    "fig1a-global-fastest-early":
        "was read at one iteration over every noise level of the tier (ten at the paper "
        "tier) and every level run (nine at the paper tier, where the figure draws five); "
        "the paper's panels each fix sigma and C in their title: now read on those panels "
        "and the five drawn levels",
    "fig1a-smaller-alpha-later":
        "was read over every noise level and level of the tier; now on the figure's panels "
        "and drawn levels, as the fastest-early claim",
    "fig1a-local-wins-large-noise":
        "said alpha*Q = 0 becomes and stays the best at some iteration within the run, which "
        f"never tested the paper's 'after about {LOCAL_WINS_FROM} iterations'; now read at "
        f"iteration {LOCAL_WINS_FROM} and at T",
}


def figure1a_claims(curves: pd.DataFrame, scale: str, clip: float = FIGURE_CLIP,
                    notes: dict[str, str] | None = None, risk0: float | None = None
                    ) -> list[Claim]:
    """The claims of Figure 1a on the best-over-steps curves (per seed) at clipping norm
    ``clip``, read on the figure's panels and drawn levels, in log10 excess risk.

    ``notes``: context put before a claim's evidence, by claim id; ``risk0``: the
    starting excess risk (the trivial baseline; None: no baseline).
    """
    sheet = ClaimSheet(PAPER, scale)
    notes = notes or {}
    curves, sigmas = _panels(curves, clip)
    if not sigmas:
        _no_panels(sheet, clip)
        return sheet.claims
    trivial = _risk_trivial(risk0)
    iterations = int(curves["iteration"].max())
    early = max(1, iterations // 30)

    def add(claim_id: str, verdict: Verdict, paper_value: str = "") -> None:
        sheet.judged(claim_id, verdict, FIGURE1A_TEXTS[claim_id], paper_value=paper_value,
                     restated=FIGURE1A_RESTATED.get(claim_id, ""),
                     context=notes.get(claim_id, ""), resolution=RISK_RESOLUTION)

    add("fig1a-global-fastest-early", combine([
        (f"sigma={s:g}, t={early}", _level_is_best(curves, math.inf, s, early, trivial))
        for s in sigmas]),
        paper_value="faster convergence at initial iterations in all cases")
    add("fig1a-global-plateau", _plateau(curves, iterations, trivial) if 0.0 in sigmas else
        Verdict(NOT_RUN, "no sigma = 0 panel in the runs"))
    add("fig1a-smaller-alpha-later", combine([
        (f"sigma={s:g}", _finite_beats_global(curves, s, iterations, trivial))
        for s in sigmas]))
    add("fig1a-local-wins-large-noise", combine([
        (f"t={t}", _level_is_best(curves, 0.0, max(sigmas), t, trivial))
        for t in sorted({min(LOCAL_WINS_FROM, iterations), iterations})]),
        paper_value=f"after about {LOCAL_WINS_FROM} iterations")
    return sheet.claims


OPEN_LEVELS = {
    "all": (True, True),
    "finite": (True, False),
    "small": (False, True),
    "inside": (False, False),
}
"""Whether the low and the high end of each set of personalization levels a claim takes
the best of are closed: every level (0 <= alpha*Q <= inf) runs between local and global
learning, both natural bounds; the finite levels (0 <= alpha*Q < inf) run from local learning, a
natural bound, up to levels as large as one likes; the small ones (0 < alpha*Q <= 1) from
levels as close to 0 as one likes up to the claim's own bound 1; the strictly personalized
ones (0 < alpha*Q < inf) are open at both ends. A closed end is closed only where the grid
holds it (0, or 1): otherwise the grid stops short of it."""


def level_edge(kind: str, levels: Sequence[float], best: float) -> str:
    """Why the best of the personalization ``levels`` (one set of :data:`OPEN_LEVELS`,
    ``kind``) lies on an open end of the grid, or ``""`` when it does not."""
    bounds = {"all": (0.0, math.inf), "finite": (0.0, math.inf), "small": (0.0, 1.0),
              "inside": (0.0, math.inf)}
    low_closed, high_closed = OPEN_LEVELS[kind]
    points = sorted(levels)
    low_closed = low_closed and points[0] == bounds[kind][0]
    high_closed = high_closed and points[-1] == bounds[kind][1]
    ends = []
    if best == points[0] and not low_closed:
        ends.append("lowest")
    if best == points[-1] and not high_closed:
        ends.append("highest")
    if not ends:
        return ""
    return (f"the best level alpha*Q={_fmt_alpha(best)} is the {' and '.join(ends)} of the "
            "levels it is the best of (" + ", ".join(_fmt_alpha(a) for a in points)
            + "), an open end of the grid: a level beyond it could make the claim hold")


def step_edge_reasons(curves: pd.DataFrame, levels: Sequence[float], sigma: float,
                      iteration: int | None = None, *, claimed: bool, arm: str = ""
                      ) -> list[str]:
    """Why the best step size of a curve of an arm lies on an open end of its grid, one
    reason per such curve, for :func:`edge_gated`: the curves (``sigma``, each alpha*Q of
    ``levels``) of ``curves`` at ``iteration`` (None: the last), read by
    :func:`~fedlib.papers.ppsgd.readouts.step_edge` (both ends of a grid of steps are
    open). ``claimed``: the arm is the one the claim says is better (a better step beyond
    the grid could make the claim hold), else the one it says is worse (could undo it).
    ``arm``: what the arm is where it is the best of a set of levels (every level of the
    set counts: a better step could make any of them the best)."""
    reasons = []
    for level in levels:
        edge = step_edge(curves, float(sigma), float(level), iteration)
        if edge is None or not edge.end:
            continue
        name = f"alpha*Q={_fmt_alpha(float(level))}" + (f" ({arm})" if arm else "")
        could = "make the claim hold" if claimed else "undo the claim"
        reasons.append(f"{name} at sigma={sigma:g}, t={edge.iteration}: {edge.describe()}: "
                       f"a step beyond it could {could}")
    return reasons


def _edge_brief(reason: str) -> str:
    """A reason of :func:`level_edge` or :func:`step_edge_reasons` in one clause: up to its
    open end, without the list of levels just before it."""
    head = reason.split(", an open end", 1)[0]
    return re.sub(r" \([^()]*\)$", "", head) + ", an open end"


def _as_reasons(reasons: str | Sequence[str]) -> list[str]:
    return [r for r in ([reasons] if isinstance(reasons, str) else reasons) if r]


def edge_gated(verdict: Verdict, reason: str | Sequence[str] = "", *,
               against: str | Sequence[str] = ()) -> Verdict:
    """The open-edge rule for a claim that one arm beats another, each read at its optimum
    over a grid (the best level of a set of personalization levels, :func:`level_edge`;
    the best step size of a curve, :func:`step_edge_reasons`): an optimum on an open end
    of its grid may have a better one beyond it.

    ``reason``: why the arm the claim says is better lies on an open end; a better one
    beyond could make the claim hold, so a verdict that does not hold (FAILS,
    INCONCLUSIVE) becomes NOT-TESTABLE. ``against``: why the arm the claim says is worse
    does; a better one beyond could undo a HOLDS, which becomes NOT-TESTABLE. Otherwise
    the verdict stands: a HOLDS whose better arm is on an open end (one beyond would only
    add to it), a failure whose worse arm is (one beyond would only deepen it); NOT-RUN
    and NOT-TESTABLE always do. The evidence keeps the verdict on this grid."""
    if verdict.status in (NOT_RUN, NOT_TESTABLE):
        return verdict
    found = _as_reasons(against if verdict.status == HOLDS else reason)
    if not found:
        return verdict
    return Verdict(NOT_TESTABLE, f"{'; '.join(found)}; on this grid: {verdict.status} ("
                   f"{verdict.evidence})", "; ".join(_edge_brief(r) for r in found))


def _level_is_best(curves: pd.DataFrame, claimed: float, sigma: float, iteration: int,
                   trivial: Trivial | None) -> Verdict:
    """The claim that level ``claimed`` has the lowest log10 excess risk of the drawn
    levels at ``iteration`` (one comparison against every other level, combined, as
    :func:`fedlib.verdicts.compare.best_of`), each comparison under the open-edge rule on
    the step size of both arms."""
    arms = _risk_arms(curves, sigma, iteration)
    name = _fmt_alpha(claimed)
    if name not in arms:
        raise ValueError(f"arm {name!r} is not among {sorted(arms)}")
    parts = []
    for other in SYNTHETIC_FIGURE_ALPHA_Q:
        if _fmt_alpha(other) == name:
            continue
        verdict = Comparison("log10 excess risk", name, _fmt_alpha(other), "less", RISK_MARGIN,
                             RISK_WHY).judge(arms[name], arms[_fmt_alpha(other)],
                                             trivial=trivial)
        parts.append((f"vs {_fmt_alpha(other)}", edge_gated(
            verdict, step_edge_reasons(curves, [claimed], sigma, iteration, claimed=True),
            against=step_edge_reasons(curves, [other], sigma, iteration, claimed=False))))
    return combine(parts)


def _finite_beats_global(curves: pd.DataFrame, sigma: float, iteration: int,
                         trivial: Trivial | None) -> Verdict:
    arms = {a: values(curves, "excess_risk", sigma, a, iteration, log=True)
            for a in SYNTHETIC_FIGURE_ALPHA_Q if not math.isinf(a)}
    best = best_arm(arms, higher_is_better=False)
    glob = values(curves, "excess_risk", sigma, math.inf, iteration, log=True)
    return edge_gated(Comparison(
        "log10 excess risk", f"alpha*Q={_fmt_alpha(best)} (best finite)", "alpha*Q=inf",
        "less", RISK_MARGIN, RISK_WHY).judge(arms[best], glob, trivial=trivial),
        [level_edge("finite", list(arms), best),
         *step_edge_reasons(curves, list(arms), sigma, iteration, claimed=True,
                            arm="a level of the best finite")],
        against=step_edge_reasons(curves, [math.inf], sigma, iteration, claimed=False))


def _plateau(curves: pd.DataFrame, iterations: int, trivial: Trivial | None) -> Verdict:
    """Global-only at sigma = 0 stops improving and ends far above the best finite level.

    Each part under the open-edge rule on the step size (:func:`edge_gated`): "stops
    improving" says the risk at T is not much below the risk at T/2, so the arm it says is
    better is T/2 and the worse is T; "ends above" says the best finite level is better
    than global learning at T, and is read on the best of the finite levels."""
    half = iterations // 2
    glob_end = values(curves, "excess_risk", 0.0, math.inf, iterations, log=True)
    glob_half = values(curves, "excess_risk", 0.0, math.inf, half, log=True)
    factor = math.log10(PLATEAU_FACTOR)
    closed_form = ("; the excess risk is a closed form, so the metric resolves far finer "
                   "than this")
    stops = Comparison(
        "log10 excess risk", f"alpha*Q=inf at T={iterations}",
        f"alpha*Q=inf at T/2={half}, less log10({PLATEAU_FACTOR:g})", "greater", 0.0,
        f"stops improving: over the second half it at most divides its risk by "
        f"{PLATEAU_FACTOR:g} (the factor is in the second arm; this chapter's reading of the "
        f"paper's 'plateaus'){closed_form}"
    ).judge(glob_end, glob_half - factor)
    stops = edge_gated(
        stops, step_edge_reasons(curves, [math.inf], 0.0, half, claimed=True),
        against=step_edge_reasons(curves, [math.inf], 0.0, iterations, claimed=False))
    finite = {a: values(curves, "excess_risk", 0.0, a, iterations, log=True)
              for a in SYNTHETIC_FIGURE_ALPHA_Q if not math.isinf(a)}
    best = best_arm(finite, higher_is_better=False)
    above = edge_gated(Comparison(
        "log10 excess risk", "alpha*Q=inf", f"alpha*Q={_fmt_alpha(best)} (best finite)",
        "greater", factor, f"log10({PLATEAU_FACTOR:g}): ends more than {PLATEAU_FACTOR:g}x "
        f"above, plain on the figure's log axis (the paper's terms){closed_form}"
    ).judge(glob_end, finite[best], trivial=trivial),
        [level_edge("finite", list(finite), best),
         *step_edge_reasons(curves, list(finite), 0.0, iterations, claimed=True,
                            arm="a level of the best finite")],
        against=step_edge_reasons(curves, [math.inf], 0.0, iterations, claimed=False))
    return combine([("stops improving", stops), ("ends above the best finite level", above)])


SETTING_KEYS = ["instance", "dim", "heterogeneity", "clip"]
"""The columns that tell the settings of the settings sweep apart."""


_SHORT_CLAIM = {
    "fig1a-global-fastest-early": "global fastest early",
    "fig1a-global-plateau": "global plateau",
    "fig1a-smaller-alpha-later": "smaller alpha later",
    "fig1a-local-wins-large-noise": "local wins (large noise)",
}


def setting_label(instance: str, dim: int, heterogeneity: float, clip: float) -> str:
    """Which named setting (the paper's text, the script's defaults) a row is, if any."""
    names = []
    if (dim, heterogeneity) == PAPER_SETTING:
        names.append("paper's text")
    if (dim, heterogeneity) == SCRIPT_SETTING:
        names.append("script's defaults")
    if names and clip == FIGURE_CLIP:
        names = [f"{n}, plots' C" for n in names]
    if instance != "authors":
        names.append("fedlib's own draw")
    return "; ".join(names)


def _measure_cell(claim_id: str, m: dict) -> str:
    """A verdict with the numbers behind it, in a few characters."""
    verdict = "HOLDS" if m["holds"][claim_id] else "FAILS"
    if claim_id == "fig1a-global-fastest-early":
        detail = f"{m['early_wins']}/{m['panels']} panels"
    elif claim_id == "fig1a-global-plateau":
        detail = (f"T vs T/2: {m['global_last'] / m['global_half']:.2g}x; "
                  f"vs best finite: {m['global_last'] / m['best_personal']:.2g}x")
    elif claim_id == "fig1a-smaller-alpha-later":
        finite = sum(not math.isinf(a) for _, a in m["best_final"])
        detail = f"{finite}/{len(m['best_final'])} panels"
    else:
        detail = (f"from t={m['crossover']}" if m["crossover"] is not None
                  else f"not best at T ({m['local_last'] / m['others_last']:.2g}x)")
    return f"{verdict} ({detail})"


def setting_verdicts(runs: pd.DataFrame) -> pd.DataFrame:
    """The Figure 1a claims at every setting of the settings sweep.

    ``runs``: the table of :func:`~fedlib.papers.ppsgd.experiment.run_settings`.
    One row per (instance, d, heterogeneity, C): the setting, the number of
    claims that hold, and per claim its verdict with the numbers behind it.
    """
    rows = []
    for key, part in runs.groupby(SETTING_KEYS, sort=False):
        instance, dim, heterogeneity, clip = key
        m = figure1a_measures(best_over_steps(part), clip)
        rows.append({
            "setting": setting_label(instance, int(dim), float(heterogeneity), float(clip)),
            "instance": instance, "d": int(dim), "heterogeneity": float(heterogeneity),
            "C": float(clip),
            "claims holding": f"{sum(m['holds'].values())}/{len(m['holds'])}",
            **{_SHORT_CLAIM[c]: _measure_cell(c, m) for c in FIGURE1A_CLAIM_IDS},
        })
    return pd.DataFrame(rows)


def _row(table: pd.DataFrame, instance: str, dim: int, heterogeneity: float, clip: float
         ) -> pd.Series | None:
    sel = table[(table["instance"] == instance) & (table["d"] == dim)
                & (table["heterogeneity"] == heterogeneity) & (table["C"] == clip)]
    return None if sel.empty else sel.iloc[0]


def _status(cell: str) -> str:
    return cell.split(" ", 1)[0]


def setting_notes(table: pd.DataFrame) -> dict[str, str]:
    """Per Figure 1a claim, what the settings sweep says at the paper's stated setting:
    the verdict on the authors' instance (what their script gives) and on fedlib's draw."""
    dim, heterogeneity = PAPER_SETTING
    authors = _row(table, "authors", dim, heterogeneity, FIGURE_CLIP)
    own = _row(table, "fedlib", dim, heterogeneity, FIGURE_CLIP)
    if authors is None:
        return {}
    notes = {}
    for claim_id in FIGURE1A_CLAIM_IDS:
        column = _SHORT_CLAIM[claim_id]
        verdict = _status(authors[column])
        text = (f"Settings sweep (one run per setting, read by the earlier single-run "
                f"statement): at the paper's setting (d={dim}, heterogeneity "
                f"{heterogeneity:g}, C={FIGURE_CLIP:g}) the authors' script gives {verdict} "
                "(their instance, which this engine reproduces to rounding; their privacy "
                "noise is unseeded, this is one draw of it)")
        if own is not None:
            mine = _status(own[column])
            text += (f"; fedlib's own draw gives {mine}, "
                     + ("the same verdict" if mine == verdict else "a different verdict"))
        notes[claim_id] = text
    return notes


def settings_conclusion(table: pd.DataFrame) -> str:
    """The settings sweep in words (Markdown): where all four Figure 1a claims hold, and
    what the paper's stated setting and the script's defaults give."""
    authors = table[table["instance"] == "authors"]
    all_hold = authors[authors["claims holding"] == f"{len(FIGURE1A_CLAIM_IDS)}/"
                       f"{len(FIGURE1A_CLAIM_IDS)}"]

    def describe(rows: pd.DataFrame) -> str:
        return "; ".join(f"d={r.d}, heterogeneity {r.heterogeneity:g}, C={r.C:g}"
                         for r in rows.itertuples())

    def holding(dim: int, heterogeneity: float) -> str:
        row = _row(table, "authors", dim, heterogeneity, FIGURE_CLIP)
        if row is None:
            return "nothing was run"
        failing = [c for c in FIGURE1A_CLAIM_IDS if _status(row[_SHORT_CLAIM[c]]) == "FAILS"]
        return (f"{row['claims holding']} claims hold at C={FIGURE_CLIP:g}"
                + (f" (failing: {', '.join(_SHORT_CLAIM[c] for c in failing)})" if failing
                   else ""))

    paper_dim, paper_het = PAPER_SETTING
    script_dim, script_het = SCRIPT_SETTING
    text = (f"On the authors' instance, at the paper's stated setting (d={paper_dim}, "
            f"heterogeneity {paper_het:g}) {holding(paper_dim, paper_het)}; at the script's "
            f"defaults (d={script_dim}, heterogeneity {script_het:g}) "
            f"{holding(script_dim, script_het)}. ")
    if len(all_hold):
        text += f"All four claims hold at: {describe(all_hold)}."
    elif len(authors):
        counts = authors["claims holding"].map(lambda v: int(v.split("/")[0]))
        most = authors[counts == counts.max()]
        text += (f"No setting of this sweep makes all four claims hold; the most "
                 f"({most['claims holding'].iloc[0]}) hold at: {describe(most)}.")
    paper = _row(table, "authors", paper_dim, paper_het, FIGURE_CLIP)
    own = _row(table, "fedlib", paper_dim, paper_het, FIGURE_CLIP)
    if paper is not None and own is not None:
        same = [c for c in FIGURE1A_CLAIM_IDS
                if _status(paper[_SHORT_CLAIM[c]]) == _status(own[_SHORT_CLAIM[c]])]
        text += (f" At the paper's stated setting, fedlib's own draw gives the same verdict "
                 f"as the authors' instance on {len(same)} of {len(FIGURE1A_CLAIM_IDS)} claims")
        failing = [c for c in FIGURE1A_CLAIM_IDS if _status(paper[_SHORT_CLAIM[c]]) == "FAILS"]
        if failing and all(c in same for c in failing):
            text += (": the claims that fail there fail on the authors' own instance too, so "
                     "their failure does not come from this library's draw of the task.")
        else:
            text += "."
    return text


def figure1c_note(runs: pd.DataFrame, curves: pd.DataFrame, setup: PpsgdSetup,
                  n_users: int) -> str:
    """How long Figure 1c ran over ``n_users`` writers, and the best step size of each
    plotted curve (Markdown; the median over seeds)."""
    grid = setup.linear
    curves = mean_over_seeds(curves)
    return (
        f"Figure 1c ran {iterations_run(runs)} iterations "
        f"({grid.epochs:g} epochs over {n_users} writers). "
        "Best step size per curve at the last evaluation: "
        + ", ".join(
            f"$\\alpha Q$={r.alpha_q:g}, $\\sigma$={r.noise_multiplier:g}: {r.best_step:g}"
            for r in final(curves).itertuples()
            if r.noise_multiplier in grid.panel_sigmas and r.alpha_q in EMNIST_FIGURE_ALPHA_Q
        ) + "."
    )


def figure1d_note(runs: pd.DataFrame, setup: PpsgdSetup) -> str:
    """How long Figure 1d ran and with which step sizes (Markdown)."""
    grid = setup.cnn
    return (
        f"Figure 1d ran {iterations_run(runs)} iterations "
        f"({grid.epochs:g} epoch(s); the paper ran 20) with the step sizes "
        + ", ".join(f"{v:g}" for v in grid.steps) + "."
    )


def _accuracy(curves: pd.DataFrame, sigma: float, alpha_q: float) -> pd.Series:
    return values(curves, "accuracy", sigma, alpha_q)


def figure1_claims(curves: pd.DataFrame, model: str, panel_sigmas: tuple[float, ...],
                   scale: str, test_digits: int | None = None) -> list[Claim]:
    """Claims of Figure 1c (linear) or 1d (CNN) on the final best-over-steps accuracies,
    one value per seed, chance (0.1) as the trivial baseline.

    ``test_digits``: how many test digits the accuracy is pooled over (what the metric
    resolves, in the margins' rationale; None: not given). A claim read on the best of a
    set of levels applies the open-edge rule (:func:`edge_gated`); "large alpha is best"
    compares the best level on each side of alpha*Q = 10 over a grid whose ends, local and
    global learning, are natural bounds. Every claim applies the rule to the best step of
    the curves of both its arms (:func:`step_edge_reasons`): the arm it says is better
    (where it is the best of a set, every level of the set that a better step could make
    beat the other arm: for "local-only is very poor", every level but local learning) and
    the arm it says is worse.
    """
    why = accuracy_why(test_digits)
    end = final(with_seed(curves))
    fig = "fig1c" if model == "linear" else "fig1d"
    sigma0, sigma_max = min(panel_sigmas), max(panel_sigmas)
    alphas = sorted(end["alpha_q"].unique())
    acc0 = {a: _accuracy(end, sigma0, a) for a in alphas}
    best0 = best_arm(acc0, higher_is_better=True)
    sheet = ClaimSheet(PAPER, scale)
    if model == "linear":
        sheet.judged(f"{fig}-local-poor", edge_gated(judged_at_chance(
            Comparison("final test accuracy", "alpha*Q=inf", "alpha*Q=0", "greater",
                       ACCURACY_MARGIN, why), acc0[math.inf], acc0[0.0], CHANCE),
            step_edge_reasons(end, [math.inf], sigma0, claimed=True),
            against=step_edge_reasons(end, [0.0], sigma0, claimed=False)),
            f"local learning does poorly: at sigma={sigma0:g}, alpha*Q=0 ends below "
            "alpha*Q=inf")
    else:
        sheet.judged(f"{fig}-local-very-poor", edge_gated(judged_at_chance(
            Comparison("final test accuracy", f"alpha*Q={_fmt_alpha(best0)} (best)",
                       "alpha*Q=0", "greater", VERY_POOR_MARGIN, very_poor_why(test_digits)),
            acc0[best0], acc0[0.0], CHANCE),
            [level_edge("all", alphas, best0),
             *step_edge_reasons(end, [a for a in alphas if a != 0], sigma0, claimed=True,
                                arm="a level of the best")],
            against=step_edge_reasons(end, [0.0], sigma0, claimed=False)),
            f"local-only models are very poor (frozen random representation): at "
            f"sigma={sigma0:g}, alpha*Q=0 ends at least "
            f"{VERY_POOR_MARGIN * 100:g} points below the best level")
    small = {a: _accuracy(end, sigma_max, a) for a in alphas if 0 < a <= 1}
    best_small = best_arm(small, higher_is_better=True)
    eps = _at(end, sigma_max, math.inf, "epsilon")
    sheet.judged(f"{fig}-small-alpha-small-eps", edge_gated(judged_at_chance(
        Comparison("final test accuracy", f"alpha*Q={_fmt_alpha(best_small)} (best of "
                   "0 < alpha*Q <= 1)", "alpha*Q=inf", "greater", ACCURACY_MARGIN, why),
        small[best_small], _accuracy(end, sigma_max, math.inf), CHANCE),
        [level_edge("small", list(small), best_small),
         *step_edge_reasons(end, list(small), sigma_max, claimed=True,
                            arm="a level of the best of 0 < alpha*Q <= 1")],
        against=step_edge_reasons(end, [math.inf], sigma_max, claimed=False)),
        f"small alpha helps at small epsilon: at the largest plotted noise "
        f"(sigma={sigma_max:g}) a level 0 < alpha*Q <= 1 ends above alpha*Q=inf",
        context=f"eps={eps:.3g} (RDP)")
    if model == "cnn":
        large = {a: v for a, v in acc0.items() if a >= 10}
        rest = {a: v for a, v in acc0.items() if a < 10}
        best_large = best_arm(large, higher_is_better=True)
        best_rest = best_arm(rest, higher_is_better=True)
        sheet.judged(f"{fig}-large-alpha-low-privacy", edge_gated(judged_at_chance(
            Comparison("final test accuracy", f"alpha*Q={_fmt_alpha(best_large)} (best of "
                       ">= 10)", f"alpha*Q={_fmt_alpha(best_rest)} (best of < 10)",
                       "greater", ACCURACY_MARGIN, why),
            large[best_large], rest[best_rest], CHANCE),
            step_edge_reasons(end, list(large), sigma0, claimed=True,
                              arm="a level of the best of >= 10"),
            against=step_edge_reasons(end, list(rest), sigma0, claimed=False,
                                      arm="a level of the best of < 10")),
            f"large alpha is best at poor privacy: at sigma={sigma0:g} the best level "
            "has alpha*Q >= 10")
    return sheet.claims


SMALL_STEPS_CLAIM = "fig1d-small-alpha-small-steps"


def small_steps_note(curves: pd.DataFrame) -> str:
    """Where each seed of Figure 1d's small-step runs ends (``curves``: their best-over-steps
    test accuracy with a seed column; Markdown, empty when there are none): per noise level
    and level of personalization, the final accuracy of every seed, so that a level that
    learns with one seed and not with another is seen as such."""
    if curves.empty:
        return ""
    end = final(with_seed(curves))
    seeds = sorted(int(s) for s in end["seed"].unique())
    rows = [f"| sigma | alpha*Q | {' | '.join(f'seed {s}' for s in seeds)} |",
            "|---|---|" + "---|" * len(seeds)]
    for sigma in sorted(end["noise_multiplier"].unique()):
        at = end[end["noise_multiplier"] == sigma]
        for alpha_q in sorted(at["alpha_q"].unique()):
            level = at[at["alpha_q"] == alpha_q].set_index("seed")["accuracy"]
            cells = [f"{level[s]:.3f}" if s in level.index else "-" for s in seeds]
            rows.append(f"| {sigma:g} | {_fmt_alpha(alpha_q)} | {' | '.join(cells)} |")
    return (f"Final test accuracy of each seed (best step size; chance is "
            f"{CHANCE.value:g}):\n\n" + "\n".join(rows))


SMALL_STEPS_RULE = (
    f"the rule that picks the noise level was chosen after the runs at sigma = "
    f"{max(SMALL_STEPS_SIGMAS):g} had been seen (not testable there) and before those at "
    f"sigma = {min(SMALL_STEPS_SIGMAS):g} were computed: it was not declared before every "
    "result was read, so this verdict is read under a rule chosen with part of the evidence "
    "in view")
"""What the small-step claim says of when its rule was chosen (in its text and evidence)."""


def small_steps_claims(curves: pd.DataFrame, scale: str, left_out: Mapping[str, str],
                       test_digits: int | None = None) -> list[Claim]:
    """Figure 1d's small-alpha claim read where the CNN can learn under noise (``curves``:
    the small-step runs' best-over-steps test accuracy, one per seed; empty where they were
    left out, ``left_out`` saying why; ``test_digits``: as :func:`figure1_claims`).

    The rule: the claim is judged at each noise level of the runs, and its verdict is the
    one at the largest noise level where it is testable (not every run of both arms at
    chance); where it is testable at none, it is NOT-TESTABLE. The open-edge rule
    (:func:`edge_gated`, on the best small level and on the best step of both arms) is
    applied to the verdict at the level the rule picks, not used to pick it. The evidence
    gives every level's verdict. The rule was chosen after the runs at the larger noise
    level had been seen, before those at the smaller were computed
    (:data:`SMALL_STEPS_RULE`): the claim says so.
    """
    sheet = ClaimSheet(PAPER, scale)
    levels = ", ".join(f"{s:g}" for s in SMALL_STEPS_SIGMAS)
    text = ("small alpha helps at small epsilon, read where the CNN learns under noise: with "
            f"the best of step sizes {min(SMALL_STEPS):g} to {max(SMALL_STEPS):g}, a level "
            "0 < alpha*Q <= 1 ends above alpha*Q=inf, at the largest noise of Figure 1d's "
            f"small-step runs (sigma in {levels}) at which the two are not both at chance; "
            + SMALL_STEPS_RULE)
    restated = (f"it was read at sigma = {max(SMALL_STEPS_SIGMAS):g} alone, where the small "
                "level learns on some seeds and not on others and the comparison is not "
                f"testable; then the runs at sigma = {min(SMALL_STEPS_SIGMAS):g} were added "
                "and the rule that picks the noise level was chosen, before they were "
                "computed but after the first were seen; the claim now says so")
    if curves.empty:
        sheet.not_run(SMALL_STEPS_CLAIM, text,
                      "; ".join(f"{part}: {why}" for part, why in left_out.items())
                      or "no small-step runs", restated=restated)
        return sheet.claims
    end = final(with_seed(curves))
    verdicts = []
    for sigma in sorted(end["noise_multiplier"].unique(), reverse=True):
        sigma = float(sigma)
        small = {a: _accuracy(end, sigma, a) for a in sorted(end["alpha_q"].unique())
                 if 0 < a <= 1}
        best_small = best_arm(small, higher_is_better=True)
        eps = _at(end, sigma, math.inf, "epsilon")
        verdict = judged_at_chance(
            Comparison("final test accuracy", f"alpha*Q={_fmt_alpha(best_small)} (best of "
                       "0 < alpha*Q <= 1)", "alpha*Q=inf", "greater", ACCURACY_MARGIN,
                       accuracy_why(test_digits)),
            small[best_small], _accuracy(end, sigma, math.inf), CHANCE)
        edges = [level_edge("small", list(small), best_small),
                 *step_edge_reasons(end, list(small), sigma, claimed=True,
                                    arm="a level of the best of 0 < alpha*Q <= 1")]
        against = step_edge_reasons(end, [math.inf], sigma, claimed=False)
        verdicts.append((sigma, eps, verdict, edges, against))
    chosen = next((v for v in verdicts if v[2].status != NOT_TESTABLE), verdicts[0])
    sigma, eps, verdict, edges, against = chosen
    verdict = edge_gated(verdict, edges, against=against)
    others = "; ".join(f"sigma = {s:g} (eps={e:.3g}): {v.status}, {v.evidence}"
                       for s, e, v, *_ in verdicts if s != sigma)
    evidence = f"at sigma = {sigma:g}: {verdict.evidence}" + (
        f" | the other noise levels: {others}" if others else "")
    sheet.judged(SMALL_STEPS_CLAIM, Verdict(verdict.status, evidence, verdict.brief), text,
                 context=f"read at sigma = {sigma:g}, eps={eps:.3g} (RDP)",
                 restated=restated)
    return sheet.claims


SMALLEST_STEP_CLAIM = "fig1d-small-alpha-sigma10-smallest-step"
SMALLEST_STEP_READING = (
    "the better of alpha*Q = 0.1 and 0.3 (by its mean over seeds) against alpha*Q = inf in "
    "final test accuracy, a one-point margin, chance (0.1) as the gate")
"""How the finding on Figure 1d's runs at sigma = 10 with the smallest step is read
(declared before the runs were computed)."""


def smallest_step_verdict(curves: pd.DataFrame, test_digits: int | None = None
                          ) -> tuple[Verdict, float]:
    """The verdict of :data:`SMALLEST_STEP_READING` on ``curves``
    (:func:`~fedlib.papers.ppsgd.readouts.smallest_step_curves`: per seed, one noise level),
    and the RDP epsilon of global learning at the end. The declared reading names its two
    levels and its one step, so the open-edge rule does not apply: the finding is about
    them, not about every small level or every step."""
    end = final(with_seed(curves))
    sigma = float(end["noise_multiplier"].max())
    small = {a: _accuracy(end, sigma, a) for a in SMALLEST_STEP_LEVELS if 0 < a < math.inf}
    better = best_arm(small, higher_is_better=True)
    verdict = judged_at_chance(
        Comparison("final test accuracy", f"alpha*Q={_fmt_alpha(better)} (the better of "
                   + " and ".join(_fmt_alpha(a) for a in small) + ")", "alpha*Q=inf",
                   "greater", ACCURACY_MARGIN, accuracy_why(test_digits)),
        small[better], _accuracy(end, sigma, math.inf), CHANCE)
    return verdict, _at(end, sigma, math.inf, "epsilon")


def smallest_step_claims(curves: pd.DataFrame, scale: str, left_out: Mapping[str, str],
                         test_digits: int | None = None) -> list[Claim]:
    """The companion's finding on Figure 1d at the largest plotted noise with the smallest
    step of the paper's grid (``curves``: :func:`~fedlib.papers.ppsgd.readouts.
    smallest_step_curves`, empty where the runs were left out, ``left_out`` saying why):
    read as :data:`SMALLEST_STEP_READING` (:func:`smallest_step_verdict`)."""
    sheet = ClaimSheet(PAPER, scale)
    text = (f"at the largest plotted noise of Figure 1d (sigma = {SMALLEST_STEP_SIGMA:g}), "
            f"with the smallest step of the paper's grid ({SMALLEST_STEP:g}), "
            "a small level of personalization ends above global learning; read as "
            + SMALLEST_STEP_READING + ", declared before the runs were computed")
    if curves.empty:
        sheet.not_run(SMALLEST_STEP_CLAIM, text,
                      "; ".join(f"{part}: {why}" for part, why in left_out.items())
                      or "no runs", origin="companion")
        return sheet.claims
    verdict, eps = smallest_step_verdict(curves, test_digits)
    sheet.judged(SMALLEST_STEP_CLAIM, verdict, text, origin="companion",
                 context=f"read at sigma = {SMALLEST_STEP_SIGMA:g}, step {SMALLEST_STEP:g}, "
                 f"eps={eps:.3g} (RDP)")
    return sheet.claims


def smallest_step_prose(curves: pd.DataFrame, iterations: int,
                        test_digits: int | None = None) -> tuple[str, dict[str, Any]]:
    """The paragraph on Figure 1d's runs at the largest plotted noise with the smallest
    step, as a template and its values for :func:`fedlib.render.prose.say` (``curves``:
    :func:`~fedlib.papers.ppsgd.readouts.smallest_step_curves`, not empty; ``iterations``:
    the iterations they trained): where every level ends against chance, the level that
    reaches the highest accuracy on the way (the highest peak of its mean over seeds) and
    where it ends, and the verdict of the declared reading."""
    curves = with_seed(curves)
    end = final(curves)
    sigma = float(end["noise_multiplier"].max())
    levels = sorted(float(a) for a in end["alpha_q"].unique())
    finals = {a: _accuracy(end, sigma, a) for a in levels}
    conditions = {a: CHANCE.condition(finals[a]) for a in levels}
    peaks = {a: smallest_step_peak(curves, a) for a in levels}
    nearest = max(levels, key=lambda a: peaks[a][0])
    verdict, eps = smallest_step_verdict(curves, test_digits)
    values: dict[str, Any] = {
        "step": SMALLEST_STEP, "sigma": sigma, "eps": eps, "iterations": iterations,
        "levels": [_fmt_alpha(a) for a in levels],
        "finals": [float(finals[a].mean()) for a in levels], "chance": CHANCE.value,
        "tolerance": CHANCE.tolerance, "seeds": len(seeds_of(curves)),
        "nearest": _fmt_alpha(nearest), "peak": peaks[nearest][0], "peak_at": peaks[nearest][1],
        "share": peaks[nearest][1] / iterations, "nearest_end": float(finals[nearest].mean()),
        "reading": SMALLEST_STEP_READING, "status": verdict.status,
        "brief": verdict.brief or verdict.evidence,
    }
    text = ("With the smallest step of the paper's grid ({step:g}) at the largest plotted "
            "noise ($\\sigma$ = {sigma:g}; $\\varepsilon$ = {eps:.3g} after {iterations:,} "
            "iterations), $\\alpha Q$ = {levels} end at {finals:.3f} (means over {seeds} "
            "seeds) against chance, {chance:g}: ")
    if all(c in (NOT_LEARNED, WORSE_THAN_TRIVIAL) for c in conditions.values()):
        text += "no seed of any level ends more than {tolerance:g} above it. "
    else:
        values["conditions"] = [f"{_fmt_alpha(a)}: {c or 'learned'}"
                                for a, c in conditions.items()]
        text += ("by level, {conditions} (learned: every seed ends more than {tolerance:g} "
                 "above it). ")
    text += ("$\\alpha Q$ = {nearest} reaches the highest accuracy on the way: averaged "
             "over the seeds, it peaks at {peak:.3f} at iteration {peak_at:,} ({share:.0%} "
             "of training) and ends at {nearest_end:.3f}. Read as declared before the runs were "
             "computed ({reading}), the finding is {status}: {brief}.")
    return text, values


def _level_arms(end: pd.DataFrame, sigma: float, value: str, log: bool
                ) -> dict[float, pd.Series]:
    return {a: values(end, value, sigma, a, log=log)
            for a in sorted(end.loc[end["noise_multiplier"] == sigma, "alpha_q"].unique())}


def envelope_improves(end: pd.DataFrame, value: str, higher_is_better: bool, *,
                      log: bool = False, margin: float = ACCURACY_MARGIN,
                      why: str = ACCURACY_WHY, trivial: Trivial | None = None) -> Verdict:
    """Figure 2 as the paper states it: optimizing over the level of personalization (every
    alpha*Q, 0 and inf included: the black curve) improves the trade-off, that is, at one
    private noise level at least the best level beats the better of local-only and
    global-only by more than ``margin``. Levels are chosen by their mean over seeds; the
    open-edge rule (:func:`edge_gated`) applies where the grid lacks local or global
    learning, its natural ends, and to the best step of every curve: of the levels between
    the extremes (a better step could make one of them clear the better extreme) and of
    the extremes (a better step could make one of them the envelope)."""
    direction = "greater" if higher_is_better else "less"
    parts = []
    for sigma in sorted(s for s in end["noise_multiplier"].unique() if s > 0):
        arms = _level_arms(end, sigma, value, log)
        best = best_arm(arms, higher_is_better)
        extreme = best_arm({a: arms[a] for a in (0.0, math.inf) if a in arms}, higher_is_better)
        comparison = Comparison(value, f"alpha*Q={_fmt_alpha(best)} (envelope)",
                                f"alpha*Q={_fmt_alpha(extreme)} (better extreme)", direction,
                                margin, why)
        verdict = (judged_at_chance(comparison, arms[best], arms[extreme], trivial)
                   if trivial else comparison.judge(arms[best], arms[extreme]))
        inside = [a for a in arms if 0 < a < math.inf]
        extremes = [a for a in arms if a in (0.0, math.inf)]
        parts.append((f"sigma={sigma:g}", edge_gated(
            verdict, [level_edge("all", list(arms), best),
                      *step_edge_reasons(end, inside, sigma, claimed=True,
                                         arm="a level of the envelope")],
            against=step_edge_reasons(end, extremes, sigma, claimed=False,
                                      arm="an extreme"))))
    if not parts:
        return Verdict(NOT_RUN, "no private noise level in the runs")
    return any_of(parts)


def personalized_dominates(end: pd.DataFrame, value: str, higher_is_better: bool, *,
                           log: bool = False, margin: float = RISK_MARGIN,
                           why: str = RISK_WHY) -> Verdict:
    """At every private noise level the best strictly personalized level (0 < alpha*Q <
    inf) beats both local-only and global-only by more than ``margin``. Both ends of the
    strictly personalized levels are open (:func:`level_edge`; the chapter extends them
    beyond an end the best one lies on first, :mod:`fedlib.papers.ppsgd.level_extension`):
    a comparison that does not hold at a best level on either end is NOT-TESTABLE
    (:func:`edge_gated`); so is one that
    does not hold where a strictly personalized level has its best step on an end of its
    grid, and one that holds where the extreme it beats does."""
    direction = "greater" if higher_is_better else "less"
    parts = []
    for sigma in sorted(s for s in end["noise_multiplier"].unique() if s > 0):
        arms = _level_arms(end, sigma, value, log)
        inside = {a: v for a, v in arms.items() if 0 < a < math.inf}
        best = best_arm(inside, higher_is_better)
        edge = level_edge("inside", list(inside), best)
        steps = step_edge_reasons(end, list(inside), sigma, claimed=True,
                                  arm="a level of the best strictly personalized")
        for extreme in (0.0, math.inf):
            parts.append((f"sigma={sigma:g} vs alpha*Q={_fmt_alpha(extreme)}", edge_gated(
                Comparison(value, f"alpha*Q={_fmt_alpha(best)}", f"alpha*Q={_fmt_alpha(extreme)}",
                           direction, margin, why).judge(inside[best], arms[extreme]),
                [edge, *steps],
                against=step_edge_reasons(end, [extreme], sigma, claimed=False))))
    if not parts:
        return Verdict(NOT_RUN, "no private noise level in the runs")
    return combine(parts)


def figure2_claims(curves_1a: pd.DataFrame, curves_1c: pd.DataFrame, scale: str,
                   test_digits: int | None = None) -> list[Claim]:
    """Claims of Figure 2 on the final values per seed of Figures 1c and 1a (C = 1);
    ``test_digits``: those of Figure 1c (as :func:`figure1_claims`)."""
    sheet = ClaimSheet(PAPER, scale)
    emnist = final(with_seed(curves_1c))
    sheet.judged(
        "fig2-emnist-envelope-dominates",
        envelope_improves(emnist, "accuracy", True, why=accuracy_why(test_digits),
                          trivial=CHANCE),
        "EMNIST linear: optimizing over the level of personalization (every alpha*Q, 0 and "
        "inf included; best step) improves the accuracy-privacy trade-off: at one private "
        "noise level at least the best level beats both local-only and global-only",
        paper_value="the black curve 'also optimizes over the level of personalization, "
        "which improves the tradeoff' (Figure 2, right; 'less pronounced' than on Stack "
        "Overflow)",
        restated="said the best strictly personalized level (0 < alpha*Q < inf) beats both "
        "extremes at every noise level; the paper's envelope optimizes over every level, "
        "0 and inf included, and says it improves the trade-off, not that it wins at every "
        "sigma",
        resolution=accuracy_resolution(test_digits))
    synthetic = synthetic_final(curves_1a)
    sheet.judged(
        "fig2-synthetic-envelope-dominates",
        personalized_dominates(synthetic, "excess_risk", False, log=True),
        "synthetic (Figure 1a runs, C = 1): at every private noise level the best strictly "
        "personalized level (0 < alpha*Q < inf, best step) has lower final excess risk than "
        "local-only and global-only (log10, by more than 10%)",
        paper_value="not in the paper (its Figure 2 shows Stack Overflow and EMNIST)",
        origin="companion", resolution=RISK_RESOLUTION)
    return sheet.claims


STACKOVERFLOW_CLAIMS = (
    ("fig1b-intermediate-alpha-best-without-noise",
     "Stack Overflow, sigma=0: an intermediate alpha*Q=10 has the best top-1 accuracy"),
    ("fig1b-small-alpha-best-with-noise",
     "Stack Overflow, with noise: small alpha*Q is best at reasonable privacy levels"),
    ("fig2-stackoverflow-envelope-dominates",
     "Stack Overflow: the best personalized model dominates local-only and global-only"),
)
"""Claims of Figure 1b and Figure 2 (left): id and text."""


def stackoverflow_claims(scale: str) -> list[Claim]:
    """The Stack Overflow claims, not run: the data are not available offline."""
    sheet = ClaimSheet(PAPER, scale)
    for claim_id, text in STACKOVERFLOW_CLAIMS:
        sheet.not_run(claim_id, text,
                      "TFF's Stack Overflow HDF5 files are not available offline; the subset "
                      "builder is tested on generated files with their schema")
    return sheet.claims


EPSILON_CLAIM = "fig1-epsilon-printed"


EPSILON_TEXT = ("the epsilon Figure 1 prints for each private panel is the moments "
                "accountant's at the paper's sigma, sampling rate Q/N, iterations T and "
                "delta = 1e-4")


def epsilon_claim(sheet: ClaimSheet, printed: Mapping[tuple[str, float], float] | None = None
                  ) -> Claim:
    """Figure 1's printed epsilon against the RDP accountant, exactly (no randomness).

    ``printed``: (figure, sigma) -> the value the paper prints. Without them the claim is
    NOT-RUN, with the accountant's values in its evidence.
    """
    table = figure1_epsilons()
    computed = "; ".join(f"{r.figure} sigma={r.sigma:g} (q={r.rate:g}, T={r.iterations}): "
                         f"RDP {r.eps_rdp:.3g}, authors' accountant {r.eps_authors:.3g}"
                         for r in table.itertuples())
    if not printed:
        return sheet.not_run(
            EPSILON_CLAIM, EPSILON_TEXT,
            "the paper prints these values on its Figure 1 panels (an image), and neither "
            "its text nor the authors' plotting scripts (which title each panel with sigma "
            "only) give them as numbers, so there is nothing here to compare with; the "
            f"accountants give: {computed}")
    rows = [r for r in table.itertuples() if (r.figure, r.sigma) in printed]
    agree = [abs(r.eps_rdp - printed[r.figure, r.sigma]) <= EPSILON_TOLERANCE
             * printed[r.figure, r.sigma] for r in rows]
    details = "; ".join(f"{r.figure} sigma={r.sigma:g}: printed "
                        f"{printed[r.figure, r.sigma]:g}, RDP {r.eps_rdp:.3g}"
                        for r in rows)
    return sheet.exact(EPSILON_CLAIM, bool(rows) and all(agree), EPSILON_TEXT,
                       f"{sum(agree)}/{len(rows)} panels within {EPSILON_TOLERANCE:.0%} "
                       f"(the printed precision): {details}")


def evaluate(curves_1a: pd.DataFrame, curves_1c: pd.DataFrame, curves_1d: pd.DataFrame,
             setup: PpsgdSetup, scale: str, settings: pd.DataFrame | None = None, *,
             seed: int = 0, instance: str = SYNTHETIC_INSTANCE,
             printed_epsilon: Mapping[tuple[str, float], float] | None = None,
             curves_1d_small: pd.DataFrame | None = None,
             small_left_out: Mapping[str, str] | None = None,
             test_digits: Mapping[str, int] | None = None,
             curves_1d_smallest: pd.DataFrame | None = None,
             smallest_left_out: Mapping[str, str] | None = None) -> list[Claim]:
    """Every claim of the chapter: Figures 1a, 1c, 1d, 2, Figure 1's epsilon, then Stack
    Overflow (not run).

    The curves are those of :func:`best_over_steps`, one per seed (1a: excess risk,
    lower is better; 1c and 1d: test accuracy, higher is better). ``settings``: the
    table of :func:`setting_verdicts`; the Figure 1a evidence then says what the
    authors' script and fedlib's own draw give at the paper's stated setting.
    ``seed`` and ``instance``: the synthetic task whose starting risk is Figure 1a's
    trivial baseline. ``curves_1d_small``: the curves of Figure 1d's small-step runs
    (None or empty where they were left out, ``small_left_out`` saying why).
    ``test_digits``: the test digits of each EMNIST model (``linear``, ``cnn``;
    :func:`count_test_digits`), which the margins' rationale reads.
    ``curves_1d_smallest``: the curves of Figure 1d's runs at sigma = 10 with the smallest
    step (None or empty where they were left out, ``smallest_left_out`` saying why), which
    the companion's finding :data:`SMALLEST_STEP_CLAIM` reads.
    """
    digits = dict(test_digits or {})
    sheet = ClaimSheet(PAPER, scale)
    notes = setting_notes(settings) if settings is not None else None
    risk0 = starting_risk(synthetic_task(setup.synthetic, seed, instance))
    sheet.extend(figure1a_claims(curves_1a, scale, notes=notes, risk0=risk0))
    sheet.extend(figure1_claims(curves_1c, "linear", setup.linear.panel_sigmas, scale,
                                digits.get("linear")))
    sheet.extend(figure1_claims(curves_1d, "cnn", setup.cnn.panel_sigmas, scale,
                                digits.get("cnn")))
    sheet.extend(small_steps_claims(pd.DataFrame() if curves_1d_small is None
                                    else curves_1d_small, scale, small_left_out or {},
                                    digits.get("cnn")))
    sheet.extend(smallest_step_claims(pd.DataFrame() if curves_1d_smallest is None
                                      else curves_1d_smallest, scale,
                                      smallest_left_out or {}, digits.get("cnn")))
    sheet.extend(figure2_claims(curves_1a, curves_1c, scale, digits.get("linear")))
    epsilon_claim(sheet, printed_epsilon)
    sheet.extend(stackoverflow_claims(scale))
    return sheet.claims


def count_test_digits(setup: PpsgdSetup, seed: int, source: str) -> dict[str, int]:
    """How many test digits each EMNIST model of ``setup`` is scored on (its accuracy is
    pooled over them): what the accuracy margins' rationale reads."""
    from fedlib.papers.ppsgd.experiment import load_data

    return {model: len(load_data(model, grid.max_users, grid.test_fraction, seed,
                                 source).y_test)
            for model, grid in (("linear", setup.linear), ("cnn", setup.cnn))}


def margins_note(test_digits: Mapping[str, int] | None = None) -> str:
    """The margins the claims are judged with, why each, and what each metric resolves
    (Markdown; ``test_digits`` as :func:`evaluate`)."""
    digits = dict(test_digits or {})
    linear, cnn = digits.get("linear"), digits.get("cnn")
    same = linear == cnn
    return ("The margins, declared before the runs were read:\n\n"
            f"- excess risk (Figure 1a): {RISK_MARGIN:.3f} in log10, {RISK_WHY};\n"
            f"- test accuracy (Figures 1c, 1d, 2): {ACCURACY_MARGIN:g}, "
            + (accuracy_why(linear) if same else
               f"{accuracy_why(linear)} (Figure 1c; Figure 1d: {accuracy_resolution(cnn)})")
            + f";\n- 'very poor' (Figure 1d): {VERY_POOR_MARGIN:g}, {very_poor_why(cnn)}; "
            f"chance (0.1) must be cleared by {CHANCE.tolerance:g}.")
