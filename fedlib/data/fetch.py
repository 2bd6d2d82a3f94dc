"""Locate a registered dataset file: verified cache, then offline mirror, then download.

The order is

1. the download cache ``data_dir()/<dataset>/<file>`` (``$FEDLIB_DATA_DIR``), if its
   content hash verifies; a cached copy that does not verify is moved aside
   (renamed ``<file>.corrupt``) and fetched again;
2. the offline mirror ``data_mirror()/<folder>/<file>`` (``$FEDLIB_DATA_MIRROR``),
   verified and read in place: nothing is ever written into the mirror;
3. unless ``$FEDLIB_OFFLINE`` is set, a download with :mod:`pooch` into the cache,
   verified afterwards; a download that does not verify is moved aside.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import logging
import os
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

with warnings.catch_warnings():
    # pooch imports tqdm.auto, which warns inside Jupyter when ipywidgets is absent;
    # fedlib never shows pooch's progress bars.
    warnings.filterwarnings("ignore", message="IProgress not found")
    import pooch

from fedlib.data.errors import ChecksumMismatchError, DatasetUnavailableError
from fedlib.data.registry import RemoteFile, get_file
from fedlib.paths import data_dir, data_mirror, offline

_CHUNK = 1 << 20
_log = logging.getLogger(__name__)


def content_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's content, streamed in chunks.

    For a single gzip-compressed file (name ending in ``.gz`` but not ``.tar.gz``)
    this is the digest of the decompressed bytes, so any faithful re-compression of
    the same data has the same digest. Archives are hashed as they are, which is how
    their publishers state their digests.

    Raises
    ------
    OSError, EOFError, zlib.error
        If the file cannot be read or a ``.gz`` file is not valid gzip.
    """
    path = Path(path)
    digest = hashlib.sha256()
    single_gzip = path.name.endswith(".gz") and not path.name.endswith(".tar.gz")
    opener = gzip.open if single_gzip else open
    with opener(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _digest_or_reason(path: Path) -> str:
    """The content digest, or a description of why the content could not be read."""
    try:
        return content_sha256(path)
    except (OSError, EOFError, zlib.error) as exc:
        return f"<unreadable: {type(exc).__name__}: {exc}>"


def _move_aside(path: Path) -> Path:
    """Rename a file that failed verification so that the cache holds nothing corrupt."""
    target = path.with_name(path.name + ".corrupt")
    os.replace(path, target)
    return target


@contextlib.contextmanager
def _quiet_pooch() -> Iterator[None]:
    """Silence pooch's advice to pin the hash it printed: fedlib verifies content itself."""
    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _unavailable(entry: RemoteFile, reason: str) -> DatasetUnavailableError:
    mirror = data_mirror()
    cached = data_dir() / entry.dataset / entry.filename
    if mirror is None:
        mirror_note = "FEDLIB_DATA_MIRROR is not set"
    else:
        mirror_note = f"looked for {mirror / entry.mirror_path}, which does not exist"
    lines = [
        f"dataset file {entry.mirror_path} ({entry.dataset!r}) is not available: {reason}.",
    ]
    if entry.url is not None:
        lines.append(f"Canonical download: {entry.url}")
        lines.append(f"Source: {entry.source}")
    else:
        lines.append(f"It has no canonical single-file download. Source: {entry.source}")
    lines.append("To make it available, do one of:")
    lines.append(
        f"  * set FEDLIB_DATA_MIRROR to a folder containing {entry.mirror_path} ({mirror_note});"
    )
    if entry.url is not None:
        lines.append("  * unset FEDLIB_OFFLINE (or set it to 0) so that fedlib may download it;")
    lines.append(f"  * put a copy at {cached} (the download cache; FEDLIB_DATA_DIR moves it).")
    return DatasetUnavailableError("\n".join(lines))


def _from_cache(entry: RemoteFile, cached: Path) -> Path | None:
    if not cached.is_file():
        return None
    actual = _digest_or_reason(cached)
    if actual == entry.sha256:
        return cached
    aside = _move_aside(cached)
    warnings.warn(
        f"cached {cached} failed verification (content SHA-256 {actual}, expected "
        f"{entry.sha256}); moved it to {aside} and fetching the file again",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


def _from_mirror(entry: RemoteFile) -> Path | None:
    mirror = data_mirror()
    if mirror is None:
        return None
    candidate = mirror / entry.mirror_path
    if not candidate.is_file():
        return None
    actual = _digest_or_reason(candidate)
    if actual != entry.sha256:
        where = entry.url or entry.source
        raise ChecksumMismatchError(
            candidate,
            entry.sha256,
            actual,
            "The mirror copy is damaged or is a different version of the data. Replace it "
            f"with a faithful copy (from {where}), or unset FEDLIB_DATA_MIRROR so that fedlib "
            "downloads the file into its cache. fedlib never modifies the mirror.",
        )
    return candidate


def _download(entry: RemoteFile, cache_dir: Path) -> Path:
    assert entry.url is not None
    cache_dir.mkdir(parents=True, exist_ok=True)
    _log.info("downloading %s into %s", entry.url, cache_dir)
    try:
        with _quiet_pooch():
            # pooch writes to a temporary file and renames it when complete.
            fetched = pooch.retrieve(
                entry.url,
                known_hash=None,
                fname=entry.filename,
                path=cache_dir,
                progressbar=False,
            )
    except (OSError, ValueError) as exc:  # requests' errors are OSErrors
        raise _unavailable(entry, f"downloading {entry.url} failed ({exc})") from exc
    path = Path(fetched)
    actual = _digest_or_reason(path)
    if actual != entry.sha256:
        aside = _move_aside(path)
        raise ChecksumMismatchError(
            aside,
            entry.sha256,
            actual,
            f"The file downloaded from {entry.url} does not have the registered content; it "
            "was moved aside so that the cache holds nothing corrupt. Delete it and retry; if "
            "the mismatch persists, the server's copy changed: use a verified copy through "
            "FEDLIB_DATA_MIRROR instead.",
        )
    return path


def fetch(dataset: str, filename: str) -> Path:
    """Path to a verified local copy of one registered dataset file.

    Parameters
    ----------
    dataset
        Registry name, see :func:`fedlib.data.list_datasets`.
    filename
        File name within the dataset, see :func:`fedlib.data.dataset_files`.

    Returns
    -------
    pathlib.Path
        A file in the download cache or in the offline mirror. Treat it as read-only.

    Raises
    ------
    UnknownDatasetError
        If the dataset or file is not registered.
    ChecksumMismatchError
        If the mirror copy, or a fresh download, does not have the registered content.
    DatasetUnavailableError
        If the file is in neither cache nor mirror and downloading is disallowed
        (``$FEDLIB_OFFLINE``), impossible (no canonical address) or failed.
    """
    entry = get_file(dataset, filename)
    cache_dir = data_dir() / entry.dataset
    cached = _from_cache(entry, cache_dir / entry.filename)
    if cached is not None:
        return cached
    mirrored = _from_mirror(entry)
    if mirrored is not None:
        return mirrored
    if offline():
        raise _unavailable(entry, "it is not cached, not in a mirror, and FEDLIB_OFFLINE is set")
    if entry.url is None:
        raise _unavailable(entry, "it is not cached and not in a mirror")
    return _download(entry, cache_dir)
