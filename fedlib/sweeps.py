"""Cached, resumable sweeps over grids of runs: the executor.

A figure is a grid of independent runs. Each run is a JSON-able config dict named by
its key (:mod:`fedlib.runs.keys`: the config, the fedlib version and the source of the
code it depends on), so that editing that code invalidates those runs and nothing else.
A finished run is stored in the local cache (:mod:`fedlib.runs.cache`) written
atomically, so an interrupted sweep loses nothing already finished and a rerun skips it;
a run published with the project (:mod:`fedlib.runs.published`) is read instead of
computed.

Runs that differ only in the fields an engine can batch (for PPSGD: step size,
personalization, noise and clipping) are grouped and executed in one vectorized call;
groups run in parallel on local processes or on a Ray cluster. Local worker processes are
kept between the sweeps of a process started the same way (a chapter's sweeps, a tuning
search's steps): each start costs an import of torch and the runner's modules.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
from tqdm import tqdm

from fedlib import paths
from fedlib.runs.cache import (
    _STORED_ONLY,
    _SWEPT,
    _TIER_LABEL,
    MissingRunsError,
    ResultStore,
)
from fedlib.runs.environment import environment_description
from fedlib.runs.gaps import record_gap
from fedlib.runs.keys import Config, canonical, run_key
from fedlib.runs.machine import machine_description

GroupRunner = Callable[[list[dict[str, Any]]], list[pd.DataFrame]]


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


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def group_key(config: Config, batched: Sequence[str]) -> tuple:
    """What runs batched together must share: every field of ``config`` not in ``batched``."""
    return tuple(sorted((k, canonical(v)) for k, v in config.items() if k not in batched))


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
        record_gap(experiment, len(configs), len(pending) - len(damaged), len(damaged))
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
                        "tier": _TIER_LABEL.get(), "config": canonical(config),
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


_PUBLISHED: dict[Any, Any] = {}
"""The published store of each experiment folder this process's sweeps read: it keeps the
runs it found while its files are unchanged, so that many sweeps over the same runs (a
chapter's figures, a tuning search replayed) read and check each once."""


def _published_runs(experiment: str, keys: list[str]
                    ) -> tuple[dict[str, pd.DataFrame], dict[str, str], str]:
    """The published runs of ``keys`` (checked), the damaged ones with why, and the
    experiment's published folder as a message shows it."""
    if not keys:
        return {}, {}, ""
    from fedlib.runs.published import PublishedStore

    folder = paths.published_dir() / experiment
    published = _PUBLISHED.get(folder)
    if published is None:
        published = _PUBLISHED[folder] = PublishedStore(experiment)
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
                     "that has them (python -m fedlib.runs export --tier <tier>)")
    if damaged:
        fixes.append(f"restore the damaged ones from git (git checkout -- {folder}), or "
                     "compute them (unset FEDLIB_COMPUTE) and export them again "
                     "(python -m fedlib.runs export --tier <tier>)")
    return (" and ".join(counts) + ". Computing is off here (FEDLIB_COMPUTE=0 or "
            "stored_only()): " + "; ".join(fixes))


def _damaged_runs_warning(experiment: str, damaged: Mapping[str, str], folder: str) -> str:
    return (f"{len(damaged)} published runs of {experiment} are damaged ({_damage(damaged)}): "
            f"computing them instead; restore the published files from git (git checkout -- "
            f"{folder}) or export the computed runs again")


_POOL: tuple[tuple[Any, ...], ProcessPoolExecutor] | None = None
"""The worker processes of this process's last local sweep, and what they were started
with: the next sweep that asks for the same reuses them instead of starting new ones
(each start imports torch and the runner's modules, seconds a worker)."""


def _pool_identity(workers: int, threads: int) -> tuple[Any, ...]:
    """What a worker process keeps from its start: its count and torch threads, and this
    process's environment and import path as they were (a dataset or results folder set
    in the environment, a test's temporary folders). A sweep reuses workers only where
    all of it is unchanged."""
    return (workers, threads, tuple(sorted(os.environ.items())), tuple(sys.path))


def _local_pool(workers: int, threads: int) -> ProcessPoolExecutor:
    """Worker processes for a sweep: the previous sweep's when they were started the same
    way and are all alive, new ones otherwise (the old ones shut down first)."""
    global _POOL
    identity = _pool_identity(workers, threads)
    if _POOL is not None:
        started, pool = _POOL
        processes = list((getattr(pool, "_processes", None) or {}).values())
        if (started == identity and not getattr(pool, "_broken", False)
                and all(process.is_alive() for process in processes)):
            return pool
        _close_pool()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                               initializer=_worker_init, initargs=(threads, os.getpid()))
    _POOL = (identity, pool)
    return pool


def _close_pool(stop: bool = False) -> None:
    """Shut the kept worker processes down (``stop``: terminate them first, for a sweep
    interrupted or failed, whose workers would finish groups nobody will save)."""
    global _POOL
    if _POOL is None:
        return
    _, pool = _POOL
    _POOL = None
    if stop:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


atexit.register(_close_pool)


def _run_locally(groups, runner, workers, finish) -> None:
    cores = os.cpu_count() or 1
    workers = min(workers or cores, len(groups))
    if workers <= 1:
        for group in groups:
            finish(group, *_run_group_in_worker(runner, group))
        return
    threads = max(1, cores // workers)
    pool = _local_pool(workers, threads)
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
        # Interrupted or failed: finished runs are saved already; stop the workers now
        # instead of letting them finish groups nobody will save.
        for future in futures:
            future.cancel()
        _close_pool(stop=True)
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
