"""CIFAR-10: the canonical python batches, or the JPEG proxy of an offline mirror.

:func:`load_cifar10` reads the canonical ``cifar-10-python.tar.gz`` (Krizhevsky's
pickled batches) when it is cached, mirrored or downloadable. Where it is not
(offline, with only a mirror of JPEG re-encodings), it falls back to the proxy
``cifar10-jpeg-q75.tar`` (``{train,test}/<class>/<nnnn>.jpg``): the same images
re-encoded as JPEG at quality 75 by a third party, in another order. The returned
:class:`Cifar10Images` says which one it is in ``name``, and every figure made
from it must carry that name: accuracy on the proxy is close to, not equal to,
accuracy on CIFAR-10.

Decoding the 60,000 JPEGs takes a while, so the decoded arrays are kept in the
download cache (``<data dir>/cifar10-jpeg/``), keyed on the archive's digest and
the layout of the cached file, with the SHA-256 of the arrays stored beside them:
a cached file that is unreadable or whose arrays do not match that digest (a
damaged or half-copied cache) is reported, removed and decoded again.
"""

from __future__ import annotations

import hashlib
import io
import logging
import pickle
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedlib.data.errors import DatasetError, DatasetUnavailableError
from fedlib.data.fetch import fetch
from fedlib.data.registry import CIFAR10_ARCHIVE, CIFAR10_JPEG_ARCHIVE, get_file
from fedlib.paths import atomic_path, data_dir

CLASSES: tuple[str, ...] = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
                            "horse", "ship", "truck")
"""Class names in label order (label 0 = airplane ... 9 = truck)."""

NAME = "CIFAR-10"
PROXY_NAME = "CIFAR-10 (JPEG proxy)"
SPLIT_SIZES = {"train": 50_000, "test": 10_000}
_BATCHES = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
_log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class Cifar10Images:
    """One split of CIFAR-10.

    Attributes
    ----------
    x
        uint8 ``(n, 32, 32, 3)``, RGB, height x width x channel.
    y
        int64 ``(n,)``, labels 0-9 (see :data:`CLASSES`).
    name
        ``"CIFAR-10"``, or ``"CIFAR-10 (JPEG proxy)"`` for the re-encoded copy: put it
        on anything made from these images.
    """

    x: np.ndarray
    y: np.ndarray
    name: str

    def __len__(self) -> int:
        return len(self.y)

    @property
    def is_proxy(self) -> bool:
        return self.name == PROXY_NAME


def _check_split(split: str) -> str:
    if split not in SPLIT_SIZES:
        raise ValueError(f"unknown split {split!r}; use one of {tuple(SPLIT_SIZES)}")
    return split


class _BatchUnpickler(pickle.Unpickler):
    """Unpickles the CIFAR batches (dicts of bytes, lists and numpy arrays) and nothing
    else: any other global in the stream is refused rather than imported."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"),
                ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in self._ALLOWED:
            raise DatasetError(f"CIFAR-10 batch refers to {module}.{name}, which a CIFAR "
                               "batch never does: the archive is not the canonical one")
        if module.startswith("numpy"):
            if name == "_reconstruct":
                return np.ndarray.__reduce__(np.zeros(0))[0]  # numpy's own _reconstruct
            return getattr(np, name)
        return super().find_class(module, name)


def _read_python_batches(path: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    with tarfile.open(path, "r:gz") as archive:
        members = {Path(m.name).name: m for m in archive.getmembers() if m.isfile()}
        for batch in _BATCHES[split]:
            member = members.get(batch)
            if member is None:
                raise DatasetError(f"{path} has no member {batch!r}; is it "
                                   f"{CIFAR10_ARCHIVE}?")
            stream = archive.extractfile(member)
            assert stream is not None
            content = _BatchUnpickler(stream, encoding="bytes").load()
            try:
                data, labels = content[b"data"], content[b"labels"]
            except (KeyError, TypeError):
                raise DatasetError(f"{path}:{batch} lacks 'data' or 'labels'") from None
            data = np.asarray(data)
            if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
                raise DatasetError(f"{path}:{batch}: expected uint8 (n, 3072) data, got "
                                   f"{data.dtype} {data.shape}")
            # Rows hold the red, green and blue planes one after the other.
            xs.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            ys.append(np.asarray(labels, dtype=np.int64))
    return np.ascontiguousarray(np.concatenate(xs)), np.concatenate(ys)


def _decode_jpeg_split(path: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    images, labels, names = [], [], []
    with tarfile.open(path, "r:") as archive:
        for member in archive:
            parts = Path(member.name).parts
            parts = parts[1:] if parts and parts[0] == "." else parts
            if not member.isfile() or len(parts) != 3 or parts[0] != split:
                continue
            if parts[1] not in CLASSES:
                raise DatasetError(f"{path}: {member.name} is in an unknown class folder "
                                   f"{parts[1]!r}; expected one of {CLASSES}")
            stream = archive.extractfile(member)
            assert stream is not None
            with Image.open(io.BytesIO(stream.read())) as image:
                pixels = np.asarray(image.convert("RGB"))
            if pixels.shape != (32, 32, 3):
                raise DatasetError(f"{path}: {member.name} is {pixels.shape}, not 32x32 RGB")
            images.append(pixels)
            labels.append(CLASSES.index(parts[1]))
            names.append((parts[1], parts[2]))
    if not images:
        raise DatasetError(f"{path} has no {split}/<class>/*.jpg images")
    order = sorted(range(len(names)), key=names.__getitem__)
    return (np.stack([images[i] for i in order]),
            np.asarray([labels[i] for i in order], dtype=np.int64))


DECODED_LAYOUT = 2
"""Layout of the cached decoded proxy: arrays ``x`` (n, 32, 32, 3) uint8, ``y`` (n,)
int64 and ``digest``, the SHA-256 of both (see :func:`decoded_digest`). Part of the
cached file's name, so that files of another layout are never read as this one."""


def decoded_digest(x: np.ndarray, y: np.ndarray) -> str:
    """SHA-256 of decoded images and labels: their shapes, dtypes and bytes."""
    digest = hashlib.sha256()
    for array in (x, y):
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def read_decoded(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached decoded proxy at ``path``, or None when there is none or it is damaged
    (unreadable, or its arrays do not match the digest stored with them); a damaged
    file is reported and removed, so that the caller decodes the archive again."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            x, y, stored = npz["x"], npz["y"], str(npz["digest"])
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        problem = f"it cannot be read ({type(exc).__name__}: {exc})"
    else:
        if (x.dtype == np.uint8 and x.ndim == 4 and x.shape[1:] == (32, 32, 3)
                and y.shape == (len(x),) and decoded_digest(x, y) == stored):
            return x, y
        problem = "its arrays do not match the digest stored with them"
    _log.warning("the cached decoded CIFAR-10 proxy %s is damaged (%s): it is removed and "
                 "the archive decoded again", path, problem)
    try:
        path.unlink()
    except OSError as exc:
        _log.warning("could not remove %s (%s): remove it by hand", path, exc)
    return None


def _load_jpeg_proxy(split: str) -> tuple[np.ndarray, np.ndarray]:
    # The decoded images are keyed by the registered digest of the archive they came
    # from, so a cache hit needs neither the archive nor its (slow) verification.
    digest = get_file("cifar10-jpeg", CIFAR10_JPEG_ARCHIVE).sha256
    decoded = (data_dir() / "cifar10-jpeg"
               / f"decoded-{digest[:16]}-v{DECODED_LAYOUT}-{split}.npz")
    cached = read_decoded(decoded)
    if cached is not None:
        return cached
    x, y = _decode_jpeg_split(fetch("cifar10-jpeg", CIFAR10_JPEG_ARCHIVE), split)
    try:
        with atomic_path(decoded) as tmp, open(tmp, "wb") as stream:
            np.savez(stream, x=x, y=y, digest=np.asarray(decoded_digest(x, y)))
    except OSError as exc:  # a read-only cache only costs the next call a decode
        _log.info("could not keep the decoded CIFAR-10 proxy in %s: %s", decoded, exc)
    return x, y


def load_cifar10(split: str = "train", *, allow_proxy: bool = True) -> Cifar10Images:
    """CIFAR-10 images and labels of one split.

    Parameters
    ----------
    split
        ``"train"`` (50,000 images) or ``"test"`` (10,000).
    allow_proxy
        When the canonical archive cannot be had (not cached, not mirrored, and no
        download allowed), use the JPEG proxy of the offline mirror instead; the
        result's ``name`` then says so. False: canonical data or an error.

    Raises
    ------
    DatasetUnavailableError
        If neither is available; the message says how to provide either.
    """
    _check_split(split)
    try:
        x, y = _read_python_batches(fetch("cifar10", CIFAR10_ARCHIVE), split)
        name = NAME
    except DatasetUnavailableError as canonical:
        if not allow_proxy:
            raise
        try:
            x, y = _load_jpeg_proxy(split)
        except DatasetUnavailableError as proxy:
            raise DatasetUnavailableError(
                f"CIFAR-10 is not available, neither the canonical archive nor the JPEG "
                f"proxy.\n\nCanonical archive:\n{canonical}\n\nJPEG proxy:\n{proxy}"
            ) from None
        name = PROXY_NAME
    if len(x) != len(y) or (len(y) and (y.min() < 0 or y.max() >= len(CLASSES))):
        raise DatasetError(f"CIFAR-10 {split}: {len(x)} images, {len(y)} labels in "
                           f"[{y.min() if len(y) else '-'}, {y.max() if len(y) else '-'}]")
    return Cifar10Images(x=x, y=y, name=name)
