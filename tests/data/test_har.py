"""UCI HAR: loaders on generated zip and npz files, the feature map, normalisation, tasks."""

from __future__ import annotations

import io
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from fedlib.data import (
    ACTIVITY_LABELS,
    HAR_CHANNELS,
    REGISTRY,
    SITTING,
    DatasetError,
    DatasetUnavailableError,
    HarData,
    binary_subject_tasks,
    inertial_feature_map,
    load_har,
    load_har_windows,
    normalise_rows,
)
from fedlib.data.fetch import content_sha256
from fedlib.data.registry import HAR_INERTIAL_FILE, HAR_ZIP_FILE, HAR_ZIP_URL, RemoteFile
from fedlib.paths import data_dir

ROOT = "UCI HAR Dataset/"
# (activity, subject) of each generated window, per split
TRAIN = {"activity": [1, 4, 4, 6, 2, 4, 5, 3], "subject": [1, 1, 1, 1, 3, 3, 3, 3]}
TEST = {"activity": [4, 5, 6, 4, 1], "subject": [2, 2, 2, 2, 2]}


# ------------------------------------------------------------------------- fixtures


def _table(values: np.ndarray, fmt: str) -> str:
    buffer = io.StringIO()
    np.savetxt(buffer, values, fmt=fmt)
    return buffer.getvalue()


def _windows(rng: np.random.Generator, n: int) -> np.ndarray:
    """Plausible windows: small body signals, total_acc = gravity (1 g along x) + body."""
    x = rng.normal(0.0, 0.1, size=(n, 9, 128)).astype(np.float32)
    x[:, 6:9] = x[:, 0:3]
    x[:, 6] += 1.0
    return x


def _uci_split(rng: np.random.Generator, labels: dict[str, list[int]]) -> dict[str, np.ndarray]:
    n = len(labels["activity"])
    return {
        "X": rng.uniform(-1.0, 1.0, size=(n, 561)),
        "y": np.array(labels["activity"]),
        "subject": np.array(labels["subject"]),
        "windows": _windows(rng, n),
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
        for c, channel in enumerate(HAR_CHANNELS):
            member = f"{split}/Inertial Signals/{channel}_{split}.txt"
            members[member] = _table(data["windows"][:, c], "%15.7e")
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


def _npz(path: Path, n_per_subject: int = 4, gravity: float = 1.0, **overrides) -> Path:
    rng = np.random.default_rng(3)
    subject = np.repeat(np.array([5, 9, 30], dtype=np.int8), n_per_subject)
    activity = (np.arange(len(subject)) % 6 + 1).astype(np.int8)
    x = _windows(rng, len(subject))
    x[:, 6] += gravity - 1.0
    np.savez(path, **{"x": x, "activity": activity, "subject": subject, **overrides})
    return path


# ------------------------------------------------------------------------- registry


def test_registry_describes_both_har_files() -> None:
    zipped, inertial = REGISTRY["har"][HAR_ZIP_FILE], REGISTRY["har"][HAR_INERTIAL_FILE]
    assert zipped.url == HAR_ZIP_URL and zipped.mirror_path == "har/UCI HAR Dataset.zip"
    assert zipped.sha256 == "2045e435c955214b38145fb5fa00776c72814f01b203fec405152dac7d5bfeb0"
    assert inertial.url is None and inertial.mirror_path == "har/har-inertial.npz"
    assert "Anguita" in zipped.citation and "archive.ics.uci.edu" in inertial.source
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


def test_inertial_map_reads_the_windows_from_a_cached_zip(
    monkeypatch: pytest.MonkeyPatch, splits
) -> None:
    path = _uci_zip(data_dir() / "har" / HAR_ZIP_FILE, splits)  # in the download cache
    _serve(monkeypatch, {HAR_ZIP_FILE: path})
    monkeypatch.delenv("FEDLIB_DATA_MIRROR", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # plausible windows: no gravity warning
        x, activity, subject = load_har_windows()
        data = load_har("inertial-map")
    expected = np.concatenate([splits["train"]["windows"], splits["test"]["windows"]])
    assert x.dtype == np.float32 and x.shape == (13, 9, 128)
    np.testing.assert_allclose(x, expected, rtol=1e-6)
    np.testing.assert_array_equal(activity, TRAIN["activity"] + TEST["activity"])
    np.testing.assert_array_equal(subject, TRAIN["subject"] + TEST["subject"])
    assert data.feature_source == "inertial-map" and data.features.shape == (13, 189)
    np.testing.assert_allclose(data.features, normalise_rows(inertial_feature_map(x)[0]))


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


def test_a_missing_inertial_member_is_a_clear_dataset_error(
    mirror_dir: Path, monkeypatch: pytest.MonkeyPatch, splits
) -> None:
    member = "test/Inertial Signals/body_gyro_z_test.txt"
    path = _uci_zip(mirror_dir / "har" / HAR_ZIP_FILE, splits, drop=(member,))
    _serve(monkeypatch, {HAR_ZIP_FILE: path})
    with pytest.raises(DatasetError, match=re.escape(f"lacks the member '{ROOT}{member}'")):
        load_har("inertial-map")


def test_a_file_that_is_not_a_zip_is_a_clear_dataset_error(
    mirror_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = mirror_dir / "har" / HAR_ZIP_FILE
    path.write_bytes(b"PK\x03\x04 but truncated" * 10)
    _serve(monkeypatch, {HAR_ZIP_FILE: path})
    with pytest.raises(DatasetError, match="is not a readable zip file"):
        load_har("uci-561")


# ---------------------------------------------------------------- the mirror's npz


def test_auto_falls_back_to_the_inertial_map_of_the_mirror_npz(
    mirror_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _npz(mirror_dir / "har" / HAR_INERTIAL_FILE)
    _serve(monkeypatch, {HAR_INERTIAL_FILE: path})
    data = load_har("auto")
    assert data.feature_source == "inertial-map"
    assert data.features.shape == (12, 189) and len(data.feature_names) == 189
    np.testing.assert_array_equal(data.subject, np.repeat([5, 9, 30], 4))
    np.testing.assert_array_equal(data.activity, np.arange(12) % 6 + 1)
    assert data.activity.dtype == np.int64 and data.subject.dtype == np.int64
    np.testing.assert_allclose(np.linalg.norm(data.features, axis=1), 1.0, rtol=1e-12)
    with pytest.raises(DatasetUnavailableError, match="00240/UCI%20HAR%20Dataset.zip"):
        load_har("uci-561")  # the 561 features need the zip


def test_a_malformed_npz_is_a_clear_dataset_error(
    mirror_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _npz(mirror_dir / "har" / HAR_INERTIAL_FILE, activity=np.full(12, 7, np.int8))
    _serve(monkeypatch, {HAR_INERTIAL_FILE: path})
    with pytest.raises(DatasetError, match="activity codes outside 1-6"):
        load_har_windows()


def test_implausible_windows_are_flagged(mirror_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _npz(mirror_dir / "har" / HAR_INERTIAL_FILE, gravity=0.3)
    _serve(monkeypatch, {HAR_INERTIAL_FILE: path})
    with pytest.warns(RuntimeWarning, match="do not look like the UCI HAR recordings"):
        load_har_windows()


def test_without_any_source_the_error_says_where_to_get_the_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FEDLIB_DATA_MIRROR", raising=False)
    for features in ("auto", "inertial-map"):
        with pytest.raises(DatasetUnavailableError) as info:
            load_har(features)
        message = str(info.value)
        assert HAR_ZIP_URL in message and "har/har-inertial.npz" in message
        assert "FEDLIB_DATA_MIRROR" in message


def test_unknown_features_value_names_the_valid_ones() -> None:
    for bad in ("uci561", "", None):
        with pytest.raises(ValueError, match="'auto', 'uci-561', 'inertial-map'"):
            load_har(bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------- the feature map


def _feature(windows: np.ndarray, name: str) -> np.ndarray:
    values, names = inertial_feature_map(windows)
    return values[:, names.index(name)]


def test_feature_names_are_documented_and_unique() -> None:
    values, names = inertial_feature_map(np.zeros((0, 9, 128)))
    assert values.shape == (0, 189) and len(set(names)) == 189
    assert names[:2] == ("body_acc_x-mean", "body_acc_x-std")
    assert "total_acc_mag-bandenergy-33-64" in names and names[-1] == "total_acc-corr-yz"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_constant_window_has_closed_form_features(dtype: type) -> None:
    # float64 levels such as 0.1 make the computed mean differ from them by rounding
    levels = np.array([0.1, -0.3, 2.0, 0.0, 1e-3, -7.3, 0.7, 2.2, 1 / 3]).astype(dtype)
    windows = np.broadcast_to(levels[None, :, None], (1, 9, 128))
    values, names = inertial_feature_map(windows)
    row = dict(zip(names, values[0], strict=True))
    for channel, level in zip(HAR_CHANNELS, levels, strict=True):
        assert row[f"{channel}-mean"] == pytest.approx(level, abs=1e-12)
        assert row[f"{channel}-energy"] == pytest.approx(float(level) ** 2, abs=1e-12)
        assert row[f"{channel}-max"] == row[f"{channel}-min"] == level
        for zero in ("std", "mad", "iqr", "skewness", "meanfreq", "maxinds", "entropy",
                     "bandenergy-1-8", "bandenergy-33-64"):
            assert row[f"{channel}-{zero}"] == 0.0, zero
    assert row["body_acc-corr-xy"] == 0.0


@pytest.mark.parametrize("k", [1, 5, 14, 40, 63])
def test_a_pure_sine_has_its_frequency_found(k: int) -> None:
    t = np.arange(128)
    amplitude = 0.7
    windows = np.zeros((1, 9, 128))
    windows[0, 4] = amplitude * np.sin(2 * np.pi * k * t / 128 + 0.3)  # body_gyro_y
    values, names = inertial_feature_map(windows)
    row = dict(zip(names, values[0], strict=True))
    assert row["body_gyro_y-maxinds"] == k
    assert row["body_gyro_y-meanfreq"] == pytest.approx(k, rel=1e-9)
    assert row["body_gyro_y-entropy"] == pytest.approx(0.0, abs=1e-9)
    assert row["body_gyro_y-mean"] == pytest.approx(0.0, abs=1e-12)
    assert row["body_gyro_y-std"] == pytest.approx(amplitude / np.sqrt(2), rel=1e-9)
    band = next(b for b in ("1-8", "9-16", "17-32", "33-64")
                if int(b.split("-")[0]) <= k <= int(b.split("-")[1]))
    assert row[f"body_gyro_y-bandenergy-{band}"] == pytest.approx(amplitude**2 / 2, rel=1e-9)


def test_two_equal_sines_have_entropy_log2_over_log64() -> None:
    t = np.arange(128)
    windows = np.zeros((1, 9, 128))
    windows[0, 7] = np.sin(2 * np.pi * 3 * t / 128) + np.cos(2 * np.pi * 20 * t / 128)
    values, names = inertial_feature_map(windows)
    row = dict(zip(names, values[0], strict=True))
    assert row["total_acc_y-entropy"] == pytest.approx(np.log(2) / np.log(64), rel=1e-9)
    assert row["total_acc_y-meanfreq"] == pytest.approx((3 + 20) / 2, rel=1e-9)
    assert row["total_acc_y-bandenergy-1-8"] == pytest.approx(0.5, rel=1e-9)
    assert row["total_acc_y-bandenergy-17-32"] == pytest.approx(0.5, rel=1e-9)
    assert row["total_acc_y-bandenergy-9-16"] == pytest.approx(0.0, abs=1e-12)


def test_white_noise_has_high_entropy_and_bands_that_sum_to_the_variance() -> None:
    rng = np.random.default_rng(0)
    windows = rng.normal(size=(50, 9, 128))
    values, names = inertial_feature_map(windows)
    col = {name: values[:, i] for i, name in enumerate(names)}
    bands = sum(col[f"total_acc_z-bandenergy-{b}"] for b in ("1-8", "9-16", "17-32", "33-64"))
    np.testing.assert_allclose(bands, col["total_acc_z-std"] ** 2, rtol=1e-10)
    np.testing.assert_allclose(col["total_acc_z-std"], windows[:, 8].std(axis=1), rtol=1e-12)
    q25, q75 = np.percentile(windows[:, 8], [25, 75], axis=1)
    np.testing.assert_allclose(col["total_acc_z-iqr"], q75 - q25, atol=1e-12)
    median = np.median(windows[:, 8], axis=1)
    mad = np.median(np.abs(windows[:, 8] - median[:, None]), axis=1)
    np.testing.assert_allclose(col["total_acc_z-mad"], mad, atol=1e-12)
    skewed = np.exp(windows[:, 2])  # log-normal: clearly positive skewness
    np.testing.assert_allclose(_feature(np.exp(windows), "body_acc_z-skewness"),
                               scipy.stats.skew(skewed, axis=1), rtol=1e-10)
    assert (col["body_acc_x-entropy"] > 0.8).all() and (col["body_acc_x-entropy"] <= 1).all()
    assert (np.abs(col["body_gyro-corr-xz"]) < 0.6).all()


def test_magnitude_and_correlation_features_on_known_vectors() -> None:
    t = np.arange(128)
    windows = np.zeros((1, 9, 128))
    windows[0, 0] = 3.0 * (-1.0) ** t  # body_acc = (+-3, 4, 0): magnitude 5 throughout
    windows[0, 1] = 4.0
    ramp = np.linspace(-1.0, 1.0, 128)
    windows[0, 3], windows[0, 4], windows[0, 5] = ramp, 2 * ramp + 1, -ramp  # body_gyro
    values, names = inertial_feature_map(windows)
    row = dict(zip(names, values[0], strict=True))
    assert row["body_acc_mag-mean"] == pytest.approx(5.0)
    assert row["body_acc_mag-energy"] == pytest.approx(25.0)
    assert row["body_acc_mag-std"] == 0.0 and row["body_acc_x-std"] == pytest.approx(3.0)
    assert row["body_acc_x-maxinds"] == 64  # alternating sign: the Nyquist bin
    assert row["body_acc_x-bandenergy-33-64"] == pytest.approx(9.0)
    assert row["body_gyro-corr-xy"] == pytest.approx(1.0)
    assert row["body_gyro-corr-xz"] == pytest.approx(-1.0)
    assert row["body_gyro-corr-yz"] == pytest.approx(-1.0)
    assert row["body_acc-corr-xy"] == 0.0  # y is flat
    gyro_mag = np.sqrt(ramp**2 + (2 * ramp + 1) ** 2 + ramp**2)
    assert row["body_gyro_mag-max"] == pytest.approx(gyro_mag.max())
    assert row["body_gyro_mag-mean"] == pytest.approx(gyro_mag.mean())


def test_feature_map_rejects_bad_windows() -> None:
    with pytest.raises(ValueError, match=r"shape \(n, 9, 128\)"):
        inertial_feature_map(np.zeros((2, 9, 100)))
    bad = np.zeros((2, 9, 128))
    bad[1, 2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        inertial_feature_map(bad)


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
    return HarData(features, activity, subject, "inertial-map", ("row", "zero"))


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
                    data.subject[data.subject == 30], "inertial-map", data.feature_names)
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


def test_mirror_windows(mirror: Path) -> None:
    x, activity, subject = load_har_windows()
    assert x.shape == (10299, 9, 128) and x.dtype == np.float32
    assert np.unique(subject).tolist() == list(range(1, 31))
    expected_subject = _mirror_labels(mirror, "subject")
    expected_activity = _mirror_labels(mirror, "y")
    counts = np.zeros((31, 7), dtype=np.int64)
    np.add.at(counts, (subject, activity), 1)
    expected = np.zeros((31, 7), dtype=np.int64)
    np.add.at(expected, (expected_subject, expected_activity), 1)
    np.testing.assert_array_equal(counts, expected)
    features, names = inertial_feature_map(x)
    assert features.shape == (10299, len(names)) and np.isfinite(features).all()
