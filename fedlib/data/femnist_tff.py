"""Federated EMNIST digits in TensorFlow Federated's HDF5 layout (TFF ``emnist`` loader).

The canonical archive ``fed_emnist_digitsonly.tar.bz2`` holds two files,
``fed_emnist_digitsonly_train.h5`` and ``fed_emnist_digitsonly_test.h5``, each
with one group per writer::

    examples/<writer_id>/pixels   float32 (n, 28, 28), values in [0, 1], 1.0 = background
    examples/<writer_id>/label    int (n,), digits 0-9

The split is TFF's: every writer has examples in both files (3,383 writers,
341,873 train and 40,832 test examples). The pixels are kept in TFF's polarity
(white background = 1.0, ink = 0.0), which is what models trained on this
source (the PPSGD authors' included) see; ``1 - pixels`` gives MNIST's.

The archive is verified by the SHA-256 that TFF's own loader pinned; the two
HDF5 members have no published digest, so their structure is checked instead
(groups, names, shapes, dtypes, value range) and any deviation is an error.
"""

from __future__ import annotations

import shutil
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedlib.data.errors import DatasetError
from fedlib.data.fetch import fetch

DATASET = "femnist-tff"
ARCHIVE = "fed_emnist_digitsonly.tar.bz2"
TRAIN_FILE = "fed_emnist_digitsonly_train.h5"
TEST_FILE = "fed_emnist_digitsonly_test.h5"


def _h5py():
    try:
        import h5py
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reading TFF HDF5 files needs h5py: pip install 'h5py>=3.8' "
            "(or install the project's environment)"
        ) from error
    return h5py


def extract_members(archive: Path, names: Iterable[str], folder: Path) -> dict[str, Path]:
    """Extract the regular files ``names`` of a tar archive into ``folder``, by base name.

    Only those members are written, each to ``folder/<base name>`` (never to a
    path taken from the archive), so a hostile archive cannot write elsewhere.
    Members already extracted are reused.
    """
    wanted = set(names)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / name for name in wanted}
    if all(p.is_file() for p in paths.values()):
        return paths
    found = set()
    with tarfile.open(archive) as tar:
        for member in tar:
            base = Path(member.name).name
            if base not in wanted or not member.isfile():
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            partial = paths[base].with_name(base + ".partial")
            with source, open(partial, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            partial.replace(paths[base])
            found.add(base)
    missing = wanted - found - {n for n, p in paths.items() if p.is_file()}
    if missing:
        raise DatasetError(
            f"{archive} lacks the members {sorted(missing)}: not the expected archive"
        )
    return paths


def read_writers(path: str | Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every writer of one TFF EMNIST HDF5 file: ``{writer_id: (pixels, labels)}``.

    Raises
    ------
    DatasetError
        If the file does not have TFF's structure: a group ``examples`` of
        writer groups, each with ``pixels`` float (n, 28, 28) in [0, 1] and
        ``label`` integer (n,) in 0..61.
    """
    h5py = _h5py()
    path = Path(path)
    writers: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    with h5py.File(path, "r") as h5:
        if "examples" not in h5:
            raise DatasetError(
                f"{path}: no 'examples' group (top level has {sorted(h5)}); this is not a "
                "TFF federated EMNIST file"
            )
        for writer_id, group in h5["examples"].items():
            if not {"pixels", "label"} <= set(group):
                raise DatasetError(
                    f"{path}: writer {writer_id} has {sorted(group)}, expected 'pixels' and 'label'"
                )
            pixels = np.asarray(group["pixels"][()])
            labels = np.asarray(group["label"][()]).reshape(-1)
            if pixels.ndim != 3 or pixels.shape[1:] != (28, 28) or pixels.dtype.kind != "f":
                raise DatasetError(
                    f"{path}: writer {writer_id} pixels are {pixels.dtype} {pixels.shape}, "
                    "expected float (n, 28, 28)"
                )
            if labels.dtype.kind not in "iu" or len(labels) != len(pixels):
                raise DatasetError(
                    f"{path}: writer {writer_id} has {len(pixels)} images but labels "
                    f"{labels.dtype} {labels.shape}"
                )
            if pixels.size and (pixels.min() < 0.0 or pixels.max() > 1.0):
                raise DatasetError(
                    f"{path}: writer {writer_id} pixels leave [0, 1] "
                    f"({pixels.min():g}..{pixels.max():g}); TFF stores floats in [0, 1]"
                )
            if labels.size and (labels.min() < 0 or labels.max() > 61):
                raise DatasetError(f"{path}: writer {writer_id} has labels outside 0..61")
            writers[writer_id] = (pixels.astype(np.float32), labels.astype(np.int64))
    if not writers:
        raise DatasetError(f"{path}: the 'examples' group is empty")
    return writers


@dataclass(frozen=True, eq=False)
class TFFDigits:
    """Federated EMNIST digits with TFF's per-writer train/test split.

    Attributes
    ----------
    x_train, x_test
        float32 ``(n, 28, 28)``, TFF polarity (1.0 = background).
    y_train, y_test
        int64 digits.
    writer_train, writer_test
        int64 index into ``writer_ids`` of each example.
    writer_ids
        str ``(n_writers,)``, sorted.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    writer_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    writer_test: np.ndarray
    writer_ids: np.ndarray

    @property
    def n_writers(self) -> int:
        return len(self.writer_ids)


def _stack(writers: dict[str, tuple[np.ndarray, np.ndarray]], order: dict[str, int]):
    ids = sorted(writers)
    x = np.concatenate([writers[w][0] for w in ids]) if ids else np.zeros((0, 28, 28), np.float32)
    y = np.concatenate([writers[w][1] for w in ids]) if ids else np.zeros(0, np.int64)
    index = np.concatenate([np.full(len(writers[w][1]), order[w]) for w in ids]) if ids else y
    return x, y, index.astype(np.int64)


def read_tff_digits(train_path: str | Path, test_path: str | Path,
                    max_writers: int | None = None) -> TFFDigits:
    """Both TFF files as arrays; writers are those of the train file, in sorted order.

    Parameters
    ----------
    train_path, test_path
        ``fed_emnist_digitsonly_train.h5`` and ``..._test.h5``.
    max_writers
        Keep the first writers in sorted id order (the authors took the first N).
    """
    train = read_writers(train_path)
    test = read_writers(test_path)
    ids = sorted(train)[:max_writers]
    missing = [w for w in ids if w not in test]
    if missing:
        raise DatasetError(
            f"{len(missing)} writers of {train_path} have no test examples in {test_path} "
            f"(e.g. {missing[0]}); TFF's split gives every writer both"
        )
    order = {w: i for i, w in enumerate(ids)}
    x_train, y_train, w_train = _stack({w: train[w] for w in ids}, order)
    x_test, y_test, w_test = _stack({w: test[w] for w in ids}, order)
    for name, y in (("train", y_train), ("test", y_test)):
        if y.size and y.max() > 9:
            raise DatasetError(f"{name} labels go up to {y.max()}: not the digits-only files")
    return TFFDigits(x_train, y_train, w_train, x_test, y_test, w_test, np.array(ids))


def load_tff_digits(max_writers: int | None = None) -> TFFDigits:
    """Fetch (cache, mirror or download), verify and read TFF's federated EMNIST digits.

    The archive is checked against TFF's published SHA-256, extracted next to
    it (only its two HDF5 members), and the HDF5 structure is validated.
    """
    archive = fetch(DATASET, ARCHIVE)
    from fedlib.paths import data_dir

    folder = data_dir() / DATASET / "extracted"
    paths = extract_members(archive, (TRAIN_FILE, TEST_FILE), folder)
    return read_tff_digits(paths[TRAIN_FILE], paths[TEST_FILE], max_writers=max_writers)
