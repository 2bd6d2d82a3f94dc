"""Bietti et al. (2022), PPSGD: the history of the chapter's verdicts, in words
(:data:`VERDICT_CHANGES`), and what the comparison of tiers says of the claims whose
verdicts differ (:data:`TIER_NOTES`). Text only, no logic, and no numbers: the numbers
are in the claims' evidence, read from the runs."""

from __future__ import annotations

TIER_NOTES: dict[str, str] = {
    "fig1c-small-alpha-small-eps":
        "the tiers read the claim at different noise: the quick tier at its largest plotted "
        "level after a few epochs, where global-only still leads; the paper tier at the "
        "paper's largest plotted level after its full run, where global-only has fallen to "
        "about chance (each tier's evidence gives the accuracies).",
    "fig2-emnist-envelope-dominates":
        "the quick tier's EMNIST grid is too short for personalization to pay: at its "
        "private noise levels global-only is the best level, so the envelope is an extreme "
        "and ties it; after the paper's epochs a personalized level clears the better "
        "extreme at the smaller noise levels (each tier's evidence gives the margins).",
}
"""Why a claim's verdict differs between the quick and the paper tier (the chapter shows
these where one tier HOLDS and the other FAILS; a flip with no note is shown as
unexplained)."""


_STEPS = "; then, under the open-edge rule on the step size, "
"""How a note opens the change the open-edge rule on the step size made (each curve is the
best over a grid of step sizes, and neither end of such a grid bounds the step size)."""


_EXTENDED = ("; then, with the grid of step sizes extended beyond an end the best step of a "
             "curve sat on, ")
"""How a note opens the change the extension of the grids of step sizes made (at most two
steps beyond an end)."""


_FOUR_STEPS = "; then, with up to four steps run beyond an end (two before), "
"""How a note opens the change the longer extensions made."""


_LEVELS = ("; then, with the strictly personalized levels extended below the grid's "
           "smallest where the best of them sat there (up to four levels, on the paper's "
           "1-3 spacing), ")
"""How a note opens the change the extension of the personalization levels made."""


_CNN_PAPER_EXTENDED = ("; paper, once its CNN extensions were computed at every level of "
                       "personalization the claims read (not only the levels drawn): ")
"""How a note opens the paper tier's change when the CNN's grids were extended."""


VERDICT_CHANGES: dict[str, str] = {
    "fig1a-global-fastest-early":
        "FAILS at both tiers throughout (the single run, then over seeds): global learning "
        "is behind every drawn level early in every panel it can be read in; now read on the "
        "figure's panels and drawn levels (at the paper tier the largest-noise panel is not "
        "testable, its seeds splitting on whether global learning has left its starting "
        "risk)" + _STEPS + "paper: FAILS -> NOT-TESTABLE: in every other panel global "
        "learning's best step early is the largest of the grid, so a larger step could make "
        "it the fastest; quick: FAILS stands, on the largest-noise panel, where global "
        "learning's best step lies inside the grid and every drawn level is ahead of it (the "
        "other panels are not testable, as at the paper tier)" + _EXTENDED + "paper: "
        "NOT-TESTABLE -> INCONCLUSIVE (part untested): without noise and at the smaller noise "
        "levels global learning is ahead of local learning and of the smallest drawn level "
        "early, while its best step is still the largest of the extended grid, so the "
        "comparisons with the larger levels stay untested; quick: FAILS stands" + _FOUR_STEPS
        + "paper: INCONCLUSIVE stands with one part untested instead of two: global "
        "learning's best step early now lies inside the extended grid at every noise level "
        "but the largest, and it is ahead of every drawn level there; at the largest its "
        "seeds split on whether it has left its starting risk; quick: FAILS stands: global "
        "learning is now ahead of every drawn level early without noise and at the smallest "
        "noise level, but at the largest local learning is ahead of it",
    "fig1a-global-plateau":
        "FAILS at both tiers over seeds: global learning keeps falling over the second half "
        "of training, no plateau" + _STEPS + "FAILS -> NOT-TESTABLE at both tiers: without "
        "noise global learning's best step is the largest of the grid at T/2 and at T, so a "
        "larger step could make it fall less over the second half (the claim could hold) "
        "and could bring its end down towards the best finite level (that part, which holds "
        "on the grid, could be undone)" + _EXTENDED + "NOT-TESTABLE -> FAILS at both tiers: "
        "global learning's best step without noise at T/2 and at T lies inside the extended "
        "grid, and it keeps falling over the second half (no plateau) while it ends far "
        "above the best finite level",
    "fig1a-smaller-alpha-later":
        "HOLDS at both tiers over seeds: a finite level ends far below global learning in "
        "every panel" + _STEPS + "HOLDS -> INCONCLUSIVE at both tiers (part untested): in "
        "every panel but the largest-noise one global learning's best step at the end is the "
        "largest of the grid, so a larger step could undo the finite level's lead there; in "
        "the largest-noise panel it holds" + _EXTENDED + "INCONCLUSIVE -> HOLDS at both tiers: "
        "global learning's best step at the end lies inside the extended grid in every "
        "panel, and a finite level still ends far below it",
    "fig1a-local-wins-large-noise":
        "HOLDS at both tiers over seeds, now read at iteration 200 and at T instead of at "
        "some iteration within the run" + _STEPS + "quick: HOLDS -> INCONCLUSIVE (part "
        "untested): at T the best step of one of the drawn levels is the smallest of the "
        "quick tier's grid, so a smaller step could undo local learning's lead over it; "
        "paper: HOLDS stands (the paper tier's grid goes lower, and the best steps of the "
        "levels local learning beats lie inside it)" + _EXTENDED + "quick: INCONCLUSIVE -> "
        "HOLDS: that level's best step lies inside the grid extended below it (the paper "
        "tier's own steps), and local learning still beats it; paper: HOLDS stands",
    "fig1c-local-poor":
        "HOLDS at both tiers over seeds" + _STEPS + "quick: HOLDS -> NOT-TESTABLE: local "
        "learning's best step is the smallest of the quick tier's grid, so a smaller step "
        "could undo global learning's lead; paper: HOLDS stands (the paper tier's grid goes "
        "lower, and local learning's best step lies inside it)" + _EXTENDED + "quick: "
        "NOT-TESTABLE -> HOLDS: local learning's best step lies inside the grid extended one "
        "step lower, and global learning's lead stands; paper: HOLDS stands",
    "fig1c-small-alpha-small-eps":
        "paper: HOLDS over seeds at the paper's largest plotted noise, then NOT-TESTABLE once "
        "the verdicts named the seeds' spread: global-only clears chance on some seeds and "
        "not on others there, so the comparison ranks learning against chance; quick: FAILS "
        "over seeds (at the quick tier's largest noise, after its few epochs, global-only "
        "still leads)" + _STEPS + "quick: FAILS -> NOT-TESTABLE: the small levels' best "
        "steps are the smallest of the quick tier's grid, so a smaller step could make one of "
        "them overtake global learning; paper: NOT-TESTABLE stands" + _EXTENDED + "quick: "
        "NOT-TESTABLE -> FAILS: the small levels' best steps lie inside the grid extended one "
        "step lower, and global learning still leads; paper: NOT-TESTABLE stands (global "
        "learning clears chance on some seeds only)",
    "fig1d-local-very-poor":
        "HOLDS at both tiers over seeds" + _STEPS + "HOLDS -> NOT-TESTABLE at both tiers: "
        "local learning's best step is on an end of the CNN's grid of steps (the smallest at "
        "the quick tier, the largest at the paper tier), so a step beyond it could undo the "
        "gap" + _EXTENDED + "quick: NOT-TESTABLE stands: local learning's best step is still "
        "the smallest after two steps below the grid (its extensions ran out)"
        + _CNN_PAPER_EXTENDED + "NOT-TESTABLE -> HOLDS: local learning's best step lies "
        "inside the grid extended two steps higher, and the gap to the best level clears the "
        "margin" + _FOUR_STEPS + "quick: NOT-TESTABLE -> HOLDS: local learning's best step "
        "lies inside the grid extended three steps lower, and the gap to the best level "
        "clears the margin; paper: HOLDS stands",
    "fig1d-small-alpha-small-eps":
        "FAILS -> NOT-TESTABLE at both tiers: every level ends at chance at the largest "
        "plotted noise, so ranking them decides nothing; fig1d-small-alpha-small-steps reads "
        "it where the CNN can learn under noise",
    "fig1d-small-alpha-small-steps":
        "paper: NOT-RUN (one repeat) -> NOT-TESTABLE at the larger noise level of the "
        "small-step runs alone (the small level learns on some seeds and not on others, "
        "global-only at chance) -> HOLDS once the runs at the smaller noise level were added "
        "and read by a rule chosen after the first had been seen (the claim now says so): "
        "there the small level learns on every seed and global-only stays at chance; it "
        "stayed HOLDS as seeds were added, and once the small-step runs' grids were "
        "extended (the rule now reads the larger noise level, which the steps beyond the "
        "grid made testable, and the claim holds there too); quick: NOT-RUN (paper tier "
        "only)",
    "fig1d-large-alpha-low-privacy":
        "quick: HOLDS -> INCONCLUSIVE over seeds (after half an epoch the CNN's seeds lie far "
        "apart); paper: FAILS over seeds (the best level of at least 10 and the best below "
        "it tie within the margin)" + _STEPS + "NOT-TESTABLE at both tiers (quick: from "
        "INCONCLUSIVE, paper: from FAILS): without noise the levels of at least 10 have their "
        "best step at the largest of the CNN's grid of steps, so a larger step could make "
        "one of them clear the best level below 10" + _EXTENDED + "quick: NOT-TESTABLE -> "
        "INCONCLUSIVE: the levels it compares have their best step inside the grid extended "
        "one step higher, and the interval of the lead of the best level of at least 10 over "
        "the best level below holds the margin" + _CNN_PAPER_EXTENDED + "NOT-TESTABLE -> "
        "FAILS: the levels of at least 10 have their best step inside the grid extended one "
        "step higher, and the best of them ties the best level below 10 within the margin "
        "(its own best step is still the largest after two steps beyond the grid, which "
        "could only widen its lead)",
    "fig2-emnist-envelope-dominates":
        "paper: FAILS -> HOLDS over seeds, restated as the paper states it (the envelope "
        "clears the better extreme at the smaller noise levels; at the largest, local-only "
        "is the envelope); quick: FAILS, restated (global-only is the best level at both "
        "private noise levels)" + _STEPS + "quick: FAILS -> NOT-TESTABLE: at both private "
        "noise levels the personalized levels' best steps are the smallest of the quick "
        "tier's grid, so a smaller step could make one of them clear the better extreme; "
        "paper: HOLDS stands: at several intermediate noise levels the envelope clears the "
        "better extreme with the best steps of both extremes inside the grid (at the "
        "smallest noise levels global learning's best step is the largest of the grid, and "
        "at some larger ones a personalized level's is the smallest, so those parts are not "
        "testable)" + _EXTENDED + "quick: NOT-TESTABLE -> FAILS: the personalized levels' "
        "best steps lie inside the grid extended one step lower, and global learning is "
        "still the best level at both private noise levels (the envelope ties it); paper: "
        "HOLDS stands, its parts at the smallest noise levels now testable and holding, and "
        "those at larger ones, where local-only is the envelope, failing",
    "fig2-synthetic-envelope-dominates":
        "now a finding of the companion; FAILS over seeds at both tiers (from a large noise "
        "level up local-only beats the best strictly personalized level), then INCONCLUSIVE "
        "under the open-edge rule: there that best level is the smallest of the grid, and "
        "a level closer to 0 could beat local-only, so those comparisons are not testable "
        "while every other one holds (part untested)" + _STEPS + "INCONCLUSIVE stands at both "
        "tiers, with more parts untested: the comparisons with global learning wherever its "
        "best step at the end is the largest of the grid (a larger step could undo them), "
        "and with local learning where a strictly personalized level has its best step on an "
        "end of the grid" + _EXTENDED + "INCONCLUSIVE stands at both tiers, with fewer parts "
        "untested: every comparison with global learning holds once its best step lies "
        "inside the extended grid; those with local learning at large noise stay untested "
        "(there the best level is the smallest of the grid of levels)" + _LEVELS + "paper: "
        "INCONCLUSIVE -> FAILS: at the largest noise levels the best level walks down to the "
        "last one run and its excess risk to that of local learning, so those comparisons "
        "stay untested, but at the middle one the best level is now inside the extended "
        "levels and ties local learning within the margin; quick: INCONCLUSIVE stands, with "
        "one part untested instead of two: at its middle noise level the best level, inside "
        "the extended levels, is level with local learning but its three seeds cannot tell "
        "a tie from a win",
}
"""Claim id -> how its verdict changed when the claims were judged over repeats with
declared margins, the trivial baselines and the open-edge rule, on the levels of
personalization, then on the step size, then when the grids of step sizes were extended
beyond an end a drawn curve's best step sat on (from the single-run reading, on the same
runs and those of the extensions), and why."""
