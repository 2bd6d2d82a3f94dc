"""The published store: exported runs are used instead of computed when key and code
match, and only then; stale, damaged or foreign stores are never used silently."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_sweeps import calls, square_runner

from fedlib.runs import cache as run_cache
from fedlib.runs import keys as run_keys
from fedlib.runs import published
from fedlib.runs.cache import MissingRunsError
from fedlib.runs.environment import environment_description
from fedlib.runs.published import PublishedStore, PublishedStoreError, export, status_table
from fedlib.sweeps import sweep

CONFIGS = [{"x": x} for x in range(4)]


@pytest.fixture
def store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "published"
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(root))
    monkeypatch.setenv("SWEEP_TEST_LOG", str(tmp_path / "calls.log"))
    return root


def _fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / name))


def _computed(tier: str = "paper") -> pd.DataFrame:
    run_cache.set_tier_label(tier)
    try:
        return sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")


def test_published_runs_replace_computing_and_say_where_they_come_from(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _computed()
    assert export("toy", "paper")[:3] == (4, 4, 0)
    assert export("toy", "paper")[:3] == (4, 0, 0)  # again: replaced, nothing new
    assert export("toy", "quick")[:3] == (0, 0, 0)  # none of that tier
    log = Path(str(tmp_path / "calls.log"))
    computed = len(calls(log))
    _fresh_cache(tmp_path, monkeypatch, "elsewhere")  # another machine: empty cache
    again = sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    assert len(calls(log)) == computed  # nothing computed
    pd.testing.assert_frame_equal(again, first)
    entry = PublishedStore("toy").runs()[first["run_key"].iloc[0]]
    assert entry["tier"] == "paper" and entry["config"] == {"x": 0}
    assert entry["module"] == "test_sweeps" and entry["runner"] == "square_runner"
    assert entry["rows"] == 1 and entry["wall_seconds"] >= 0 and entry["cpu_seconds"] >= 0
    assert entry["group"] == [entry_key for entry_key in [first["run_key"].iloc[0]]]
    assert "logical cores" in entry["machine"] and entry["finished"][:4].isdigit()
    assert "extensions" in entry["machine"] and "torch kernels" in entry["machine"]
    assert len(entry["commit"]) >= 7 and entry["code_fingerprint"]
    assert entry["environment"] == environment_description()
    status = status_table()
    assert status["environments"].tolist() == [environment_description()]
    assert status[["experiment", "tier", "runs", "current", "stale"]].values.tolist() == [
        ["toy", "paper", 4, 4, 0]]


def test_exporting_again_keeps_when_and_from_which_commit_a_run_was_published(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _computed()
    monkeypatch.setattr(published, "commit_description", lambda: "a" * 40)
    export("toy", "paper")
    manifest = (store_root / "toy" / "manifest.json").read_bytes()
    monkeypatch.setattr(published, "commit_description", lambda: "b" * 40)
    assert export("toy", "paper")[:3] == (4, 0, 0)
    assert (store_root / "toy" / "manifest.json").read_bytes() == manifest
    assert {e["commit"] for e in PublishedStore("toy").runs().values()} == {"a" * 40}


def test_a_code_change_makes_published_runs_stale_and_they_are_computed(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _computed()
    export("toy", "paper")
    _fresh_cache(tmp_path, monkeypatch, "elsewhere")
    log = Path(str(tmp_path / "calls.log"))
    before = len(calls(log))
    monkeypatch.setattr(run_keys, "code_fingerprint", lambda module=None: "edited library")
    sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    assert len(calls(log)) == before + 4
    status = status_table().iloc[0]
    assert (status["current"], status["stale"]) == (0, 4)
    # Stale runs of the cache are not exported either.
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "fedlib-cache-old"))
    assert export("toy", "paper")[:3] == (0, 0, 0)


def test_prune_removes_the_stale_runs_and_keeps_the_current_ones(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _computed()
    export("toy", "paper")
    assert PublishedStore("toy").prune() == 0
    monkeypatch.setattr(run_keys, "code_fingerprint", lambda module=None: "edited library")
    _fresh_cache(tmp_path, monkeypatch, "after-the-edit")
    run_cache.set_tier_label("paper")
    try:
        second = sweep("toy", CONFIGS[:2], square_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    export("toy", "paper")
    store = PublishedStore("toy")
    assert len(store.runs()) == 6
    assert store.prune() == 4
    assert sorted(store.runs()) == sorted(second["run_key"])
    assert not set(first["run_key"]) & set(pq.read_table(store.table_path("paper"))
                                             .column("run_key").to_pylist())
    for key in second["run_key"]:
        pd.testing.assert_frame_equal(store.load(key),
                                      second[second["run_key"] == key]
                                      .drop(columns="run_key").reset_index(drop=True))
    status = status_table().iloc[0]
    assert (status["runs"], status["current"], status["stale"]) == (2, 2, 0)


def test_stale_status_names_the_files_that_changed(store_root: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _computed()
    export("toy", "paper")
    manifest_path = store_root / "toy" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    files = manifest["modules"]["test_sweeps"]["files"]
    files["nn/dpsgd.py"] = "0" * 16  # as if the engine had been edited since
    manifest_path.write_text(json.dumps(manifest))
    monkeypatch.setattr(run_keys, "code_fingerprint", lambda module=None: "edited library")
    published._stale_files.cache_clear()
    assert status_table().iloc[0]["changed since"] == "nn/dpsgd.py"


def test_a_damaged_published_table_is_not_used(store_root: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _computed()
    export("toy", "paper")
    path = store_root / "toy" / "paper.parquet"
    table = pq.read_table(path).to_pandas()
    table.loc[0, "y"] = 1234  # an edited value
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path)
    _fresh_cache(tmp_path, monkeypatch, "elsewhere")
    log = Path(str(tmp_path / "calls.log"))
    before = len(calls(log))
    with pytest.warns(RuntimeWarning, match="does not match its digest"):
        runs = sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    assert len(calls(log)) == before + 1
    assert sorted(runs["y"]) == [0, 1, 4, 9]


def test_without_computing_missing_runs_are_refused(store_root: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEDLIB_COMPUTE", "0")
    with pytest.raises(MissingRunsError, match="^4 of 4 runs of toy are neither cached nor "
                                               "published. Computing is off"):
        sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    monkeypatch.setenv("FEDLIB_COMPUTE", "1")
    _computed()
    export("toy", "paper")
    _fresh_cache(tmp_path, monkeypatch, "elsewhere")
    monkeypatch.setenv("FEDLIB_COMPUTE", "0")
    assert len(sweep("toy", CONFIGS, square_runner, workers=1, progress=False)) == 4
    monkeypatch.setenv("FEDLIB_COMPUTE", "sometimes")
    with pytest.raises(ValueError, match="FEDLIB_COMPUTE='sometimes' is neither on nor off"):
        sweep("toy", CONFIGS + [{"x": 9}], square_runner, workers=1, progress=False)


def test_foreign_manifests_and_mismatched_runs_are_refused(store_root: Path) -> None:
    folder = store_root / "toy"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"layout": "other/9", "runs": {}}))
    with pytest.raises(PublishedStoreError, match="'other/9' is not a layout of the published "
                       "store.*git checkout -- "):
        PublishedStore("toy").manifest()
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(PublishedStoreError, match="restore it from git"):
        PublishedStore("toy").lookup(["k"])
    (folder / "manifest.json").unlink()
    table = pd.DataFrame({"x": [1]})
    provenance = {"module": "test_sweeps", "config": {"x": 2}}
    with pytest.raises(ValueError, match="other code or config"):
        PublishedStore("toy").add("paper", [("not-its-key", table, provenance)])
    with pytest.raises(ValueError, match="not a run tier"):
        PublishedStore("toy").add("huge", [])


NOTEBOOK = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A toy chapter
#
# Its figure is {numref}`fig-toy`; fig-toy-other is not a label.
#
# ```{figure} toy.png
# :name: fig-toy
# ```

# %% tags=["parameters"]
scale = "smoke"  # tier
claims_dir = ""  # where the claims go

# %%
import json
from pathlib import Path

from fedlib.sweeps import sweep
from test_sweeps import square_runner

runs = sweep("toy", [{"x": x} for x in range(3)], square_runner, workers=1, progress=False)
folder = Path(claims_dir)
folder.mkdir(parents=True, exist_ok=True)
(folder / "toy.json").write_text(json.dumps(sorted(runs["y"].tolist())))
'''


@pytest.mark.slow
def test_rendering_from_stored_runs_marks_a_chapter_whose_runs_are_missing(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    source = tmp_path / "toy.py"
    source.write_text(NOTEBOOK)
    claims = tmp_path / "claims"
    tests = Path(__file__).parent
    monkeypatch.setenv("PYTHONPATH", str(tests))

    def render() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "fedlib.render.execute", str(source),
             str(tmp_path / "out.ipynb"), "--published-only", "-p", "scale", "paper", "-p",
             "claims_dir", str(claims)],
            capture_output=True, text=True, cwd=tmp_path)

    result = render()
    assert result.returncode == 0, result.stderr
    assert (claims / "toy.missing").read_text() == (
        "3 of 3 runs of toy are neither cached nor published\n")
    assert not (claims / "toy.json").exists() and not (tmp_path / "out.ipynb").exists()
    note = (tmp_path / "out.md").read_text()  # the book's page in its place says why
    assert note.startswith("# A toy chapter: the paper tier\n")
    assert "3 of 3 runs of toy are neither cached nor published" in note
    assert not Path(str(tmp_path / "calls.log")).exists()  # nothing was computed
    run_cache.set_tier_label("paper")
    try:
        sweep("toy", [{"x": x} for x in range(3)], square_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")
    export("toy", "paper")
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "empty-cache"))
    result = render()
    assert result.returncode == 0, result.stderr
    assert json.loads((claims / "toy.json").read_text()) == [0, 1, 4]
    assert not (claims / "toy.missing").exists() and not (tmp_path / "out.md").exists()
    import nbformat

    page = nbformat.read(str(tmp_path / "out.ipynb"), as_version=4)
    heading = page.cells[0].source
    assert heading.startswith("# A toy chapter: the paper tier\n")
    assert "**This page is the paper tier**: the papers' own scale, rendered from stored " \
           "runs" in heading
    assert "{numref}`paper-fig-toy`; fig-toy-other is" in heading
    assert ":name: paper-fig-toy\n" in heading


def test_a_chapter_says_where_the_runs_on_its_page_come_from(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fedlib.render.chapter import provenance_box

    swept = run_cache.record_swept_runs()
    try:
        first = _computed()
        _computed()  # the same runs again are listed once
        assert swept == {"toy": list(dict.fromkeys(first["run_key"]))}
        assert "All 4 runs were computed by this build" in provenance_box("quick", swept)
        export("toy", "paper")
        box = provenance_box("paper", swept)
        assert "Tier of this page: <b>paper</b>" in box
        assert "4 of 4 runs come from the published paper tier" in box
    finally:
        run_cache._SWEPT.set(None)


def test_the_manifest_writes_shared_provenance_once_and_one_run_per_line(
        store_root: Path) -> None:
    first = _computed()
    export("toy", "paper")
    text = (store_root / "toy" / "manifest.json").read_text()
    manifest = json.loads(text)
    keys = list(dict.fromkeys(first["run_key"]))
    for key in keys:  # each run is one line of the file
        assert sum(line.lstrip().startswith(f'"{key}": {{') for line in text.splitlines()) == 1
    assert manifest["layout"] == published.PUBLISHED_LAYOUT
    records = manifest["provenance"]
    assert set(records) == {e["from"] for e in manifest["runs"].values()}
    # Per run only its record, its digest and what its config does not share.
    assert all(set(e) <= {"from", "sha256", "config"} for e in manifest["runs"].values())
    assert set(manifest["schemas"]) == {r["columns"] for r in records.values()}
    assert len(manifest["schemas"]) == 1  # the four runs share their columns
    assert set(manifest["groups"]) == {r["group"] for r in records.values()}
    for record in records.values():  # each toy run is a group of its own: a record each
        assert record["machine"] and record["commit"] and record["module"] == "test_sweeps"
    runs = PublishedStore("toy").runs()
    assert sorted(published.config_of(runs[key])["x"] for key in keys) == [0, 1, 2, 3]
    assert all(set(runs[key]["config"]) == {"x"} for key in keys)
    assert sorted(k for e in runs.values() for k in e["group"]) == sorted(keys)
    assert all(key in runs[key]["group"] for key in keys)
    assert runs[keys[0]]["columns"] == [[str(c), str(t)] for c, t in
                                        first.drop(columns="run_key").dtypes.items()]


def test_a_published_config_reads_back_its_non_finite_floats() -> None:
    entry = {"config": {"alpha": "inf", "low": "-inf", "gap": "nan", "name": "authors",
                        "grid": [1.0, "inf"], "nested": {"eps": "inf"}}}
    config = published.config_of(entry)
    assert config["alpha"] == float("inf") and config["low"] == float("-inf")
    assert config["gap"] != config["gap"] and config["name"] == "authors"
    assert config["grid"] == [1.0, float("inf")] and config["nested"] == {"eps": float("inf")}
    assert run_keys.run_key(config) == run_keys.run_key(entry["config"])


def test_seed_siblings_share_tier_code_and_every_field_but_the_seed() -> None:
    def entry(tier: str, module: str, **config: object) -> dict[str, object]:
        return {"tier": tier, "module": module, "config": config}

    runs = {
        "a": entry("paper", "m", lr=0.1, seed=0, grid=[1, "inf"]),
        "b": entry("paper", "m", lr=0.1, seed=1, grid=[1, "inf"]),
        "c": entry("paper", "m", lr=0.1, repeat=2, grid=[1, "inf"]),  # a seed, named so
        "d": entry("paper", "m", lr=0.2, seed=0, grid=[1, "inf"]),    # another setting
        "e": entry("quick", "m", lr=0.1, seed=0, grid=[1, "inf"]),    # another tier
        "f": entry("paper", "n", lr=0.1, seed=3, grid=[1, "inf"]),    # another code
        "g": entry("paper", "m", lr=0.1, seed=4, grid=[1, 2]),        # another nested value
    }
    assert published.seed_siblings(runs, "a") == ["a", "b", "c"]
    assert published.seed_siblings(runs, "d") == ["d"]
    every = published.seed_sibling_sets(runs)
    assert every == {k: published.seed_siblings(runs, k) for k in runs}
    assert every["c"] == ["a", "b", "c"] and every["e"] == ["e"] and every["g"] == ["g"]


def test_the_tier_page_prefixes_section_labels_and_references_to_them(tmp_path: Path) -> None:
    import nbformat

    from fedlib.render.execute import label_tier_page

    book = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A toy chapter\n\n(toy-grid)=\n## The grid"),
        nbformat.v4.new_markdown_cell("See {ref}`its grid <toy-grid>` and {ref}`toy-grid`; "
                                      "toy-grid-other and the {doc}`scorecard "
                                      "</generated/scorecard>` are not labels of it."),
    ])
    path = tmp_path / "toy.ipynb"
    nbformat.write(book, str(path))
    label_tier_page(path, "paper")
    first, second = (c.source for c in nbformat.read(str(path), as_version=4).cells)
    assert "\n(paper-toy-grid)=\n## The grid" in first
    assert second == ("See {ref}`its grid <paper-toy-grid>` and {ref}`paper-toy-grid`; "
                      "toy-grid-other and the {doc}`scorecard </generated/scorecard>` are "
                      "not labels of it.")
