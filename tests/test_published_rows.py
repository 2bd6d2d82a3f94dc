"""The rows a published run keeps: the steps its experiment declares, every step a claim
reads and the last one, with the full run's values; export applies the rule, and the
PPSGD claims read from thinned runs are those read from full runs."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedlib.papers.ppsgd import claims, experiment, paper_tier, readouts
from fedlib.runs import cache as run_cache
from fedlib.runs import keys as run_keys
from fedlib.runs import rows as published_rows
from fedlib.runs.cache import ResultStore
from fedlib.runs.published import PublishedStore, export
from fedlib.runs.rows import KeptRowsError, KeptSteps, kept_rows, log_linear_grid
from fedlib.sweeps import sweep


def _run_table(last: int, first: int = 1) -> pd.DataFrame:
    steps = np.arange(first, last + 1)
    rng = np.random.default_rng(last)
    return pd.DataFrame({"step": 0.5, "iteration": steps,
                         "excess_risk": rng.lognormal(size=len(steps)),
                         "epsilon": np.linspace(0.0, 3.0, len(steps))})


@pytest.mark.parametrize("last", [300, 257, 40])
def test_a_thinned_run_keeps_the_declared_steps_the_read_ones_and_the_last(last: int) -> None:
    full = _run_table(last)
    thinned = readouts.SYNTHETIC_ROWS.thin(full)
    kept = set(thinned["iteration"])
    assert kept == readouts.curve_iterations(last) | {last}
    assert readouts.claim_iterations(last) <= kept and last in kept
    if last >= 100:
        assert len(thinned) < len(full) / 3  # the grid does thin
    # The kept rows are the full run's rows, values and order unchanged.
    expected = full[full["iteration"].isin(kept)].reset_index(drop=True)
    pd.testing.assert_frame_equal(thinned, expected)
    # Thinning again keeps them all (a published run exported again is the same).
    pd.testing.assert_frame_equal(readouts.SYNTHETIC_ROWS.thin(thinned), thinned)


def test_the_claims_read_iterations_t_over_30_t_over_2_200_and_t() -> None:
    assert readouts.claim_iterations(300) == {10, 150, 200, 300}
    assert readouts.claim_iterations(120) == {4, 60, 120}


def test_a_rule_that_would_drop_a_claim_read_step_is_refused_naming_it() -> None:
    sparse = KeptSteps("iteration", grid=lambda last: range(0, last + 1, 50),
                       reads=lambda last: {max(1, last // 30), 200, last})
    with pytest.raises(KeptRowsError, match=r"drop iteration 10, which a claim reads"):
        sparse.thin(_run_table(300))
    with pytest.raises(KeptRowsError, match="add them to the rule's grid"):
        replace(sparse, grid=lambda last: {last}).thin(_run_table(300))


def test_runs_a_reader_walks_step_by_step_keep_every_row() -> None:
    walked = replace(readouts.SYNTHETIC_ROWS,
                     whole=lambda config, tier: config["noise_multiplier"] == 1000.0)
    full = _run_table(300)
    pd.testing.assert_frame_equal(walked.thin(full, {"noise_multiplier": 1000.0}, "paper"),
                                  full)
    assert len(walked.thin(full, {"noise_multiplier": 10.0}, "paper")) < len(full)


def test_the_settings_sweep_runs_at_its_largest_noise_level_are_kept_whole() -> None:
    settings = experiment.setting_configs(paper_tier.settings_setup("paper"), 0)
    loud = next(c for c in settings if c["noise_multiplier"] == 1000.0)
    quiet = next(c for c in settings if c["noise_multiplier"] == 100.0)
    grid_1a = experiment.configs(experiment.tier("paper"), 0, figure="1a")
    other_clip = next(c for c in grid_1a if c["noise_multiplier"] == 1000.0
                      and c["clip"] == 0.1)
    other_step = next(c for c in grid_1a if c["noise_multiplier"] == 1000.0
                      and c["clip"] == 1.0 and c["step"] == 0.01)
    assert readouts.walked_step_by_step(loud, "paper")
    assert readouts.walked_step_by_step(loud, "quick")
    assert not readouts.walked_step_by_step(quiet, "paper")
    assert not readouts.walked_step_by_step(other_clip, "paper")  # a panel it does not run
    # A step size the sweep does not run, in a panel it walks: kept whole too (the best
    # over step sizes at an iteration is taken over every step or none).
    assert readouts.walked_step_by_step(other_step, "paper")
    # As the manifest writes a config (non-finite floats as text), the same answer.
    assert readouts.walked_step_by_step(run_keys.canonical(loud), "paper")


def test_tables_the_rule_cannot_read_are_refused() -> None:
    rule = readouts.SYNTHETIC_ROWS
    with pytest.raises(KeptRowsError, match="no 'iteration' column"):
        rule.thin(pd.DataFrame({"round": [1, 2]}))
    with pytest.raises(KeptRowsError, match="not steps"):
        rule.thin(pd.DataFrame({"iteration": [1.0, 2.5]}))
    assert rule.thin(_run_table(0, first=1)).empty


def test_a_log_plus_linear_grid_spans_first_to_last() -> None:
    grid = log_linear_grid(300, 10, 50)
    assert min(grid) == 1 and max(grid) == 300
    assert {1, 2, 50, 100, 250, 300} <= grid and 299 not in grid
    assert log_linear_grid(7, 40, 10, first=0) == set(range(8))
    with pytest.raises(ValueError, match="first <= last"):
        log_linear_grid(3, 10, 5, first=4)
    with pytest.raises(ValueError, match="log_points >= 2"):
        log_linear_grid(10, 1, 5)


def test_experiments_without_a_rule_publish_every_row() -> None:
    table = _run_table(300)
    assert published_rows.rule("toy") is None
    assert kept_rows("toy", table) is table


# Export applies the rule ------------------------------------------------------------------

CURVE_ROWS = KeptSteps("iteration", grid=lambda last: {1, 5, 10}, reads=lambda last: {5})
"""A rule for the runs of :func:`curve_runner`: steps 1, 5, 10 and the last."""


def curve_runner(configs: list[dict]) -> list[pd.DataFrame]:
    """Toy runner: one row per iteration 1..length of a run."""
    return [pd.DataFrame({"iteration": np.arange(1, c["length"] + 1),
                          "value": np.sqrt(np.arange(1, c["length"] + 1)) * c["scale"]})
            for c in configs]


@pytest.fixture
def curves_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(tmp_path / "published"))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "cache"))
    monkeypatch.setitem(published_rows.RULES, "curves",
                        f"{__name__}:CURVE_ROWS")
    return tmp_path


CURVE_CONFIGS = [{"length": 30, "scale": 1.0}, {"length": 17, "scale": 2.0}]


def test_export_publishes_the_kept_rows_and_a_stored_only_sweep_reads_them(
        curves_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_cache.set_tier_label("paper")
    try:
        full = sweep("curves", CURVE_CONFIGS, curve_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    assert export("curves", "paper")[:2] == (2, 2)
    manifest = (curves_store / "published" / "curves" / "manifest.json").read_bytes()
    runs = PublishedStore("curves").runs()
    for key, part in full.groupby("run_key", sort=False):
        expected = part.drop(columns="run_key").reset_index(drop=True)
        expected = expected[expected["iteration"].isin(
            {1, 5, 10, int(expected["iteration"].max())})].reset_index(drop=True)
        assert runs[key]["rows"] == len(expected)
        pd.testing.assert_frame_equal(PublishedStore("curves").load(key), expected)
    # Exported again: the same kept rows, nothing rewritten.
    assert export("curves", "paper")[:2] == (2, 0)
    assert (curves_store / "published" / "curves" / "manifest.json").read_bytes() == manifest
    # Another machine, empty cache: the sweep reads the published (kept) rows.
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(curves_store / "elsewhere"))
    with run_cache.stored_only():
        again = sweep("curves", CURVE_CONFIGS, curve_runner, workers=1, progress=False)
    assert sorted(again["iteration"].unique()) == [1, 5, 10, 17, 30]


def test_an_export_whose_rule_would_drop_a_read_step_writes_nothing(
        curves_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_cache.set_tier_label("paper")
    try:
        sweep("curves", CURVE_CONFIGS, curve_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    monkeypatch.setattr(f"{__name__}.CURVE_ROWS", replace(CURVE_ROWS, reads=lambda last: {7}))
    with pytest.raises(KeptRowsError, match="iteration 7"):
        export("curves", "paper")
    assert not (curves_store / "published" / "curves" / "manifest.json").exists()


# The PPSGD claims read from thinned runs ----------------------------------------------------

def _thinned(runs: pd.DataFrame, tier: str) -> pd.DataFrame:
    """Every run of ``runs`` thinned as the published store keeps it (configs from the
    cache's provenance, as an export reads them)."""
    store = ResultStore(experiment.SYNTHETIC_EXPERIMENT)
    parts = [kept_rows(experiment.SYNTHETIC_EXPERIMENT, part.reset_index(drop=True),
                       store.provenance(str(key))["config"], tier)
             for key, part in runs.groupby("run_key", sort=False)]
    return pd.concat(parts, ignore_index=True)


def _claim_dicts(found: list[claims.Claim]) -> list[dict]:
    return [dataclasses.asdict(claim) for claim in found]


def test_the_ppsgd_claims_read_from_thinned_runs_are_those_of_the_full_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The smoke grid at the paper's 300 iterations (small problem, seconds), standing
    # for the smoke tier's settings sweep too.
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(tmp_path / "published"))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "cache"))
    smoke = experiment.tier("smoke")
    setup = replace(smoke, synthetic=replace(smoke.synthetic, iterations=300))
    monkeypatch.setattr(readouts, "settings_setup",
                        lambda scale: setup if scale == "smoke" else experiment.tier(scale))
    readouts._walked_panels.cache_clear()
    try:
        runs_1a = experiment.run(setup, 0, figure="1a", workers=1, progress=False)
        settings = experiment.run_settings(setup, 0, workers=1, progress=False)
        thin_1a, thin_settings = _thinned(runs_1a, "smoke"), _thinned(settings, "smoke")
    finally:
        readouts._walked_panels.cache_clear()
    assert len(thin_1a) < len(runs_1a) / 3 and len(thin_settings) < len(settings)
    # Each kept row is the full run's row.
    merged = thin_1a.merge(runs_1a, on=["run_key", "iteration"], suffixes=("", "_full"))
    assert len(merged) == len(thin_1a)
    np.testing.assert_array_equal(merged["excess_risk"], merged["excess_risk_full"])
    full, thin = readouts.best_over_steps(runs_1a), readouts.best_over_steps(thin_1a)
    # Every point of a curve drawn from the kept rows is the full curve's point.
    points = thin.merge(full, on=readouts.CURVE_KEYS, suffixes=("", "_full"))
    assert len(points) == len(thin) < len(full)
    np.testing.assert_array_equal(points["excess_risk"], points["excess_risk_full"])
    for setting, part in thin_settings.groupby(claims.SETTING_KEYS):
        whole = settings.set_index(claims.SETTING_KEYS).loc[setting].reset_index()
        points = readouts.best_over_steps(part).merge(readouts.best_over_steps(whole),
                                                    on=readouts.CURVE_KEYS, suffixes=("", "_f"))
        np.testing.assert_array_equal(points["excess_risk"], points["excess_risk_f"])
    assert _claim_dicts(claims.figure1a_claims(thin, "smoke")) == _claim_dicts(
        claims.figure1a_claims(full, "smoke"))
    pd.testing.assert_frame_equal(readouts.final(thin).reset_index(drop=True),
                                  readouts.final(full).reset_index(drop=True))
    assert (readouts.loose_clip_note(thin, setup.synthetic, 0)
            == readouts.loose_clip_note(full, setup.synthetic, 0))
    pd.testing.assert_frame_equal(claims.setting_verdicts(thin_settings),
                                  claims.setting_verdicts(settings))
