"""The manifest layout that writes what runs share once (``fedlib-published/3``): runs
computed together name one provenance record, readers see every run written out as the
older layout wrote it, an older manifest reads the same and is rewritten by the next
write, and a hostile record or reference is refused naming the file and the field."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedlib.render import status
from fedlib.runs import __main__ as runs_cli
from fedlib.runs import published
from fedlib.runs.keys import content_digest, run_key
from fedlib.runs.published import (
    FILE_BYTES_LIMIT,
    PUBLISHED_LAYOUT,
    STORE_BYTES_LIMIT,
    PublishedStore,
    PublishedStoreError,
    config_of,
    is_current,
    provenance_line,
    status_table,
)

LEGACY = "fedlib-published/2"
ROOT = Path(__file__).resolve().parents[1]
MODULE = "test_sweeps"  # a module whose code the toy runs' keys are made of


@pytest.fixture
def store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "published"
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(root))
    return root


def _runs(seed: int, xs: list[int], machine: str = "a machine"
          ) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """Runs of ``xs`` computed together (one group): shared seed and step, own x."""
    configs = [{"x": x, "seed": seed, "step": 0.5, "grid": [1, 2.5], "name": "toy"}
               for x in xs]
    keys = [run_key(config, MODULE) for config in configs]
    return [(key, pd.DataFrame({"loss": [float(config["x"]), config["x"] / 2.0],
                                "step": [0, 1]}),
             {"config": config, "module": MODULE, "runner": "square_runner",
              "group": keys, "machine": machine, "finished": f"2026-01-0{seed + 1}T00:00:00",
              "group_wall_seconds": 6.0, "group_cpu_seconds": 9.0, "group_size": len(xs),
              "torch_threads": 1})
            for key, config in zip(keys, configs, strict=True)]


def _store(root: Path) -> PublishedStore:
    """A toy store of two groups of three runs (each group one provenance record)."""
    store = PublishedStore("toy", root)
    assert store.add("paper", _runs(0, [0, 1, 2]) + _runs(1, [3, 4, 5])) == 6
    return store


def _on_disk(store: PublishedStore) -> dict[str, Any]:
    return json.loads(store.manifest_path.read_text())


def _write_legacy(store: PublishedStore) -> dict[str, Any]:
    """Write the store's manifest as the older layout wrote it (every run in full)."""
    manifest = {**store.manifest(), "layout": LEGACY}
    store.manifest_path.write_text(json.dumps(manifest))
    return manifest


# What the layout writes --------------------------------------------------------------------

def test_runs_computed_together_share_one_record_and_read_back_in_full(
        store_root: Path) -> None:
    store = _store(store_root)
    written = _on_disk(store)
    assert written["layout"] == PUBLISHED_LAYOUT
    records = written["provenance"]
    assert len(records) == 2  # one per group: same code, commit and machine
    for record in records.values():
        assert record["config"] == {"seed": record["config"]["seed"], "step": 0.5,
                                    "grid": [1, 2.5], "name": "toy"}
        assert (record["machine"], record["cpu_seconds"], record["rows"]) == (
            "a machine", 3.0, 2)
    for entry in written["runs"].values():
        assert set(entry) == {"from", "sha256", "config"} and set(entry["config"]) == {"x"}
    runs = store.runs()
    for seed, xs in ((0, [0, 1, 2]), (1, [3, 4, 5])):
        for key, table, provenance in _runs(seed, xs):
            entry = runs[key]
            assert entry["config"] == provenance["config"] and is_current(key, entry)
            assert entry["sha256"] == content_digest(table) and entry["rows"] == 2
            assert entry["group"] == provenance["group"]
            assert entry["finished"] == provenance["finished"]
            assert (entry["wall_seconds"], entry["cpu_seconds"]) == (2.0, 3.0)
            assert entry["columns"] == [["loss", "float64"], ["step", "int64"]]
            assert entry["tier"] == "paper" and entry["module"] == MODULE
    assert store.lookup(list(runs)).keys() == runs.keys()


def test_the_layout_reads_back_what_was_written_for_random_manifests() -> None:
    """Compaction and reading back give every run's fields exactly (types included), for
    runs whose configs share some settings, differ in others and lack some."""
    rng = np.random.default_rng(7)
    values: list[Any] = [0, 1, 1.0, True, None, "inf", "a", [1, "b"], {"k": [0.5]}, -2.25]
    for trial in range(25):
        groups: dict[str, list[str]] = {}
        runs: dict[str, dict[str, Any]] = {}
        for number in range(int(rng.integers(1, 40))):
            key = f"{trial:04x}{number:016x}"
            group = f"{trial:04x}{int(rng.integers(0, 4)):016x}"
            groups.setdefault(group, []).append(key)
            config = {f"s{i}": values[int(rng.integers(0, len(values)))]
                      for i in range(6) if rng.random() < 0.8}
            runs[key] = {
                "tier": ["quick", "paper"][int(rng.integers(0, 2))], "config": config,
                "module": "m.n", "runner": ["", "run"][int(rng.integers(0, 2))],
                "group": group, "columns": "0123456789ab",
                "sha256": f"{int(rng.integers(0, 2**62)):064x}", "rows": int(rng.integers(9)),
                "wall_seconds": [None, 1.5, 0][int(rng.integers(0, 3))],
                "cpu_seconds": [None, 2.0][int(rng.integers(0, 2))],
                "torch_threads": [None, 1, 4][int(rng.integers(0, 3))],
                "code_fingerprint": "f", "fedlib_version": "0.1.0",
                "commit": ["c1", "c2"][int(rng.integers(0, 2))], "machine": "m",
                "finished": ["d1", "d2"][int(rng.integers(0, 2))]}
        for members in groups.values():  # a group is named by its first run
            for key in members:
                runs[key]["group"] = members[0]
        manifest = {"layout": PUBLISHED_LAYOUT, "experiment": "x", "runs": runs,
                    "modules": {"m.n": {"fingerprint": "f", "files": {"a.py": "0"}}},
                    "groups": {members[0]: members for members in groups.values()},
                    "schemas": {"0123456789ab": [["y", "float64"]]}}
        back = published.check_manifest(json.loads(published.manifest_text(manifest)),
                                        Path("manifest.json"))
        assert _exactly(back["runs"]) == _exactly(runs)
        assert {k: v for k, v in back.items() if k != "runs"} == {
            k: v for k, v in manifest.items() if k != "runs"}


def _exactly(runs: dict[str, Any]) -> str:
    return json.dumps(runs, sort_keys=True)  # 1, 1.0 and true written apart


# The older layout --------------------------------------------------------------------------

def _answers(root: Path) -> dict[str, Any]:
    """What every reader of the store says: the status table and page section, every
    run's entry, config and currency, and the chapters' provenance lines (all runs, and
    each tier's)."""
    answers: dict[str, Any] = {"status": status_table(root).to_dict("records"),
                               "section": status.published_section()}
    for name in published.published_experiments(root):
        runs = PublishedStore(name, root).runs()
        answers[name] = {key: (entry, config_of(entry), is_current(key, entry))
                         for key, entry in runs.items()}
        tiers = {entry["tier"] for entry in runs.values()}
        answers[f"{name} lines"] = [provenance_line(name, runs)] + [
            provenance_line(name, [k for k, e in runs.items() if e["tier"] == tier])
            for tier in sorted(tiers)]
    return answers


def test_a_manifest_of_the_older_layout_reads_the_same_and_the_next_write_compacts_it(
        store_root: Path) -> None:
    store = _store(store_root)
    answers = _answers(store_root)
    compact_text = store.manifest_path.read_text()
    legacy = _write_legacy(store)
    assert all("tier" in entry for entry in legacy["runs"].values())
    assert _answers(store_root) == answers
    assert store.prune() == 0  # nothing stale: the manifest is written again all the same
    assert store.manifest_path.read_text() == compact_text
    _write_legacy(store)
    assert store.add("paper", _runs(0, [0, 1, 2])) == 0  # the same runs again
    assert store.manifest_path.read_text() == compact_text
    _write_legacy(store)
    before, after, written = store.compact()
    assert written and before > after == len(compact_text.encode())
    assert store.compact() == (after, after, False)
    assert _answers(store_root) == answers


def test_a_run_exported_again_keeps_its_entry_and_others_their_records(
        store_root: Path) -> None:
    store = _store(store_root)
    first = store.runs()
    store.add("paper", _runs(2, [6, 7], machine="another machine"))
    runs = store.runs()
    assert {key: runs[key] for key in first} == first
    assert {runs[k]["machine"] for k in set(runs) - set(first)} == {"another machine"}
    assert len(_on_disk(store)["provenance"]) == 3


def test_the_compact_command_reports_sizes(store_root: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(store_root)
    legacy_size = len(json.dumps(_write_legacy(store)))
    assert runs_cli.main(["compact", "toy"]) == 0
    after = store.manifest_path.stat().st_size
    assert capsys.readouterr().out == (
        f"toy: manifest written in {PUBLISHED_LAYOUT}, {legacy_size} -> {after} bytes\n")
    assert runs_cli.main(["compact"]) == 0
    assert capsys.readouterr().out == (
        f"toy: manifest {after} bytes, already written in {PUBLISHED_LAYOUT}\n")
    with pytest.raises(SystemExit, match="nothing is published for 'none'"):
        runs_cli.main(["compact", "none"])


# Hostile records and references ------------------------------------------------------------

def _first(manifest: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    key = min(manifest["runs"])
    return key, manifest["runs"][key]


def _record(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["provenance"][_first(manifest)[1]["from"]]


def _rename_record(manifest: dict[str, Any], name: str) -> None:
    old = _first(manifest)[1]["from"]
    manifest["provenance"][name] = manifest["provenance"].pop(old)
    for entry in manifest["runs"].values():
        if entry["from"] == old:
            entry["from"] = name


def _without_machine(manifest: dict[str, Any]) -> None:
    _record(manifest).pop("machine")
    _first(manifest)[1].pop("machine", None)


HOSTILE: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "dangling record": (lambda m: _first(m)[1].update({"from": "0" * 12}),
                        r"runs\.{key}\.from '0{{12}}' names no record of the manifest's "
                        r"'provenance' section"),
    "no record": (lambda m: _first(m)[1].pop("from"), r"runs\.{key}\.from is missing"),
    "record path": (lambda m: _first(m)[1].update({"from": "../../x"}),
                    r"runs\.{key}\.from '\.\./\.\./x' is not a record name"),
    "record named a path": (lambda m: _rename_record(m, "../etc/passwd"),
                            r"provenance: record name '\.\./etc/passwd' is not a record name"),
    "no records": (lambda m: m.pop("provenance"), r"section 'provenance' is missing"),
    "records a list": (lambda m: m.update(provenance=[]),
                       r"section 'provenance' is \[\], not a JSON object"),
    "record not an object": (lambda m: m["provenance"].update({_first(m)[1]["from"]: 3}),
                             r"provenance\.\w+ is 3, not a JSON object"),
    "unknown run field": (lambda m: _first(m)[1].update(path="../x"),
                          r"runs\.{key}: 'path' is not a field of a run"),
    "unknown record field": (lambda m: _record(m).update({"from": "0" * 12}),
                             r"provenance\.\w+: 'from' is not a field of a run"),
    "record tier a path": (lambda m: _record(m).update(tier="../other/paper"),
                           r"provenance\.\w+\.tier '\.\./other/paper' is not a run tier"),
    "run's tier a path": (lambda m: _first(m)[1].update(tier="../other/paper"),
                          r"runs\.{key}\.tier '\.\./other/paper' is not a run tier"),
    "record module a path": (lambda m: _record(m).update(module="../x"),
                             r"provenance\.\w+\.module '\.\./x' is not a dotted module"),
    "record group dangling": (lambda m: _record(m).update(group="0" * 20),
                              r"provenance\.\w+\.group '0{{20}}' names no group"),
    "record schema dangling": (lambda m: _record(m).update(columns="0" * 12),
                               r"provenance\.\w+\.columns '0{{12}}' names no schema"),
    "record config a list": (lambda m: _record(m).update(config=[1]),
                             r"provenance\.\w+\.config is \[1\], not a JSON object"),
    "run config a list": (lambda m: _first(m)[1].update(config=[1]),
                          r"runs\.{key}\.config is \[1\], not a JSON object"),
    "deep record config": (lambda m: _record(m).update(config={"a": json.loads(
        "[" * 40 + "]" * 40)}), r"provenance\.\w+\.config nests deeper than"),
    "negative record seconds": (lambda m: _record(m).update(cpu_seconds=-1),
                                r"provenance\.\w+\.cpu_seconds -1 is not a number of seconds"),
    "record digest": (lambda m: _record(m).update(sha256="x"),
                      r"provenance\.\w+\.sha256 'x' is not a SHA-256 digest"),
    "field in neither": (_without_machine,
                         r"runs\.{key}\.machine is missing \(neither the run nor its record "
                         r"'\w+' gives it\)"),
}


@pytest.mark.parametrize("fault", sorted(HOSTILE))
def test_a_hostile_record_or_reference_is_refused_naming_the_file_and_the_field(
        store_root: Path, fault: str) -> None:
    store = _store(store_root)
    manifest = _on_disk(store)
    key = _first(manifest)[0]
    edit, expected = HOSTILE[fault]
    edit(manifest)
    store.manifest_path.write_text(json.dumps(manifest))
    for read in (lambda: PublishedStore("toy").runs(), status_table,
                 lambda: PublishedStore("toy").prune()):
        with pytest.raises(PublishedStoreError) as raised:
            read()
        message = str(raised.value)
        assert message.startswith(f"{store.manifest_path}: "), message
        assert re.search(expected.format(key=key), message), message
        assert "git checkout --" in message


def test_a_run_may_give_a_field_its_record_also_gives_and_its_own_wins(
        store_root: Path) -> None:
    """What a run's entry holds is the run's: a field it gives overrides its record's
    (the writer gives each field once; a reader follows the run)."""
    store = _store(store_root)
    manifest = _on_disk(store)
    key, entry = _first(manifest)
    entry.update(machine="its own machine", config={"x": entry["config"]["x"], "step": 9})
    store.manifest_path.write_text(json.dumps(manifest))
    runs = store.runs()
    assert runs[key]["machine"] == "its own machine"
    assert runs[key]["config"]["step"] == 9 and not is_current(key, runs[key])
    assert {runs[k]["machine"] for k in runs if k != key} == {"a machine"}


# The committed store -----------------------------------------------------------------------

def test_every_committed_manifest_reads_the_same_in_either_layout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each committed manifest, written in the older layout and then compacted, gives
    every reader the same answers (status rows and page, configs, currency, provenance
    lines), and so does the committed file as it is."""
    committed = ROOT / "data" / "published"
    if not published.published_experiments(committed):
        pytest.skip("nothing is published in this checkout")
    root = tmp_path / "published"
    shutil.copytree(committed, root, ignore=shutil.ignore_patterns(".lock", ".*.tmp"))
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(root))
    as_committed = _answers(root)
    stores = [PublishedStore(name, root) for name in published.published_experiments(root)]
    for store in stores:
        _write_legacy(store)
    assert _answers(root) == as_committed
    sizes = {}
    for store in stores:
        before, after, written = store.compact()
        assert written and after < before
        sizes[store.experiment] = (before, after)
    assert _answers(root) == as_committed
    for store in stores:
        assert _on_disk(store)["layout"] == PUBLISHED_LAYOUT
        assert store.compact() == (sizes[store.experiment][1],) * 2 + (False,)


def test_the_committed_store_stays_within_its_size_limits() -> None:
    """Every file of the committed store, and the store in all, stays under its limit."""
    committed = ROOT / "data" / "published"
    files = [f for f in committed.rglob("*") if f.is_file()]
    if not files:
        pytest.skip("nothing is published in this checkout")
    sizes = {f.relative_to(committed).as_posix(): f.stat().st_size for f in files}
    over = {name: size for name, size in sizes.items() if size > FILE_BYTES_LIMIT}
    assert not over, (f"published files over {FILE_BYTES_LIMIT:,} bytes: {over}; keep fewer "
                      "iterations of their runs")
    assert sum(sizes.values()) <= STORE_BYTES_LIMIT, (
        f"the published store holds {sum(sizes.values()):,} bytes, over {STORE_BYTES_LIMIT:,}")
