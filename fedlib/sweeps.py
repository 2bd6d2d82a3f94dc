"""Cached, resumable sweeps over grids of runs.

A figure is a grid of independent runs. Each run is a JSON-able config dict;
its key is a hash of the config together with the fedlib version and a
fingerprint of the fedlib source it depends on (the module of the sweep's
runner and every fedlib module that module imports), so that editing that code
invalidates those runs and nothing else. A finished run is stored as a tidy
table (Parquet) written atomically, so an interrupted sweep loses nothing
already finished and a rerun skips it.

Runs that differ only in the fields an engine can batch (for PPSGD: step size,
personalization, noise and clipping) are grouped and executed in one
vectorized call; groups run in parallel on local processes or on a Ray cluster.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from multiprocessing import get_context
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

import fedlib
from fedlib import paths
from fedlib.environment import environment_description
from fedlib.machine import machine_description

Config = Mapping[str, Any]
GroupRunner = Callable[[list[dict[str, Any]]], list[pd.DataFrame]]


PRESENTATION_MODULES = frozenset({
    "plots.py", "claims.py", "figures.py", "chapter.py", "status.py", "bench.py", "findings.py",
})
"""Basenames of the modules that draw, judge or report results but never compute
them (a paper's ``claims.py`` and ``figures.py`` among them): they are never part
of a run's key, and the search for what a run imports does not go through them."""

STORAGE_MODULES = frozenset({"sweeps.py", "paths.py", "published.py"})
"""Package-level modules that decide where and how finished runs are kept, never
what a run computes (a dataset's content is pinned by its checksum in the
registry, which is part of the key): editing them keeps every cached run, and the
search for what a run imports does not go through them."""


def _module_file(root: Path, name: str) -> Path | None:
    """Source file of the fedlib module ``name`` (dotted), or None if there is none."""
    top, *parts = name.split(".")
    if top != "fedlib":
        return None
    base = root.joinpath(*parts) if parts else root
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` in ``module`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    anchor = parts[: len(parts) - node.level]
    return ".".join(anchor + ([node.module] if node.module else []))


def _defining_modules(root: Path, module: str, name: str, depth: int = 0) -> set[str]:
    """The fedlib module(s) that define ``name`` as imported ``from module``.

    A submodule of that name is the module itself. A name a package's
    ``__init__`` only re-exports is followed to the submodule it comes from, so
    that importing one loader through ``fedlib.data`` does not make a run depend
    on every other loader the package face lists. A name the ``__init__``
    defines itself (or one that cannot be followed) is the ``__init__``.
    """
    submodule = f"{module}.{name}"
    if _module_file(root, submodule) is not None:
        return {submodule}
    path = _module_file(root, module)
    if path is None:
        return set()
    if path.name != "__init__.py" or depth > 10:
        return {module}
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module + ".__init__", node)
            for alias in node.names:
                if (alias.asname or alias.name) == name and source.startswith("fedlib"):
                    return _defining_modules(root, source, alias.name, depth + 1)
    return {module}


def _fedlib_imports(root: Path, name: str, path: Path) -> set[str]:
    """The fedlib modules whose code ``path`` uses through its imports (anywhere in
    the file, lazily or not), each resolved to the module that defines it."""
    found: set[str] = set()
    context = name + ".__init__" if path.name == "__init__.py" else name
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "fedlib" and _module_file(root, alias.name):
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(context, node)
            if base.split(".")[0] != "fedlib":
                continue
            for alias in node.names:
                found |= _defining_modules(root, base, alias.name)
    return found


def code_files(module: str | None = None) -> list[str]:
    """The fedlib source files (paths relative to the package) a run key covers.

    With ``module`` (a dotted fedlib module, e.g. the one defining a sweep's
    runner): that module and every fedlib module it uses, transitively (found
    statically, so imports inside functions count), plus ``fedlib/__init__.py``
    (the version). Without, or for a module outside fedlib: every module. The
    presentation modules (:data:`PRESENTATION_MODULES`) and the storage modules
    (:data:`STORAGE_MODULES`) are never included.
    """
    root = Path(fedlib.__file__).resolve().parent
    if module is None or _module_file(root, module) is None:
        files = sorted(root.rglob("*.py"))
    else:
        seen: set[str] = set()
        pending = [module, "fedlib"]
        while pending:
            name = pending.pop()
            path = _module_file(root, name)
            if (name in seen or path is None or path.name in PRESENTATION_MODULES
                    or path.relative_to(root).as_posix() in STORAGE_MODULES):
                continue
            seen.add(name)
            pending.extend(_fedlib_imports(root, name, path) - seen)
        files = sorted(path for name in seen if (path := _module_file(root, name)) is not None)
    relative = [path.relative_to(root).as_posix() for path in files]
    return [
        name for name in relative
        if name.rsplit("/", 1)[-1] not in PRESENTATION_MODULES and name not in STORAGE_MODULES
    ]


@cache
def code_fingerprint(module: str | None = None) -> str:
    """SHA-256 over the source of the fedlib modules that can change a result.

    The files are those of :func:`code_files`: editing any of them invalidates
    the cached runs that depend on them, and editing anything else (a claim, a
    figure, an unrelated loader) does not.
    """
    root = Path(fedlib.__file__).resolve().parent
    digest = hashlib.sha256()
    for relative in code_files(module):
        digest.update(relative.encode())
        digest.update((root / relative).read_bytes())
    return digest.hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # inf / nan are not JSON; keep them distinct and stable
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


RUN_KEY_LENGTH = 20
"""Hex digits of a run key (:func:`run_key`)."""

_RUN_KEY = re.compile(f"[0-9a-f]{{{RUN_KEY_LENGTH}}}")


def is_run_key(value: Any) -> bool:
    """Whether ``value`` has the form of a run key: :data:`RUN_KEY_LENGTH` lowercase hex
    digits (and so can never name a path outside its folder)."""
    return isinstance(value, str) and _RUN_KEY.fullmatch(value) is not None


def run_key(config: Config, module: str | None = None) -> str:
    """Stable key of a run: hash of its full config, the fedlib version and the
    source of the fedlib code it depends on (see :func:`code_fingerprint`)."""
    payload = json.dumps(
        {
            "config": _canonical(dict(config)),
            "fedlib": fedlib.__version__,
            "code": code_fingerprint(module),
        },
        sort_keys=True,
        allow_nan=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:RUN_KEY_LENGTH]


STORE_LAYOUT = "fedlib-run/1"
"""Layout tag written into every cached run: a file of another layout is set aside."""

_METADATA_KEY = b"fedlib"


def content_digest(table: pd.DataFrame) -> str:
    """SHA-256 of a run table's columns, dtypes and values (the cache's content check)."""
    return content_digests(table, [len(table)])[0]


def content_digests(table: pd.DataFrame, sizes: Sequence[int]) -> list[str]:
    """:func:`content_digest` of each of the consecutive slices of ``table`` whose numbers
    of rows are ``sizes`` (the runs of one table, hashed in one pass: a row's hash does
    not depend on the other rows)."""
    if sum(sizes) != len(table):
        raise ValueError(f"slices of {sum(sizes)} rows in all for a table of {len(table)}")
    header = json.dumps([[str(c), str(table[c].dtype)] for c in table.columns]).encode()
    rows = pd.util.hash_pandas_object(table, index=False).to_numpy()
    bounds = np.cumsum([0, *sizes])
    digests = []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        digest = hashlib.sha256(header)
        digest.update(rows[start:stop].tobytes())
        digests.append(digest.hexdigest())
    return digests


class MissingRunsError(RuntimeError):
    """Runs that are neither cached nor published (or published but damaged), where
    computing is not allowed (``FEDLIB_COMPUTE=0``)."""


class DamagedRunError(RuntimeError):
    """A cached or published run that cannot be trusted (unreadable, other layout, content
    changed)."""


class ResultStore:
    """Parquet files of finished runs, one per run key, under ``root/experiment``.

    Every file carries its layout tag, its key and a digest of its content; a
    file that fails any of these checks is moved to ``.damaged/`` beside it with a
    warning and its run is computed again, never merged as found.
    """

    def __init__(self, experiment: str, root: Path | None = None) -> None:
        if not experiment or any(c in experiment for c in "/\\") or experiment.startswith("."):
            raise ValueError(f"experiment name {experiment!r} must be a plain folder name")
        self.folder = (root or paths.results_dir()) / experiment

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.parquet"

    def has(self, key: str) -> bool:
        return self.path(key).is_file()

    def load(self, key: str) -> pd.DataFrame:
        """The run stored under ``key``; :class:`DamagedRunError` if it cannot be trusted."""
        path = self.path(key)
        try:
            stored = pq.read_table(path)
            table = stored.to_pandas()
        except Exception as error:  # any reader failure: truncated, empty, not Parquet
            raise DamagedRunError(f"{path.name} cannot be read ({error})") from error
        raw = (stored.schema.metadata or {}).get(_METADATA_KEY)
        try:
            meta = json.loads(raw) if raw else {}
        except ValueError:
            meta = {}
        if meta.get("layout") != STORE_LAYOUT or meta.get("key") != key:
            raise DamagedRunError(
                f"{path.name} is not a run of this layout ({STORE_LAYOUT}) and key")
        if content_digest(table) != meta.get("sha256"):
            raise DamagedRunError(f"{path.name} does not match its content digest")
        return table

    def provenance(self, key: str) -> dict[str, Any]:
        """Where the run under ``key`` comes from (empty for files written without it)."""
        raw = (pq.read_schema(self.path(key)).metadata or {}).get(_METADATA_KEY)
        return dict(json.loads(raw).get("provenance") or {}) if raw else {}

    def read(self, key: str) -> pd.DataFrame | None:
        """The run under ``key``, or None when there is none or it was damaged (then
        it is moved to ``.damaged/`` with a warning, so that it is computed again)."""
        if not self.has(key):
            return None
        try:
            return self.load(key)
        except DamagedRunError as error:
            aside = self.set_aside(key)
            warnings.warn(f"cached run {error}; moved to {aside.relative_to(self.folder)} and "
                          "computed again", RuntimeWarning, stacklevel=2)
            return None

    def set_aside(self, key: str) -> Path:
        """Move the file of ``key`` to ``.damaged/`` (kept for inspection, never read)."""
        folder = self.folder / ".damaged"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{key}.{time.strftime('%Y%m%dT%H%M%S')}.{os.getpid()}.parquet"
        os.replace(self.path(key), target)
        return target

    def save(self, key: str, table: pd.DataFrame, provenance: dict[str, Any] | None = None
             ) -> None:
        """Write atomically (a temporary file in the same folder, then a rename), with
        the layout tag, the key and the content digest of what a reader will get back,
        and where the run comes from (``provenance``, read back by :meth:`provenance`:
        its config, runner module, tier, timing and machine, as :func:`sweep` records
        them)."""
        arrow = pa.Table.from_pandas(table, preserve_index=False)
        meta = {"layout": STORE_LAYOUT, "key": key,
                "sha256": content_digest(arrow.to_pandas()), "provenance": provenance or {}}
        arrow = arrow.replace_schema_metadata(
            {**(arrow.schema.metadata or {}), _METADATA_KEY: json.dumps(meta).encode()})
        with paths.atomic_path(self.path(key)) as tmp:
            pq.write_table(arrow, tmp)


_TIER_LABEL: ContextVar[str] = ContextVar("fedlib_tier", default="")


_STORED_ONLY: ContextVar[bool] = ContextVar("fedlib_stored_only", default=False)


@contextmanager
def stored_only() -> Iterator[None]:
    """Inside the block, sweeps use cached and published runs only and raise
    :class:`MissingRunsError` instead of computing (what ``FEDLIB_COMPUTE=0`` does for
    the whole process)."""
    token = _STORED_ONLY.set(True)
    try:
        yield
    finally:
        _STORED_ONLY.reset(token)


def run_parts(run: Callable[[tuple[str, ...]], pd.DataFrame], parts: Sequence[str]
              ) -> tuple[pd.DataFrame, dict[str, str]]:
    """The runs of a chapter's ``parts`` (its figures: ``run(parts)`` returns their runs)
    and the parts left out, each with the reason.

    Where runs may be computed this is one call with every part (a sweep spreads them
    over its workers) and nothing is left out, unless that call raises
    :class:`MissingRunsError` (runs this machine cannot compute, such as runs made on a
    GPU where torch sees none, that are not stored): then, as where only stored runs may
    be read (``FEDLIB_COMPUTE=0`` or :func:`stored_only`), it is one call per part: a
    part whose runs cannot all be had is left out, so that a chapter shows the parts it
    has; when no part can be had, :class:`MissingRunsError` is raised as one call would
    raise it.
    """
    if paths.compute_allowed() and not _STORED_ONLY.get():
        try:
            return run(tuple(parts)), {}
        except MissingRunsError:
            if len(parts) == 1:
                raise
    frames, left_out = [], {}
    for part in parts:
        try:
            frames.append(run((part,)))
        except MissingRunsError as error:
            left_out[part] = str(error).split(". ", 1)[0]
    # A part with no runs at this tier adds nothing (and, empty, would turn the integer
    # columns of the others to floats).
    shown = [frame for frame in frames if len(frame)]
    if left_out and not shown:
        raise MissingRunsError(f"no part of {', '.join(parts)} has all its runs stored: "
                               + "; ".join(f"{p}: {why}" for p, why in left_out.items()))
    return pd.concat(shown or frames, ignore_index=True), left_out


_SWEPT: ContextVar[dict[str, list[str]] | None] = ContextVar("fedlib_swept", default=None)


def record_swept_runs() -> dict[str, list[str]]:
    """Start recording the run keys every :func:`sweep` returns from now on (in this
    context); the returned dict maps each experiment to its keys, in first-seen order
    (a chapter shows where the runs behind its page come from)."""
    swept: dict[str, list[str]] = {}
    _SWEPT.set(swept)
    return swept


def set_tier_label(scale: str) -> None:
    """Label every run computed from now on (in this context) with ``scale`` (a chapter
    sets its tier once, at its start)."""
    _TIER_LABEL.set(scale)


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def group_key(config: Config, batched: Sequence[str]) -> tuple:
    """What runs batched together must share: every field of ``config`` not in ``batched``."""
    return tuple(sorted((k, _canonical(v)) for k, v in config.items() if k not in batched))


def check_group(configs: Sequence[Config], batched: Sequence[str]) -> None:
    """Raise unless ``configs`` (one runner call) differ only in the ``batched`` fields."""
    if not configs:
        raise ValueError("a group needs at least one config")
    first = group_key(configs[0], batched)
    for config in configs[1:]:
        if group_key(config, batched) != first:
            differing = sorted(
                k for k in set(config) | set(configs[0])
                if k not in batched and config.get(k) != configs[0].get(k)
            )
            raise ValueError(
                "configs run together must differ only in " + ", ".join(batched)
                + f"; these differ in {', '.join(differing)}"
            )


def plan_groups(
    configs: Sequence[dict[str, Any]],
    batched: Sequence[str],
    max_group_size: int | None = None,
) -> list[list[dict[str, Any]]]:
    """Split configs into batches that differ only in the ``batched`` fields,
    at most ``max_group_size`` each (None: no limit)."""
    if max_group_size is not None and max_group_size < 1:
        raise ValueError(f"max_group_size must be >= 1 or None, got {max_group_size}")
    groups: dict[Hashable, list[dict[str, Any]]] = {}
    for config in configs:
        groups.setdefault(repr(group_key(config, batched)), []).append(config)
    size = max_group_size or max(1, len(configs))
    return [list(chunk) for members in groups.values() for chunk in _chunks(members, size)]


def _exit_with_parent(parent: int) -> None:
    """Watch the parent process; end this worker as soon as the parent is gone."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _worker_init(threads: int, parent: int) -> None:
    """Set a worker's torch threads, and make it end with the sweep that started it
    (a sweep killed hard leaves no worker computing for nobody)."""
    import torch

    torch.set_num_threads(threads)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _run_group_in_worker(runner: GroupRunner, group: list[dict[str, Any]]
                         ) -> tuple[list[pd.DataFrame], dict[str, Any]]:
    """The runner's tables for ``group`` and how the call went: wall-clock and CPU seconds
    (of this process, all its threads), torch's thread count, the machine."""
    import torch

    wall, cpu = time.perf_counter(), time.process_time()
    tables = runner(group)
    timing = {"group_size": len(group),
              "group_wall_seconds": round(time.perf_counter() - wall, 3),
              "group_cpu_seconds": round(time.process_time() - cpu, 3),
              "torch_threads": torch.get_num_threads(), "machine": machine_description(),
              "environment": environment_description(),
              "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    return tables, timing


def sweep(
    experiment: str,
    configs: Sequence[Config],
    runner: GroupRunner,
    *,
    batched: Sequence[str] = (),
    max_group_size: int | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    store: ResultStore | None = None,
) -> pd.DataFrame:
    """Run every config not yet cached and return all runs as one tidy table.

    Parameters
    ----------
    experiment
        Name of the results folder.
    configs
        Run configs (JSON-able dicts); each result gets a ``run_key`` column.
    runner
        Module-level function taking a list of configs (one group) and
        returning one table per config, in order.
    batched, max_group_size
        Configs that differ only in the ``batched`` fields go to one runner
        call, at most ``max_group_size`` of them (None: no limit). With no
        batched field every run is a call of its own.
    workers
        Local processes (default: all cores; 1 runs in this process).
    ray_address
        Run the groups as Ray tasks on this cluster (``"auto"`` or
        ``"ray://host:10001"``, or ``"local"`` to start a local instance).
    progress
        Show a progress bar (in runs).
    """
    store = store or ResultStore(experiment)
    configs = [dict(c) for c in configs]
    if not configs:  # e.g. a figure with no runs at this tier: nothing to run or read
        return pd.DataFrame({"run_key": pd.Series(dtype=object)})
    module = getattr(runner, "__module__", None)
    keys = [run_key(c, module) for c in configs]
    if len(set(keys)) != len(keys):
        raise ValueError("configs contain duplicates: every run must differ in some field")
    cached = {k: table for k in keys if (table := store.read(k)) is not None}
    found, damaged, folder = _published_runs(experiment, [k for k in keys if k not in cached])
    cached.update(found)
    pending = [c for c, k in zip(configs, keys, strict=True) if k not in cached]
    if pending and (_STORED_ONLY.get() or not paths.compute_allowed()):
        raise MissingRunsError(_missing_runs_message(
            experiment, len(configs), len(pending) - len(damaged), damaged, folder))
    if damaged:
        warnings.warn(_damaged_runs_warning(experiment, damaged, folder), RuntimeWarning,
                      stacklevel=2)
    groups = plan_groups(pending, batched, max_group_size)

    bar = tqdm(total=len(configs), initial=len(configs) - len(pending), disable=not progress,
               desc=experiment, unit="run")

    def finish(group: list[dict[str, Any]], tables: list[pd.DataFrame],
               timing: dict[str, Any]) -> None:
        if len(tables) != len(group):
            raise RuntimeError(f"runner returned {len(tables)} tables for {len(group)} configs")
        members = [run_key(config, module) for config in group]
        for config, key, table in zip(group, members, tables, strict=True):
            store.save(key, table,
                       {**timing, "experiment": experiment, "module": module,
                        "runner": getattr(runner, "__qualname__", ""),
                        "tier": _TIER_LABEL.get(), "config": _canonical(config),
                        "group": members})
        bar.update(len(group))

    try:
        if groups:
            if ray_address is not None:
                _run_on_ray(groups, runner, ray_address, finish)
            else:
                _run_locally(groups, runner, workers, finish)
    finally:
        bar.close()

    swept = _SWEPT.get()
    if swept is not None:
        known = swept.setdefault(experiment, [])
        seen = set(known)
        known.extend(k for k in dict.fromkeys(keys) if k not in seen)
    tables = []
    for key in keys:
        table = cached[key] if key in cached else store.load(key)
        table.insert(0, "run_key", key)
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def _published_runs(experiment: str, keys: list[str]
                    ) -> tuple[dict[str, pd.DataFrame], dict[str, str], str]:
    """The published runs of ``keys`` (checked), the damaged ones with why, and the
    experiment's published folder as a message shows it."""
    if not keys:
        return {}, {}, ""
    from fedlib.published import PublishedStore

    published = PublishedStore(experiment)
    found, damaged = published.find(keys)
    return found, damaged, paths.shown(published.folder)


def _damage(damaged: Mapping[str, str]) -> str:
    """What is wrong with damaged published runs, one clause per file."""
    return "; ".join(sorted(set(damaged.values())))


def _missing_runs_message(experiment: str, total: int, absent: int,
                          damaged: Mapping[str, str], folder: str) -> str:
    """Why a sweep that may not compute cannot return its runs. The first sentence says
    which runs are absent and which are damaged (a chapter shows it on its page), the
    rest what to do about each."""
    counts = []
    if absent:
        counts.append(f"{absent} of {total} runs of {experiment} are neither cached nor "
                      "published")
    if damaged:
        counts.append((f"{len(damaged)}" if absent else
                       f"{len(damaged)} of {total} runs of {experiment}")
                      + f" are published but damaged ({_damage(damaged)})")
    fixes = []
    if absent:
        fixes.append("compute them (unset FEDLIB_COMPUTE), or publish them from a machine "
                     "that has them (python -m fedlib.published export --tier <tier>)")
    if damaged:
        fixes.append(f"restore the damaged ones from git (git checkout -- {folder}), or "
                     "compute them (unset FEDLIB_COMPUTE) and export them again "
                     "(python -m fedlib.published export --tier <tier>)")
    return (" and ".join(counts) + ". Computing is off here (FEDLIB_COMPUTE=0 or "
            "stored_only()): " + "; ".join(fixes))


def _damaged_runs_warning(experiment: str, damaged: Mapping[str, str], folder: str) -> str:
    return (f"{len(damaged)} published runs of {experiment} are damaged ({_damage(damaged)}): "
            f"computing them instead; restore the published files from git (git checkout -- "
            f"{folder}) or export the computed runs again")


def _run_locally(groups, runner, workers, finish) -> None:
    cores = os.cpu_count() or 1
    workers = min(workers or cores, len(groups))
    if workers <= 1:
        for group in groups:
            finish(group, *_run_group_in_worker(runner, group))
        return
    threads = max(1, cores // workers)
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=_worker_init,
        initargs=(threads, os.getpid()),
    ) as pool:
        futures: dict[Future, list[dict[str, Any]]] = {
            pool.submit(_run_group_in_worker, runner, group): group for group in groups
        }
        try:
            remaining = set(futures)
            while remaining:
                done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
                for future in done:
                    finish(futures[future], *future.result())
        except BaseException:
            # Interrupted or failed: finished runs are saved already; stop the
            # workers now instead of letting them finish groups nobody will save.
            for future in futures:
                future.cancel()
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            raise


RAY_CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a Ray cluster's port to answer before giving up on its address."""

_RAY_PORTS = {"ray": 10001}
"""Default port of an address's scheme (Ray Client); an address without one names the
cluster's GCS, whose default port is 6379."""


def _ray_endpoint(address: str) -> tuple[str, int] | None:
    """Host and port a ``ray_address`` connects to; None where Ray finds the cluster
    itself (``"local"`` starts one, ``"auto"`` without ``RAY_ADDRESS`` reads its notes)."""
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "").strip() or "auto"
    if address in ("local", "auto"):
        return None
    parts = urlsplit(address if "://" in address else f"gcs://{address}")
    try:
        port = parts.port or _RAY_PORTS.get(parts.scheme, 6379)
    except ValueError as error:
        raise ValueError(f"ray_address={address!r} has no valid port ({error}); write it "
                         "as host:port or ray://host:port") from error
    if not parts.hostname:
        raise ValueError(f"ray_address={address!r} names no host; write it as host:port or "
                         "ray://host:port, or use 'local' or 'auto'")
    return parts.hostname, port


def check_ray_address(address: str, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """Raise a ValueError naming ``address`` unless its host answers on its port within
    ``timeout`` seconds (Ray itself retries an unreachable cluster for many minutes)."""
    endpoint = _ray_endpoint(address)
    if endpoint is None:
        return
    host, port = endpoint
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as error:
        raise ValueError(
            f"ray_address={address!r}: nothing answers at {host}:{port} within {timeout:g} s "
            f"({error}); start the cluster there (ray start --head), correct the address, or "
            "leave ray_address unset to run on local processes") from error


class RayStartError(RuntimeError):
    """Ray's local instance did not come up in the time Ray itself allows."""


RAY_LOCAL_START_TRIES = 3
"""Starts of a local Ray instance before giving up: Ray waits a fixed 30 s for its node to
register, which a loaded machine of few cores can overrun."""


def _start_local_ray(ray) -> None:
    """Start a local Ray instance, trying again when its node times out during startup."""
    for attempt in range(1, RAY_LOCAL_START_TRIES + 1):
        try:
            ray.init(include_dashboard=False, log_to_driver=False)
            return
        except Exception as error:  # Ray raises a bare Exception for this
            if "timed out during startup" not in str(error):
                raise
            ray.shutdown()
            if attempt == RAY_LOCAL_START_TRIES:
                raise RayStartError(
                    f"the local Ray instance timed out during startup {attempt} times (Ray "
                    "waits a fixed 30 s for its node; a machine this loaded overruns it): run "
                    "again when the machine is less busy, or leave ray_address unset to run "
                    "on local processes") from error


def _run_on_ray(groups, runner, address, finish) -> None:
    loaded = sys.modules.get("ray")
    if loaded is None or not loaded.is_initialized():
        check_ray_address(address)
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        if address == "local":
            _start_local_ray(ray)
        else:
            ray.init(address=address, log_to_driver=False)
    try:
        remote = ray.remote(_run_group_in_worker)
        refs = {remote.remote(runner, group): group for group in groups}
        remaining = list(refs)
        while remaining:
            done, remaining = ray.wait(remaining, num_returns=1)
            for ref in done:
                finish(refs[ref], *ray.get(ref))
    finally:
        if started_here:
            ray.shutdown()
