"""Claims files and the scorecard."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from fedlib.claims import Claim, read_claims, scorecard_markdown, scorecard_text, write_claims
from fedlib.papers.ppsgd.experiment import best_over_steps, evaluate_figure1a_claims


def test_scorecard_lines_and_counts(tmp_path) -> None:
    write_claims(tmp_path / "ppsgd.json", [
        Claim("ppsgd", "a", "HOLDS", "first claim", "1.0"),
        Claim("ppsgd", "b", "FAILS", "second claim", "2.0"),
    ])
    write_claims(tmp_path / "pfa.json", [Claim("pfa", "c", "NOT-RUN", "third", "no data")])
    claims = read_claims(tmp_path)
    text = scorecard_text(claims)
    assert text.splitlines() == [
        "ppsgd a HOLDS first claim",
        "ppsgd b FAILS second claim",
        "pfa c NOT-RUN third",
        "claims: 1 hold, 1 fail, 1 not run",
    ]
    page = scorecard_markdown(claims)
    assert "| ppsgd | `b` | **FAILS** |" in page
    out = subprocess.run([sys.executable, "-m", "fedlib.claims", str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == text


def test_claims_are_validated(tmp_path) -> None:
    with pytest.raises(ValueError, match="unknown paper id"):
        Claim("bietti", "a", "HOLDS", "t", "e")
    with pytest.raises(ValueError, match="status"):
        Claim("ppsgd", "a", "MAYBE", "t", "e")
    with pytest.raises(ValueError, match="duplicate claim ids"):
        write_claims(tmp_path / "x.json", [Claim("ppsgd", "a", "HOLDS", "t", "e")] * 2)


def test_missing_claims_folder_is_a_clear_error(tmp_path) -> None:
    result = subprocess.run([sys.executable, "-m", "fedlib.claims", str(tmp_path / "none")],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "make rebuild-all" in result.stderr


def _curves(shape: dict[float, np.ndarray], sigmas=(0.0, 100.0)) -> pd.DataFrame:
    rows = []
    for sigma in sigmas:
        for alpha_q, risk in shape.items():
            values = risk(sigma) if callable(risk) else risk
            for t, value in enumerate(values, start=1):
                rows.append({"clip": 1.0, "noise_multiplier": sigma, "alpha_q": alpha_q,
                             "iteration": t, "excess_risk": value, "epsilon": 0.0, "step": 0.1})
    return best_over_steps(pd.DataFrame(rows))


T = np.arange(1, 61)


def test_figure1a_claims_hold_on_curves_shaped_like_the_paper() -> None:
    curves = _curves({
        math.inf: 10 / T + 3.0,                      # fast, then a plateau at 3
        1.0: lambda s: 30 / T + 0.1 + s / 100,       # noise hurts the global part
        0.0: 50 / T + 0.05,                          # slow but private and lowest at the end
    })
    verdicts = {c.claim_id: c.status for c in evaluate_figure1a_claims(curves, "test")}
    assert verdicts == {
        "fig1a-global-fastest-early": "HOLDS",
        "fig1a-global-plateau": "HOLDS",
        "fig1a-smaller-alpha-later": "HOLDS",
        "fig1a-local-wins-large-noise": "HOLDS",
    }


def test_figure1a_claims_fail_when_global_learning_keeps_improving() -> None:
    curves = _curves({math.inf: 10 / T, 1.0: 30 / T + 0.1, 0.0: 50 / T + 0.05})
    verdicts = {c.claim_id: c.status for c in evaluate_figure1a_claims(curves, "test")}
    assert verdicts["fig1a-global-plateau"] == "FAILS"
    assert verdicts["fig1a-smaller-alpha-later"] == "FAILS"
    assert verdicts["fig1a-local-wins-large-noise"] == "FAILS"


def test_best_over_steps_takes_the_pointwise_minimum_and_ignores_divergence() -> None:
    runs = pd.DataFrame({
        "clip": 1.0, "noise_multiplier": 0.0, "alpha_q": 1.0, "epsilon": 0.0,
        "step": [0.1, 0.1, 0.5, 0.5, 0.9, 0.9],
        "iteration": [1, 2, 1, 2, 1, 2],
        "excess_risk": [5.0, 1.0, 3.0, 2.0, np.inf, np.nan],
    })
    best = best_over_steps(runs)
    assert list(best["excess_risk"]) == [3.0, 1.0]
    assert list(best["best_step"]) == [0.5, 0.1]


def test_global_only_floor_and_clipping_bound_closed_forms() -> None:
    from fedlib.data.synthetic import AdditiveSyntheticTask
    from fedlib.papers.ppsgd.experiment import (
        clipping_bound,
        global_only_floor,
        shared_optimum_norm,
    )

    task = AdditiveSyntheticTask(n_users=400, dim=10, personal_coords=2, personal_scale=0.5)
    # Deviations N(0, 0.25) on coordinates 9 and 10 (variances 1/9, 1/10):
    # expected floor (1 - 1/N) * 0.25 * (1/9 + 1/10).
    expected = (1 - 1 / 400) * 0.25 * (1 / 9 + 1 / 10)
    assert global_only_floor(task) == pytest.approx(expected, rel=0.15)
    norm = shared_optimum_norm(task)
    assert clipping_bound(task, 2.0, 0.5) == pytest.approx(norm)
