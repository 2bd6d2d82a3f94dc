"""The published store under faults: concurrent exports, hostile or damaged manifests and
tables, leftovers of an interrupted export, cached runs an export cannot take, and an
unreachable Ray cluster. Each fault ends in an error or a warning that names the file
(or the address) and what to do, never in a lost run or a silent wrong answer."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_sweeps import calls, square_runner

from fedlib import paths
from fedlib.runs import __main__ as runs_cli
from fedlib.runs import cache as run_cache
from fedlib.runs import keys as run_keys
from fedlib.runs import published
from fedlib.runs.cache import MissingRunsError, ResultStore
from fedlib.runs.published import PublishedStore, PublishedStoreError, export, status_table
from fedlib.sweeps import sweep

CONFIGS = [{"x": x} for x in range(4)]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "published"
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(root))
    monkeypatch.setenv("SWEEP_TEST_LOG", str(tmp_path / "calls.log"))
    return root


def _computed(configs: list[dict] = CONFIGS, tier: str = "paper",
              experiment: str = "toy") -> pd.DataFrame:
    run_cache.set_tier_label(tier)
    try:
        return sweep(experiment, configs, square_runner, workers=1, progress=False)
    finally:
        run_cache.set_tier_label("")


def _published(store_root: Path, experiment: str = "toy") -> pd.DataFrame:
    runs = _computed(experiment=experiment)
    export(experiment, "paper")
    return runs


def _empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(tmp_path / "another-machine"))


def _edit_manifest(store_root: Path, edit, experiment: str = "toy") -> Path:
    """Edit the manifest with every run entry written out, and write it back in the
    layout that writes them so (read as ever; hostile fields of the layout that shares
    provenance records are tested in test_published_layout)."""
    path = store_root / experiment / "manifest.json"
    manifest = json.loads(path.read_text())
    if manifest["layout"] == published.PUBLISHED_LAYOUT:
        manifest = {**published.check_manifest(manifest, path), "layout": "fedlib-published/2"}
    edit(manifest)
    path.write_text(json.dumps(manifest))
    return path


def _first_run(manifest: dict) -> dict:
    return manifest["runs"][min(manifest["runs"])]


# Two exports at once -------------------------------------------------------------------

EXPORTER = r"""
import sys
import time
from pathlib import Path

from fedlib.runs import keys as run_keys
from fedlib.runs import published

# The parent's run keys, whatever happens to the source meanwhile.
run_keys.code_fingerprint = lambda module=None: "fixed"
mine, everyone = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
original = published.commit_description


def slowly() -> str:
    time.sleep(2.0)  # widen the time between reading the store and writing it
    return original()


published.commit_description = slowly
mine.touch()
deadline = time.monotonic() + 60
while not all(p.exists() for p in everyone):  # start exporting together
    if time.monotonic() > deadline:
        raise SystemExit("the other exporter never started")
    time.sleep(0.01)
print(published.export("toy", "paper")[0])
"""


def test_two_exports_into_one_experiment_at_once_keep_every_run(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    caches, keys = [tmp_path / "cache-a", tmp_path / "cache-b"], set()
    monkeypatch.setattr(run_keys, "code_fingerprint", lambda module=None: "fixed")
    for cache, configs in zip(caches, [CONFIGS, [{"x": x} for x in range(4, 8)]],
                              strict=True):
        monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(cache))
        keys |= set(_computed(configs)["run_key"])
    ready = [tmp_path / "ready-a", tmp_path / "ready-b"]
    exporters = [
        subprocess.Popen([sys.executable, "-c", EXPORTER, str(mine), *map(str, ready)],
                         env={**os.environ, "FEDLIB_RESULTS_DIR": str(cache)},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cache, mine in zip(caches, ready, strict=True)]
    outputs = []
    try:
        for process in exporters:
            outputs.append(process.communicate(timeout=120))
    finally:
        for process in exporters:
            process.kill()
    for process, (out, err) in zip(exporters, outputs, strict=True):
        assert process.returncode == 0, err
        assert out.strip() == "4"
    store = PublishedStore("toy")
    assert set(store.runs()) == keys
    assert set(store.lookup(keys)) == keys
    assert not list(store.folder.glob(".*.tmp"))


# Names read from a manifest -------------------------------------------------------------

def _rename_group(manifest: dict, name: str) -> None:
    run = _first_run(manifest)
    manifest["groups"][name] = manifest["groups"].pop(run["group"])
    run["group"] = name


def _rename_schema(manifest: dict, name: str) -> None:
    schema = _first_run(manifest)["columns"]
    manifest["schemas"][name] = manifest["schemas"].pop(schema)
    for entry in manifest["runs"].values():
        entry["columns"] = name


def _rename_run(manifest: dict, name: str) -> None:
    key = min(manifest["runs"])
    manifest["runs"][name] = manifest["runs"].pop(key)


def _rename_module(manifest: dict, name: str) -> None:
    manifest["modules"][name] = manifest["modules"].pop(_first_run(manifest)["module"])
    for entry in manifest["runs"].values():
        entry["module"] = name


NAME_FIELDS = {
    "tier": (lambda m, bad: _first_run(m).update(tier=bad), r"runs\.\w+\.tier"),
    "module": (_rename_module, r"modules: module name"),
    "run's module": (lambda m, bad: _first_run(m).update(module=bad), r"runs\.\w+\.module"),
    "runner": (lambda m, bad: _first_run(m).update(runner=bad), r"runs\.\w+\.runner"),
    "group name": (_rename_group, r"groups: group name"),
    "group member": (lambda m, bad: m["groups"][_first_run(m)["group"]].append(bad),
                     r"groups\.\w+ member"),
    "run's group": (lambda m, bad: _first_run(m).update(group=bad), r"runs\.\w+\.group"),
    "schema name": (_rename_schema, r"schemas: schema name"),
    "run's schema": (lambda m, bad: _first_run(m).update(columns=bad), r"runs\.\w+\.columns"),
    "run key": (_rename_run, r"runs: run key"),
    "module file": (lambda m, bad: m["modules"][_first_run(m)["module"]]["files"].update(
        {bad: "0" * 16}), r"modules\.\S+\.files: file name"),
}


@pytest.mark.parametrize("field", sorted(NAME_FIELDS))
@pytest.mark.parametrize("bad", ["../other/paper", "../../elsewhere/x", "/etc/passwd"])
def test_a_path_in_a_name_field_of_the_manifest_is_refused_naming_file_field_and_value(
        store_root: Path, field: str, bad: str) -> None:
    _published(store_root)
    edit, where = NAME_FIELDS[field]
    path = _edit_manifest(store_root, lambda manifest: edit(manifest, bad))
    with pytest.raises(PublishedStoreError) as raised:
        PublishedStore("toy").runs()
    message = str(raised.value)
    assert message.startswith(f"{path}: ")
    assert re.search(where, message), message
    assert repr(bad) in message and "git checkout --" in message


def test_a_tier_that_walks_out_of_its_folder_touches_no_other_file(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _published(store_root, "other")
    runs = _published(store_root)
    key = min(runs["run_key"])
    outside = tmp_path / "elsewhere" / "x.parquet"  # a file only the stale run names
    outside.parent.mkdir()
    pq.write_table(pa.table({"run_key": [key], "y": [0]}), outside)
    files = [store_root / "other" / "paper.parquet", outside]
    before = [(path.stat().st_ino, path.read_bytes()) for path in files]
    _empty_cache(tmp_path, monkeypatch)
    for bad in ["../other/paper", "../../elsewhere/x"]:
        # The run is stale (its config changed): prune would rewrite its tier's table.
        _edit_manifest(store_root, lambda m, bad=bad: m["runs"][key].update(
            tier=bad, config={"x": 99}))
        with pytest.raises(PublishedStoreError, match="is not a run tier"):
            PublishedStore("toy").prune()
        with pytest.raises(PublishedStoreError, match="is not a run tier"):
            sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    assert [(path.stat().st_ino, path.read_bytes()) for path in files] == before


# Structure of manifest and table ---------------------------------------------------------

def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


STRUCTURE_FAULTS = {
    "not an object": (lambda m: None, "[1, 2]", r"the manifest is \[1, 2\], not a JSON object"),
    "no groups": (lambda m: m.pop("groups"), None, r"section 'groups' is missing"),
    "runs a list": (lambda m: m.update(runs=[]), None, r"section 'runs' is \[\], not a JSON"),
    "run not an object": (lambda m: m["runs"].update({min(m["runs"]): 3}), None,
                          r"runs\.\w+ is 3, not a JSON object"),
    "no digest": (lambda m: _first_run(m).pop("sha256"), None, r"runs\.\w+\.sha256 is missing"),
    "rows as text": (lambda m: _first_run(m).update(rows="1"), None,
                     r"runs\.\w+\.rows '1' is not a count"),
    "config a list": (lambda m: _first_run(m).update(config=[1]), None,
                      r"runs\.\w+\.config is \[1\], not a JSON object"),
    "unknown group": (lambda m: _first_run(m).update(group="0" * 20), None,
                      r"runs\.\w+\.group '0{20}' names no group of the manifest"),
    "unknown schema": (lambda m: _first_run(m).update(columns="0" * 12), None,
                       r"runs\.\w+\.columns '0{12}' names no schema of the manifest"),
    "bad dtype": (lambda m: m["schemas"][_first_run(m)["columns"]].append(["z", "no-type"]),
                  None, r"schemas\.\w+: dtype 'no-type' of column 'z' is not a pandas dtype"),
    "deep config": (lambda m: _first_run(m).update(config={"a": json.loads(_nested(80))}),
                    None, r"runs\.\w+\.config nests deeper than"),
    "deep JSON": (lambda m: None, _nested(100_000), r"is not valid JSON"),
}


@pytest.mark.parametrize("fault", sorted(STRUCTURE_FAULTS))
def test_a_structurally_wrong_manifest_is_refused_naming_the_file(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    _published(store_root)
    edit, text, expected = STRUCTURE_FAULTS[fault]
    path = _edit_manifest(store_root, edit)
    if text is not None:
        path.write_text(text)
    for read in (lambda: PublishedStore("toy").runs(), status_table):
        with pytest.raises(PublishedStoreError, match=expected) as raised:
            read()
        assert str(raised.value).startswith(f"{path}")
    _empty_cache(tmp_path, monkeypatch)
    with pytest.raises(PublishedStoreError, match=expected):
        sweep("toy", CONFIGS, square_runner, workers=1, progress=False)


@pytest.mark.parametrize(("field", "value"), [("cpu_seconds", -3600.0),
                                              ("wall_seconds", -1),
                                              ("cpu_seconds", float("inf")),
                                              ("cpu_seconds", float("nan")),
                                              ("cpu_seconds", "an hour"),
                                              ("wall_seconds", True)])
def test_seconds_that_are_not_a_duration_are_refused_naming_the_run(
        store_root: Path, field: str, value: object) -> None:
    runs = _published(store_root)
    key = min(runs["run_key"])
    path = _edit_manifest(store_root, lambda m: m["runs"][key].update({field: value}))
    with pytest.raises(PublishedStoreError,
                       match=rf"runs\.{key}\.{field} .* is not a number of seconds"
                             r" \(finite, 0 or more, or null\)") as raised:
        status_table()
    assert str(raised.value).startswith(str(path))


# Damaged and absent runs ------------------------------------------------------------------

def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _alter(path: Path) -> None:
    table = pq.read_table(path).to_pandas()
    table.loc[0, "y"] = 1234
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path)


@pytest.mark.parametrize("damage", [_truncate, _alter, lambda path: path.write_text("text")])
def test_a_damaged_published_table_is_computed_instead_with_a_warning_naming_it(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage) -> None:
    _published(store_root)
    table = store_root / "toy" / "paper.parquet"
    damage(table)
    _empty_cache(tmp_path, monkeypatch)
    log = tmp_path / "calls.log"
    before = len(calls(log))
    with pytest.warns(RuntimeWarning, match=f"{re.escape(str(table))}.*computing them "
                                             "instead"):
        runs = sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    assert sorted(runs["y"]) == [0, 1, 4, 9]
    assert len(calls(log)) > before


@pytest.mark.parametrize(("damage", "reason"), [(_truncate, "cannot be read as Parquet"),
                                                (_alter, "does not match its digest")])
def test_without_computing_damaged_runs_are_told_apart_from_absent_ones(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage,
        reason: str) -> None:
    _published(store_root)
    table = store_root / "toy" / "paper.parquet"
    damage(table)
    _empty_cache(tmp_path, monkeypatch)
    monkeypatch.setenv("FEDLIB_COMPUTE", "0")
    damaged = 4 if damage is _truncate else 1
    with pytest.raises(MissingRunsError) as raised:
        sweep("toy", CONFIGS + [{"x": 9}], square_runner, workers=1, progress=False)
    message = str(raised.value)
    first = message.split(". ", 1)[0]  # what a chapter's page shows
    assert first == (f"1 of 5 runs of toy are neither cached nor published and {damaged} are "
                     f"published but damaged ({table} {reason})")
    assert f"git checkout -- {store_root / 'toy'}" in message
    with pytest.raises(MissingRunsError, match=rf"^{damaged} of 4 runs of toy are published "
                                               "but damaged"):
        sweep("toy", CONFIGS, square_runner, workers=1, progress=False)


def test_status_counts_damaged_runs_apart_from_current_ones(
        store_root: Path, tmp_path: Path) -> None:
    _published(store_root)
    table = store_root / "toy" / "paper.parquet"
    _alter(table)
    row = status_table().iloc[0]
    assert (row["runs"], row["current"], row["stale"], row["damaged"]) == (4, 3, 0, 1)
    _truncate(table)
    with pytest.warns(RuntimeWarning,
                      match=f"{re.escape(str(table))} cannot be read as Parquet"):
        row = status_table().iloc[0]
    assert (row["runs"], row["current"], row["stale"], row["damaged"]) == (4, 0, 0, 4)


def test_exporting_again_repairs_a_damaged_published_run(store_root: Path) -> None:
    runs = _published(store_root)
    _alter(store_root / "toy" / "paper.parquet")
    assert export("toy", "paper")[:2] == (4, 0)
    store = PublishedStore("toy")
    assert set(store.lookup(runs["run_key"])) == set(runs["run_key"])


# Leftovers of an interrupted export -------------------------------------------------------

def test_a_write_removes_the_leftovers_of_an_interrupted_export_and_git_ignores_them(
        store_root: Path, capsys: pytest.CaptureFixture) -> None:
    _published(store_root)
    leftover = store_root / "toy" / ".paper.parquet.k3j_x9ab.tmp"
    leftover.write_bytes(b"half a table")
    assert published.leftovers() == {"toy": [leftover]}
    runs_cli.main(["status"])
    assert "toy: 1 file left by an interrupted export" in capsys.readouterr().out
    _computed([{"x": 5}])
    export("toy", "paper")
    assert not leftover.exists()
    assert (store_root / "toy" / ".lock").is_file()
    assert published.published_experiments() == ["toy"]
    assert len(PublishedStore("toy").runs()) == 5
    leftover.write_bytes(b"half a table")
    PublishedStore("toy").prune()
    assert not leftover.exists()
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git checkout to ask what it ignores")
    names = ["data/published/toy/.paper.parquet.k3j_x9ab.tmp",
             "data/published/toy/.manifest.json.0a1b2c.tmp", "data/published/toy/.lock"]
    ignored = subprocess.run(["git", "check-ignore", *names], cwd=ROOT, capture_output=True,
                             text=True)
    assert ignored.stdout.split() == names
    kept = subprocess.run(["git", "check-ignore", "data/published/toy/paper.parquet",
                           "data/published/toy/manifest.json"], cwd=ROOT, capture_output=True)
    assert kept.returncode == 1  # the store itself is committed


def test_the_status_page_mentions_leftovers(store_root: Path) -> None:
    from fedlib.render.status import published_section

    _published(store_root)
    (store_root / "toy" / ".manifest.json.abc.tmp").write_text("{")
    text = "\n".join(published_section())
    from fedlib.render.markdown import markdown_text

    assert markdown_text("toy: 1 file left by an interrupted export") in text


# What an export leaves out ---------------------------------------------------------------

def test_export_says_how_many_cached_runs_of_other_tiers_it_left_out(
        store_root: Path, capsys: pytest.CaptureFixture) -> None:
    sweep("toy", CONFIGS, square_runner, workers=1, progress=False)  # the Python API: no tier
    _computed([{"x": 7}], tier="quick")
    report = export("toy", "paper")
    assert report[:3] == (0, 0, 0)
    assert report.other_tiers == {"": 4, "quick": 1}
    assert runs_cli.main(["export", "--tier", "paper", "toy"]) == 0
    out = capsys.readouterr().out
    assert ("toy: 4 cached runs have no tier (computed through the Python API without a "
            "tier): not exported") in out
    assert "toy: 1 cached run is of the quick tier: not exported (use --tier quick)" in out


def test_export_names_an_unreadable_cache_file_and_what_to_do(
        store_root: Path, capsys: pytest.CaptureFixture) -> None:
    runs = _computed()
    broken = ResultStore("toy").path(min(runs["run_key"]))
    broken.write_bytes(b"not parquet")
    with pytest.warns(RuntimeWarning,
                      match=f"cached run {re.escape(str(broken))} cannot be read .*delete it"):
        report = export("toy", "paper")
    assert report[:2] == (3, 3) and report.unreadable == [broken]
    with pytest.warns(RuntimeWarning, match="cannot be read"):
        runs_cli.main(["export", "--tier", "paper", "toy"])
    assert "toy: 1 cached file cannot be read: not exported" in capsys.readouterr().out


# An unreachable Ray cluster -----------------------------------------------------------------

RAY_SWEEP = r"""
import sys
import time

import pandas as pd

from fedlib.sweeps import sweep


def runner(configs):
    return [pd.DataFrame({"x": [c["x"]]}) for c in configs]


for address in sys.argv[1:]:
    start = time.monotonic()
    try:
        sweep("ray-check", [{"x": 1}], runner, ray_address=address, progress=False)
    except ValueError as error:
        print(f"{time.monotonic() - start:.1f} {error}")
"""


def test_an_unreachable_ray_address_fails_within_seconds_naming_it(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a local port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    addresses = [f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"]
    env = {**os.environ, "FEDLIB_PUBLISHED_DIR": str(tmp_path / "published")}
    try:
        done = subprocess.run([sys.executable, "-c", RAY_SWEEP, *addresses], env=env,
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("connecting to an unreachable Ray address did not fail within a minute")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    for line, address in zip(lines, addresses, strict=True):
        seconds, message = line.split(" ", 1)
        assert float(seconds) < 15
        assert message.startswith(f"ray_address={address!r}: nothing answers at "
                                  f"127.0.0.1:{port}")
        assert "ray start --head" in message


def test_leftover_names_are_those_atomic_writes_use(tmp_path: Path) -> None:
    target = tmp_path / "paper.parquet"
    with paths.atomic_path(target) as tmp:
        assert paths.temporaries(tmp_path) == [tmp]
    assert paths.temporaries(tmp_path) == []


# The command line: one line per known error, a traceback only with --debug --------------

FEDLIB_ROOT = Path(published.__file__).resolve().parents[2]
"""The checkout whose fedlib these tests run (a subprocess imports the same one)."""

EDITED_COMMAND = r"""
import runpy
import sys
import time
from pathlib import Path

from fedlib.runs import confirm, keys, published
import test_sweeps

# The runs' code as edited since they were published (a comment, say).
for module in (keys, published, confirm):
    module.code_fingerprint = lambda module=None: "edited library"
square = test_sweeps.square_runner


def slow(configs):
    time.sleep(1.0)  # a confirmation takes a while: the other command starts meanwhile
    return square(configs)


test_sweeps.square_runner = slow
mine, everyone = Path(sys.argv[1]), [Path(p) for p in sys.argv[2].split(",") if p]
mine.touch()
deadline = time.monotonic() + 60
while not all(p.exists() for p in everyone):  # start together
    if time.monotonic() > deadline:
        raise SystemExit("the other command never started")
    time.sleep(0.01)
sys.argv = ["python -m fedlib.runs", *sys.argv[3:]]
runpy.run_module("fedlib.runs", run_name="__main__", alter_sys=True)
"""


def _command(tmp_path: Path, *args: str, ready: Path | None = None,
             others: list[Path] = ()) -> subprocess.Popen:
    """``python -m fedlib.runs ARGS`` in a process of its own, the runs' code edited."""
    ready = ready or tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(FEDLIB_ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", EDITED_COMMAND, str(ready),
                             ",".join(map(str, others)), *args], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(process: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        process.kill()
    return process.returncode, out, err


def test_a_runner_that_no_longer_exists_is_one_line_and_a_traceback_only_with_debug(
        store_root: Path, tmp_path: Path) -> None:
    runs = _published(store_root)
    _edit_manifest(store_root, lambda m: [entry.update(runner="renamed_runner")
                                          for entry in m["runs"].values()])
    code, out, err = _finished(_command(tmp_path, "confirm", "toy"))
    assert code == 1 and "Traceback" not in err, err
    [line] = err.strip().splitlines()
    key = min(runs["run_key"])
    assert line.startswith(f"error: {store_root / 'toy' / 'manifest.json'}: runs.{key}.runner "
                           "'renamed_runner': module test_sweeps has no function "
                           "'renamed_runner'"), line
    assert "make publish" in line
    code, out, err = _finished(_command(tmp_path, "confirm", "toy", "--debug"))
    assert code == 1 and "Traceback" in err and "ConfirmationError" in err


def test_two_confirmations_at_once_one_runs_and_the_other_says_the_store_is_held(
        store_root: Path, tmp_path: Path) -> None:
    _published(store_root)
    ready = [tmp_path / "ready-a", tmp_path / "ready-b"]
    commands = [_command(tmp_path, "confirm", "toy", ready=mine, others=ready)
                for mine in ready]
    results = [_finished(process) for process in commands]
    assert sorted(code for code, _, _ in results) == [0, 1], results
    code, out, err = next(result for result in results if result[0] == 1)
    [line] = err.strip().splitlines()
    assert re.fullmatch(r"error: another command holds the published store of toy \(confirm "
                        r"of toy, process \d+, since [\d: -]+; its lock is .*/toy/\.lock\): "
                        r"wait for it to finish, then run this one again", line), line
    code, out, err = next(result for result in results if result[0] == 0)
    assert "toy: 4 of 4 stale runs confirmed" in out
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_keys, "code_fingerprint", lambda module=None: "edited library")
        row = status_table().iloc[0]
        assert (row["runs"], row["current"], row["damaged"]) == (4, 4, 0)
    assert not published.leftover_lines()


def test_an_unexpected_error_is_one_line_saying_so_and_debug_shows_it(
        store_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(root: Path | None = None) -> None:
        raise KeyError("groups")

    _published(store_root)
    monkeypatch.setattr(sys.modules[runs_cli.main.__module__], "status_table", broken)
    with pytest.raises(SystemExit, match=r"^error: unexpected KeyError: 'groups' \(run again "
                                         r"with --debug to see where it comes from\)$"):
        runs_cli.main(["status"])
    with pytest.raises(KeyError, match="groups"):
        runs_cli.main(["--debug", "status"])


def test_a_page_writer_reports_a_damaged_store_in_one_line(store_root: Path,
                                                           tmp_path: Path) -> None:
    _published(store_root)
    (store_root / "toy" / "manifest.json").write_text("{not json")
    done = subprocess.run([sys.executable, "-m", "fedlib.render.status", str(tmp_path),
                           "--output", str(tmp_path / "status.md")],
                          env={**os.environ, "PYTHONPATH": str(FEDLIB_ROOT)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {store_root / 'toy' / 'manifest.json'} is not valid JSON")


# Messages that say what to do, and advice that works ---------------------------------------

def test_a_published_folder_that_is_not_one_is_named_with_the_variable(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    absent = tmp_path / "no-such-folder"
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(absent))
    for command in (["status"], ["confirm", "toy"], ["prune"], ["compact", "toy"]):
        with pytest.raises(SystemExit, match=rf"^error: the published store {absent} "
                           r"\(FEDLIB_PUBLISHED_DIR\) does not exist: unset "
                           "FEDLIB_PUBLISHED_DIR to read the checkout's data/published"):
            runs_cli.main(command)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(a_file))
    with pytest.raises(SystemExit, match=rf"the published store {a_file} "
                       r"\(FEDLIB_PUBLISHED_DIR\) is a file, not a folder"):
        runs_cli.main(["status"])
    monkeypatch.setenv("FEDLIB_PUBLISHED_DIR", str(store_root))
    _published(store_root)
    with pytest.raises(SystemExit, match=rf"nothing is published for 'other' in {store_root} "
                       r"\(no other/manifest\.json; published there: toy; "
                       r"FEDLIB_PUBLISHED_DIR=.* chose this folder\)"):
        runs_cli.main(["confirm", "other"])


def test_the_advice_for_an_unreadable_manifest_works(
        store_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _published(store_root)
    folder = store_root / "toy"
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(PublishedStoreError) as raised:
        export("toy", "paper")  # an export refuses to write over runs it cannot read
    message = str(raised.value)
    assert f"git checkout -- {folder / 'manifest.json'}" in message
    assert f"remove the experiment's folder (rm -r {folder})" in message
    assert "python -m fedlib.runs export --tier <tier> toy" in message
    shutil.rmtree(folder)  # what it says to do where git holds no readable copy
    assert runs_cli.main(["export", "--tier", "paper", "toy"]) == 0
    assert "toy: 4 paper-tier runs published (4 new)" in capsys.readouterr().out
    assert status_table().iloc[0]["current"] == 4


def test_a_manifest_of_a_newer_layout_asks_for_a_newer_fedlib(store_root: Path) -> None:
    _published(store_root)
    path = _edit_manifest(store_root, lambda m: m.update(layout="fedlib-published/4"))
    for call in (lambda: PublishedStore("toy").runs(), lambda: export("toy", "paper"),
                 lambda: PublishedStore("toy").prune()):
        with pytest.raises(PublishedStoreError,
                           match=rf"^{re.escape(str(path))} is written in layout "
                           r"'fedlib-published/4', which a newer fedlib writes \(this one "
                           r"reads .*\): update this checkout to the fedlib that wrote it"):
            call()


def test_a_run_whose_config_was_edited_is_damaged_for_status_and_builds_alike(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest edited so that a run's recorded config (x = 9) no longer gives its key:
    the rows under that key may be any config's, so no build uses them; status counts the
    run as damaged (not stale: the code is unchanged), prune keeps it, and exporting it
    again repairs it."""
    runs = _published(store_root)
    exported_from = os.environ["FEDLIB_RESULTS_DIR"]
    key = min(runs["run_key"])
    _edit_manifest(store_root, lambda m: m["runs"][key].update(config={"x": 9}))
    row = status_table().iloc[0]
    assert (row["runs"], row["current"], row["stale"], row["damaged"]) == (4, 3, 0, 1)
    _empty_cache(tmp_path, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setenv("FEDLIB_COMPUTE", "0")
        with pytest.raises(MissingRunsError, match=r"1 of 4 runs of toy are published but "
                           r"damaged \(.*manifest\.json records for a run a config that does "
                           r"not give its key"):
            sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    log = tmp_path / "calls.log"
    before = len(calls(log))
    with pytest.warns(RuntimeWarning, match="1 published runs of toy are damaged"):
        sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
    assert len(calls(log)) == before + 1
    assert PublishedStore("toy").prune() == 0
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", exported_from)
    assert export("toy", "paper")[:2] == (4, 0)  # the run's entry written again
    row = status_table().iloc[0]
    assert (row["runs"], row["current"], row["damaged"]) == (4, 4, 0)


def test_the_command_line_module_defines_nothing_it_handles() -> None:
    """``python -m fedlib.runs`` runs its ``__main__`` module under the name ``__main__``;
    anything importing it by name gets a second copy. It defines no function and no class
    of its own (the command line and the errors it handles live in modules imported by
    name), so that no handler can miss the other copy of an error class."""
    import runpy
    import warnings

    from fedlib.runs import cli

    with warnings.catch_warnings():  # runpy warns of the copy imported by name (above)
        warnings.simplefilter("ignore", RuntimeWarning)
        namespace = runpy.run_module("fedlib.runs", run_name="a_second_copy")
    assert namespace["main"] is cli.main
    own = [name for name, value in namespace.items()
           if getattr(value, "__module__", None) == "a_second_copy"]
    assert own == []


def test_sweeps_read_and_check_a_published_run_once_while_its_files_are_unchanged(
        store_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chapter's many sweeps over the same published runs read the table and check each
    run once; a sweep's own edits of what it got never reach the next one; a new export
    (the files replaced) is read again, and damage done since is seen."""
    _published(store_root)
    _empty_cache(tmp_path, monkeypatch)
    reads = []
    original = PublishedStore._read_table
    monkeypatch.setattr(PublishedStore, "_read_table",
                        lambda self, tier: reads.append(tier) or original(self, tier))
    with run_cache.stored_only():
        first = sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
        first.loc[:, "y"] = -1.0  # the caller's copy
        again = sweep("toy", CONFIGS[:2], square_runner, workers=1, progress=False)
    assert reads == ["paper"]
    assert list(again["y"]) == [0, 1]
    _computed([{"x": 7}])
    export("toy", "paper")
    reads.clear()
    with run_cache.stored_only():
        assert list(sweep("toy", [{"x": 7}, *CONFIGS[:1]], square_runner, workers=1,
                          progress=False)["y"]) == [49, 0]
    assert reads == ["paper"]
    table = store_root / "toy" / "paper.parquet"
    frame = pq.read_table(table).to_pandas()
    frame.loc[frame.index[0], "y"] = 123.0  # damaged in place: same file, new content
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), table)
    with run_cache.stored_only(), pytest.raises(MissingRunsError, match="damaged"):
        sweep("toy", CONFIGS, square_runner, workers=1, progress=False)
