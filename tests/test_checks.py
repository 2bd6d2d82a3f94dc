"""Argument checks: each returns the plain value or raises naming the argument and the fix."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedlib.checks import (
    check_count,
    check_delta,
    check_device,
    check_epsilon,
    check_impact_factors,
    check_non_negative,
    check_positive,
    check_probability,
    check_seed,
    check_workers,
    is_real,
)
from fedlib.tiers import check_scale


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (check_epsilon, 0.0, "epsilon must be a finite number > 0"),
        (check_epsilon, math.inf, "epsilon must be a finite number > 0"),
        (check_epsilon, True, "epsilon"),
        (check_delta, 1.0, "0 < delta < 1"),
        (check_delta, math.nan, "0 < delta < 1"),
        (lambda v: check_positive(v, "lr"), -0.1, "lr must be a finite number > 0"),
        (lambda v: check_non_negative(v, "mu"), -1.0, "mu must be a finite number >= 0"),
        (lambda v: check_probability(v, "q"), 1.5, "0 < q <= 1"),
        (lambda v: check_count(v, "rounds", 1), 0, "rounds must be a >= 1 integer"),
        (lambda v: check_count(v, "rounds"), 2.5, "rounds must be a non-negative integer"),
        (check_impact_factors, [0.5, 0.6], "must sum to 1"),
        (check_impact_factors, [1.5, -0.5], "non-negative"),
        (check_impact_factors, [], "non-empty"),
        (check_scale, "huge", "not a run tier"),
        (check_seed, -1, "non-negative"),
        (check_seed, 1.5, "integer"),
        (check_device, "meta", "not supported"),
        (check_device, "nonsense", "not a torch device"),
        (check_workers, -1, "workers"),
        (check_workers, True, "workers"),
        (check_workers, "2", "workers"),
    ],
)
def test_bad_values_are_refused_with_the_name_and_the_fix(check, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        check(value)


def test_good_values_come_back_as_plain_types() -> None:
    assert check_epsilon(np.float32(2.0)) == 2.0 and type(check_epsilon(2)) is float
    assert check_delta(1e-5) == 1e-5
    assert check_count(300.0, "steps") == 300 and type(check_count(300.0, "steps")) is int
    assert check_probability(1, "q") == 1.0
    np.testing.assert_array_equal(check_impact_factors([0.25, 0.75]), [0.25, 0.75])
    assert check_seed(0) == 0 and check_workers(0) == 0 and check_device("cpu") == "cpu"
    assert is_real(1.5) and is_real(np.int64(3)) and not is_real(True) and not is_real("1")


@pytest.mark.parametrize("seed", [np.int64(7), np.uint32(7), np.int8(7), 7])
def test_a_seed_may_be_a_numpy_integer_and_comes_back_a_python_int(seed: object) -> None:
    back = check_seed(seed)
    assert back == 7 and type(back) is int


@pytest.mark.parametrize("seed, message", [
    (2**63, r"outside \[0, 2\*\*63\)"), (2**70, r"outside \[0, 2\*\*63\)"),
    (np.uint64(2**63), r"outside \[0, 2\*\*63\)"), (np.int64(-3), "non-negative integer"),
    (np.bool_(True), "non-negative integer"), (7.0, "non-negative integer"),
    ("7", "non-negative integer"),
])
def test_seeds_past_what_the_generators_take_are_refused_naming_the_range(
        seed: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_seed(seed)
    assert check_seed(2**63 - 1) == 2**63 - 1
    np.random.default_rng(2**63 - 1)
    import torch
    torch.manual_seed(2**63 - 1)
