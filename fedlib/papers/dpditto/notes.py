"""DP-Ditto: the history of the chapter's verdicts, in words, completed for a page with
the verdict each claim reaches now (:func:`verdict_changes_notes`), and what the
comparison of tiers says of the claims whose verdicts differ (:func:`tier_notes`).

The history quotes no measured number: the runs and checks that gave the old figures
are not the evidence any more, and a number written here by hand would not follow the
runs. Every number a note shows is read, when the page is rendered, from the claims it
is about (this build's, and the paper tier's rendered from stored runs); the claims
table gives every claim's evidence in full."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fedlib.papers.dpditto.claims import LOSS_MARGIN
from fedlib.render.findings import numbers
from fedlib.verdicts.claims import Claim
from fedlib.verdicts.compare import FAILS, HOLDS, INCONCLUSIVE, NOT_RUN, NOT_TESTABLE

TIERS = ("quick", "paper")
"""The tiers a note tells the history of, in the order it tells them."""


Entry = tuple[str, Mapping[str, str]]
"""One tier's history of a claim: what its verdict was before, in words, and, per
verdict it may reach now, why in words (shown only when it reaches that verdict)."""


SINGLE = "NOT-RUN while a single seed was stored (no run-to-run variation to judge by)"


OLD = "on the old single-run, zero-margin check"


FIRST = "on the first repeats"


EDGE = ("an open edge of its grid, so the grid cannot place the optimum and the claim is "
        "not testable")


MLR = "read on MNIST-MLR, the model the quick tier compares the methods and sweeps lambda on"


CNN = ("the old check and the new on the same runs (the old quick tier ran the CNN on a "
       "single seed)")


LOWEST = (f"that lambda was the lowest of the grid read at the claim's budgets, {EDGE}")


WITH_LIMIT = ("once the tuned grid holds its limit lambda = 0, the local models, run once "
              "without noise since they never see it (before, the grid of a finite budget "
              "left them out)")


LOCAL_TUNED = ("the local models (lambda = 0), the method's limit, are tuned at both budgets "
               "on every seed")


WITH_T5 = ("once T = 5 was run below the grid on every seed (the large lambdas were best at "
           "its smallest T)")


WITH_T60 = ("once T = 60 was run above the grid on every seed (DP-APPLE was best at its "
            "largest T)")


WITH_T80_LOW = ("once T = 80 was run above the grid on every seed (DP-APPLE was best at "
                "T = 60, its largest)")


WITH_T80 = ("once the DNN's later seeds ran T = 80 (the large lambdas and the loss of the "
            "smallest lambdas were best at T = 60, the largest T the seeds shared)")


LONGER_T = ("once the quick tier's MLR panel ran T = 40, 80 and 160 beyond its 5, 10 and 20 "
            "(its optima in T sat on T = 20, the top of the short grid)")


UNSTORED = ("NOT-RUN while the quick tier's eps = 1 runs were missing from the published "
            "store (a build from stored runs could not read them)")


HISTORY: dict[str, dict[str, Entry]] = {
    "fig3-4-mnist-dnn-ditto-best-accuracy": {
        "quick": (f"{MLR}: HOLDS {OLD}",
                  {FAILS: "DP-Ditto and DP-FedAMP tie within the margin"}),
        "paper": (f"FAILS {OLD} -> {SINGLE} -> FAILS {FIRST}",
                  {FAILS: "DP-APPLE is ahead of DP-Ditto, and DP-FedAMP ties it within the "
                          "margin"})},
    "fig3-4-mnist-dnn-ditto-best-fairness": {
        "quick": (f"{MLR}: HOLDS {OLD}",
                  {INCONCLUSIVE: "DP-Ditto's std is below DP-FedAMP's, but the interval of "
                                 "the reduction contains the margin"}),
        "paper": (f"FAILS {OLD} -> {SINGLE} -> FAILS {FIRST}",
                  {FAILS: "DP-Ditto's std is well below DP-FedAMP's, DP-pFedMe's and "
                          "DP-FedALA's, but DP-APPLE's is a fraction of DP-Ditto's"})},
    "fig3-4-mnist-dnn-smaller-lambda-at-smaller-eps": {
        "quick": (f"{MLR}: HOLDS {OLD}, which accepted a tie (no larger) -> FAILS once the "
                  "paper's 'smaller' was asked for: the same lambda, the grid's lowest, is "
                  f"tuned at both budgets on every seed -> NOT-TESTABLE: {LOWEST} -> FAILS "
                  f"{WITH_LIMIT}",
                  {FAILS: LOCAL_TUNED}),
        "paper": (f"HOLDS {OLD} -> {SINGLE} -> FAILS {FIRST} and on all of them: the same "
                  "lambda, the grid's lowest, at both budgets on every seed -> NOT-TESTABLE: "
                  f"{LOWEST} -> FAILS {WITH_LIMIT}",
                  {FAILS: LOCAL_TUNED})},
    "fig3-4-mnist-dnn-baselines-degrade": {
        "quick": (f"{MLR}: FAILS {OLD}", {}),
        "paper": (f"HOLDS {OLD} -> {SINGLE} -> FAILS {FIRST}",
                  {FAILS: "no baseline loses more than the margin from the larger budget to "
                          "the smaller"})},
    "headline-mnist-dnn-gains": {
        "quick": (f"{MLR}: FAILS {OLD} -> FAILS with fairness in variance (the paper's "
                  "Definition 1)",
                  {FAILS: "the gains over DP-FedAMP fall far short of the paper's"}),
        "paper": (f"FAILS {OLD} -> {SINGLE} -> FAILS {FIRST} (the variance gain over "
                  "DP-FedAMP at the larger budget not surely past the paper's) -> FAILS "
                  f"{WITH_LIMIT}",
                  {FAILS: "DP-Ditto is tuned to its local models (lambda = 0); their variance "
                          "gains over DP-FedAMP, DP-pFedMe and DP-FedALA pass the paper's, "
                          "the accuracy gains are far from it, and DP-APPLE is both more "
                          "accurate and fairer"})},
    "fig5-mnist-mlr-approaches-noiseless": {
        "quick": (f"HOLDS {OLD}, which ranked gaps too small to see against each other -> "
                  f"FAILS over T = 5 to 20, every gap inside the margin -> HOLDS {LONGER_T}",
                  {FAILS: "every gap to the noiseless curve is inside the margin",
                   HOLDS: "over the longer T grid the gap at the smallest budget clears the "
                          "margin and vanishes at the largest"}),
        "paper": (f"HOLDS {OLD} -> HOLDS {FIRST}",
                  {HOLDS: "the gap at the smallest budget clears the margin and vanishes at "
                          "the largest"})},
    "fig5-mnist-mlr-critical-T": {
        "quick": (f"FAILS {OLD} -> NOT-TESTABLE: the loss was lowest at T = 20, the top of "
                  f"the short grid, {EDGE} -> INCONCLUSIVE {LONGER_T}",
                  {NOT_TESTABLE: "the quick rounds end before the loss turns: it is lowest "
                                 f"at the grid's largest T, {EDGE}",
                   INCONCLUSIVE: "the loss is lowest inside the longer grid, well below its "
                                 "smallest T, but level with its largest within the "
                                 "interval"}),
        "paper": (f"HOLDS {OLD} -> HOLDS {FIRST} (the loss lowest at the same T inside the "
                  "grid on each seed)",
                  {HOLDS: "the mean loss is lowest inside the T grid, below both its ends by "
                          "more than the margin"})},
    "fig5-mnist-dnn-approaches-noiseless": {
        "quick": ("FAILS on the old tier's single seed and HOLDS on the current seeds, both "
                  f"{OLD}, which ranked gaps too small to see against each other",
                  {FAILS: "the gap at the smallest budget is inside the margin"}),
        "paper": (f"HOLDS {OLD} -> {SINGLE} -> HOLDS {FIRST}",
                  {HOLDS: "the gap at the smallest budget clears the margin and shrinks to "
                          "nothing at the largest"})},
    "fig5-mnist-dnn-critical-T": {
        "paper": (f"HOLDS {OLD} -> {SINGLE} -> HOLDS {FIRST}",
                  {HOLDS: "at the smallest budget the loss is lowest inside the T grid, "
                          "below both its ends by more than the margin"})},
    "fig3-4-fmnist-cnn-ditto-best-accuracy": {
        "quick": (f"{CNN}: HOLDS {OLD}",
                  {INCONCLUSIVE: "DP-Ditto leads DP-FedAMP, but the interval of the lead "
                                 "reaches below the margin"})},
    "fig3-4-fmnist-cnn-ditto-best-fairness": {
        "quick": (f"{CNN}: FAILS {OLD}, on the means against DP-APPLE (at chance accuracy) "
                  "and DP-FedALA",
                  {INCONCLUSIVE: "DP-Ditto's std varies too much from seed to seed for a "
                                 "comparison to be decided"})},
    "fig3-4-fmnist-cnn-smaller-lambda-at-smaller-eps": {
        "quick": (f"{CNN}: HOLDS {OLD}, which accepted a tie -> FAILS: each seed tunes the "
                  "same lambda at both budgets -> NOT-TESTABLE: the tuned lambdas sat at the "
                  "ends of the CNN's short lambda grid, the lowest read without the limit "
                  f"lambda = 0 -> FAILS {WITH_LIMIT}",
                  {FAILS: "each seed tunes the same lambda at both budgets, on a grid whose "
                          "ends are now both the method's limits"})},
    "fig3-4-fmnist-cnn-baselines-degrade": {
        "quick": (f"{CNN}: FAILS {OLD}", {})},
    "headline-fmnist-cnn-gains": {
        "quick": (f"{CNN}: FAILS {OLD}",
                  {INCONCLUSIVE: "the per-seed gains spread too widely to decide, but for "
                                 "the accuracy gain over DP-APPLE, which sits at chance"})},
    "fig5-fmnist-cnn-approaches-noiseless": {
        "quick": (f"{CNN}: HOLDS {OLD}, which ranked ties",
                  {FAILS: "at its single T every gap to the noiseless loss is inside the "
                          "margin"})},
    "fig6-mnist-dnn-small-lambda-rises": {
        "quick": (f"{MLR}: HOLDS {OLD} -> INCONCLUSIVE over T = 5 to 20 -> HOLDS {LONGER_T}",
                  {INCONCLUSIVE: "accuracy rises from the smallest T to the largest, but "
                                 "the interval of the rise contains the margin",
                   HOLDS: "for the small lambdas accuracy rises from the smallest T to the "
                          "largest by more than the margin"}),
        "paper": (f"HOLDS {OLD} -> {SINGLE} -> FAILS {FIRST}",
                  {FAILS: "accuracy rises by less than the margin over the T grid"})},
    "fig6-mnist-dnn-large-lambda-peaks": {
        "quick": (f"{MLR}: FAILS {OLD} -> NOT-TESTABLE: for every large lambda the best T "
                  f"was T = 20, the top of the short grid -> INCONCLUSIVE {LONGER_T}",
                  {NOT_TESTABLE: f"for every large lambda the best T is the grid's largest, "
                                 f"{EDGE}",
                   INCONCLUSIVE: "the large lambdas below 1 peak inside the longer grid, but "
                                 "not every fall on either side clears the margin, and at "
                                 "lambda = 1 accuracy still rises to the grid's largest T "
                                 "(that part untested)"}),
        "paper": (f"FAILS {OLD} -> {SINGLE} -> NOT-TESTABLE {FIRST}: for every large lambda "
                  f"the best T was T = 60, the largest the seeds shared, {EDGE}",
                  {NOT_TESTABLE: f"for every large lambda the best T is the largest the "
                                 f"seeds share, {EDGE}",
                   INCONCLUSIVE: f"{WITH_T80}, lambda = 1 (DP-FedAvg) peaks inside the "
                                 "grid, far above T = 10, but its fall to T = 80 does not "
                                 "clear the margin; the two large lambdas below 1 are level "
                                 "from T = 60 to 80 and best at T = 80, the grid's largest "
                                 "(those parts untested)"})},
    "fig6-mnist-dnn-smaller-lambda-fairer": {
        "paper": (f"HOLDS {OLD} -> {SINGLE} -> HOLDS {FIRST}",
                  {HOLDS: "the rank correlation of lambda and the std is strong on every "
                          "seed"})},
    "fig7-mnist-dnn-optimal-lambda-falls": {
        "quick": (f"{MLR}: FAILS on the checks before: the fairness-optimal lambda is the "
                  "grid's lowest at every T",
                  {NOT_TESTABLE: "that lowest lambda, below which the limit lambda -> 0 "
                                 f"is not in the grid, is {EDGE}"}),
        "paper": (f"FAILS {OLD} -> {SINGLE} -> FAILS {FIRST} and on all of them: the "
                  "fairness-optimal lambda is the grid's lowest at every T",
                  {NOT_TESTABLE: "that lowest lambda, below which the limit lambda -> 0 "
                                 f"is not in the grid, is {EDGE}"})},
    "fig7-mnist-dnn-optimal-T-rises": {
        "quick": (f"{MLR}: FAILS on the checks before: the loss-optimal T is the same grid "
                  "point for every lambda",
                  {NOT_TESTABLE: f"that point is the grid's largest T, {EDGE}"}),
        "paper": (f"HOLDS {OLD} -> {SINGLE} -> FAILS on the first repeats at the fewer T of "
                  "the smallest budget's runs (the loss-optimal T their largest for every "
                  f"lambda) -> HOLDS {FIRST} at the T every seed ran, and on all of them: the "
                  "loss-optimal T is the grid's largest for the smallest lambdas, inside it "
                  "for the larger ones",
                  {INCONCLUSIVE: "the optima of the smallest lambdas sit on the grid's "
                                 "largest T, an open edge, so the parts that read them are "
                                 "not testable while the others hold (so also "
                                 f"{WITH_T80}: the loss of the smallest lambda is still lowest "
                                 "at the largest T on every seed)"})},
    "fig3-4-mnist-dnn-baselines-fall-in-T": {
        "paper": (f"{SINGLE} -> FAILS {FIRST}",
                  {FAILS: "neither falls: DP-FedALA's accuracy rises over the T grid at the "
                          "larger budget, DP-FedAMP's is about level or rises"})},
    "fig3-4-mnist-dnn-apple-peaks-in-T": {
        "paper": (f"{SINGLE} -> NOT-TESTABLE on the first repeats at the fewer T of the "
                  "smallest budget's runs (best at their largest, the open edge) -> FAILS "
                  f"{FIRST} at the T every seed ran: at the smaller budget DP-APPLE's best T "
                  "was inside the grid but level with its largest, no peak by the margin; at "
                  "the larger it was best at the grid's largest T, the open edge",
                  {FAILS: "at the smaller budget DP-APPLE's best T is inside the grid but "
                          "level with its largest, no peak by the margin; at the larger it "
                          "is best at the grid's largest T, the open edge",
                   NOT_TESTABLE: f"{WITH_T80}, DP-APPLE is best at T = 80, the largest T the "
                                 f"seeds share, at both budgets, {EDGE} (its accuracy is "
                                 "level from T = 40 on)"})},
    "fig6-mnist-dnn-fairness-degrades-improves-degrades": {
        "quick": (f"{MLR}: NOT-RUN while the T grid had three points -> FAILS {LONGER_T}",
                  {FAILS: "the std falls from the first T to the second instead of degrading "
                          "first"}),
        "paper": (f"{SINGLE} -> NOT-RUN while the repeats ran too few T to show a rise, a "
                  f"fall and a second rise -> FAILS {FIRST}",
                  {FAILS: "the std falls from the first T to the second instead of degrading "
                          "first, falls again, then is about level"})},
    "fig3-4-mnist-dnn-ditto-best-accuracy-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {HOLDS: "DP-Ditto, tuned to its local models, leads each of the four baselines "
                          "by more than the margin"}),
        "paper": (f"NOT-RUN (not computed) -> FAILS {FIRST} at the smallest budget",
                  {FAILS: "DP-Ditto leads DP-FedAMP, DP-pFedMe and DP-FedALA by more than "
                          "the margin, but DP-APPLE ties it"})},
    "fig3-4-mnist-dnn-ditto-best-fairness-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {HOLDS: "DP-Ditto's std is below each baseline's by more than the margin"}),
        "paper": ("NOT-RUN (not computed) -> INCONCLUSIVE on the first repeats at the "
                  "smallest budget (against DP-APPLE's std the seeds disagreed) -> FAILS on "
                  "all of them: DP-APPLE's std well below DP-Ditto's -> INCONCLUSIVE "
                  f"{WITH_T5}",
                  {FAILS: "DP-Ditto's std is far below DP-FedAMP's, DP-pFedMe's and "
                          "DP-FedALA's, but DP-APPLE's is well below DP-Ditto's",
                   INCONCLUSIVE: "DP-Ditto's std is far below DP-FedAMP's, DP-pFedMe's and "
                                 "DP-FedALA's; against DP-APPLE's, which is larger at T = 5, "
                                 "the seeds disagree"})},
    "fig3-4-mnist-dnn-smaller-lambda-at-smaller-eps-eps1-vs-10": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {INCONCLUSIVE: "every seed tunes lambda = 0 at the smallest budget; at the "
                                 "larger one a seed tunes a larger lambda, and the interval of the"
                                 " difference spans the half-step margin"}),
        "paper": (f"NOT-RUN (not computed) -> FAILS {FIRST} at the smallest budget: the same "
                  f"lambda, the grid's lowest, at both budgets on every seed -> NOT-TESTABLE: "
                  f"{LOWEST} -> FAILS {WITH_LIMIT}",
                  {FAILS: LOCAL_TUNED})},
    "fig3-4-mnist-dnn-baselines-degrade-eps1-vs-10": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {INCONCLUSIVE: "DP-FedAMP and DP-pFedMe lose more than the margin from the "
                                 "larger budget to the smallest; the intervals of DP-APPLE and DP-"
                                 "FedALA contain it"}),
        "paper": (f"NOT-RUN (not computed) -> FAILS {FIRST} at the smallest budget",
                  {FAILS: "DP-FedAMP, DP-FedALA and DP-pFedMe lose more than the margin from "
                          "the larger budget to the smallest, DP-APPLE does not"})},
    "fig3-4-mnist-dnn-baselines-fall-in-T-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {FAILS: "DP-FedALA's accuracy rises over the T grid instead of falling"}),
        "paper": (f"NOT-RUN (not computed) -> HOLDS {FIRST} at the smallest budget",
                  {HOLDS: "DP-FedALA and DP-FedAMP fall by more than the margin over the T "
                          "grid (at the larger budgets neither falls)"})},
    "fig3-4-mnist-dnn-apple-peaks-in-T-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {NOT_TESTABLE: f"DP-APPLE is best at the grid's largest T, {EDGE}"}),
        "paper": (f"NOT-RUN (not computed) -> NOT-TESTABLE {FIRST} at the smallest budget: "
                  f"DP-APPLE best at the grid's largest T -> NOT-TESTABLE {WITH_T60}: best at "
                  "the grid's largest T again, level with the T below it (a plateau, no peak "
                  f"yet) -> FAILS {WITH_T80_LOW}",
                  {NOT_TESTABLE: "DP-APPLE is best at the grid's largest T again, level with "
                                 f"the T below it (a plateau, no peak yet), {EDGE}",
                   FAILS: "DP-APPLE's best T is now inside the grid: its accuracy rises to it "
                          "from the smallest T by more than the margin, then stays level to "
                          "the largest T, so it does not rise then fall"})},
    "headline-mnist-dnn-gains-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {FAILS: "the accuracy gains fall far short of the paper's"}),
        "paper": (f"NOT-RUN (not computed) -> FAILS {FIRST} at the smallest budget",
                  {FAILS: "the variance gains over DP-FedAMP, DP-pFedMe and DP-FedALA pass "
                          "the paper's, the accuracy gains fall short of it, and DP-APPLE is "
                          "ahead in accuracy"})},
    "fig6-mnist-dnn-small-lambda-rises-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {INCONCLUSIVE: "accuracy rises over the T grid, but the interval of each rise "
                                 "contains the margin"}),
        "paper": (f"NOT-RUN (not computed) -> FAILS {FIRST} at the smallest budget",
                  {FAILS: "at the largest of the small lambdas accuracy rises by less than "
                          "the margin over the T grid; the smaller ones rise by about the "
                          "margin or more"})},
    "fig6-mnist-dnn-large-lambda-peaks-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {INCONCLUSIVE: "the large lambdas peak inside the T grid, but not every fall on "
                                 "either side clears the margin"}),
        "paper": (f"NOT-RUN (not computed) -> NOT-TESTABLE {FIRST} at the smallest budget: "
                  "for every large lambda the best T was the grid's smallest, T = 10, an open "
                  f"edge -> FAILS {WITH_T5}",
                  {FAILS: "at the large lambdas below 1 accuracy peaks at T = 10 but ties "
                          "T = 5 within the margin, so it does not rise then fall (at "
                          "lambda = 1, DP-FedAvg, the runs at one T spread from seed to seed, "
                          "so that part is not testable)"})},
    "fig6-mnist-dnn-fairness-degrades-improves-degrades-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {FAILS: "the std falls from the first T to the second instead of "
                          "degrading first"}),
        "paper": (f"NOT-RUN (the T grid had three points) -> FAILS {WITH_T5}",
                  {FAILS: "the std of the training losses improves from T = 5 to 10 and "
                          "degrades after, the reverse of the paper's first two phases"})},
    "fig6-mnist-dnn-smaller-lambda-fairer-eps1": {
        "quick": (f"{MLR}: {UNSTORED}",
                  {HOLDS: "the rank correlation of lambda and the std is strong on every seed"}),
        "paper": (f"NOT-RUN (not computed) -> HOLDS {FIRST} at the smallest budget",
                  {HOLDS: "the rank correlation of lambda and the std is strong on every "
                          "seed"})},
}
"""Per claim whose verdict changed when judged over repeats with declared margins (and
the open-edge rule), per tier: its history in words (no measured number) and why, in
words, it reaches each verdict it may reach now (:func:`verdict_changes_notes` adds the
verdict and its numbers, read from the page's claims)."""


QUOTED_EVIDENCE = 400
"""Longest evidence (characters) a note quotes in full where no deciding number can be
read from it; a longer one is left to the claims table."""


def _by_tier(claims: Sequence[Claim], stored: Sequence[Claim]) -> dict[tuple[str, str], Claim]:
    """(claim id, tier) -> the claim, this build's first, then the stored tier's."""
    found: dict[tuple[str, str], Claim] = {}
    for claim in [*claims, *stored]:
        found.setdefault((claim.claim_id, claim.scale), claim)
    return found


def _numbers(claim: Claim) -> str:
    """The deciding number of ``claim`` read from its evidence, else the evidence itself
    when short, else where to find it."""
    found = numbers(claim)
    if found:
        return found
    evidence = claim.evidence.strip().rstrip(".")
    if evidence and len(evidence) <= QUOTED_EVIDENCE:
        return evidence
    return "the claims table gives its evidence"


def _now(claim: Claim | None, reasons: Mapping[str, str], tier: str) -> str:
    """What a tier's claim says now: its verdict, why in words when the history gives a
    reason for that verdict, and its deciding number, all read from ``claim``."""
    if claim is None:
        return f" (this page shows no {tier}-tier verdict of it)"
    if claim.status == NOT_RUN:
        return f" -> now NOT-RUN on this page ({claim.evidence.split('; ')[0]})"
    reason = reasons.get(claim.status, "")
    return (f" -> now {claim.status}" + (f": {reason}" if reason else "")
            + f" ({_numbers(claim)})")


def verdict_changes_notes(claims: Sequence[Claim], stored: Sequence[Claim] = ()
                          ) -> dict[str, str]:
    """Claim id -> its history per tier (:data:`HISTORY`), each completed with the verdict
    the claim reaches at that tier now, in ``claims`` (the page's) or ``stored`` (the paper
    tier's from stored runs, :func:`fedlib.verdicts.claims.stored_tier_claims`), with the
    number it is decided on: every number a note shows is read from those claims. Only
    claims of ``claims`` get a note (for :func:`fedlib.verdicts.claims.verdict_changes`,
    which refuses notes on claims the page does not have)."""
    ids = {c.claim_id for c in claims}
    found = _by_tier(claims, stored)
    notes = {}
    for claim_id, tiers in HISTORY.items():
        if claim_id not in ids:
            continue
        parts = []
        for tier in TIERS:
            if tier in tiers:
                history, reasons = tiers[tier]
                parts.append(f"{tier} tier: {history}"
                             + _now(found.get((claim_id, tier)), reasons, tier))
        notes[claim_id] = "; ".join(parts) + "."
    return notes


NOISELESS = ("the loss approaches the noiseless curve only where the noise moves it by more "
             "than the margin ({margin:.0%} of the loss): at the quick tier, whose rounds are "
             "fewer and shorter than the paper's, the gap of the smallest budget to the "
             "noiseless curve is inside it ({quick}), so the loss cannot be seen approaching "
             "anything; over the paper tier's T grid it clears the margin and vanishes at the "
             "largest budget ({paper})")


TIER_NOTES = {
    "fig5-mnist-mlr-approaches-noiseless": NOISELESS,
    "fig5-mnist-dnn-approaches-noiseless": NOISELESS,
    "fig7-mnist-dnn-optimal-T-rises": (
        "the quick tier reads the lambda grid on MNIST-MLR over a short T grid, the paper "
        "tier on the DNN over the paper's; where the loss-optimal T sits on an open edge of "
        "its T grid, the parts that read it are not testable ({quick}; {paper})"),
}
"""Why a claim's verdict may differ between the quick and the paper tier, in words, with
the place of each tier's deciding number (filled in by :func:`tier_notes`)."""


def tier_notes(claims: Sequence[Claim], stored: Sequence[Claim] = ()) -> dict[str, str]:
    """Claim id -> why its verdict differs between the quick and the paper tier
    (:data:`TIER_NOTES`), with each tier's verdict and deciding number read from ``claims``
    and ``stored`` (for :meth:`fedlib.render.chapter.Chapter.compare_tiers`, which shows
    the notes of the claims that flip). Only claims of ``claims`` get a note."""
    ids = {c.claim_id for c in claims}
    found = _by_tier(claims, stored)

    def at(claim_id: str, tier: str) -> str:
        claim = found.get((claim_id, tier))
        if claim is None:
            return f"the {tier} tier's verdict is not on this page"
        return f"{tier} tier {claim.status}: {_numbers(claim)}"

    return {claim_id: note.format(margin=LOSS_MARGIN, quick=at(claim_id, "quick"),
                                  paper=at(claim_id, "paper"))
            for claim_id, note in TIER_NOTES.items() if claim_id in ids}
