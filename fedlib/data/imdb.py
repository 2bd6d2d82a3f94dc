"""IMDb movie reviews (Large Movie Review Dataset v1.0), as text and as token ids.

:func:`load_imdb` reads the 25,000 labelled reviews of a split from the canonical
``aclImdb_v1.tar.gz`` (``aclImdb/<split>/{neg,pos}/<id>_<rating>.txt``) or, where
that archive cannot be had, from an offline mirror's exact-text copy
(``{train,test}.jsonl.gz``, one ``{"id", "label", "rating", "text"}`` per line).
Both give the same reviews in the same order: negatives then positives, each by
their id in the archive.

:func:`tokenize`, :func:`build_vocabulary` and :func:`encode_reviews` turn the text
into fixed-length rows of word ids for a sequence model.
"""

from __future__ import annotations

import gzip
import json
import re
import tarfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedlib.data.errors import DatasetError, DatasetUnavailableError
from fedlib.data.fetch import fetch
from fedlib.data.registry import IMDB_ARCHIVE, IMDB_JSONL

PAD, UNKNOWN = 0, 1
"""Word ids of padding and of words outside the vocabulary."""

_MEMBER = re.compile(r"^aclImdb/(train|test)/(neg|pos)/(\d+)_(\d+)\.txt$")
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W\d_]+)?")


@dataclass(frozen=True, eq=False)
class ImdbReviews:
    """One split: ``texts`` (list of str), ``y`` int64 (1 = positive), ``rating`` int64
    (1-4 negative, 7-10 positive)."""

    texts: list[str]
    y: np.ndarray
    rating: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)


def _check_split(split: str) -> str:
    if split not in IMDB_JSONL:
        raise ValueError(f"unknown split {split!r}; use one of {tuple(IMDB_JSONL)}")
    return split


def _from_archive(path: Path, split: str) -> list[tuple[int, int, int, str]]:
    rows = []
    with tarfile.open(path, "r:gz") as archive:
        for member in archive:
            match = _MEMBER.match(member.name)
            if not member.isfile() or match is None or match.group(1) != split:
                continue
            stream = archive.extractfile(member)
            assert stream is not None
            text = stream.read().decode("utf-8")
            rows.append((int(match.group(2) == "pos"), int(match.group(3)),
                         int(match.group(4)), text))
    return rows


def _from_jsonl(path: Path) -> list[tuple[int, int, int, str]]:
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            try:
                record = json.loads(line)
                rows.append((int(record["label"]), int(record["id"]), int(record["rating"]),
                             str(record["text"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise DatasetError(f"{path}, line {number}: not an IMDb review record "
                                   f"({exc})") from None
    return rows


def load_imdb(split: str = "train") -> ImdbReviews:
    """The labelled reviews of one split (12,500 negative then 12,500 positive).

    Raises
    ------
    DatasetUnavailableError
        If neither the canonical archive nor the mirror's text copy is available.
    """
    _check_split(split)
    try:
        rows = _from_archive(fetch("imdb", IMDB_ARCHIVE), split)
    except DatasetUnavailableError as canonical:
        try:
            rows = _from_jsonl(fetch("imdb-jsonl", IMDB_JSONL[split]))
        except DatasetUnavailableError as text_copy:
            raise DatasetUnavailableError(
                f"IMDb is not available, neither the canonical archive nor a mirror's text "
                f"copy.\n\nCanonical archive:\n{canonical}\n\nText copy:\n{text_copy}"
            ) from None
    if not rows:
        raise DatasetError(f"no IMDb {split} reviews found")
    if {r[0] for r in rows} - {0, 1}:
        raise DatasetError("IMDb labels must be 0 (negative) or 1 (positive)")
    rows.sort(key=lambda r: (r[0], r[1]))
    return ImdbReviews(texts=[r[3] for r in rows],
                       y=np.array([r[0] for r in rows], dtype=np.int64),
                       rating=np.array([r[2] for r in rows], dtype=np.int64))


def tokenize(text: str) -> list[str]:
    """Lower-case words (runs of letters and digits in any script, with an apostrophe
    suffix such as "n't" or "'s" kept); the reviews' ``<br />`` line breaks are dropped."""
    return _TOKEN.findall(text.replace("<br />", " ").lower())


def build_vocabulary(texts: Iterable[str], size: int) -> dict[str, int]:
    """The ``size - 2`` most frequent words of ``texts`` (ties: alphabetical), numbered
    from 2; ids 0 and 1 are padding and unknown words."""
    if size < 3:
        raise ValueError(f"vocabulary size must be at least 3 (padding, unknown, a word), "
                         f"got {size}")
    counts = Counter(word for text in texts for word in tokenize(text))
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:size - 2]
    return {word: index for index, (word, _) in enumerate(ranked, start=2)}


def encode_reviews(texts: Iterable[str], vocabulary: dict[str, int], length: int
                   ) -> np.ndarray:
    """int64 ``(n, length)`` word ids: each review's last ``length`` words, left-padded
    with :data:`PAD` (a recurrent model then ends on the review's own words)."""
    if length < 1:
        raise ValueError(f"length must be >= 1, got {length}")
    rows = []
    for text in texts:
        ids = [vocabulary.get(word, UNKNOWN) for word in tokenize(text)][-length:]
        rows.append([PAD] * (length - len(ids)) + ids)
    return np.array(rows, dtype=np.int64).reshape(-1, length)
