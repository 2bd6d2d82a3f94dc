"""Sizes past their bound are refused before anything is computed, naming the argument."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from fedlib.limits import LIMITS, check_finite, check_size


def test_a_size_inside_its_bound_is_returned_as_an_int() -> None:
    assert check_size(np.int64(300), "iterations") == 300
    assert check_size(LIMITS["rounds"], "rounds") == LIMITS["rounds"]


@pytest.mark.parametrize(("value", "message"), [
    (10**12, r"rounds=1,000,000,000,000 is above 100,000.*LIMITS\['rounds'\]"),
    (0, r"rounds must be a >= 1 integer, got 0"),
    (2.5, r"rounds must be a >= 1 integer"),
    (True, r"rounds must be a >= 1 integer"),
])
def test_a_bad_size_names_the_argument_and_the_way_past_it(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_size(value, "rounds")


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, "1"])
def test_a_non_finite_or_negative_number_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="heterogeneity must be a finite number >= 0"):
        check_finite(value, "heterogeneity")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("heterogeneity", math.nan, "heterogeneity must be a finite number"),
    ("iterations", 10**9 * 10, "iterations=10,000,000,000 is above"),
    ("n_users", -1, "n_users must be a >= 1 integer"),
    ("sigmas", (0.0, -3.0), "sigmas must be a finite number >= 0"),
    ("steps", (0.0,), "steps must be a finite number > 0"),
])
def test_ppsgd_synthetic_grids_are_checked(field: str, value: object, message: str) -> None:
    from fedlib.papers.ppsgd import experiment

    with pytest.raises(ValueError, match=message):
        replace(experiment.tier("quick").synthetic, **{field: value})


@pytest.mark.parametrize(("field", "value", "message"), [
    ("epochs", 1e6, "epochs=1e\\+06 is above 1000"),
    ("epochs", math.nan, "epochs must be a finite number > 0"),
    ("n_evals", 10**7, "n_evals=10,000,000 is above"),
    ("test_fraction", 1.0, r"test_fraction must lie in \(0, 1\)"),
])
def test_ppsgd_emnist_grids_are_checked(field: str, value: object, message: str) -> None:
    from fedlib.papers.ppsgd import experiment

    with pytest.raises(ValueError, match=message):
        replace(experiment.tier("quick").linear, **{field: value})


@pytest.mark.parametrize(("overrides", "message"), [
    ({"rounds": 10**12}, r"rounds=1,000,000,000,000 is above 100,000"),
    ({"local_steps": 10**9}, r"local_steps=1,000,000,000 is above 1,000,000"),
    ({"n_test": -1}, r"n_test must be a >= 1 integer, got -1"),
    ({"distributions": ("zipf",)}, r"distributions names \['zipf'\]"),
    ({"fig4_model": "mlp"}, r"fig4_model='mlp' is not a model of Figure 4"),
    ({"lr_cnn": math.nan}, r"lr_cnn must be a finite number > 0"),
])
def test_pfa_tiers_are_checked(overrides: dict, message: str) -> None:
    from fedlib.papers.pfa import experiment

    with pytest.raises(ValueError, match=message):
        experiment.tier("quick", **overrides)


def test_pfa_authors_setting_is_checked() -> None:
    from fedlib.papers.pfa.experiment import AuthorsSetting

    with pytest.raises(ValueError, match=r"aggregators names \['fedsgd'\]"):
        AuthorsSetting(aggregators=("fedavg", "fedsgd"))
    with pytest.raises(ValueError, match="seeds must be a non-empty tuple"):
        AuthorsSetting(seeds=())

