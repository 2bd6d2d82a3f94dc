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


def _published_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, experiment: str,
                     configs: list[dict], runner) -> Path:
    """A published store holding ``experiment``'s paper-tier runs of ``configs``."""
    root = tmp_path / "published"
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(root))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "cache"))
    run_cache.set_tier_label("paper")
    try:
        sweep(experiment, configs, runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    monkeypatch.setattr(published, "commit_description", lambda: "c" * 40)
    export(experiment, "paper")
    return root


@pytest.fixture
def store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SWEEP_TEST_LOG", str(tmp_path / "calls.log"))
    return _published_store(tmp_path, monkeypatch, "toy", CONFIGS, square_runner)


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
        assert "checked by computing 1 of its 1 strata again" in carried["confirmed"]
        assert "3 groups in all" in carried["confirmed"]
        assert "compared exactly" in carried["confirmed"]
    # A second edit, confirmed in turn: the note keeps the first confirmation.
    monkeypatch.setattr(run_keys, "code_fingerprint", lambda module=None: "edited again")
    monkeypatch.setattr(published, "code_fingerprint", lambda module=None: "edited again")
    monkeypatch.setattr(published_confirm, "code_fingerprint", lambda m=None: "edited again")
    assert confirm("toy", log=lambda line: None).confirmed == 4
    after = PublishedStore("toy").runs()
    assert all(e["confirmed"].count("strata again") == 2
               and e["confirmed"].index("edited libra") < e["confirmed"].index("edited again")
               for e in after.values())
    line = published.provenance_line("toy", list(after))
    assert ("; 4 of them carried over a later edit of the code that changes no result, "
            "checked by computing 1 of its 1 strata again)") in line
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
    with pytest.raises(ConfirmationError, match=r"run [0-9a-f]{20} of toy \(paper tier.*"
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
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=0: "a GPU")
    done = confirm("toy", groups=4, log=lambda line: None)
    assert (done.stale, done.confirmed, len(done.recomputed)) == (2, 2, 2)
    assert status_table().iloc[0]["stale"] == 0


# Strata: every code path the stale runs take is computed again ----------------------------

EDIT: dict[str, float] = {}
"""Per method, the factor an edit of the code multiplies that method's results by (a test
sets it; empty: the code as published)."""


def method_runner(configs: list[dict]) -> list[pd.DataFrame]:
    """Toy runner whose method chooses a code path: ``y`` is ``(x + 1) ** 2`` times what
    :data:`EDIT` says of the method."""
    return [pd.DataFrame({"x": [c["x"]], "y": [float((c["x"] + 1) ** 2)
                                                * EDIT.get(c["method"], 1.0)]})
            for c in configs]


METHOD_CONFIGS = [{"x": x, "method": "common"} for x in range(12)] + [
    {"x": 0, "method": "rare"}]
"""Twelve groups take one code path, one group the other."""


@pytest.fixture
def methods_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = _published_store(tmp_path, monkeypatch, "methods", METHOD_CONFIGS, method_runner)
    monkeypatch.setattr(published_confirm, "_gpu_here", lambda: False)
    return root


def test_an_edit_that_changes_one_code_path_is_caught_whatever_the_sample_draws(
        methods_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit that multiplies the results of the one rare method by 1.5: three groups
    drawn at random out of thirteen would most likely all be of the common method; one
    group of each stratum (each method) is computed again, so the rare one is."""
    manifest = (methods_root / "methods" / "manifest.json").read_bytes()
    _edit_the_library(monkeypatch)
    monkeypatch.setitem(EDIT, "rare", 1.5)
    with pytest.raises(ConfirmationError, match=r"of methods \(paper tier, stratum "
                       r"method=\"rare\"\).*alters results"):
        confirm("methods", log=lambda line: None)
    assert (methods_root / "methods" / "manifest.json").read_bytes() == manifest
    assert status_table().iloc[0]["stale"] == 13


def test_a_confirmed_run_records_its_stratum_and_how_many_strata_were_checked(
        methods_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _edit_the_library(monkeypatch)
    lines: list[str] = []
    done = confirm("methods", groups=1, log=lines.append)
    assert (done.stale, done.confirmed, done.strata, done.checked) == (13, 13, 2, 2)
    assert len(done.recomputed) == 2  # one group a stratum, more than --groups asks
    runs = PublishedStore("methods").runs()
    for entry in runs.values():
        stratum = f'its stratum: method="{entry["config"]["method"]}"'
        assert "checked by computing 2 of its 2 strata again" in entry["confirmed"]
        assert stratum in entry["confirmed"]
    assert "checked by computing 2 of their 2 strata again" in published_confirm.summary_line(
        done)
    # What the pages show says as much, and no more.
    line = published.provenance_line("methods", list(runs))
    assert "carried over a later edit of the code that changes no result, checked by " \
           "computing 2 of its 2 strata again" in line
    assert status_table().iloc[0]["confirmed"] == \
        "13, checked by computing 2 of its 2 strata again"


def test_strata_whose_cheapest_group_does_not_fit_stay_stale_and_are_named(
        methods_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = PublishedStore("methods")
    manifest = store.manifest()  # as recorded: the rare method's run took an hour
    for entry in manifest["runs"].values():
        entry["cpu_seconds"] = 3600.0 if entry["config"]["method"] == "rare" else 60.0
    store._write_manifest(manifest)
    _edit_the_library(monkeypatch)
    lines: list[str] = []
    done = confirm("methods", cpu_hours=0.1, log=lines.append)
    assert (done.stale, done.confirmed, done.strata, done.checked) == (13, 12, 2, 1)
    left = [line for line in lines if "left stale" in line]
    assert len(left) == 1 and 'method="rare"' in left[0] and "1 of the 2 strata" in left[0]
    assert "--cpu-hours 1.02 checks them all" in left[0]
    status = status_table().iloc[0]
    assert (status["current"], status["stale"]) == (12, 1)
    assert published_confirm.checked_phrase(
        e["confirmed"] for e in store.runs().values() if "confirmed" in e) == \
        "checked by computing 1 of its 2 strata again"
    assert confirm("methods", cpu_hours=1.1, log=lambda line: None).confirmed == 1
    assert status_table().iloc[0]["stale"] == 0


def test_strata_fields_are_declared_per_experiment_or_the_text_fields_of_few_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    configs = [{"method": m, "seed": str(s), "note": f"run {i}", "lr": 0.1 * i,
                "panel": "one", "device": "cpu"}
               for i, (m, s) in enumerate([("a", 1), ("b", 2), ("a", 3)] * 5)]
    # Text fields of 2 to 12 values; a seed, a number, a label of many values, a field of
    # one value do not choose a code path.
    assert published_confirm.strata_fields("unknown", configs) == ("method",)
    monkeypatch.setitem(published_confirm.STRATA, "declared", ("panel", "model", "lr"))
    assert published_confirm.strata_fields("declared", configs) == ("panel", "lr")
    assert published_confirm.STRATA["frontier"] == ("method", "dataset", "unit")
    assert published_confirm.stratum_label(("\"a\"", "absent"), ("method", "unit")) == \
        'method="a", unit absent'


def test_an_older_confirmation_is_described_as_what_it_was() -> None:
    old = ("2026-11-26: 6 sampled groups computed again with code d71c8901261c (commit "
           "f5f03206ce98) gave these tables exactly")
    new = ("2026-11-30: checked by computing 5 of its 6 strata again (its stratum: "
           'method="a"; 20 groups in all) with code 0123 (commit 4567), compared exactly')
    assert published_confirm.checked_phrase([old]) == (
        "checked by computing 6 groups drawn at random again (not by strata)")
    assert published_confirm.checked_phrase([f"{old}; {new}", new]) == \
        "checked by computing 5 of its 6 strata again"
    assert published_confirm.checked_phrase([old, new, new]) == (
        "checked by computing 5 of its 6 strata again (2 runs); 6 groups drawn at random "
        "again (not by strata) (1 runs)")


# Another machine: a processor difference is told from a change of result -----------------

ANOTHER_MACHINE = "Linux x86_64, another processor (cpu family 6), extensions avx2, 8 cores"


def _as_computed_elsewhere(store: PublishedStore, relative: float) -> None:
    """Make the published runs read as computed on another machine whose float sums round
    otherwise: each ``y`` off by ``relative``, digests to match, the machine recorded."""
    manifest = store.manifest()
    frame = pd.read_parquet(store.table_path("paper"))
    frame["y"] = frame["y"] * (1 + relative)
    published._write_table(store.table_path("paper"), frame)
    for key, entry in manifest["runs"].items():
        rows = frame[frame["run_key"] == key].drop(columns="run_key")
        entry["sha256"] = run_keys.content_digest(rows.reset_index(drop=True))
        entry["machine"] = ANOTHER_MACHINE
    store._write_manifest(manifest)


def test_runs_of_another_machine_are_compared_within_its_tolerance(
        methods_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A comment-only edit of runs recorded on another processor: their tables differ
    from this machine's in the last bits, which the tolerance for another machine allows
    (and says so); a change of result is still refused."""
    store = PublishedStore("methods")
    _as_computed_elsewhere(store, 1e-6)
    _edit_the_library(monkeypatch)
    monkeypatch.setitem(EDIT, "rare", 1.5)
    with pytest.raises(ConfirmationError, match=r"method=\"rare\".*compared within the "
                       r"tolerance for another machine.*alters results"):
        confirm("methods", log=lambda line: None)
    monkeypatch.delitem(EDIT, "rare")
    lines: list[str] = []
    done = confirm("methods", log=lines.append)
    assert done.confirmed == 13
    assert done.compared == (published_confirm.ANOTHER_MACHINE,)
    assert any("agrees, compared within the tolerance for another machine" in line
               for line in lines)
    assert all("compared within the tolerance for another machine" in e["confirmed"]
               for e in store.runs().values())


def test_runs_of_this_machine_are_compared_exactly_unless_a_tolerance_is_given(
        methods_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = PublishedStore("methods")
    _as_computed_elsewhere(store, 1e-6)
    here = published_confirm.same_machine  # the recorded machine is this one after all
    monkeypatch.setattr(published_confirm, "same_machine", lambda recorded: True)
    _edit_the_library(monkeypatch)
    with pytest.raises(ConfirmationError, match="digest differs.*compared exactly"):
        confirm("methods", log=lambda line: None)
    done = confirm("methods", rtol=1e-5, log=lambda line: None)
    assert done.confirmed == 13 and done.compared == ("to a relative 1e-05 in float values "
                                                      "(recorded on this kind of machine)",)
    assert here(ANOTHER_MACHINE) is False
