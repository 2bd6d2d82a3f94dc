"""Run keys: what a run is named by (its config, the fedlib version and the source of
the code it depends on), and the digests of a run's table."""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import fedlib

Config = Mapping[str, Any]


PRESENTATION_MODULES = frozenset({
    "plots.py", "claims.py", "figures.py", "chapter.py", "status.py", "bench.py", "findings.py",
    "notes.py",
})
"""Basenames of the modules that draw, judge or report results but never compute
them (a paper's ``claims.py`` and ``figures.py`` among them): they are never part
of a run's key, and the search for what a run imports does not go through them."""


STORAGE_MODULES = frozenset({"sweeps.py", "paths.py"})
"""Package-level modules that decide where and how finished runs are kept, never
what a run computes (a dataset's content is pinned by its checksum in the
registry, which is part of the key): editing them keeps every cached run, and the
search for what a run imports does not go through them."""

UNKEYED_FOLDERS = frozenset({"runs", "verdicts", "render"})
"""The package's folders that store, judge or show runs, never compute them: like the
storage modules, no run key covers a module of theirs."""


def _keyed(relative: str) -> bool:
    """Whether a source file (its path relative to the package) can be part of a key."""
    return (relative.rsplit("/", 1)[-1] not in PRESENTATION_MODULES
            and relative not in STORAGE_MODULES
            and relative.split("/", 1)[0] not in UNKEYED_FOLDERS)


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
    presentation modules (:data:`PRESENTATION_MODULES`), the storage modules
    (:data:`STORAGE_MODULES`) and the folders of :data:`UNKEYED_FOLDERS` are never
    included.
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
            if name in seen or path is None or not _keyed(path.relative_to(root).as_posix()):
                continue
            seen.add(name)
            pending.extend(_fedlib_imports(root, name, path) - seen)
        files = sorted(path for name in seen if (path := _module_file(root, name)) is not None)
    relative = [path.relative_to(root).as_posix() for path in files]
    return [name for name in relative if _keyed(name)]


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


def _json_key(key: Any) -> str:
    """A mapping's key as JSON writes a key (``True`` as ``true``, ``None`` as ``null``)."""
    return key if isinstance(key, str) else json.dumps(key) if key is None or isinstance(
        key, bool) else str(key)


def canonical(value: Any) -> Any:
    """A config (or any JSON-like value) in the form its run key hashes: mappings with
    text keys (as JSON writes keys) in sorted order, tuples as lists, non-finite floats
    as their ``repr`` (JSON has no inf or nan; ``'inf'`` and ``'nan'`` stay distinct
    and stable)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, Mapping):
        return {_json_key(k): canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    return value


def config_text(config: Config) -> str:
    """A config as one text, equal for two configs exactly when their runs are one run
    (the same :func:`canonical` form, whatever the order of their fields): the JSON of
    that form, keys sorted, as :func:`run_key` hashes it."""
    try:
        # A config of JSON values with finite floats and text keys is its own canonical
        # form (tuples write as lists): written directly, as it is for most runs.
        return json.dumps(dict(config), sort_keys=True, allow_nan=False)
    except (ValueError, TypeError):
        return json.dumps(canonical(dict(config)), sort_keys=True, allow_nan=False)


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
    # The JSON of {"code": ..., "config": ..., "fedlib": ...} with its keys sorted,
    # written part by part so that the config is written once.
    payload = (f'{{"code": {json.dumps(code_fingerprint(module))}, '
               f'"config": {config_text(config)}, '
               f'"fedlib": {json.dumps(fedlib.__version__)}}}')
    return hashlib.sha256(payload.encode()).hexdigest()[:RUN_KEY_LENGTH]


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
