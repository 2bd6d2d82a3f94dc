"""The record of the sweeps a render from stored runs could not have."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fedlib.runs import cache as run_cache
from fedlib.runs.gaps import GAPS_LOG, read_gaps, tier_gaps
from fedlib.sweeps import sweep


def _runner(configs: list[dict]) -> list[pd.DataFrame]:
    return [pd.DataFrame({"x": [c["x"]], "y": [c["x"] ** 2]}) for c in configs]


@pytest.fixture
def tier_label():
    """Labels set by the test are undone after it (later tests see no label)."""
    before = run_cache._TIER_LABEL.get()
    yield
    run_cache.set_tier_label(before)


def test_a_sweep_that_may_not_compute_records_what_it_could_not_have(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tier_label) -> None:
    log = tmp_path / "page.gaps.jsonl"
    sweep("toy", [{"x": 1}, {"x": 2}], _runner, workers=1, progress=False)
    # Not set: nothing is recorded, and the sweep fails as it always did.
    monkeypatch.delenv(GAPS_LOG, raising=False)
    with run_cache.stored_only(), pytest.raises(run_cache.MissingRunsError):
        sweep("toy", [{"x": 1}, {"x": 3}], _runner, workers=1, progress=False)
    assert not log.exists()
    monkeypatch.setenv(GAPS_LOG, str(log))
    run_cache.set_tier_label("quick")
    # Every run stored: no record.
    with run_cache.stored_only():
        sweep("toy", [{"x": 1}, {"x": 2}], _runner, workers=1, progress=False)
    assert not log.exists()
    with run_cache.stored_only(), pytest.raises(run_cache.MissingRunsError, match="2 of 4"):
        sweep("toy", [{"x": x} for x in (1, 2, 3, 4)], _runner, workers=1, progress=False)
    run_cache.set_tier_label("paper")
    with run_cache.stored_only(), pytest.raises(run_cache.MissingRunsError, match="1 of 1"):
        sweep("other", [{"x": 9}], _runner, workers=1, progress=False)
    assert read_gaps(log) == [
        {"experiment": "toy", "tier": "quick", "runs": 4, "absent": 2, "damaged": 0},
        {"experiment": "other", "tier": "paper", "runs": 1, "absent": 1, "damaged": 0}]
    assert tier_gaps([log], "quick") == {"page": [read_gaps(log)[0]]}
    assert tier_gaps([log], "smoke") == {}
    # A sweep that computes records nothing.
    sweep("toy", [{"x": 5}], _runner, workers=1, progress=False)
    assert len(read_gaps(log)) == 2


def test_a_record_that_is_not_one_the_render_writes_is_refused(tmp_path: Path) -> None:
    assert read_gaps(tmp_path / "absent.gaps.jsonl") == []
    log = tmp_path / "page.gaps.jsonl"
    log.write_text("{not json\n")
    with pytest.raises(ValueError, match="line 1: not a JSON record"):
        read_gaps(log)
    log.write_text(json.dumps({"experiment": "toy", "tier": "quick"}) + "\n")
    with pytest.raises(ValueError, match="line 1: a record holds the fields"):
        read_gaps(log)


def test_another_tiers_runs_a_page_quotes_are_recorded_as_that_tiers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tier_label) -> None:
    from fedlib.runs.gaps import unrecorded
    from fedlib.runs.published import stored_runs

    log = tmp_path / "page.gaps.jsonl"
    monkeypatch.setenv(GAPS_LOG, str(log))
    run_cache.set_tier_label("quick")

    def quoted(x: int) -> pd.DataFrame:
        return sweep("toy", [{"x": x}], _runner, workers=1, progress=False)

    assert stored_runs(quoted, 7, of_tier="paper") is None
    with run_cache.reading_tier("paper"), pytest.raises(run_cache.MissingRunsError):
        quoted(8)
    assert stored_runs(quoted, 9) is None  # the page's own tier
    with run_cache.stored_only(), unrecorded(), pytest.raises(run_cache.MissingRunsError):
        quoted(10)
    assert [(r["tier"], r["runs"]) for r in read_gaps(log)] == [
        ("paper", 1), ("paper", 1), ("quick", 1)]
    assert run_cache._TIER_LABEL.get() == "quick"  # the page's label is back
