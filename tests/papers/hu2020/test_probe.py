"""Hu et al. 2020: the probe's claims (other lambdas, the paper's n_min, noise scaled to
zero), its notes, and the majority-class line of the error figures."""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pandas as pd
import pytest

from fedlib.papers.hu2020 import claims as hu_claims
from fedlib.papers.hu2020 import experiment as hu
from fedlib.papers.hu2020 import figures as hu_figures
from fedlib.privacy import epsilon as exact_epsilon

BASE = hu_claims.Baselines(majority_error=0.17, start_primal=1000.0)
SETUP = dataclasses.replace(hu.tier("smoke"), n_min=50, probe_lams=(1e-3, 1e-2, 0.1),
                            noise_scales=(0.0, 0.01), probe_repeats=3)
LAM = 1e-3


def _row(lam, n_min, scale, repeat, error, epsilon=8.0, primal=500.0):
    return {"run_key": f"{lam}-{n_min}-{scale}-{epsilon}-{repeat}", "round": 10,
            "tau": 0.0, "p_drop": 0.0, "dual": "as-written", "lam": lam, "n_min": n_min,
            "noise_scale": scale, "repeat": repeat, "error": error, "epsilon": epsilon,
            "primal": primal, "sigma1": 60.0 * scale, "sigma2": 60.0 * scale}


def _probe(private_error=0.47, lam_errors=None, paper_error=0.47, zero=(0.01, 0.01, 0.01),
           small=0.05):
    lam_errors = lam_errors or {}
    rows = []
    for repeat, jitter in enumerate((0.002, 0.0, -0.002)):
        for lam in SETUP.probe_lams:
            rows.append(_row(lam, 50, 1.0, repeat, lam_errors.get(lam, private_error) + jitter))
        rows.append(_row(LAM, 213, 1.0, repeat, paper_error + jitter))
        rows.append(_row(LAM, 50, 0.0, repeat, zero[repeat], primal=100.0 + repeat))
        rows.append(_row(LAM, 50, 0.01, repeat, small + jitter))
    return pd.DataFrame(rows)


def _plain(errors=(0.01, 0.01, 0.01)):
    return pd.DataFrame([_row(LAM, 50, 1.0, r, e, epsilon=np.nan, primal=100.0 + r)
                         for r, e in enumerate(errors)])


def _status(claims):
    return {c.claim_id: c.status for c in claims}


def test_a_private_solver_at_coin_flipping_fails_to_learn_at_every_probe_point() -> None:
    claims = hu_claims.evaluate_probe(_probe(), _plain(), SETUP, LAM, "quick", BASE)
    assert _status(claims) == {"probe-private-learns-at-some-lambda": "FAILS",
                               "probe-private-learns-at-paper-n-min": "FAILS",
                               "continuity-zero-noise-is-non-private": "HOLDS"}
    assert all(c.origin == "companion" for c in claims)
    note = hu_claims.probe_note(_status(claims), hu_claims.probe_points(_probe(), SETUP, LAM),
                                BASE)
    assert "do not hinge on the choice of lambda or of n_min; they stay" in note


def test_learning_at_one_lambda_is_enough_and_the_note_says_the_verdicts_depend_on_it() -> None:
    probe = _probe(lam_errors={0.1: 0.12})
    claims = hu_claims.evaluate_probe(probe, _plain(), SETUP, LAM, "quick", BASE)
    assert _status(claims)["probe-private-learns-at-some-lambda"] == "HOLDS"
    note = hu_claims.probe_note(_status(claims), hu_claims.probe_points(probe, SETUP, LAM), BASE)
    assert "depend on that choice" in note


def test_the_paper_n_min_is_told_apart_from_the_setup_n_min() -> None:
    points = hu_claims.probe_points(_probe(paper_error=0.11), SETUP, LAM)
    assert set(points["lambda=0.001, n_min=213 (the paper's)"]["n_min"]) == {213}
    assert set(points["lambda=0.001, n_min=50"]["n_min"]) == {50}
    claims = hu_claims.evaluate_probe(_probe(paper_error=0.11), _plain(), SETUP, LAM, "quick",
                                      BASE)
    assert _status(claims)["probe-private-learns-at-paper-n-min"] == "HOLDS"


def test_continuity_fails_when_zero_noise_misses_the_non_private_run() -> None:
    claims = hu_claims.evaluate_probe(_probe(zero=(0.01, 0.02, 0.01)), _plain(), SETUP, LAM,
                                      "quick", BASE)
    continuity = [c for c in claims if c.claim_id == "continuity-zero-noise-is-non-private"]
    assert continuity[0].status == "FAILS" and "largest test-error difference 0.01" in (
        continuity[0].evidence)
    missing = hu_claims.evaluate_probe(_probe(), _plain().iloc[:0], SETUP, LAM, "quick", BASE)
    assert _status(missing)["continuity-zero-noise-is-non-private"] == "NOT-RUN"


def test_one_repeat_judges_no_probe_point() -> None:
    probe = _probe()
    claims = hu_claims.evaluate_probe(probe[probe["repeat"] == 0], _plain(), SETUP, LAM,
                                      "paper", BASE)
    assert _status(claims)["probe-private-learns-at-some-lambda"] == "NOT-RUN"


@pytest.mark.parametrize(("small", "expected"), [
    (0.05, "scale the noise down by a factor of about 100"),
    (0.47, "the failure is the size of the noise Theorem 5 prescribes, not a defect"),
])
def test_defect_note_reads_the_noise_trace(small, expected) -> None:
    points = hu_claims.probe_points(_probe(small=small), SETUP, LAM)
    assert expected in hu_claims.defect_note(points, BASE, SETUP)


def test_a_zero_noise_run_that_does_not_learn_is_called_a_defect_unless_it_is_continuous(
) -> None:
    points = hu_claims.probe_points(_probe(zero=(0.47, 0.47, 0.47), small=0.47), SETUP, LAM)
    assert "defect of this implementation" in hu_claims.defect_note(points, BASE, SETUP)
    assert "too few rounds" in hu_claims.defect_note(points, BASE, SETUP, continuity=True)


def test_noise_against_signal_uses_the_run_multipliers() -> None:
    frame = pd.DataFrame([_row(LAM, 50, 1.0, 0, 0.47)])
    table = hu_claims.noise_against_signal(frame, d=561, n_min=50, smallest=213, lam=1e-3,
                                           xi=1.0, m=30)
    row = table.iloc[0]
    assert row["upload noise / largest signal, per round"] == pytest.approx(
        2 * 60.0 * np.sqrt(561 / 50))
    assert row["dual noise per round (std, smallest device)"] == pytest.approx(
        (8e-3 + 30) / (30 * 213) * 60.0)


def _line_labels(fig):
    return [line.get_label() for ax in fig.axes for line in ax.get_lines()
            if line.get_label().startswith(hu_figures.MAJORITY_LABEL)]


def test_every_error_figure_draws_the_majority_class() -> None:
    last = pd.DataFrame([
        {"figure": fig, "tau": x if fig == "fig3" else 0.5, "p_drop": x if fig == "fig4" else 0.0,
         "epsilon": eps, "dual": "as-written", "error": 0.3, "repeat": 0}
        for fig in ("fig3", "fig4") for x in (0.0, 0.5) for eps in (8.0, np.nan)])
    fig5 = pd.DataFrame([{"epsilon": e, "error": 0.3, "dual": "as-written", "repeat": 0}
                         for e in (0.1, 10.0)])
    figures = [hu_figures.figures_3_and_4(last, 0.172), hu_figures.figure_5(fig5, 0.2, 0.172),
               hu_figures.probe_figure(hu_claims.probe_points(_probe(), SETUP, LAM), 0.172),
               hu_figures.figures_3_and_4(last)]
    try:
        assert [len(_line_labels(f)) for f in figures] == [2, 1, 1, 0]
        assert all(label == "majority class (0.172)" for f in figures
                   for label in _line_labels(f))
    finally:
        for figure in figures:
            plt.close(figure)


def test_the_probe_notes_name_claims_the_probe_makes() -> None:
    ids = {c.claim_id for c in hu_claims.evaluate_probe(_probe(), _plain(), SETUP, LAM,
                                                        "quick", BASE)}
    probe_notes = {k for k in hu_claims.VERDICT_CHANGES
                   if k.startswith(("probe-", "continuity-"))}
    assert probe_notes and probe_notes <= ids


def test_the_probe_at_an_untuned_setting_is_not_testable_but_continuity_stands() -> None:
    claims = {c.claim_id: c for c in hu_claims.evaluate_probe(
        _probe(), _plain(), SETUP, LAM, "quick", BASE, untuned="untuned: lambda and xi",
        untuned_xi="untuned: xi")}
    assert claims["probe-private-learns-at-some-lambda"].status == "NOT-TESTABLE"
    assert "untuned: xi; as judged at this setting: FAILS" in claims[
        "probe-private-learns-at-some-lambda"].evidence
    assert claims["probe-private-learns-at-paper-n-min"].status == "NOT-TESTABLE"
    assert "untuned: lambda and xi" in claims["probe-private-learns-at-paper-n-min"].evidence
    assert claims["continuity-zero-noise-is-non-private"].status == "HOLDS"
    # Only xi untuned: the other lambdas are read at it, the chosen lambda's n_min run too.
    only_lambda = {c.claim_id: c.status for c in hu_claims.evaluate_probe(
        _probe(), _plain(), SETUP, LAM, "quick", BASE, untuned="untuned: lambda")}
    assert only_lambda["probe-private-learns-at-some-lambda"] == "FAILS"
    assert only_lambda["probe-private-learns-at-paper-n-min"] == "NOT-TESTABLE"


def test_the_tuning_note_says_which_claims_the_rule_reaches() -> None:
    assert "tuned setting" in hu_claims.tuning_note("", "")
    both = hu_claims.tuning_note("untuned: reason", "untuned: xi")
    assert both.startswith("**Open edge.** Untuned: reason.") and "other lambdas included" in both
    assert "keep their verdict" in hu_claims.tuning_note("untuned: reason", "")


def test_the_probe_note_says_when_its_findings_are_read_at_an_untuned_setting() -> None:
    claims = hu_claims.evaluate_probe(_probe(), _plain(), SETUP, LAM, "quick", BASE,
                                      untuned="untuned: lambda", untuned_xi="untuned: xi")
    note = hu_claims.probe_note(_status(claims), hu_claims.probe_points(_probe(), SETUP, LAM),
                                BASE)
    assert "not testable at this tier" in note and "not shown to be tuned" in note


# --- The noise trace at the paper's rounds ---------------------------------------------------


TRACE_SETUP = dataclasses.replace(hu.tier("smoke"), inner_rounds=20, outer_rounds=5, n_min=50)


def _trace_row(scale, repeat, error, *, lam=LAM, n_min=50, q=0.25):
    return {**_row(lam, n_min, scale, repeat, error), "q": q,
            "run_key": f"trace-{lam}-{n_min}-{scale}-{repeat}"}


def _trace(errors=None):
    """The trace's runs: factor -> the error of each of three repeats."""
    errors = errors or {1.0: 0.49, 0.316: 0.5, 0.01: 0.38, 0.001: 0.03, 0.0001: 0.009}
    return pd.DataFrame([_trace_row(scale, r, error + 0.002 * (r - 1))
                         for scale, error in errors.items() for r in range(3)])


def _chapter_probe():
    """The chapter's own probe: factor 0 at the trace's lambda and n_min (five repeats),
    beside runs the trace must not take (factor 1 with five repeats, another lambda, the
    paper's n_min)."""
    rows = [_trace_row(0.0, r, 0.0085) for r in range(5)]
    rows += [_trace_row(1.0, r, 0.3) for r in range(5)]
    rows += [_trace_row(0.0, r, 0.3, lam=0.1) for r in range(3)]
    rows += [_trace_row(0.0, r, 0.3, n_min=213) for r in range(3)]
    return pd.DataFrame(rows)


def test_the_noise_trace_is_the_run_the_paper_tier_computed() -> None:
    from fedlib.papers.hu2020.paper_tier import PAPER_GRID, noise_trace_setup

    paper = PAPER_GRID.tier("paper")
    computed = dataclasses.replace(paper, noise_scales=(0.316, 1e-2, 1e-3, 1e-4),
                                   probe_repeats=3, probe_lams=(1e-3,), probe_n_min=None)
    assert noise_trace_setup(paper, 1e-3) == computed
    trace = hu.configs(computed, 0, stage="probe", features="hapt-561", lam=1e-3, xi="1")
    assert len(trace) == 15
    figures = hu.configs(paper, 0, stage="figures", features="hapt-561", lam=1e-3, xi="1")
    shared = [c for c in trace if c in figures]
    assert len(shared) == 3 and {c["noise_scale"] for c in shared} == {1.0}  # Figure 2(a)'s
    assert {c["inner_rounds"] * c["outer_rounds"] for c in trace} == {20_000}


def test_the_noise_trace_is_read_from_stored_runs_only(monkeypatch) -> None:
    from fedlib.papers.hu2020 import paper_tier
    from fedlib.runs import cache
    from fedlib.runs.cache import MissingRunsError

    paper = paper_tier.PAPER_GRID.tier("paper")
    runs, why = paper_tier.stored_noise_trace(paper, 0, "quick", features="hapt-561",
                                              lam=LAM, xi="1")
    assert runs is None and "paper tier only" in why
    seen = []

    def missing(setup, seed, **kwargs):
        seen.append((setup.noise_scales, kwargs["stage"], cache._STORED_ONLY.get()))
        raise MissingRunsError("12 of 15 runs of hu2020-har are neither cached nor published. "
                               "Run make publish")

    monkeypatch.setattr(hu, "run", missing)
    runs, why = paper_tier.stored_noise_trace(paper, 0, "paper", features="hapt-561", lam=LAM,
                                              xi="1", progress=False)
    assert runs is None and seen == [(paper_tier.NOISE_TRACE_SCALES, "probe", True)]
    assert why == ("its runs are not all stored (12 of 15 runs of hu2020-har are neither "
                   "cached nor published)")
    sentence = paper_tier.noise_trace_absent(why)
    assert sentence.startswith("The noise trace at the paper's rounds is not shown here: its "
                               "runs are not all stored")
    assert why in sentence and "about 9 CPU-minutes" in sentence


def test_the_noise_trace_table_reads_every_factor_with_its_accountant_epsilon() -> None:
    points = hu_claims.noise_trace_points(_trace(), _chapter_probe())
    assert list(points) == [1.0, 0.316, 0.01, 0.001, 0.0001, 0.0]
    table = hu_claims.noise_trace_table(points, TRACE_SETUP, BASE)
    assert tuple(table.columns) == hu_claims.NOISE_TRACE_COLUMNS
    assert table["repeats"].tolist() == [3, 3, 3, 3, 3, 5]  # factor 1: the trace's own runs
    assert table.loc[1.0, "test error"] == pytest.approx(0.49)
    assert table.loc[0.0, "test error"] == pytest.approx(0.0085)
    assert table["beats the majority class"].tolist() == [
        "FAILS", "FAILS", "FAILS", "HOLDS", "HOLDS", "HOLDS"]
    rounds = TRACE_SETUP.inner_rounds * TRACE_SETUP.outer_rounds
    assert table.loc[0.01, "RDP epsilon over K H rounds"] == pytest.approx(
        hu_claims.round_epsilon(0.6, 0.6, 0.25, rounds))
    assert table.loc[0.0, "RDP epsilon over K H rounds"] == np.inf
    epsilons = table["RDP epsilon over K H rounds"].tolist()
    assert epsilons == sorted(epsilons)  # less noise, less privacy
    z = 1 / np.sqrt(2 / 60.0**2)
    assert hu_claims.round_epsilon(60.0, 60.0, 0.25, 100) == pytest.approx(
        exact_epsilon(z, 0.25, 100, hu.DELTA, accountant="rdp"))
    assert list(hu_claims.noise_trace_points(_trace())) == [1.0, 0.316, 0.01, 0.001, 0.0001]


def test_the_noise_trace_prose_reads_its_numbers_from_the_runs() -> None:
    from fedlib.render.prose import prose

    points = hu_claims.noise_trace_points(_trace(), _chapter_probe())
    template, values = hu_claims.noise_trace_prose(points, TRACE_SETUP, BASE, LAM)
    text = prose(template, **values)
    table = hu_claims.noise_trace_table(points, TRACE_SETUP, BASE)
    near = min((s for s in table.index if 0 < s < 1), key=lambda s: abs(
        np.log(table.loc[s, "RDP epsilon over K H rounds"] / hu.EPSILON)))
    assert values["near"] == near and values["learn"] == 0.001 and values["smallest"] == 0.0001
    assert "At the paper's 100 rounds" in text
    assert "does not let the private solver beat the majority class (0\\.170)" in text
    assert "first beats the majority class at 0\\.001 times Theorem 5's noise" in text
    assert "1/1\\,000 of the noise Theorem 5 prescribes" in text
    assert "0\\.0085 \\(95\\% interval 0\\.0085 to 0\\.0085\\, 5 runs\\) without noise" in text
    # No factor learns: the prose says so; no run without noise: not stored.
    failing = hu_claims.noise_trace_points(_trace({1.0: 0.49, 0.1: 0.45, 0.01: 0.4}))
    template, values = hu_claims.noise_trace_prose(failing, TRACE_SETUP, BASE, LAM)
    text = prose(template, **values)
    assert "At no factor down to 0\\.01 does it beat the majority class" in text
    assert "without noise: not stored" in text


def test_the_noise_trace_prose_names_an_epsilon_beyond_the_papers() -> None:
    points = hu_claims.noise_trace_points(_trace())
    _, values = hu_claims.noise_trace_prose(points, TRACE_SETUP, BASE, LAM)
    assert values["learn_eps"] > values["top"] == max(hu.tier("paper").epsilons)
