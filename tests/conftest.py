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


def require_datasets(*datasets: str) -> None:
    """Skip the calling test, saying why, unless every file of ``datasets`` can be had
    without the network (from the mirror or the cache)."""
    from fedlib.data import DatasetUnavailableError, dataset_files, fetch

    for dataset in datasets:
        for filename in dataset_files(dataset):
            try:
                fetch(dataset, filename)
            except DatasetUnavailableError as error:
                pytest.skip(f"dataset {dataset!r} is not available offline ({error}); "
                            "set FEDLIB_DATA_MIRROR to a mirror folder")
