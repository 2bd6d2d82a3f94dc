"""Shared fixtures.

The offline dataset mirror is taken from ``$FEDLIB_DATA_MIRROR`` (``.ci/run``
points it at the mirror beside the checkout). Tests that need real data ask
for the ``mirror`` fixture and skip, saying why, when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


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
