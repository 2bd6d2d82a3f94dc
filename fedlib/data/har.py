"""UCI HAR (Human Activity Recognition Using Smartphones): features, windows, subject tasks.

Thirty volunteers wore a smartphone on the waist while walking, walking upstairs and
downstairs, sitting, standing and lying; the accelerometer and gyroscope were sampled
at 50 Hz and cut into windows of 128 samples (2.56 s, 50 % overlap): 10,299 windows in
all, 7,352 in the official train split (21 subjects) and 2,947 in the test split (9).

Two sources give the 561 features:

* ``UCI HAR Dataset.zip`` (dataset ``"har"``), the canonical distribution, with the
  authors' 561 engineered features (``X_train.txt``, ``X_test.txt``), read member by
  member, never extracted (``feature_source == "uci-561"``);
* the continuous raw recordings of the same volunteers (dataset ``"hapt"``, UCI HAPT,
  from which UCI HAR was cut), windowed and turned into the same 561 features by the
  dataset's documented pipeline (:mod:`fedlib.data.hapt`,
  :mod:`fedlib.data.har_features`; ``feature_source == "hapt-561"``). Re-windowing
  gives slightly more windows than the official 10,299 (see :mod:`fedlib.data.hapt`).

:func:`load_har` returns one feature matrix for the whole dataset, the zip's when it
can be had, else the one rebuilt from the recordings; either way the matrix goes
through :func:`normalise_rows`. :func:`binary_subject_tasks` turns it into one binary
task per subject (one federated client each).
"""

from __future__ import annotations

import io
import logging
import numbers
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedlib.data.errors import DatasetError, DatasetUnavailableError
from fedlib.data.fetch import fetch
from fedlib.data.registry import HAR_ZIP_FILE

_log = logging.getLogger(__name__)

ACTIVITY_LABELS: dict[int, str] = {
    1: "WALKING",
    2: "WALKING_UPSTAIRS",
    3: "WALKING_DOWNSTAIRS",
    4: "SITTING",
    5: "STANDING",
    6: "LAYING",
}
"""Activity code -> name, as in the dataset's ``activity_labels.txt``."""

SITTING: int = 4
"""Activity code of ``SITTING``."""

N_SUBJECTS = 30
WINDOW = 128
"""Samples per window (2.56 s at 50 Hz)."""

SAMPLE_RATE_HZ = 50.0

FEATURE_SOURCES = ("uci-561", "hapt-561")
_FEATURE_CHOICES = ("auto", *FEATURE_SOURCES)
_ROOT = "UCI HAR Dataset/"
_SPLITS = ("train", "test")
_N_UCI_FEATURES = 561


# ----------------------------------------------------------------------------- data types


@dataclass(frozen=True, eq=False)
class HarData:
    """One feature vector per window of UCI HAR, train and test splits concatenated.

    Attributes
    ----------
    features
        float64 ``(n, F)``; columns standardised and rows scaled to unit L2 norm
        (:func:`normalise_rows`), unless loaded with ``normalised=False``.
    activity
        int64 ``(n,)``, activity codes 1-6 (:data:`ACTIVITY_LABELS`).
    subject
        int64 ``(n,)``, volunteer 1-30.
    feature_source
        ``"uci-561"`` (the authors' features) or ``"hapt-561"`` (the same features
        rebuilt from the raw recordings).
    feature_names
        The ``F`` column names.
    """

    features: np.ndarray
    activity: np.ndarray
    subject: np.ndarray
    feature_source: str
    feature_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.activity)


@dataclass(frozen=True, eq=False)
class SubjectTask:
    """One subject's binary task: ``y = +1`` for the positive activity, else ``-1``.

    ``x_train``/``x_test`` are float64 rows of :attr:`HarData.features`; ``y_train`` and
    ``y_test`` are float64 in ``{-1.0, +1.0}``.
    """

    subject: int
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


# ------------------------------------------------------------------------- reading files


_READ_ERRORS = (ValueError, OSError, EOFError, zlib.error, zipfile.BadZipFile)


def _member_text(archive: zipfile.ZipFile, path: Path, member: str) -> str:
    """The decoded text of ``UCI HAR Dataset/<member>``, read without extracting anything."""
    try:
        with archive.open(_ROOT + member) as stream:
            return stream.read().decode("utf-8")
    except KeyError:
        raise DatasetError(
            f"{path} lacks the member {_ROOT + member!r}: it is not the UCI HAR Dataset zip "
            "(or is incomplete)"
        ) from None
    except _READ_ERRORS as exc:
        raise DatasetError(f"{path}: cannot read {member!r} ({type(exc).__name__}: {exc})") from exc


def _read_member(
    archive: zipfile.ZipFile, path: Path, member: str, dtype: type, columns: int | None
) -> np.ndarray:
    """A whitespace-separated numeric table from one zip member, shape-checked."""
    text = _member_text(archive, path, member)
    try:
        table = np.loadtxt(io.StringIO(text), dtype=dtype, ndmin=2)
    except ValueError as exc:
        raise DatasetError(f"{path}: cannot parse {member!r} ({exc})") from exc
    if columns is None:
        if table.shape[1] != 1:
            raise DatasetError(f"{path}: {member!r} should have one value per line")
        return table[:, 0]
    if table.shape[1] != columns:
        raise DatasetError(
            f"{path}: {member!r} has {table.shape[1]} columns, expected {columns}"
        )
    return table


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DatasetError(f"{path} is not a readable zip file ({exc})") from exc


def _check_labels(where: object, activity: np.ndarray, subject: np.ndarray) -> None:
    if activity.shape != subject.shape or activity.ndim != 1:
        raise DatasetError(
            f"{where}: {activity.shape} activity labels but {subject.shape} subject ids"
        )
    if len(activity) and (activity.min() < 1 or activity.max() > len(ACTIVITY_LABELS)):
        raise DatasetError(f"{where}: activity codes outside 1-{len(ACTIVITY_LABELS)}")
    if len(subject) and (subject.min() < 1 or subject.max() > N_SUBJECTS):
        raise DatasetError(f"{where}: subject ids outside 1-{N_SUBJECTS}")


def _read_split_labels(
    archive: zipfile.ZipFile, path: Path, split: str
) -> tuple[np.ndarray, np.ndarray]:
    activity = _read_member(archive, path, f"{split}/y_{split}.txt", np.int64, None)
    subject = _read_member(archive, path, f"{split}/subject_{split}.txt", np.int64, None)
    _check_labels(f"{path} ({split})", activity, subject)
    return activity, subject


def _check_activity_names(archive: zipfile.ZipFile, path: Path) -> None:
    lines = _member_text(archive, path, "activity_labels.txt").splitlines()
    found = dict(line.split(maxsplit=1) for line in lines if len(line.split()) == 2)
    expected = {str(code): name for code, name in ACTIVITY_LABELS.items()}
    if found != expected or len(found) != sum(1 for line in lines if line.strip()):
        raise DatasetError(f"{path}: activity_labels.txt does not list {expected}")


def _read_feature_names(archive: zipfile.ZipFile, path: Path) -> tuple[str, ...]:
    lines = _member_text(archive, path, "features.txt").splitlines()
    rows = [line.split(maxsplit=1) for line in lines if line.strip()]
    numbered = [r[0] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    if len(rows) != _N_UCI_FEATURES or not numbered or any(len(r) != 2 for r in rows):
        raise DatasetError(
            f"{path}: features.txt should list features 1-{_N_UCI_FEATURES} as "
            "'<number> <name>' lines"
        )
    return tuple(r[1].strip() for r in rows)


def _uci_features(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """The 561 features, activities and subjects of both splits (train first)."""
    with _open_zip(path) as archive:
        _check_activity_names(archive, path)
        names = _read_feature_names(archive, path)
        parts = []
        for split in _SPLITS:
            activity, subject = _read_split_labels(archive, path, split)
            x = _read_member(
                archive, path, f"{split}/X_{split}.txt", np.float64, _N_UCI_FEATURES
            )
            if len(x) != len(activity):
                raise DatasetError(
                    f"{path}: X_{split}.txt has {len(x)} rows but y_{split}.txt {len(activity)}"
                )
            parts.append((x, activity, subject))
    x, activity, subject = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    return x, activity, subject, names


def normalise_rows(features: np.ndarray) -> np.ndarray:
    """Standardise each column, then scale each row to unit Euclidean norm.

    Each column is z-scored over all rows, ``(f - mean) / std`` with the population
    standard deviation; a column whose standard deviation is at most ``1e-12`` times its
    absolute mean (a constant column, up to rounding) becomes 0. Each row is then divided
    by its L2 norm, so every row has norm 1 -- except a row that is zero after
    standardisation, which stays zero.

    :func:`load_har` applies this to both feature sources: the UCI features are already
    scaled to [-1, 1] by their authors, but standardising them too treats both sources
    alike, and unit-norm rows bound every example's norm by 1.

    Parameters
    ----------
    features
        ``(n, F)`` real array without NaN or infinity.

    Returns
    -------
    numpy.ndarray
        float64 ``(n, F)``, a new array.
    """
    x = np.array(features, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must be a 2-D (n, F) array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("features contain NaN or infinite values")
    if len(x) == 0:
        return x
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    constant = std <= 1e-12 * np.abs(mean)
    x -= mean
    x = np.divide(x, std, out=np.zeros_like(x), where=~constant)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


# ----------------------------------------------------------------------------- loaders


def _hapt_data(normalised: bool) -> HarData:
    from fedlib.data.har_features import hapt_har_features

    rebuilt = hapt_har_features()
    x = normalise_rows(rebuilt.features) if normalised else np.array(rebuilt.features)
    return HarData(x, rebuilt.activity.astype(np.int64), rebuilt.subject.astype(np.int64),
                   "hapt-561", tuple(rebuilt.names))


def load_har(features: str = "auto", *, normalised: bool = True) -> HarData:
    """UCI HAR as one normalised feature matrix (all 30 subjects).

    Parameters
    ----------
    features
        ``"uci-561"``: the authors' 561 features from ``UCI HAR Dataset.zip`` (download
        cache, ``$FEDLIB_DATA_MIRROR`` or download), train split then test split.
        ``"hapt-561"``: the same 561 features rebuilt from the raw recordings
        (:func:`fedlib.data.har_features.hapt_har_features`), in recording order.
        ``"auto"``: ``"uci-561"`` when the zip can be obtained, otherwise
        ``"hapt-561"``; :attr:`HarData.feature_source` says which one it was.

    normalised
        True (default): the matrix goes through :func:`normalise_rows` (columns
        standardised, rows of norm 1), as the chapters use it. False: the features
        on the dataset's own scale, each in [-1, 1].

    Raises
    ------
    ValueError
        For an unknown ``features``.
    DatasetUnavailableError
        If the data the choice needs cannot be found; the message says where to get it.
    ChecksumMismatchError, DatasetError
        If a file is damaged or malformed (never silently skipped by ``"auto"``).
    """
    if not isinstance(features, str) or features not in _FEATURE_CHOICES:
        raise ValueError(
            f"unknown features={features!r}; use one of "
            + ", ".join(repr(c) for c in _FEATURE_CHOICES)
        )
    if features == "hapt-561":
        return _hapt_data(normalised)
    try:
        path = fetch("har", HAR_ZIP_FILE)
    except DatasetUnavailableError as zip_error:
        if features == "uci-561":
            raise
        _log.info("UCI HAR zip unavailable: rebuilding the 561 features from the recordings")
        try:
            return _hapt_data(normalised)
        except DatasetUnavailableError as raw_error:
            raise DatasetUnavailableError(
                "UCI HAR is available from neither source.\n\n"
                f"{zip_error}\n\n{raw_error}") from raw_error
    x, activity, subject, names = _uci_features(path)
    return HarData(normalise_rows(x) if normalised else x, activity, subject, "uci-561", names)


# ------------------------------------------------------------------------ subject tasks


def binary_subject_tasks(
    data: HarData,
    positive_activity: int = SITTING,
    train_fraction: float = 0.75,
    seed: int = 0,
) -> list[SubjectTask]:
    """One binary task per subject, sorted by subject id: one federated client each.

    The label is ``+1.0`` for windows of ``positive_activity`` and ``-1.0`` otherwise.
    Each subject's windows are split at random into ``round(train_fraction * n)``
    training and the rest test windows, with a generator seeded by ``(seed, subject)``:
    a subject's split does not depend on the other subjects. Within each part the rows
    keep their order in ``data``.

    Parameters
    ----------
    data
        From :func:`load_har`.
    positive_activity
        Activity code 1-6 (:data:`ACTIVITY_LABELS`); default :data:`SITTING`.
    train_fraction
        In (0, 1); every subject must end up with at least one training and one test row.
    seed
        Non-negative integer.
    """
    if (
        isinstance(positive_activity, bool)
        or not isinstance(positive_activity, numbers.Integral)
        or int(positive_activity) not in ACTIVITY_LABELS
    ):
        raise ValueError(
            f"unknown positive_activity {positive_activity!r}; use an activity code "
            f"1-{len(ACTIVITY_LABELS)}: {ACTIVITY_LABELS}"
        )
    if (
        isinstance(train_fraction, bool)
        or not isinstance(train_fraction, numbers.Real)
        or not 0.0 < float(train_fraction) < 1.0
    ):
        raise ValueError(f"train_fraction must be a number in (0, 1), got {train_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    n = len(data.activity)
    if data.features.ndim != 2 or len(data.features) != n or data.subject.shape != (n,):
        raise ValueError(
            f"inconsistent HarData: features {data.features.shape}, activity "
            f"{data.activity.shape}, subject {data.subject.shape}"
        )
    labels = np.where(data.activity == int(positive_activity), 1.0, -1.0)
    tasks = []
    for subject in np.unique(data.subject):
        rows = np.flatnonzero(data.subject == subject)
        n_train = round(float(train_fraction) * len(rows))
        if not 0 < n_train < len(rows):
            raise ValueError(
                f"subject {subject} has {len(rows)} windows: train_fraction={train_fraction} "
                f"gives {n_train} training rows, leaving no training or no test rows"
            )
        rng = np.random.default_rng([int(seed), int(subject)])
        picked = rng.permutation(len(rows))
        train = rows[np.sort(picked[:n_train])]
        test = rows[np.sort(picked[n_train:])]
        tasks.append(
            SubjectTask(
                subject=int(subject),
                x_train=data.features[train],
                y_train=labels[train],
                x_test=data.features[test],
                y_test=labels[test],
            )
        )
    return tasks
