"""fedlib.data.hapt: reading the HAPT recordings, UCI HAR's preprocessing and windowing."""

from __future__ import annotations

import functools
import io
from pathlib import Path

import numpy as np
import pytest
from conftest import require_datasets

from fedlib.data import DatasetError, content_sha256, dataset_files, fetch
from fedlib.data.hapt import (
    HaptRecordings,
    HarWindows,
    har_windows,
    load_hapt_recordings,
    preprocess,
    window_starts,
)

FS = 50.0
OFFICIAL_WINDOWS = 10_299


def _arrays(runs: list[list[tuple[int, int]]], users: list[int]) -> dict[str, np.ndarray]:
    """Recordings made of experiments, each a list of (label, length) runs; acc is a
    constant 1 g along x plus a little noise, gyro small noise."""
    labels = [np.concatenate([np.full(n, lab, np.int8) for lab, n in runs_]) for runs_ in runs]
    rows = sum(len(lab) for lab in labels)
    rng = np.random.default_rng(0)
    acc = np.tile([1.0, 0.0, 0.0], (rows, 1)) + 0.01 * rng.normal(size=(rows, 3))
    return {
        "acc": acc,
        "gyro": 0.01 * rng.normal(size=(rows, 3)),
        "label": np.concatenate(labels),
        "experiment_user": np.array(users, np.int8),
        "experiment_start": np.cumsum([0] + [len(lab) for lab in labels]).astype(np.int64),
    }


def _write(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    np.savez_compressed(path, **arrays)
    return path


_SMALL = ([[(-1, 300), (4, 400), (7, 100), (5, 300)], [(5, 200), (1, 500)]], [3, 3])


# ------------------------------------------------------------------------------ reading


def test_load_hapt_recordings_reads_a_valid_file(tmp_path: Path) -> None:
    arrays = _arrays(*_SMALL)
    rec = load_hapt_recordings(_write(tmp_path / "r.npz", arrays))
    assert isinstance(rec, HaptRecordings)
    assert len(rec) == 1800 and rec.n_experiments == 2
    assert rec.acc.dtype == np.float64 and rec.acc.shape == (1800, 3)
    assert rec.label.dtype == np.int8 and rec.experiment_start.dtype == np.int64
    assert rec.rows(1) == slice(1100, 1800)
    np.testing.assert_array_equal(rec.label, arrays["label"])
    with pytest.raises(ValueError):
        rec.acc[0, 0] = 5.0  # read-only
    with pytest.raises(IndexError):
        rec.rows(2)


def _truncated(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()[: len(buffer.getvalue()) // 2]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda a: a.update(acc=a["acc"][:, :2]), r"acc should be float \(rows, 3\)"),
        (lambda a: a.update(gyro=a["gyro"][:-5]), "acc has 1800 rows but gyro 1795"),
        (lambda a: a.update(acc=a["acc"].astype(np.int64)), "acc should be float"),
        (lambda a: a.update(label=a["label"][:-1]), "1799 labels for 1800 rows"),
        (lambda a: a.update(label=a["label"].astype(np.float32)), "label should be a 1-D int"),
        (lambda a: a["label"].__setitem__(7, 13), r"labels outside \{-1, 1, ..., 12\}"),
        (lambda a: a["experiment_user"].__setitem__(0, 31), "experiment users outside 1-30"),
        (lambda a: a.update(experiment_start=a["experiment_start"][:-1]),
         "2 experiment offsets for 2 experiments"),
        (lambda a: a["experiment_start"].__setitem__(-1, 1700),
         "offsets must rise strictly from 0 to 1800"),
        (lambda a: a["experiment_start"].__setitem__(1, 0),
         "offsets must rise strictly from 0 to 1800"),
        (lambda a: a.pop("gyro"), r"the arrays \['gyro'\] are missing"),
        (lambda a: a["acc"].__setitem__((3, 1), np.nan), "acc has non-finite values"),
    ],
)
def test_malformed_recordings_raise_dataset_error(tmp_path: Path, damage, message: str) -> None:
    arrays = _arrays(*_SMALL)
    damage(arrays)
    path = _write(tmp_path / "bad.npz", arrays)
    with pytest.raises(DatasetError, match=message) as info:
        load_hapt_recordings(path)
    text = str(info.value)
    assert str(path) in text
    assert "delete it and fetch('hapt', 'hapt-raw.npz') again" in text
    assert dataset_files("hapt")["hapt-raw.npz"].sha256 in text


@pytest.mark.parametrize("content", ["truncated", "text"])
def test_unreadable_npz_raises_dataset_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "hapt-raw.npz"
    raw = _truncated(_arrays(*_SMALL)) if content == "truncated" else b"not an npz\n"
    path.write_bytes(raw)
    with pytest.raises(DatasetError, match="not a readable npz file") as info:
        load_hapt_recordings(path)
    assert str(path) in str(info.value) and "delete it and fetch" in str(info.value)


def test_registry_entry() -> None:
    (entry,) = dataset_files("hapt").values()
    assert entry.filename == "hapt-raw.npz" and entry.mirror_path == "hapt/hapt-raw.npz"
    assert entry.url is None and len(entry.sha256) == 64
    assert "CC BY 4.0" in entry.license
    assert "Reyes-Ortiz" in entry.citation and "Neurocomputing 171" in entry.citation


def test_registry_hash_is_the_mirror_file(mirror: Path) -> None:
    path = mirror / "hapt" / "hapt-raw.npz"
    if not path.is_file():
        pytest.skip(f"the mirror {mirror} has no hapt/hapt-raw.npz")
    assert content_sha256(path) == dataset_files("hapt")["hapt-raw.npz"].sha256


# ---------------------------------------------------------------------------- windowing


@pytest.mark.parametrize(
    ("length", "starts"),
    [(127, []), (128, [0]), (191, [0]), (192, [0, 64]), (255, [0, 64]), (256, [0, 64, 128])],
)
def test_window_starts_in_one_run(length: int, starts: list[int]) -> None:
    labels = np.concatenate([np.full(10, -1), np.full(length, 2), np.full(10, -1)])
    np.testing.assert_array_equal(window_starts(labels), np.array(starts, int) + 10)


def test_window_starts_skip_transitions_and_unlabelled_and_split_runs() -> None:
    labels = np.concatenate([
        np.full(300, -1),  # unlabelled: never windowed
        np.full(200, 4),  # 2 windows: 300, 364
        np.full(130, 5),  # 1 window: 500
        np.full(500, 8),  # a transition: never windowed
        np.full(100, 5),  # too short
        np.full(1, 7),
        np.full(150, 5),  # a new run of 5 (the 7 splits it): 1 window at 1231
    ])
    np.testing.assert_array_equal(window_starts(labels), [300, 364, 500, 1231])
    np.testing.assert_array_equal(window_starts(np.full(1000, 9)), [])


def test_har_windows_on_synthetic_recordings(tmp_path: Path) -> None:
    rec = load_hapt_recordings(_write(tmp_path / "r.npz", _arrays(*_SMALL)))
    windows = har_windows(rec)
    assert isinstance(windows, HarWindows)
    # experiment 0: run of 4 (rows 300-699) -> 300, 364, 428, 492, 556; run of 5
    # (rows 800-1099) -> 800, 864, 928. Experiment 1 starts with 5 like experiment 0 ends,
    # but runs never cross experiments: 200 rows -> 1100, 1164 (a run of 300 + 200 rows
    # would give 6, not 3 + 2); then 1 (rows 1300-1799) -> six.
    expected = [300, 364, 428, 492, 556, 800, 864, 928, 1100, 1164,
                1300, 1364, 1428, 1492, 1556, 1620]
    np.testing.assert_array_equal(windows.table.start, expected)
    np.testing.assert_array_equal(windows.activity, [4] * 5 + [5] * 3 + [5] * 2 + [1] * 6)
    np.testing.assert_array_equal(windows.table.experiment, [0] * 8 + [1] * 8)
    assert (windows.subject == 3).all()
    assert windows.body_acc.shape == (16, 3, 128)
    # each window holds the preprocessed signal of its rows
    body, gravity, gyro = preprocess(rec.acc[1100:1800], rec.gyro[1100:1800])
    np.testing.assert_allclose(windows.gravity_acc[10], gravity[200:328].T)
    np.testing.assert_allclose(windows.body_gyro[11], gyro[264:392].T)
    np.testing.assert_allclose(windows.body_acc[15], body[520:648].T)
    np.testing.assert_allclose(windows.total_acc, windows.body_acc + windows.gravity_acc)


# ------------------------------------------------------------------------ preprocessing


def test_preprocess_constant_gravity() -> None:
    g = np.array([0.3, -0.5, 0.81])
    body, gravity, gyro = preprocess(np.tile(g, (2000, 1)), np.tile([0.1, 0, -0.2], (2000, 1)))
    np.testing.assert_allclose(gravity, np.tile(g, (2000, 1)), atol=1e-12)
    np.testing.assert_allclose(body, 0.0, atol=1e-12)
    np.testing.assert_allclose(gyro, np.tile([0.1, 0, -0.2], (2000, 1)), atol=1e-12)


def test_preprocess_separates_motion_from_gravity_without_delay() -> None:
    t = np.arange(5000) / FS
    motion = 0.2 * np.sin(2 * np.pi * 1.0 * t)  # 1 Hz: body
    tilt = 0.3 * np.sin(2 * np.pi * 0.02 * t)  # 0.02 Hz: gravity
    acc = np.stack([1.0 + tilt, motion, np.zeros_like(t)], axis=1)
    body, gravity, _ = preprocess(acc, np.zeros_like(acc))
    inner = slice(1000, 4000)  # away from the ends
    # zero phase: the 1 Hz motion comes out in place; the median filter clips its peaks by
    # at most 0.2 * (1 - cos(2 pi / 50)) = 0.0016 g
    np.testing.assert_allclose(body[inner, 1], motion[inner], atol=0.002)
    assert np.abs(gravity[inner, 1]).max() < 1e-3
    np.testing.assert_allclose(gravity[inner, 0], 1.0 + tilt[inner], atol=0.002)
    assert np.abs(body[inner, 0]).max() < 0.002


def test_preprocess_median_filter_removes_single_sample_spikes() -> None:
    rng = np.random.default_rng(1)
    smooth = np.cumsum(rng.normal(size=(1000, 3)), axis=0) * 0.001
    spiky = smooth.copy()
    spiky[500, 1] += 5.0
    _, _, clean = preprocess(np.ones((1000, 3)), smooth)
    _, _, filtered = preprocess(np.ones((1000, 3)), spiky)
    assert np.abs(filtered - clean).max() < 0.01  # the 5 rad/s spike is gone
    # and the 20 Hz low-pass removes what is above it: a 24 Hz tone loses most of itself
    tone = np.zeros((1000, 3))
    tone[:, 2] = np.sin(2 * np.pi * 24.0 * np.arange(1000) / FS)
    _, _, passed = preprocess(np.ones((1000, 3)), tone)
    assert np.abs(passed[100:900, 2]).max() < 0.25


def test_preprocess_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match=r"\(T >= 3, 3\)"):
        preprocess(np.zeros((10, 2)), np.zeros((10, 2)))


# ---------------------------------------------------------------------------- real data


@functools.cache
def _real_windows() -> HarWindows:
    return har_windows(load_hapt_recordings())


def _official_counts(mirror: Path) -> np.ndarray:
    folder = mirror / "har"
    names = [f"{kind}_{split}.txt" for split in ("train", "test") for kind in ("subject", "y")]
    if not all((folder / name).is_file() for name in names):
        pytest.skip(f"the mirror {mirror} lacks the UCI HAR label files har/subject_*.txt, "
                    "har/y_*.txt")
    subject = np.concatenate([np.loadtxt(folder / f"subject_{s}.txt", int)
                              for s in ("train", "test")])
    activity = np.concatenate([np.loadtxt(folder / f"y_{s}.txt", int)
                               for s in ("train", "test")])
    counts = np.zeros((31, 7), int)
    np.add.at(counts, (subject, activity), 1)
    return counts


def test_real_recordings_shape() -> None:
    require_datasets("hapt")
    rec = load_hapt_recordings()
    assert len(rec) == 1_122_772 and rec.n_experiments == 61
    assert set(rec.experiment_user.tolist()) == set(range(1, 31))
    assert fetch("hapt", "hapt-raw.npz").name == "hapt-raw.npz"


def test_real_window_counts_match_uci_har(mirror: Path) -> None:
    require_datasets("hapt")
    official = _official_counts(mirror)
    assert official.sum() == OFFICIAL_WINDOWS
    windows = _real_windows()
    assert abs(len(windows) - OFFICIAL_WINDOWS) <= 0.02 * OFFICIAL_WINDOWS
    counts = np.zeros((31, 7), int)
    np.add.at(counts, (windows.subject, windows.activity), 1)
    difference = np.abs(counts - official)[1:, 1:]
    assert difference.max() <= 8, difference
    assert difference.mean() <= 2


def test_real_windows_are_recorded_signals() -> None:
    require_datasets("hapt")
    windows = _real_windows()
    magnitude = np.linalg.norm(windows.total_acc, axis=1).mean(axis=1)
    assert abs(np.median(magnitude) - 1.0) < 0.1  # gravity: about 1 g
    body = windows.body_acc - windows.body_acc.mean(axis=2, keepdims=True)
    for axis in range(3):
        lag1 = (body[:, axis, 1:] * body[:, axis, :-1]).sum() / (body[:, axis] ** 2).sum()
        assert lag1 > 0.8, (axis, lag1)  # smooth 50 Hz signals, not noise
    # lying still: almost no body motion; walking: plenty
    std = body.std(axis=2).mean(axis=1)
    assert np.median(std[windows.activity == 6]) < 0.2 * np.median(std[windows.activity == 1])
