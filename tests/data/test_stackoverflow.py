"""The Stack Overflow subset builder on a small file with TFF's schema."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from fedlib.data import registry, stackoverflow
from fedlib.data.errors import DatasetError, DatasetUnavailableError


def write_tff_stackoverflow(path: Path, users: dict[str, list[tuple[str, str, str]]]) -> None:
    """examples/<client>/{tokens, title, tags, type, score, creation_date}, TFF's fields."""
    strings = h5py.string_dtype()
    with h5py.File(path, "w") as h5:
        examples = h5.create_group("examples")
        for cid, posts in users.items():
            group = examples.create_group(cid)
            group.create_dataset("tokens", data=[p[0].encode() for p in posts], dtype=strings)
            group.create_dataset("title", data=[p[1].encode() for p in posts], dtype=strings)
            group.create_dataset("tags", data=[p[2].encode() for p in posts], dtype=strings)
            group.create_dataset("type", data=[b"question"] * len(posts), dtype=strings)
            group.create_dataset("score", data=np.arange(len(posts), dtype=np.int64))
            group.create_dataset("creation_date", data=[b"2010-01-08 09:34:05 UTC"] * len(posts),
                                 dtype=strings)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    train, test = tmp_path / "stackoverflow_train.h5", tmp_path / "stackoverflow_test.h5"
    write_tff_stackoverflow(train, {
        "001": [("how to sort a list", "python sort", "python|list"),
                ("sort sort sort", "sorting", "python")],
        "002": [("css rounded corners", "css corners", "css|html")],
        "003": [("only in train", "x", "java")],
    })
    write_tff_stackoverflow(test, {
        "000": [("test only user", "t", "python")],
        "001": [("sort a dict", "python dict", "python|dict")],
        "002": [("html table", "html", "html")],
    })
    return train, test


def test_subset_selects_users_in_both_files_and_builds_bow_and_tags(files) -> None:
    subset = stackoverflow.build_subset(*files, n_clients=2, vocab_size=3, n_tags=2)
    assert subset.client_ids == ["001", "002"]  # "000" has no training posts
    # Word counts over the training posts of the chosen users: sort 5, python 1, ...
    assert subset.vocab[0] == "sort"
    assert subset.tags == ["python", "css"]
    first = "python sort how to sort a list".split()
    assert subset.x_train[0, 0] == pytest.approx(first.count("sort") / len(first))
    assert subset.x_train.shape == (3, 3) and subset.y_train.shape == (3, 2)
    np.testing.assert_array_equal(subset.y_train, [[1, 0], [1, 0], [0, 1]])
    np.testing.assert_array_equal(subset.user_train, [0, 0, 1])
    np.testing.assert_array_equal(subset.y_test, [[1, 0], [0, 0]])
    assert np.all(subset.x_train.sum(axis=1) <= 1 + 1e-6)


def test_counts_files_set_the_vocabularies(files, tmp_path) -> None:
    words = tmp_path / "stackoverflow.word_count"
    words.write_text("html 90\ncss 80\nsort 3\n")
    tags = tmp_path / "stackoverflow.tag_count"
    tags.write_text(json.dumps({"dict": 5, "html": 9, "python": 7}))
    subset = stackoverflow.build_subset(
        *files, n_clients=2, vocab_size=2, n_tags=2,
        word_counts=stackoverflow.read_word_counts(words),
        tag_counts=stackoverflow.read_tag_counts(tags))
    assert subset.vocab == ["html", "css"] and subset.tags == ["html", "python"]


def test_top1_accuracy_counts_a_hit_when_the_top_tag_is_true() -> None:
    y = np.array([[1, 0, 1], [0, 1, 0]])
    scores = np.array([[0.1, 0.5, 0.9], [0.9, 0.2, 0.1]])
    assert stackoverflow.top1_accuracy(scores, y) == 0.5


def test_missing_fields_and_users_are_errors(files, tmp_path) -> None:
    bad = tmp_path / "bad.h5"
    with h5py.File(bad, "w") as h5:
        h5.create_group("examples").create_group("001").create_dataset("tokens", data=[b"a"])
    with pytest.raises(DatasetError, match="lacks"):
        stackoverflow.read_posts(bad)
    with pytest.raises(DatasetError, match="only 2 users"):
        stackoverflow.build_subset(*files, n_clients=3)


def test_offline_the_canonical_archive_is_unavailable(tmp_path, monkeypatch) -> None:
    assert registry.get_file("stackoverflow-tff", "stackoverflow.tar.bz2").sha256.startswith(
        "99eca2f8")
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(tmp_path))
    monkeypatch.setenv("FEDLIB_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FEDLIB_OFFLINE", "1")
    with pytest.raises(DatasetUnavailableError):
        stackoverflow.load_stackoverflow_subset()
