"""The Stack Overflow tag-prediction subset of Bietti et al. (2022), from TFF's HDF5 files.

TensorFlow Federated's ``stackoverflow.tar.bz2`` holds ``stackoverflow_train.h5``,
``stackoverflow_held_out.h5`` and ``stackoverflow_test.h5``, each with one group
per user::

    examples/<client_id>/tokens          bytes (n,): the post's tokens, space separated
    examples/<client_id>/title           bytes (n,): the question's title (tokenized)
    examples/<client_id>/tags            bytes (n,): the question's tags, '|' separated
    examples/<client_id>/type            bytes (n,): b'question' or b'answer'
    examples/<client_id>/score           int (n,)
    examples/<client_id>/creation_date   bytes (n,)

The paper's subset (as the authors built it with the tag-prediction
preprocessing of TFF's research code): the first ``n_clients`` = 500 users of
the test file (sorted ids) that also have training posts; each post becomes a
bag of words over the ``vocab_size`` = 5000 most frequent words (title and body
tokens; the share of each word among all the post's tokens, so out-of-vocabulary
tokens dilute the vector) and a multi-hot vector over the ``n_tags`` = 80 most
frequent tags. Word and tag frequencies come from TFF's
``stackoverflow.word_count`` / ``stackoverflow.tag_count`` files when given,
otherwise from the training posts of the selected users.

None of these files is available offline: the functions here are exercised on
small generated files with the same schema.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedlib.data.errors import DatasetError
from fedlib.data.femnist_tff import _h5py, extract_members
from fedlib.data.fetch import fetch

DATASET = "stackoverflow-tff"
ARCHIVE = "stackoverflow.tar.bz2"
WORD_COUNT_ARCHIVE = "stackoverflow.word_count.tar.bz2"
TAG_COUNT_ARCHIVE = "stackoverflow.tag_count.tar.bz2"
TRAIN_FILE = "stackoverflow_train.h5"
TEST_FILE = "stackoverflow_test.h5"
REQUIRED_FIELDS = ("tokens", "tags", "title")


def _text(values: Iterable) -> list[str]:
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values]


@dataclass(frozen=True)
class Posts:
    """One user's posts: the words (title then body) and the tags of each."""

    words: list[list[str]]
    tags: list[list[str]]


def read_posts(path: str | Path, client_ids: Sequence[str] | None = None) -> dict[str, Posts]:
    """Posts of the given users (default: all) of one TFF Stack Overflow HDF5 file.

    Raises
    ------
    DatasetError
        If the file lacks the ``examples`` group, a requested user, or a
        user lacks ``tokens``, ``tags`` or ``title``.
    """
    h5py = _h5py()
    path = Path(path)
    posts: dict[str, Posts] = {}
    with h5py.File(path, "r") as h5:
        if "examples" not in h5:
            raise DatasetError(f"{path}: no 'examples' group; not a TFF Stack Overflow file")
        examples = h5["examples"]
        ids = sorted(examples) if client_ids is None else list(client_ids)
        for cid in ids:
            if cid not in examples:
                raise DatasetError(f"{path}: no user {cid!r}")
            group = examples[cid]
            missing = [f for f in REQUIRED_FIELDS if f not in group]
            if missing:
                raise DatasetError(f"{path}: user {cid} lacks {missing} (has {sorted(group)})")
            tokens = _text(group["tokens"][()])
            titles = _text(group["title"][()])
            tags = _text(group["tags"][()])
            if not len(tokens) == len(titles) == len(tags):
                raise DatasetError(f"{path}: user {cid} has fields of different lengths")
            posts[cid] = Posts(
                words=[f"{title} {body}".split()
                       for title, body in zip(titles, tokens, strict=True)],
                tags=[[t for t in tag.split("|") if t] for tag in tags],
            )
    return posts


def client_ids(path: str | Path) -> list[str]:
    """Sorted user ids of one file."""
    with _h5py().File(path, "r") as h5:
        return sorted(h5["examples"])


def select_clients(train_path: str | Path, test_path: str | Path, n_clients: int) -> list[str]:
    """The first ``n_clients`` test users (sorted ids) that also have training posts."""
    train = set(client_ids(train_path))
    chosen = [c for c in client_ids(test_path) if c in train][:n_clients]
    if len(chosen) < n_clients:
        raise DatasetError(f"only {len(chosen)} users have both train and test posts, "
                           f"{n_clients} asked")
    return chosen


def most_frequent(counts: Counter | dict[str, int], size: int) -> list[str]:
    """The ``size`` most frequent keys (ties broken by the key, for determinism)."""
    return [k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size]]


def read_word_counts(path: str | Path) -> dict[str, int]:
    """TFF's ``stackoverflow.word_count``: one ``word count`` pair per line, most frequent first."""
    counts = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            word, count = line.split()
            counts[word] = int(count)
    return counts


def read_tag_counts(path: str | Path) -> dict[str, int]:
    """TFF's ``stackoverflow.tag_count``: a JSON object tag -> count."""
    return {k: int(v) for k, v in json.loads(Path(path).read_text(encoding="utf-8")).items()}


def bag_of_words(words: Sequence[Sequence[str]], vocab: Sequence[str]) -> np.ndarray:
    """float32 ``(n, len(vocab))``: each post's share of tokens equal to each vocabulary word."""
    index = {w: i for i, w in enumerate(vocab)}
    out = np.zeros((len(words), len(vocab)), dtype=np.float32)
    for row, post in enumerate(words):
        if not post:
            continue
        for word in post:
            col = index.get(word)
            if col is not None:
                out[row, col] += 1.0
        out[row] /= len(post)
    return out


def multi_hot(tags: Sequence[Sequence[str]], tag_vocab: Sequence[str]) -> np.ndarray:
    """float32 ``(n, len(tag_vocab))``: 1 where the post carries the tag."""
    index = {t: i for i, t in enumerate(tag_vocab)}
    out = np.zeros((len(tags), len(tag_vocab)), dtype=np.float32)
    for row, post in enumerate(tags):
        for tag in post:
            if tag in index:
                out[row, index[tag]] = 1.0
    return out


@dataclass(frozen=True, eq=False)
class StackOverflowSubset:
    """Per-user bag-of-words posts with multi-label tag targets.

    Attributes
    ----------
    x_train, x_test
        float32 ``(n, vocab_size)`` bags of words.
    y_train, y_test
        float32 ``(n, n_tags)`` multi-hot tags.
    user_train, user_test
        int64 index into ``client_ids``.
    vocab, tags, client_ids
        The words, tags and users, in column / index order.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    user_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    user_test: np.ndarray
    vocab: list[str]
    tags: list[str]
    client_ids: list[str]


def _arrays(posts: dict[str, Posts], ids: Sequence[str], vocab, tags):
    words = [w for cid in ids for w in posts[cid].words]
    labels = [t for cid in ids for t in posts[cid].tags]
    users = np.concatenate([np.full(len(posts[cid].words), i) for i, cid in enumerate(ids)])
    return bag_of_words(words, vocab), multi_hot(labels, tags), users.astype(np.int64)


def build_subset(
    train_path: str | Path,
    test_path: str | Path,
    *,
    n_clients: int = 500,
    vocab_size: int = 5000,
    n_tags: int = 80,
    word_counts: dict[str, int] | None = None,
    tag_counts: dict[str, int] | None = None,
) -> StackOverflowSubset:
    """The paper's subset: ``n_clients`` users, bag of words of ``vocab_size``, ``n_tags`` tags."""
    ids = select_clients(train_path, test_path, n_clients)
    train = read_posts(train_path, ids)
    test = read_posts(test_path, ids)
    if word_counts is None:
        word_counts = Counter(w for cid in ids for post in train[cid].words for w in post)
    if tag_counts is None:
        tag_counts = Counter(t for cid in ids for post in train[cid].tags for t in post)
    vocab = most_frequent(word_counts, vocab_size)
    tags = most_frequent(tag_counts, n_tags)
    x_train, y_train, u_train = _arrays(train, ids, vocab, tags)
    x_test, y_test, u_test = _arrays(test, ids, vocab, tags)
    return StackOverflowSubset(x_train, y_train, u_train, x_test, y_test, u_test, vocab, tags, ids)


def top1_accuracy(scores: np.ndarray, y: np.ndarray) -> float:
    """Share of posts whose highest-scoring tag is one of their tags (the paper's metric)."""
    if len(scores) == 0:
        raise ValueError("no posts to evaluate")
    top = np.asarray(scores).argmax(axis=1)
    return float(np.mean(np.asarray(y)[np.arange(len(top)), top] > 0))


def load_stackoverflow_subset(n_clients: int = 500, vocab_size: int = 5000,
                              n_tags: int = 80) -> StackOverflowSubset:
    """Fetch TFF's Stack Overflow archives (verified by TFF's SHA-256) and build the subset.

    The main archive is large (tens of GB once extracted); it is never in the
    offline mirror, so offline this raises ``DatasetUnavailableError``.
    """
    from fedlib.paths import data_dir

    folder = data_dir() / DATASET / "extracted"
    paths = extract_members(fetch(DATASET, ARCHIVE), (TRAIN_FILE, TEST_FILE), folder)
    words = extract_members(fetch(DATASET, WORD_COUNT_ARCHIVE), ("stackoverflow.word_count",),
                            folder)
    tags = extract_members(fetch(DATASET, TAG_COUNT_ARCHIVE), ("stackoverflow.tag_count",), folder)
    return build_subset(
        paths[TRAIN_FILE], paths[TEST_FILE], n_clients=n_clients, vocab_size=vocab_size,
        n_tags=n_tags, word_counts=read_word_counts(words["stackoverflow.word_count"]),
        tag_counts=read_tag_counts(tags["stackoverflow.tag_count"]),
    )
