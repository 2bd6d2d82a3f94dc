"""Loaders on small generated files, served through a fake mirror."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedlib.data import REGISTRY, DatasetError, load_femnist_digits, load_mnist, write_idx
from fedlib.data.fetch import content_sha256
from fedlib.data.registry import RemoteFile


def _serve(monkeypatch, mirror: Path, dataset: str, files: dict[str, Path]) -> None:
    """Register the generated files under ``dataset`` with their real content hashes."""
    entries = {}
    for name, path in files.items():
        old = REGISTRY[dataset][name]
        entries[name] = RemoteFile(**{**old.__dict__, "sha256": content_sha256(path)})
    monkeypatch.setitem(REGISTRY, dataset, entries)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))


def test_load_mnist_reads_generated_idx_files(tmp_path: Path, monkeypatch) -> None:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(7, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5, 9, 2], dtype=np.uint8)
    folder = tmp_path / "mirror" / "mnist"
    folder.mkdir(parents=True)
    files = {
        "train-images-idx3-ubyte.gz": write_idx(folder / "train-images-idx3-ubyte.gz", images),
        "train-labels-idx1-ubyte.gz": write_idx(folder / "train-labels-idx1-ubyte.gz", labels),
    }
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        files[name] = write_idx(folder / name, images[:2] if "images" in name else labels[:2])
    _serve(monkeypatch, tmp_path / "mirror", "mnist", files)
    x, y = load_mnist("train")
    np.testing.assert_array_equal(x, images)
    np.testing.assert_array_equal(y, labels.astype(np.int64))
    assert y.dtype == np.int64


def _femnist_npz(path: Path, x: np.ndarray, **overrides: np.ndarray) -> Path:
    arrays = {
        "x": x,
        "y": np.array([0, 7, 7], dtype=np.uint8),
        "writer_index": np.array([1, 0, 1], dtype=np.int32),
        "writer_ids": np.array(["f0001_00", "f0002_17"]),
        **overrides,
    }
    np.savez(path, **arrays)
    return path


def test_load_femnist_digits_inverts_leaf_polarity(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "mirror" / "femnist"
    folder.mkdir(parents=True)
    x = np.full((3, 28, 28), 255, dtype=np.uint8)  # white background
    x[:, 10:18, 12:16] = 0  # a black stroke
    path = _femnist_npz(folder / "femnist-digits-leaf-sample.npz", x)
    _serve(monkeypatch, tmp_path / "mirror", "femnist-digits",
           {"femnist-digits-leaf-sample.npz": path})
    data = load_femnist_digits()
    assert data.x.dtype == np.float32
    assert data.x[0, 0, 0] == 0.0 and data.x[0, 12, 13] == 1.0
    np.testing.assert_array_equal(data.y, [0, 7, 7])
    np.testing.assert_array_equal(data.writer_ids[data.writer], ["f0002_17", "f0001_00",
                                                                 "f0002_17"])


def test_load_femnist_digits_rejects_a_malformed_file(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "mirror" / "femnist"
    folder.mkdir(parents=True)
    x = np.zeros((3, 28, 28), dtype=np.uint8)
    path = _femnist_npz(folder / "femnist-digits-leaf-sample.npz", x,
                        writer_index=np.array([0, 1, 5], dtype=np.int32))
    _serve(monkeypatch, tmp_path / "mirror", "femnist-digits",
           {"femnist-digits-leaf-sample.npz": path})
    with pytest.raises(DatasetError, match="writer_index out of range"):
        load_femnist_digits()

