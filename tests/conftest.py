"""Shared fixtures.

The offline dataset mirror is taken from ``$FEDLIB_DATA_MIRROR`` (``.ci/run``
points it at the mirror beside the checkout). Tests that need real data ask
for the ``mirror`` fixture and skip, saying why, when it is absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test gets its own download and results caches, and never the network."""
    base = tmp_path_factory.mktemp("fedlib-cache")
    monkeypatch.setenv("FEDLIB_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("FEDLIB_RESULTS_DIR", str(base / "results"))
    monkeypatch.setenv("FEDLIB_OFFLINE", "1")


@pytest.fixture
def mirror() -> Path:
    """The offline mirror folder; skips the test when it is not configured."""
    value = os.environ.get("FEDLIB_DATA_MIRROR", "").strip()
    if not value:
        pytest.skip("FEDLIB_DATA_MIRROR is not set: no offline dataset mirror to test against")
    path = Path(value)
    if not path.is_dir():
        pytest.skip(f"FEDLIB_DATA_MIRROR={value} is not a folder")
    return path


def require_datasets(*specs: str) -> None:
    """Skip the calling test, saying why, unless the data can be had without the network
    (from the mirror or the cache).

    A spec is a dataset name (every file needed) or ``dataset/file1|file2`` (any one of
    the listed files suffices).
    """
    from fedlib.data import DatasetUnavailableError, dataset_files, fetch

    for spec in specs:
        dataset, _, listed = spec.partition("/")
        files = listed.split("|") if listed else list(dataset_files(dataset))
        needed = 1 if listed else len(files)
        found, reasons = 0, []
        for filename in files:
            try:
                fetch(dataset, filename)
                found += 1
            except DatasetUnavailableError as error:
                reasons.append(str(error))
        if found < needed:
            pytest.skip(f"dataset {spec!r} is not available offline ({'; '.join(reasons)}); "
                        "set FEDLIB_DATA_MIRROR to a mirror folder")


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book built at the smoke tier, in a copy: ``make book SCALE=smoke`` executes
    every notebook (papermill) into ``generated/`` and renders the site into ``_build``.
    Built once per session, for the notebook and the book tests."""
    from fedlib.papers import PAPERS

    require_datasets(*{d for p in PAPERS for d in p.datasets})
    book = tmp_path_factory.mktemp("site") / "book"
    shutil.copytree(ROOT / "book", book, ignore=shutil.ignore_patterns("_build", "generated"))
    env = {**os.environ, "FEDLIB_RESULTS_DIR": str(book.parent / "results")}
    venv = Path(sys.executable).parent.parent
    result = subprocess.run(
        ["make", "book", "SCALE=smoke", f"BOOK={book}", f"VENV={venv}"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert result.returncode == 0, (
        f"make book failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return book


@pytest.fixture(scope="session")
def site_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``make site`` builds it, in a copy: every chapter rendered from the
    runs stored with the project (``data/published``; the local cache is left out, as on
    a fresh checkout), nothing computed, both tiers, then the book. Built once per
    session."""
    from fedlib.papers import PAPERS

    require_datasets(*{d for p in PAPERS for d in p.datasets})
    book = tmp_path_factory.mktemp("stored-site") / "book"
    shutil.copytree(ROOT / "book", book, ignore=shutil.ignore_patterns("_build", "generated"))
    env = {**os.environ, "FEDLIB_RESULTS_DIR": str(book.parent / "results")}
    venv = Path(sys.executable).parent.parent
    result = subprocess.run(["make", "site", f"BOOK={book}", f"VENV={venv}"],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, (
        f"make site failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return book
