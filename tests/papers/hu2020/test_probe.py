"""Hu et al. 2020: the probe's claims (other lambdas, the paper's n_min, noise scaled to
zero), its notes, and the majority-class line of the error figures."""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.hu2020 import claims as hu_claims
from fedlib.papers.hu2020 import experiment as hu
from fedlib.papers.hu2020 import figures as hu_figures

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
               hu_figures.probe_figure(hu_claims.probe_points(_probe(), SETUP, LAM), 0.172)]
    assert [len(_line_labels(f)) for f in figures] == [2, 1, 1]
    assert all(label == "majority class (0.172)" for f in figures for label in _line_labels(f))
    assert _line_labels(hu_figures.figures_3_and_4(last)) == []


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
