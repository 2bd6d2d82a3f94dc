"""UCI HAR: loaders on generated zip and npz files, the feature map, normalisation, tasks."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fedlib.data import (
    ACTIVITY_LABELS,
    REGISTRY,
    SITTING,
    DatasetError,
    DatasetUnavailableError,
    HarData,
    binary_subject_tasks,
    load_har,
    normalise_rows,
)
from fedlib.data.fetch import content_sha256
from fedlib.data.registry import HAR_ZIP_FILE, HAR_ZIP_URL, RemoteFile

ROOT = "UCI HAR Dataset/"
# (activity, subject) of each generated window, per split
TRAIN = {"activity": [1, 4, 4, 6, 2, 4, 5, 3], "subject": [1, 1, 1, 1, 3, 3, 3, 3]}
TEST = {"activity": [4, 5, 6, 4, 1], "subject": [2, 2, 2, 2, 2]}


# ------------------------------------------------------------------------- fixtures


def _table(values: np.ndarray, fmt: str) -> str:
    buffer = io.StringIO()
    np.savetxt(buffer, values, fmt=fmt)
    return buffer.getvalue()


def _uci_split(rng: np.random.Generator, labels: dict[str, list[int]]) -> dict[str, np.ndarray]:
    n = len(labels["activity"])
    return {
        "X": rng.uniform(-1.0, 1.0, size=(n, 561)),
        "y": np.array(labels["activity"]),
        "subject": np.array(labels["subject"]),
    }


def _uci_zip(
    path: Path,
    splits: dict[str, dict[str, np.ndarray]],
    drop: tuple[str, ...] = (),
    replace: dict[str, str] | None = None,
) -> Path:
    """A zip laid out like ``UCI HAR Dataset.zip``; ``drop``/``replace`` members by name."""
    members = {
        "features.txt": "".join(f"{i} tFeature{i}-mean()-X\n" for i in range(1, 562)),
        "activity_labels.txt": "".join(f"{k} {v}\n" for k, v in ACTIVITY_LABELS.items()),
    }
    for split, data in splits.items():
        members[f"{split}/X_{split}.txt"] = _table(data["X"], "%15.7e")
        members[f"{split}/y_{split}.txt"] = _table(data["y"], "%d")
        members[f"{split}/subject_{split}.txt"] = _table(data["subject"], "%d")
    members.update(replace or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            if name not in drop:
                archive.writestr(ROOT + name, text)
        archive.writestr("__MACOSX/" + ROOT + "._features.txt", b"\x00\x05")
        archive.writestr("../escaped.txt", "a member that must never be written anywhere")
    return path


def _serve(monkeypatch: pytest.MonkeyPatch, files: dict[str, Path]) -> None:
    """Register the generated ``har`` files with their real content hashes."""
    entries = dict(REGISTRY["har"])
    for name, path in files.items():
        entries[name] = RemoteFile(**{**entries[name].__dict__, "sha256": content_sha256(path)})
    monkeypatch.setitem(REGISTRY, "har", entries)


@pytest.fixture
def splits() -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(7)
    return {"train": _uci_split(rng, TRAIN), "test": _uci_split(rng, TEST)}


@pytest.fixture
def mirror_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "mirror"
    (root / "har").mkdir(parents=True)
    monkeypatch.setenv("FEDLIB_DATA_MIRROR", str(root))
    return root


@pytest.fixture
def served_zip(mirror_dir: Path, monkeypatch: pytest.MonkeyPatch, splits) -> Path:
    path = _uci_zip(mirror_dir / "har" / HAR_ZIP_FILE, splits)
    _serve(monkeypatch, {HAR_ZIP_FILE: path})
    return path


# ------------------------------------------------------------------------- registry


def test_registry_describes_both_sources() -> None:
    zipped, raw = REGISTRY["har"][HAR_ZIP_FILE], REGISTRY["hapt"]["hapt-raw.npz"]
    assert zipped.url == HAR_ZIP_URL and zipped.mirror_path == "har/UCI HAR Dataset.zip"
    assert zipped.sha256 == "2045e435c955214b38145fb5fa00776c72814f01b203fec405152dac7d5bfeb0"
    assert raw.url is None and raw.mirror_path == "hapt/hapt-raw.npz"
    assert "Anguita" in zipped.citation and "Reyes-Ortiz" in raw.citation
    assert list(REGISTRY["har"]) == [HAR_ZIP_FILE]  # nothing else is read for HAR
    assert SITTING == 4 and ACTIVITY_LABELS[SITTING] == "SITTING"


# -------------------------------------------------------------------- loading the zip


def test_load_har_uci_561_reads_and_concatenates_both_splits(served_zip: Path) -> None:
    data = load_har("uci-561")
    assert data.feature_source == "uci-561"
    assert data.features.shape == (13, 561) and data.features.dtype == np.float64
    assert data.feature_names[0] == "tFeature1-mean()-X" and len(data.feature_names) == 561
    np.testing.assert_array_equal(data.activity, TRAIN["activity"] + TEST["activity"])
    np.testing.assert_array_equal(data.subject, TRAIN["subject"] + TEST["subject"])
    assert data.activity.dtype == np.int64 and data.subject.dtype == np.int64
    np.testing.assert_allclose(np.linalg.norm(data.features, axis=1), 1.0, rtol=1e-12)
    raw = np.vstack([_uci_split_x(served_zip, split) for split in ("train", "test")])
    np.testing.assert_allclose(data.features, normalise_rows(raw), atol=1e-12)
    assert not (served_zip.parents[2] / "escaped.txt").exists()


def _uci_split_x(path: Path, split: str) -> np.ndarray:
    with zipfile.ZipFile(path) as archive:
        return np.loadtxt(io.StringIO(archive.read(f"{ROOT}{split}/X_{split}.txt").decode()))


def test_auto_prefers_the_uci_features(served_zip: Path) -> None:
    assert load_har().feature_source == "uci-561"


@pytest.mark.parametrize(
    ("drop", "replace", "message"),
    [
        (("test/X_test.txt",), None, "lacks the member 'UCI HAR Dataset/test/X_test.txt'"),
        ((), {"train/X_train.txt": "1 2 3\n4 5 6\n"}, "has 3 columns, expected 561"),
        ((), {"train/y_train.txt": "1\n2\n", "train/subject_train.txt": "1\n1\n"},
         "X_train.txt has 8 rows but y_train.txt 2"),
        ((), {"test/subject_test.txt": "2\n2\n2\n2\n31\n"}, "subject ids outside 1-30"),
        ((), {"train/X_train.txt": "0.5 oops\n"}, "cannot parse 'train/X_train.txt'"),
        ((), {"activity_labels.txt": "1 WALKING\n"}, "activity_labels.txt does not list"),
        ((), {"features.txt": "1 a\n2 b\n"}, "features.txt should list features 1-561"),
    ],
)
def test_a_malformed_zip_is_a_clear_dataset_error(
    mirror_dir: Path, monkeypatch: pytest.MonkeyPatch, splits, drop, replace, message
) -> None:
    path = _uci_zip(mirror_dir / "har" / HAR_ZIP_FILE, splits, drop=drop, replace=replace)
    _serve(monkeypatch, {HAR_ZIP_FILE: path})
    with pytest.raises(DatasetError, match=re.escape(message)):
        load_har("uci-561")


def test_a_file_that_is_not_a_zip_is_a_clear_dataset_error(
    mirror_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = mirror_dir / "har" / HAR_ZIP_FILE
    path.write_bytes(b"PK\x03\x04 but truncated" * 10)
    _serve(monkeypatch, {HAR_ZIP_FILE: path})
    with pytest.raises(DatasetError, match="is not a readable zip file"):
        load_har("uci-561")


# ------------------------------------------------------------- the raw recordings


def _rebuilt(n_per_subject: int = 4):
    """A stand-in for the features rebuilt from the recordings (raw, in [-1, 1])."""
    from fedlib.data.har_features import HarFeatureSet

    rng = np.random.default_rng(3)
    subject = np.repeat(np.array([5, 9, 30]), n_per_subject)
    activity = np.arange(len(subject)) % 6 + 1
    features = rng.uniform(-1, 1, (len(subject), 561))
    names = tuple(f"f{i}" for i in range(561))
    return HarFeatureSet(features, activity, subject, names, None)


def test_auto_falls_back_to_the_features_rebuilt_from_the_recordings(
    mirror_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fedlib.data.har_features as har_features

    rebuilt = _rebuilt()
    monkeypatch.setattr(har_features, "hapt_har_features", lambda: rebuilt)
    data = load_har("auto")  # no zip anywhere
    assert data.feature_source == "hapt-561"
    assert data.features.shape == (12, 561) and data.feature_names == rebuilt.names
    np.testing.assert_allclose(data.features, normalise_rows(rebuilt.features), atol=1e-12)
    np.testing.assert_array_equal(data.subject, np.repeat([5, 9, 30], 4))
    assert data.activity.dtype == np.int64 and data.subject.dtype == np.int64
    assert load_har("hapt-561").feature_source == "hapt-561"
    with pytest.raises(DatasetUnavailableError, match="00240/UCI%20HAR%20Dataset.zip"):
        load_har("uci-561")  # the published features need the zip


def test_without_any_source_the_error_says_where_to_get_the_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FEDLIB_DATA_MIRROR", raising=False)
    with pytest.raises(DatasetUnavailableError) as info:
        load_har("auto")
    message = str(info.value)
    assert HAR_ZIP_URL in message and "hapt/hapt-raw.npz" in message
    assert "FEDLIB_DATA_MIRROR" in message


def test_unknown_features_value_names_the_valid_ones() -> None:
    for bad in ("uci561", "inertial-map", "", None):
        with pytest.raises(ValueError, match="'auto', 'uci-561', 'hapt-561'"):
            load_har(bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- normalisation


def test_normalise_rows_on_a_hand_example() -> None:
    x = np.array([[0.0, 10.0, 0.1, 1.0], [2.0, 10.0, 0.1, 5.0], [4.0, 10.0, 0.1, 3.0]])
    before = x.copy()
    out = normalise_rows(x)
    # column 0: mean 2, std sqrt(8/3); column 3: mean 3, same std; columns 1, 2 constant
    z = np.array([-1.0, 0.0, 1.0]) * np.sqrt(3 / 2)
    expected = np.stack([z, np.zeros(3), np.zeros(3), np.array([-1.0, 1.0, 0.0]) * np.sqrt(3 / 2)],
                        axis=1)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected / norms, atol=1e-15)
    np.testing.assert_array_equal(x, before)  # input untouched
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0)


def test_normalise_rows_gives_unit_norms_and_keeps_zero_rows_zero() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 6)) * [1, 10, 1e-6, 1e3, 5, 0]
    out = normalise_rows(x)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-12)
    assert (out[:, 5] == 0).all()
    assert (normalise_rows(np.ones((3, 2))) == 0).all()  # nothing varies: zero rows
    with pytest.raises(ValueError, match="2-D"):
        normalise_rows(np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        normalise_rows(np.array([[1.0, np.inf]]))


# ---------------------------------------------------------------------- subject tasks


def _har_data() -> HarData:
    subject = np.array([7] * 9 + [2] * 12 + [30] * 6 + [7] * 3)
    activity = np.arange(len(subject)) % 6 + 1
    features = np.arange(len(subject), dtype=np.float64)[:, None] * [1.0, 0.0]  # row ids
    return HarData(features, activity, subject, "hapt-561", ("row", "zero"))


def test_binary_subject_tasks_split_each_subject() -> None:
    data = _har_data()
    tasks = binary_subject_tasks(data, positive_activity=SITTING, train_fraction=0.75, seed=3)
    assert [t.subject for t in tasks] == [2, 7, 30]
    for task in tasks:
        rows = np.flatnonzero(data.subject == task.subject)
        train = task.x_train[:, 0].astype(int)
        test = task.x_test[:, 0].astype(int)
        assert len(train) == round(0.75 * len(rows)) and len(test) == len(rows) - len(train)
        assert set(train).isdisjoint(test) and sorted([*train, *test]) == rows.tolist()
        np.testing.assert_array_equal(task.y_train, np.where(data.activity[train] == 4, 1, -1))
        np.testing.assert_array_equal(task.y_test, np.where(data.activity[test] == 4, 1, -1))
        assert set(np.unique(np.concatenate([task.y_train, task.y_test]))) <= {-1.0, 1.0}
        assert task.y_train.dtype == np.float64


def test_binary_subject_tasks_are_reproducible_by_seed() -> None:
    data = _har_data()
    first = binary_subject_tasks(data, seed=5)
    again = binary_subject_tasks(data, seed=5)
    other = binary_subject_tasks(data, seed=6)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.x_train, b.x_train)
        np.testing.assert_array_equal(a.y_test, b.y_test)
    assert any(
        not np.array_equal(a.x_train, c.x_train) for a, c in zip(first, other, strict=True)
    )
    # subjects 2 and 7 both have 12 windows, yet are not split alike
    rows_2, rows_7 = (np.flatnonzero(data.subject == s) for s in (2, 7))
    picked_2 = np.isin(rows_2, first[0].x_train[:, 0])
    picked_7 = np.isin(rows_7, first[1].x_train[:, 0])
    assert not np.array_equal(picked_2, picked_7)
    # a subject's split does not depend on the other subjects
    alone = HarData(data.features[data.subject == 30], data.activity[data.subject == 30],
                    data.subject[data.subject == 30], "hapt-561", data.feature_names)
    np.testing.assert_array_equal(binary_subject_tasks(alone, seed=5)[0].x_train,
                                  first[2].x_train)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"train_fraction": 0.0}, "train_fraction must be a number in"),
        ({"train_fraction": 1.0}, "train_fraction must be a number in"),
        ({"train_fraction": 1.5}, "train_fraction must be a number in"),
        ({"train_fraction": "0.5"}, "train_fraction must be a number in"),
        ({"train_fraction": 0.95}, "subject 30 has 6 windows"),
        ({"positive_activity": 7}, "unknown positive_activity 7"),
        ({"positive_activity": 0}, "unknown positive_activity 0"),
        ({"positive_activity": True}, "unknown positive_activity True"),
        ({"positive_activity": "SITTING"}, "unknown positive_activity 'SITTING'"),
        ({"seed": -1}, "seed must be a non-negative integer"),
    ],
)
def test_binary_subject_tasks_reject_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        binary_subject_tasks(_har_data(), **kwargs)


# ------------------------------------------------------------------ the real mirror


def _mirror_labels(mirror: Path, name: str) -> np.ndarray:
    return np.concatenate(
        [np.loadtxt(mirror / "har" / f"{name}_{split}.txt", dtype=np.int64) for split in
         ("train", "test")]
    )


def test_the_rebuilt_features_are_the_real_recordings(mirror: Path) -> None:
    from conftest import require_datasets

    require_datasets("hapt")
    data = load_har("hapt-561")
    assert data.feature_source == "hapt-561" and data.features.shape[1] == 561
    assert abs(len(data.activity) - 10299) < 0.02 * 10299
    assert np.unique(data.subject).tolist() == list(range(1, 31))
    np.testing.assert_allclose(np.linalg.norm(data.features, axis=1), 1.0, rtol=1e-9)
    expected = np.zeros((31, 7), dtype=np.int64)
    np.add.at(expected, (_mirror_labels(mirror, "subject"), _mirror_labels(mirror, "y")), 1)
    counts = np.zeros((31, 7), dtype=np.int64)
    np.add.at(counts, (data.subject, data.activity), 1)
    assert np.abs(counts - expected).max() <= 8  # the official windows, cut again


def test_unnormalised_features_keep_the_published_scale(served_zip: Path) -> None:
    raw = load_har("uci-561", normalised=False)
    expected = np.vstack([_uci_split_x(served_zip, split) for split in ("train", "test")])
    np.testing.assert_allclose(raw.features, expected, atol=1e-12)
    np.testing.assert_allclose(load_har("uci-561").features, normalise_rows(expected),
                               atol=1e-12)
