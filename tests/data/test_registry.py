"""fedlib.data: IDX format, registry, fetching (cache, mirror, download) and real loaders."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import os
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fedlib.data import (
    REGISTRY,
    ChecksumMismatchError,
    DatasetError,
    DatasetUnavailableError,
    IDXFormatError,
    RemoteFile,
    UnknownDatasetError,
    content_sha256,
    dataset_files,
    fetch,
    list_datasets,
    load_fashion_mnist,
    load_femnist_digits,
    load_mnist,
    natural_partition,
    read_idx,
    write_idx,
)
from fedlib.paths import data_dir

TOY = "toy"
TOY_FILE = "toy-labels-idx1-ubyte.gz"
TOY_URL = "https://example.invalid/toy/" + TOY_FILE


def _idx_bytes(values: np.ndarray) -> bytes:
    """An IDX file built by hand from the format's definition (uint8 only)."""
    assert values.dtype == np.uint8
    dims = struct.pack(f">{values.ndim}I", *values.shape)
    return bytes([0, 0, 0x08, values.ndim]) + dims + values.tobytes()


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


# --------------------------------------------------------------------------- IDX


@pytest.mark.parametrize("suffix", ["", ".gz"])
@pytest.mark.parametrize("dtype", ["u1", "i1", "i2", "i4", "f4", "f8"])
def test_idx_roundtrip(tmp_path: Path, suffix: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    array = (rng.normal(size=(3, 4, 5)) * 50).astype(dtype)
    path = write_idx(tmp_path / f"a.idx{suffix}", array)
    back = read_idx(path)
    assert back.dtype == np.dtype(dtype)
    assert back.dtype.isnative
    assert back.shape == (3, 4, 5)
    np.testing.assert_array_equal(back, array)
    back[0, 0, 0] = 1  # a writable array, not a view of a bytes buffer


def test_idx_layout_matches_the_format(tmp_path: Path) -> None:
    array = np.arange(6, dtype=">i4").reshape(2, 3) - 3
    raw = write_idx(tmp_path / "a.idx", array).read_bytes()
    assert raw[:4] == b"\x00\x00\x0c\x02"
    assert struct.unpack(">2I", raw[4:12]) == (2, 3)
    assert struct.unpack(">6i", raw[12:]) == tuple(range(-3, 3))
    packed = write_idx(tmp_path / "a.idx.gz", array).read_bytes()
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == raw


def test_read_idx_of_hand_built_files(tmp_path: Path) -> None:
    values = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    (tmp_path / "raw").write_bytes(_idx_bytes(values))
    (tmp_path / "packed.gz").write_bytes(gzip.compress(_idx_bytes(values)))
    np.testing.assert_array_equal(read_idx(tmp_path / "raw"), values)
    np.testing.assert_array_equal(read_idx(tmp_path / "packed.gz"), values)


def test_read_idx_rejects_bad_magic(tmp_path: Path) -> None:
    path = tmp_path / "bad"
    path.write_bytes(b"\x12\x34" + _idx_bytes(np.zeros(4, np.uint8))[2:])
    with pytest.raises(IDXFormatError, match="not an IDX file: magic number 1234"):
        read_idx(path)


def test_read_idx_rejects_unknown_type_code(tmp_path: Path) -> None:
    path = tmp_path / "bad"
    path.write_bytes(b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x00")
    with pytest.raises(IDXFormatError, match="unknown IDX type code 0x07"):
        read_idx(path)


@pytest.mark.parametrize("delta", [-1, 1])
def test_read_idx_rejects_wrong_size(tmp_path: Path, delta: int) -> None:
    good = _idx_bytes(np.zeros((2, 3), np.uint8))
    path = tmp_path / "bad"
    path.write_bytes(good[:-1] if delta < 0 else good + b"\x00")
    with pytest.raises(IDXFormatError, match=rf"shape \(2, 3\).*{len(good) + delta} bytes"):
        read_idx(path)


def test_read_idx_rejects_damaged_gzip(tmp_path: Path) -> None:
    path = tmp_path / "bad.gz"
    path.write_bytes(gzip.compress(_idx_bytes(np.zeros(100, np.uint8)))[:-12])
    with pytest.raises(IDXFormatError, match="damaged gzip"):
        read_idx(path)


def test_write_idx_rejects_unsupported_dtype(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot store dtype"):
        write_idx(tmp_path / "a.idx", np.zeros(3, np.uint16))


# ------------------------------------------------------------------ content hashes


def test_content_hash_of_gz_is_the_hash_of_the_decompressed_bytes(tmp_path: Path) -> None:
    payload = _idx_bytes(np.arange(200, dtype=np.uint8))
    expected = hashlib.sha256(payload).hexdigest()
    a = tmp_path / "a.gz"
    b = tmp_path / "b.gz"
    a.write_bytes(gzip.compress(payload, compresslevel=9, mtime=0))
    b.write_bytes(gzip.compress(payload, compresslevel=1, mtime=123456))
    assert a.read_bytes() != b.read_bytes()
    assert content_sha256(a) == content_sha256(b) == expected
    raw = tmp_path / "raw.bin"
    raw.write_bytes(a.read_bytes())  # no .gz suffix: the bytes as stored
    assert content_sha256(raw) == hashlib.sha256(a.read_bytes()).hexdigest()


# ------------------------------------------------------------------------ registry


def test_registry_lists_the_datasets() -> None:
    assert {"mnist", "fashion-mnist", "femnist-digits"} <= set(list_datasets())
    for name in ("mnist", "fashion-mnist"):
        files = dataset_files(name)
        assert len(files) == 4
        for entry in files.values():
            assert entry.url is not None and entry.url.endswith("/" + entry.filename)
            assert entry.mirror_path == f"{name}/{entry.filename}"
            assert len(entry.sha256) == 64
            assert entry.license and entry.citation
    (femnist,) = dataset_files("femnist-digits").values()
    assert femnist.url is None
    assert femnist.mirror_path == "femnist/femnist-digits-leaf-sample.npz"
    assert "fed_emnist_digitsonly.tar.bz2" in femnist.source
    assert "Caldas" in femnist.citation and "Cohen" in femnist.citation


def test_unknown_dataset_lists_valid_names() -> None:
    with pytest.raises(UnknownDatasetError) as info:
        fetch("mnits", "train-images-idx3-ubyte.gz")
    message = str(info.value)
    assert "'mnits'" in message
    for name in list_datasets():
        assert repr(name) in message
    assert isinstance(info.value, KeyError) and isinstance(info.value, DatasetError)


def test_unknown_file_lists_the_dataset_files() -> None:
    with pytest.raises(UnknownDatasetError, match="t10k-labels-idx1-ubyte.gz"):
        fetch("mnist", "train-images.gz")


# ------------------------------------------------------------- fetch: fake mirror


@pytest.fixture
def toy_payload() -> bytes:
    return _idx_bytes(np.arange(50, dtype=np.uint8) % 10)


@pytest.fixture
def toy_entry(monkeypatch: pytest.MonkeyPatch, toy_payload: bytes) -> RemoteFile:
    """A registered one-file dataset whose content hash is that of ``toy_payload``."""
    entry = RemoteFile(
        dataset=TOY,
        filename=TOY_FILE,
        mirror_path=f"toyfolder/{TOY_FILE}",
        url=TOY_URL,
        sha256=hashlib.sha256(toy_payload).hexdigest(),
        license="CC0",
        citation="nobody",
        source="the tests",
    )
    monkeypatch.setitem(REGISTRY, TOY, {TOY_FILE: entry})
    return entry


def _register(monkeypatch: pytest.MonkeyPatch, entry: RemoteFile, **changes: object) -> RemoteFile:
    changed = RemoteFile(**{**entry.__dict__, **changes})
    monkeypatch.setitem(REGISTRY, TOY, {TOY_FILE: changed})
    return changed


@pytest.fixture
def fake_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toy_payload: bytes) -> Path:
    root = tmp_path / "mirror"
    (root / "toyfolder").mkdir(parents=True)
    (root / "toyfolder" / TOY_FILE).write_bytes(gzip.compress(toy_payload, mtime=0))
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(root))
    return root


def test_fetch_reads_the_mirror_in_place_and_never_writes_to_it(
    toy_entry: RemoteFile, fake_mirror: Path
) -> None:
    before = _snapshot(fake_mirror)
    path = fetch(TOY, TOY_FILE)
    assert path == fake_mirror / "toyfolder" / TOY_FILE
    np.testing.assert_array_equal(read_idx(path), np.arange(50) % 10)
    assert fetch(TOY, TOY_FILE) == path
    assert _snapshot(fake_mirror) == before
    assert not (data_dir() / TOY).exists()  # nothing copied into the cache either


def test_fetch_accepts_a_recompressed_mirror_copy(
    toy_entry: RemoteFile, fake_mirror: Path, toy_payload: bytes
) -> None:
    copy = fake_mirror / "toyfolder" / TOY_FILE
    copy.write_bytes(gzip.compress(toy_payload, compresslevel=1, mtime=987654321))
    assert fetch(TOY, TOY_FILE) == copy


def test_mirror_checksum_mismatch_names_path_and_both_hashes(
    monkeypatch: pytest.MonkeyPatch, toy_entry: RemoteFile, fake_mirror: Path, toy_payload: bytes
) -> None:
    wrong = hashlib.sha256(b"something else").hexdigest()
    _register(monkeypatch, toy_entry, sha256=wrong)
    before = _snapshot(fake_mirror)
    with pytest.raises(ChecksumMismatchError) as info:
        fetch(TOY, TOY_FILE)
    message = str(info.value)
    assert str(fake_mirror / "toyfolder" / TOY_FILE) in message
    assert wrong in message
    assert hashlib.sha256(toy_payload).hexdigest() in message
    assert "FEDLIB_DATA_MIRROR" in message
    assert info.value.expected == wrong
    assert _snapshot(fake_mirror) == before


def test_a_verified_cache_copy_wins_over_the_mirror(
    toy_entry: RemoteFile, fake_mirror: Path, toy_payload: bytes
) -> None:
    cached = data_dir() / TOY / TOY_FILE
    cached.parent.mkdir(parents=True)
    cached.write_bytes(gzip.compress(toy_payload))
    (fake_mirror / "toyfolder" / TOY_FILE).write_bytes(b"damaged")
    assert fetch(TOY, TOY_FILE) == cached


def test_a_corrupt_cache_copy_is_moved_aside(
    toy_entry: RemoteFile, fake_mirror: Path, toy_payload: bytes
) -> None:
    cached = data_dir() / TOY / TOY_FILE
    cached.parent.mkdir(parents=True)
    cached.write_bytes(gzip.compress(toy_payload + b"x"))
    with pytest.warns(RuntimeWarning, match="failed verification"):
        path = fetch(TOY, TOY_FILE)
    assert path == fake_mirror / "toyfolder" / TOY_FILE
    assert not cached.exists()
    assert cached.with_name(TOY_FILE + ".corrupt").exists()


def test_offline_and_missing_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, toy_entry: RemoteFile, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(empty))
    with pytest.raises(DatasetUnavailableError) as info:
        fetch(TOY, TOY_FILE)
    message = str(info.value)
    for needle in (
        TOY_URL,
        "FEDLIB_DATA_MIRROR",
        f"toyfolder/{TOY_FILE}",
        "FEDLIB_OFFLINE",
        "FEDLIB_DATA_DIR",
        str(empty / "toyfolder" / TOY_FILE),
    ):
        assert needle in message
    monkeypatch.delenv("FEDLIB_DATA_MIRROR")
    with pytest.raises(DatasetUnavailableError, match="FEDLIB_DATA_MIRROR is not set"):
        fetch(TOY, TOY_FILE)


def test_without_canonical_url_the_error_points_to_the_mirror(
    monkeypatch: pytest.MonkeyPatch, toy_entry: RemoteFile
) -> None:
    monkeypatch.delenv("FEDLIB_DATA_MIRROR", raising=False)
    monkeypatch.delenv("FEDLIB_OFFLINE")
    _register(monkeypatch, toy_entry, url=None, source="ask the toy makers")
    with pytest.raises(DatasetUnavailableError) as info:
        fetch(TOY, TOY_FILE)
    message = str(info.value)
    assert "no canonical single-file download" in message
    assert "ask the toy makers" in message
    assert f"FEDLIB_DATA_MIRROR to a folder containing toyfolder/{TOY_FILE}" in message


def test_missing_femnist_names_the_mirror_layout_and_the_tff_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FEDLIB_DATA_MIRROR", raising=False)
    with pytest.raises(DatasetUnavailableError) as info:
        load_femnist_digits()
    message = str(info.value)
    assert "FEDLIB_DATA_MIRROR to a folder containing femnist/femnist-digits-leaf-sample.npz" in (
        message
    )
    assert "https://storage.googleapis.com/tff-datasets-public/fed_emnist_digitsonly" in message


# ----------------------------------------------------------------- fetch: download


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A folder served over HTTP on localhost: (folder, base URL)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.delenv("FEDLIB_OFFLINE")
    monkeypatch.delenv("FEDLIB_DATA_MIRROR", raising=False)
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_download_is_verified_and_cached(
    monkeypatch: pytest.MonkeyPatch,
    toy_entry: RemoteFile,
    toy_payload: bytes,
    http_folder: tuple[Path, str],
) -> None:
    served, base = http_folder
    (served / TOY_FILE).write_bytes(gzip.compress(toy_payload, compresslevel=3))
    _register(monkeypatch, toy_entry, url=f"{base}/{TOY_FILE}")
    path = fetch(TOY, TOY_FILE)
    assert path == data_dir() / TOY / TOY_FILE
    assert path.read_bytes() == (served / TOY_FILE).read_bytes()
    assert sorted(p.name for p in path.parent.iterdir()) == [TOY_FILE]  # no temp files left
    # The server goes away and the network is forbidden: the cache alone answers.
    (served / TOY_FILE).unlink()
    monkeypatch.setenv("FEDLIB_OFFLINE", "1")
    assert fetch(TOY, TOY_FILE) == path
    np.testing.assert_array_equal(read_idx(path), np.arange(50) % 10)


def test_download_with_wrong_content_leaves_nothing_in_the_cache(
    monkeypatch: pytest.MonkeyPatch,
    toy_entry: RemoteFile,
    toy_payload: bytes,
    http_folder: tuple[Path, str],
) -> None:
    served, base = http_folder
    tampered = toy_payload[:-1] + bytes([(toy_payload[-1] + 1) % 256])
    (served / TOY_FILE).write_bytes(gzip.compress(tampered))
    _register(monkeypatch, toy_entry, url=f"{base}/{TOY_FILE}")
    with pytest.raises(ChecksumMismatchError) as info:
        fetch(TOY, TOY_FILE)
    assert hashlib.sha256(tampered).hexdigest() in str(info.value)
    assert toy_entry.sha256 in str(info.value)
    cached = data_dir() / TOY / TOY_FILE
    assert not cached.exists()
    assert info.value.path == cached.with_name(TOY_FILE + ".corrupt")
    assert str(info.value.path) in str(info.value)


def test_failed_download_is_reported_as_unavailable(
    monkeypatch: pytest.MonkeyPatch, toy_entry: RemoteFile, http_folder: tuple[Path, str]
) -> None:
    _, base = http_folder
    url = f"{base}/missing/{TOY_FILE}"
    _register(monkeypatch, toy_entry, url=url)
    with pytest.raises(DatasetUnavailableError, match="downloading .* failed") as info:
        fetch(TOY, TOY_FILE)
    assert url in str(info.value)
    assert not (data_dir() / TOY / TOY_FILE).exists()


# --------------------------------------------------------------- the real mirror

MNIST_TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]

# MD5 of the decompressed official files, as published with the datasets: they tie
# the registry's SHA-256 values to the canonical data rather than to one copy.
OFFICIAL_MD5 = {
    ("mnist", "train-images-idx3-ubyte.gz"): "6bbc9ace898e44ae57da46a324031adb",
    ("mnist", "train-labels-idx1-ubyte.gz"): "a25bea736e30d166cdddb491f175f624",
    ("mnist", "t10k-images-idx3-ubyte.gz"): "2646ac647ad5339dbf082846283269ea",
    ("mnist", "t10k-labels-idx1-ubyte.gz"): "27ae3e4e09519cfbb04c329615203637",
    ("fashion-mnist", "train-images-idx3-ubyte.gz"): "f4a8712d7a061bf5bd6d2ca38dc4d50a",
    ("fashion-mnist", "train-labels-idx1-ubyte.gz"): "9018921c3c673c538a1fc5bad174d6f9",
    ("fashion-mnist", "t10k-images-idx3-ubyte.gz"): "8181f5470baa50b63fa0f6fddb340f0a",
    ("fashion-mnist", "t10k-labels-idx1-ubyte.gz"): "15d484375f8d13e6eb1aabb0c3f46965",
}


@pytest.fixture
def real_mirror(mirror: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))
    before = _snapshot(mirror)
    yield mirror
    assert _snapshot(mirror) == before, "the mirror was modified"


@pytest.mark.parametrize(("dataset", "filename"), sorted(OFFICIAL_MD5))
def test_registry_hashes_describe_the_official_files(
    real_mirror: Path, dataset: str, filename: str
) -> None:
    entry = dataset_files(dataset)[filename]
    path = real_mirror / entry.mirror_path
    md5 = hashlib.md5()
    sha = hashlib.sha256()
    with gzip.open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            md5.update(chunk)
            sha.update(chunk)
    assert md5.hexdigest() == OFFICIAL_MD5[dataset, filename]
    assert sha.hexdigest() == entry.sha256


@pytest.mark.parametrize(
    ("split", "n", "counts"),
    [("train", 60000, MNIST_TRAIN_COUNTS), ("test", 10000, MNIST_TEST_COUNTS)],
)
def test_load_mnist(real_mirror: Path, split: str, n: int, counts: list[int]) -> None:
    x, y = load_mnist(split)
    assert x.shape == (n, 28, 28) and x.dtype == np.uint8
    assert y.shape == (n,) and y.dtype == np.int64
    assert np.bincount(y, minlength=10).tolist() == counts
    assert x.max() == 255 and x.min() == 0
    assert x.mean() < 50  # black background, white ink
    assert not (data_dir() / "mnist").exists()  # read from the mirror, not copied


@pytest.mark.parametrize(("split", "n"), [("train", 60000), ("test", 10000)])
def test_load_fashion_mnist(real_mirror: Path, split: str, n: int) -> None:
    x, y = load_fashion_mnist(split)
    assert x.shape == (n, 28, 28) and x.dtype == np.uint8
    assert y.dtype == np.int64
    assert np.bincount(y, minlength=10).tolist() == [n // 10] * 10


def test_load_femnist_digits(real_mirror: Path) -> None:
    data = load_femnist_digits()
    assert len(data) == 36844
    assert data.x.shape == (36844, 28, 28) and data.x.dtype == np.float32
    assert 0.0 <= data.x.min() and data.x.max() <= 1.0
    assert data.x.mean() < 0.5  # inverted: background 0 as in MNIST
    corners = data.x[:, :3, :3]
    assert np.median(corners) == 0.0
    assert data.y.dtype == np.int64 and set(np.unique(data.y)) == set(range(10))
    assert data.writer.dtype == np.int64 and data.writer.shape == (36844,)
    assert data.writer_ids.dtype.kind == "U" and data.n_writers == 516
    assert len(set(data.writer_ids.tolist())) == 516
    clients = natural_partition(data.writer)
    sizes = np.array([len(c) for c in clients])
    assert len(clients) == 516 and sizes.sum() == 36844
    assert 200 <= (sizes >= 100).sum() <= 300  # "about 250 writers with >= 100 digits"


def test_bad_split_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"'validation'.*'train', 'test'"):
        load_mnist("validation")
    with pytest.raises(ValueError, match="'train', 'test'"):
        load_fashion_mnist("Train")


def test_real_files_are_unavailable_offline_without_a_mirror(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FEDLIB_DATA_MIRROR", raising=False)
    with pytest.raises(DatasetUnavailableError, match="ossci-datasets.s3.amazonaws.com/mnist/"):
        load_mnist("test")
    assert os.environ["FEDLIB_OFFLINE"] == "1"
