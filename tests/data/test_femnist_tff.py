"""TFF federated EMNIST HDF5 files: structure checks, polarity, split, safe extraction."""

from __future__ import annotations

import io
import tarfile
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest

from fedlib.data import femnist_tff, registry
from fedlib.data.errors import DatasetError, DatasetUnavailableError
from fedlib.data.fetch import content_sha256


def write_tff_emnist(path: Path, writers: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """A file with TFF's layout: examples/<writer>/{pixels, label}."""
    with h5py.File(path, "w") as h5:
        examples = h5.create_group("examples")
        for writer, (pixels, labels) in writers.items():
            group = examples.create_group(writer)
            group.create_dataset("pixels", data=pixels.astype(np.float32))
            group.create_dataset("label", data=labels.astype(np.int32))


def _writer(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pixels = np.ones((n, 28, 28), dtype=np.float32)  # white background, as TFF stores it
    pixels[:, 10:18, 12:16] = rng.random((n, 8, 4)) * 0.2  # dark ink
    return pixels, rng.integers(0, 10, n)


@pytest.fixture
def tff_files(tmp_path: Path) -> tuple[Path, Path]:
    train, test = tmp_path / femnist_tff.TRAIN_FILE, tmp_path / femnist_tff.TEST_FILE
    write_tff_emnist(train, {"f0002_07": _writer(5, 1), "f0001_41": _writer(4, 2)})
    write_tff_emnist(test, {"f0001_41": _writer(2, 3), "f0002_07": _writer(1, 4)})
    return train, test


def test_reads_writers_with_the_official_split_in_tff_polarity(tff_files) -> None:
    data = femnist_tff.read_tff_digits(*tff_files)
    assert list(data.writer_ids) == ["f0001_41", "f0002_07"]  # sorted
    assert data.x_train.shape == (9, 28, 28) and data.x_test.shape == (3, 28, 28)
    assert np.bincount(data.writer_train).tolist() == [4, 5]
    assert np.bincount(data.writer_test).tolist() == [2, 1]
    np.testing.assert_array_equal(data.x_train[:4], _writer(4, 2)[0])
    np.testing.assert_array_equal(data.y_test[:2], _writer(2, 3)[1])
    assert np.median(data.x_train) == 1.0  # background stays 1.0
    first = femnist_tff.read_tff_digits(*tff_files, max_writers=1)
    assert first.n_writers == 1 and len(first.y_train) == 4


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda h5: h5.move("examples", "other"), "no 'examples' group"),
        (lambda h5: h5["examples/f0001_41"].move("label", "labels"), "expected 'pixels'"),
        (lambda h5: (h5["examples/f0001_41"].__delitem__("pixels"),
                     h5["examples/f0001_41"].create_dataset("pixels", data=np.zeros((4, 28, 27)))),
         "expected float"),
        (lambda h5: h5["examples/f0001_41/pixels"].__setitem__((0, 0, 0), 255.0), "leave"),
    ],
)
def test_structure_deviations_are_errors(tff_files, mutate, message) -> None:
    train, test = tff_files
    with h5py.File(train, "a") as h5:
        mutate(h5)
    with pytest.raises(DatasetError, match=message):
        femnist_tff.read_tff_digits(train, test)


def test_letters_file_is_refused_as_digits(tmp_path: Path) -> None:
    train, test = tmp_path / "a.h5", tmp_path / "b.h5"
    pixels, _ = _writer(3, 0)
    write_tff_emnist(train, {"w": (pixels, np.array([1, 40, 2]))})
    write_tff_emnist(test, {"w": (pixels[:1], np.array([3]))})
    with pytest.raises(DatasetError, match="digits-only"):
        femnist_tff.read_tff_digits(train, test)


def _tar_bz2(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:bz2") as tar:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return path


def test_extraction_writes_only_the_named_members_by_base_name(tmp_path: Path) -> None:
    archive = _tar_bz2(tmp_path / "a.tar.bz2", {
        "datasets/wanted.h5": b"payload", "../../escape.h5": b"evil", "other.txt": b"x"})
    out = femnist_tff.extract_members(archive, ["wanted.h5"], tmp_path / "out")
    assert out["wanted.h5"].read_bytes() == b"payload"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["wanted.h5"]
    assert not (tmp_path.parent / "escape.h5").exists()
    with pytest.raises(DatasetError, match="lacks the members"):
        femnist_tff.extract_members(archive, ["absent.h5"], tmp_path / "out2")


def test_load_reads_a_verified_archive_from_the_mirror(tff_files, tmp_path, monkeypatch) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "femnist-tff").mkdir(parents=True)
    archive = _tar_bz2(mirror / "femnist-tff" / femnist_tff.ARCHIVE,
                       {f"datasets/{p.name}": p.read_bytes() for p in tff_files})
    entry = registry.get_file(femnist_tff.DATASET, femnist_tff.ARCHIVE)
    monkeypatch.setitem(registry.REGISTRY, femnist_tff.DATASET,
                        {femnist_tff.ARCHIVE: replace(entry, sha256=content_sha256(archive))})
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("FEDLIB_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FEDLIB_OFFLINE", "1")
    data = femnist_tff.load_tff_digits()
    assert data.n_writers == 2 and len(data.y_train) == 9


def test_registry_pins_tffs_archive_digest_and_offline_absence_is_clear(tmp_path,
                                                                      monkeypatch) -> None:
    entry = registry.get_file("femnist-tff", femnist_tff.ARCHIVE)
    assert entry.sha256 == "55333deb8546765427c385710ca5e7301e16f4ed8b60c1dc5ae224b42bd5b14b"
    assert entry.url.endswith("/fed_emnist_digitsonly.tar.bz2")
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(tmp_path))
    monkeypatch.setenv("FEDLIB_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FEDLIB_OFFLINE", "1")
    with pytest.raises(DatasetUnavailableError):
        femnist_tff.load_tff_digits()
