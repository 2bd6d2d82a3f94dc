"""Read-outs, tables and claims of the PPSGD chapter, on hand-made runs and curves."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fedlib.data.synthetic import AdditiveSyntheticTask
from fedlib.papers.ppsgd import claims, experiment, notes, readouts
from fedlib.privacy import epsilon
from fedlib.verdicts.claims import ClaimSheet

INF = math.inf
T = np.arange(1, 61)


# --- Figure 1a ------------------------------------------------------------------------------


T300 = np.arange(1, 301)
PANELS = (0.0, 1000.0)
SEEDS = (0, 1, 2)


STEPS = {0.05: 2.0, 0.1: 1.0, 0.2: 3.0}
"""A grid of step sizes, each with the factor on the risk of its runs: the best step,
0.1, lies inside the grid."""


def _seeded(shape: dict, sigmas=PANELS, seeds=SEEDS, t=T300, steps=None) -> pd.DataFrame:
    """Best-over-steps curves per seed: ``shape`` (alpha -> values or sigma -> values),
    each seed scaled by a factor within 1% of one, the best of the runs at the step sizes
    of ``steps`` (step -> factor on the risk; default :data:`STEPS`)."""
    rows = []
    for seed in seeds:
        factor = math.exp(0.01 * (seed - 1))
        for sigma in sigmas:
            for alpha_q, risk in shape.items():
                values = risk(sigma) if callable(risk) else risk
                grid = STEPS if steps is None else steps(sigma, alpha_q)
                rows += [{"clip": 1.0, "noise_multiplier": sigma, "alpha_q": alpha_q,
                          "iteration": i, "excess_risk": v * factor * worse, "epsilon": 0.0,
                          "step": step, "seed": seed}
                         for step, worse in grid.items()
                         for i, v in zip(t, values, strict=True)]
    return readouts.best_over_steps(pd.DataFrame(rows))


LIKE_PAPER = {
    INF: 100 / T300 + 3.0,                                  # fastest early, then a plateau
    3.0: lambda s: 200 / T300 + 0.5 + s / 500,
    1.0: lambda s: 300 / T300 + 0.1 + s / 100,
    0.3: lambda s: 400 / T300 + 0.08 + s / 200,
    0.0: 500 / T300 + 0.05,                                 # private: best late at large noise
}


def _statuses(evaluated) -> dict[str, str]:
    return {c.claim_id: c.status for c in evaluated}


def test_figure1a_claims_hold_on_curves_shaped_like_the_paper() -> None:
    evaluated = claims.figure1a_claims(_seeded(LIKE_PAPER), "quick", risk0=500.0)
    assert _statuses(evaluated) == dict.fromkeys(claims.FIGURE1A_CLAIM_IDS, "HOLDS")
    assert all(c.paper == "ppsgd" and c.scale == "quick" for c in evaluated)
    assert "3 paired seeds" in evaluated[0].evidence
    assert evaluated[3].paper_value == "after about 200 iterations"
    assert evaluated[0].restated and evaluated[3].restated and not evaluated[1].restated


def test_figure1a_claims_with_one_seed_are_not_run() -> None:
    evaluated = claims.figure1a_claims(_seeded(LIKE_PAPER, seeds=(0,)), "paper")
    assert {c.status for c in evaluated} == {"NOT-RUN"}
    assert all("one repeat" in c.evidence for c in evaluated)


def test_figure1a_claims_fail_when_global_learning_keeps_improving() -> None:
    shape = {**LIKE_PAPER, INF: 100 / T300}
    verdicts = _statuses(claims.figure1a_claims(_seeded(shape), "quick"))
    assert verdicts["fig1a-global-plateau"] == "FAILS"
    assert verdicts["fig1a-smaller-alpha-later"] == "FAILS"
    assert verdicts["fig1a-local-wins-large-noise"] == "FAILS"


def test_figure1a_ties_are_not_wins_and_the_start_is_not_testable() -> None:
    tie = {a: 100 / T300 + 3.0 for a in LIKE_PAPER}  # every level the same curve
    verdicts = _statuses(claims.figure1a_claims(_seeded(tie), "quick"))
    assert verdicts["fig1a-global-fastest-early"] == "FAILS"
    stuck = {a: np.full(len(T300), 500.0) for a in LIKE_PAPER}  # nothing moves from w = 0
    stuck_verdicts = _statuses(claims.figure1a_claims(_seeded(stuck), "quick", risk0=500.0))
    assert stuck_verdicts["fig1a-global-fastest-early"] == "NOT-TESTABLE"


def test_fastest_early_reads_only_the_papers_panels_and_drawn_levels() -> None:
    # At sigma = 30 (not a panel) the undrawn level 100 beats alpha*Q = inf early: the
    # earlier statement, over every noise level and level of the tier, failed here.
    shape = {**LIKE_PAPER, 100.0: lambda s: 100 / T300 + 3.0 + (-2.0 if s == 30 else 1.0)}
    curves = _seeded(shape, sigmas=(0.0, 30.0, 1000.0))
    early = curves[curves["iteration"] == 10].groupby(["noise_multiplier", "alpha_q"])[
        "excess_risk"].mean()
    assert early[30.0].idxmin() == 100.0  # the old reading: global is not fastest everywhere
    verdicts = _statuses(claims.figure1a_claims(curves, "quick"))
    assert verdicts["fig1a-global-fastest-early"] == "HOLDS"


def test_local_wins_is_read_from_iteration_200() -> None:
    # alpha*Q = 0 becomes the best only at iteration 280: the earlier statement ("becomes
    # and stays the best within the run") held; the paper's "after about 200" does not.
    late = {**LIKE_PAPER, 0.0: np.where(T300 < 280, 50.0, 0.01)}
    curves = _seeded(late)
    last = curves[curves["iteration"] == 300].groupby(["noise_multiplier", "alpha_q"])[
        "excess_risk"].mean()
    assert last[1000.0].idxmin() == 0.0
    verdicts = _statuses(claims.figure1a_claims(curves, "quick"))
    assert verdicts["fig1a-local-wins-large-noise"] == "FAILS"


def test_figure1a_claims_read_only_the_plots_clipping_norm() -> None:
    good = _seeded(LIKE_PAPER)
    other_clip = good.assign(clip=100.0, excess_risk=1.0)  # would break every claim
    both = pd.concat([good, other_clip], ignore_index=True)
    assert claims.figure1a_claims(both, "quick") == claims.figure1a_claims(good, "quick")


def test_figure1a_claims_without_a_panel_are_not_run() -> None:
    evaluated = claims.figure1a_claims(_seeded(LIKE_PAPER, sigmas=(5.0,)), "quick")
    assert {c.status for c in evaluated} == {"NOT-RUN"}
    assert "none of the Figure 1a panels" in evaluated[0].evidence


def _runs(shape: dict[float, np.ndarray], sigmas=(0.0, 100.0), **setting) -> pd.DataFrame:
    """Runs of one step size shaped like ``shape``, with the columns of the settings sweep."""
    rows = []
    for sigma in sigmas:
        for alpha_q, risk in shape.items():
            values = risk(sigma) if callable(risk) else risk
            rows += [{**setting, "noise_multiplier": sigma, "alpha_q": alpha_q, "step": 0.1,
                      "iteration": t, "excess_risk": v, "epsilon": 0.0}
                     for t, v in enumerate(values, start=1)]
    return pd.DataFrame(rows)


PAPER_LIKE = {INF: 10 / T + 3.0, 1.0: lambda s: 30 / T + 0.1 + s / 100, 0.0: 50 / T + 0.05}
NO_PLATEAU = {INF: 10 / T, 1.0: 30 / T + 0.1, 0.0: 50 / T + 0.05}


def test_figure1a_claims_at_another_clip_and_with_notes() -> None:
    curves = _seeded(LIKE_PAPER).assign(clip=10.0)
    at_ten = claims.figure1a_claims(curves, "quick", clip=10.0,
                                    notes={"fig1a-global-plateau": "A note"})
    assert [c.status for c in at_ten] == ["HOLDS"] * 4
    assert at_ten[1].evidence.startswith("A note; ")
    assert not at_ten[0].evidence.startswith("A note")


def test_setting_verdicts_judge_every_setting_and_say_which_is_which() -> None:
    settings = [("authors", 100, 0.01, 1.0, PAPER_LIKE), ("authors", 100, 0.01, 10.0, NO_PLATEAU),
                ("authors", 20, 0.1, 1.0, NO_PLATEAU), ("fedlib", 100, 0.01, 1.0, NO_PLATEAU)]
    runs = pd.concat([_runs(shape, instance=i, dim=d, heterogeneity=h, clip=c)
                      for i, d, h, c, shape in settings], ignore_index=True)
    table = claims.setting_verdicts(runs)
    assert list(table["setting"]) == ["paper's text, plots' C", "paper's text",
                                      "script's defaults, plots' C",
                                      "paper's text, plots' C; fedlib's own draw"]
    assert list(table["claims holding"]) == ["4/4", "1/4", "1/4", "1/4"]
    first = table.iloc[0]
    assert first["global fastest early"] == "HOLDS (2/2 panels)"
    assert first["global plateau"] == "HOLDS (T vs T/2: 0.95x; vs best finite: 5.3x)"
    assert first["local wins (large noise)"].startswith("HOLDS (from t=")
    assert table.iloc[1]["global plateau"].startswith("FAILS")
    assert table.iloc[1]["smaller alpha later"] == "FAILS (0/2 panels)"

    notes = claims.setting_notes(table)
    assert set(notes) == set(claims.FIGURE1A_CLAIM_IDS)
    assert "the authors' script gives HOLDS" in notes["fig1a-global-plateau"]
    assert notes["fig1a-global-plateau"].endswith("fedlib's own draw gives FAILS, "
                                                  "a different verdict")
    assert notes["fig1a-global-fastest-early"].endswith("gives HOLDS, the same verdict")
    assert claims.setting_notes(table[table["instance"] == "fedlib"]) == {}

    conclusion = claims.settings_conclusion(table)
    assert ("at the paper's stated setting (d=100, heterogeneity 0.01) 4/4 claims hold at C=1;"
            in conclusion)
    assert ("at the script's defaults (d=20, heterogeneity 0.1) 1/4 claims hold at C=1 "
            "(failing: global plateau, smaller alpha later, local wins (large noise))"
            in conclusion)
    assert "All four claims hold at: d=100, heterogeneity 0.01, C=1." in conclusion
    none = claims.settings_conclusion(table.iloc[1:])
    assert "paper's stated setting (d=100, heterogeneity 0.01) nothing was run" in none
    assert ("No setting of this sweep makes all four claims hold; the most (1/4) hold at: "
            "d=100, heterogeneity 0.01, C=10; d=20, heterogeneity 0.1, C=1." in none)
    assert "fedlib's own draw gives the same verdict" not in none  # no authors' row to compare
    assert ("fedlib's own draw gives the same verdict as the authors' instance on 1 of 4 "
            "claims." in conclusion)
    both_fail = pd.concat([table.iloc[[3]], table.iloc[[3]].assign(instance="authors")])
    same = claims.settings_conclusion(both_fail)  # the paper's setting fails alike on both
    assert "on 4 of 4 claims: the claims that fail there fail on the authors' own" in same


def test_evaluate_puts_the_settings_before_the_figure1a_evidence() -> None:
    setup = experiment.tier("smoke")
    curves_1c = _figure1_curves()
    runs = pd.concat([_runs(PAPER_LIKE, instance=i, dim=100, heterogeneity=0.01, clip=1.0)
                      for i in ("authors", "fedlib")], ignore_index=True)
    table = claims.setting_verdicts(runs)
    plain = claims.evaluate(_seeded(LIKE_PAPER), curves_1c, curves_1c, setup, "smoke")
    noted = claims.evaluate(_seeded(LIKE_PAPER), curves_1c, curves_1c, setup, "smoke",
                            settings=table)
    for before, after in zip(plain, noted, strict=True):
        assert (before.claim_id, before.status, before.text) == (
            after.claim_id, after.status, after.text)
        if before.claim_id.startswith("fig1a-"):
            assert after.evidence.startswith("Settings sweep (one run per setting")
            assert after.evidence.endswith(before.evidence)
        else:
            assert after == before


def test_best_over_steps_takes_the_pointwise_minimum_and_ignores_divergence() -> None:
    runs = pd.DataFrame({
        "clip": 1.0, "noise_multiplier": 0.0, "alpha_q": 1.0, "epsilon": 0.0,
        "step": [0.1, 0.1, 0.5, 0.5, 0.9, 0.9],
        "iteration": [1, 2, 1, 2, 1, 2],
        "excess_risk": [5.0, 1.0, 3.0, 2.0, np.inf, np.nan],
    })
    best = readouts.best_over_steps(runs)
    assert list(best["excess_risk"]) == [3.0, 1.0]
    assert list(best["best_step"]) == [0.5, 0.1]
    assert list(best.columns) == ["clip", "noise_multiplier", "alpha_q", "iteration",
                                  "excess_risk", "best_step", "step_low", "step_high",
                                  "epsilon"]
    # The grid is every step the runs hold: one that diverged was tried.
    assert list(best["step_low"]) == [0.1, 0.1] and list(best["step_high"]) == [0.9, 0.9]


def test_best_over_steps_keeps_local_curves_run_at_every_noise_level() -> None:
    runs = pd.DataFrame([
        {"clip": 1.0, "noise_multiplier": s, "alpha_q": a, "step": step, "iteration": 1,
         "excess_risk": 1.0 + s + a + step, "epsilon": 0.0}
        for s in (0.0, 10.0) for a in (0.0, 1.0) for step in (0.1, 0.2)
    ])
    best = readouts.best_over_steps(runs)
    assert len(best) == 4  # one per (noise, alpha): nothing repeated
    local = best[best["alpha_q"] == 0]
    assert list(local["excess_risk"]) == [1.1, 11.1]


def test_global_only_floor_and_clipping_bound_closed_forms() -> None:
    task = AdditiveSyntheticTask(n_users=400, dim=10, personal_coords=2, personal_scale=0.5)
    # Deviations N(0, 0.25) on coordinates 9 and 10 (variances 1/9, 1/10):
    # expected floor (1 - 1/N) * 0.25 * (1/9 + 1/10).
    expected = (1 - 1 / 400) * 0.25 * (1 / 9 + 1 / 10)
    assert readouts.global_only_floor(task) == pytest.approx(expected, rel=0.15)
    norm = readouts.shared_optimum_norm(task)
    assert readouts.clipping_bound(task, 2.0, 0.5) == pytest.approx(norm)


@pytest.mark.parametrize(("instance", "seed"), [("fedlib", 3), ("authors", 42)])
def test_clipping_table_and_loose_clip_note_read_the_task_of_the_grid(instance: str,
                                                                     seed: int) -> None:
    grid = experiment.tier("smoke").synthetic
    task = AdditiveSyntheticTask(n_users=grid.n_users, dim=grid.dim, seed=seed,
                                 instance=instance)
    table = readouts.clipping_table(grid, 3, instance)
    assert list(table["value"]) == [
        f"{readouts.shared_optimum_norm(task):.1f}",
        f"{readouts.clipping_bound(task, max(grid.steps), 1.0):.0f}",
        f"{readouts.global_only_floor(task):.2e}",
    ]
    early = max(1, grid.iterations // 30)
    curves = pd.DataFrame([
        {"clip": c, "noise_multiplier": 0.0, "alpha_q": a, "iteration": t,
         "excess_risk": (a + 1.0) if t == early else 1.0 / (a + 1.0)}
        for c in grid.clips for a in (0.0, 3.0) for t in (early, grid.iterations)
    ])
    note = readouts.loose_clip_note(curves, grid, 3, instance)
    assert f"$C={max(grid.clips):g}$" in note
    assert f"$\\alpha Q=$0 (risk 1) at iteration {early}" in note
    assert f"$\\alpha Q=$3 (risk 0.25) at iteration {grid.iterations}" in note
    assert f"{readouts.global_only_floor(task):.1e}" in note


def test_synthetic_grid_table_counts_the_runs() -> None:
    setup = experiment.tier("smoke")
    table = readouts.synthetic_grid_table(setup, "smoke", 0)
    assert table.loc["runs", ""] == len(experiment.configs(setup, 0, figure="1a")) == 40
    assert table.loc["tier", ""] == "smoke"
    assert table.loc["noise sigma", ""] == "0, 100"


# --- Figures 1c, 1d and 2 --------------------------------------------------------------------


def runs_table(values: dict[tuple[float, float, float], float]) -> pd.DataFrame:
    """(sigma, alpha, step) -> final accuracy, at iterations 0 and 10."""
    rows = []
    for (sigma, alpha, step), acc in values.items():
        eps = 0.0 if alpha == 0 else (INF if sigma == 0 else 1.0 / sigma)
        rows += [{"clip": 1.0, "noise_multiplier": sigma, "alpha_q": alpha, "step": step,
                  "iteration": it, "accuracy": a, "epsilon": e}
                 for it, a, e in ((0, 0.1, 0.0), (10, acc, eps))]
    return pd.DataFrame(rows)


def test_best_over_steps_takes_the_best_step_and_repeats_local_for_every_sigma() -> None:
    runs = runs_table({(0, 0, 0.1): 0.3, (0, 0, 0.2): 0.4, (2, 1, 0.1): 0.5, (2, 1, 0.2): 0.45})
    curves = readouts.best_over_steps(runs, "accuracy", higher_is_better=True)
    end = readouts.final(curves)
    assert set(zip(end["noise_multiplier"], end["alpha_q"], strict=True)) == {
        (0, 0), (2, 0), (2, 1)}
    assert end[(end["noise_multiplier"] == 2) & (end["alpha_q"] == 0)]["accuracy"].item() == 0.4
    assert end[end["alpha_q"] == 1]["best_step"].item() == 0.1
    keys = ["noise_multiplier", "alpha_q", "iteration"]
    assert curves[keys].equals(curves.sort_values(keys)[keys].reset_index(drop=True))


def _end(values: dict[tuple[float, float], float], seeds=SEEDS, spread=0.002
         ) -> pd.DataFrame:
    """Final accuracies per (sigma, alpha), each seed shifted by ``spread`` times -1, 0, 1."""
    return pd.DataFrame([
        {"clip": 1.0, "noise_multiplier": s, "alpha_q": a, "iteration": 10, "best_step": 0.1,
         "step_low": 0.05, "step_high": 0.2, "accuracy": v + spread * (seed - 1), "seed": seed,
         "epsilon": 0.0 if a == 0 else (INF if s == 0 else 1.0 / s)}
        for (s, a), v in values.items() for seed in seeds
    ])


def test_tradeoff_table_reads_the_mean_over_seeds() -> None:
    good = _end({(s, a): v for s in (1, 3) for a, v in
                 ((0, 0.5), (0.3, 0.7 - 0.01 * s), (1, 0.65), (INF, 0.6 - 0.1 * s))})
    table = readouts.tradeoff(readouts.mean_over_seeds(good), "accuracy", higher_is_better=True)
    assert table["envelope"].tolist() == pytest.approx([0.69, 0.67])
    assert table["best_alpha_q"].tolist() == [0.3, 0.3]
    assert table["intermediate"].tolist() == pytest.approx([0.65, 0.65])


def _figure2(curves_1c: pd.DataFrame) -> dict[str, str]:
    return _statuses(claims.figure2_claims(_seeded(LIKE_PAPER), curves_1c, "quick"))


def test_emnist_envelope_is_read_as_the_paper_states_it() -> None:
    # Personalization wins at sigma = 1; at sigma = 3 global-only is the best level. The
    # earlier statement (a strictly personalized level beats both extremes at every noise
    # level) failed; the paper's envelope, which includes both extremes, improves on them.
    mixed = _end({(1, 0): 0.5, (1, 0.1): 0.6, (1, 0.3): 0.7, (1, 1): 0.65, (1, INF): 0.6,
                  (3, 0): 0.5, (3, 0.1): 0.52, (3, 0.3): 0.55, (3, 1): 0.54, (3, INF): 0.62})
    assert _figure2(mixed)["fig2-emnist-envelope-dominates"] == "HOLDS"
    strict = claims.personalized_dominates(mixed, "accuracy", True, margin=0.01)
    assert strict.status == "FAILS"  # the best strictly personalized level is inside the grid
    never = _end({(s, a): v for s in (1, 3) for a, v in ((0, 0.5), (0.3, 0.55), (INF, 0.7))})
    assert _figure2(never)["fig2-emnist-envelope-dominates"] == "FAILS"
    tie = _end({(1, 0): 0.5, (1, 0.3): 0.603, (1, INF): 0.6}, spread=0.004)
    assert _figure2(tie)["fig2-emnist-envelope-dominates"] == "FAILS"


def test_figure2_claims_know_their_origin_and_chance() -> None:
    evaluated = claims.figure2_claims(_seeded(LIKE_PAPER), _figure1_curves(), "quick")
    assert [(c.claim_id, c.origin) for c in evaluated] == [
        ("fig2-emnist-envelope-dominates", "paper"),
        ("fig2-synthetic-envelope-dominates", "companion")]
    assert evaluated[0].restated.startswith("said the best strictly personalized level")
    chance = _end({(1, a): 0.101 for a in (0, 0.3, INF)})
    assert _figure2(chance)["fig2-emnist-envelope-dominates"] == "NOT-TESTABLE"


def _figure1_curves(seeds=SEEDS, spread=0.002) -> pd.DataFrame:
    levels = {0: 0.1, 0.1: 0.5, 1: 0.7, 10: 0.8, INF: 0.75}
    noisy = {0: 0.1, 0.1: 0.4, 1: 0.45, 10: 0.3, INF: 0.2}
    return _end({**{(0, a): v for a, v in levels.items()},
                 **{(3, a): v for a, v in noisy.items()}}, seeds, spread)


def test_figure1_claims_read_the_final_accuracies_over_seeds() -> None:
    curves = _figure1_curves()
    linear = _statuses(claims.figure1_claims(curves, "linear", (0, 3), "quick"))
    assert linear == {"fig1c-local-poor": "HOLDS", "fig1c-small-alpha-small-eps": "HOLDS"}
    cnn = _statuses(claims.figure1_claims(curves, "cnn", (0, 3), "quick"))
    assert cnn == {"fig1d-local-very-poor": "HOLDS", "fig1d-small-alpha-small-eps": "HOLDS",
                   "fig1d-large-alpha-low-privacy": "HOLDS"}
    flipped = curves.copy()
    noisy_global = (flipped["noise_multiplier"] == 3) & (flipped["alpha_q"] == INF)
    flipped.loc[noisy_global, "accuracy"] += 0.7
    statuses = _statuses(claims.figure1_claims(flipped, "cnn", (0, 3), "quick"))
    assert statuses["fig1d-small-alpha-small-eps"] == "FAILS"


def test_figure1_claims_tie_one_seed_and_chance() -> None:
    tied = _figure1_curves()
    tied.loc[(tied["noise_multiplier"] == 0) & (tied["alpha_q"] == 1), "accuracy"] = (
        tied.loc[(tied["noise_multiplier"] == 0) & (tied["alpha_q"] == 10), "accuracy"].values
        + 0.001)
    cnn = _statuses(claims.figure1_claims(tied, "cnn", (0, 3), "quick"))
    assert cnn["fig1d-large-alpha-low-privacy"] == "FAILS"  # 10 vs 1: a tie within a point
    one = _statuses(claims.figure1_claims(_figure1_curves(seeds=(0,)), "cnn", (0, 3), "paper"))
    assert set(one.values()) == {"NOT-RUN"}
    chance = _figure1_curves(seeds=(0,)).assign(accuracy=0.103)  # the CNN at sigma = 10
    at_chance = _statuses(claims.figure1_claims(chance, "cnn", (0, 3), "paper"))
    assert at_chance["fig1d-small-alpha-small-eps"] == "NOT-TESTABLE"
    chance3 = _figure1_curves().assign(accuracy=lambda f: 0.1 + 0.002 * f["seed"])
    assert _statuses(claims.figure1_claims(chance3, "cnn", (0, 3), "quick"))[
        "fig1d-small-alpha-small-eps"] == "NOT-TESTABLE"


def _small_steps_curves(seeds=SEEDS) -> pd.DataFrame:
    """Small-step runs: sigma = 1 and 3, the plotted levels but local-only."""
    at1 = {0.1: 0.6, 1: 0.62, 10: 0.55, INF: 0.5}
    at3 = {0.1: 0.45, 1: 0.4, 10: 0.3, INF: 0.25}
    return _end({**{(1, a): v for a, v in at1.items()},
                 **{(3, a): v for a, v in at3.items()}}, seeds, 0.002)


def test_small_steps_claim_is_read_at_the_largest_noise_where_it_is_testable() -> None:
    [claim] = claims.small_steps_claims(_small_steps_curves(), "paper", {})
    assert claim.claim_id == "fig1d-small-alpha-small-steps" and claim.status == "HOLDS"
    assert "sigma in 1, 3" in claim.text and "read at sigma = 3" in claim.evidence
    assert "alpha*Q=0.1 (best of" in claim.evidence and "sigma = 1 (eps=" in claim.evidence
    # At sigma = 1 the small level also leads; at sigma = 3 global-only now does. Where
    # the best small level is alpha*Q = 1, the claim's own bound, that FAILS; where it is
    # 0.1, the lowest of the grid, a level closer to 0 could make it hold: NOT-TESTABLE.
    flipped = _small_steps_curves()
    noisy_global = (flipped["noise_multiplier"] == 3) & (flipped["alpha_q"] == INF)
    flipped.loc[noisy_global, "accuracy"] = 0.6
    [open_end] = claims.small_steps_claims(flipped, "paper", {})
    assert open_end.status == "NOT-TESTABLE" and "an open end of the grid" in open_end.evidence
    assert "on this grid: FAILS" in open_end.evidence
    flipped.loc[(flipped["noise_multiplier"] == 3) & (flipped["alpha_q"] == 1), "accuracy"] = 0.5
    assert claims.small_steps_claims(flipped, "paper", {})[0].status == "FAILS"
    # Every run at sigma = 3 at chance: the claim is read at sigma = 1, where it holds,
    # and where global-only leads there it fails, whatever sigma = 3 says.
    noisy = _small_steps_curves()
    noisy.loc[noisy["noise_multiplier"] == 3, "accuracy"] = 0.103
    [low] = claims.small_steps_claims(noisy, "paper", {})
    assert low.status == "HOLDS" and "read at sigma = 1" in low.evidence
    assert "sigma = 3 (eps=" in low.evidence and "NOT-TESTABLE" in low.evidence
    noisy.loc[(noisy["noise_multiplier"] == 1) & (noisy["alpha_q"] == INF), "accuracy"] = 0.7
    assert claims.small_steps_claims(noisy, "paper", {})[0].status == "FAILS"
    [one] = claims.small_steps_claims(_small_steps_curves(seeds=(0,)), "paper", {})
    assert one.status == "NOT-RUN" and "one repeat" in one.evidence
    chance = _small_steps_curves(seeds=(0,)).assign(accuracy=0.104)
    [untestable] = claims.small_steps_claims(chance, "paper", {})
    assert untestable.status == "NOT-TESTABLE" and "read at sigma = 3" in untestable.evidence


def test_the_small_steps_note_shows_every_seed_of_every_level_at_every_noise() -> None:
    curves = _small_steps_curves()
    learned_once = (curves["noise_multiplier"] == 3) & (curves["alpha_q"] == 0.1)
    curves.loc[learned_once & (curves["seed"] != 0), "accuracy"] = 0.1
    note = claims.small_steps_note(curves)
    assert note.startswith("Final test accuracy of each seed (best step size; chance is 0.1)")
    lines = note.splitlines()
    assert lines[2] == "| sigma | alpha*Q | " + " | ".join(f"seed {s}" for s in SEEDS) + " |"
    row = next(line for line in lines if line.startswith("| 3 | 0.1 |"))
    end = readouts.final(curves)
    seed0 = end[(end["noise_multiplier"] == 3) & (end["alpha_q"] == 0.1) & (end["seed"] == 0)]
    assert [c.strip() for c in row.strip("|").split("|")[2:]] == [
        f"{seed0['accuracy'].item():.3f}" if s == 0 else "0.100" for s in SEEDS]
    assert sum(line.startswith("| ") for line in lines) == 1 + 2 * 4  # header, 2 x 4 levels
    assert claims.small_steps_note(curves.iloc[:0]) == ""


def test_small_steps_curves_take_the_best_step_and_local_only_from_the_main_grid() -> None:
    def runs(rows):
        return pd.DataFrame([{"clip": 1.0, "noise_multiplier": s, "alpha_q": a, "step": step,
                              "iteration": 10, "accuracy": acc, "seed": 0, "epsilon": 1.0}
                             for s, a, step, acc in rows])

    small = runs([(1, 0.1, 0.05, 0.6), (1, 0.1, 0.5, 0.4), (3, 0.1, 0.05, 0.5),
                  (3, 0.1, 0.5, 0.55), (3, INF, 0.05, 0.3)])
    main = runs([(0, 0.0, 0.5, 0.2), (0, 0.0, 1.0, 0.25), (0, INF, 0.5, 0.9)])
    curves = readouts.small_steps_curves(small, main)
    best = {(r.noise_multiplier, r.alpha_q): (r.accuracy, r.best_step)
            for r in curves.itertuples()}
    assert best == {(1, 0.1): (0.6, 0.05), (3, 0.1): (0.55, 0.5), (3, INF): (0.3, 0.05),
                    (1, 0.0): (0.25, 1.0), (3, 0.0): (0.25, 1.0)}
    assert readouts.small_steps_curves(pd.DataFrame(), main).empty


def test_small_steps_claim_without_its_runs_says_where_they_run() -> None:
    [claim] = claims.small_steps_claims(pd.DataFrame(), "quick", {"small steps": "paper only"})
    assert claim.status == "NOT-RUN" and claim.evidence == "small steps: paper only"


def _smallest_step_runs(accuracy: dict[float, list[float]], seeds=SEEDS) -> pd.DataFrame:
    """Runs at sigma = 10 with the step 0.05, evaluated at iterations 0, 100, 200, 300 and
    400 of 400: ``accuracy`` maps alpha*Q to its curve (mean over seeds), each seed shifted
    by 0.002 times -1, 0, 1."""
    return pd.DataFrame([
        {"clip": 1.0, "noise_multiplier": 10.0, "alpha_q": a, "step": 0.05, "iteration": it,
         "accuracy": v + 0.002 * (seed - 1), "seed": seed, "epsilon": 1.06 * it / 400,
         "n_users": 248, "iterations": 400}
        for a, curve in accuracy.items() for seed in seeds
        for it, v in zip((0, 100, 200, 300, 400), curve, strict=True)])


AT_CHANCE = {0.1: [0.1, 0.11, 0.13, 0.105, 0.102], 0.3: [0.1, 0.1, 0.101, 0.1, 0.1],
             INF: [0.1, 0.118, 0.1, 0.099, 0.101]}
"""Every level ends at chance; alpha*Q = 0.1 rises to 0.13 half way and falls back."""


def test_the_smallest_step_finding_at_chance_is_not_testable_as_declared() -> None:
    curves = readouts.smallest_step_curves(_smallest_step_runs(AT_CHANCE))
    [claim] = claims.smallest_step_claims(curves, "paper", {}, test_digits=500)
    assert claim.claim_id == claims.SMALLEST_STEP_CLAIM == "fig1d-small-alpha-sigma10-smallest-step"
    assert claim.origin == "companion" and claim.quote == "" and claim.scale == "paper"
    assert claim.status == "NOT-TESTABLE" and "not learned" in claim.evidence
    assert "declared before the runs were computed" in claim.text
    assert claims.SMALLEST_STEP_READING in claim.text
    assert claim.evidence.startswith("read at sigma = 10, step 0.05, eps=1.06 (RDP)")
    assert "alpha*Q=0.1 (the better of 0.1 and 0.3)" in claim.evidence
    assert "500 test digits" in claim.evidence


def test_the_smallest_step_finding_reads_the_better_small_level_against_global() -> None:
    learns = {0.1: [0.1, 0.2, 0.3, 0.35, 0.4], 0.3: [0.1, 0.3, 0.4, 0.45, 0.5],
              INF: [0.1, 0.1, 0.1, 0.1, 0.1]}
    [holds] = claims.smallest_step_claims(
        readouts.smallest_step_curves(_smallest_step_runs(learns)), "paper", {})
    assert holds.status == "HOLDS" and "alpha*Q=0.3 (the better of 0.1 and 0.3)" in holds.evidence
    # Global learning ahead: FAILS, the declared reading names its levels, no open edge.
    ahead = {**learns, INF: [0.1, 0.5, 0.6, 0.65, 0.7]}
    [fails] = claims.smallest_step_claims(
        readouts.smallest_step_curves(_smallest_step_runs(ahead)), "paper", {})
    assert fails.status == "FAILS" and "open end" not in fails.evidence
    [one] = claims.smallest_step_claims(
        readouts.smallest_step_curves(_smallest_step_runs(learns, seeds=(0,))), "paper", {})
    assert one.status == "NOT-RUN" and "one repeat" in one.evidence


def test_the_smallest_step_finding_without_its_runs_says_why() -> None:
    assert readouts.smallest_step_curves(pd.DataFrame()).empty
    [claim] = claims.smallest_step_claims(pd.DataFrame(), "quick",
                                          {"Figure 1d at sigma = 10": "paper tier only"})
    assert claim.status == "NOT-RUN" and claim.origin == "companion"
    assert claim.evidence == "Figure 1d at sigma = 10: paper tier only"


def test_the_smallest_step_table_gives_the_end_the_peak_and_epsilon_of_every_level() -> None:
    curves = readouts.smallest_step_curves(_smallest_step_runs(AT_CHANCE))
    table = readouts.smallest_step_table(curves, 400)
    assert list(table.index) == ["0.1", "0.3", "inf"]
    assert tuple(table.columns) == readouts.SMALLEST_STEP_COLUMNS
    row = table.loc["0.1"]
    assert row["seeds"] == 3 and row["final test accuracy"] == pytest.approx(0.102)
    assert row["95% interval"].startswith("[0.09") and row["95% interval"].endswith("]")
    assert row["peak accuracy"] == pytest.approx(0.13) and row["at iteration"] == 200
    assert row["share of training"] == pytest.approx(0.5)
    assert row["eps (RDP)"] == pytest.approx(1.06)
    assert table.loc["inf", "at iteration"] == 100  # the start (iteration 0) is left out
    assert readouts.smallest_step_table(pd.DataFrame(), 400).empty


def test_the_smallest_step_prose_reads_every_number_from_the_runs() -> None:
    from fedlib.render.prose import prose

    curves = readouts.smallest_step_curves(_smallest_step_runs(AT_CHANCE))
    template, values = claims.smallest_step_prose(curves, 400, test_digits=500)
    text = prose(template, **values)
    assert "0\\.1, 0\\.3 and inf end at 0\\.102, 0\\.100 and 0\\.101" in text
    assert "no seed of any level ends more than 0\\.01 above it" in text
    assert "peaks at 0\\.130 at iteration 200 (50\\% of training)" in text
    assert "the finding is NOT\\-TESTABLE" in text
    learned = {**AT_CHANCE, 0.3: [0.1, 0.3, 0.4, 0.45, 0.5]}
    template, values = claims.smallest_step_prose(
        readouts.smallest_step_curves(_smallest_step_runs(learned)), 400)
    text = prose(template, **values)
    assert "by level, 0\\.1\\: not learned, 0\\.3\\: learned and inf\\: not learned" in text
    assert "$\\alpha Q$ = 0\\.3 reaches the highest accuracy on the way" in text


def test_figure1_epsilon_claim_compares_printed_values_exactly() -> None:
    table = readouts.figure1_epsilons()
    assert set(table["figure"]) == {"1a", "1c", "1d"}
    row = table[(table["figure"] == "1a") & (table["sigma"] == 100.0)].iloc[0]
    assert row["eps_rdp"] == epsilon(100.0, 1.0, 300, experiment.DELTA, accountant="rdp")
    assert table[table["figure"] == "1c"]["iterations"].unique().tolist() == [20000]
    missing = claims.epsilon_claim(ClaimSheet("ppsgd", "quick"))
    assert missing.status == "NOT-RUN" and "1a sigma=1000" in missing.evidence
    right = claims.epsilon_claim(ClaimSheet("ppsgd", "quick"),
                                 {("1a", 100.0): round(row["eps_rdp"], 2)})
    assert right.status == "HOLDS" and right.evidence.startswith("exact (no randomness): 1/1")
    wrong = claims.epsilon_claim(ClaimSheet("ppsgd", "quick"),
                                 {("1a", 100.0): 2 * row["eps_rdp"]})
    assert wrong.status == "FAILS"



def test_stackoverflow_claims_are_not_run() -> None:
    evaluated = claims.stackoverflow_claims("quick")
    assert [c.claim_id for c in evaluated] == [
        "fig1b-intermediate-alpha-best-without-noise", "fig1b-small-alpha-best-with-noise",
        "fig2-stackoverflow-envelope-dominates"]
    assert {c.status for c in evaluated} == {"NOT-RUN"}
    assert all(c.evidence.startswith("TFF's Stack Overflow HDF5 files are not available")
               and c.paper_value == "" and c.scale == "quick" for c in evaluated)


def test_evaluate_lists_every_claim_of_the_chapter_in_order() -> None:
    setup = experiment.tier("smoke")
    curves_1c = _figure1_curves()
    evaluated = claims.evaluate(_seeded(LIKE_PAPER), curves_1c, curves_1c, setup, "smoke")
    assert [c.claim_id for c in evaluated] == [
        "fig1a-global-fastest-early", "fig1a-global-plateau", "fig1a-smaller-alpha-later",
        "fig1a-local-wins-large-noise", "fig1c-local-poor", "fig1c-small-alpha-small-eps",
        "fig1d-local-very-poor", "fig1d-small-alpha-small-eps", "fig1d-large-alpha-low-privacy",
        "fig1d-small-alpha-small-steps", "fig1d-small-alpha-sigma10-smallest-step",
        "fig2-emnist-envelope-dominates",
        "fig2-synthetic-envelope-dominates",
        "fig1-epsilon-printed",
        "fig1b-intermediate-alpha-best-without-noise", "fig1b-small-alpha-best-with-noise",
        "fig2-stackoverflow-envelope-dominates"]
    assert {c.scale for c in evaluated} == {"smoke"}
    assert set(notes.VERDICT_CHANGES) <= {c.claim_id for c in evaluated}


# --- Tables ---------------------------------------------------------------------------------


def test_privacy_table_has_one_row_per_private_noise_level_of_each_figure() -> None:
    setup = experiment.tier("smoke")
    runs_1c = pd.DataFrame({"n_users": [25, 25], "iterations": [40, 40]})
    runs_1d = pd.DataFrame({"n_users": [20], "iterations": [3]})
    table = readouts.privacy_table(setup, runs_1c, runs_1d)
    assert list(table.columns) == ["figure", "users N", "rate Q/N", "iterations T", "sigma",
                                   "eps RDP", "eps tight"]
    assert list(table["figure"]) == ["1a synthetic", "1c EMNIST linear", "1d EMNIST CNN"]
    assert list(table["users N"]) == [50, 25, 20]  # each EMNIST figure its own writers
    assert table.iloc[2]["rate Q/N"] == 10 / 20
    assert list(table["iterations T"]) == [40, 40, 3]
    assert list(table["sigma"]) == [100.0, 3.0, 3.0]
    row = table.iloc[1]
    assert row["rate Q/N"] == 10 / 25
    assert row["eps RDP"] == epsilon(3.0, 0.4, 40, experiment.DELTA, accountant="rdp")
    assert row["eps tight"] == epsilon(3.0, 0.4, 40, experiment.DELTA, accountant="pld")
    assert table.iloc[0]["eps RDP"] == epsilon(100.0, 1.0, 40, experiment.DELTA,
                                               accountant="rdp")
    # Every user takes part in Figure 1a: its tight epsilon is the exact Gaussian curve,
    # which the PLD accountant approaches from above.
    exact = table.iloc[0]["eps tight"]
    pld = epsilon(100.0, 1.0, 40, experiment.DELTA, accountant="pld")
    assert exact <= pld and exact == pytest.approx(pld, rel=2e-3)


def test_emnist_tables_and_notes() -> None:
    setup = experiment.tier("smoke")
    grids = readouts.emnist_grid_table(setup, 0)
    assert list(grids.columns) == ["linear", "cnn"]
    assert grids.loc["runs", "linear"] == len(experiment.configs(setup, 0, figure="1c"))
    assert grids.loc["epochs", "cnn"] == "0.1 (paper: 20)"
    runs = pd.DataFrame({"iterations": [7]})
    curves = _figure1_curves()
    note = claims.figure1c_note(runs, curves, setup, 30)
    assert note.startswith("Figure 1c ran 7 iterations (1 epochs over 30 writers).")
    assert "$\\alpha Q$=10, $\\sigma$=3: 0.1" in note  # 10 is plotted, sigma=3 is a panel
    assert claims.figure1d_note(runs, setup) == (
        "Figure 1d ran 7 iterations (0.1 epoch(s); the paper ran 20) with the step sizes 0.5.")


def test_emnist_data_table_describes_the_writers() -> None:
    from fedlib.data.federated import split_per_user

    rng = np.random.default_rng(0)
    writers = np.repeat(np.arange(4), [20, 30, 40, 50])
    data = split_per_user(rng.random((140, 784)).astype(np.float32), rng.integers(0, 10, 140),
                          writers, 10, test_fraction=0.1, seed=0, source="toy digits")
    table = readouts.emnist_data_table(data)
    assert table.loc["source", ""] == "toy digits"
    assert table.loc["writers N", ""] == 4
    assert table.loc["train digits", ""] + table.loc["test digits", ""] == 140
    assert table.loc["train digits per writer (median)", ""] == int(
        np.median(data.train_counts()))


# --- the open-edge rule on the best of a set of personalization levels ------------------


@pytest.mark.parametrize(("kind", "levels", "best", "open_end"), [
    ("small", (0.1, 1.0), 0.1, "lowest"),  # alpha*Q -> 0 could extend below 0.1
    ("small", (0.1, 1.0), 1.0, ""),  # 1 is the claim's own bound
    ("small", (0.1, 0.3), 0.3, "highest"),  # the grid stops short of 1
    ("finite", (0.0, 0.3, 1.0, 3.0), 0.0, ""),  # local learning is a natural bound
    ("finite", (0.0, 0.3, 1.0, 3.0), 3.0, "highest"),  # larger finite levels exist
    ("finite", (0.0, 0.3, 1.0, 3.0), 1.0, ""),  # inside
    ("inside", (0.3,), 0.3, "lowest and highest"),  # one level: both ends open
    ("inside", (0.1, 0.3, 1.0), 0.1, "lowest"),
    ("all", (0.0, 1.0, INF), 0.0, ""),  # local and global learning are natural bounds
    ("all", (0.0, 1.0, INF), INF, ""),
    ("all", (0.1, 1.0, INF), 0.1, "lowest"),  # a grid without local learning
])
def test_level_edge_knows_which_ends_are_natural(kind, levels, best, open_end) -> None:
    reason = claims.level_edge(kind, levels, best)
    if open_end:
        assert f"is the {open_end} of the levels" in reason and "open end" in reason
    else:
        assert reason == ""


def test_edge_gated_keeps_a_holds_and_a_not_run() -> None:
    reason = claims.level_edge("small", (0.1, 1.0), 0.1)
    for status in ("HOLDS", "NOT-RUN", "NOT-TESTABLE"):
        verdict = claims.Verdict(status, "evidence")
        assert claims.edge_gated(verdict, reason) is verdict
    for status in ("FAILS", "INCONCLUSIVE"):
        gated = claims.edge_gated(claims.Verdict(status, "evidence"), reason)
        assert gated.status == "NOT-TESTABLE"
        assert gated.evidence.endswith(f"on this grid: {status} (evidence)")
        assert gated.brief == "the best level alpha*Q=0.1 is the lowest of the levels it is " \
                              "the best of, an open end"
    assert claims.edge_gated(claims.Verdict("FAILS", "e"), "").status == "FAILS"


def test_small_alpha_at_the_lowest_level_failing_is_not_testable() -> None:
    curves = _figure1_curves()
    noisy_global = (curves["noise_multiplier"] == 3) & (curves["alpha_q"] == INF)
    curves.loc[noisy_global, "accuracy"] = 0.9
    # The best small level is 1 (0.45 against 0.4 at 0.1): the claim's bound, so FAILS.
    statuses = _statuses(claims.figure1_claims(curves, "linear", (0, 3), "quick"))
    assert statuses["fig1c-small-alpha-small-eps"] == "FAILS"
    # The best small level is 0.1, the lowest of the grid: a smaller one could hold.
    curves.loc[(curves["noise_multiplier"] == 3) & (curves["alpha_q"] == 0.1), "accuracy"] = 0.5
    statuses = _statuses(claims.figure1_claims(curves, "linear", (0, 3), "quick"))
    assert statuses["fig1c-small-alpha-small-eps"] == "NOT-TESTABLE"


def test_synthetic_dominance_failing_at_the_lowest_level_is_part_untested() -> None:
    # At sigma = 3 local-only beats the best strictly personalized level, 0.3, the lowest.
    end = _end({(1, 0): 0.5, (1, 0.3): 0.7, (1, 1): 0.65, (1, INF): 0.6,
                (3, 0): 0.6, (3, 0.3): 0.55, (3, 1): 0.5, (3, INF): 0.4})
    verdict = claims.personalized_dominates(end, "accuracy", True, margin=0.01)
    assert verdict.status == "INCONCLUSIVE" and verdict.evidence.startswith("part untested")
    assert "sigma=3 vs alpha*Q=0: NOT-TESTABLE" in verdict.evidence
    # With the best inside level in the middle of the grid, the same loss is a failure.
    inside = _end({(3, 0): 0.6, (3, 0.1): 0.5, (3, 0.3): 0.55, (3, 1): 0.5, (3, INF): 0.4})
    assert claims.personalized_dominates(inside, "accuracy", True, margin=0.01).status == "FAILS"


def test_the_small_steps_claim_says_when_its_rule_was_chosen() -> None:
    [claim] = claims.small_steps_claims(_small_steps_curves(), "paper", {})
    assert claims.SMALL_STEPS_RULE in claim.text
    assert "chosen after the runs at sigma = 3 had been seen" in claim.text
    assert "after the first were seen" in claim.restated
    [not_run] = claims.small_steps_claims(pd.DataFrame(), "quick", {"part": "why"})
    assert claims.SMALL_STEPS_RULE in not_run.text


# --- what the margins mean ---------------------------------------------------------------


def test_margins_say_what_the_metric_resolves() -> None:
    why = claims.accuracy_why(2500)
    assert "the paper's terms" in why and "2,500 test digits" in why
    assert "moves by 0.00040 per digit" in why and "at most 0.0100" in why
    assert "not given" in claims.accuracy_why(None)
    assert "the paper's terms" in claims.RISK_WHY and "closed form" in claims.RISK_WHY
    assert "'perform very poorly'" in claims.very_poor_why(2500)
    note = claims.margins_note({"linear": 2500, "cnn": 2500})
    assert note.count("\n- ") == 3 and "Figure 1d:" not in note
    assert "Figure 1d: the metric" in claims.margins_note({"linear": 2500, "cnn": 400})


def test_evaluate_reads_the_test_digits_into_the_evidence() -> None:
    setup = experiment.tier("smoke")
    curves_1c = _figure1_curves()
    evaluated = {c.claim_id: c for c in claims.evaluate(
        _seeded(LIKE_PAPER), curves_1c, curves_1c, setup, "smoke",
        test_digits={"linear": 2500, "cnn": 400})}
    assert "2,500 test digits" in evaluated["fig1c-local-poor"].evidence
    assert "400 test digits" in evaluated["fig1d-local-very-poor"].evidence


def test_claims_of_several_comparisons_close_with_what_the_metric_resolves() -> None:
    evaluated = {c.claim_id: c for c in claims.figure1a_claims(_seeded(LIKE_PAPER), "quick")}
    for claim in evaluated.values():
        assert claim.evidence.endswith("what the metric resolves: " + claims.RISK_RESOLUTION)
    figure2 = {c.claim_id: c for c in claims.figure2_claims(_seeded(LIKE_PAPER),
                                                            _figure1_curves(), "quick", 2500)}
    assert figure2["fig2-emnist-envelope-dominates"].evidence.endswith(
        claims.accuracy_resolution(2500))
    assert figure2["fig2-synthetic-envelope-dominates"].evidence.endswith(
        claims.RISK_RESOLUTION)


# --- the open-edge rule on the step size ----------------------------------------------------


GRID = (0.05, 0.1, 0.2)
"""The step sizes of the constructed runs below."""


def _stepped(best: dict[tuple[float, float], tuple[float, float]], seeds=SEEDS,
             grid=GRID) -> pd.DataFrame:
    """Best-over-steps final accuracies per seed from runs at every step of ``grid``:
    (sigma, alpha) -> (accuracy, the step that reaches it); every other step ends 0.05
    lower, each seed shifted by 0.002 times -1, 0, 1."""
    rows = []
    for (sigma, alpha), (accuracy, at) in best.items():
        eps = 0.0 if alpha == 0 else (INF if sigma == 0 else 1.0 / sigma)
        rows += [{"clip": 1.0, "noise_multiplier": sigma, "alpha_q": alpha, "step": step,
                  "iteration": 10, "seed": seed, "epsilon": eps,
                  "accuracy": accuracy + 0.002 * (seed - 1) - (0.0 if step == at else 0.05)}
                 for seed in seeds for step in grid]
    return readouts.best_over_steps(pd.DataFrame(rows), "accuracy", higher_is_better=True)


def _linear(steps: dict[tuple[float, float], float] | None = None,
            accuracy: dict[tuple[float, float], float] | None = None) -> dict:
    """Figure 1c's claims on constructed runs: without noise global learning far ahead of
    local learning; at sigma = 3 the small levels ahead of global learning. ``steps``:
    the best step of a curve (default 0.1, inside the grid); ``accuracy``: a curve's
    final accuracy, replacing the default."""
    finals = {(0, 0): 0.3, (0, 0.1): 0.6, (0, 1): 0.7, (0, INF): 0.8,
              (3, 0.1): 0.5, (3, 1): 0.55, (3, INF): 0.4, **(accuracy or {})}
    curves = _stepped({k: (v, (steps or {}).get(k, 0.1)) for k, v in finals.items()})
    return {c.claim_id: c for c in claims.figure1_claims(curves, "linear", (0, 3), "quick")}


def test_a_best_step_inside_its_grid_leaves_the_verdicts_as_they_were() -> None:
    found = _linear()
    assert {k: c.status for k, c in found.items()} == {
        "fig1c-local-poor": "HOLDS", "fig1c-small-alpha-small-eps": "HOLDS"}
    assert all("open end" not in c.evidence for c in found.values())
    curves = _stepped({(0, 0): (0.3, 0.1), (0, INF): (0.8, 0.1)})
    assert readouts.step_edge(curves, 0.0, 0.0).end == ""


def test_the_better_arm_on_an_edge_leaves_a_holds_standing() -> None:
    # Global learning, which the claim says is better, is best at the largest step: a
    # larger one could only widen its lead.
    found = _linear(steps={(0, INF): 0.2})
    assert found["fig1c-local-poor"].status == "HOLDS"
    assert "open end" not in found["fig1c-local-poor"].evidence
    end = readouts.final(_stepped({(0, INF): (0.8, 0.2)}))
    assert readouts.step_edge(end, 0.0, INF).end == "highest"


def test_the_worse_arm_on_an_edge_makes_a_holds_not_testable() -> None:
    # Local learning, which the claim says is worse, is best at the smallest step: a
    # smaller one could undo global learning's lead.
    claim = _linear(steps={(0, 0): 0.05})["fig1c-local-poor"]
    assert claim.status == "NOT-TESTABLE"
    assert claim.evidence.startswith(
        "alpha*Q=0 at sigma=0, t=10: best step 0.05 is the lowest of the grid 0.05 ... 0.2, "
        "an open end: a step beyond it could undo the claim; on this grid: HOLDS (claim "
        "alpha*Q=inf - alpha*Q=0")
    # The same in the synthetic figure: global learning, which a finite level beats at the
    # end, is best at the largest step in every panel, so that claim is not testable in
    # any of them; early, global learning is the better arm, and its lead stands.
    edge = _seeded(LIKE_PAPER, steps=lambda sigma, alpha: (
        {0.05: 3.0, 0.1: 2.0, 0.2: 1.0} if alpha == INF else STEPS))
    statuses = _statuses(claims.figure1a_claims(edge, "quick", risk0=500.0))
    assert statuses["fig1a-smaller-alpha-later"] == "NOT-TESTABLE"
    assert statuses["fig1a-global-fastest-early"] == "HOLDS"
    assert statuses["fig1a-local-wins-large-noise"] == "INCONCLUSIVE"  # its part vs inf


def test_the_better_arm_on_an_edge_makes_a_failure_not_testable() -> None:
    # Global learning ahead at sigma = 3: the claim that a small level beats it fails.
    ahead = {(3, INF): 0.9}
    assert _linear(accuracy=ahead)["fig1c-small-alpha-small-eps"].status == "FAILS"
    # Global learning, the worse arm of the claim, on an edge: the failure stands.
    assert _linear(steps={(3, INF): 0.2}, accuracy=ahead)[
        "fig1c-small-alpha-small-eps"].status == "FAILS"
    # A small level, of the arm the claim says is better, on an edge: a larger step could
    # make it overtake global learning (it need not be the best small level now).
    claim = _linear(steps={(3, 0.1): 0.2}, accuracy=ahead)["fig1c-small-alpha-small-eps"]
    assert claim.status == "NOT-TESTABLE"
    assert ("alpha*Q=0.1 (a level of the best of 0 < alpha*Q <= 1) at sigma=3, t=10: best "
            "step 0.2 is the highest of the grid 0.05 ... 0.2, an open end: a step beyond it "
            "could make the claim hold; on this grid: FAILS") in claim.evidence
    # Synthetic: every drawn level ties global learning early, and global learning is best
    # at the largest step: a larger one could make it the fastest.
    tie = {a: 100 / T300 + 3.0 for a in LIKE_PAPER}
    edge = _seeded(tie, steps=lambda sigma, alpha: (
        {0.05: 3.0, 0.1: 2.0, 0.2: 1.0} if alpha == INF else STEPS))
    [early] = [c for c in claims.figure1a_claims(edge, "quick")
               if c.claim_id == "fig1a-global-fastest-early"]
    assert early.status == "NOT-TESTABLE"
    assert ("vs 0: NOT-TESTABLE (alpha*Q=inf at sigma=0, t=10: best step 0.2 is the highest "
            "of the grid 0.05 ... 0.2, an open end)") in early.evidence


def test_edge_gated_reads_the_better_arm_against_a_failure_and_the_worse_against_a_holds(
) -> None:
    better, worse = "the better arm's reason, an open end: more", "the worse arm's, an open end"
    holds, fails = claims.Verdict("HOLDS", "h"), claims.Verdict("FAILS", "f")
    assert claims.edge_gated(holds, better) is holds
    assert claims.edge_gated(fails, against=worse) is fails
    gated = claims.edge_gated(holds, better, against=[worse, ""])
    assert gated.status == "NOT-TESTABLE" and gated.evidence == f"{worse}; on this grid: HOLDS (h)"
    both = claims.edge_gated(fails, [claims.level_edge("small", (0.1, 1.0), 0.1), better])
    assert both.status == "NOT-TESTABLE" and both.evidence.endswith("on this grid: FAILS (f)")
    assert both.brief == ("the best level alpha*Q=0.1 is the lowest of the levels it is the "
                          "best of, an open end; the better arm's reason, an open end")
    for status in ("NOT-RUN", "NOT-TESTABLE"):
        verdict = claims.Verdict(status, "e")
        assert claims.edge_gated(verdict, better, against=worse) is verdict


def test_the_step_edge_read_out_on_a_tiny_frame() -> None:
    runs = pd.DataFrame([
        {"clip": 1.0, "noise_multiplier": 0.0, "alpha_q": a, "step": step, "iteration": t,
         "seed": seed, "epsilon": 0.0, "excess_risk": risk}
        for a, seed, step, t, risk in [
            # alpha*Q = 1: best at the largest step with both seeds at the end.
            (1.0, 0, 0.1, 5, 1.0), (1.0, 0, 0.9, 5, 2.0), (1.0, 0, 0.5, 5, 3.0),
            (1.0, 0, 0.1, 9, 3.0), (1.0, 0, 0.9, 9, 1.0), (1.0, 0, 0.5, 9, 2.0),
            (1.0, 1, 0.1, 9, 3.0), (1.0, 1, 0.9, 9, 1.0), (1.0, 1, 0.5, 9, np.nan),
            # alpha*Q = 3: the seeds' best steps 0.1 and 0.5, their median inside.
            (3.0, 0, 0.1, 9, 1.0), (3.0, 0, 0.5, 9, 2.0), (3.0, 0, 0.9, 9, 3.0),
            (3.0, 1, 0.1, 9, 2.0), (3.0, 1, 0.5, 9, 1.0), (3.0, 1, 0.9, 9, 3.0),
            # alpha*Q = 0: one step.
            (0.0, 0, 0.2, 9, 1.0), (0.0, 1, 0.2, 9, 1.0)]])
    curves = readouts.best_over_steps(runs)
    edge = readouts.step_edge(curves, 0.0, 1.0)
    assert (edge.best, edge.low, edge.high, edge.iteration, edge.end) == (0.9, 0.1, 0.9, 9,
                                                                          "highest")
    assert edge.describe() == ("best step 0.9 is the highest of the grid 0.1 ... 0.9, an "
                               "open end")
    assert readouts.step_edge(curves, 0.0, 1.0, iteration=5).end == "lowest"
    assert readouts.step_edge(curves, 0.0, 3.0).end == "" == readouts.step_edge(
        curves, 0.0, 3.0).describe()
    assert readouts.step_edge(curves, 0.0, 3.0).best == pytest.approx(0.3)
    assert readouts.step_edge(curves, 0.0, 0.0).end == "lowest and highest"
    assert readouts.step_edge(curves, 0.0, 0.0).grid() == "0.2"
    assert readouts.step_edge(curves, 10.0, 1.0) is None
    table = readouts.step_edges(curves)
    assert list(table["alpha_q"]) == [0.0, 1.0, 3.0]
    assert list(table["end"]) == ["lowest and highest", "highest", ""]
    mean = readouts.mean_over_seeds(curves)
    last = mean[(mean["iteration"] == 9) & (mean["alpha_q"] == 3.0)].iloc[0]
    assert (last["best_step"], last["step_low"], last["step_high"]) == (
        pytest.approx(0.3), 0.1, 0.9)
    with pytest.raises(ValueError, match="build them with best_over_steps"):
        readouts.step_edge(curves.drop(columns=["step_low"]), 0.0, 1.0)


def test_the_chapter_shows_the_best_step_of_every_drawn_curve_and_counts_the_edges() -> None:
    setup = experiment.tier("smoke")
    synthetic = _seeded(LIKE_PAPER, steps=lambda sigma, alpha: (
        {0.05: 3.0, 0.1: 2.0, 0.2: 1.0} if alpha == INF else STEPS))
    emnist = _stepped({(s, a): (0.5, 0.05 if a == 0 else 0.1)
                       for s in setup.linear.panel_sigmas for a in (0, 0.1, 1, 10, INF)})
    edges = readouts.plotted_step_edges(synthetic, emnist, emnist, setup)
    assert list(edges["figure"].unique()) == ["1a", "1c", "1d"]
    assert len(edges) == 2 * 5 + 2 * 5 + 2 * 5  # panels x drawn levels
    table = readouts.step_edge_table(edges)
    assert table.loc[("1a", "0"), "alpha*Q=inf"] == "0.2 (highest)"
    assert table.loc[("1a", "0"), "alpha*Q=1"] == "0.1"
    assert table.loc[("1c", "3"), "alpha*Q=0"] == "0.05 (lowest)"
    assert table.loc[("1c", "3"), "grid"] == "0.05 ... 0.2"
    summary = readouts.step_edge_summary(edges)
    assert summary.startswith("At the last iteration of each figure, 6 of the 30 curves the "
                              "figures draw have their best step on an end of their grid "
                              "(4 on the lowest step, 2 on the highest)")
    assert "not computed here" in summary
    inside = edges.assign(end="")
    assert "none of the 30 curves" in readouts.step_edge_summary(inside)


def final_of(curves: pd.DataFrame) -> pd.DataFrame:
    """The last evaluation of every curve, per seed."""
    return readouts.final(readouts.with_seed(curves))


def test_arms_that_are_the_best_of_a_set_read_the_step_of_every_level_of_the_set() -> None:
    # Figure 2: the envelope (alpha*Q = 0.3) clears the better extreme, global learning.
    levels = {(1, 0): 0.5, (1, 0.3): 0.7, (1, 1): 0.65, (1, INF): 0.6}
    inside = final_of(_stepped({k: (v, 0.1) for k, v in levels.items()}))
    assert claims.envelope_improves(inside, "accuracy", True).status == "HOLDS"
    # Local learning, the worse extreme, at the smallest step: a smaller one could make
    # it the envelope.
    local = final_of(_stepped({k: (v, 0.05 if k == (1, 0) else 0.1)
                               for k, v in levels.items()}))
    verdict = claims.envelope_improves(local, "accuracy", True)
    assert verdict.status == "NOT-TESTABLE" and "alpha*Q=0 (an extreme)" in verdict.evidence
    # Figure 1d: the best level below 10 ties the best of at least 10 (FAILS); where a
    # level of at least 10 that is not the best of them has its best step on an edge, a
    # larger step could make it clear the margin.
    tie = {(s, a): v for s in (0, 3) for a, v in
           ((0, 0.1), (0.1, 0.5), (1, 0.7), (10, 0.701), (INF, 0.69))}
    found = {c.claim_id: c.status for c in claims.figure1_claims(
        _stepped({k: (v, 0.1) for k, v in tie.items()}), "cnn", (0, 3), "quick")}
    assert found["fig1d-large-alpha-low-privacy"] == "FAILS"
    edge = _stepped({k: (v, 0.2 if k == (0, INF) else 0.1) for k, v in tie.items()})
    found = {c.claim_id: c for c in claims.figure1_claims(edge, "cnn", (0, 3), "quick")}
    claim = found["fig1d-large-alpha-low-privacy"]
    assert claim.status == "NOT-TESTABLE"
    assert claim.evidence.startswith("alpha*Q=inf (a level of the best of >= 10) at sigma=0")
