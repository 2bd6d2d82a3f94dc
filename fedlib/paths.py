"""Where fedlib reads and writes on disk, each place overridable by an
environment variable so that no machine path is ever hard-coded."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
"""Root of the source checkout (fedlib is meant to be installed editable)."""


def _env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser().resolve() if value else default


def data_dir() -> Path:
    """Download cache for datasets: ``$FEDLIB_DATA_DIR`` or ``data/cache``."""
    return _env_path("FEDLIB_DATA_DIR", PROJECT_ROOT / "data" / "cache")


def data_mirror() -> Path | None:
    """Read-only offline mirror searched before any download: ``$FEDLIB_DATA_MIRROR``."""
    value = os.environ.get("FEDLIB_DATA_MIRROR", "").strip()
    return Path(value).expanduser().resolve() if value else None


def offline() -> bool:
    """True when ``$FEDLIB_OFFLINE`` is set to 1/true/yes: never try the network."""
    return os.environ.get("FEDLIB_OFFLINE", "").strip().lower() in {"1", "true", "yes"}


def results_dir() -> Path:
    """Cache of finished runs (Parquet): ``$FEDLIB_RESULTS_DIR`` or ``data/results``."""
    return _env_path("FEDLIB_RESULTS_DIR", PROJECT_ROOT / "data" / "results")


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` if the block succeeds.

    Readers never see a half-written file, and a failure leaves nothing behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
