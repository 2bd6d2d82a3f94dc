"""IMDb reviews: the canonical archive and the mirror's text copy, tokens and ids."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from conftest import require_datasets

from fedlib.data import REGISTRY, DatasetError, DatasetUnavailableError
from fedlib.data.fetch import content_sha256
from fedlib.data.imdb import (
    PAD,
    UNKNOWN,
    build_vocabulary,
    encode_reviews,
    load_imdb,
    tokenize,
)
from fedlib.data.registry import IMDB_ARCHIVE, RemoteFile

# (split, label, id, rating, text)
REVIEWS = [
    ("train", 1, 0, 9, "A delight.<br /><br />Loved it"),
    ("train", 0, 1, 3, "Dull, dull film"),
    ("train", 0, 0, 2, "I didn't care"),
    ("train", 1, 1, 10, "Best film I've seen"),
    ("test", 0, 0, 1, "Awful"),
    ("test", 1, 0, 8, "Fine"),
]


def _add(archive: tarfile.TarFile, name: str, payload: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    archive.addfile(info, io.BytesIO(payload))


def _serve(monkeypatch, mirror: Path, dataset: str, files: dict[str, Path]) -> None:
    entries = {name: RemoteFile(**{**REGISTRY[dataset][name].__dict__,
                                   "sha256": content_sha256(path)})
               for name, path in files.items()}
    monkeypatch.setitem(REGISTRY, dataset, entries)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(mirror))


def _archive(mirror: Path) -> Path:
    path = mirror / "imdb" / IMDB_ARCHIVE
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for split, label, rid, rating, text in REVIEWS:
            folder = "pos" if label else "neg"
            _add(archive, f"aclImdb/{split}/{folder}/{rid}_{rating}.txt", text.encode())
        _add(archive, "aclImdb/train/unsup/0_0.txt", b"unlabelled")
        _add(archive, "aclImdb/train/labeledBow.feat", b"0:1")
        _add(archive, "aclImdb/README", b"readme")
    return path


def _jsonl(mirror: Path) -> dict[str, Path]:
    files = {}
    for split in ("train", "test"):
        path = mirror / "imdb" / f"{split}.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as stream:
            for s, label, rid, rating, text in REVIEWS:
                if s == split:
                    stream.write(json.dumps({"id": rid, "label": label, "rating": rating,
                                             "text": text}) + "\n")
        files[path.name] = path
    return files


def test_archive_reviews_in_label_then_id_order(tmp_path, monkeypatch) -> None:
    mirror = tmp_path / "mirror"
    _serve(monkeypatch, mirror, "imdb", {IMDB_ARCHIVE: _archive(mirror)})
    train = load_imdb("train")
    assert train.texts == ["I didn't care", "Dull, dull film",
                           "A delight.<br /><br />Loved it", "Best film I've seen"]
    np.testing.assert_array_equal(train.y, [0, 0, 1, 1])
    np.testing.assert_array_equal(train.rating, [2, 3, 9, 10])
    assert len(load_imdb("test")) == 2


def test_text_copy_gives_the_same_reviews(tmp_path, monkeypatch) -> None:
    archive_mirror, text_mirror = tmp_path / "a", tmp_path / "b"
    _serve(monkeypatch, archive_mirror, "imdb", {IMDB_ARCHIVE: _archive(archive_mirror)})
    from_archive = load_imdb("train")
    _serve(monkeypatch, text_mirror, "imdb-jsonl", _jsonl(text_mirror))
    from_text = load_imdb("train")  # the archive is not in this mirror
    assert from_text.texts == from_archive.texts
    np.testing.assert_array_equal(from_text.y, from_archive.y)
    np.testing.assert_array_equal(from_text.rating, from_archive.rating)


def test_broken_line_and_missing_data_are_clear_errors(tmp_path, monkeypatch) -> None:
    mirror = tmp_path / "mirror"
    files = _jsonl(mirror)
    with gzip.open(files["test.jsonl.gz"], "wt") as stream:
        stream.write('{"id": 0, "label": 1}\n')
    _serve(monkeypatch, mirror, "imdb-jsonl", files)
    with pytest.raises(DatasetError, match="line 1"):
        load_imdb("test")
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(tmp_path / "nothing"))
    with pytest.raises(DatasetUnavailableError, match="(?s)aclImdb_v1.tar.gz.*train.jsonl.gz"):
        load_imdb("train")
    with pytest.raises(ValueError, match="unknown split"):
        load_imdb("unsup")


def test_tokenize_drops_markup_and_keeps_contractions() -> None:
    assert tokenize("I didn't like it.<br /><br />It's BAD, 10/10!") == [
        "i", "didn't", "like", "it", "it's", "bad", "10", "10"]
    assert tokenize("Amélie, naïve_cafés; l'été 1990's") == [
        "amélie", "naïve", "cafés", "l'été", "1990's"]


def test_vocabulary_ranks_by_count_then_alphabet() -> None:
    texts = ["b a c", "a b", "a d"]  # a: 3, b: 2, c: 1, d: 1
    assert build_vocabulary(texts, 5) == {"a": 2, "b": 3, "c": 4}
    assert build_vocabulary(texts, 100) == {"a": 2, "b": 3, "c": 4, "d": 5}
    with pytest.raises(ValueError, match="at least 3"):
        build_vocabulary(texts, 2)


def test_encode_keeps_the_last_words_and_pads_on_the_left() -> None:
    vocabulary = {"good": 2, "film": 3}
    ids = encode_reviews(["good film", "a good good film indeed", ""], vocabulary, 4)
    np.testing.assert_array_equal(ids, [[PAD, PAD, 2, 3], [2, 2, 3, UNKNOWN],
                                        [PAD, PAD, PAD, PAD]])
    assert ids.dtype == np.int64
    assert encode_reviews([], vocabulary, 3).shape == (0, 3)


def test_mirror_text_copy_is_the_labelled_reviews(mirror) -> None:
    require_datasets("imdb-jsonl")
    train = load_imdb("train")
    assert len(train) == 25_000
    np.testing.assert_array_equal(np.bincount(train.y), [12_500, 12_500])
    assert set(np.unique(train.rating[train.y == 1])) <= {7, 8, 9, 10}
    assert set(np.unique(train.rating[train.y == 0])) <= {1, 2, 3, 4}
    # aclImdb/train/pos/0_9.txt
    assert train.texts[12_500].startswith("Bromwell High is a cartoon comedy.")
