"""Carrying published runs over an edit that leaves their results as they were: a sample
is computed again, and the runs are entered under their new keys only when every
recomputed table is identical to the published one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import test_sweeps
from test_sweeps import calls, square_runner

from fedlib.runs import cache as run_cache
from fedlib.runs import confirm as published_confirm
from fedlib.runs import keys as run_keys
from fedlib.runs import published
from fedlib.runs.confirm import ConfirmationError, confirm
from fedlib.runs.published import PublishedStore, export, status_table
from fedlib.sweeps import sweep

CONFIGS = [{"x": x} for x in range(4)]


@pytest.fixture
def store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "published"
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(root))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SWEEP_TEST_LOG", str(tmp_path / "calls.log"))
    run_cache.set_tier_label("paper")
    try:
        sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    monkeypatch.setattr(published, "commit_description", lambda: "c" * 40)
    export("toy", "paper")
    return root


def _edit_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an edit of the runner's code does to the keys (the code's fingerprint)."""
    def edited(module: str | None = None) -> str:
        return "edited library"

    for where in (run_keys, published, published_confirm):
        monkeypatch.setattr(where, "code_fingerprint", edited)


def test_runs_whose_recomputation_is_identical_are_entered_under_their_new_keys(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = PublishedStore("toy").runs()
    log = tmp_path / "calls.log"
    computed = len(calls(log))
    _edit_the_library(monkeypatch)
    assert status_table().iloc[0]["stale"] == 4
    done = confirm("toy", log=lambda line: None)
    assert (done.stale, done.confirmed, len(done.recomputed)) == (4, 4, 3)
    assert len(calls(log)) == computed + 3  # three of the four groups, one run each
    status = status_table().iloc[0]
    assert (status["current"], status["stale"], status["damaged"]) == (4, 0, 0)
    after = PublishedStore("toy").runs()
    assert set(after).isdisjoint(before)
    for entry in before.values():
        new = run_keys.run_key(entry["config"], entry["module"])
        carried = after[new]
        assert carried["sha256"] == entry["sha256"] and carried["commit"] == "c" * 40
        assert carried["finished"] == entry["finished"] and carried["group"] == [new]
        assert carried["code_fingerprint"] == "edited library"
        assert "3 sampled groups computed again" in carried["confirmed"]
    # A second edit, confirmed in turn: the note keeps the first confirmation.
    monkeypatch.setattr(run_keys, "code_fingerprint", lambda module=None: "edited again")
    monkeypatch.setattr(published, "code_fingerprint", lambda module=None: "edited again")
    monkeypatch.setattr(published_confirm, "code_fingerprint", lambda m=None: "edited again")
    assert confirm("toy", log=lambda line: None).confirmed == 4
    after = PublishedStore("toy").runs()
    assert all(e["confirmed"].count("sampled groups computed again") == 2
               and e["confirmed"].index("edited libra") < e["confirmed"].index("edited again")
               for e in after.values())
    line = published.provenance_line("toy", list(after))
    assert "; 4 of them carried over a later edit of the code that changes no result" in line
    # Read by a sweep on a machine with an empty cache: nothing is computed.
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "elsewhere"))
    runs = sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    assert len(calls(log)) == computed + 6  # the two confirmations' samples only
    assert runs["y"].tolist() == [0, 1, 4, 9]


def test_a_recomputation_that_differs_writes_nothing_and_names_the_run(
        store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = (store_root / "toy" / "manifest.json").read_bytes()
    table = (store_root / "toy" / "paper.parquet").read_bytes()
    _edit_the_library(monkeypatch)

    def cube_runner(configs: list[dict]) -> list[pd.DataFrame]:
        return [pd.DataFrame({"x": [c["x"]], "y": [c["x"] ** 3]}) for c in configs]

    monkeypatch.setattr(test_sweeps, "square_runner", cube_runner)
    # The group of x = 0 or 1 gives the same table (0 and 1 cube to themselves): four
    # groups make sure one of x = 2, 3 is drawn.
    with pytest.raises(ConfirmationError, match=r"run [0-9a-f]{20} of toy \(paper tier\).*"
                       r"alters results"):
        confirm("toy", groups=4, log=lambda line: None)
    assert (store_root / "toy" / "manifest.json").read_bytes() == manifest
    assert (store_root / "toy" / "paper.parquet").read_bytes() == table
    assert status_table().iloc[0]["stale"] == 4


def test_the_sample_keeps_to_its_cost_and_takes_the_cheapest_group_when_none_fits() -> None:
    groups = [["a"], ["b"], ["c", "d"]]
    cost = {"a": 10.0, "b": 30.0, "c": 5.0, "d": 5.0}

    def of(group: list[str]) -> float:
        return sum(cost[k] for k in group)

    for seed in ("one", "two", "three"):
        chosen = published_confirm._sample(groups, of, seed, 3, 20.0)
        assert sum(map(of, chosen)) <= 20.0 and chosen
        assert published_confirm._sample(groups, of, seed, 1, 20.0)[0] in groups
    assert published_confirm._sample(groups, of, "one", 3, 1.0) == [["a"]]
    assert sorted(published_confirm._sample(groups, of, "one", 3, 1e9)) == sorted(groups)


def test_current_runs_and_runs_already_computed_again_are_left_alone(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    done = confirm("toy", log=lambda line: None)
    assert (done.stale, done.confirmed, done.recomputed) == (0, 0, [])
    _edit_the_library(monkeypatch)
    run_cache.set_tier_label("paper")
    try:  # x = 0 computed again with the edited code and published beside the old run
        sweep("toy", CONFIGS[:1], square_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    export("toy", "paper")
    done = confirm("toy", groups=4, log=lambda line: None)
    assert (done.stale, done.confirmed) == (4, 3)
    assert published.PublishedStore("toy").prune() == 1
    assert status_table().iloc[0][["runs", "current"]].tolist() == [4, 4]


def test_bad_sample_sizes_are_refused(store_root: Path) -> None:
    with pytest.raises(ValueError, match="groups must be at least 1"):
        confirm("toy", groups=0)
    with pytest.raises(ValueError, match="cpu_hours must be positive"):
        confirm("toy", cpu_hours=float("nan"))
    with pytest.raises(ValueError, match=r"rtol must lie in \[0, 0.01\)"):
        confirm("toy", rtol=0.1)
    with pytest.raises(published.PublishedStoreError, match="nothing is published"):
        confirm("absent")


def test_a_tolerance_lets_float_values_differ_by_rounding_and_nothing_else() -> None:
    published_rows = pd.DataFrame({"round": [0, 1], "loss": [2.3256054, 0.5],
                                   "name": ["a", "b"]})
    rounded = published_rows.assign(loss=[2.3256053, 0.5])
    assert published_confirm.difference(published_rows, published_rows.copy(), 0.0) is None
    assert "digest differs" in published_confirm.difference(published_rows, rounded, 0.0)
    assert published_confirm.difference(published_rows, rounded, 1e-6) is None
    assert "loss = 2.3 in row 0" in published_confirm.difference(
        published_rows, rounded.assign(loss=[2.3, 0.5]), 1e-6)
    assert "other values of round" in published_confirm.difference(
        published_rows, rounded.assign(round=[0, 2]), 1e-6)
    assert "name" in published_confirm.difference(
        published_rows, rounded.assign(name=["a", "c"]), 1e-6)
    assert "1 rows" in published_confirm.difference(published_rows, rounded.iloc[:1], 1e-6)
    assert "columns" in published_confirm.difference(
        published_rows, rounded.drop(columns="name"), 1e-6)


def test_a_tolerance_reads_text_columns_of_numbers_as_numbers() -> None:
    """A spectrum written with six significant digits ("44.5432,42.7465") can round its
    last digit the other way when a float differs in its eighth: equal under a tolerance,
    and a real change of the spectrum, a missing value or a word is still a difference."""
    published_rows = pd.DataFrame({"round": [1, 2], "spectrum": ["44.5432,42.7465", ""]})
    last_digit = published_rows.assign(spectrum=["44.5433,42.7465", ""])
    assert "digest differs" in published_confirm.difference(published_rows, last_digit, 0.0)
    assert published_confirm.difference(published_rows, last_digit, 1e-7) is None
    moved = published_confirm.difference(
        published_rows, published_rows.assign(spectrum=["44.6,42.7465", ""]), 1e-7)
    assert "spectrum = '44.6,42.7465' in row 0" in moved and "1e-05" in moved
    shorter = published_rows.assign(spectrum=["44.5432", ""])
    assert "in row 0" in published_confirm.difference(published_rows, shorter, 1e-7)
    words = published_rows.assign(spectrum=["44.5432,42.7465", "none"])
    assert "other values of spectrum" in published_confirm.difference(
        published_rows, words, 1e-7)


def test_an_interrupted_carry_loses_nothing_and_the_next_one_completes(
        store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = PublishedStore("toy").runs()
    _edit_the_library(monkeypatch)
    write = PublishedStore._write_manifest

    def killed(self: PublishedStore, manifest: dict) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(PublishedStore, "_write_manifest", killed)
    with pytest.raises(KeyboardInterrupt):
        confirm("toy", log=lambda line: None)
    status = status_table().iloc[0]
    assert (status["runs"], status["stale"], status["damaged"]) == (4, 4, 0)
    assert PublishedStore("toy").runs() == before
    monkeypatch.setattr(PublishedStore, "_write_manifest", write)
    assert confirm("toy", log=lambda line: None).confirmed == 4
    status = status_table().iloc[0]
    assert (status["runs"], status["current"], status["damaged"]) == (4, 4, 0)
    assert len(pd.read_parquet(store_root / "toy" / "paper.parquet")) == 4


def test_runs_computed_on_a_gpu_are_confirmed_only_where_torch_sees_one(
        store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs made on a GPU form classes of their own: without a GPU they are left stale,
    and said so, while the others are carried over; with one they are checked in turn."""
    import torch

    run_cache.set_tier_label("paper")
    try:
        sweep("toy", [{"x": x, "device": "cuda"} for x in (10, 11)], square_runner,
              workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    export("toy", "paper")
    _edit_the_library(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    lines: list[str] = []
    before = PublishedStore("toy").runs()
    done = confirm("toy", groups=4, log=lines.append)
    assert (done.stale, done.confirmed, len(done.recomputed)) == (6, 4, 4)
    assert any("2 stale paper-tier runs left stale: they were computed on a GPU" in line
               for line in lines)
    assert all("device" not in before[key]["config"] for group in done.recomputed
               for key in group)
    status = status_table().iloc[0]
    assert (status["current"], status["stale"]) == (4, 2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    done = confirm("toy", groups=4, log=lambda line: None)
    assert (done.stale, done.confirmed, len(done.recomputed)) == (2, 2, 2)
    assert status_table().iloc[0]["stale"] == 0
