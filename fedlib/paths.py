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


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def offline() -> bool:
    """True when ``$FEDLIB_OFFLINE`` says so (1/true/yes/on): never try the network.

    Unset, empty or 0/false/no/off mean online; any other value is an error
    rather than a guess (a misspelt "of" must not send fedlib to the network).
    """
    value = os.environ.get("FEDLIB_OFFLINE", "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(
        f"FEDLIB_OFFLINE={os.environ['FEDLIB_OFFLINE']!r} is neither on nor off; set it to "
        "1 (never download) or 0 (download what is missing), or unset it."
    )


def compute_allowed() -> bool:
    """False when ``$FEDLIB_COMPUTE`` says so (0/false/no/off): sweeps then use cached and
    published runs only, and refuse to compute a missing one (a build that renders a
    published tier must not start hours of runs). Unset or 1/true/yes/on: compute."""
    value = os.environ.get("FEDLIB_COMPUTE", "1").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE - {""}:
        return False
    raise ValueError(
        f"FEDLIB_COMPUTE={os.environ['FEDLIB_COMPUTE']!r} is neither on nor off; set it to "
        "0 (use cached and published runs only) or 1 (compute what is missing), or unset it.")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def claims_dir() -> Path:
    """Where the notebooks write their claims and the scorecard reads them:
    ``$FEDLIB_CLAIMS_DIR`` or ``book/generated/claims``, whatever the working directory."""
    return _env_path("FEDLIB_CLAIMS_DIR", PROJECT_ROOT / "book" / "generated" / "claims")


def resolve(path: str | os.PathLike[str]) -> Path:
    """``path`` as an absolute path, a relative one taken from the project root (not the
    working directory, which differs between make, papermill and Jupyter)."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else (PROJECT_ROOT / path).resolve()


def results_dir() -> Path:
    """Cache of finished runs (Parquet): ``$FEDLIB_RESULTS_DIR`` or ``data/results``."""
    return _env_path("FEDLIB_RESULTS_DIR", PROJECT_ROOT / "data" / "results")


def published_dir() -> Path:
    """Published runs, committed with the project (:mod:`fedlib.runs.published`):
    ``$FEDLIB_PUBLISHED_DIR`` or ``data/published`` in the checkout."""
    return _env_path("FEDLIB_PUBLISHED_DIR", PROJECT_ROOT / "data" / "published")


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` as a message shows it: relative to the project root when inside it (what a
    reader types there, e.g. in ``git checkout -- data/published/pfa``), else absolute."""
    path = Path(path)
    try:
        return path.resolve().relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        return str(path)


_TEMPORARY_SUFFIX = ".tmp"


def temporaries(folder: str | os.PathLike[str]) -> list[Path]:
    """The temporary files :func:`atomic_path` makes in ``folder`` (``.<name>.<random>.tmp``),
    sorted: while a write runs, its own; after a process was killed during one, leftovers."""
    return sorted(path for path in Path(folder).glob(f".*{_TEMPORARY_SUFFIX}")
                  if path.is_file())


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` if the block succeeds.

    Readers never see a half-written file, and a failure leaves nothing behind.
    The file ends with the permissions the process's umask gives new files.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                               suffix=_TEMPORARY_SUFFIX)
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates the file owner-only; give it the mode any new file gets here.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
