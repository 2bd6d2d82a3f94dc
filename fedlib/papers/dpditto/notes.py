"""DP-Ditto: the history of the chapter's verdicts, in words (:data:`VERDICT_CHANGES`),
and what the comparison of tiers says of the claims whose verdicts differ
(:data:`TIER_NOTES`). Text only, no logic."""

from __future__ import annotations

TIER_NOTES = {
    "fig5-mnist-mlr-approaches-noiseless":
        "at the quick tier (T up to 20, five local steps) the noise hardly moves the "
        "logistic-regression loss: even at epsilon = 1 its mean distance to the noiseless "
        "curve is below 0.001, under the margin of 1% of the loss (0.0019), so the loss "
        "cannot be seen approaching anything. Over the paper's T = 10 to 100 the gap at "
        "epsilon = 1 is 0.011 (interval [0.010, 0.012] over five seeds) and vanishes at "
        "epsilon = 100.",
    "fig5-mnist-dnn-approaches-noiseless":
        "the quick tier's short runs barely move the DNN's loss with the noise: at epsilon "
        "= 1 its gap to the noiseless curve is 0.002, under the margin of 1% of the loss "
        "(0.003), a tie; over the paper's T = 10 to 60 the gap at epsilon = 1 is 0.025 "
        "[0.023, 0.027] over five seeds and shrinks to nothing at epsilon = 100.",
    "fig7-mnist-dnn-optimal-T-rises":
        "the quick tier runs the lambda grid on MNIST-MLR, not the paper's DNN, over a T "
        "grid whose loss-optimal T is the same grid point for every lambda, a tie; the paper "
        "tier's DNN over T = 10 to 60 has its optimum at 60 for lambda = 0.01 and 0.05 and "
        "at 40 for every lambda >= 0.2, on every one of five seeds.",
}
"""Why a claim's verdict differs between the quick and the paper tier (for
:meth:`fedlib.render.chapter.Chapter.compare_tiers`)."""


ONE_SEED = "NOT-RUN (one seed)"


THREE = "over three seeds at T = 10 to 60"


FIVE = "over five seeds at T = 10 to 60 (the T every seed ran)"


EPS1 = "over three seeds at T = 10, 20 and 40 (the eps=1 runs of the paper tier)"


EPS1_FIVE = "over five seeds at T = 10, 20 and 40"


MLR = "at the quick tier, read on MLR (the id named MLR before)"


CNN = ("quick tier, old check and new on the same runs (three seeds, T = 1; the old quick "
       "tier ran one seed at T = 1 and 3)")


VERDICT_CHANGES = {
    "fig3-4-mnist-dnn-ditto-best-accuracy":
        f"{MLR}: HOLDS -> FAILS: DP-Ditto (0.958) and DP-FedAMP (0.958) tie within a point "
        "of accuracy (difference 0.001 [-0.001, 0.002] over three paired seeds); "
        f"paper tier FAILS -> {ONE_SEED} -> FAILS {THREE} -> FAILS {FIVE}: DP-APPLE is "
        "ahead (0.986 against 0.980, difference -0.006 [-0.007, -0.005] at eps=10) and "
        "DP-FedAMP ties (+0.006 [0.005, 0.007], inside the one-point margin).",
    "fig3-4-mnist-dnn-ditto-best-fairness":
        f"{MLR}: HOLDS -> INCONCLUSIVE: DP-Ditto's std is 2% below DP-FedAMP's, interval "
        "[-2%, 6%] against a margin of 5%; "
        f"paper tier FAILS -> {ONE_SEED} -> FAILS {THREE} -> FAILS {FIVE}: DP-Ditto's std "
        "is 18-64% below DP-FedAMP's, DP-pFedMe's and DP-FedALA's, but DP-APPLE's is a "
        "fifth of DP-Ditto's (0.006 against 0.027; at eps=100 the reduction is -4.0 "
        "[-5.4, -2.7]).",
    "fig3-4-mnist-dnn-smaller-lambda-at-smaller-eps":
        f"{MLR}: HOLDS -> FAILS: the tuned lambda is 0.01 at both budgets on every seed, a "
        "tie the old check (no larger) accepted and the paper's statement (smaller) does "
        f"not; paper tier HOLDS -> {ONE_SEED} -> FAILS {THREE} -> FAILS {FIVE} (0.01 at both "
        "budgets on every seed).",
    "fig3-4-mnist-dnn-baselines-degrade":
        f"{MLR}: FAILS -> FAILS; paper tier HOLDS -> {ONE_SEED} -> FAILS {THREE} -> FAILS "
        f"{FIVE}: no baseline loses a point from eps=100 to 10 (DP-FedAMP -0.004 [-0.004, "
        "-0.003]).",
    "headline-mnist-dnn-gains":
        f"{MLR}: FAILS -> FAILS (now in variance: the gain over DP-FedAMP is 3.5% in "
        f"fairness and 0.07% in accuracy); paper tier FAILS -> {ONE_SEED} -> FAILS {THREE} "
        f"-> FAILS {FIVE}: the gains in variance over DP-FedAMP, DP-pFedMe and DP-FedALA "
        "pass 32.71% (35-87%, but over DP-FedAMP at eps=100 not surely: 35.0 [29.8, 40.2]), "
        "the accuracy gains are 0.2-1.1%, far "
        "from 9.66%, and DP-APPLE is both more "
        "accurate and fairer.",
    "fig5-mnist-mlr-approaches-noiseless":
        "quick tier HOLDS -> FAILS: every gap to the noiseless curve is below 0.001, under "
        "the margin of 1% of the loss, so the old check ranked gaps of 0.0000 against each "
        "other; paper tier HOLDS -> HOLDS over three seeds -> HOLDS over five seeds (the "
        "gap at eps=1 is 0.011 [0.010, 0.012], at eps=100 below 0.001).",
    "fig5-mnist-mlr-critical-T":
        "quick tier FAILS -> NOT-TESTABLE: the quick rounds (T = 5, 10, 20) end before the "
        "loss turns, its lowest value (0.137) is at T = 20, the grid's open edge, where the "
        "optimum may lie beyond; paper tier HOLDS -> HOLDS over three seeds (the loss "
        "lowest at T = 40 on each) -> HOLDS over five seeds: over T = 10 to 100 the mean "
        "loss is lowest at T = 40 (0.085), 0.014 [0.012, 0.016] below T = 10 and 0.005 "
        "[0.003, 0.007] below T = 100.",
    "fig5-mnist-dnn-approaches-noiseless":
        "quick tier HOLDS -> FAILS on the same three seeds (the old check failed on the "
        "old tier's one seed, and held on three by ranking gaps of 0.0000): the gap at "
        "epsilon = 1 (0.002) is under the margin of 1% of the loss (0.003); paper tier "
        f"HOLDS -> {ONE_SEED} -> HOLDS {THREE} -> HOLDS {FIVE} (the gap at eps=1 is 0.025 "
        "[0.023, 0.027], and it shrinks to nothing at 100).",
    "fig5-mnist-dnn-critical-T":
        f"paper tier HOLDS -> {ONE_SEED} -> HOLDS {THREE} -> HOLDS {FIVE}: at eps=1 the "
        "loss is lowest at T = 20 (0.080), below T = 10 by 0.002 [0.002, 0.003] and T = 60 "
        "by 0.006 [0.005, 0.007], each above the margin of 1% of the loss.",
    "fig3-4-fmnist-cnn-ditto-best-accuracy":
        f"{CNN}: HOLDS -> INCONCLUSIVE: DP-Ditto (0.592) leads DP-FedAMP (0.576) by 0.016, "
        "and the interval of that lead reaches below the margin of one point.",
    "fig3-4-fmnist-cnn-ditto-best-fairness":
        f"{CNN}: FAILS -> INCONCLUSIVE: DP-Ditto's std varies from seed to seed (0.215, "
        "interval [0.083, 0.327]), so no comparison is decided; the old check failed on the "
        "means against DP-APPLE (0.010, at chance accuracy) and DP-FedALA (0.025).",
    "fig3-4-fmnist-cnn-smaller-lambda-at-smaller-eps":
        f"{CNN}: HOLDS -> FAILS: each seed tunes the same lambda at both budgets (0.5 on "
        "the seeds' mean), a tie the old check accepted and the paper's statement does not.",
    "fig3-4-fmnist-cnn-baselines-degrade": f"{CNN}: FAILS -> FAILS.",
    "headline-fmnist-cnn-gains":
        f"{CNN}: FAILS -> INCONCLUSIVE: at one aggregation the per-seed gains spread too "
        "widely to decide (the gain in variance over DP-FedAMP is 57%, interval [-25%, "
        "139%]); only the accuracy gain over DP-APPLE, which sits at chance, is decided.",
    "fig5-fmnist-cnn-approaches-noiseless":
        f"{CNN}: HOLDS -> FAILS: at T = 1 every gap to the noiseless loss is 0.0000, under "
        "the margin of 1% of the loss (0.012); the old check ranked ties.",
    "fig6-mnist-dnn-small-lambda-rises":
        f"{MLR}: HOLDS -> INCONCLUSIVE: accuracy rises by 0.013 from T = 5 to 20, interval "
        f"[0.004, 0.023] against a margin of one point; paper tier HOLDS -> {ONE_SEED} -> "
        f"FAILS {THREE} -> FAILS {FIVE}: accuracy rises by at most 0.007 [0.005, 0.008] "
        "from T = 10 to 60, and by 0.005 [0.004, 0.006] at lambda = 0.05, inside the "
        "one-point margin.",
    "fig6-mnist-dnn-large-lambda-peaks":
        f"{MLR}: FAILS -> NOT-TESTABLE: for every lambda >= 0.5 the best T is 20, the grid's "
        f"open edge; paper tier FAILS -> {ONE_SEED} -> NOT-TESTABLE {THREE} -> "
        f"NOT-TESTABLE {FIVE}: for every lambda >= 0.5 the best T is 60, the open edge of "
        "the T the five seeds share.",
    "fig6-mnist-dnn-smaller-lambda-fairer":
        f"paper tier HOLDS -> {ONE_SEED} -> HOLDS {THREE} -> HOLDS {FIVE} (Spearman 1.0 on "
        "every seed).",
    "fig7-mnist-dnn-optimal-lambda-falls":
        f"paper tier FAILS -> {ONE_SEED} -> FAILS {THREE} -> FAILS {FIVE}: the "
        "fairness-optimal lambda is the grid's smallest at every T.",
    "fig7-mnist-dnn-optimal-T-rises":
        f"paper tier HOLDS -> {ONE_SEED} -> FAILS over three seeds at T = 10, 20 and 40 "
        "(the loss-optimal T was 40, the largest, for every lambda) -> HOLDS "
        f"{THREE} -> HOLDS {FIVE}: the loss-optimal T is 60 for lambda = 0.01 and 0.05 on "
        "every seed, 40 on three seeds and 60 on two at lambda = 0.1, and 40 for every "
        "lambda >= 0.2 on every seed.",
    "fig3-4-mnist-dnn-baselines-fall-in-T":
        f"paper tier {ONE_SEED} -> FAILS {THREE} -> FAILS {FIVE}: neither falls; "
        "DP-FedALA's accuracy rises from T = 10 to 60 (+0.013 [0.009, 0.016] at eps=10), "
        "DP-FedAMP's by 0.000 to 0.010.",
    "fig3-4-mnist-dnn-apple-peaks-in-T":
        f"paper tier {ONE_SEED} -> NOT-TESTABLE over three seeds at T = 10, 20 and 40 (best "
        f"at 40, the open edge) -> FAILS {THREE} -> FAILS {FIVE}: at eps=10 DP-APPLE is "
        "best at T = 40, 0.003 [0.002, 0.005] above T = 10 and level with T = 60, no peak "
        "by a point; at eps=100 it is best at T = 60, the open edge.",
    "fig6-mnist-dnn-fairness-degrades-improves-degrades":
        f"paper tier {ONE_SEED} -> NOT-RUN over three seeds at T = 10, 20 and 40 (three "
        f"values of T cannot show a rise, a fall and a second rise) -> FAILS {THREE} -> "
        f"FAILS {FIVE}: the std falls from T = 10 to 20 (-0.012 [-0.016, -0.009]) instead "
        "of degrading first, falls again to T = 40 and is level at 60.",
    "fig3-4-mnist-dnn-ditto-best-accuracy-eps1":
        f"paper tier NOT-RUN (not computed) -> FAILS {EPS1} -> FAILS {EPS1_FIVE}: DP-Ditto "
        "(0.979) leads DP-FedAMP, DP-pFedMe and DP-FedALA by 2 to 6 points, and DP-APPLE "
        "(0.982) ties it (difference -0.003 [-0.005, -0.001]).",
    "fig3-4-mnist-dnn-ditto-best-fairness-eps1":
        f"paper tier NOT-RUN (not computed) -> INCONCLUSIVE {EPS1} (against DP-APPLE's "
        f"std the three seeds disagreed) -> FAILS {EPS1_FIVE}: DP-Ditto's std is 68 to 82% "
        "below DP-FedAMP's, DP-pFedMe's and DP-FedALA's, but DP-APPLE's is about half of "
        "DP-Ditto's (0.016 against 0.031; the reduction is -0.92 [-1.43, -0.41]).",
    "fig3-4-mnist-dnn-smaller-lambda-at-smaller-eps-eps1-vs-10":
        f"paper tier NOT-RUN (not computed) -> FAILS {EPS1} -> FAILS {EPS1_FIVE}: the "
        "tuned lambda is 0.01 at both budgets on every seed.",
    "fig3-4-mnist-dnn-baselines-degrade-eps1-vs-10":
        f"paper tier NOT-RUN (not computed) -> FAILS {EPS1} -> FAILS {EPS1_FIVE}: "
        "DP-FedAMP (-0.043), DP-FedALA (-0.052) and DP-pFedMe (-0.012) lose more than a "
        "point from eps=10 to 1, DP-APPLE does not (-0.003 [-0.004, -0.003]).",
    "fig3-4-mnist-dnn-baselines-fall-in-T-eps1":
        f"paper tier NOT-RUN (not computed) -> HOLDS {EPS1} -> HOLDS {EPS1_FIVE}: "
        "DP-FedALA falls by 0.072 [0.050, 0.094] from T = 10 to 40 and DP-FedAMP by 0.035 "
        "[0.025, 0.045] (at eps=10 neither falls).",
    "fig3-4-mnist-dnn-apple-peaks-in-T-eps1":
        f"paper tier NOT-RUN (not computed) -> NOT-TESTABLE {EPS1} -> NOT-TESTABLE "
        f"{EPS1_FIVE}: DP-APPLE is best at T = 40, the open edge.",
    "headline-mnist-dnn-gains-eps1":
        f"paper tier NOT-RUN (not computed) -> FAILS {EPS1} -> FAILS {EPS1_FIVE}: the "
        "variance gains over DP-FedAMP, DP-pFedMe and DP-FedALA (89-97%) pass 32.71%, the "
        "accuracy gains (2.4-7.0%) fall short of 9.66%, and DP-APPLE is ahead in accuracy.",
    "fig6-mnist-dnn-small-lambda-rises-eps1":
        f"paper tier NOT-RUN (not computed) -> FAILS {EPS1} -> FAILS {EPS1_FIVE}: for "
        "lambda <= 0.05 accuracy rises by at most 0.006 [0.005, 0.007] from T = 10 to 40.",
    "fig6-mnist-dnn-large-lambda-peaks-eps1":
        f"paper tier NOT-RUN (not computed) -> NOT-TESTABLE {EPS1} -> NOT-TESTABLE "
        f"{EPS1_FIVE}: for every lambda >= 0.5 the best T is 10, the grid's open edge "
        "(accuracy falls with T).",
    "fig6-mnist-dnn-smaller-lambda-fairer-eps1":
        f"paper tier NOT-RUN (not computed) -> HOLDS {EPS1} -> HOLDS {EPS1_FIVE} "
        "(Spearman 0.995 [0.982, 1.008]).",
}
"""Claims whose verdict changed when judged over repeats with declared margins, against
the old single-run, zero-margin checks on the same runs (for
:func:`fedlib.verdicts.claims.verdict_changes`)."""
