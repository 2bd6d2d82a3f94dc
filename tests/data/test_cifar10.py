"""CIFAR-10: canonical python batches and the JPEG proxy, on generated archives."""

from __future__ import annotations

import hashlib
import io
import logging
import pickle
import tarfile
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
from conftest import require_datasets
from PIL import Image

from fedlib.data import REGISTRY, DatasetError, DatasetUnavailableError
from fedlib.data.cifar10 import (
    CLASSES,
    NAME,
    PROXY_NAME,
    decoded_digest,
    load_cifar10,
    read_decoded,
)
from fedlib.data.fetch import content_sha256
from fedlib.data.registry import CIFAR10_ARCHIVE, CIFAR10_JPEG_ARCHIVE, RemoteFile


def _register(monkeypatch, dataset: str, filename: str, path: Path) -> None:
    old = REGISTRY[dataset][filename]
    entry = RemoteFile(**{**old.__dict__, "sha256": content_sha256(path)})
    monkeypatch.setitem(REGISTRY, dataset, {filename: entry})


def _add(archive: tarfile.TarFile, name: str, payload: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    archive.addfile(info, io.BytesIO(payload))


def _python_archive(path: Path, batches: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for name, content in batches.items():
            _add(archive, f"cifar-10-batches-py/{name}", pickle.dumps(content, protocol=2))
        _add(archive, "cifar-10-batches-py/readme.html", b"<html></html>")
    return path


def _batch(rng: np.random.Generator, n: int) -> dict[bytes, object]:
    return {b"batch_label": b"generated", b"labels": [int(v) for v in rng.integers(0, 10, n)],
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            b"filenames": [b"x.png"] * n}


def test_canonical_batches_are_read_as_rgb_images(tmp_path, monkeypatch) -> None:
    rng = np.random.default_rng(0)
    batches = {f"data_batch_{i}": _batch(rng, 3) for i in range(1, 6)}
    batches["test_batch"] = _batch(rng, 2)
    mirror = tmp_path / "mirror"
    archive = _python_archive(mirror / "cifar10" / CIFAR10_ARCHIVE, batches)
    _register(monkeypatch, "cifar10", CIFAR10_ARCHIVE, archive)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))

    train = load_cifar10("train")
    assert train.name == NAME and not train.is_proxy
    assert train.x.shape == (15, 32, 32, 3) and train.x.dtype == np.uint8
    first = batches["data_batch_1"][b"data"][0]
    # A row is the red plane, then green, then blue, each 32 rows of 32 pixels.
    assert train.x[0, 0, 0, 0] == first[0]
    assert train.x[0, 0, 1, 0] == first[1]
    assert train.x[0, 1, 0, 0] == first[32]
    assert train.x[0, 0, 0, 1] == first[1024]
    assert train.x[0, 2, 3, 2] == first[2048 + 2 * 32 + 3]
    expected_labels = np.concatenate([batches[f"data_batch_{i}"][b"labels"] for i in range(1, 6)])
    np.testing.assert_array_equal(train.y, expected_labels)
    assert train.y.dtype == np.int64
    test = load_cifar10("test")
    np.testing.assert_array_equal(test.x[1].transpose(2, 0, 1).reshape(-1),
                                  batches["test_batch"][b"data"][1])


def test_archive_digest_is_of_the_compressed_file(tmp_path) -> None:
    archive = _python_archive(tmp_path / CIFAR10_ARCHIVE, {"test_batch": {b"x": 1}})
    assert content_sha256(archive) == hashlib.sha256(archive.read_bytes()).hexdigest()


def test_batches_with_foreign_objects_are_refused(tmp_path, monkeypatch) -> None:
    batches = {f"data_batch_{i}": {b"data": OrderedDict(), b"labels": []} for i in range(1, 6)}
    mirror = tmp_path / "mirror"
    archive = _python_archive(mirror / "cifar10" / CIFAR10_ARCHIVE, batches)
    _register(monkeypatch, "cifar10", CIFAR10_ARCHIVE, archive)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))
    with pytest.raises(DatasetError, match="collections.OrderedDict"):
        load_cifar10("train")


COLOURS = {"cat": (200, 30, 30), "ship": (20, 40, 220), "truck": (90, 200, 60)}


def _jpeg(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (32, 32), colour).save(out, format="JPEG", quality=75)
    return out.getvalue()


def _proxy_archive(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as archive:
        for split, count in (("train", 2), ("test", 1)):
            for cls, colour in COLOURS.items():
                for i in range(count):
                    _add(archive, f"{split}/{cls}/{i:04d}.jpg", _jpeg(colour))
    return path


def test_jpeg_proxy_is_used_and_labelled_when_the_archive_is_missing(tmp_path,
                                                                       monkeypatch) -> None:
    mirror = tmp_path / "mirror"
    proxy = _proxy_archive(mirror / "cifar10-jpeg" / CIFAR10_JPEG_ARCHIVE)
    _register(monkeypatch, "cifar10-jpeg", CIFAR10_JPEG_ARCHIVE, proxy)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))

    train = load_cifar10("train")
    assert train.name == PROXY_NAME and train.is_proxy
    assert train.x.shape == (6, 32, 32, 3)
    order = sorted(COLOURS)  # class folders, then file names
    np.testing.assert_array_equal(train.y, np.repeat([CLASSES.index(c) for c in order], 2))
    for image, cls in zip(train.x, np.repeat(order, 2), strict=True):
        # A flat colour survives JPEG up to a few levels of rounding.
        assert np.abs(image.astype(int) - np.array(COLOURS[cls])).max() <= 4
    again = load_cifar10("train")
    np.testing.assert_array_equal(again.x, train.x)
    assert len(load_cifar10("test")) == 3

    with pytest.raises(DatasetUnavailableError, match="cifar-10-python.tar.gz"):
        load_cifar10("train", allow_proxy=False)


def test_decoded_proxy_lands_in_the_cache(tmp_path, monkeypatch) -> None:
    mirror = tmp_path / "mirror"
    proxy = _proxy_archive(mirror / "cifar10-jpeg" / CIFAR10_JPEG_ARCHIVE)
    _register(monkeypatch, "cifar10-jpeg", CIFAR10_JPEG_ARCHIVE, proxy)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("FEDLIB_DATA_DIR", str(tmp_path / "cache"))
    first = load_cifar10("test")
    files = list((tmp_path / "cache" / "cifar10-jpeg").glob("decoded-*-test.npz"))
    assert len(files) == 1
    with np.load(files[0]) as npz:
        np.testing.assert_array_equal(npz["x"], first.x)
    assert not list(mirror.rglob("*.npz"))  # the mirror is never written to


def test_a_damaged_decoded_cache_is_decoded_again(tmp_path, monkeypatch, caplog) -> None:
    """A cached decoded proxy whose bytes changed, that was cut short, or that lacks its
    digest is reported, removed and decoded again from the archive."""
    mirror = tmp_path / "mirror"
    proxy = _proxy_archive(mirror / "cifar10-jpeg" / CIFAR10_JPEG_ARCHIVE)
    _register(monkeypatch, "cifar10-jpeg", CIFAR10_JPEG_ARCHIVE, proxy)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("FEDLIB_DATA_DIR", str(tmp_path / "cache"))
    first = load_cifar10("train")
    (cached,) = (tmp_path / "cache" / "cifar10-jpeg").glob("decoded-*-train.npz")
    good = cached.read_bytes()
    with np.load(cached) as npz:
        x, y = npz["x"].copy(), npz["y"]
    x[0, 0, 0, 0] ^= 0xFF  # one pixel changed, the stored digest kept
    with open(cached, "wb") as stream:
        np.savez(stream, x=x, y=y, digest=np.asarray(decoded_digest(first.x, first.y)))
    damaged = [cached.read_bytes(), good[: len(good) // 2], b""]
    with open(cached, "wb") as stream:
        np.savez(stream, x=first.x, y=first.y)  # an older layout: no digest
    damaged.append(cached.read_bytes())
    for content in damaged:
        cached.write_bytes(content)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="fedlib.data.cifar10"):
            again = load_cifar10("train")
        np.testing.assert_array_equal(again.x, first.x)
        assert "is damaged" in caplog.text and cached.name in caplog.text
        assert cached.read_bytes() != content  # decoded and written again
        assert read_decoded(cached) is not None


def test_unknown_class_folder_is_an_error(tmp_path, monkeypatch) -> None:
    mirror = tmp_path / "mirror"
    path = mirror / "cifar10-jpeg" / CIFAR10_JPEG_ARCHIVE
    path.parent.mkdir(parents=True)
    with tarfile.open(path, "w") as archive:
        _add(archive, "train/zebra/0000.jpg", _jpeg((0, 0, 0)))
    _register(monkeypatch, "cifar10-jpeg", CIFAR10_JPEG_ARCHIVE, path)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))
    with pytest.raises(DatasetError, match="zebra"):
        load_cifar10("train")


def test_nothing_available_names_both_sources(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(tmp_path / "empty"))
    with pytest.raises(DatasetUnavailableError) as error:
        load_cifar10("test")
    text = str(error.value)
    assert "cifar-10-python.tar.gz" in text and "cifar10-jpeg-q75.tar" in text
    with pytest.raises(ValueError, match="unknown split"):
        load_cifar10("validation")


def test_mirror_proxy_has_every_test_image(mirror) -> None:
    require_datasets("cifar10-jpeg")
    test = load_cifar10("test")
    assert test.name == PROXY_NAME
    assert test.x.shape == (10_000, 32, 32, 3)
    np.testing.assert_array_equal(np.bincount(test.y), np.full(10, 1000))
    # Natural images: mean brightness of the real test set is about 121 of 255.
    assert 110 < test.x.mean() < 130
