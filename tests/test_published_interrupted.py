"""Every write of the published store killed at each of its file writes: the store never
holds a run whose rows do not match it, ``status`` reports the rows no manifest entry
names until they are gone, and the next command of any kind that writes the experiment
(export, prune, compact, confirm) removes them; run again, the interrupted command ends
where it would have ended uninterrupted."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from test_sweeps import square_runner

from fedlib import paths
from fedlib.runs import cache as run_cache
from fedlib.runs import confirm as published_confirm
from fedlib.runs import keys as run_keys
from fedlib.runs import published
from fedlib.runs.confirm import confirm
from fedlib.runs.published import PublishedStore, export, leftover_lines
from fedlib.sweeps import sweep

EXPERIMENT = "toy"


def toy_runner(configs: list[dict]) -> list[pd.DataFrame]:
    return [pd.DataFrame({"x": [c["x"]], "y": [float(c["x"]) ** 2 + c.get("shift", 0.0)]})
            for c in configs]


class Killed(BaseException):
    """The process dies here (no handler of the store catches it)."""


def _edit_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an edit of the code of this module's runner does to the keys of its runs (the
    runs of another runner stay current)."""
    fingerprint = run_keys.code_fingerprint

    def edited(module: str | None = None) -> str:
        return "edited" if module == __name__ else fingerprint(module)

    for where in (run_keys, published, published_confirm):
        monkeypatch.setattr(where, "code_fingerprint", edited)


def _computed(configs: list[dict], tier: str) -> None:
    run_cache.set_tier_label(tier)
    try:
        sweep(EXPERIMENT, configs, toy_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")


@contextmanager
def _killed_at(monkeypatch: pytest.MonkeyPatch, write: int | None) -> Iterator[list[Path]]:
    """Count the store's file writes (each an atomic replacement or a removal) in the
    yielded list; with ``write``, die before that one (0: before the first) completes."""
    done: list[Path] = []
    atomic, remove = paths.atomic_path, getattr(published, "_remove_file", None)

    @contextmanager
    def counted(path: str | Path) -> Iterator[Path]:
        with atomic(path) as tmp:
            yield tmp
            if len(done) == write:
                raise Killed(f"killed before write {write} ({path}) completes")
        done.append(Path(path))

    def removed(path: Path) -> None:
        if len(done) == write:
            raise Killed(f"killed before write {write} (removing {path})")
        remove(path)
        done.append(path)

    with monkeypatch.context() as patch:
        patch.setattr(paths, "atomic_path", counted)
        patch.setattr(published, "_remove_file", removed, raising=False)
        yield done


# The commands, each from the store it starts from -----------------------------------------

def _export_new_and_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """An export of two new runs, and of one published run whose cached rows are no longer
    those published (computed again elsewhere), which it replaces."""
    export(EXPERIMENT, "paper")


def _prune(monkeypatch: pytest.MonkeyPatch) -> None:
    """After an edit: remove the stale runs of both tiers (the quick tier's table holds
    nothing afterwards, the paper tier's two runs of another runner)."""
    _edit_the_library(monkeypatch)
    PublishedStore(EXPERIMENT).prune()


def _compact(monkeypatch: pytest.MonkeyPatch) -> None:
    PublishedStore(EXPERIMENT).compact()


def _confirm(monkeypatch: pytest.MonkeyPatch) -> None:
    _edit_the_library(monkeypatch)
    confirm(EXPERIMENT, groups=2, log=lambda line: None)


def _prepare_export(root: Path, cache: Path) -> None:
    _computed([{"x": x} for x in range(4)], "paper")
    _computed([{"x": x} for x in range(10, 12)], "quick")
    export(EXPERIMENT, "paper")
    export(EXPERIMENT, "quick")
    _computed([{"x": x} for x in range(4, 6)], "paper")
    # The cached rows of x = 0 are another machine's: the export replaces the published ones.
    store = run_cache.ResultStore(EXPERIMENT)
    key = run_keys.run_key({"x": 0}, __name__)
    provenance = store.provenance(key)
    store.save(key, store.load(key).assign(y=1e-9), provenance)


def _prepare_others(root: Path, cache: Path) -> None:
    """Runs of two tiers; two runs of the paper tier come from another runner, which the
    edit does not touch (they stay, so the paper tier's table is written again)."""
    _computed([{"x": x} for x in range(4)], "paper")
    _computed([{"x": x} for x in range(10, 12)], "quick")
    run_cache.set_tier_label("paper")
    try:
        sweep(EXPERIMENT, [{"x": x} for x in (20, 21)], square_runner, workers=1,
              progress=False)
    finally:
        run_cache.set_tier_label("")
    export(EXPERIMENT, "paper")
    export(EXPERIMENT, "quick")


def _prepare_compact(root: Path, cache: Path) -> None:
    """A manifest of the older layout (every run written out), which compact rewrites."""
    _prepare_others(root, cache)
    path = root / EXPERIMENT / "manifest.json"
    manifest = published.check_manifest(json.loads(path.read_text()), path)
    path.write_text(json.dumps({**manifest, "layout": "fedlib-published/2"}))


COMMANDS: dict[str, tuple[Callable[[Path, Path], None],
                          Callable[[pytest.MonkeyPatch], None]]] = {
    "export": (_prepare_export, _export_new_and_replaced),
    "prune": (_prepare_others, _prune),
    "compact": (_prepare_compact, _compact),
    "confirm": (_prepare_others, _confirm),
}

NEXT: list[Callable[[pytest.MonkeyPatch], object]] = [
    lambda patch: PublishedStore(EXPERIMENT).compact(),
    lambda patch: PublishedStore(EXPERIMENT).prune(),
    lambda patch: export(EXPERIMENT, "quick"),
    lambda patch: confirm(EXPERIMENT, log=lambda line: None),
]
"""The command that runs next (any of them): each writes under the experiment's lock."""


# What the store holds -------------------------------------------------------------------

def _rows(root: Path) -> dict[str, list[str]]:
    """Per tier table on disk, the run key of each row (read without fedlib's reader)."""
    folder = root / EXPERIMENT
    return {path.stem: pq.read_table(path, columns=["run_key"]).column("run_key").to_pylist()
            for path in sorted(folder.glob("*.parquet"))}


def _named(root: Path) -> dict[str, set[str]]:
    """Per tier, the runs the manifest names."""
    path = root / EXPERIMENT / "manifest.json"
    manifest = published.check_manifest(json.loads(path.read_text()), path)
    named: dict[str, set[str]] = {}
    for key, entry in manifest["runs"].items():
        named.setdefault(entry["tier"], set()).add(key)
    return named


def _unnamed(root: Path) -> dict[str, int]:
    """Per tier, how many rows of its table no manifest entry names."""
    named = _named(root)
    counts = {tier: sum(key not in named.get(tier, set()) for key in keys)
              for tier, keys in _rows(root).items()}
    return {tier: count for tier, count in counts.items() if count}


def _state(root: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """What the store holds: the rows of each table (sorted keys), and each run's digest."""
    path = root / EXPERIMENT / "manifest.json"
    manifest = published.check_manifest(json.loads(path.read_text()), path)
    return ({tier: sorted(keys) for tier, keys in _rows(root).items()},
            {key: entry["sha256"] for key, entry in manifest["runs"].items()})


def _damaged(root: Path) -> dict[str, str]:
    """The runs the manifest names whose rows do not match it."""
    return PublishedStore(EXPERIMENT, root).damaged()


def _fresh(template: Path, tmp_path: Path, name: str) -> Path:
    """A copy of the store and cache of ``template`` under ``tmp_path/name``, in use."""
    target = tmp_path / name
    shutil.copytree(template, target)
    return target


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_killed_at_any_write_leaves_a_store_the_next_command_repairs(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prepare, run = COMMANDS[command]
    template = tmp_path / "template"

    def use(base: Path) -> Path:
        monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(base / "published"))
        monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(base / "cache"))
        return base / "published"

    monkeypatch.setattr(published_confirm, "_gpu_here", lambda: False)
    monkeypatch.setenv("SWEEP_TEST_LOG", str(tmp_path / "calls.log"))
    root = use(template)
    prepare(root, template / "cache")
    # Uninterrupted, from a copy: how many writes it makes, and where it ends.
    root = use(_fresh(template, tmp_path, "whole"))
    with monkeypatch.context() as patch, _killed_at(patch, None) as writes:
        run(patch)
        expected = _state(root)
    assert len(writes) >= 1, command
    assert not _unnamed(root) and not leftover_lines(root)
    for write in range(len(writes)):
        root = use(_fresh(template, tmp_path, f"killed-{write}"))
        with monkeypatch.context() as patch:
            with _killed_at(patch, write), pytest.raises(Killed):
                run(patch)
            # Killed: no run the manifest names reads as damaged, and what is left over
            # is reported until it is removed.
            assert not _damaged(root), (command, write)
            unnamed = _unnamed(root)
            lines = [line for line in leftover_lines(root) if "no manifest entry names" in line]
            assert len(lines) == len(unnamed), (command, write, lines, unnamed)
            for tier, count in unnamed.items():
                assert any(f"{tier}.parquet holds {count} row" in line for line in lines)
            NEXT[write % len(NEXT)](patch)
            assert not _unnamed(root), (command, write)
            assert not [line for line in leftover_lines(root) if "manifest entry" in line]
            assert not _damaged(root), (command, write)
        root = use(_fresh(template, tmp_path, f"again-{write}"))
        with monkeypatch.context() as patch:
            with _killed_at(patch, write), pytest.raises(Killed):
                run(patch)
            run(patch)  # the same command again ends where it would have
            assert _state(root) == expected, (command, write)


def test_rows_no_entry_names_are_removed_by_an_export_that_has_nothing_new(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of a prune killed after its manifest write: status names them, and an export
    of runs published already (it writes nothing of its own) removes them."""
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(tmp_path / "published"))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SWEEP_TEST_LOG", str(tmp_path / "calls.log"))
    root = tmp_path / "published"
    _prepare_others(root, tmp_path / "cache")
    _edit_the_library(monkeypatch)
    with _killed_at(monkeypatch, 1), pytest.raises(Killed):  # the manifest is written
        PublishedStore(EXPERIMENT).prune()
    assert _unnamed(root) == {"paper": 4, "quick": 2}
    assert [line for line in leftover_lines(root) if "manifest entry" in line] == [
        "toy: paper.parquet holds 4 rows of 4 runs that no manifest entry names, left by an "
        "interrupted write: the next export, prune, compact or confirm of toy removes them",
        "toy: quick.parquet holds 2 rows of 2 runs that no manifest entry names, left by an "
        "interrupted write: the next export, prune, compact or confirm of toy removes them"]
    assert export(EXPERIMENT, "paper").new == 0  # publishes nothing new
    assert not _unnamed(root) and not leftover_lines(root)
    assert sorted(_rows(root)) == ["paper"] and len(_rows(root)["paper"]) == 2


def test_a_lost_manifest_stops_every_write_and_removes_no_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without its manifest, no row of a table can be told from a leftover: a write refuses,
    naming the file and how to restore it, and every table stays as it was."""
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(tmp_path / "published"))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SWEEP_TEST_LOG", str(tmp_path / "calls.log"))
    root = tmp_path / "published"
    _prepare_others(root, tmp_path / "cache")
    before = {path.name: path.read_bytes() for path in (root / EXPERIMENT).glob("*.parquet")}
    assert before
    (root / EXPERIMENT / "manifest.json").unlink()
    for command in (lambda: export(EXPERIMENT, "paper"),
                    lambda: PublishedStore(EXPERIMENT).prune()):
        with pytest.raises(published.PublishedStoreError,
                           match="no manifest.json.*git checkout.*nothing was removed"):
            command()
    with pytest.raises(published.PublishedStoreError, match="no .*manifest.json"):
        PublishedStore(EXPERIMENT).compact()
    assert {path.name: path.read_bytes()
            for path in (root / EXPERIMENT).glob("*.parquet")} == before
