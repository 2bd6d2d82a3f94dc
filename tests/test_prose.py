"""Prose with computed numbers: formatting, escaping, and values a tier did not compute."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from fedlib.render.markdown import markdown_text
from fedlib.render.prose import (
    NOT_RUN,
    Missing,
    claim_of,
    difference_of,
    estimate_of,
    interval_text,
    listing,
    magnitude,
    mean_of,
    missing,
    prose,
    say,
    scaled,
    sign_word,
    status_of,
)
from fedlib.verdicts.claims import Claim
from fedlib.verdicts.compare import Estimate


def test_numbers_are_formatted_with_their_spec_and_escaped():
    text = prose("PFA ends at {acc:.3f}, {n} seeds, {share:.0%} of the weight.",
                 acc=0.75412, n=np.int64(3), share=0.08)
    assert text == "PFA ends at 0\\.754, 3 seeds, 8\\% of the weight."


def test_default_formats():
    assert prose("{x} {k} {b}", x=0.123456, k=7, b=np.float32(2.5)) == "0\\.123 7 2\\.5"


def test_a_value_never_becomes_markup():
    value = "*bold* [link](x) $math$ <b>"
    text = prose("model {name}", name=value)
    assert text == f"model {markdown_text(value)}"
    assert "*bold*" not in text and "<b>" not in text and "$math$" not in text


def test_template_markup_is_kept():
    text = prose("at $\\varepsilon=20$ **{status}**", status="HOLDS")
    assert text == "at $\\varepsilon=20$ **HOLDS**"


@pytest.mark.parametrize("value", [None, float("nan"), np.float64("nan"), Missing(),
                                   Estimate(0, math.nan, -math.inf, math.inf)])
def test_a_value_not_computed_reads_as_a_phrase(value):
    text = prose("the loss ends at {x:.3f}.", x=value)
    assert text == f"the loss ends at {markdown_text(NOT_RUN)}."
    assert "nan" not in text.lower()


def test_missing_keeps_its_own_reason_and_its_attributes_are_missing():
    gone = Missing("not published yet")
    assert prose("{d.mean:.2f} [{d.low:.2f}, {d.high:.2f}]", d=gone) == (
        "not published yet [not published yet, not published yet]")
    assert prose("{d[0]}", d=gone) == "not published yet"


def test_estimate_reads_with_its_interval():
    est = Estimate(3, -0.019, -0.053, 0.014, paired=True)
    assert interval_text(est) == "-0.019 (95% interval -0.053 to 0.014, 3 paired seeds)"
    assert prose("{d:.2f}", d=est) == markdown_text(
        "-0.02 (95% interval -0.05 to 0.01, 3 paired seeds)")
    single = Estimate(1, 0.5, -math.inf, math.inf)
    assert interval_text(single, ".1f") == "0.5 (one run, no interval)"
    assert prose("{d.mean:.1f} and {d.low:.1f}", d=est) == "\\-0\\.0 and \\-0\\.1"


def test_lists_read_as_words():
    assert listing(["a"]) == "a"
    assert listing(["a", "b", "c"]) == "a, b and c"
    assert prose("{x}", x=["S1", "S2"]) == "S1 and S2"
    assert prose("{x:.1f}", x=[0.25, None]) == f"0\\.2 and {markdown_text(NOT_RUN)}"


def test_fields_and_values_must_match():
    with pytest.raises(ValueError, match="no value of that name"):
        prose("{a} {b}", a=1)
    with pytest.raises(ValueError, match="does not use them"):
        prose("{a}", a=1, aa=2)
    with pytest.raises(ValueError, match="positional"):
        prose("{}")
    assert prose("{{literal}} {a}", a=1) == "{literal} 1"


@pytest.fixture
def runs():
    return pd.DataFrame({
        "method": ["pfa", "pfa", "pfa", "weiavg", "weiavg", "weiavg", "np"],
        "seed": [0, 1, 2, 0, 1, 2, 0],
        "epsilon": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, np.nan],
        "accuracy": [0.70, 0.80, 0.90, 0.60, 0.65, 0.95, 0.99],
    })


def test_mean_of_matching_rows(runs):
    assert mean_of(runs, "accuracy", method="pfa") == pytest.approx(0.8)
    assert mean_of(runs, "accuracy", epsilon=None) == pytest.approx(0.99)
    assert mean_of(runs, "accuracy", method="pfa", epsilon=1.0) == pytest.approx(0.8)


def test_rows_a_tier_did_not_run_are_missing(runs):
    assert isinstance(mean_of(runs, "accuracy", method="pfa+"), Missing)
    assert isinstance(mean_of(runs, "loss", method="pfa"), Missing)
    assert isinstance(mean_of(runs, "accuracy", dataset="mnist"), Missing)
    assert isinstance(mean_of(None, "accuracy"), Missing)
    assert isinstance(mean_of(runs, "accuracy", seed=Missing()), Missing)
    assert isinstance(estimate_of(runs, "accuracy", method="pfa+"), Missing)
    assert isinstance(difference_of(runs, "accuracy", {"method": "pfa"},
                                    {"method": "pfa+"}), Missing)
    assert prose("{d:.3f}", d=difference_of(runs, "accuracy", {"method": "pfa"},
                                            {"method": "gone"})) == markdown_text(NOT_RUN)


def test_estimate_and_paired_difference_match_closed_forms(runs):
    est = estimate_of(runs, "accuracy", method="pfa")
    assert est.n == 3 and est.mean == pytest.approx(0.8)
    # t(0.975, 2) = 4.302653; sd of (0.7, 0.8, 0.9) = 0.1
    assert est.high - est.mean == pytest.approx(4.302653 * 0.1 / math.sqrt(3), rel=1e-5)
    diff = difference_of(runs, "accuracy", {"method": "pfa"}, {"method": "weiavg"})
    # per seed: 0.10, 0.15, -0.05 -> mean 0.0667, sd 0.104083
    assert diff.paired and diff.n == 3
    assert diff.mean == pytest.approx(0.2 / 3)
    assert diff.high - diff.mean == pytest.approx(4.302653 * 0.1040833 / math.sqrt(3),
                                                  rel=1e-5)


def test_claims_lookup():
    claims = [Claim("pfa", "fig3-ordering", "FAILS", "text", "evidence", scale="paper")]
    assert status_of(claims, "fig3-ordering") == "FAILS"
    assert claim_of(claims, "fig3-ordering").evidence == "evidence"
    gone = status_of(claims, "fig5-cifar")
    assert missing(gone) and "not evaluated" in str(gone)
    assert prose("**{s}**", s=gone) == f"**{markdown_text(gone.reason)}**"


def test_scaled_magnitude_and_sign_words():
    est = Estimate(3, -0.019, -0.053, 0.014, paired=True)
    points = scaled(est, 100)
    assert (points.mean, points.low, points.high) == pytest.approx((-1.9, -5.3, 1.4))
    flipped = magnitude(est)
    assert (flipped.mean, flipped.low, flipped.high) == pytest.approx((0.019, -0.014, 0.053))
    assert magnitude(-0.5) == 0.5
    assert sign_word(est, "above", "below") == "below"
    assert sign_word(0.001, "above", "below", "level with", tolerance=0.01) == "level with"
    assert sign_word(0.02, "above", "below", tolerance=0.01) == "above"
    for value in (None, float("nan"), Missing()):
        assert missing(scaled(value, 100))
        assert missing(magnitude(value))
        assert missing(sign_word(value, "a", "b"))


def test_say_displays_the_paragraph(monkeypatch):
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    say("accuracy {a:.2f}", a=0.5)
    assert len(shown) == 1 and shown[0].data == "accuracy 0\\.50"


@pytest.mark.parametrize(("value", "written"), [
    (math.inf, "\u221e"), (-math.inf, "\u2212\u221e"), (np.float64("inf"), "\u221e"),
    (np.float32("-inf"), "\u2212\u221e"), (Decimal("Infinity"), "\u221e")])
def test_an_infinite_value_is_written_as_infinity_not_as_missing(value, written):
    """DP-Ditto's budget of no noise is epsilon = inf: a value, never "not run"."""
    assert not missing(value)
    assert prose("at epsilon = {e}", e=value) == f"at epsilon = {written}"
    assert prose("at epsilon = {e:.1f}", e=value) == f"at epsilon = {written}"
    assert prose("{e}", e=[value, 1.0]) == f"{written} and 1"
    assert scaled(value, 2) == value and not missing(sign_word(value, "a", "b"))


def test_an_estimate_with_an_infinite_mean_says_so():
    assert interval_text(Estimate(1, math.inf, -math.inf, math.inf)) == (
        "\u221e (one run, no interval)")
    assert not missing(Estimate(1, math.inf, -math.inf, math.inf))


@pytest.mark.parametrize("value", [pd.NA, pd.NaT, np.datetime64("NaT"), np.timedelta64("NaT"),
                                   Decimal("NaN"), Decimal("sNaN")],
                         ids=["NA", "NaT", "datetime64 NaT", "timedelta64 NaT", "Decimal NaN",
                              "Decimal sNaN"])
def test_pandas_and_numpy_missing_values_read_as_not_run(value):
    assert missing(value)
    assert prose("the loss ends at {x:.3f}.", x=value) == (
        f"the loss ends at {markdown_text(NOT_RUN)}.")
    assert prose("{x}", x=value) == markdown_text(NOT_RUN)


def test_rows_are_matched_at_an_infinite_value_and_at_a_missing_one():
    runs = pd.DataFrame({"epsilon": [1.0, math.inf, math.inf, None],
                         "accuracy": [0.5, 0.8, 0.9, 0.7]})
    assert mean_of(runs, "accuracy", epsilon=math.inf) == pytest.approx(0.85)
    assert prose("{a:.2f} at {e}", a=mean_of(runs, "accuracy", epsilon=math.inf),
                 e=math.inf) == "0\\.85 at \u221e"
    assert mean_of(runs, "accuracy", epsilon=pd.NA) == pytest.approx(0.7)
