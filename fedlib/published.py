"""Published results: finished runs of a tier, committed with the project.

Runs that take hours (the ``paper`` tier) are computed once and exported here, so that a
build, a test or a reader's laptop can use them without computing them again. The store
is read like the dataset mirror: :func:`fedlib.sweeps.sweep` looks a run up here when its
own cache lacks it, and uses it only if the run's key matches, that is, only if the
config and the source of every fedlib module the run computes with are those it was
computed with. When that code changes, the run's key changes: the published run is then
*stale*, reported as such (:func:`status_table`, the book's status page) and never used.

Layout, one folder per experiment (the sweep's name)::

    data/published/<experiment>/manifest.json     what every run is and where it comes from
    data/published/<experiment>/<tier>.parquet    the runs' tables, one ``run_key`` column

The manifest records, per run: its tier, config, runner module, the fingerprint of the
code it ran with, the fedlib version and commit, the machine, the date it finished, its
wall-clock and CPU seconds, and the digest of its table (checked on every read: a table
that does not match is not used). What many runs share is written once and named by the
runs: the digest of every file of a runner module (``modules``), the runs computed
together (``groups``, named by their first run) and the columns of a table (``schemas``,
named by a digest). One run per line, so that a new export is a readable diff.

``python -m fedlib.published export --tier paper [EXPERIMENT ...]`` exports the runs of a
tier that are in the local cache and current; ``python -m fedlib.published status``
lists what is published and whether it is current; ``python -m fedlib.published prune
[EXPERIMENT ...]`` removes the stale runs once their replacements are exported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import warnings
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import fedlib
from fedlib import paths
from fedlib.sweeps import (
    DamagedRunError,
    MissingRunsError,
    ResultStore,
    code_files,
    code_fingerprint,
    content_digest,
    run_key,
    stored_only,
)
from fedlib.tiers import SCALES

PUBLISHED_LAYOUT = "fedlib-published/2"
"""Layout tag of every manifest: a manifest of another layout is refused, never guessed."""


class PublishedStoreError(RuntimeError):
    """A published store that cannot be read as this layout (say what to do about it)."""


def _file_digests(module: str) -> dict[str, str]:
    root = Path(fedlib.__file__).resolve().parent
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest()[:16]
            for name in code_files(module)}


def commit_description() -> str:
    """``git describe``-like name of the checkout's commit (``unknown`` outside git), with
    ``+changes`` when fedlib's tracked sources differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.PROJECT_ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fedlib"],
                               cwd=paths.PROJECT_ROOT, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


class PublishedStore:
    """The published runs of one experiment (read-only for sweeps; :meth:`add` exports)."""

    def __init__(self, experiment: str, root: Path | None = None) -> None:
        if not experiment or any(c in experiment for c in "/\\") or experiment.startswith("."):
            raise ValueError(f"experiment name {experiment!r} must be a plain folder name")
        self.experiment = experiment
        self.folder = (root or paths.published_dir()) / experiment
        self._tables: dict[str, pd.DataFrame] = {}

    @property
    def manifest_path(self) -> Path:
        return self.folder / "manifest.json"

    def table_path(self, tier: str) -> Path:
        return self.folder / f"{tier}.parquet"

    def manifest(self) -> dict[str, Any]:
        """The manifest (an empty one when nothing is published)."""
        if not self.manifest_path.is_file():
            return {"layout": PUBLISHED_LAYOUT, "experiment": self.experiment, "runs": {},
                    "modules": {}, "groups": {}, "schemas": {}}
        try:
            manifest = json.loads(self.manifest_path.read_text())
        except ValueError as error:
            raise PublishedStoreError(
                f"{self.manifest_path} is not valid JSON ({error}); restore it from git "
                "(git checkout -- <file>) or export the runs again") from error
        if manifest.get("layout") != PUBLISHED_LAYOUT:
            raise PublishedStoreError(
                f"{self.manifest_path} has layout {manifest.get('layout')!r}, this fedlib "
                f"reads {PUBLISHED_LAYOUT!r}: export the runs again with this version")
        return manifest

    def runs(self) -> dict[str, dict[str, Any]]:
        """Every published run's manifest entry, with its ``group`` (the keys of the runs
        computed with it) and ``columns`` (``[name, dtype]`` pairs) written out."""
        manifest = self.manifest()
        groups, schemas = manifest["groups"], manifest["schemas"]
        return {key: {**entry, "group": groups[entry["group"]],
                      "columns": schemas[entry["columns"]]}
                for key, entry in manifest["runs"].items()}

    def _tier_table(self, tier: str) -> pd.DataFrame:
        if tier not in self._tables:
            path = self.table_path(tier)
            self._tables[tier] = (pq.read_table(path).to_pandas() if path.is_file()
                                  else pd.DataFrame({"run_key": pd.Series(dtype=str)}))
        return self._tables[tier]

    def load(self, key: str) -> pd.DataFrame:
        """The published table of ``key``, checked against its digest
        (:class:`fedlib.sweeps.DamagedRunError` when it does not match)."""
        entry = self.runs().get(key)
        if entry is None:
            raise KeyError(f"run {key} is not published for {self.experiment}")
        return self._checked(key, entry)

    def _checked(self, key: str, entry: dict[str, Any]) -> pd.DataFrame:
        table = self._tier_table(entry["tier"])
        rows = table[table["run_key"] == key].drop(columns="run_key").reset_index(drop=True)
        # One table holds runs of different columns: each run gets its own dtypes back.
        columns = dict(entry["columns"])  # [name, dtype] pairs, in the run's order
        rows = rows[list(columns)].astype(columns)
        if content_digest(rows) != entry["sha256"]:
            raise DamagedRunError(f"published run {key} of {self.experiment} does not match "
                                  "its digest in the manifest")
        return rows

    def lookup(self, keys: Iterable[str]) -> dict[str, pd.DataFrame]:
        """The published tables of those ``keys`` that are published (a damaged one is
        left out with a warning, and computed instead)."""
        if not self.manifest_path.is_file():
            return {}
        published = self.runs()
        found = {}
        for key in keys:
            if key not in published:
                continue
            try:
                found[key] = self._checked(key, published[key])
            except DamagedRunError as error:
                warnings.warn(f"{error}; computing it instead", RuntimeWarning, stacklevel=2)
        return found

    def add(self, tier: str, runs: Sequence[tuple[str, pd.DataFrame, dict[str, Any]]]
            ) -> int:
        """Publish ``runs`` (key, table, provenance as :meth:`ResultStore.provenance`
        gives it) under ``tier``, replacing a published run of the same key; the tier's
        table and the manifest are each written atomically. Returns how many were new."""
        if tier not in SCALES:
            raise ValueError(f"tier {tier!r} is not a run tier; use one of {', '.join(SCALES)}")
        manifest = self.manifest()
        # A run published before with the same rows keeps its entry: exporting again must
        # not rewrite when and with which commit it was published.
        runs = [(key, run, provenance) for key, run, provenance in runs
                if manifest["runs"].get(key, {}).get("tier") != tier
                or manifest["runs"][key].get("sha256") != content_digest(run)]
        if not runs:
            return 0
        table = self._tier_table(tier)
        new = 0
        commit = commit_description()
        kept = table[~table["run_key"].isin([key for key, _, _ in runs])]
        frames = [kept] if len(kept) else []
        for key, run, provenance in runs:
            module = provenance["module"]
            if run_key(provenance["config"], module) != key:
                raise ValueError(f"run {key} was computed with other code or config than "
                                 "the checkout's: it cannot be published as current")
            new += key not in manifest["runs"]
            manifest["modules"][module] = {"fingerprint": code_fingerprint(module),
                                           "files": _file_digests(module)}
            group = list(provenance.get("group", [key]))
            manifest["groups"][group[0]] = group
            columns = [[str(c), str(t)] for c, t in run.dtypes.items()]
            schema = hashlib.sha256(json.dumps(columns).encode()).hexdigest()[:12]
            manifest["schemas"][schema] = columns
            manifest["runs"][key] = {
                "tier": tier, "config": provenance["config"], "module": module,
                "runner": provenance.get("runner", ""), "group": group[0],
                "code_fingerprint": code_fingerprint(module),
                "fedlib_version": fedlib.__version__, "commit": commit,
                "machine": provenance.get("machine", "unknown"),
                "finished": provenance.get("finished", "unknown"),
                "wall_seconds": _share(provenance, "group_wall_seconds"),
                "cpu_seconds": _share(provenance, "group_cpu_seconds"),
                "torch_threads": provenance.get("torch_threads"),
                "rows": len(run), "columns": schema, "sha256": content_digest(run)}
            frames.append(run.assign(run_key=key))
        _write_table(self.table_path(tier), pd.concat(frames, ignore_index=True))
        _drop_unnamed(manifest)
        with paths.atomic_path(self.manifest_path) as tmp:
            tmp.write_text(manifest_text(manifest))
        self._tables.pop(tier, None)
        return new

    def prune(self) -> int:
        """Remove the stale runs (those whose key is no longer what the checkout's code
        gives their config), typically once their replacements are exported; tables and
        manifest are each written atomically. Returns how many were removed."""
        manifest = self.manifest()
        stale = {key for key, entry in manifest["runs"].items() if not is_current(key, entry)}
        if not stale:
            return 0
        tiers = {manifest["runs"][key]["tier"] for key in stale}
        for key in stale:
            del manifest["runs"][key]
        _drop_unnamed(manifest)
        modules = {entry["module"] for entry in manifest["runs"].values()}
        manifest["modules"] = {k: v for k, v in manifest["modules"].items() if k in modules}
        # The manifest first: rows no run names are never read, a named run without rows
        # would read as damaged.
        with paths.atomic_path(self.manifest_path) as tmp:
            tmp.write_text(manifest_text(manifest))
        for tier in sorted(tiers):
            table = self._tier_table(tier)
            kept = table[~table["run_key"].isin(stale)].reset_index(drop=True)
            if kept.empty:
                self.table_path(tier).unlink()
            else:
                _write_table(self.table_path(tier), kept)
            self._tables.pop(tier, None)
        return len(stale)


def is_current(key: str, entry: dict[str, Any]) -> bool:
    """Whether a published run is what this checkout's code computes for its config."""
    return run_key(entry["config"], entry["module"]) == key


def published_experiments(root: Path | None = None) -> list[str]:
    """The experiments with a manifest in the store, sorted."""
    root = root or paths.published_dir()
    return sorted(p.name for p in root.glob("*") if (p / "manifest.json").is_file())


def _write_table(path: Path, frame: pd.DataFrame) -> None:
    """Write a tier's table of runs atomically (Parquet, zstd)."""
    with paths.atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp,
                       compression="zstd")


_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def config_of(entry: dict[str, Any]) -> dict[str, Any]:
    """The config of a published run as its runner takes it: the manifest writes the
    non-finite floats of a config as ``"inf"``, ``"-inf"`` and ``"nan"`` (JSON has no
    such numbers; the run key reads them the same way), here read back as floats."""
    def decoded(value: Any) -> Any:
        if isinstance(value, str) and value in _NON_FINITE:
            return _NON_FINITE[value]
        if isinstance(value, dict):
            return {k: decoded(v) for k, v in value.items()}
        if isinstance(value, list):
            return [decoded(v) for v in value]
        return value

    return decoded(entry["config"])


def _drop_unnamed(manifest: dict[str, Any]) -> None:
    """Remove the groups and schemas no run names any more (runs exported again)."""
    runs = manifest["runs"].values()
    for section, field in (("groups", "group"), ("schemas", "columns")):
        named = {entry[field] for entry in runs}
        manifest[section] = {k: v for k, v in manifest[section].items() if k in named}


def manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest as JSON with one entry of each section per line (sorted)."""
    def compact(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    parts = []
    for name in sorted(manifest):
        value = manifest[name]
        if isinstance(value, dict) and value:
            body = ",\n".join(f"  {json.dumps(k)}: {compact(v)}"
                              for k, v in sorted(value.items()))
            parts.append(f" {json.dumps(name)}: {{\n{body}\n }}")
        else:
            parts.append(f" {json.dumps(name)}: {compact(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _share(provenance: dict[str, Any], field: str) -> float | None:
    """A run's share of its group's seconds (the runs of a group are computed together)."""
    total, size = provenance.get(field), provenance.get("group_size")
    return round(total / size, 3) if total is not None and size else None


def cached_runs(experiment: str, tier: str, cache: Path | None = None
                ) -> tuple[list[tuple[str, pd.DataFrame, dict[str, Any]]], int]:
    """The runs of ``tier`` in the local cache of ``experiment`` that are current (their
    key is what this checkout's code gives their config), and how many others of the
    tier were left out because the code or the config changed since."""
    store = ResultStore(experiment, cache)
    current, stale = [], 0
    for path in sorted(store.folder.glob("*.parquet")):
        key = path.stem
        provenance = store.provenance(key)
        if provenance.get("tier") != tier:
            continue
        if run_key(provenance["config"], provenance["module"]) != key:
            stale += 1
            continue
        current.append((key, store.load(key), provenance))
    return current, stale


def export(experiment: str, tier: str, *, cache: Path | None = None,
           root: Path | None = None) -> tuple[int, int, int]:
    """Publish every current run of ``tier`` in the local cache of ``experiment``.
    Returns (runs exported, of which new, stale runs of the cache left out)."""
    runs, stale = cached_runs(experiment, tier, cache)
    if not runs:
        return 0, 0, stale
    new = PublishedStore(experiment, root).add(tier, runs)
    return len(runs), new, stale


@cache
def _stale_files(module: str, recorded: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    now = _file_digests(module)
    before = dict(recorded)
    return tuple(sorted(name for name in set(now) | set(before)
                        if now.get(name) != before.get(name)))


def status_table(root: Path | None = None) -> pd.DataFrame:
    """One row per published experiment and tier: runs, how many are current, the files
    whose change made the others stale, CPU hours, the machines and dates, and size."""
    root = root or paths.published_dir()
    rows = []
    for name in published_experiments(root):
        store = PublishedStore(name, root)
        manifest = store.manifest()
        by_tier: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for key, entry in store.runs().items():
            by_tier.setdefault(entry["tier"], []).append((key, entry))
        for tier, entries in sorted(by_tier.items(), key=lambda item: SCALES.index(item[0])):
            changed: set[str] = set()
            current = 0
            for key, entry in entries:
                if is_current(key, entry):
                    current += 1
                else:
                    recorded = manifest["modules"].get(entry["module"], {}).get("files", {})
                    changed |= set(_stale_files(entry["module"],
                                                tuple(sorted(recorded.items()))))
            seconds = [e["cpu_seconds"] for _, e in entries if e.get("cpu_seconds")]
            dates = sorted(str(e["finished"])[:10] for _, e in entries)
            rows.append({
                "experiment": name, "tier": tier, "runs": len(entries),
                "current": current, "stale": len(entries) - current,
                "changed since": ", ".join(sorted(changed)),
                "CPU hours": round(sum(seconds) / 3600, 2),
                "machines": "; ".join(sorted({e["machine"] for _, e in entries})),
                "finished": f"{dates[0]} to {dates[-1]}" if dates else "",
                "commits": ", ".join(sorted({e["commit"][:12] for _, e in entries})),
                "size (kB)": round(store.table_path(tier).stat().st_size / 1024, 1)
                if store.table_path(tier).is_file() else 0.0})
    return pd.DataFrame(rows)


def stored_runs(run: Callable[..., pd.DataFrame], *args: Any, **kwargs: Any
                ) -> pd.DataFrame | None:
    """``run(*args, **kwargs)`` (a paper's ``run``) from cached and published runs only,
    computing nothing; None when some of its runs are neither (a chapter shows another
    tier's runs this way when they are published)."""
    with stored_only():
        try:
            return run(*args, **kwargs)
        except MissingRunsError:
            return None


def provenance_line(experiment: str, keys: Iterable[str]) -> str:
    """Where the runs of ``keys`` come from, in one line for a chapter: how many are
    published (tier, machine, dates, commit, CPU hours) and how many were computed by
    this build or its cache."""
    keys = list(dict.fromkeys(keys))
    runs = PublishedStore(experiment).runs() if keys else {}
    mine = [runs[k] for k in keys if k in runs]
    local = len(keys) - len(mine)
    if not mine:
        return f"All {len(keys)} runs were computed by this build (or its local cache)."
    tiers = ", ".join(sorted({e["tier"] for e in mine}))
    machines = "; ".join(sorted({e["machine"] for e in mine}))
    dates = sorted(str(e["finished"])[:10] for e in mine)
    commits = ", ".join(sorted({e["commit"][:10] for e in mine}))
    hours = sum(e.get("cpu_seconds") or 0 for e in mine) / 3600
    line = (f"{len(mine)} of {len(keys)} runs come from the published {tiers} tier "
            f"(computed on {machines}, {dates[0]} to {dates[-1]}, fedlib commit {commits}, "
            f"{hours:.1f} CPU hours)")
    return line + (f"; {local} were computed by this build." if local else ".")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fedlib.published",
                                     description="Export and inspect published runs.")
    commands = parser.add_subparsers(dest="command", required=True)
    out = commands.add_parser("export", help="publish the current runs of a tier from the "
                              "local cache")
    out.add_argument("--tier", required=True, choices=SCALES)
    out.add_argument("experiments", nargs="*",
                     help="experiment folders of the cache (default: all of them)")
    commands.add_parser("status", help="what is published and whether it is current")
    prune = commands.add_parser("prune", help="remove the stale published runs (after "
                                "their replacements are exported)")
    prune.add_argument("experiments", nargs="*",
                       help="published experiments (default: all of them)")
    args = parser.parse_args(argv)
    if args.command == "status":
        table = status_table()
        print(table.to_string(index=False) if not table.empty else "nothing is published")
        return 0
    if args.command == "prune":
        for name in args.experiments or published_experiments():
            store = PublishedStore(name)
            if not store.manifest_path.is_file():
                raise SystemExit(f"nothing is published for {name!r} (no {store.manifest_path})")
            print(f"{name}: {store.prune()} stale runs removed")
        return 0
    cache_root = paths.results_dir()
    names = args.experiments or sorted(p.name for p in cache_root.glob("*") if p.is_dir())
    for name in names:
        exported, new, stale = export(name, args.tier)
        print(f"{name}: {exported} {args.tier}-tier runs published ({new} new); "
              f"{stale} stale cached runs left out")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
