"""Read-outs of the PADPFL runs and the claims of Figures 2-9, evaluated in code.

Tables of the setup and the scenarios, the noise the paper's formulas prescribe,
the final losses and their summary, the privacy accounting of the clients'
uploads, and :func:`evaluate`, which judges every claim of the chapter on the
final training loss of each seed, with a declared margin (:mod:`fedlib.verdicts.compare`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fedlib.papers.padpfl import studies
from fedlib.papers.padpfl.experiment import (
    DELTA,
    EPSILONS,
    EQUAL,
    SCENARIOS,
    PadpflSetup,
    run_seeds,
)
from fedlib.privacy import epsilon as exact_epsilon
from fedlib.privacy.calibration import classic_gaussian_c, padpfl_client_sigma
from fedlib.verdicts.claims import Claim, ClaimSheet
from fedlib.verdicts.compare import (
    Comparison,
    Trivial,
    Verdict,
    at_least,
    best_of,
    combine,
    estimate,
)


def setup_table(setup: PadpflSetup, scale: str, seed: int) -> pd.DataFrame:
    """The settings of this build, one row per setting (the inferred ones marked)."""
    return pd.DataFrame({
        "tier": [scale],
        "seeds": [", ".join(map(str, run_seeds(setup, seed)))],
        "rounds T": [setup.rounds],
        "hidden width (inferred)": [setup.hidden],
        "local steps (inferred)": [setup.local_steps],
        "mu (inferred)": [setup.mu],
        "clipping bound B (inferred)": [setup.clip],
        "learning rate": [setup.lr],
        "small R (inferred)": [setup.small_exposures],
        "clients per part": [", ".join(f"{s}: {spec.clients}" for s, spec in SCENARIOS.items())],
    }).T.rename(columns={0: ""})


def scenario_table() -> pd.DataFrame:
    """The scenarios (the paper's Table I), with the assignments and private runs compared."""
    return pd.DataFrame([
        {"scenario": s, "what differs": spec.description,
         "examples per client": " / ".join(map(str, spec.samples)),
         "densities": " / ".join(f"{d:g}" for d in spec.densities)
         + ("" if spec.late_densities is None
            else " then " + " / ".join(f"{d:g}" for d in spec.late_densities)),
         "assignments (non-private)": ", ".join(spec.assignments),
         "private runs": f"{spec.private_assignment} at eps 5 and 20; 1-1-1 at eps 20"}
        for s, spec in SCENARIOS.items()
    ]).set_index("scenario")


def noise_table(runs: pd.DataFrame) -> pd.DataFrame:
    """sigma_C and the round-1 sigma_S of every private run, per scenario, R and assignment."""
    noise = (runs[runs["round"] == 1].dropna(subset=["epsilon"])
             .groupby(["scenario", "exposures", "assignment", "epsilon"])
             [["client_sigma", "server_sigma"]].first().reset_index())
    noise["exposures"] = noise["exposures"].astype(int)
    return noise.rename(columns={"exposures": "R", "client_sigma": "sigma_C",
                                 "server_sigma": "sigma_S (round 1)"})


def curve_label(row: pd.Series) -> str:
    """Legend label of a run: assignment, and epsilon when private."""
    if pd.isna(row["epsilon"]):
        return f"{row['assignment']}, non-private"
    return f"{row['assignment']}, eps={row['epsilon']:g}"


def final_losses(runs: pd.DataFrame) -> pd.DataFrame:
    """Loss at the last round per run, with the run's labels."""
    last = runs[runs["round"] == runs["round"].max()]
    return last[["scenario", "seed", "assignment", "epsilon", "exposures", "train_loss",
                 "test_accuracy"]].reset_index(drop=True)


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Final loss (mean and range over seeds) and final test accuracy (mean) per scenario,
    R ("-" when non-private) and run label, rounded to three decimals."""
    finals = final_losses(runs)
    return (finals.assign(label=finals.apply(curve_label, axis=1),
                          R=finals["exposures"].map(lambda r: "-" if pd.isna(r) else f"{r:g}"))
            .groupby(["scenario", "R", "label"])
            .agg(final_loss=("train_loss", "mean"), spread=("train_loss", np.ptp),
                 test_accuracy=("test_accuracy", "mean"))
            .round(3))


def _select(frame: pd.DataFrame, scenario: str, assignment: str, epsilon: float | None,
            exposures: int | None) -> pd.DataFrame:
    sel = frame[(frame["scenario"] == scenario) & (frame["assignment"] == assignment)]
    sel = sel[sel["epsilon"].isna()] if epsilon is None else sel[sel["epsilon"] == epsilon]
    if exposures is not None:
        sel = sel[sel["exposures"] == exposures]
    return sel


LOSS_MARGIN = 0.02
"""Smallest difference in final training loss (nats) that a claim counts."""

LOSS_WHY = "about 1% of the paper's loss axis, 0 to 2.3 nats: the smallest gap its curves show"
"""Why :data:`LOSS_MARGIN`, as every verdict's evidence gives it."""

CHANCE = 0.1
"""Test accuracy of a guess among MNIST's ten balanced classes (shown beside private runs)."""

PAPER_NAMED_S1 = ("0-1-2", EQUAL)
"""The assignments the paper's text names among the five curves of its Figure 2 (the
other three assignments of this chapter are inferred)."""

LOSS = "final training loss"

VERDICT_CHANGES = {
    "fig2-012-best":
        "FAILS -> HOLDS at both tiers, restated: it now reads the assignments the paper "
        "names. '0-1-2' ends below equal factors by 0.144 [0.115, 0.174] nats at the quick "
        "tier and 0.138 [0.103, 0.174] at the paper tier (three paired seeds). The old "
        "verdict failed only because '0-0-1', an assignment of ours, ends below '0-1-2' "
        "(by 0.033 quick, 0.032 paper); that comparison is now the companion finding "
        "fig2-012-best-of-five (FAILS).",
    "fig3-eps20-below-eps5":
        "HOLDS -> NOT-TESTABLE at both tiers. At R = T both runs end above the initial loss "
        "(2.32 quick, 2.31 paper): 2.40 at eps=20 against 9.10 at eps=5 (quick), 2.63 "
        "against 17.4 (paper), with test accuracy 0.08-0.10, chance. The old check ranked "
        "two runs that learned nothing.",
    "fig3-equal-eps20-worse-than-weighted-eps5":
        "FAILS -> NOT-TESTABLE at both tiers: equal factors at eps=20 (2.34 quick, 2.47 "
        "paper) and '0-1-2' at eps=5 (9.10, 17.4) both end above the initial loss, at "
        "chance accuracy. At the small R, where the runs learn, equal factors at eps=20 "
        "end far below '0-1-2' at eps=5 (1.12 against 2.35 quick), against the paper.",
    "fig4-021-best":
        "FAILS -> FAILS at both tiers, now as a tie: '0-2-1', '0-1-1' and '0-1-2' end "
        "within 0.002 nats of each other (0-2-1 minus 0-1-2: 0.002 [-0.006, 0.010] quick, "
        "0.002 [-0.004, 0.008] paper), inside the 0.02 margin; the old check failed on "
        "their order, a thousandth apart, while the seeds spread over about 0.07.",
    "fig5-weighted-beats-equal":
        "FAILS -> NOT-TESTABLE at both tiers: at R = T both runs end above the initial "
        "loss (0-2-1 2.37 against equal 2.34 quick; 2.66 against 2.47 paper), with test "
        "accuracy 0.06-0.13, near chance. At the small R equal factors end lower (1.07 "
        "against 1.40 quick, 1.86 "
        "against 2.18 paper), against the paper.",
    "fig6-weight-on-large-clients":
        "FAILS -> FAILS at both tiers, now as a tie: the three assignments end within "
        "0.004 nats of each other (1-3-5 minus 1-1-1: 0.004 [-0.002, 0.009] quick, 0.001 "
        "[-0.001, 0.004] paper), inside the 0.02 margin, rather than in the wrong order.",
    "fig7-135-beats-equal-eps20":
        "FAILS -> NOT-TESTABLE at both tiers: at R = T '1-3-5' (4.51 quick, 7.85 paper) "
        "and equal factors (3.67, 7.29) both end far above the initial loss, at chance "
        "accuracy.",
    "fig9-eps20-below-eps5":
        "HOLDS -> NOT-TESTABLE at both tiers: at R = T adaptive factors end above the "
        "initial loss at both budgets (2.42 at eps=20 against 9.60 at eps=5 quick; 2.66 "
        "against 20.0 paper), at chance accuracy. At the small R the claim holds (1.77 "
        "against 2.33 quick; 2.24 against 2.44 paper), but that is not the reading judged.",
}
"""Claims whose verdict changed when judged over the seeds with the 0.02-nat margin and the
initial loss as trivial baseline, at the quick and the paper tier (old verdicts: the
seed-mean, zero-margin checks on the same runs). The other claims keep their verdicts:
fig2-equal-worst, fig4-equal-poor and fig8-adaptive-best hold and fig9-adaptive-converges
fails (the adaptive private runs end above their start) at both tiers."""


def arm_values(frame: pd.DataFrame, scenario: str, assignment: str,
               epsilon: float | None = None, exposures: int | None = None,
               value: str = "train_loss") -> pd.Series:
    """``value`` of one run label averaged per seed (one value per repeat, keyed by seed),
    over the rows of ``frame`` that match; KeyError when no run matches."""
    sel = _select(frame, scenario, assignment, epsilon, exposures)
    if sel.empty:
        raise KeyError(f"no runs for {scenario} {assignment} eps={epsilon} R={exposures}")
    return sel.groupby("seed")[value].mean()


def start_loss(runs: pd.DataFrame, scenario: str) -> pd.Series:
    """The loss at round 0 per seed (all runs of a scenario and seed share the initial
    model)."""
    first = runs[(runs["scenario"] == scenario) & (runs["round"] == 0)]
    return first.groupby("seed")["train_loss"].mean()


def initial_loss(runs: pd.DataFrame, scenario: str) -> Trivial:
    """The trivial baseline of a scenario's final losses: the loss it starts from (an arm
    whose final loss is not a margin below it, beyond its interval, learned nothing)."""
    return Trivial("the initial loss", float(start_loss(runs, scenario).mean()),
                   higher_is_better=False, tolerance=LOSS_MARGIN)


def _nonprivate(finals: pd.DataFrame, scenario: str,
                names: tuple[str, ...] | None = None) -> dict[str, pd.Series]:
    names = SCENARIOS[scenario].assignments if names is None else names
    return {a: arm_values(finals, scenario, a) for a in names}


def _label(assignment: str, epsilon: float) -> str:
    return f"{'equal' if assignment == EQUAL else assignment} eps={epsilon:g}"


def _accuracy_text(finals: pd.DataFrame, scenario: str, arms: list[tuple[str, float]],
                   exposures: int) -> str:
    accuracy = {_label(a, e): arm_values(finals, scenario, a, e, exposures, "test_accuracy")
                for a, e in arms}
    means = ", ".join(f"{label} {values.mean():.3f}" for label, values in accuracy.items())
    return f"mean test accuracy at R={exposures}: {means} (chance {CHANCE:g})"


def private_claim(runs: pd.DataFrame, finals: pd.DataFrame, setup: PadpflSetup,
                  scenario: str, a: tuple[str, float], b: tuple[str, float],
                  direction: str) -> tuple[Verdict, str]:
    """The verdict that run ``a`` (assignment, epsilon) ends ``direction`` than run ``b``
    in final loss at R = T, with the initial loss as trivial baseline; the context gives
    both runs' test accuracy and, for reference, the same comparison at the small R."""
    comparison = Comparison(LOSS, _label(*a), _label(*b), direction,  # type: ignore[arg-type]
                            LOSS_MARGIN, LOSS_WHY)
    trivial = initial_loss(runs, scenario)

    def judged(exposures: int) -> Verdict:
        return comparison.judge(arm_values(finals, scenario, *a, exposures),
                                arm_values(finals, scenario, *b, exposures), trivial=trivial)

    big, small = setup.rounds, setup.small_exposures
    context = f"judged at R=T={big}; " + _accuracy_text(finals, scenario, [a, b], big)
    if small != big:
        other = judged(small)
        context += (f"; for reference, at the small R={small} (server noise on): "
                    f"{other.status} ({other.evidence}); "
                    + _accuracy_text(finals, scenario, [a, b], small) + "; at R=T")
    return judged(big), context


def _best(claimed: str, arms: dict[str, pd.Series], direction: str,
          trivial: Trivial | None, quantity: str = LOSS) -> Verdict:
    return best_of(quantity, claimed, arms, direction=direction,  # type: ignore[arg-type]
                   margin=LOSS_MARGIN, why=LOSS_WHY, trivial=trivial)


def _less(quantity: str, a: str, b: str, values: dict[str, pd.Series],
          trivial: Trivial | None = None) -> Verdict:
    return Comparison(quantity, a, b, "less", LOSS_MARGIN, LOSS_WHY).judge(
        values[a], values[b], trivial=trivial)


def _scenario_1(sheet: ClaimSheet, runs: pd.DataFrame, finals: pd.DataFrame,
                setup: PadpflSetup) -> None:
    trivial = initial_loss(runs, "S1")
    arms = _nonprivate(finals, "S1")
    sheet.judged("fig2-equal-worst", _best(EQUAL, arms, "greater", trivial),
                 "S1 non-private: equal impact factors give the highest final loss of the "
                 "assignments")
    named = {a: arms[a] for a in PAPER_NAMED_S1}
    sheet.judged("fig2-012-best", _best("0-1-2", named, "less", trivial),
                 "S1 non-private: '0-1-2' gives a lower final loss than equal factors, the "
                 "other assignment the paper's text names among Figure 2's curves",
                 restated="was: '0-1-2' gives the lowest final loss of the five assignments "
                 "run here. The paper's text names only '0-1-2' and equal factors among the "
                 "five curves of Figure 2; '1-2-3', '0-1-1' and '0-0-1' are this chapter's "
                 "inference, and the old claim failed only against '0-0-1' (the clean clients "
                 "alone), which the paper does not name. The five-way ranking is kept as the "
                 "companion finding fig2-012-best-of-five")
    sheet.judged("fig2-012-best-of-five", _best("0-1-2", arms, "less", trivial),
                 "S1 non-private: '0-1-2' gives the lowest final loss of the five assignments "
                 "run here (three of them inferred)", origin="companion")
    _private_1(sheet, runs, finals, setup)


def _private_1(sheet: ClaimSheet, runs: pd.DataFrame, finals: pd.DataFrame,
               setup: PadpflSetup, suffix: str = "", lead: str = "",
               origin: str = "paper") -> None:
    a, low, high = SCENARIOS["S1"].private_assignment, min(EPSILONS), max(EPSILONS)
    verdict, context = private_claim(runs, finals, setup, "S1", (a, high), (a, low), "less")
    sheet.judged("fig3-eps20-below-eps5" + suffix, verdict,
                 lead + "S1 private, p = (0, 1/60, 1/30): the final loss at eps=20 is below "
                 "that at eps=5", context=context, origin=origin)
    verdict, context = private_claim(runs, finals, setup, "S1", (EQUAL, high), (a, low),
                                     "greater")
    sheet.judged("fig3-equal-eps20-worse-than-weighted-eps5" + suffix, verdict,
                 lead + "S1 private: equal factors at eps=20 end above the weighted run at "
                 "eps=5", context=context, origin=origin)


def _scenario_2(sheet: ClaimSheet, runs: pd.DataFrame, finals: pd.DataFrame,
                setup: PadpflSetup) -> None:
    trivial = initial_loss(runs, "S2")
    arms = _nonprivate(finals, "S2")
    sheet.judged("fig4-021-best", _best("0-2-1", arms, "less", trivial),
                 "S2 non-private: '0-2-1' gives the lowest final loss")
    others = [a for a in arms if a != EQUAL]
    parts = [(f"equal vs {a}", Comparison(LOSS, EQUAL, a, "greater", LOSS_MARGIN, LOSS_WHY)
              .judge(arms[EQUAL], arms[a], trivial=trivial)) for a in others]
    sheet.judged("fig4-equal-poor", at_least(len(others) - 1, parts),
                 "S2 non-private: equal factors are among the two worst assignments (their "
                 "final loss is above that of all other assignments but one)")
    _private_2(sheet, runs, finals, setup)


def _private_2(sheet: ClaimSheet, runs: pd.DataFrame, finals: pd.DataFrame,
               setup: PadpflSetup, suffix: str = "", lead: str = "",
               origin: str = "paper") -> None:
    a, high = SCENARIOS["S2"].private_assignment, max(EPSILONS)
    verdict, context = private_claim(runs, finals, setup, "S2", (a, high), (EQUAL, high),
                                     "less")
    sheet.judged("fig5-weighted-beats-equal" + suffix, verdict,
                 lead + "S2 private at eps=20: p = (0, 2/75, 1/75) ends below equal factors",
                 context=context, origin=origin)


def _scenario_3(sheet: ClaimSheet, runs: pd.DataFrame, finals: pd.DataFrame,
                setup: PadpflSetup) -> None:
    trivial = initial_loss(runs, "S3")
    arms = _nonprivate(finals, "S3")
    verdict = combine([("1-3-5 < 1-1-1", _less(LOSS, "1-3-5", EQUAL, arms, trivial)),
                       ("1-1-1 < 5-3-1", _less(LOSS, EQUAL, "5-3-1", arms, trivial))])
    sheet.judged("fig6-weight-on-large-clients", verdict,
                 "S3 non-private: the more weight on the clients with more data, the lower the "
                 "final loss (1-3-5 < 1-1-1 < 5-3-1)")
    _private_3(sheet, runs, finals, setup)


def _private_3(sheet: ClaimSheet, runs: pd.DataFrame, finals: pd.DataFrame,
               setup: PadpflSetup, suffix: str = "", lead: str = "",
               origin: str = "paper") -> None:
    a, high = SCENARIOS["S3"].private_assignment, max(EPSILONS)
    verdict, context = private_claim(runs, finals, setup, "S3", (a, high), (EQUAL, high),
                                     "less")
    sheet.judged("fig7-135-beats-equal-eps20" + suffix, verdict,
                 lead + "S3 private at eps=20: 1:3:5 factors end below equal factors, although "
                 "their aggregate noise is larger", context=context, origin=origin)


def _scenario_4(sheet: ClaimSheet, runs: pd.DataFrame, finals: pd.DataFrame,
                setup: PadpflSetup) -> None:
    trivial = initial_loss(runs, "S4")
    names = SCENARIOS["S4"].assignments
    area = {a: arm_values(runs, "S4", a) for a in names}
    verdict = combine([
        ("final loss", _best("adaptive", _nonprivate(finals, "S4"), "less", trivial)),
        ("mean loss over the rounds", _best("adaptive", area, "less", None,
                                            "mean training loss over the rounds")),
    ])
    sheet.judged("fig8-adaptive-best", verdict,
                 "S4 non-private: adaptive factors (heaviest on the slightly noisy part) give "
                 "the lowest final loss and the lowest mean loss over the rounds")
    _private_4(sheet, runs, finals, setup)


def _private_4(sheet: ClaimSheet, runs: pd.DataFrame, finals: pd.DataFrame,
               setup: PadpflSetup, suffix: str = "", lead: str = "",
               origin: str = "paper") -> None:
    a, low, high = SCENARIOS["S4"].private_assignment, min(EPSILONS), max(EPSILONS)
    verdict, context = private_claim(runs, finals, setup, "S4", (a, high), (a, low), "less")
    sheet.judged("fig9-eps20-below-eps5" + suffix, verdict,
                 lead + "S4 private, adaptive factors: the final loss at eps=20 is below that "
                 "at eps=5", context=context, origin=origin)
    start = start_loss(runs, "S4")
    parts = [(f"eps={e:g}", Comparison(LOSS, _label(a, e), "initial loss", "less",
                                       LOSS_MARGIN, LOSS_WHY)
              .judge(arm_values(finals, "S4", a, e, setup.rounds), start))
             for e in (low, high)]
    sheet.judged("fig9-adaptive-converges" + suffix, combine(parts),
                 lead + "S4 private, adaptive factors: the loss ends below its starting value "
                 "at both epsilons", context=f"judged at R=T={setup.rounds}", origin=origin)


def evaluate(runs: pd.DataFrame, setup: PadpflSetup, scale: str) -> list[Claim]:
    """Evaluate the claims of Figures 2-9 on the final training loss of every seed.

    Each claim is a comparison declared with the margin :data:`LOSS_MARGIN` and judged on
    the mean over seeds with its interval (paired by seed: the runs of a scenario and
    seed share their data, initial model and noise draws). Private claims are judged at
    R = T, the reading in which every upload is exposed (the paper's formulas then add no
    server noise); their evidence also gives the small-R comparison. A comparison whose
    arms all end within a margin of the initial loss is not testable.

    Parameters
    ----------
    runs
        The runs of every scenario (one row per run and round), as ``experiment.run``
        returns them.
    setup
        The tier the runs come from (its T and small R).
    scale
        The tier's name, recorded with each claim.
    """
    finals = final_losses(runs)
    sheet = ClaimSheet("padpfl", scale)
    for scenario in (_scenario_1, _scenario_2, _scenario_3, _scenario_4):
        scenario(sheet, runs, finals, setup)
    return sheet.claims


def accounting_table(
    scenario: str, setup: PadpflSetup, exposures: int, epsilon: float
) -> pd.DataFrame:
    """Per client part: the paper's epsilon and what exact accountants give.

    Each upload is a Gaussian mechanism of sensitivity 2B/m_i (the paper's
    bound) and noise sigma_C, i.e. noise multiplier sigma_C m_i / (2B). The
    paper composes the classic bound linearly over R exposures; the exact
    accountants compose the same mechanism over R exposures and over all T
    uploads.
    """
    spec = SCENARIOS[scenario]
    samples = [math.ceil(s / setup.sample_divisor) for s in spec.samples]
    min_m = min(samples)
    clip = setup.clip
    sigma_c = padpfl_client_sigma(clip, exposures, min_m, epsilon, DELTA)
    rows = []
    for part, m in enumerate(samples):
        multiplier = sigma_c * m / (2 * clip)
        per_upload = 2 * clip * classic_gaussian_c(DELTA) / (m * sigma_c)
        rows.append({
            "part": part + 1,
            "examples per client": m,
            "sigma_C": sigma_c,
            "noise multiplier": multiplier,
            "paper: eps per upload": per_upload,
            "paper: eps (R uploads, linear)": per_upload * exposures,
            f"PLD: eps over R={exposures}": exact_epsilon(multiplier, 1.0, exposures, DELTA,
                                                          accountant="pld"),
            f"RDP: eps over R={exposures}": exact_epsilon(multiplier, 1.0, exposures, DELTA,
                                                          accountant="rdp"),
            f"PLD: eps over T={setup.rounds}": exact_epsilon(multiplier, 1.0, setup.rounds, DELTA,
                                                         accountant="pld"),
        })
    return pd.DataFrame(rows)


def accounting(setup: PadpflSetup, scenario: str = "S3") -> pd.DataFrame:
    """:func:`accounting_table` at R = T and at the small R, each at every epsilon, stacked
    with columns ``R`` and ``epsilon``."""
    return pd.concat([
        accounting_table(scenario, setup, exposures, eps).assign(R=exposures, epsilon=eps)
        for exposures in dict.fromkeys((setup.rounds, setup.small_exposures))
        for eps in EPSILONS
    ], ignore_index=True)


def accounting_note(table: pd.DataFrame) -> str:
    """What the :func:`accounting` table says, as Markdown: the per-upload budget the paper's
    bound is applied at for the smallest clients (part 1)."""
    smallest = table[table["part"] == 1]
    per_upload = {(int(r.R), r.epsilon): r["paper: eps per upload"]
                  for _, r in smallest.iterrows()}
    valid = [f"R={r}, eps={e:g}: {v:.2f}" for (r, e), v in per_upload.items()]
    return (
        "Clients with more data than the smallest get more noise than their own sensitivity "
        "needs ($\\sigma_C$ is set by $\\min_j m_j$), so their exact $\\varepsilon$ is far "
        "below the budget. For the smallest clients, the per-upload budget the paper's bound "
        "is applied at is " + "; ".join(valid) + " (the bound is only proven below 1). "
        "Where all $T$ uploads are observed and $R<T$, the exact guarantee is much weaker "
        "than the $\\varepsilon$ the run is labelled with."
    )


# --- The regime search -----------------------------------------------------------------

def _point_text(point: dict[str, float]) -> str:
    return (f"hidden width {int(point['hidden'])}, {int(point['local_steps'])} local steps, "
            f"B = {point['clip']:g}")


def regime_table(scored: pd.DataFrame, setup: PadpflSetup) -> pd.DataFrame:
    """The search's points (one factor moved at a time, then the best values combined)
    with their score: the mean final test accuracy of S1's three private runs at R = T
    (first seed); the tier's own setting marked."""
    table = scored.copy()
    centre = (table["hidden"] == setup.hidden) & (table["local_steps"] == setup.local_steps) \
        & (table["clip"] == setup.clip)
    table.loc[centre, "stage"] = "the tier's setting"
    return (table.rename(columns={"local_steps": "local steps", "clip": "B",
                                  "score": "mean private test accuracy"})
            .round(3).reset_index(drop=True))


def _learns(values: pd.DataFrame, start: pd.Series, label: str) -> Verdict:
    """Whether one private arm learns: its final loss a margin below the initial loss and
    its final test accuracy above chance by more than :data:`studies.LEARNS_ACCURACY` minus
    chance, each over the seeds."""
    loss = values.set_index("seed")["train_loss"]
    accuracy = values.set_index("seed")["test_accuracy"]
    chance = pd.Series(CHANCE, index=accuracy.index)
    return combine([
        ("loss below its start", Comparison(LOSS, label, "initial loss", "less",
                                            LOSS_MARGIN, LOSS_WHY).judge(loss, start)),
        ("accuracy above chance", Comparison(
            "final test accuracy", label, "chance", "greater",
            studies.LEARNS_ACCURACY - CHANCE,
            f"a run that learns reaches {studies.LEARNS_ACCURACY:g}, three times chance")
         .judge(accuracy, chance)),
    ])


def regime_repeats_table(repeats: pd.DataFrame) -> pd.DataFrame:
    """Per arm of the best point: final loss and test accuracy (mean and 95% interval over
    the seeds) and the initial loss."""
    last = repeats[repeats["round"] == repeats["round"].max()]
    rows = []
    for _, arm in last.groupby(["assignment", "epsilon"], dropna=False):
        loss = estimate(arm.set_index("seed")["train_loss"])
        accuracy = estimate(arm.set_index("seed")["test_accuracy"])
        rows.append({"run": curve_label(arm.iloc[0]), "seeds": loss.n,
                     "final loss": f"{loss.mean:.3f} [{loss.low:.3f}, {loss.high:.3f}]",
                     "test accuracy": f"{accuracy.mean:.3f} [{accuracy.low:.3f}, "
                                      f"{accuracy.high:.3f}]"})
    start = estimate(start_loss(repeats, studies.REGIME_SCENARIO))
    rows.append({"run": "initial model", "seeds": start.n,
                 "final loss": f"{start.mean:.3f} [{start.low:.3f}, {start.high:.3f}]",
                 "test accuracy": f"{CHANCE:g} (chance)"})
    return pd.DataFrame(rows).set_index("run")


def regime_claims(regime: pd.DataFrame, setup: PadpflSetup, best: dict[str, float],
                  scale: str) -> list[Claim]:
    """Companion findings of the search, judged on ``regime``, the private runs of every
    scenario at the best point (R = T, the tier's seeds): whether the private runs of S1
    learn there (per epsilon), and the private claims of Figures 3-9 judged again. The
    paper's stated settings stay the main reading. ``repeats`` (the search's own three
    seeds of the best point) is shown in :func:`regime_repeats_table`, not judged here."""
    sheet = ClaimSheet("padpfl", scale)
    s1 = regime[regime["scenario"] == studies.REGIME_SCENARIO]
    last = s1[s1["round"] == s1["round"].max()]
    start = start_loss(s1, studies.REGIME_SCENARIO)
    where = _point_text(best)
    for epsilon in sorted(EPSILONS):
        arms = last[last["epsilon"] == epsilon]
        parts = [(_label(a, epsilon), _learns(arm, start, _label(a, epsilon)))
                 for a, arm in arms.groupby("assignment")]
        sheet.judged(f"regime-private-learns-eps{epsilon:g}", combine(parts),
                     f"Regime search: at the best point found ({where}), every private run of "
                     f"S1 at eps={epsilon:g} and R = T ends a margin below its initial loss "
                     f"with test accuracy above {studies.LEARNS_ACCURACY:g}",
                     origin="companion")
    at = studies.regime_setup(setup, best)
    finals = final_losses(regime)
    lead = f"In the searched regime ({where}; not the paper's settings): "
    for private in (_private_1, _private_2, _private_3, _private_4):
        private(sheet, regime, finals, at, suffix="-in-regime", lead=lead, origin="companion")
    return sheet.claims


# --- The equal-total-noise ablation ----------------------------------------------------

ABLATION_ARMS = ("weighted", "uniform", "uniform at weighted noise", "weighted at uniform noise")


def ablation_table(ablation: pd.DataFrame) -> pd.DataFrame:
    """Per scenario and arm: the factor on the paper's noise, the final loss and test
    accuracy (mean and 95% interval over the seeds)."""
    last = ablation[ablation["round"] == ablation["round"].max()]
    rows = []
    for (scenario, arm), runs in last.groupby(["scenario", "arm"]):
        loss = estimate(runs.set_index("seed")["train_loss"])
        accuracy = estimate(runs.set_index("seed")["test_accuracy"])
        rows.append({"scenario": scenario, "arm": arm, "assignment": runs["assignment"].iloc[0],
                     "noise factor": round(float(runs["noise_scale"].iloc[0]), 3),
                     "seeds": loss.n,
                     "final loss": f"{loss.mean:.3f} [{loss.low:.3f}, {loss.high:.3f}]",
                     "test accuracy": f"{accuracy.mean:.3f} [{accuracy.low:.3f}, "
                                      f"{accuracy.high:.3f}]"})
    order = {a: i for i, a in enumerate(ABLATION_ARMS)}
    table = pd.DataFrame(rows)
    table = table.sort_values(["scenario", "arm"], key=lambda c: c.map(order)
                              if c.name == "arm" else c)
    return table.set_index(["scenario", "arm"])


def _arm(ablation: pd.DataFrame, scenario: str, arm: str) -> pd.Series:
    last = ablation[(ablation["round"] == ablation["round"].max())
                    & (ablation["scenario"] == scenario) & (ablation["arm"] == arm)]
    return last.set_index("seed")["train_loss"]


def ablation_claims(ablation: pd.DataFrame, setup: PadpflSetup, scale: str) -> list[Claim]:
    """Per scenario of the ablation, whether the chapter's explanation holds: under the
    paper's noise the weighted run ends above the uniform one, and the gap shrinks by more
    than the margin when the uniform run gets the weighted run's total noise. The evidence
    also gives the comparison at equal total noise itself."""
    sheet = ClaimSheet("padpfl", scale)
    for scenario in studies.ABLATION_SCENARIOS:
        trivial = initial_loss(ablation, scenario)
        weighted = _arm(ablation, scenario, "weighted")
        uniform = _arm(ablation, scenario, "uniform")
        equal = _arm(ablation, scenario, "uniform at weighted noise")
        gap = Comparison(LOSS, "weighted", "uniform", "greater", LOSS_MARGIN, LOSS_WHY)
        shrinks = Comparison("weighted minus uniform in final loss", "at the paper's noise",
                             "at equal total noise", "greater", LOSS_MARGIN, LOSS_WHY)
        verdict = combine([
            ("gap at the paper's noise", gap.judge(weighted, uniform, trivial=trivial)),
            ("gap shrinks at equal total noise",
             shrinks.judge(weighted - uniform, weighted - equal)),
        ])
        at_equal = Comparison(LOSS, "weighted", "uniform at weighted noise", "greater",
                              LOSS_MARGIN, LOSS_WHY).judge(weighted, equal, trivial=trivial)
        spec = SCENARIOS[scenario]
        sheet.judged(
            f"ablation-noise-explains-gap-{scenario}", verdict,
            f"Ablation, {scenario} at eps={studies.ABLATION_EPSILON:g} and the small "
            f"R={setup.small_exposures}: the weighted run ('{spec.private_assignment}') ends "
            "above equal factors because its factors raise the total noise; with the uniform "
            "run's noise raised to the same total, the gap shrinks",
            context=f"weighted still above uniform at equal total noise: {at_equal.status} "
                    f"({at_equal.brief})", origin="companion")
    return sheet.claims


# --- Repeats and size bounds -----------------------------------------------------------

def repeats_table(runs: pd.DataFrame, setup: PadpflSetup, scale: str,
                  first: int = 3) -> pd.DataFrame:
    """Every claim's verdict over the first ``first`` seeds of ``runs`` and over all of
    them, side by side (the same runs: only the number of repeats differs)."""
    seeds = sorted(runs["seed"].unique())
    few = evaluate(runs[runs["seed"].isin(seeds[:first])], setup, scale)
    every = evaluate(runs, setup, scale)
    return pd.DataFrame({
        "claim": [c.claim_id for c in every],
        f"over {min(first, len(seeds))} seeds": [c.status for c in few],
        f"over {len(seeds)} seeds": [c.status for c in every],
    }).set_index("claim")


def bounds_table(setup: PadpflSetup) -> pd.DataFrame:
    """The setup's sizes, the bound each is checked against when the setup is made
    (:data:`fedlib.limits.LIMITS`, and the MNIST test set for the test examples), and this
    build's value."""
    from fedlib.limits import LIMITS
    from fedlib.papers.padpfl.experiment import MNIST_TEST_SIZE

    rows = [("rounds", "rounds", setup.rounds), ("local_steps", "local_steps",
                                                 setup.local_steps),
            ("hidden", "dim", setup.hidden), ("test_examples", "n_test", setup.test_examples),
            ("seeds (their number)", "repeats", len(setup.seeds))]
    table = pd.DataFrame([{"setting": name, "bound": f"{LIMITS[limit]:,}",
                           "this build": f"{value:,}"} for name, limit, value in rows])
    table.loc[table["setting"] == "test_examples", "bound"] = (
        f"{MNIST_TEST_SIZE:,} (the MNIST test set)")
    finite = pd.DataFrame([{"setting": name, "bound": "finite, > 0" if name != "mu"
                            else "finite, >= 0", "this build": f"{getattr(setup, name):g}"}
                           for name in ("lr", "mu", "clip")])
    return pd.concat([table, finite], ignore_index=True).set_index("setting")
