"""Cached, resumable sweeps: keys, atomic storage, skipping, interruption, Ray."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fedlib import sweeps
from fedlib.runs import cache as run_cache
from fedlib.runs import keys as run_keys
from fedlib.runs.cache import ResultStore
from fedlib.runs.keys import run_key
from fedlib.sweeps import check_group, plan_groups, sweep


def square_runner(configs: list[dict]) -> list[pd.DataFrame]:
    """Toy runner: records each call in a log file, fails on configs marked ``fail``."""
    log = Path(os.environ["SWEEP_TEST_LOG"])
    with log.open("a") as handle:
        handle.write(json.dumps([c["x"] for c in configs]) + "\n")
    tables = []
    for config in configs:
        if config.get("fail"):
            raise RuntimeError(f"run x={config['x']} failed on purpose")
        tables.append(pd.DataFrame({"x": [config["x"]], "y": [config["x"] ** 2]}))
    return tables


def calls(log: Path) -> list[list[int]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("SWEEP_TEST_LOG", str(path))
    return path


def test_run_key_depends_on_every_field_and_the_code(monkeypatch) -> None:
    base = {"a": 1, "b": 0.5, "c": math.inf}
    assert run_key(base) == run_key({"c": math.inf, "b": 0.5, "a": 1})
    assert run_key(base) != run_key({**base, "b": 0.25})
    assert run_key(base) != run_key({**base, "c": -math.inf})
    assert run_key(base) != run_key({**base, "d": None})
    original = run_key(base)
    monkeypatch.setattr(run_keys, "code_fingerprint", lambda module=None: "edited library")
    assert run_key(base) != original
    monkeypatch.setattr(run_keys.fedlib, "__version__", "9.9.9")
    assert run_key(base) != original


def test_a_run_key_hashes_the_canonical_json_of_config_version_and_code(monkeypatch) -> None:
    """The key written part by part equals the hash of the whole payload written by the
    JSON encoder from the config's canonical form, for configs the direct writing covers
    and for those it hands to :func:`canonical` (non-finite floats, tuples, non-text keys,
    numpy floats)."""
    import hashlib

    import numpy as np

    monkeypatch.setattr(run_keys, "code_fingerprint", lambda module=None: "the code")
    configs = [
        {"a": 1, "b": [1, 2.5, (3, 4)], "c": {"z": 1, "y": {"x": None}}, "s": "é"},
        {"alpha": math.inf, "nested": {"c": -math.inf, "d": [math.nan]}},
        {1: "x", 2: {3: 4}}, {True: 1, False: 2}, {None: 1}, {1.5: "k"},
        {"t": (1, (2, 3))}, {"f": np.float64(0.1)}, {"f": np.float64(np.inf)}, {},
    ]
    for config in configs:
        payload = json.dumps({"config": run_keys.canonical(config),
                              "fedlib": run_keys.fedlib.__version__, "code": "the code"},
                             sort_keys=True, allow_nan=False)
        assert run_key(config) == hashlib.sha256(payload.encode()).hexdigest()[:20], config
        assert run_keys.config_text(config) == json.dumps(run_keys.canonical(config),
                                                          sort_keys=True, allow_nan=False)
    # Equal configs whatever their order or their containers; unequal ones differ.
    assert run_keys.config_text({"b": (1, 2), "a": 1}) == run_keys.config_text(
        {"a": 1, "b": [1, 2]})
    assert run_keys.config_text({"a": math.inf}) != run_keys.config_text({"a": -math.inf})
    with pytest.raises(TypeError):  # keys that cannot be ordered name no config
        run_keys.config_text({1: "x", "a": "y"})


def test_sweep_computes_once_then_reads_the_cache(log: Path) -> None:
    configs = [{"x": x} for x in range(5)]
    first = sweep("toy", configs, square_runner, workers=1, progress=False)
    assert sorted(first["y"]) == [0, 1, 4, 9, 16]
    assert len(calls(log)) == 5
    again = sweep("toy", configs, square_runner, workers=1, progress=False)
    pd.testing.assert_frame_equal(first, again)
    assert len(calls(log)) == 5  # nothing recomputed
    more = sweep("toy", configs + [{"x": 7}], square_runner, workers=1, progress=False)
    assert calls(log)[-1] == [7]
    assert list(more["y"]) == [0, 1, 4, 9, 16, 49]


def test_a_sweep_of_no_runs_is_an_empty_table(log: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for compute in ("1", "0"):  # also where only stored runs may be read
        monkeypatch.setenv("FEDLIB_COMPUTE", compute)
        runs = sweep("toy", [], square_runner, max_group_size=0, workers=1, progress=False)
        assert runs.empty and list(runs.columns) == ["run_key"]
    assert calls(log) == []


def test_grouping_batches_runs_sharing_a_key(log: Path) -> None:
    configs = [{"x": x, "seed": x % 2} for x in range(7)]
    sweep("grouped", configs, square_runner, batched=("x",), max_group_size=3,
          workers=1, progress=False)
    batches = sorted(calls(log))
    assert batches == [[0, 2, 4], [1, 3, 5], [6]]
    groups = plan_groups(configs, ("x",), 2)
    assert all(len({c["seed"] for c in g}) == 1 and len(g) <= 2 for g in groups)
    assert [len(g) for g in plan_groups(configs, ("x",))] == [4, 3]  # no size limit
    assert [len(g) for g in plan_groups(configs, ())] == [1] * 7  # nothing batched
    with pytest.raises(ValueError, match="max_group_size"):
        plan_groups(configs, ("x",), 0)


def test_check_group_names_the_fields_that_differ() -> None:
    check_group([{"x": 1, "seed": 0}, {"x": 2, "seed": 0}], ("x",))
    with pytest.raises(ValueError, match="differ only in x; these differ in seed"):
        check_group([{"x": 1, "seed": 0}, {"x": 2, "seed": 1}], ("x",))


def test_interrupted_sweep_keeps_finished_runs_and_resumes(log: Path) -> None:
    configs = [{"x": x} for x in range(4)] + [{"x": 4, "fail": True}]
    with pytest.raises(RuntimeError, match="x=4 failed"):
        sweep("resume", configs, square_runner, workers=1, progress=False)
    store = ResultStore("resume")
    assert all(store.has(run_key(c)) for c in configs[:4])
    assert not store.has(run_key(configs[4]))
    assert not list(store.folder.glob("*.tmp"))  # no half-written files
    fixed = configs[:4] + [{"x": 4}]
    table = sweep("resume", fixed, square_runner, workers=1, progress=False)
    assert calls(log)[-1] == [4]  # only the missing run was computed
    assert list(table["y"]) == [0, 1, 4, 9, 16]


def test_parallel_processes_give_the_same_table(log: Path) -> None:
    configs = [{"x": x} for x in range(6)]
    parallel = sweep("parallel", configs, square_runner, workers=2, progress=False)
    assert list(parallel["y"]) == [x * x for x in range(6)]
    assert sorted(x for batch in calls(log) for x in batch) == list(range(6))


def pid_runner(configs: list[dict]) -> list[pd.DataFrame]:
    """Toy runner: each run records the process that computed it."""
    return [pd.DataFrame({"x": [c["x"]], "pid": [os.getpid()]}) for c in configs]


def test_a_second_sweep_reuses_the_workers_unless_the_environment_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes outlive a sweep (each start imports torch and the runner), and a
    later sweep started the same way computes on them; a changed environment (a dataset
    or results folder) gets new ones, and the old ones are gone."""
    monkeypatch.setenv("SWEEP_TEST_STAGE", "one")
    first = sweep("pool-a", [{"x": x} for x in range(4)], pid_runner, workers=2,
                  progress=False)
    pool = sweeps._POOL[1]
    second = sweep("pool-b", [{"x": x} for x in range(4, 8)], pid_runner, workers=2,
                   progress=False)
    # The pool's worker processes, the first sweep's still among them (which worker
    # computes which run is the scheduler's choice: one may take every run).
    workers = set(pool._processes)
    assert os.getpid() not in set(first["pid"])  # computed on worker processes
    assert sweeps._POOL[1] is pool and len(workers) <= 2
    assert set(first["pid"]) <= workers and set(second["pid"]) <= workers
    monkeypatch.setenv("SWEEP_TEST_STAGE", "two")
    third = sweep("pool-c", [{"x": x} for x in range(8, 12)], pid_runner, workers=2,
                  progress=False)
    assert sweeps._POOL[1] is not pool and not set(third["pid"]) & workers
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


def test_a_failed_sweep_leaves_no_worker_behind(log: Path) -> None:
    """A run that raises stops the sweep's workers; the next sweep starts new ones."""
    with pytest.raises(RuntimeError, match="failed on purpose"):
        sweep("pool-fail", [{"x": 0}, {"x": 1, "fail": True}, {"x": 2}], square_runner,
              workers=2, progress=False)
    assert sweeps._POOL is None
    again = sweep("pool-fail", [{"x": 0}, {"x": 1}, {"x": 2}], square_runner, workers=2,
                  progress=False)
    assert list(again["y"]) == [0, 1, 4]


def test_duplicate_configs_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicates"):
        sweep("dup", [{"x": 1}, {"x": 1}], square_runner, workers=1, progress=False)


def test_store_rejects_path_like_experiment_names() -> None:
    with pytest.raises(ValueError, match="plain folder name"):
        ResultStore("../elsewhere")


@pytest.mark.slow
def test_sweep_on_a_local_ray_instance(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    # Ray workers import the runner by module name: let them find this file.
    here = str(Path(__file__).resolve().parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get(
        "PYTHONPATH")])))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    configs = [{"x": x} for x in range(4)]
    try:
        table = sweep("ray", configs, square_runner, max_group_size=2, batched=("x",),
                      ray_address="local", progress=False)
    except sweeps.RayStartError as error:
        # Load alone is no failure of the sweep: Ray's own startup wait is fixed.
        pytest.skip(f"Ray could not start on this machine as loaded now: {error}")
    assert list(table["y"]) == [0, 1, 4, 9]
    assert sorted(calls(log)) == [[0, 1], [2, 3]]


def test_fingerprint_covers_computing_modules_only(tmp_path, monkeypatch) -> None:
    package = tmp_path / "fedlib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text("STEP = 1\n")
    (package / "plots.py").write_text("COLOR = 'red'\n")
    monkeypatch.setattr(run_keys.fedlib, "__file__", str(package / "__init__.py"))

    def fingerprint() -> str:
        run_keys.code_fingerprint.cache_clear()
        return run_keys.code_fingerprint()

    original = fingerprint()
    (package / "plots.py").write_text("COLOR = 'blue'\n")
    assert fingerprint() == original
    (package / "engine.py").write_text("STEP = 2\n")
    assert fingerprint() != original
    run_keys.code_fingerprint.cache_clear()


def test_fingerprint_of_a_module_follows_its_imports_only(tmp_path, monkeypatch) -> None:
    package = tmp_path / "fedlib"
    (package / "experiments").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "experiments" / "__init__.py").write_text("")
    (package / "experiments" / "figure.py").write_text(
        "from fedlib.engine import STEP\n\ndef run():\n    from fedlib import noise\n")
    (package / "engine.py").write_text("import numpy\nSTEP = 1\n")
    (package / "noise.py").write_text("SCALE = 1\n")
    (package / "other.py").write_text("UNRELATED = 1\n")
    monkeypatch.setattr(run_keys.fedlib, "__file__", str(package / "__init__.py"))

    def fingerprint(module: str | None) -> str:
        run_keys.code_fingerprint.cache_clear()
        return run_keys.code_fingerprint(module)

    figure = "fedlib.experiments.figure"
    original, whole = fingerprint(figure), fingerprint(None)
    (package / "other.py").write_text("UNRELATED = 2\n")
    assert fingerprint(figure) == original  # not imported by the figure
    assert fingerprint(None) != whole  # but part of the whole library
    (package / "noise.py").write_text("SCALE = 2\n")  # imported inside a function
    assert fingerprint(figure) != original
    changed = fingerprint(figure)
    (package / "engine.py").write_text("import numpy\nSTEP = 2\n")
    assert fingerprint(figure) != changed
    assert fingerprint("tests.somewhere") == fingerprint(None)  # outside fedlib: everything
    run_keys.code_fingerprint.cache_clear()


def _stored(tmp_path: Path) -> tuple[ResultStore, str, pd.DataFrame]:
    store = ResultStore("damage", root=tmp_path)
    table = pd.DataFrame({"round": [1, 2, 3], "loss": [0.5, 0.25, 0.125], "tag": ["a", "b", "c"]})
    store.save("k1", table)
    return store, "k1", table


def test_a_stored_run_reads_back_equal(tmp_path: Path) -> None:
    store, key, table = _stored(tmp_path)
    pd.testing.assert_frame_equal(store.load(key), table)


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "other-layout",
                                    "edited-value", "other-key"])
def test_a_damaged_run_is_set_aside_and_computed_again(tmp_path, log, damage) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    store = ResultStore("toy")
    configs = [{"x": x} for x in range(3)]
    sweep("toy", configs, square_runner, workers=1, progress=False)
    key = run_key(configs[1])
    path = store.path(key)
    raw = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(b"not a parquet file at all" * 10)
    elif damage == "other-layout":  # a plain Parquet file without fedlib's metadata
        pd.DataFrame({"x": [1], "y": [999]}).to_parquet(path, index=False)
    elif damage == "edited-value":  # content changed, metadata kept: only the digest tells
        stored = pq.read_table(path)
        edited = stored.to_pandas().assign(y=[999])
        pq.write_table(pa.Table.from_pandas(edited, preserve_index=False)
                       .replace_schema_metadata(stored.schema.metadata), path)
    else:  # another run's file under this key
        path.write_bytes(store.path(run_key(configs[2])).read_bytes())
    with pytest.warns(RuntimeWarning, match="computed again"):
        table = sweep("toy", configs, square_runner, workers=1, progress=False)
    assert list(table["y"]) == [0, 1, 4]
    assert calls(log)[-1] == [1]  # only the damaged run was computed again
    assert len(list((store.folder / ".damaged").iterdir())) == 1  # kept for inspection
    pd.testing.assert_frame_equal(store.load(key), pd.DataFrame({"x": [1], "y": [1]}))


def test_byte_flips_never_give_a_different_table_silently(tmp_path: Path) -> None:
    store, key, table = _stored(tmp_path)
    raw = store.path(key).read_bytes()
    for position in range(4, len(raw) - 4, max(1, len(raw) // 97)):
        flipped = bytearray(raw)
        flipped[position] ^= 0x5A
        store.path(key).write_bytes(bytes(flipped))
        try:
            loaded = store.load(key)
        except run_cache.DamagedRunError:
            continue
        pd.testing.assert_frame_equal(loaded, table)  # the flip hit nothing that matters


def _sweep_script() -> str:
    return f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from fedlib.sweeps import sweep
import test_sweeps

configs = [{{"x": x}} for x in range(8)]
sweep("killed", configs, test_sweeps.slow_runner, workers=2, progress=False)
"""


def slow_runner(configs: list[dict]) -> list[pd.DataFrame]:
    """Runner that logs its pid, takes its time, and (once, if asked) kills its own worker."""
    log = Path(os.environ["SWEEP_TEST_LOG"])
    with log.open("a") as handle:
        handle.write(json.dumps({"pid": os.getpid(), "x": [c["x"] for c in configs]}) + "\n")
    marker = log.with_suffix(".killed")
    if os.environ.get("SWEEP_KILL_WORKER") and configs[0]["x"] == 3 and not marker.exists():
        marker.write_text("once")
        os.kill(os.getpid(), 9)
    time.sleep(0.6)
    return [pd.DataFrame({"x": [c["x"]], "y": [c["x"] ** 2]}) for c in configs]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _worker_pids(log: Path) -> set[int]:
    return {json.loads(line)["pid"] for line in log.read_text().splitlines()} if log.exists() \
        else set()


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["sweep", "worker"])
def test_a_sweep_killed_hard_resumes_and_leaves_no_process(tmp_path, log, monkeypatch,
                                                            victim) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent)}
    if victim == "worker":
        env["SWEEP_KILL_WORKER"] = "1"
    process = subprocess.Popen([sys.executable, "-c", _sweep_script()], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    store = ResultStore("killed")
    deadline = time.monotonic() + 120
    while len(list(store.folder.glob("*.parquet"))) < 2 and process.poll() is None:
        assert time.monotonic() < deadline, "the sweep never finished two runs"
        time.sleep(0.1)
    if victim == "sweep":
        process.kill()
    process.wait(timeout=120)
    if victim == "worker":
        assert process.returncode != 0  # the broken pool stops the sweep with an error
    finished = {p.stem for p in store.folder.glob("*.parquet")}
    assert len(finished) >= 2
    workers = _worker_pids(log)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in workers if _alive(pid)], "workers outlived their sweep"
    before = len(log.read_text().splitlines())
    monkeypatch.delenv("SWEEP_KILL_WORKER", raising=False)
    table = sweep("killed", [{"x": x} for x in range(8)], slow_runner, workers=1, progress=False)
    assert list(table["y"]) == [x * x for x in range(8)]
    recomputed = [json.loads(line)["x"][0] for line in log.read_text().splitlines()[before:]]
    assert len(recomputed) == 8 - len(finished), (finished, set(table["run_key"]), recomputed)


def test_run_parts_renders_the_stored_parts_and_says_which_are_not(
        log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts = {"a": [{"x": 1}, {"x": 2}], "b": [{"x": 3}], "c": [{"x": 4}, {"x": 5}]}
    asked: list[tuple[str, ...]] = []

    def run(chosen: tuple[str, ...]) -> pd.DataFrame:
        asked.append(chosen)
        return sweep("toy", [c for p in chosen for c in parts[p]], square_runner,
                     workers=1, progress=False)

    sweep("toy", parts["a"] + parts["c"][:1], square_runner, workers=1, progress=False)
    computed = len(calls(log))
    with run_cache.stored_only():
        runs, left_out = sweeps.run_parts(run, ["a", "b", "c"])
    assert sorted(runs["x"]) == [1, 2]  # "c" has one run of two: left out whole
    assert left_out == {"b": "1 of 1 runs of toy are neither cached nor published",
                        "c": "1 of 2 runs of toy are neither cached nor published"}
    assert asked == [("a",), ("b",), ("c",)] and len(calls(log)) == computed
    with run_cache.stored_only(), pytest.raises(run_cache.MissingRunsError, match="b: 1 of 1"):
        sweeps.run_parts(run, ["b"])
    parts["none"] = []  # a part with no runs at this tier shows nothing by itself
    with run_cache.stored_only(), pytest.raises(run_cache.MissingRunsError, match="b: 1 of 1"):
        sweeps.run_parts(run, ["b", "none"])
    with run_cache.stored_only():
        runs, left_out = sweeps.run_parts(run, ["a", "none"])
    assert sorted(runs["x"]) == [1, 2] and left_out == {}
    assert runs["x"].dtype == "int64"  # the empty part turns no integer into a float
    asked.clear()
    runs, left_out = sweeps.run_parts(run, ["a", "b", "c"])  # computing: one call
    assert asked == [("a", "b", "c")] and left_out == {}
    assert sorted(runs["x"]) == [1, 2, 3, 4, 5] and len(calls(log)) > computed
    monkeypatch.setenv("FEDLIB_COMPUTE", "0")
    assert sweeps.run_parts(run, ["a", "b", "c"])[1] == {}  # now all stored


def test_run_parts_leaves_out_what_this_machine_cannot_compute(log: Path) -> None:
    """Where runs may be computed but one part's cannot (runs made on a GPU where torch
    sees none, say), the parts are run one by one and only that part is left out."""
    parts = {"a": [{"x": 1}], "gpu": [{"x": 2}], "c": [{"x": 3}]}
    asked: list[tuple[str, ...]] = []

    def run(chosen: tuple[str, ...]) -> pd.DataFrame:
        asked.append(chosen)
        if "gpu" in chosen:
            raise run_cache.MissingRunsError("1 of 1 runs need a GPU. Run them on one")
        return sweep("toy", [c for p in chosen for c in parts[p]], square_runner,
                     workers=1, progress=False)

    runs, left_out = sweeps.run_parts(run, ["a", "gpu", "c"])
    assert sorted(runs["x"]) == [1, 3] and left_out == {"gpu": "1 of 1 runs need a GPU"}
    assert asked == [("a", "gpu", "c"), ("a",), ("gpu",), ("c",)]
    with pytest.raises(run_cache.MissingRunsError, match="need a GPU"):
        sweeps.run_parts(run, ["gpu"])


class _SlowRay:
    """A stand-in for the ray module whose node times out the first ``failures`` starts."""

    def __init__(self, failures: int, message: str = "The current node timed out during "
                 "startup. This could happen because some of the raylet failed to startup"):
        self.failures, self.message, self.starts, self.shutdowns = failures, message, 0, 0

    def init(self, **_: object) -> None:
        self.starts += 1
        if self.starts <= self.failures:
            raise Exception(self.message)

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_a_local_ray_start_that_times_out_is_tried_again() -> None:
    ray = _SlowRay(failures=sweeps.RAY_LOCAL_START_TRIES - 1)
    sweeps._start_local_ray(ray)
    assert ray.starts == sweeps.RAY_LOCAL_START_TRIES
    assert ray.shutdowns == sweeps.RAY_LOCAL_START_TRIES - 1


def test_a_local_ray_start_that_always_times_out_says_so() -> None:
    ray = _SlowRay(failures=sweeps.RAY_LOCAL_START_TRIES)
    with pytest.raises(sweeps.RayStartError, match="leave ray_address unset"):
        sweeps._start_local_ray(ray)
    assert ray.starts == sweeps.RAY_LOCAL_START_TRIES


def test_another_ray_start_error_is_not_retried() -> None:
    ray = _SlowRay(failures=1, message="address already in use")
    with pytest.raises(Exception, match="address already in use"):
        sweeps._start_local_ray(ray)
    assert ray.starts == 1
