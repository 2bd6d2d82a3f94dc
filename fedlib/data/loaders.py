"""Loaders of the real datasets: plain numpy arrays, fetched and verified on first use."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedlib.data.errors import DatasetError
from fedlib.data.fetch import fetch
from fedlib.data.idx import read_idx

SPLITS = ("train", "test")
_IDX_PREFIX = {"train": "train", "test": "t10k"}
FEMNIST_DIGITS_FILE = "femnist-digits-leaf-sample.npz"


def _idx_prefix(split: str) -> str:
    try:
        return _IDX_PREFIX[split]
    except (KeyError, TypeError):
        raise ValueError(f"unknown split {split!r}; use one of {SPLITS}") from None


def _load_idx_images(dataset: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    prefix = _idx_prefix(split)
    x = read_idx(fetch(dataset, f"{prefix}-images-idx3-ubyte.gz"))
    y = read_idx(fetch(dataset, f"{prefix}-labels-idx1-ubyte.gz"))
    if x.dtype != np.uint8 or x.ndim != 3 or x.shape[1:] != (28, 28):
        raise DatasetError(
            f"{dataset} {split} images: expected uint8 (n, 28, 28), got {x.dtype} {x.shape}"
        )
    if y.ndim != 1 or len(y) != len(x):
        raise DatasetError(f"{dataset} {split}: {len(x)} images but labels of shape {y.shape}")
    return x, y.astype(np.int64)


def load_mnist(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """MNIST digits.

    Parameters
    ----------
    split
        ``"train"`` (60,000 images) or ``"test"`` (10,000).

    Returns
    -------
    x : numpy.ndarray
        uint8 ``(n, 28, 28)``, 0 = background, 255 = ink.
    y : numpy.ndarray
        int64 ``(n,)``, digits 0-9.
    """
    return _load_idx_images("mnist", split)


def load_fashion_mnist(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST, same layout as :func:`load_mnist` (10 clothing classes, 0-9)."""
    return _load_idx_images("fashion-mnist", split)


@dataclass(frozen=True, eq=False)
class FemnistDigits:
    """Federated EMNIST digits, one row per image.

    Attributes
    ----------
    x
        float32 ``(n, 28, 28)`` in [0, 1], background 0 and ink near 1 (MNIST polarity).
    y
        int64 ``(n,)``, digits 0-9.
    writer
        int64 ``(n,)``, the row's writer as an index into ``writer_ids``.
    writer_ids
        str ``(n_writers,)``, LEAF writer identifiers.
    """

    x: np.ndarray
    y: np.ndarray
    writer: np.ndarray
    writer_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    @property
    def n_writers(self) -> int:
        return len(self.writer_ids)


def load_femnist_digits() -> FemnistDigits:
    """Digits of LEAF's 5% non-IID FEMNIST sample, with the writer of each image.

    The stored images are uint8 with LEAF's polarity (white background = 255, mean
    pixel about 245); they are inverted and scaled here so that background is 0 as
    in MNIST. Use :func:`fedlib.data.natural_partition` on ``writer`` for one client
    per writer.
    """
    path = fetch("femnist-digits", FEMNIST_DIGITS_FILE)
    with np.load(path, allow_pickle=False) as npz:
        missing = {"x", "y", "writer_index", "writer_ids"} - set(npz.files)
        if missing:
            raise DatasetError(f"{path} lacks the arrays {sorted(missing)}")
        raw, y, writer, writer_ids = (npz["x"], npz["y"], npz["writer_index"], npz["writer_ids"])
    n = len(raw)
    if raw.dtype != np.uint8 or raw.shape[1:] != (28, 28):
        raise DatasetError(
            f"{path}: expected uint8 (n, 28, 28) images, got {raw.dtype} {raw.shape}"
        )
    if y.shape != (n,) or writer.shape != (n,):
        raise DatasetError(f"{path}: {n} images but y {y.shape} and writers {writer.shape}")
    if writer_ids.dtype.kind != "U":
        raise DatasetError(f"{path}: writer_ids should be strings, got {writer_ids.dtype}")
    if n and (writer.min() < 0 or writer.max() >= len(writer_ids)):
        raise DatasetError(f"{path}: writer_index out of range of the {len(writer_ids)} ids")
    x = (255 - raw).astype(np.float32)
    x /= 255.0
    return FemnistDigits(
        x=x,
        y=y.astype(np.int64),
        writer=writer.astype(np.int64),
        writer_ids=writer_ids,
    )
